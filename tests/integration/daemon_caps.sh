#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# The daemon without CAP_SYS_ADMIN (dropped from the bounding set, so root's exec does
# not get it back), as a unit without it would run it: a syscall-latency rule still arms
# and fires, a uprobe rule fails to arm (the kernel attaches uprobes only with
# CAP_SYS_ADMIN: why the unit keeps it), and since the kernel then refuses
# BPF_ENABLE_STATS, the ptbpf_bpf_* metrics are absent (not a lying 0) and the log names
# the capability.
. "$(dirname "$0")/daemon_common.inc"
command -v setpriv >/dev/null || skip "no setpriv (Debian package util-linux)"
[ "$(cat /proc/sys/kernel/bpf_stats_enabled 2>/dev/null || echo 0)" = 0 ] ||
	skip "sysctl kernel.bpf_stats_enabled=1: the kernel counts BPF run time for everyone"

base_config "rules:
  - name: sleeps
    match: {binary: $SERVER}
    trigger: {syscall_latency_over: 1us, syscall: clock_nanosleep}
    capture: {backend: events-only}
  - name: handle-feed
    match: {binary: $SERVER}
    trigger: {uprobe: \"$SERVER:handle\"}
    capture: {backend: events-only}"
DAEMON_WRAP="setpriv --bounding-set=-sys_admin --inh-caps=-sys_admin" start_daemon
grep -q '^CapEff:.*' "/proc/$DPID/status" || fail "no daemon"
eff=$(awk '/^CapEff:/ { print $2 }' "/proc/$DPID/status")
(( (0x$eff >> 21) & 1 )) && fail "the daemon still has CAP_SYS_ADMIN (CapEff $eff)"
start_server -s 30 -i 20
wait_log '"rule":"sleeps","event":"fire"' 15 || fail "no fire without CAP_SYS_ADMIN"
grep -q '"rule":"handle-feed","event":"failed"' "$LOG" ||
	fail "the uprobe rule armed without CAP_SYS_ADMIN: the unit's comment is wrong"
publish_wait
publish_wait
grep '"event":"bpf_stats_unavailable"' "$LOG" | grep -q 'CAP_SYS_ADMIN' ||
	fail "no log line naming CAP_SYS_ADMIN for the BPF statistics"
f=$(metric 'ptbpf_rule_fires_total{rule="sleeps"}')
[ "${f:-0}" -gt 0 ] || fail "fires not counted"
if grep -q '^ptbpf_bpf_run\(s\|_seconds\)_total' "$PROM/ptbpf.prom"; then
	grep '^ptbpf_bpf_' "$PROM/ptbpf.prom" | head -3
	fail "ptbpf_bpf_* metrics reported without BPF_ENABLE_STATS"
fi
promtool check metrics <"$PROM/ptbpf.prom" >"$TMP/promtool.out" 2>&1 ||
	{ cat "$TMP/promtool.out"; fail "promtool rejects the textfile"; }
echo "no CAP_SYS_ADMIN (CapEff $eff): syscall rule: $f fires; uprobe rule: failed to arm; ptbpf_bpf_* absent; log names the capability"
stop_daemon
