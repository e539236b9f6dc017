#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# perf 6.1 reads what ptbpf's perf.data writer writes, without a warning, and decodes
# its PT: captures of tests/targets/pd_calls with PT from libipt's encoder give exactly
# the program's calls and returns in `perf script --itrace=cr`. Per-CPU buffers with
# CPU-wide switch records, per-thread buffers, both without TSC conversion (timeless),
# and a call into the vDSO that perf can follow only with the vDSO bytes stored in the
# capture, installed in a build-id cache.
# ptbpf's trigger and vDSO records must be skipped silently, by perf inject too.
. "$(dirname "$0")/perfdata_common.inc"
need_perf

# check NAME SYNTH_OPTS... : write the capture, hold perf's view against pd_calls'.
check() {
	local name=$1 cap=$TMP/$1.data rc perf_opts=()
	shift
	"$TOOL" synth "$PD_CALLS" "$cap" "$@" || fail "$name: perfdata_tool synth failed"
	[ "$(stat -c %a "$cap")" = 600 ] || fail "$name: mode $(stat -c %a "$cap"), not 600"
	if [[ " $* " == *" --vdso-call "* ]]; then
		"$TOOL" install-vdso "$cap" "$TMP/buildid-$name" >/dev/null ||
			fail "$name: install-vdso failed"
		perf_opts=(--buildid-dir "$TMP/buildid-$name")
	fi

	perf "${perf_opts[@]}" script -i "$cap" --itrace=cre -F tid,ip,sym,addr,flags \
		>"$TMP/$name.out" 2>"$TMP/$name.err"
	rc=$?
	[ $rc = 0 ] || { cat "$TMP/$name.out" "$TMP/$name.err"; fail "$name: perf script exited $rc"; }
	no_stderr "$TMP/$name.err" "$name: perf script"
	if grep -q 'instruction trace error' "$TMP/$name.out"; then
		cat "$TMP/$name.out"
		fail "$name: perf reports decode errors"
	fi
	"$TOOL" synth "$PD_CALLS" x "$@" --expect >"$TMP/$name.expected"
	calls_returns "$TMP/$name.out" >"$TMP/$name.got"
	diff -u "$TMP/$name.expected" "$TMP/$name.got" ||
		fail "$name: perf's calls and returns differ from pd_calls' (- expected, + perf)"
	grep -q 'tr strt .*=> *[0-9a-f]* _start$' "$TMP/$name.out" || fail "$name: no trace start at _start"
	grep -q 'tr end  syscall .* _start =>' "$TMP/$name.out" || fail "$name: no trace end at exit"

	perf "${perf_opts[@]}" report -D -i "$cap" >"$TMP/$name.dump" 2>"$TMP/$name.err"
	rc=$?
	[ $rc = 0 ] || { cat "$TMP/$name.err"; fail "$name: perf report -D exited $rc"; }
	no_stderr "$TMP/$name.err" "$name: perf report -D"
	perf "${perf_opts[@]}" report --stdio -i "$cap" >/dev/null 2>"$TMP/$name.err" ||
		fail "$name: perf report failed"
	no_stderr "$TMP/$name.err" "$name: perf report"
	perf report --header-only -i "$cap" >"$TMP/$name.header" 2>"$TMP/$name.err" ||
		fail "$name: perf report --header-only failed"
	no_stderr "$TMP/$name.err" "$name: perf report --header-only"
	# perf inject rewrites the header: it crashes on feature bits it does not know.
	perf "${perf_opts[@]}" inject -i "$cap" -o "$TMP/$name.inj" 2>"$TMP/$name.err" ||
		{ cat "$TMP/$name.err"; fail "$name: perf inject failed"; }
	no_stderr "$TMP/$name.err" "$name: perf inject"
	perf "${perf_opts[@]}" script -i "$TMP/$name.inj" --itrace=cr -F tid,ip,sym,addr,flags \
		2>"$TMP/$name.err" | awk '$2 == "call" || $2 == "return" { print $2, $4, $7 }' \
		>"$TMP/$name.inj.got"
	diff -u "$TMP/$name.expected" "$TMP/$name.inj.got" || fail "$name: perf inject's output decodes differently"
	echo "$name: $(wc -l <"$TMP/$name.got") calls and returns as expected; perf script," \
		"report -D, --stdio, --header-only, inject: nothing on stderr"
}

check per-cpu --vdso
cat "$TMP/per-cpu.out"
for rec in TIME_CONV AUXTRACE_INFO COMM MMAP2 ITRACE_START SWITCH_CPU_WIDE EXIT AUX AUXTRACE \
	   FINISHED_ROUND; do
	grep -q "PERF_RECORD_$rec\b" "$TMP/per-cpu.dump" || fail "perf report -D shows no PERF_RECORD_$rec"
done
grep -q 'nrcpus online : 2' "$TMP/per-cpu.header" || fail "HEADER_NRCPUS not as written"
grep -q 'event : name = intel_pt//u' "$TMP/per-cpu.header" || fail "HEADER_EVENT_DESC not as written"
grep -q '^# cpuid : GenuineIntel,6,85,4' "$TMP/per-cpu.header" || fail "HEADER_CPUID not as written"

check per-thread --per-thread
grep -q 'SWITCH' "$TMP/per-thread.dump" && fail "per-thread capture has switch records"

check timeless --timeless
check timeless-per-thread --timeless --per-thread

check vdso-call --vdso-call
grep -q '__vdso_getcpu' "$TMP/vdso-call.got" || fail "perf did not follow the call into the vDSO"
echo "ok"
