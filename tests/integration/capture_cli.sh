#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Issue 15: what a user meets at the command line. Errors are one line; the no-PT
# notice comes only once a capture starts; run-queue latency under singlestep is
# refused with why; a long singlestep run shows its progress on a terminal.
. "$(dirname "$0")/capture_common.inc"
need_singlestep

# one_line NAME WHAT: ptbpf exited 2 with exactly one line on stderr
one_line() {
	[ "$RC" = 2 ] || { cat "$TMP/$1.err"; fail "$2: exit $RC, expected 2"; }
	[ "$(wc -l <"$TMP/$1.err")" = 1 ] || { cat "$TMP/$1.err"; fail "$2: not one line"; }
}

# The default backend on a host without PT: a usage error is still one line.
cap_default() {
	local name=$1
	shift
	timeout 120 "$PTBPF" "$@" >"$TMP/$name.out" 2>"$TMP/$name.err"
	RC=$?
}
if [ ! -e /sys/bus/event_source/devices/intel_pt ]; then
	cap_default nofunc --uprobe "$CHAIN:leff" -- "$CHAIN"
	one_line nofunc "a misspelt function with the default backend"
	grep -q "did you mean leaf" "$TMP/nofunc.err" || fail "no suggestion: $(cat "$TMP/nofunc.err")"
	cap_default started -o "$TMP/s.fxt" -- "$CHAIN" -n 1
	[ "$RC" = 0 ] || { cat "$TMP/started.err"; fail "default backend capture: exit $RC"; }
	grep -q "using the singlestep backend" "$TMP/started.err" || fail "no notice once the capture started"
fi

# Run-queue latency under singlestep: refused, with why and what to use instead.
cap runq --latency-over 2ms -- "$BUILD/targets/trig_runq" -n 3
one_line runq "run-queue latency under singlestep"
grep -q -- "--dry-run" "$TMP/runq.err" || fail "runq refusal does not suggest --dry-run: $(cat "$TMP/runq.err")"

# Progress on a terminal (script(1) gives ptbpf one), none when stderr is a file.
if command -v script >/dev/null; then
	TERM=dumb script -qec "'$PTBPF' --backend singlestep -o '$TMP/p.fxt' -- '$BUILD/targets/survivor' 100" \
		/dev/null >"$TMP/tty.out" 2>&1 </dev/null || { cat "$TMP/tty.out"; fail "capture on a terminal"; }
	grep -q 'stepping: [0-9]* instructions in' "$TMP/tty.out" || fail "no progress on a terminal"
	grep -q "slower than the trace's clock" "$TMP/tty.out" || fail "no slowdown in the summary"
	grep -q 'stepping:' "$TMP/started.err" 2>/dev/null && fail "progress printed to a file"
fi
echo PASS
