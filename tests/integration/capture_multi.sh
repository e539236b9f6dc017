#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Issue 7: two triggers on one command line, and --max-snapshots 3: three numbered
# traces (and captures), each frozen at a fire, each valid.
. "$(dirname "$0")/capture_common.inc"
need_singlestep

cap multi --uprobe "$CHAIN:level2" --uprobe "$CHAIN:leaf" --max-snapshots 3 \
	-o "$TMP/m.fxt" --keep-capture -- "$CHAIN" -n 8
[ "$RC" = 0 ] || { cat "$TMP/multi.err"; fail "ptbpf exited $RC"; }
for n in 1 2 3; do
	[ -s "$TMP/m.$n.fxt" ] || fail "no trace $n ($(ls "$TMP"))"
	[ -s "$TMP/m.$n.data" ] || fail "no capture $n"
	fxt_ok "$TMP/m.$n.fxt"
	$EVENTS "$TMP/m.$n.fxt" | grep -q 'instant .*\[trigger\]' || fail "trace $n has no trigger marker"
done
[ ! -e "$TMP/m.4.fxt" ] || fail "more than --max-snapshots traces"
[ "$(grep -c '^ptbpf: snapshot' "$TMP/multi.err")" = 3 ] || fail "not three summaries"
# Both triggers fired: level2 is entered before leaf, so the fires alternate.
grep -q 'trigger   uprobe .*:level2' "$TMP/multi.err" || fail "the level2 trigger never fired"
grep -q 'trigger   uprobe .*:leaf' "$TMP/multi.err" || fail "the leaf trigger never fired"
[ "$(grep -c '^iter' "$TMP/multi.out")" = 8 ] || fail "the target did not run to its end"
echo "two triggers, three snapshots, three valid traces"
