#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# ptbpf's decoder against perf's on real programs: each target of tests/targets/ is
# captured by the singlestep backend (software PT of every instruction it runs, in a
# perf.data that perf reads), then decoded by both. Per thread, ptbpf's calls and
# returns (--format calls) must equal `perf script --itrace=cr`'s, line for line: no
# difference is allowed. What the two print differently and this comparison leaves
# out: jumps that leave a function (tail calls, PLT stubs, longjmp) are events for
# ptbpf and not `cr` lines for perf; a return into the [uprobes] trampoline (a
# uretprobe'd function's) is, for ptbpf, a return to the real return address, and
# perf, which cannot read that page, loses its trace there (compared below against
# the unprobed run). The FXT of each must pass fxtcheck --strict and show what the
# program does.
#   recurse     recursion, calls through a table of function pointers, a jump table
#   sigjmp      setjmp/longjmp out of a recursion, signal handlers (sync and async),
#               siglongjmp out of a handler
#   cxxexc      C++ exceptions thrown through frames (static-pie)
#   vdso_clock  clock_gettime through the vDSO in a loop (dynamic: ld.so, PLT)
#   threads     two threads besides main on two virtual CPUs
#   tailcall    a -O2 sibling call (jmp leaf)
. "$(dirname "$0")/decode_common.inc"

T=$BUILD/targets
[ -x "$T/recurse" ] || skip "targets not built"

# Captures run with address-space randomization off (setarch -R; the target inherits it):
# the uretprobe case compares two runs of recurse, and a libc string function returns
# through another of its exits when the stack's strings sit at another alignment.
NORAND="setarch -R"

# capture NAME: a singlestep capture of $T/NAME in $TMP/NAME.data
capture() {
	timeout 600 $NORAND "$PTBPF" --backend singlestep --keep-capture="$TMP/$1.data" --decode=no -- \
		"$T/$1" >"$TMP/$1.run" 2>&1
}
capture recurse || {
	if grep -qiE "ptrace|not permitted|not supported" "$TMP/recurse.run"; then
		skip "the singlestep backend cannot run here: $(tail -1 "$TMP/recurse.run")"
	fi
	cat "$TMP/recurse.run"
	fail "singlestep capture of recurse"
}
have_perf=1
command -v perf >/dev/null || have_perf=0

# check NAME: decode, compare with perf, validate the FXT; stacks in $TMP/NAME.stacks
check() {
	local name=$1
	[ -f "$TMP/$name.data" ] || capture "$name" || { cat "$TMP/$name.run"; fail "capture $name"; }
	"$PTBPF" decode "$TMP/$name.data" --format calls -o "$TMP/$name.calls" --stats \
		2>"$TMP/$name.stats" || { cat "$TMP/$name.stats"; fail "$name: ptbpf decode"; }
	[ "$(figure errors "$TMP/$name.stats")" = 0 ] || fail "$name: decode errors"
	printf '%-11s %7s instructions, %s threads: ' "$name" \
		"$(figure instructions "$TMP/$name.stats")" "$(figure threads "$TMP/$name.stats")"
	if [ $have_perf = 1 ]; then
		perf script -i "$TMP/$name.data" --itrace=cr -F tid,flags,ip,addr \
			>"$TMP/$name.perf" 2>"$TMP/$name.perf.err" || fail "$name: perf script"
		"$PYTHON" "$(dirname "$0")/perf_calls.py" "$TMP/$name.perf" "$TMP/$name.calls" \
			>"$TMP/$name.cmp" || { cat "$TMP/$name.cmp"; fail "$name: differs from perf"; }
		head -1 "$TMP/$name.cmp"
	else
		echo "(perf not installed: no comparison)"
	fi
	"$PTBPF" decode "$TMP/$name.data" -o "$TMP/$name.fxt" -j 2 || fail "$name: decode to FXT"
	fxt_ok "$TMP/$name.fxt"
	"$FXTCHECK" --stacks "$TMP/$name.fxt" >"$TMP/$name.stacks"
}

# has NAME REGEX WHAT: a slice matching REGEX in NAME's stacks
has() {
	grep -qE "$2" "$TMP/$1.stacks" || fail "$1: $3"
}

