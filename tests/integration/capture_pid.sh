#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Issue 15: what -p says. An idle process: it ran no instructions (not "no Intel PT
# data"); a process ptbpf may not trace: the actual reason (another tracer, another
# user's process, not "see doctor", whose check traces a child of its own); a -p
# target killed mid-capture: "was killed by SIGKILL", not "exited".
. "$(dirname "$0")/capture_common.inc"
need_singlestep
TICKER=$BUILD/targets/ticker

sleep 30 &
IDLE=$!
BG_PIDS+=("$IDLE")
# A forked shell becomes the program at its exec: before that it is bash, and it runs.
# wait_exec PID COMM [STATE]: until PID is COMM (and in STATE).
wait_exec() {
	local want="($2)${3:+ $3}" fields=2${3:+,3}
	for _ in $(seq 100); do
		[ "$(cut -d' ' -f"$fields" "/proc/$1/stat" 2>/dev/null)" = "$want" ] && return
		sleep 0.1
	done
	fail "pid $1 was not $want after 10 s: $(cat "/proc/$1/stat")"
}
# idle means sleep, asleep (state S) in its nanosleep
wait_exec "$IDLE" sleep S
cap idle -p "$IDLE" --duration 500ms -o "$TMP/idle.fxt"
[ "$RC" = 1 ] || { cat "$TMP/idle.err"; fail "idle -p: exit $RC, expected 1"; }
grep -q "sleep (pid $IDLE) ran no instructions while traced" "$TMP/idle.err" ||
	fail "idle -p: $(cat "$TMP/idle.err")"
grep -q "no Intel PT data" "$TMP/idle.err" && fail "idle -p: blames the missing PT data"
not_traced "$IDLE"

# Another tracer holds the process.
"$TICKER" 8 >/dev/null &
TK=$!
BG_PIDS+=("$TK")
wait_exec "$TK" ticker
cap_bg first -p "$TK" --duration 5s -o "$TMP/first.fxt"
for _ in $(seq 100); do grep -q recording "$TMP/first.err" && break; sleep 0.1; done
sleep 0.5
cap second -p "$TK" --duration 1s -o "$TMP/second.fxt"
[ "$RC" = 2 ] || { cat "$TMP/second.err"; fail "a traced process: exit $RC"; }
grep -q "already traces it" "$TMP/second.err" || fail "a traced process: $(cat "$TMP/second.err")"
cap_wait "first"

# Another user's process, ptbpf without privileges (as nobody).
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null; then
	setpriv --reuid=65534 --regid=65534 --clear-groups "$PTBPF" --backend singlestep \
		-p "$IDLE" --duration 1s -o /dev/null >"$TMP/user.out" 2>"$TMP/user.err"
	RC=$?
	[ "$RC" = 2 ] || { cat "$TMP/user.err"; fail "another user's process: exit $RC"; }
	grep -q "runs as user 0: .*needs CAP_SYS_PTRACE" "$TMP/user.err" ||
		fail "another user's process: $(cat "$TMP/user.err")"
	# and BPF without CAP_BPF: the missing capability, not the verifier
	setpriv --reuid=65534 --regid=65534 --clear-groups "$PTBPF" --dry-run \
		--uprobe "$CHAIN:leaf" -- "$CHAIN" -n 1 >"$TMP/bpf.out" 2>"$TMP/bpf.err"
	grep -q "lacks CAP_BPF" "$TMP/bpf.err" || fail "BPF as nobody: $(cat "$TMP/bpf.err")"
	# doctor as nobody: each check tells the missing privilege, not a kernel feature
	setpriv --reuid=65534 --regid=65534 --clear-groups "$PTBPF" doctor >"$TMP/doc.out" 2>&1
	for c in 'BPF ring buffer' 'uprobe attach' 'tracepoint (tp_btf)'; do
		line=$(grep -m1 "absent  $c" "$TMP/doc.out") || continue
		grep -q 'fix: a missing privilege' <<<"$line" || fail "doctor as nobody, $c: $line"
	done
	grep -q 'Linux 5.8\|CONFIG_UPROBES=y' "$TMP/doc.out" && fail "doctor as nobody blames the kernel"
	grep -q 'absent  kptr_restrict *kernel.kptr_restrict=0;' "$TMP/doc.out" &&
		fail "doctor as nobody: kptr_restrict=0 with the fix kptr_restrict=0"
	# with CAP_BPF and CAP_PERFMON but not what attaching needs: the capability named,
	# by the trigger and by doctor, never a kernel feature or a mount
	asnobody() {
		local caps=$1
		shift
		setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps="$caps" \
			--ambient-caps="$caps" "$@"
	}
	part=+bpf,+perfmon,+sys_ptrace
	asnobody $part "$PTBPF" --backend singlestep --dry-run --uprobe "$CHAIN:leaf" -- "$CHAIN" -n 1 \
		>/dev/null 2>"$TMP/up.err"
	grep -q "uprobes only with CAP_SYS_ADMIN" "$TMP/up.err" || fail "uprobe without CAP_SYS_ADMIN: $(cat "$TMP/up.err")"
	asnobody $part "$PTBPF" --backend singlestep --dry-run --syscall-latency-over 1s -- "$CHAIN" -n 1 \
		>/dev/null 2>"$TMP/tp.err"
	grep -q "without CAP_DAC_READ_SEARCH" "$TMP/tp.err" || fail "tracepoint without tracefs access: $(cat "$TMP/tp.err")"
	asnobody $part "$PTBPF" doctor >"$TMP/doc2.out" 2>&1
	for c in 'uprobe attach' 'tracefs' 'tracepoint (tp)'; do
		line=$(grep -m1 "absent  $c" "$TMP/doc2.out") || continue
		grep -q 'fix: a missing privilege' <<<"$line" || fail "doctor with CAP_BPF and CAP_PERFMON, $c: $line"
	done
	# the capabilities the message names are all a capture needs
	set=$(sed -n 's/.*setcap \([a-z_,]*\)+ep.*/\1/p' "$TMP/bpf.err" | sed 's/cap_/+/g')
	[ -n "$set" ] || fail "no setcap advice: $(cat "$TMP/bpf.err")"
	asnobody "$set" "$PTBPF" --backend singlestep --dry-run --uprobe "$CHAIN:leaf" --syscall-latency-over 1s \
		-- "$CHAIN" -n 1 >"$TMP/granted.out" 2>"$TMP/granted.err" ||
		fail "as nobody with the advised capabilities ($set): $(cat "$TMP/granted.err")"
	grep -q '"sym":"leaf"' "$TMP/granted.out" || fail "as nobody with the advised capabilities: no fire"
fi

# A -p target killed mid-capture.
"$TICKER" 10 >/dev/null &
TK=$!
BG_PIDS+=("$TK")
wait_exec "$TK" ticker
cap_bg killed -p "$TK" -o "$TMP/killed.fxt"
for _ in $(seq 100); do grep -q recording "$TMP/killed.err" && break; sleep 0.1; done
sleep 1
kill -9 "$TK"
cap_wait "killed -p"
grep -q 'exit: ticker was killed by SIGKILL' "$TMP/killed.err" || fail "killed -p: $(cat "$TMP/killed.err")"
echo PASS
