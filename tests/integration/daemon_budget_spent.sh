#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# A capture rule's spent budget still counts its fires: a singlestep rule for a pid with
# max_per_hour: 2 takes 2 captures, then its capture child ends (its --max-snapshots is
# the budget); the later slow calls, no longer stepped, are seen by the trigger plane's
# counting slot: every one is a fire and a suppressed `budget`, and status shows the rule
# armed with its budget spent (without that slot: fires 2, suppressed 0).
. "$(dirname "$0")/daemon_common.inc"
need_singlestep

base_config
start_daemon
start_server -s 120 -i 50
cat >"$RULES/50-spent.yaml" <<EOF2
rules:
  - name: spent
    match: {pid: $SRV}
    trigger: {uprobe: "$SERVER:handle", latency_over: 100ms}
    capture: {backend: singlestep}
    budget: {max_per_hour: 2}
EOF2
wait_log '"event":"capture_started"' 30 || fail "the rule was not armed"
sleep 2	# the capture child attaches and single-steps the server
for n in 1 2; do
	kill -USR1 "$SRV"
	wait_log '"event":"captured"' 60 "$n" || fail "capture $n was not spooled"
done
wait_log '"event":"capture_ended"' 30 || fail "the capture child did not end with its budget"
status() { "$PTBPF" daemon status --state-dir "$STATE" >"$TMP/status" || fail "daemon status"; }
for ((i = 0; i < 100; i++)); do
	status
	grep -q 'budget spent' "$TMP/status" && break
	sleep 0.1
done
grep -q 'rule spent: armed' "$TMP/status" && grep -q 'why .*budget spent' "$TMP/status" ||
	{ cat "$TMP/status"; fail "status does not show the rule armed with its budget spent"; }
not_traced "$SRV"
# two more slow calls, each counted before the next (slow_path sleeps 300 ms)
for n in 3 4; do
	kill -USR1 "$SRV"
	for ((i = 0; i < 100; i++)); do
		publish_wait
		[ "$(metric 'ptbpf_rule_fires_total{rule="spent"}')" -ge "$n" ] && break
	done
done
publish_wait
f=$(metric 'ptbpf_rule_fires_total{rule="spent"}')
b=$(metric 'ptbpf_captures_suppressed_total{rule="spent",reason="budget"}')
c=$(metric 'ptbpf_captures_total{rule="spent",result="spooled"}')
echo "after 4 slow calls: fires $f, captures $c, suppressed (budget) $b"
[ "$f" = 4 ] || fail "ptbpf_rule_fires_total $f, want 4"
[ "$c" = 2 ] || fail "captures $c, want 2"
[ "$b" = 2 ] || fail "suppressed (budget) $b, want 2"
[ "$(metric 'ptbpf_rules{state="armed"}')" = 1 ] || fail "the rule is not reported armed"
stop_daemon
