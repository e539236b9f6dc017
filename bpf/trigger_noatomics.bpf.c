// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The trigger programs for kernels without the BPF atomics that return a value (before
 * Linux 5.12): the same source, built for the v2 instruction set, where clang refuses such
 * an atomic. The loader opens it through trigger.bpf.c's skeleton (same maps, programs
 * and variables), when the kernel refuses a probe program using the atomics.
 */
#define TRIGGER_NO_ATOMICS
#include "trigger.bpf.c"
