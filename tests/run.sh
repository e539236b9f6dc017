#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# Runs every cmocka unit test (build/tests/test_*) and every integration test
# (tests/integration/*.sh), then prints one cmocka-style summary.
#
# Integration test protocol: exit 0 = passed, 77 = skipped (the last line of output
# says why, e.g. "SKIP: no kprobes in this kernel (CONFIG_KPROBES)"), anything else =
# failed. Unit tests skip with cmocka's skip() after printing the reason.
#
# Environment: PTBPF (binary), BUILD (build dir), PYTHON; TESTS="pattern" runs a subset;
# PTBPF_TESTDATA: a directory holding hw-pt/kafl-libxdc-experiments (see tests/data/README.md);
# TEST_TIMEOUT (seconds, default 600): a test still running then is killed, with every
# process it started, and counted as failed, so that a hang never stalls the suite.
# Each test's wall and CPU seconds go to $BUILD/test-logs/times (wall, CPU, name;
# slowest first) and the slowest TOP_TESTS (default 15) end the output: where the
# suite's minutes go, and whether it waits (CPU well under wall) or works.
set -u
here=$(cd "$(dirname "$0")" && pwd)
# Debian's tools first: a python3 shim from a version manager costs seconds per call.
[ -x /usr/bin/python3 ] && PATH=/usr/bin:$PATH
top=$(cd "$here/.." && pwd)
: "${BUILD:=$top/build}" "${PTBPF:=$BUILD/ptbpf}" "${PYTHON:=python3}"
# The tests need nothing outside the repository: the FXT validator is built with ptbpf
# (tests/tools/fxtcheck.c), the real-hardware data is in tests/data. The one set whose
# license keeps it out (kAFL/Nyx traces, AGPL-3.0) is looked for in $PTBPF_TESTDATA, then
# in ../shared/testdata beside the clone; the tests that need it skip without it.
KAFL=
for d in "${PTBPF_TESTDATA:-}" "$top/../shared/testdata"; do
	[ -n "$d" ] && [ -d "$d/hw-pt/kafl-libxdc-experiments" ] &&
		{ KAFL=$(cd "$d/hw-pt/kafl-libxdc-experiments" && pwd); break; }
done
# every decode a test makes is first done both ways, fast path and block decoder, and
# fails at the first difference (see --verify-fast in README.md); 0 turns that off
: "${PTBPF_VERIFY_FAST:=1}"
# the fast path on every capture, however small (a capture under 128 KiB of PT is
# decoded without it by default: decode_fast_small.sh)
: "${PTBPF_FAST_MIN_PT:=0}"
export BUILD PTBPF PYTHON TOP="$top" TESTDATA="$top/tests/data" KAFL \
	FXTCHECK="$BUILD/tests/fxtcheck" PTBPF_VERIFY_FAST PTBPF_FAST_MIN_PT
[ -x "$FXTCHECK" ] || { echo "tests/run.sh: $FXTCHECK is missing: run make first" >&2; exit 2; }
pattern=${TESTS:-}
limit=${TEST_TIMEOUT:-600}

passed=0 failed=0 skipped=0 run=0
failed_list=() skipped_list=()
logdir=$BUILD/test-logs
rm -rf "$logdir" && mkdir -p "$logdir"
suite_start=$EPOCHREALTIME
cpu_file=$logdir/.cpu
# timed CMD...: CMD under /usr/bin/time, its CPU seconds (its children's included) into
# $cpu_file; CMD's exit status
timed() {
	/usr/bin/time -f '%U %S' -o "$cpu_file" "$@"
}
# took NAME START: records NAME's wall seconds since START (an $EPOCHREALTIME) and the
# CPU seconds timed wrote; prints the wall seconds
took() {
	local secs cpu
	secs=$(awk -v a="$2" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }')
	# time writes a "Command exited with non-zero status" line first
	cpu=$(tail -1 "$cpu_file" 2>/dev/null | awk '{ printf "%.1f", $1 + $2 }')
	echo "$secs ${cpu:-?} $1" >>"$logdir/times.unsorted"
	echo "$secs"
}

