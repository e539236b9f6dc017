#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# A reload re-arms only what changed, without a gap. A server calls handle() every 5 ms
# (and says how many calls it made); rule "steady" (events-only, its pid) fires on each
# call, beside 44 other rules (40+ rules in one plane: uprobes, syscall and run-queue
# latency, a tracepoint). Then reloads add, remove and change OTHER rules (a rules.d drop
# and SIGHUP, alternately), many times, while the server runs:
# - steady's fires equal the server's calls exactly (no fire lost while reloading, none
#   twice): fires_total and the fire events in the log;
# - "changing", a uprobe rule on the same calls changed at every reload (budget, labels),
#   also counts every call exactly: the new version is armed before the old one goes
#   (make-before-break), and one store hands it over, so no call fires in both or neither;
# - every BPF link the daemon held for the 45 unchanged rules is still held afterwards,
#   with the same program (link and program ids from /proc/PID/fdinfo, checked with
#   bpftool): their probes were never detached.
. "$(dirname "$0")/daemon_common.inc"
command -v bpftool >/dev/null || skip "no bpftool (Debian package bpftool)"

# the server waits, stopped, until the rules are armed: every call it makes is counted
bash -c 'kill -STOP $$; exec "$0" -s 24 -i 5' "$SERVER" >"$TMP/steady.out" &
S=$!
PIDS+=("$S")
for ((i = 0; i < 100; i++)); do
	grep -q '^State:.*T (stopped)' "/proc/$S/status" 2>/dev/null && break
	sleep 0.05
done
grep -q '^State:.*T (stopped)' "/proc/$S/status" || fail "the server did not stop itself"

