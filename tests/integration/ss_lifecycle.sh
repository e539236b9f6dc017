#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# The singlestep backend never leaves a target stopped or traced: attach with -p and
# stop after --duration; Ctrl-C (SIGINT to ptbpf) during a capture; a target killed
# mid-recording (the capture up to that point is kept and valid); bad input.
. "$(dirname "$0")/ss_common.inc"
need_ptrace
need_perf

# -p: attach to a running process, stop after --duration, the process carries on.
"$TARGETS/ticker" 3 >"$TMP/attach.target" &
TP=$!
BG_PIDS+=("$TP")
sleep 0.3
ss attach --duration 400ms -p "$TP"
not_held "$TP"
perf_calls attach tick
wait "$TP" || fail "attach: the target exited $? after ptbpf let it go"
grep -q '^ticks=150 ' "$TMP/attach.target" || fail "attach: target output: $(cat "$TMP/attach.target")"

# Ctrl-C: ptbpf snapshots, lets the spawned target go, exits 0.
"$PTBPF" --backend singlestep --decode=no --keep-capture="$TMP/sigint.data" --verify \
	-- "$TARGETS/ticker" 4 >"$TMP/sigint.out" 2>"$TMP/sigint.err" &
PP=$!
BG_PIDS+=("$PP")
sleep 1.5
TP=$(cmd_pid "$PP" ticker)
[ -n "$TP" ] || fail "sigint: no target process under ptbpf"
BG_PIDS+=("$TP")
kill -INT "$PP"
wait "$PP" || fail "sigint: ptbpf exited $? on SIGINT; $(cat "$TMP/sigint.err")"
grep -q 'decoded as stepped' "$TMP/sigint.err" || fail "sigint: not verified: $(cat "$TMP/sigint.err")"
not_held "$TP"
# Static startup alone is ~35k instructions: the capture may end before main.
perf_calls sigint _start
"$PTBPF" decode --info "$TMP/sigint.data" 2>&1 | grep -q 'signal' || fail "sigint: no signal trigger recorded"
# Untraced again, it finishes its 4 s.
for i in $(seq 1 100); do
	[ -d "/proc/$TP" ] || break
	sleep 0.1
done
grep -q '^ticks=200 ' "$TMP/sigint.out" || fail "sigint: the target did not finish: $(cat "$TMP/sigint.out")"

# A target killed mid-recording: the capture up to then is written and decodes.
"$TARGETS/ticker" 5 >/dev/null &
TP=$!
BG_PIDS+=("$TP")
sleep 0.2
"$PTBPF" --backend singlestep --decode=no --keep-capture="$TMP/killed.data" --verify \
	-p "$TP" >"$TMP/killed.out" 2>"$TMP/killed.err" &
PP=$!
BG_PIDS+=("$PP")
# killed once it is traced and stepped a while, however slowly ptbpf starts (ASan, load)
for _ in $(seq 600); do
	tracer=$(awk '/^TracerPid:/ { print $2 }' "/proc/$TP/status" 2>/dev/null)
	[ -n "$tracer" ] && [ "$tracer" != 0 ] && break
	kill -0 "$PP" 2>/dev/null || break
	sleep 0.1
done
[ -n "$tracer" ] && [ "$tracer" != 0 ] || fail "killed: ptbpf never traced the target: $(cat "$TMP/killed.err")"
sleep 0.5
kill -9 "$TP"
wait "$PP" || fail "killed: ptbpf exited $?: $(cat "$TMP/killed.err")"
grep -q 'decoded as stepped' "$TMP/killed.err" || fail "killed: not verified: $(cat "$TMP/killed.err")"
perf_calls killed tick
"$PTBPF" decode --info "$TMP/killed.data" 2>&1 | grep -q 'EXIT' || fail "killed: no EXIT record"

# Bad input: one error line, a non-zero exit, quickly.
check_bad() {
	local what=$1 rc lines
	shift
	timeout 20 "$PTBPF" --backend singlestep --decode=no --keep-capture="$TMP/bad.data" "$@" \
		>"$TMP/bad.out" 2>"$TMP/bad.err"
	rc=$?
	[ $rc != 0 ] && [ $rc != 124 ] || fail "$what: exit $rc"
	lines=$(grep -c . "$TMP/bad.err")
	[ "$lines" -ge 1 ] && [ "$lines" -le 2 ] || { cat "$TMP/bad.err"; fail "$what: $lines lines on stderr"; }
	echo "$what: exit $rc: $(head -1 "$TMP/bad.err")"
}
check_bad "no such pid" -p 4194305
check_bad "no such command" -- /nonexistent/program
check_bad "not executable" -- /etc/hostname
check_bad "bad cpus" --cpus 0 -- "$TARGETS/recurse"
check_bad "kernel tracing" --kernel -- "$TARGETS/recurse"
# A process someone else already traces (PTRACE_SEIZE from python's ctypes).
"$TARGETS/ticker" 3 >/dev/null &
TP=$!
BG_PIDS+=("$TP")
"${PYTHON:-python3}" -c '
import ctypes, sys, time
libc = ctypes.CDLL(None, use_errno=True)
if libc.ptrace(0x4206, int(sys.argv[1]), None, None):   # PTRACE_SEIZE
	sys.exit(1)
print("seized", flush=True)
time.sleep(4)' "$TP" >"$TMP/holder.out" &
HP=$!
BG_PIDS+=("$HP")
for i in $(seq 1 50); do
	grep -q seized "$TMP/holder.out" && break
	sleep 0.1
done
grep -q seized "$TMP/holder.out" || fail "could not make a tracer for the test"
check_bad "already traced" -p "$TP"
grep -q 'already traces it' "$TMP/bad.err" || fail "already traced: $(cat "$TMP/bad.err")"
echo "attach, Ctrl-C, kill, bad input: no target left stopped or traced"
