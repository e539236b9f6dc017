#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Issue 7: a uprobe trigger and a latency trigger, end to end (capture, freeze,
# perf.data, decode, FXT), checked against the program's real call path.
. "$(dirname "$0")/capture_common.inc"
need_singlestep

# --uprobe: the snapshot ends where iteration 5 enters leaf(); its thread's track ends
# inside leaf with the marker, under the real chain main > serve > level1 > level2.
cap uprobe --uprobe "$CHAIN:leaf" --nth 6 -o "$TMP/u.fxt" --keep-capture "$TMP/u.data" \
	-- "$CHAIN" -n 10
[ "$RC" = 0 ] || { cat "$TMP/uprobe.err"; fail "uprobe capture exited $RC"; }
fxt_ok "$TMP/u.fxt"
path=$(open_at "$TMP/u.fxt")
case $path in
*"main > serve > level1 > level2 > leaf") ;;
*) fail "uprobe: at the marker the stack is '$path', not main > serve > level1 > level2 > leaf" ;;
esac
[ "$(marker_arg "$TMP/u.fxt" arg0)" = 5 ] ||
	fail "uprobe: the marker is not on the 6th call (leaf's argument $(marker_arg "$TMP/u.fxt" arg0))"
grep -q 'snapshot 1 of cap_chain' "$TMP/uprobe.err" || fail "uprobe: no summary"
grep -q 'trigger   uprobe' "$TMP/uprobe.err" || fail "uprobe: the summary does not name the trigger"
grep -q 'ui.perfetto.dev' "$TMP/uprobe.err" || fail "uprobe: the summary does not say how to open it"
grep -q '^iter 9$' "$TMP/uprobe.out" || fail "uprobe: the command did not run to its end after the snapshot"
grep -q 'snapshot' "$TMP/uprobe.out" && fail "uprobe: the summary is mixed into the command's output"
# a "ptbpf" track summarises the capture: one slice over it, naming the trigger
$EVENTS "$TMP/u.fxt" | grep -E '^2147483646 2147483646 complete [0-9]+ capture [0-9]+ trigger=uprobe ' \
	>"$TMP/u.summary" || fail "uprobe: no ptbpf track summarising the capture"
grep -q 'recorded_by=ptbpf singlestep' "$TMP/u.summary" || fail "uprobe: the summary misses the backend"
grep -q 'decode_errors=0' "$TMP/u.summary" || fail "uprobe: the summary misses the decode figures"
# the kept perf.data decodes to the same trace
"$PTBPF" decode "$TMP/u.data" -o "$TMP/u2.fxt" 2>"$TMP/u2.err" || fail "ptbpf decode of the capture"
cmp -s <("$FXTCHECK" --stacks "$TMP/u.fxt") <("$FXTCHECK" --stacks "$TMP/u2.fxt") ||
	fail "decoding the kept perf.data gives another trace than the capture's own decode"
# and perf reads it
if command -v perf >/dev/null; then
	perf script -i "$TMP/u.data" --itrace=cr -F ip,sym 2>"$TMP/perf.err" >"$TMP/perf.out" ||
		fail "perf script cannot read the capture"
	grep -q 'level2' "$TMP/perf.out" || fail "perf script: no calls of level2"
fi

# The command runs the program through a wrapper that execs it (env, taskset, nice...):
# the program's stack starts at its own entry, not under the wrapper's call of execve.
cap wrapped --uprobe "$CHAIN:leaf" -o "$TMP/w.fxt" -- env PTBPF_TEST=1 "$CHAIN" -n 1
[ "$RC" = 0 ] || { cat "$TMP/wrapped.err"; fail "uprobe capture through env exited $RC"; }
fxt_ok "$TMP/w.fxt"
path=$(open_at "$TMP/w.fxt")
# (__libc_start_main_impl: of two global, sized aliases the longer name, as perf names it)
want="_start > __libc_start_main_impl > __libc_start_call_main > main > serve > level1 > level2 > leaf"
[ "$path" = "$want" ] || fail "through env: at the marker the stack is '$path'"

# --latency-over: only iteration 7, which sleeps 300 ms in leaf, is captured; the marker
# says so, and the trace covers the slow work (leaf and its nanosleep).
cap latency --uprobe "$CHAIN:level1" --latency-over 150ms -o "$TMP/l.fxt" -- "$CHAIN" -n 10 -s 7
[ "$RC" = 0 ] || { cat "$TMP/latency.err"; fail "latency capture exited $RC"; }
fxt_ok "$TMP/l.fxt"
[ "$(marker_arg "$TMP/l.fxt" arg0)" = 7 ] ||
	fail "latency: the trigger is not the slow call (argument $(marker_arg "$TMP/l.fxt" arg0))"
lat=$(marker_arg "$TMP/l.fxt" latency_ns)
[ "${lat:-0}" -ge 150000000 ] || fail "latency: marker latency $lat ns is under the threshold"
"$FXTCHECK" --stacks "$TMP/l.fxt" >"$TMP/l.stacks"
grep -q ' leaf ' "$TMP/l.stacks" || fail "latency: no leaf slice in the trace"
grep -Eq 'nanosleep|\[syscall\]' "$TMP/l.stacks" || fail "latency: the slow work (the sleep) is not in the trace"
grep -q 'latency' "$TMP/latency.err" || fail "latency: the summary does not give the latency"
no_probes_left "$(cat /proc/self/stat | cut -d' ' -f1)"
echo "uprobe and latency triggers captured the right moments"
