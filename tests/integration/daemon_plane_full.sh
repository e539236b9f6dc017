#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# The trigger plane's limits, said by name: 259 events-only rules, 65 syscall latency and
# 65 tracepoint rules (the plane lists at most 64 of each kind whose hook serves them all:
# PLANE_MAX_LATENCY_RULES) and 129 uprobe rules. 256 arm in one plane (PLANE_MAX_RULES);
# the 65th syscall and tracepoint rules fail naming their limit, the last uprobe rule
# fails with "the trigger plane is full" naming 256, and the daemon runs on. A reload
# that removes one rule of each kind arms the three left out (a failed rule is retried).
. "$(dirname "$0")/daemon_common.inc"

rule() { # rule NAME TRIGGER
	printf '  - name: %s\n    match: {binary: %s}\n    trigger: %s\n    capture: {backend: events-only}\n' \
		"$1" "$SERVER" "$2"
}
{
	echo "rules:"
	for i in $(seq 1 65); do rule "sys-$i" "{syscall_latency_over: 30s}"; done
	for i in $(seq 1 65); do rule "tp-$i" "{tracepoint: \"sched:sched_process_fork\"}"; done
	for i in $(seq 1 129); do rule "up-$i" "{uprobe: \"$SERVER:slow_path\"}"; done
} >"$TMP/rules.yaml"
base_config "$(cat "$TMP/rules.yaml")"
start_daemon
wait_log '"msg":"trigger plane: one BPF object, 256 rules"' 60 || fail "256 rules are not one plane"
for r in sys-65 tp-65; do
	grep "\"rule\":\"$r\",\"event\":\"failed\"" "$LOG" | grep -q 'at most 64 rules of each of the kinds' ||
		fail "$r does not fail naming the limit of 64"
done
grep '"rule":"up-129","event":"failed"' "$LOG" |
	grep -q 'the trigger plane is full: it holds at most 256 rules.*(PLANE_MAX_RULES)' ||
	fail "the 257th plane rule does not fail naming the limit of 256"
publish_wait
armed=$(metric 'ptbpf_rules{state="armed"}')
failed=$(metric 'ptbpf_rules{state="failed"}')
[ "$armed" = 256 ] && [ "$failed" = 3 ] || fail "$armed rules armed and $failed failed, want 256 and 3"
echo "259 rules: 256 armed in one plane; sys-65, tp-65 and up-129 failed, each naming its limit"

# room again: without sys-1, tp-1 and up-1 the three left out arm
sed -i '/^  - name: \(sys\|tp\|up\)-1$/,+3d' "$CFG"
grep -q '^  - name: sys-1$' "$CFG" && fail "the test could not edit its configuration"
kill -HUP "$DPID"
wait_log '"msg":"reload (SIGHUP): 256 rules"' 30 || fail "no reload to 256 rules"
publish_wait
armed=$(metric 'ptbpf_rules{state="armed"}')
[ "$armed" = 256 ] || fail "$armed rules armed after freeing three slots, want 256"
for r in sys-65 tp-65 up-129; do
	grep -q "\"rule\":\"$r\",\"event\":\"armed\"" "$LOG" || fail "$r did not arm once there was room"
done
echo "reload without sys-1, tp-1 and up-1: the three armed (256 rules)"
stop_daemon
