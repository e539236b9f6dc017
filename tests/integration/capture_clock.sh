#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Issue 15: triggers and times on the program's own clock. Single-stepped, every request
# of lat_server takes far longer than 100 ms of wall time; on the trace's clock only
# request 7 (a 200 ms sleep) does. The same command fires on the same call with and
# without stepping (--dry-run runs the program untraced).
. "$(dirname "$0")/capture_common.inc"
need_singlestep
SRV=$BUILD/targets/lat_server

# first_arg0 FILE: arg0 of the first fire --dry-run printed
first_arg0() { sed -n 's/^{.*"arg0":"\(0x[0-9a-f]*\)".*/\1/p' "$1" | head -1; }

cap dry --dry-run --uprobe "$SRV:handle" --latency-over 100ms -- "$SRV"
[ "$RC" = 0 ] || { cat "$TMP/dry.err"; fail "--dry-run: exit $RC"; }
[ "$(first_arg0 "$TMP/dry.out")" = 0x7 ] || fail "--dry-run: first fire not on request 7: $(head -2 "$TMP/dry.out")"

cap step --uprobe "$SRV:handle" --latency-over 100ms -o "$TMP/step.fxt" -- "$SRV"
[ "$RC" = 0 ] || { cat "$TMP/step.err"; fail "singlestep: exit $RC"; }
fxt_ok "$TMP/step.fxt"
trig=$($EVENTS "$TMP/step.fxt" | grep -m1 ' instant .*\[trigger\]')
lat=$(sed -n 's/.* latency_ns=\([0-9]*\).*/\1/p' <<<"$trig")
arg0=$(sed -n 's/.* arg0=\([0-9]*\).*/\1/p' <<<"$trig")
[ "$arg0" = 7 ] || fail "singlestep: fired on request $arg0, not 7 (latency ${lat}ns): $trig"
[ "${lat:-0}" -ge 200000000 ] || fail "singlestep: request 7's latency ${lat}ns is below its 200 ms sleep"
echo "uprobe latency: request 7 fires with and without stepping ($((lat / 1000)) us on the trace's clock)"

# --syscall-latency-over: request 7's nanosleep, with its real length, ending at the fire
# (before: timed on stepped wall time with the clock not yet moved on, it never fired;
# earlier still, the trace ended where the call started, a 158 ns [syscall] slice).
cap sys --syscall-latency-over 100ms -o "$TMP/sys.fxt" -- "$SRV"
[ "$RC" = 0 ] || { cat "$TMP/sys.err"; fail "--syscall-latency-over: exit $RC"; }
fxt_ok "$TMP/sys.fxt"
$EVENTS "$TMP/sys.fxt" >"$TMP/sys.events"
"$PYTHON" - "$TMP/sys.events" <<'PY' || fail "--syscall-latency-over: the slow call is not in the trace"
import re, sys
lines = open(sys.argv[1]).read().splitlines()
trig = next(l for l in lines if " instant " in l and "[trigger]" in l and not l.startswith("2147483646"))
tid, t_fire = trig.split()[1], int(trig.split()[3])
lat = int(re.search(r"latency_ns=(\d+)", trig).group(1))
assert lat >= 200_000_000, f"latency {lat} ns, below the 200 ms sleep"
begin = end = None
for l in lines:
    f = l.split()
    if len(f) >= 5 and f[1] == tid and f[4] == "[syscall]":
        if f[2] == "begin":
            begin = int(f[3])
        elif f[2] == "end":
            end = int(f[3])
assert begin is not None and end == t_fire, f"the last [syscall] ({begin}..{end}) does not end at the fire {t_fire}"
assert end - begin >= 200_000_000, f"the slow [syscall] lasts {end - begin} ns in the trace, not 200 ms"
print(f"slow syscall: {lat} ns by the trigger, {end - begin} ns in the trace, ending at the fire")
PY
# The summary's "slowest" is the firing call, open at the trigger (before: the longest
# call that had returned, a few ms of start-up code).
slowest=$(grep -m1 '^  slowest ' "$TMP/sys.err")
grep -Eq '^  slowest +(2[0-9][0-9](\.[0-9]+)?ms|[0-9.]+s) .*handle > .*nanosleep$' <<<"$slowest" ||
	fail "--syscall-latency-over: the summary's slowest is not the firing sleep: $slowest"
echo "summary: $slowest"
echo PASS
