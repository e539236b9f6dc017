#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# The singlestep backend records each program of tests/targets with --verify passing
# (libipt decodes every stepped instruction back), the program's output unchanged, and
# perf decodes the capture and sees the program's own functions: recursion, function
# pointers and a jump table; setjmp/longjmp and signal handlers; a tail call (-O2); C++
# exceptions; two threads on two virtual CPUs and on one (context switches). Timing
# packets vary along: MTC (default), CYC, TSC only, and the real clock.
. "$(dirname "$0")/ss_common.inc"
need_ptrace
need_perf

check_output() {
	local name=$1 cmd=$2
	"$TARGETS/$cmd" >"$TMP/$name.native" 2>&1
	diff -u "$TMP/$name.native" "$TMP/$name.out" || fail "$name: output differs from a native run"
}

ss recurse -- "$TARGETS/recurse"
check_output recurse recurse
perf_calls recurse main fib dispatch op_add op_mul

ss sigjmp --timing cyc -- "$TARGETS/sigjmp"
check_output sigjmp sigjmp
perf_calls sigjmp main deep on_usr1 on_usr2 on_alarm
# Handlers start at a TIP.PGE; the timer interrupts user code: an asynchronous exit
# (FUP + TIP.PGD) before on_alarm.
grep -qE 'tr strt .*=> +[0-9a-f]+ on_alarm$' "$TMP/sigjmp.perf" || fail "sigjmp: on_alarm not entered"
grep -q 'tr end  async' "$TMP/sigjmp.perf" || fail "sigjmp: no asynchronous trace end (signal)"

ss tailcall --noretcomp --timing tsc -- "$TARGETS/tailcall"
check_output tailcall tailcall
perf_calls tailcall main middle
# middle ends in `jmp leaf`: leaf is reached without a call, and returns to main.
grep -qE 'return .* leaf +=> +[0-9a-f]+ main$' "$TMP/tailcall.perf" ||
	fail "tailcall: leaf does not return straight to main"

ss cxxexc --clock real -- "$TARGETS/cxxexc"
check_output cxxexc cxxexc
perf_calls cxxexc main level1 level2 level3 __cxa_throw

ss threads -- "$TARGETS/threads"
check_output threads threads
perf_calls threads main worker work
# two virtual CPUs, and those the per-thread clock may add (doc/singlestep-clock.md)
[ "$(grep -c 'decoded as stepped' "$TMP/threads.err")" -ge 2 ] ||
	fail "threads: expected at least both virtual CPUs to carry trace"

ss threads1 --cpus 1 -- "$TARGETS/threads"
check_output threads1 threads
perf_calls threads1 main worker work
# With one CPU the threads take turns: perf must give work() to the worker threads.
awk '/=> +[0-9a-f]+ work$/ { print $1 }' "$TMP/threads1.perf" | sort -u >"$TMP/work_tids"
awk '/=> +[0-9a-f]+ main$/ { print $1 }' "$TMP/threads1.perf" | sort -u >"$TMP/main_tids"
[ "$(wc -l <"$TMP/work_tids")" = 2 ] || fail "threads1: work() not seen in two threads"
if comm -12 "$TMP/work_tids" "$TMP/main_tids" | grep -q .; then
	fail "threads1: perf gives work() to the main thread (switch sideband misplaced)"
fi
for n in recurse sigjmp tailcall cxxexc threads threads1; do
	e=$(perf_errors $n)
	[ "$e" = 0 ] || fail "$n: perf reports $e decode errors"
done
echo "all targets: --verify passed, output unchanged, perf decodes without errors"
