/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * For programs traced by ptbpf: a one-line trigger in one's own code, the counterpart of
 * magic-trace's in-application snapshot API. Built on <sys/sdt.h> (Debian package
 * systemtap-sdt-dev): each use is a USDT probe, a single nop in the code plus an ELF
 * note, costing nothing while no one listens. Then
 *
 *	ptbpf --usdt ptbpf:trigger -- ./prog		(or -p PID)
 *
 * takes a snapshot of the control flow that led to the first PTBPF_TRIGGER() passed
 * (--nth, --max-snapshots and the other conditions apply), and --dry-run lists them.
 * PTBPF_TRIGGER_ARGS(a, b) passes two integers the trigger reports as arg0 and arg1.
 */
#ifndef PTBPF_H
#define PTBPF_H

#include <sys/sdt.h>

#define PTBPF_TRIGGER() DTRACE_PROBE(ptbpf, trigger)
#define PTBPF_TRIGGER_ARGS(a, b) DTRACE_PROBE2(ptbpf, trigger, a, b)

#endif /* PTBPF_H */
