#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Issue 7: how a capture session ends — the target's exit, Ctrl-C, the target killed,
# a trigger that never fires, an output directory ptbpf cannot write — with the exit
# status, the message and what is (not) left behind.
. "$(dirname "$0")/capture_common.inc"
need_singlestep

# No trigger, the target exits: one snapshot of its last moments, exit 0.
cap exit -o "$TMP/e.fxt" -- "$CHAIN" -n 3
[ "$RC" = 0 ] || { cat "$TMP/exit.err"; fail "no trigger + exit: ptbpf exited $RC"; }
fxt_ok "$TMP/e.fxt"
grep -q 'trigger   exit: cap_chain exited with status 0$' "$TMP/exit.err" ||
	fail "no trigger + exit: summary does not say exit"
"$FXTCHECK" --stacks "$TMP/e.fxt" | grep -q ' level2 ' || fail "no trigger + exit: calls missing"
[ "$(grep -c '^iter' "$TMP/exit.out")" = 3 ] || fail "no trigger + exit: the target did not run to its end"

# No trigger, Ctrl-C (SIGINT to ptbpf alone): one snapshot, exit 0; ptbpf is an observer,
# so the command it started runs on, untraced (a terminal's Ctrl-C reaches both).
cap_bg ctrlc -o "$TMP/c.fxt" -- "$CHAIN" -f
for _ in $(seq 100); do grep -q '^iter 1$' "$TMP/ctrlc.out" && break; sleep 0.1; done
grep -q '^iter 1$' "$TMP/ctrlc.out" || fail "Ctrl-C: the target never ran"
child=$(cmd_pid "$BG" cap_chain)
kill -INT "$BG"
cap_wait "Ctrl-C"
[ "$RC" = 0 ] || { cat "$TMP/ctrlc.err"; fail "Ctrl-C: ptbpf exited $RC"; }
fxt_ok "$TMP/c.fxt"
grep -q 'trigger   signal: Interrupt' "$TMP/ctrlc.err" || fail "Ctrl-C: summary does not say so"
[ -n "$child" ] || fail "Ctrl-C: no command under ptbpf"
BG_PIDS+=("$child")
not_traced "$child"
grep -q "cap_chain (pid $child) runs on, untraced" "$TMP/ctrlc.err" || fail "Ctrl-C: no notice"
kill -9 "$child"

# The target killed mid-capture, no trigger: the capture up to its death is written.
cap_bg kill -o "$TMP/k.fxt" -- "$CHAIN" -f
for _ in $(seq 100); do grep -q '^iter 1$' "$TMP/kill.out" && break; sleep 0.1; done
kill -9 "$(cmd_pid "$BG" cap_chain)" || fail "killed: no target to kill"
cap_wait "killed"
[ "$RC" = 0 ] || { cat "$TMP/kill.err"; fail "killed, no trigger: ptbpf exited $RC"; }
fxt_ok "$TMP/k.fxt"
grep -q 'trigger   exit: cap_chain was killed by SIGKILL$' "$TMP/kill.err" ||
	{ cat "$TMP/kill.err"; fail "killed, no trigger: the summary does not say it was killed"; }
$EVENTS "$TMP/k.fxt" | grep 'trigger=exit: cap_chain was killed by SIGKILL' >/dev/null ||
	fail "killed, no trigger: the trace does not say it was killed"

# The target killed while a trigger waits: no snapshot, exit 1, and the reason.
cap_bg killt --uprobe "$CHAIN:leaf" --nth 100000 -o "$TMP/kt.fxt" -- "$CHAIN" -f
for _ in $(seq 100); do grep -q '^iter 1$' "$TMP/killt.out" && break; sleep 0.1; done
kill -9 "$(cmd_pid "$BG" cap_chain)" || fail "killed + trigger: no target to kill"
cap_wait "killed + trigger"
[ "$RC" = 1 ] || { cat "$TMP/killt.err"; fail "killed + trigger: ptbpf exited $RC, not 1"; }
grep -q 'no snapshot: cap_chain was killed by SIGKILL before the trigger fired' "$TMP/killt.err" ||
	{ cat "$TMP/killt.err"; fail "killed + trigger: the reason is not given"; }
[ ! -e "$TMP/kt.fxt" ] || fail "killed + trigger: an output was written"

# A trigger that never fires within --duration: exit 1 with the reason, nothing written;
# the command runs on, untraced and unprobed.
cap never --uprobe "$CHAIN:leaf" --nth 100000 --duration 1s -o "$TMP/n.fxt" -- "$CHAIN" -f
[ "$RC" = 1 ] || { cat "$TMP/never.err"; fail "never fires: ptbpf exited $RC, not 1"; }
grep -q 'no snapshot: the trigger did not fire within --duration' "$TMP/never.err" ||
	{ cat "$TMP/never.err"; fail "never fires: the reason is not given"; }
