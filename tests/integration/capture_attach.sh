#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Issue 7: -p PID attaches to a running process and detaches cleanly: after ptbpf
# exits, the target keeps running, neither ptraced, stopped nor probed.
. "$(dirname "$0")/capture_common.inc"
need_singlestep

"$CHAIN" -f >"$TMP/target.out" &
target=$!
BG_PIDS+=("$target")
for _ in $(seq 50); do grep -q '^iter 2$' "$TMP/target.out" && break; sleep 0.1; done

# With a trigger: iteration 3 of those to come enters leaf().
cap attach_trig --uprobe "$CHAIN:leaf" --nth 3 -o "$TMP/a.fxt" -p "$target"
[ "$RC" = 0 ] || { cat "$TMP/attach_trig.err"; fail "-p with a trigger: ptbpf exited $RC"; }
fxt_ok "$TMP/a.fxt"
case $(open_at "$TMP/a.fxt") in
*"serve > level1 > level2 > leaf") ;;
*) fail "-p: at the marker the stack is '$(open_at "$TMP/a.fxt")'" ;;
esac
not_traced "$target"
no_probes_left "$target"

# Without a trigger: Ctrl-C ends the session with a snapshot; the target goes on.
cap_bg b -o "$TMP/b.fxt" -p "$target"
sleep 2
kill -INT "$BG"
cap_wait "-p, Ctrl-C"
[ "$RC" = 0 ] || { cat "$TMP/b.err"; fail "-p, Ctrl-C: ptbpf exited $RC"; }
fxt_ok "$TMP/b.fxt"
not_traced "$target"
before=$(grep -c '^iter' "$TMP/target.out")
sleep 0.5
after=$(grep -c '^iter' "$TMP/target.out")
[ "$after" -gt "$before" ] || fail "-p: the target does not run on after ptbpf left ($before, $after)"

# A PID that does not exist: one line, exit 2.
cap nopid -p 999999999
[ "$RC" = 2 ] || fail "-p with no such process: exit $RC, not 2"
grep -q 'no process with PID' "$TMP/nopid.err" || fail "-p with no such process: no clear error"
echo "attach and detach leave the target running untouched"