for bin in "$BUILD"/tests/test_*; do
	[ -x "$bin" ] || continue
	name=$(basename "$bin")
	[ -n "$pattern" ] && [[ $name != *$pattern* ]] && continue
	log=$logdir/$name.log
	start=$EPOCHREALTIME
	CMOCKA_MESSAGE_OUTPUT=STDOUT timed timeout -k 10 "$limit" "$bin" >"$log" 2>&1
	rc=$?
	took "$name" "$start" >/dev/null
	[ "$rc" -eq 124 ] && echo "$name: timed out after ${limit}s (TEST_TIMEOUT)" >>"$log"
	cat "$log"
	p=$(sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p' "$log" | tail -1)
	f=$(sed -n 's/^\[  FAILED  \] \([0-9]*\) test.*/\1/p' "$log" | tail -1)
	s=$(sed -n 's/^\[  SKIPPED \] \([0-9]*\) test.*/\1/p' "$log" | tail -1)
	t=$(sed -n 's/^\[==========\] \([0-9]*\) test(s) run.*/\1/p' "$log" | tail -1)
	p=${p:-0} f=${f:-0} s=${s:-0} t=${t:-0}
	if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
		# crashed or exited early: count it as one failure
		f=1
		t=$((t + 1))
	fi
	passed=$((passed + p)) failed=$((failed + f)) skipped=$((skipped + s)) run=$((run + t))
	[ "$f" -gt 0 ] && failed_list+=("$name (see $log)")
	while read -r line; do
		skipped_list+=("$name: $line")
	done < <(sed -n 's/^SKIP: //p' "$log")
done

for script in "$top"/tests/integration/*.sh; do
	[ -f "$script" ] || continue
	name=$(basename "$script" .sh)
	[ -n "$pattern" ] && [[ $name != *$pattern* ]] && continue
	log=$logdir/$name.log
	echo "[ RUN      ] $name"
	start=$EPOCHREALTIME
	# timeout signals the test's whole process group: its targets do not outlive it.
	timed timeout -k 10 "$limit" bash "$script" >"$log" 2>&1
	rc=$?
	secs=$(took "$name" "$start")
	[ "$rc" -eq 124 ] && echo "timed out after ${limit}s (TEST_TIMEOUT)" >>"$log"
	run=$((run + 1))
	case $rc in
	0)
		passed=$((passed + 1))
		echo "[       OK ] $name (${secs}s)"
		;;
	77)
		skipped=$((skipped + 1))
		why=$(grep -h '^SKIP:' "$log" | tail -1 | sed 's/^SKIP: //')
		why=${why:-$(tail -1 "$log")}
		echo "[  SKIPPED ] $name: $why"
		skipped_list+=("$name: $why")
		;;
	*)
		failed=$((failed + 1))
		echo "[  FAILED  ] $name (exit $rc, ${secs}s); last lines of $log:"
		tail -20 "$log" | sed 's/^/    /'
		failed_list+=("$name (see $log)")
		;;
	esac
done

sort -rn "$logdir/times.unsorted" >"$logdir/times" 2>/dev/null
rm -f "$logdir/times.unsorted" "$cpu_file"
echo
echo "[==========] slowest tests, wall and CPU seconds (all in $logdir/times):"
head -"${TOP_TESTS:-15}" "$logdir/times" |
	awk '{ printf "[   TIME   ] %7.1fs %7.1fs CPU  %s\n", $1, $2, $3 }'
awk -v a="$suite_start" -v b="$EPOCHREALTIME" '{ cpu += $2 }
	END { printf "[   TIME   ] %7.1fs %7.1fs CPU  in all\n", b - a, cpu }' "$logdir/times"
echo "[==========] $run test(s) run."
echo "[  PASSED  ] $passed test(s)."
if [ "$skipped" -gt 0 ]; then
	echo "[  SKIPPED ] $skipped test(s), listed below:"
	for s in "${skipped_list[@]}"; do echo "[  SKIPPED ] $s"; done
fi
if [ "$failed" -gt 0 ]; then
	echo "[  FAILED  ] $failed test(s), listed below:"
	for f in "${failed_list[@]}"; do echo "[  FAILED  ] $f"; done
	echo
	echo " $failed FAILED TEST(S)"
	exit 1
fi
exit 0