[ ! -e "$TMP/n.fxt" ] || fail "never fires: an output was written"
left=$(sed -n 's/^ptbpf: cap_chain (pid \([0-9]*\)) runs on, untraced$/\1/p' "$TMP/never.err")
[ -n "$left" ] || { cat "$TMP/never.err"; fail "never fires: no word about the command"; }
BG_PIDS+=("$left")
not_traced "$left"
kill -9 "$left"
# ... and with --snapshot-on-exit, the end of the duration takes one anyway.
cap never2 --uprobe "$CHAIN:leaf" --nth 100000 --duration 1s --snapshot-on-exit \
	-o "$TMP/n2.fxt" -- "$CHAIN" -f
[ "$RC" = 0 ] || { cat "$TMP/never2.err"; fail "--snapshot-on-exit: ptbpf exited $RC"; }
fxt_ok "$TMP/n2.fxt"
left=$(sed -n 's/^ptbpf: cap_chain (pid \([0-9]*\)) runs on, untraced$/\1/p' "$TMP/never2.err")
[ -n "$left" ] && BG_PIDS+=("$left") && kill -9 "$left"

# An output directory ptbpf cannot write: said before anything runs, exit 1, no file.
mkdir "$TMP/ro"
mount -t tmpfs -o ro,size=1m tmpfs "$TMP/ro" || skip "cannot mount a read-only tmpfs"
cap ro -o "$TMP/ro/x.fxt" -- "$CHAIN" -n 2
umount "$TMP/ro"
[ "$RC" = 1 ] || { cat "$TMP/ro.err"; fail "read-only output: ptbpf exited $RC, not 1"; }
grep -q "cannot write to $TMP/ro" "$TMP/ro.err" || { cat "$TMP/ro.err"; fail "read-only: no clear error"; }
grep -q '^iter' "$TMP/ro.out" && fail "read-only output: the target ran anyway"
cap missing -o "$TMP/nodir/x.fxt" -- "$CHAIN" -n 2
[ "$RC" = 1 ] || fail "missing output directory: ptbpf exited $RC, not 1"
grep -q 'create the directory first' "$TMP/missing.err" || fail "missing directory: no hint"
# A capture that does not fit on its disk: exit 1, and one line says so.
mkdir "$TMP/full"
mount -t tmpfs -o size=4k tmpfs "$TMP/full" || skip "cannot mount a small tmpfs"
cap full --keep-capture "$TMP/full/c.data" -o "$TMP/full.fxt" -- "$CHAIN" -n 1
umount "$TMP/full"
[ "$RC" = 1 ] || { cat "$TMP/full.err"; fail "full disk: ptbpf exited $RC, not 1"; }
[ "$(grep -c "cannot write $TMP/full/c.data: No space left on device" "$TMP/full.err")" = 1 ] &&
	[ "$(grep -c 'cannot\|failed' "$TMP/full.err")" = 1 ] ||
	{ cat "$TMP/full.err"; fail "full disk: not one line naming the file and ENOSPC"; }
# The trace itself does not fit: exit 1, and no truncated .fxt passes for a trace.
mount -t tmpfs -o size=8k tmpfs "$TMP/full" || skip "cannot mount a small tmpfs"
cap fullfxt -o "$TMP/full/x.fxt" -- "$CHAIN" -n 1
left=$(ls -A "$TMP/full")
umount "$TMP/full"
[ "$RC" = 1 ] || { cat "$TMP/fullfxt.err"; fail "full disk (trace): ptbpf exited $RC, not 1"; }
grep -q "x.fxt: No space left on device" "$TMP/fullfxt.err" ||
	{ cat "$TMP/fullfxt.err"; fail "full disk (trace): no line naming the file and ENOSPC"; }
[ -z "$left" ] || fail "full disk (trace): half-written file(s) left: $left"

# An existing output is moved aside, not overwritten silently.
echo old >"$TMP/e.fxt"
cap again -o "$TMP/e.fxt" -- "$CHAIN" -n 1
[ "$RC" = 0 ] || fail "existing output: ptbpf exited $RC"
grep -q "moved to $TMP/e.fxt.old" "$TMP/again.err" || fail "existing output: no notice"
[ "$(cat "$TMP/e.fxt.old")" = old ] || fail "existing output: the old file is lost"
# --help says what these exit statuses are.
"$PTBPF" --help >"$TMP/help.out" 2>&1 || fail "--help failed"
grep -q '^Exit status: 0 when at least one snapshot was written; 1 when none was' "$TMP/help.out" ||
	fail "--help does not document the exit status"
echo "capture sessions end as they should"
