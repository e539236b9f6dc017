// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Baseline for the trigger benchmark (tests/bench/triggers_bench.c): a uprobe that does nothing. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

char LICENSE[] SEC("license") = "Dual BSD/GPL";

SEC("uprobe")
int BPF_KPROBE(empty_uprobe)
{
	return 0;
}
