#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# One trigger plane for all rules: 20 events-only rules are one BPF object in the daemon
# (its fds, /proc/PID/fdinfo: one uprobe program for all of them, the rule being its
# probe's BPF cookie, and one object's maps: one ring buffer), each rule with its own
# process and budget enforced in the kernel by its slot: rule pa (pid s1, max_per_hour 2)
# gets exactly 2 events, all of s1; pb (pid s2, max_per_hour 4) exactly 4, all of s2; 18
# binary-wide rules fire for both. A reload that adds a rule gives it a slot of its own,
# and pa's hour stays spent (daemon_reload: no other rule is touched).
. "$(dirname "$0")/daemon_common.inc"

start_server -s 60 -i 20
s1=$SRV
start_server -s 60 -i 20
s2=$SRV
rules="rules:
  - name: pa
    match: {pid: $s1}
    trigger: {uprobe: \"$SERVER:handle\"}
    capture: {backend: events-only}
    budget: {max_per_hour: 2}
  - name: pb
    match: {pid: $s2}
    trigger: {uprobe: \"$SERVER:handle\"}
    capture: {backend: events-only}
    budget: {max_per_hour: 4}"
for i in $(seq 1 18); do
	rules+="
  - name: feed-$i
    match: {binary: $SERVER}
    trigger: {uprobe: \"$SERVER:handle\"}
    capture: {backend: events-only}
    budget: {max_per_hour: 1000}"
done
base_config "$rules"
start_daemon
grep -q '"event":"plane","msg":"trigger plane: one BPF object, 20 rules"' "$LOG" ||
	fail "no single trigger plane for the 20 rules"

# what the daemon holds in the kernel: the BPF programs and maps behind its fds
bpf_fds "$DPID" >"$TMP/fds"
progs=$(awk '$1 == "prog" { print $2 }' "$TMP/fds" | sort -u | wc -l)
maps=$(awk '$1 == "map" { print $2 }' "$TMP/fds" | sort -u | wc -l)
rings=$(awk '$1 == "map" && $3 == 27 { print $2 }' "$TMP/fds" | sort -u | wc -l)
[ "$progs" -gt 0 ] || fail "the daemon holds no BPF program"
echo "fdinfo: the daemon holds $progs BPF programs and $maps maps ($rings ring buffer) for 20 rules"
[ "$rings" = 1 ] || fail "$rings ring buffers for 20 rules: not one trigger plane"
[ "$maps" -lt 20 ] || fail "$maps maps for 20 rules: not one object's"
[ "$progs" -le 21 ] || fail "$progs programs for 20 uprobe rules"

sleep 3	# the servers call handle() every 20 ms
publish_wait
events() { grep -c "\"rule\":\"$1\",\"event\":\"fire\"" "$LOG"; }
[ "$(events pa)" = 2 ] || fail "pa: $(events pa) events, want exactly 2 (max_per_hour: 2)"
[ "$(events pb)" = 4 ] || fail "pb: $(events pb) events, want exactly 4 (max_per_hour: 4)"
grep '"rule":"pa","event":"fire"' "$LOG" | grep -v "\"pid\":$s1," && fail "pa fired for another process than $s1"
grep '"rule":"pb","event":"fire"' "$LOG" | grep -v "\"pid\":$s2," && fail "pb fired for another process than $s2"
b=$(metric 'ptbpf_captures_suppressed_total{rule="pa",reason="budget"}')
[ "${b:-0}" -gt 10 ] || fail "pa: $b fires suppressed by the kernel's budget"
for p in $s1 $s2; do
	grep '"rule":"feed-18","event":"fire"' "$LOG" | grep -q "\"pid\":$p," || fail "feed-18 never fired for $p"
done
echo "per-rule scope and budget in the kernel: pa 2 events (pid $s1, $b suppressed), pb 4 (pid $s2); feeds fire for both"

# a reload that adds a rule: a slot more in the plane, the spent hour stays spent
cat >"$RULES/50-more.yaml" <<EOF2
rules:
  - name: syscalls
    match: {binary: $SERVER}
    trigger: {syscall_latency_over: 1us, syscall: clock_nanosleep}
    capture: {backend: events-only}
    budget: {max_per_hour: 3}
EOF2
chmod 0644 "$RULES/50-more.yaml"
wait_log '"msg":"trigger plane: one BPF object, 21 rules"' 15 || fail "the plane does not hold 21 rules"
wait_log '"rule":"syscalls","event":"fire"' 10 || fail "the added rule does not fire"
sleep 2
[ "$(events pa)" = 2 ] || fail "pa: $(events pa) events after the reload: its budget was reset"
[ "$(events syscalls)" = 3 ] || fail "syscalls: $(events syscalls) events, want 3"
echo "reload: 21 rules in the plane; pa still at 2 events, the new rule at its 3"
stop_daemon
