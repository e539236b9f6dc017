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
# Usage errors: one line, exit 2, before anything runs.
cap zero --uprobe "$CHAIN:leaf" --latency-over 0ms -- "$CHAIN" -n 1
one_line zero "--latency-over 0ms"
cap twice --uprobe "$CHAIN:leaf" --latency-over 1ms --latency-over 2ms -- "$CHAIN" -n 1
one_line twice "a second --latency-over"
cap szero --syscall-latency-over 0s -- "$CHAIN" -n 1
one_line szero "--syscall-latency-over 0s"
cap dash -o - -- "$CHAIN" -n 1
one_line dash "-o - in capture mode"
[ ! -s "$TMP/dash.out" ] || fail "-o -: something ran: $(cat "$TMP/dash.out")"

# -o DIR: the default-named file in DIR; DIR/ that does not exist: refused before the run.
mkdir "$TMP/traces"
cap dir -o "$TMP/traces" -- "$CHAIN" -n 1
[ "$RC" = 0 ] || { cat "$TMP/dir.err"; fail "-o DIR: exit $RC"; }
[ -d "$TMP/traces" ] || fail "-o DIR: the directory was moved aside"
ls "$TMP"/traces/ptbpf-cap_chain-*.fxt >/dev/null 2>&1 || fail "-o DIR: no default-named file in it"
cap nodir -o "$TMP/nosuch/" -- "$CHAIN" -n 1
[ "$RC" = 1 ] && [ "$(wc -l <"$TMP/nodir.err")" = 1 ] ||
	{ cat "$TMP/nodir.err"; fail "-o to a missing directory: exit $RC, not 1 with one line"; }
[ ! -s "$TMP/nodir.out" ] || fail "-o missing/: the program ran before the error"
# A third capture to one name: FILE.old and FILE.old.2, no backup overwritten.
for i in 1 2 3; do
	cap bak$i -o "$TMP/b.fxt" -- "$CHAIN" -n 1
	[ "$RC" = 0 ] || { cat "$TMP/bak$i.err"; fail "backup run $i: exit $RC"; }
done
[ -f "$TMP/b.fxt.old" ] && [ -f "$TMP/b.fxt.old.2" ] || fail "no numbered backups: $(ls "$TMP")"
# -o DEVICE, as -o /dev/null (a node of its own here): written into, never moved aside
# or renamed over; a perf.data, written whole and renamed, is refused there.
if mknod "$TMP/null" c 1 3 2>/dev/null; then
	cap dev -o "$TMP/null" -- "$CHAIN" -n 1
	[ "$RC" = 0 ] || { cat "$TMP/dev.err"; fail "-o DEVICE: exit $RC"; }
	[ -c "$TMP/null" ] && [ ! -e "$TMP/null.old" ] || fail "-o DEVICE: the device was replaced: $(ls -l "$TMP")"
	cap devkeep --decode=no --keep-capture="$TMP/null" -- "$CHAIN" -n 1
	[ "$RC" = 1 ] && [ "$(wc -l <"$TMP/devkeep.err")" = 1 ] ||
		{ cat "$TMP/devkeep.err"; fail "--keep-capture DEVICE: exit $RC, not 1 with one line"; }
	[ -c "$TMP/null" ] && [ ! -s "$TMP/devkeep.out" ] || fail "--keep-capture DEVICE: ran or replaced the device"
fi

# --uprobe FUNC without BIN: the traced program's function; '?' lists them, ranked.
cap nobin --dry-run --uprobe leaf --max-snapshots 1 -- "$CHAIN" -n 1
[ "$RC" = 0 ] || { cat "$TMP/nobin.err"; fail "--uprobe FUNC without BIN: exit $RC"; }
grep -q '"sym":"leaf"' "$TMP/nobin.out" || fail "--uprobe leaf did not fire in leaf: $(cat "$TMP/nobin.out")"
cap pick --uprobe '?lef' -- "$CHAIN"
[ "$RC" = 0 ] || { cat "$TMP/pick.err"; fail "--uprobe '?lef': exit $RC"; }
[ "$(awk 'NR == 1 { print $1 }' "$TMP/pick.out")" = leaf ] || fail "--uprobe '?lef': leaf not first: $(head -3 "$TMP/pick.out")"
[ ! -e "$TMP/pick.fxt" ] || fail "the picker captured"
"$PTBPF" symbols "$CHAIN" level >"$TMP/sym.out" || fail "ptbpf symbols: exit $?"
grep -q '^level1 ' "$TMP/sym.out" && grep -q "\-\-uprobe $CHAIN:level2" "$TMP/sym.out" ||
	fail "ptbpf symbols: $(cat "$TMP/sym.out")"

# decode: a bad -o before decoding; damage summed up on stderr without --stats.
cap keep --decode=no --keep-capture="$TMP/k.data" -- "$CHAIN" -n 2
[ "$RC" = 0 ] || { cat "$TMP/keep.err"; fail "--keep-capture: exit $RC"; }
"$PTBPF" decode "$TMP/k.data" -o "$TMP" 2>"$TMP/ddir.err"
[ $? = 2 ] && grep -q 'is a directory' "$TMP/ddir.err" || fail "decode -o DIR: $(cat "$TMP/ddir.err")"
"$PYTHON" - "$TMP/k.data" "$TMP/bad.data" <<'PY'
import random, sys
d = bytearray(open(sys.argv[1], "rb").read())
psb = bytes([2, 0x82] * 8)
i = d.find(psb)
assert i >= 0, "no PSB in the capture"
r = random.Random(1)
for _ in range(40):  # bytes of the trace after its first PSB+, not the file's headers
    d[i + 200 + r.randrange(2000)] = r.randrange(256)
open(sys.argv[2], "wb").write(d)
PY
"$PTBPF" decode "$TMP/bad.data" -o "$TMP/bad.fxt" 2>"$TMP/bad.err" || fail "decode of a damaged capture: exit $?"
grep -q '[1-9][0-9]* decode error(s)' "$TMP/bad.err" || fail "decode errors not summed up: $(cat "$TMP/bad.err")"
echo PASS