check recurse
has recurse '^[0-9]+ main ' "no main"
depth=$(awk '$2 == "fib" && $1 > m { m = $1 } END { print m + 0 }' "$TMP/recurse.stacks")
base=$(awk '$2 == "fib" { print $1; exit }' "$TMP/recurse.stacks")
[ $((depth - base)) -ge 6 ] || fail "recurse: fib nests $((depth - base)) deep, expected >= 6"
for f in op_add op_sub op_mul op_xor dispatch; do
	has recurse " $f " "no $f (called through a pointer / jump table)"
done

check sigjmp
for f in deep on_usr1 on_alarm on_usr2 __libc_siglongjmp; do
	has sigjmp " $f " "no $f"
done
# longjmp unwinds: the recursion starts at the same depth every time
[ "$(awk '$2 == "deep" && prev != "deep" { print $1 } { prev = $2 }' "$TMP/sigjmp.stacks" |
	sort -u | wc -l)" = 1 ] || fail "sigjmp: deep() does not restart at one depth after longjmp"

check cxxexc
for f in 'level1\(int\)' 'level3\(int\)' __cxa_throw _Unwind_RaiseException; do
	has cxxexc " $f" "no $f"
done

check vdso_clock
has vdso_clock " __vdso_clock_gettime " "the vDSO's clock_gettime is not named (vDSO bytes)"
has vdso_clock " clock_gettime@plt " "no PLT entry"

check threads
[ "$(grep -c '^# thread pid=.* name=threads' "$TMP/threads.stacks")" = 3 ] ||
	{ grep '^# thread' "$TMP/threads.stacks"; fail "threads: not 3 named threads"; }

check tailcall
grep -qE " jump .* leaf$" "$TMP/tailcall.calls" || fail "tailcall: no jump into leaf"
# leaf replaces middle: same depth, leaf right after middle
awk '$2 == "middle" { d = $1; getline; if ($2 != "leaf" || $1 != d) bad = 1; n++ }
     END { exit bad || !n }' "$TMP/tailcall.stacks" || fail "tailcall: leaf is not middle's sibling"

# Through the [uprobes] trampoline: every return of fib passes through it when fib has
# a uretprobe (--latency-over above any call: it never fires; --snapshot-on-exit takes
# the snapshot at exit). ptbpf decodes each as a return to fib's caller, with no error and no resync, so
# the sequence is the one perf prints for the same program without the probe; perf
# itself cannot read the trampoline and loses its trace at each of them.
timeout 600 $NORAND "$PTBPF" --backend singlestep --uprobe "$T/recurse:fib" --latency-over 10s \
	--snapshot-on-exit --keep-capture="$TMP/uret.data" --decode=no -- "$T/recurse" >"$TMP/uret.run" 2>&1 ||
	{ cat "$TMP/uret.run"; fail "singlestep capture of recurse with a uretprobe on fib"; }
"$PTBPF" decode "$TMP/uret.data" --format calls -o "$TMP/uret.calls" --stats \
	2>"$TMP/uret.stats" || { cat "$TMP/uret.stats"; fail "uret: ptbpf decode"; }
[ "$(figure errors "$TMP/uret.stats")" = 0 ] || fail "uret: decode errors in the trampoline"
[ "$(figure syncs "$TMP/uret.stats")" = 1 ] || fail "uret: resyncs at the trampoline"
grep -q " return .* 0x7ff" "$TMP/uret.calls" && fail "uret: a return into [uprobes] shows"
if [ $have_perf = 1 ]; then
	"$PYTHON" "$(dirname "$0")/perf_calls.py" "$TMP/recurse.perf" "$TMP/uret.calls" \
		--one-thread >"$TMP/uret.cmp" || { cat "$TMP/uret.cmp"; fail "uret: differs"; }
	printf '%-11s %7s instructions, 0 errors (perf loses its trace %s times): %s\n' uretprobe \
		"$(figure instructions "$TMP/uret.stats")" \
		"$(perf script -i "$TMP/uret.data" --itrace=cr 2>/dev/null | grep -c '=> *7ff')" \
		"$(head -1 "$TMP/uret.cmp")"
