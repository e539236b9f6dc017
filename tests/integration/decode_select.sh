#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# Decoding only what matters: `ptbpf decode --tid/--pid` skips the PSB-delimited pieces
# of a CPU's trace in which no selected thread ran, and `--window DUR` the ones before
# the last DUR of the capture; what is decoded of the selected threads is exactly what
# the whole decode gives them.
#   threads   singlestep capture of three threads on two virtual CPUs: each thread
#             alone equals its lines of the whole decode, with bytes skipped
#   fork      a fork and exec followed (--follow-forks): the child process alone
#   window    --window longer than the capture decodes it all; a short one skips the
#             start, and every call and return it shows is one of the whole decode's
. "$(dirname "$0")/decode_common.inc"

T=$BUILD/targets
[ -x "$T/threads" ] || skip "targets not built"

capture() {
	local name=$1
	shift
	timeout 600 setarch -R "$PTBPF" --backend singlestep --keep-capture="$TMP/$name.data" \
		--decode=no "$@" >"$TMP/$name.run" 2>&1
}
capture threads -- "$T/threads" || {
	if grep -qiE "ptrace|not permitted|not supported" "$TMP/threads.run"; then
		skip "the singlestep backend cannot run here: $(tail -1 "$TMP/threads.run")"
	fi
	cat "$TMP/threads.run"
	fail "singlestep capture of threads"
}

# decode NAME OUT ARGS...: --format calls of NAME's capture into OUT, stats in OUT.stats
decode() {
	local name=$1 out=$2
	shift 2
	"$PTBPF" decode "$TMP/$name.data" --format calls -o "$out" --stats "$@" \
		2>"$out.stats" || { cat "$out.stats"; fail "$name: decode $*"; }
	[ "$(figure errors "$out.stats")" = 0 ] || fail "$name: decode errors with $*"
}

# the threads one by one
decode threads "$TMP/all.calls"
tids=$(awk '{ split($1, a, "/"); print a[2] }' "$TMP/all.calls" | sort -un)
[ "$(echo "$tids" | wc -l)" = 3 ] || fail "threads: expected 3 threads, got: $tids"
total=$(figure bytes "$TMP/all.calls.stats")
for tid in $tids; do
	decode threads "$TMP/t$tid.calls" --tid "$tid"
	grep "/$tid " "$TMP/all.calls" >"$TMP/t$tid.want"
	diff "$TMP/t$tid.want" "$TMP/t$tid.calls" >"$TMP/t$tid.diff" ||
		{ head -20 "$TMP/t$tid.diff"; fail "threads: --tid $tid differs from its lines of the whole decode"; }
	skipped=$(figure skipped "$TMP/t$tid.calls.stats")
	[ "$skipped" -gt 0 ] || fail "threads: --tid $tid skipped nothing"
	echo "threads: --tid $tid: $(wc -l <"$TMP/t$tid.calls") events as in the whole decode," \
		"$skipped of $total bytes skipped"
done
# the whole process: everything, nothing skipped
pid=$(awk '{ split($1, a, "/"); print a[1]; exit }' "$TMP/all.calls")
decode threads "$TMP/pid.calls" --pid "$pid"
cmp -s "$TMP/all.calls" "$TMP/pid.calls" || fail "threads: --pid $pid differs from the whole decode"
# two threads by list, as FXT: valid
"$PTBPF" decode "$TMP/threads.data" -o "$TMP/two.fxt" --tid "$(echo $tids | tr ' ' ',' | cut -d, -f2,3)" ||
	fail "threads: decode --tid A,B to FXT"
fxt_ok "$TMP/two.fxt"
[ "$("$FXTCHECK" --stacks "$TMP/two.fxt" | grep -c '^# thread.* name=threads')" = 2 ] ||
	fail "threads: --tid A,B does not give two threads"
# a process that is not in the capture: nothing
decode threads "$TMP/none.calls" --pid 1
[ ! -s "$TMP/none.calls" ] || fail "threads: --pid 1 shows events"

# a child process alone
capture fork --follow-forks -- "$T/forkexec" || { cat "$TMP/fork.run"; fail "capture forkexec"; }
decode fork "$TMP/fork.calls"
pids=$(awk '{ split($1, a, "/"); print a[1] }' "$TMP/fork.calls" | sort -un)
[ "$(echo "$pids" | wc -l)" = 2 ] || fail "fork: expected 2 processes, got: $pids"
for p in $pids; do
	decode fork "$TMP/p$p.calls" --pid "$p"
	grep "^$p/" "$TMP/fork.calls" | diff - "$TMP/p$p.calls" >"$TMP/p$p.diff" ||
		{ head -20 "$TMP/p$p.diff"; fail "fork: --pid $p differs from its lines of the whole decode"; }
done
grep -q " child_work$" "$TMP/p$(echo "$pids" | tail -1).calls" ||
	fail "fork: the child alone has no child_work"
echo "fork: each of the 2 processes alone as in the whole decode"

# --window
decode threads "$TMP/w1s.calls" --window 1s
cmp -s "$TMP/all.calls" "$TMP/w1s.calls" || fail "window: 1s (longer than the capture) differs"
# a quarter of the trace's span (a fixed 1ms was all of it when the machine's load made
# the system calls short, and nothing was skipped)
span=$(awk '$3 != "comm" && $3 != "switch-in" && $3 != "switch-out" { t = $2 + 0;
	if (min == "" || t < min) min = t; if (t > max) max = t } END { print max - min }' \
	"$TMP/all.calls")
win=$((span / 4))ns
decode threads "$TMP/w.calls" --window "$win"
skipped=$(figure skipped "$TMP/w.calls.stats")
[ "$skipped" -gt 0 ] || fail "window: $win of a $span ns trace skipped nothing"
[ -s "$TMP/w.calls" ] || fail "window: $win shows nothing"
"$PYTHON" - "$TMP/all.calls" "$TMP/w.calls" <<'PY' || fail "window: a call or return the whole decode does not have"
import sys
def flow(path):
    return [l.split() for l in open(path) if l.split()[2] in ('call', 'return')]
whole = {tuple(f) for f in flow(sys.argv[1])}
part = flow(sys.argv[2])
missing = [f for f in part if tuple(f) not in whole]
for f in missing[:5]:
    print('not in the whole decode:', ' '.join(f))
sys.exit(1 if missing or not part else 0)
PY
echo "window: $win: $(wc -l <"$TMP/w.calls") events, $skipped of $total bytes skipped"

# bad input: one line, exit 2
for args in "--window 0ms" "--window 5" "--pid abc" "--tid 1,,2" "--pid -1"; do
	"$PTBPF" decode "$TMP/threads.data" -o "$TMP/x.fxt" $args >"$TMP/bad.out" 2>&1
	rc=$?
	[ $rc = 2 ] || { cat "$TMP/bad.out"; fail "decode $args: exit $rc, expected 2"; }
	[ "$(wc -l <"$TMP/bad.out")" = 1 ] || { cat "$TMP/bad.out"; fail "decode $args: not one line"; }
done
"$PTBPF" decode --raw-pt "$TMP/threads.data" --elf "$T/threads" -o "$TMP/x.fxt" --pid 1 \
	>"$TMP/bad.out" 2>&1
[ $? = 2 ] || { cat "$TMP/bad.out"; fail "--raw-pt with --pid: not a usage error"; }
echo "bad input: usage errors"
exit 0
