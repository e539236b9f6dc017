#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# ptbpf raises its soft RLIMIT_NOFILE to the hard limit at start (one PT event per CPU
# plus one per gate per CPU passes 1024 on big hosts), and the command it starts gets the
# limit the user had.
. "$(dirname "$0")/triggers_common.inc"
need_bpf
hard=$(ulimit -Hn)
[ "$hard" = unlimited ] || [ "$hard" -gt 256 ] || skip "the hard RLIMIT_NOFILE is $hard here: nothing to raise"
# the target prints its parent's (ptbpf's) soft limit, then its own
probe='awk "/^Max open files/ {print \$4}" /proc/$PPID/limits /proc/self/limits'
(ulimit -Sn 256 && exec "$PTBPF" --dry-run --tracepoint sched:sched_process_exit \
	-- /bin/sh -c "$probe") >"$TMP/out" 2>"$TMP/err"
rc=$?
[ $rc = 0 ] || fail "exit $rc: $(cat "$TMP/err")"
mapfile -t soft < <(grep -E '^([0-9]+|unlimited)$' "$TMP/out")
[ ${#soft[@]} = 2 ] || fail "want two limits from the target, got: $(cat "$TMP/out")"
[ "${soft[0]}" = "$hard" ] || fail "ptbpf's soft limit is ${soft[0]}, want the hard limit $hard"
[ "${soft[1]}" = 256 ] || fail "the target's soft limit is ${soft[1]}, want the user's 256"
echo "ptbpf ran with $hard descriptors, its command with 256"
echo PASS