fi
"$PTBPF" decode "$TMP/uret.data" -o "$TMP/uret.fxt" || fail "uret: decode to FXT"
fxt_ok "$TMP/uret.fxt"

# A fork and an exec, children followed: two processes, the child with its own address
# space after exec. One difference with perf, explained: just after fork, perf gives the
# child the parent's first return and call (4 lines differ: 2 missing in the parent, 2
# extra in the child). Its switch to the child takes effect at the child's switch-in
# timestamp, which falls inside the parent's user-mode run on its own CPU; ptbpf changes
# threads only where tracing resumes from the kernel, where a user-only trace must.
timeout 600 "$PTBPF" --backend singlestep --follow-forks --keep-capture="$TMP/fork.data" \
	--decode=no -- "$T/forkexec" >"$TMP/fork.run" 2>&1 ||
	{ cat "$TMP/fork.run"; fail "singlestep capture of forkexec --follow-forks"; }
"$PTBPF" decode "$TMP/fork.data" --format calls -o "$TMP/fork.calls" --stats \
	2>"$TMP/fork.stats" || { cat "$TMP/fork.stats"; fail "fork: ptbpf decode"; }
[ "$(figure errors "$TMP/fork.stats")" = 0 ] || fail "fork: decode errors"
[ "$(figure threads "$TMP/fork.stats")" = 2 ] || fail "fork: not two threads"
# after fork, both processes return into __libc_fork from the system call's wrapper,
# once each: the same return in two threads, not twice in one
"$PYTHON" - "$TMP/fork.calls" <<'PY' || fail "fork: the return from the fork is not once in each process"
import collections, sys
seen = collections.Counter()
for line in open(sys.argv[1]):
    f = line.split()
    if len(f) >= 6 and f[2] == 'return' and f[-1] == '__libc_fork':
        seen[(f[3], f[4], f[0])] += 1
pairs = collections.defaultdict(list)
for (frm, to, tid), n in seen.items():
    pairs[(frm, to)].append(n)
sys.exit(0 if any(len(v) == 2 and v == [1, 1] for v in pairs.values()) else 1)
PY
if [ $have_perf = 1 ]; then
	perf script -i "$TMP/fork.data" --itrace=cr -F tid,flags,ip,addr >"$TMP/fork.perf" \
		2>/dev/null || fail "fork: perf script"
	"$PYTHON" "$(dirname "$0")/perf_calls.py" "$TMP/fork.perf" "$TMP/fork.calls" --allow 4 \
		>"$TMP/fork.cmp" || { cat "$TMP/fork.cmp"; fail "fork: differs beyond the fork"; }
	printf '%-11s %7s instructions, 2 processes: %s\n' forkexec \
		"$(figure instructions "$TMP/fork.stats")" "$(head -1 "$TMP/fork.cmp")"
fi
"$PTBPF" decode "$TMP/fork.data" -o "$TMP/fork.fxt" || fail "fork: decode to FXT"
fxt_ok "$TMP/fork.fxt"
"$FXTCHECK" --stacks "$TMP/fork.fxt" >"$TMP/fork.stacks"
grep -q " child_work " "$TMP/fork.stacks" || fail "fork: the exec'd child's frames are missing"

# Output does not depend on the number of decoder threads.
"$PTBPF" decode "$TMP/threads.data" --format text -o "$TMP/j1.txt" -j 1 || fail "-j 1"
"$PTBPF" decode "$TMP/threads.data" --format text -o "$TMP/j2.txt" -j 2 || fail "-j 2"
"$PTBPF" decode "$TMP/threads.data" --format text -o "$TMP/j8.txt" -j 8 || fail "-j 8"
cmp -s "$TMP/j1.txt" "$TMP/j2.txt" && cmp -s "$TMP/j1.txt" "$TMP/j8.txt" ||
	fail "threads: output differs between -j 1, 2 and 8"
echo "6 targets, a uretprobe'd one, fork+exec: calls and returns as perf script's, FXT" \
	"valid, same for any -j"
