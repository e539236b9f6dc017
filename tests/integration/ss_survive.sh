#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# Issue 15: a SIGKILL of ptbpf never touches the program it steps. 20 kills at random
# moments with -- CMD and 20 with -p (from ptbpf's start to well inside the stepping):
# each time the program runs to its normal end (exit 3, its one line of output),
# untraced (TracerPid 0). Before the guardian process (user/guardian.h) the program
# died of SIGTRAP: the trap flag of a pending single-step outlives a killed tracer.
#
# A try mostly waits (the program sleeps 3 s of its 150 ticks; ~0.7 s of CPU), so the
# tries run in LANES lanes at once per mode, each lane its own survive_kill.py (its own
# subreaper, its own directory): the same 2 x TRIES kills in a fifth of the time.
. "$(dirname "$0")/ss_common.inc"
need_ptrace
command -v "$PYTHON" >/dev/null || skip "no $PYTHON"
tries=${TRIES:-20} lanes=${LANES:-4}
[ "$lanes" -le "$tries" ] || lanes=$tries
lane_pids=() lane_names=()
for mode in cmd pid; do
	window=3.0
	[ $mode = pid ] && window=2.0
	for ((lane = 0; lane < lanes; lane++)); do
		# tries split over the lanes, the first ones taking the remainder
		n=$((tries / lanes + (lane < tries % lanes)))
		mkdir -p "$TMP/$mode$lane"
		"$PYTHON" "$(dirname "$0")/survive_kill.py" $mode "$n" $window "$PTBPF" \
			"$TARGETS/survivor" "$TMP/$mode$lane" >"$TMP/$mode$lane.log" 2>&1 &
		lane_pids+=($!) lane_names+=("$mode$lane")
	done
done
BG_PIDS=("${lane_pids[@]}")
harmed=()
for i in "${!lane_pids[@]}"; do
	wait "${lane_pids[$i]}" || harmed+=("${lane_names[$i]}")
done
BG_PIDS=()
for name in "${lane_names[@]}"; do
	sed "s/^/$name: /" "$TMP/$name.log"
done
[ ${#harmed[@]} = 0 ] || fail "the program was harmed (lanes ${harmed[*]}: -- CMD in cmd*, -p in pid*)"
echo "PASS: 2 x $tries SIGKILLs of ptbpf in $lanes lanes per mode, the program never harmed"
