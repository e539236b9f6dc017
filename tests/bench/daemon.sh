#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# The daemon's steady-state cost: CPU and RSS of an idle daemon with 20 armed events-only
# rules (goal < 0.1 % of a core, < 30 MiB), over 30 s; and fire -> spooled latency of a
# singlestep rule (p50, p99 over 20 captures), from the daemon's "captured" log events
# (fire_to_spooled_ns: the BPF fire's CLOCK_MONOTONIC time to the manifest's rename).
set -u
: "${BUILD:?}" "${PTBPF:?}" "${PYTHON:=python3}"
SERVER=$BUILD/targets/fleet_server
tmp=$(mktemp -d "/tmp/ptbpf-daemonbench-$$.XXXXXX")
chmod 0755 "$tmp"
dpid= spid=
trap '[ -n "$dpid" ] && kill -9 $dpid 2>/dev/null; [ -n "$spid" ] && kill -9 $spid 2>/dev/null; rm -rf "$tmp"' EXIT
mkdir -p "$tmp/etc/rules.d"

start() {
	"$PTBPF" daemon --config "$tmp/etc/ptbpf.yaml" --state-dir "$tmp/state" 2>"$tmp/log" &
	dpid=$!
	for _ in $(seq 300); do grep -q '"event":"ready"' "$tmp/log" && return 0; sleep 0.1; done
	echo "FAIL: the daemon did not start"; tail "$tmp/log"; exit 1
}
stop() {
	kill -TERM "$dpid"; wait "$dpid"; dpid=
}

# 1. idle, 20 events-only rules (uprobes on a binary nothing runs, run-queue, syscalls)
{
	echo "spool: {dir: $tmp/spool}"
	echo "rules:"
	for i in $(seq 20); do
		case $((i % 3)) in
		0) trig="{uprobe: \"$SERVER:handle\"}" ;;
		1) trig="{syscall_latency_over: 1s, syscall: fsync}" ;;
		2) trig="{uprobe: \"$SERVER:hot\", latency_over: 1s}" ;;
		esac
		echo "  - {name: idle-$i, match: {binary: $SERVER}, trigger: $trig, capture: {backend: events-only}}"
	done
} >"$tmp/etc/ptbpf.yaml"
start
armed=$(grep -c '"event":"armed"' "$tmp/log")
sleep 2
ticks() { awk '{ print $14 + $15 }' "/proc/$dpid/stat"; }
hz=$(getconf CLK_TCK)
secs=30
c0=$(ticks)
sleep $secs
c1=$(ticks)
rss=$(awk '/^VmRSS:/ { print $2 }' "/proc/$dpid/status")
stop
cpu=$(awk -v a="$c0" -v b="$c1" -v hz="$hz" -v s=$secs 'BEGIN { printf "%.3f", 100 * (b - a) / hz / s }')
echo "idle daemon, $armed armed events-only rules, ${secs} s: CPU $cpu % of one core (goal < 0.1 %), RSS $((rss / 1024)) MiB (goal < 30 MiB)"

# 2. fire -> spooled, singlestep rule, 20 captures
if [ "$(cat /proc/sys/kernel/yama/ptrace_scope 2>/dev/null || echo 0)" = 3 ]; then
	echo "SKIP fire -> spooled: ptrace_scope=3"
	exit 0
fi
"$SERVER" -s 600 -i 50 >/dev/null &
spid=$!
cat >"$tmp/etc/ptbpf.yaml" <<EOF
spool: {dir: $tmp/spool2}
rules:
  - name: slow
    match: {pid: $spid}
    trigger: {uprobe: "$SERVER:handle", latency_over: 100ms}
    capture: {backend: singlestep, buffer_size: 1M}
EOF
start
sleep 3
for i in $(seq 20); do
	kill -USR1 "$spid"
	for _ in $(seq 300); do
		[ "$(grep -c '"event":"captured"' "$tmp/log")" -ge "$i" ] && break
		sleep 0.1
	done
done
stop
kill "$spid"; spid=
grep '"event":"captured"' "$tmp/log" | "$PYTHON" -c '
import json, sys
v = sorted(json.loads(l)["fire_to_spooled_ns"] / 1e6 for l in sys.stdin)
if len(v) < 20:
    print(f"FAIL: {len(v)} captures of 20"); sys.exit(1)
p = lambda q: v[min(len(v) - 1, int(q * len(v)))]
print(f"fire -> spooled, singlestep rule, {len(v)} captures: p50 {p(0.5):.1f} ms, p99 {p(0.99):.1f} ms, max {v[-1]:.1f} ms")
'
