#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# A pt rule without a pid on a host whose sysfs describes Intel PT (a Skylake tree, with
# a PMU type this kernel does not have) but whose kernel refuses the system-wide rings:
# the rule is unavailable with the kernel's refusal (log, status, metrics), its fires
# are counted as backend_unavailable, an events-only rule beside it runs, and the daemon
# stops cleanly. (Before system-wide pt capture, such a rule was refused as "not
# implemented" without trying the rings.)
. "$(dirname "$0")/daemon_common.inc"
[ "$(id -u)" = 0 ] || skip "needs root (the PMU check asks for CAP_PERFMON)"
[ -d /sys/bus/event_source/devices/intel_pt ] && skip "this host has Intel PT: the refusal needs a PMU the kernel lacks"

cp -r "$TOP/tests/data/sysfs-skylake" "$TMP/sysfs"
# a type no PMU of this kernel has: perf_event_open() says ENOENT
echo 2147483393 >"$TMP/sysfs/bus/event_source/devices/intel_pt/type"
export PTBPF_SYSFS_ROOT=$TMP/sysfs

start_server -s 60 -i 100
base_config "rules:
  - name: pt-wide
    match: {binary: $SERVER}
    trigger: {uprobe: \"$SERVER:handle\"}
    capture: {backend: pt, buffer_size: 64K}
  - name: feed
    match: {binary: $SERVER}
    trigger: {uprobe: \"$SERVER:handle\"}
    capture: {backend: events-only}"
start_daemon
grep -q '"rule":"pt-wide","event":"unavailable".*system-wide PT rings: --backend pt: cannot open intel_pt on CPU [0-9]*: No such file or directory' "$LOG" ||
	fail "the pt rule is not reported unavailable with the kernel's refusal"
grep -q 'not implemented' "$LOG" && fail "a 'not implemented' reason"
wait_log '"rule":"feed","event":"fire"' 10 || fail "the events-only rule beside it does not fire"
publish_wait
publish_wait
[ "$(metric 'ptbpf_rules{state="unavailable"}')" = 1 ] || fail "unavailable rules"
[ "$(metric 'ptbpf_rules{state="armed"}')" = 1 ] || fail "armed rules"
u=$(metric 'ptbpf_captures_suppressed_total{rule="pt-wide",reason="backend_unavailable"}')
[ "${u:-0}" -gt 0 ] || fail "no fire of the unavailable pt rule counted as suppressed"
"$PTBPF" daemon status --state-dir "$STATE" >"$TMP/status" || fail "daemon status"
grep -q "rule pt-wide: unavailable" "$TMP/status" &&
	grep -q "why .*cannot open intel_pt on CPU" "$TMP/status" ||
	{ cat "$TMP/status"; fail "status does not say why pt-wide is unavailable"; }
grep -q "^system-wide PT rings:" "$TMP/status" && fail "status shows rings that are not open"
echo "pt-wide: unavailable with the kernel's refusal (log, status, metrics), $u fires suppressed"
stop_daemon
