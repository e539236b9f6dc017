#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# Issue 15: a SIGKILL of ptbpf never touches the program it steps. 20 kills at random
# moments with -- CMD and 20 with -p (from ptbpf's start to well inside the stepping):
# each time the program runs to its normal end (exit 3, its one line of output),
# untraced (TracerPid 0). Before the guardian process (user/guardian.h) the program
# died of SIGTRAP: the trap flag of a pending single-step outlives a killed tracer.
. "$(dirname "$0")/ss_common.inc"
need_ptrace
command -v "$PYTHON" >/dev/null || skip "no $PYTHON"
"$PYTHON" "$(dirname "$0")/survive_kill.py" cmd "${TRIES:-20}" 3.0 "$PTBPF" \
	"$TARGETS/survivor" "$TMP" || fail "-- CMD: the program was harmed"
"$PYTHON" "$(dirname "$0")/survive_kill.py" pid "${TRIES:-20}" 2.0 "$PTBPF" \
	"$TARGETS/survivor" "$TMP" || fail "-p: the program was harmed"
echo "PASS: 2 x ${TRIES:-20} SIGKILLs of ptbpf, the program never harmed"
