#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Issue 15: triggers the program raises itself. USDT probes (--usdt BIN:PROVIDER:NAME,
# libbpf's USDT support) and PTBPF_TRIGGER() of include/ptbpf.h, on usdt_app (probes
# from <sys/sdt.h>): --dry-run lists every pass with the probe's arguments; a capture
# freezes where the program called PTBPF_TRIGGER_ARGS(4, 42), inside serve().
. "$(dirname "$0")/capture_common.inc"
need_singlestep
APP=$BUILD/targets/usdt_app
readelf -n "$APP" 2>/dev/null | grep -q 'Provider: ptbpf' || fail "$APP has no ptbpf:trigger USDT note"

cap dry --dry-run --usdt "$APP:app:request" -- "$APP"
[ "$RC" = 0 ] || { cat "$TMP/dry.err"; fail "--dry-run --usdt: exit $RC"; }
[ "$(grep -c '"kind":"usdt"' "$TMP/dry.out")" = 6 ] || fail "--dry-run: not 6 fires: $(cat "$TMP/dry.out")"
for i in 0 1 2 3 4 5; do
	grep -q "\"arg0\":\"0x$i\"" "$TMP/dry.out" || fail "--dry-run: no fire with arg0 $i"
done

# PROVIDER:NAME without BIN: the traced program's probe; captured under singlestep.
cap snap --usdt ptbpf:trigger -o "$TMP/u.fxt" -- "$APP"
[ "$RC" = 0 ] || { cat "$TMP/snap.err"; fail "--usdt capture: exit $RC"; }
fxt_ok "$TMP/u.fxt"
trig=$($EVENTS "$TMP/u.fxt" | grep -m1 ' instant .*\[trigger\] trigger=usdt')
[ -n "$trig" ] || fail "no usdt [trigger] in the trace"
grep -q ' arg0=4 arg1=42' <<<"$trig" || fail "the trigger's arguments: $trig"
open_at "$TMP/u.fxt" | grep -q 'main > serve' || fail "the trigger is not inside serve: $(open_at "$TMP/u.fxt")"

# A probe the program does not have: one line naming it and how to list them.
cap none --usdt "$APP:app:nosuch" -- "$APP"
[ "$RC" != 0 ] && [ "$(wc -l <"$TMP/none.err")" = 1 ] && grep -q 'has no USDT probe app:nosuch' "$TMP/none.err" ||
	{ cat "$TMP/none.err"; fail "a missing USDT probe: exit $RC"; }
echo PASS