rules="rules:
  - name: steady
    match: {pid: $S}
    trigger: {uprobe: \"$SERVER:handle\"}
    capture: {backend: events-only}"
for i in $(seq 1 40); do
	rules+="
  - name: filler-$i
    match: {binary: $SERVER}
    trigger: {uprobe: \"$SERVER:slow_path\"}
    capture: {backend: events-only}"
done
rules+="
  - name: sys-1
    match: {binary: $SERVER}
    trigger: {syscall_latency_over: 10s, syscall: clock_nanosleep}
    capture: {backend: events-only}
  - name: sys-2
    match: {binary: $SERVER}
    trigger: {syscall_latency_over: 20s}
    capture: {backend: events-only}
  - name: runq-1
    match: {binary: $SERVER}
    trigger: {runq_latency_over: 10s}
    capture: {backend: events-only}
  - name: exits
    match: {comm: no-such-comm}
    trigger: {tracepoint: \"sched:sched_process_exit\"}
    capture: {backend: events-only}"
base_config "$rules"
start_daemon
wait_log '"msg":"trigger plane: one BPF object, 45 rules"' 10 || fail "the 45 rules are not one plane"
publish_wait
armed=$(metric 'ptbpf_rules{state="armed"}')
[ "$armed" = 45 ] || fail "$armed rules armed of 45"

# the BPF links (and their programs) the daemon holds: "link_id prog_id" per line
links() { bpf_fds "$DPID" | awk '$1 == "link" { print $2, $3 }'; }
links | sort -n >"$TMP/links0"
n0=$(wc -l <"$TMP/links0")
# 40 uprobes, the shared syscall (2) and run-queue (3) hooks, the tracepoint, steady's
[ "$n0" -ge 46 ] || fail "the daemon holds $n0 BPF links for 45 rules"

churn() { # churn STEP: the rules.d file of reload STEP
	local k=$1
	{
		echo "rules:"
		# changed at every reload (budget, labels): make-before-break
		echo "  - name: changing"
		echo "    match: {pid: $S}"
		echo "    trigger: {uprobe: \"$SERVER:handle\"}"
		echo "    capture: {backend: events-only}"
		echo "    budget: {max_per_hour: $((100000 + k))}"
		echo "    labels: {step: \"$k\"}"
		# added and removed
		if ((k % 2)); then
			echo "  - name: odd-tp"
			echo "    match: {binary: $SERVER}"
			echo "    trigger: {tracepoint: \"sched:sched_process_fork\"}"
			echo "    capture: {backend: events-only}"
			echo "  - name: odd-runq"
			echo "    match: {binary: $SERVER}"
			echo "    trigger: {runq_latency_over: 30s}"
			echo "    capture: {backend: events-only}"
		fi
		# a latency rule changed (its list entry replaced)
		echo "  - name: sys-churn"
		echo "    match: {binary: $SERVER}"
		echo "    trigger: {syscall_latency_over: $((10 + k))s}"
		echo "    capture: {backend: events-only}"
		for ((j = 0; j < k % 4; j++)); do
			echo "  - name: extra-$j"
			echo "    match: {binary: $SERVER}"
			echo "    trigger: {uprobe: \"$SERVER:hot\"}"
			echo "    capture: {backend: events-only}"
			echo "    budget: {max_per_hour: 1}"
		done
	} >"$RULES/.50-churn.tmp"
	chmod 0644 "$RULES/.50-churn.tmp"
	mv "$RULES/.50-churn.tmp" "$RULES/50-churn.yaml"
}
reloads() { grep -c '"event":"reloaded"' "$LOG"; }

r=$(reloads)
churn 0
wait_log '"event":"reloaded"' 10 $((r + 1)) || fail "no reload after the rules.d drop"
wait_log '"msg":"trigger plane: one BPF object, 47 rules"' 10 || fail "the drop's rules are not armed"
kill -CONT "$S"
# reloads for 16 s of the server's 24 (the last one well before it exits: a rule for a
# process that is gone would be unavailable)
until=$((SECONDS + 16))
step=1
while ((SECONDS < until && step <= 20)); do
	r=$(reloads)
	churn "$step"
	if ((step % 2)); then
		# the drop alone (inotify)
		wait_log '"event":"reloaded"' 10 $((r + 1)) || fail "reload $step (rules.d) did not happen"
	else
		# and SIGHUP at once (inotify's reload follows, with nothing left to change)
		kill -HUP "$DPID"
		wait_log '"msg":"reload (SIGHUP)' 10 $((step / 2)) || fail "reload $step (SIGHUP) did not happen"
	fi
	sleep 0.4
	step=$((step + 1))
done
timeout 30 tail --pid="$S" -f /dev/null || fail "the server did not finish"
calls=$(awk '$1 == "calls" { print $2 }' "$TMP/steady.out")
[ -n "$calls" ] && [ "$calls" -gt 500 ] || fail "the server made ${calls:-no} calls"
hups=$(grep -c '"msg":"reload (SIGHUP)' "$LOG")
drops=$(grep -c '"msg":"reload (configuration changed)' "$LOG")
[ "$hups" -ge 3 ] && [ "$drops" -ge 3 ] && [ "$step" -ge 7 ] ||
	fail "only $((step - 1)) reload steps ($hups SIGHUP, $drops rules.d) while the server ran"
grep -q '"rule":"odd-tp","event":"disarmed"' "$LOG" || fail "no rule was removed"
grep -q '"rule":"changing","event":"disarmed"' "$LOG" || fail "the changing rule was not re-armed"
grep '"level":"error"' "$LOG" && fail "errors in the daemon's log"

# the last fires are in the ring: counted within a second, published at the next tick
sleep 1.5
publish_wait
METRICS=$TMP/final.prom
cp "$PROM/ptbpf.prom" "$METRICS"
for rule in steady changing; do
	total=$(metric "ptbpf_rule_fires_total{rule=\"$rule\"}")
	events=$(grep -c "\"rule\":\"$rule\",\"event\":\"fire\"" "$LOG")
	[ "$total" = "$calls" ] || fail "$rule: fires_total $total, the server made $calls calls"
	[ "$events" = "$calls" ] || fail "$rule: $events fire events, the server made $calls calls"
done
echo "$((step - 1)) reload steps ($hups SIGHUP, $drops rules.d): steady and changing fired $calls times, once per call"

# the unchanged rules' links and programs are the ones they had before the reloads
links | sort -n >"$TMP/links1"
missing=$(join -v1 "$TMP/links0" "$TMP/links1" | wc -l)
moved=$(join "$TMP/links0" "$TMP/links1" | awk '$2 != $3' | wc -l)
[ "$missing" = 0 ] || fail "$missing of the $n0 links of the unchanged rules were replaced"
[ "$moved" = 0 ] || fail "$moved links of the unchanged rules have another program"
bpftool -j link show >"$TMP/bpftool.json" || fail "bpftool link show"
$PYTHON - "$TMP/links0" "$TMP/bpftool.json" <<'PY' || fail "bpftool disagrees"
import json, sys
held = {int(l.split()[0]): int(l.split()[1]) for l in open(sys.argv[1])}
live = {l["id"]: l.get("prog_id") for l in json.load(open(sys.argv[2]))}
bad = [i for i, p in held.items() if live.get(i) != p]
if bad:
    print("links not live with their program:", bad[:10])
    sys.exit(1)
PY
echo "the $n0 links of the 45 unchanged rules are the same links, with the same programs (bpftool)"
stop_daemon
