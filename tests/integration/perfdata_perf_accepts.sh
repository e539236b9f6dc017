#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# perf 6.1 reads what ptbpf's perf.data writer writes, without a warning, and decodes
# its PT: a capture of tests/targets/pd_calls with PT from libipt's encoder (plus the
# vDSO and a trigger, which perf must skip silently) gives exactly the program's calls
# and returns in `perf script --itrace=cr`.
. "$(dirname "$0")/perfdata_common.inc"
need_perf
cap=$TMP/pd_calls.data

"$TOOL" synth "$PD_CALLS" "$cap" --vdso || fail "perfdata_tool synth failed"
[ "$(stat -c %a "$cap")" = 600 ] || fail "capture mode is $(stat -c %a "$cap"), not 600"

perf script -i "$cap" --itrace=cr -F tid,ip,sym,addr,flags >"$TMP/script.out" 2>"$TMP/script.err"
rc=$?
cat "$TMP/script.out"
[ $rc = 0 ] || { cat "$TMP/script.err"; fail "perf script exited $rc"; }
no_stderr "$TMP/script.err" "perf script"

"$TOOL" synth "$PD_CALLS" x --expect >"$TMP/expected"
calls_returns "$TMP/script.out" >"$TMP/got"
diff -u "$TMP/expected" "$TMP/got" || fail "perf's calls and returns differ from pd_calls' (- expected, + perf)"
grep -q 'tr strt .*=> *[0-9a-f]* _start$' "$TMP/script.out" || fail "no trace start at _start"
grep -q 'tr end  syscall .* _start =>' "$TMP/script.out" || fail "no trace end at the exit syscall"
echo "perf script: $(wc -l <"$TMP/got") calls and returns as expected"

perf report -D -i "$cap" >"$TMP/dump.out" 2>"$TMP/dump.err"
rc=$?
[ $rc = 0 ] || { cat "$TMP/dump.err"; fail "perf report -D exited $rc"; }
no_stderr "$TMP/dump.err" "perf report -D"
for rec in TIME_CONV AUXTRACE_INFO COMM MMAP2 ITRACE_START SWITCH_CPU_WIDE EXIT AUX AUXTRACE \
	   FINISHED_ROUND; do
	grep -q "PERF_RECORD_$rec\b" "$TMP/dump.out" || fail "perf report -D shows no PERF_RECORD_$rec"
done
perf report --stdio -i "$cap" >/dev/null 2>"$TMP/report.err" || fail "perf report failed"
no_stderr "$TMP/report.err" "perf report"
perf report --header-only -i "$cap" >"$TMP/header.out" 2>"$TMP/header.err" || fail "perf report --header-only failed"
no_stderr "$TMP/header.err" "perf report --header-only"
grep -q 'nrcpus online : 2' "$TMP/header.out" || fail "HEADER_NRCPUS not as written"
grep -q 'event : name = intel_pt//u' "$TMP/header.out" || fail "HEADER_EVENT_DESC not as written"
echo "perf report -D, --stdio and --header-only: clean"
