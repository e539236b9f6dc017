#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Issue 15: triggers and times on the program's own clock. Single-stepped, every request
# of lat_server takes far longer than 15 ms of wall time; on the trace's clock only
# request 7 (a 40 ms sleep) does. The same command fires on the same call with and
# without stepping (--dry-run runs the program untraced).
. "$(dirname "$0")/capture_common.inc"
need_singlestep
SRV=$BUILD/targets/lat_server

# first_arg0 FILE: arg0 of the first fire --dry-run printed
first_arg0() { sed -n 's/^{.*"arg0":"\(0x[0-9a-f]*\)".*/\1/p' "$1" | head -1; }

cap dry --dry-run --uprobe "$SRV:handle" --latency-over 15ms -- "$SRV"
[ "$RC" = 0 ] || { cat "$TMP/dry.err"; fail "--dry-run: exit $RC"; }
[ "$(first_arg0 "$TMP/dry.out")" = 0x7 ] || fail "--dry-run: first fire not on request 7: $(head -2 "$TMP/dry.out")"

cap step --uprobe "$SRV:handle" --latency-over 15ms -o "$TMP/step.fxt" -- "$SRV"
[ "$RC" = 0 ] || { cat "$TMP/step.err"; fail "singlestep: exit $RC"; }
fxt_ok "$TMP/step.fxt"
trig=$($EVENTS "$TMP/step.fxt" | grep -m1 ' instant .*\[trigger\]')
lat=$(sed -n 's/.* latency_ns=\([0-9]*\).*/\1/p' <<<"$trig")
arg0=$(sed -n 's/.* arg0=\([0-9]*\).*/\1/p' <<<"$trig")
[ "$arg0" = 7 ] || fail "singlestep: fired on request $arg0, not 7 (latency ${lat}ns): $trig"
[ "${lat:-0}" -ge 40000000 ] || fail "singlestep: request 7's latency ${lat}ns is below its 40 ms sleep"
echo "uprobe latency: request 7 fires with and without stepping ($((lat / 1000)) us on the trace's clock)"
echo PASS
