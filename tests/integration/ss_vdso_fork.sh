#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# The singlestep backend through the dynamic loader and the vDSO (clock_gettime), and a
# program that forks and execs itself: the child is traced only with --follow-forks, as
# a process of its own (FORK, COMM exec, its own mappings).
. "$(dirname "$0")/ss_common.inc"
need_ptrace
need_perf

ss vdso -- "$TARGETS/vdso_clock"
grep -q '^calls=6 backwards=0$' "$TMP/vdso.out" || fail "vdso_clock: wrong output: $(cat "$TMP/vdso.out")"
perf_calls vdso main elapsed_ns __vdso_clock_gettime
[ "$(perf_errors vdso)" = 0 ] || fail "vdso: perf reports decode errors"

ss fork -- "$TARGETS/forkexec"
grep -q '^parent=45 child_status=0$' "$TMP/fork.out" || fail "forkexec: wrong output"
perf_calls fork main parent_work
if grep -qE '=> +[0-9a-f]+ child_work$' "$TMP/fork.perf"; then
	fail "forkexec: the child was traced without --follow-forks"
fi

ss follow --follow-forks -- "$TARGETS/forkexec"
grep -q '^child=720$' "$TMP/follow.out" || fail "forkexec --follow-forks: wrong output"
perf_calls follow main parent_work child_work
tids=$(awk '$2 == "call" { print $1 }' "$TMP/follow.perf" | sort -u | wc -l)
[ "$tids" -ge 2 ] || fail "--follow-forks: perf sees $tids process(es), expected 2"
[ "$(perf_errors follow)" = 0 ] || fail "follow: perf reports decode errors"
echo "vDSO, dynamic loader, fork + exec: verified and decoded by perf"
