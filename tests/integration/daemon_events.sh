#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# events-only rules, no PT needed: a uprobe rule matching a binary fires for each of
# several processes running it, including one started after the rule was armed; a
# run-queue latency rule matching a binary fires for its threads only; a pt rule on
# this PT-less host is reported unavailable (log, status, metrics), its fires counted
# as suppressed (backend_unavailable), and the daemon runs on.
. "$(dirname "$0")/daemon_common.inc"
RUNQ=$BUILD/targets/trig_runq
[ -d /sys/bus/event_source/devices/intel_pt ] && skip "this host has Intel PT: the unavailable case needs a host without"

start_server -s 60 -i 100
s1=$SRV
start_server -s 60 -i 100
s2=$SRV
base_config "rules:
  - name: handle-feed
    match: {binary: $SERVER}
    trigger: {uprobe: \"$SERVER:handle\"}
    capture: {backend: events-only}
  - name: runq-feed
    match: {binary: $RUNQ}
    trigger: {runq_latency_over: 1ms}
    capture: {backend: events-only}
  - name: pt-only
    match: {binary: $SERVER}
    trigger: {uprobe: \"$SERVER:hot\"}
    capture: {backend: pt}"
start_daemon
grep -q '"rule":"pt-only","event":"unavailable".*no Intel PT' "$LOG" ||
	fail "the pt rule is not reported unavailable with the reason"
start_server -s 60 -i 100
s3=$SRV
"$RUNQ" -h -n 100 >"$TMP/runq.out" 2>&1 &
PIDS+=($!)
rq=$!
wait "$rq" || fail "trig_runq failed"

for p in $s1 $s2 $s3; do
	wait_log "\"rule\":\"handle-feed\",\"event\":\"fire\".*pid $p " 10 ||
		fail "no fire event for fleet_server pid $p"
done
echo "handle-feed: fire events from pids $s1 $s2 and $s3 (started after the rule was armed)"
wait_log '"rule":"runq-feed","event":"fire"' 10 || fail "no run-queue latency event for trig_runq"
n=$(grep '"rule":"runq-feed","event":"fire"' "$LOG" | grep -vc "\"pid\":$rq,")
[ "$n" = 0 ] || fail "$n run-queue events of other processes than trig_runq"
grep '"rule":"runq-feed","event":"fire"' "$LOG" | head -1 | grep -q '"latency_ns":' ||
	fail "a run-queue event without its latency"
echo "runq-feed: $(grep -c '"rule":"runq-feed","event":"fire"' "$LOG") events, all of trig_runq (pid $rq)"

publish_wait
publish_wait
# one write of the textfile: fires and events keep coming while the test reads
cp "$PROM/ptbpf.prom" "$TMP/snapshot.prom"
METRICS=$TMP/snapshot.prom
[ "$(metric 'ptbpf_rules{state="armed"}')" = 2 ] || fail "armed rules"
[ "$(metric 'ptbpf_rules{state="unavailable"}')" = 1 ] || fail "unavailable rules"
u=$(metric 'ptbpf_captures_suppressed_total{rule="pt-only",reason="backend_unavailable"}')
[ "${u:-0}" -gt 0 ] || fail "no fire of the unavailable pt rule counted as suppressed"
f=$(metric 'ptbpf_rule_fires_total{rule="handle-feed"}')
e=$(metric 'ptbpf_rule_events_total{rule="handle-feed"}')
[ "$f" -ge 3 ] && [ "$f" = "$e" ] || fail "handle-feed: $f fires, $e events"
"$PTBPF" daemon status --state-dir "$STATE" >"$TMP/status" || fail "daemon status"
grep -q "rule pt-only: unavailable" "$TMP/status" && grep -q "why .*no Intel PT" "$TMP/status" ||
	{ cat "$TMP/status"; fail "status does not say why pt-only is unavailable"; }
echo "pt-only: unavailable (status, metrics, log), $u fires suppressed as backend_unavailable"
stop_daemon
