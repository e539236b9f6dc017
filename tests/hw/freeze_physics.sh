#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# freeze_physics.sh [--kernel] CAPTURE...: each capture's trace must end where its trigger
# froze it, by the packets of the firing CPU (tests/tools/pt_tail), not by what the text
# output says. For every capture:
#   - the firing CPU's trace ends with TIP.PGD: tracing stopped there (the thread went
#     into the kernel: the probe's trap, the system call), with no TSC/MTC/CYC/TMA packet
#     after it, and its last TSC no later than the fire (perf time, with MARGIN_NS for the
#     BPF clock's conversion);
#   - uprobe, usdt: the last user-space IP is the probed instruction, at it (a trap at the
#     int3 reports the probe's address) or right after it (singlestep runs the probed
#     instruction before the freeze), within the longest x86 instruction (15 bytes), and
#     no branch ran after it (no TNT after the last IP packet);
#   - uprobe_latency: the last branch is the probed function's return into the
#     uretprobe trampoline ([uprobes]), and no branch ran after it in user space;
#   - other kinds fire in the kernel (a system call, a scheduler tracepoint, a kprobe):
#     the end in the kernel is all that is asked;
#   - --kernel (kernel traced too): the last IP is in the kernel's half, where the gate
#     paused PT (what the pause leaves as the last packets is not asked), and the
#     user-space checks above hold for the last user-space IP.
# Prints one line per capture; exit status 0 if every capture holds, 1 otherwise, 2 on
# usage errors. PT_TAIL names the tool (default: build/tests/pt_tail of this tree).
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
PT_TAIL=${PT_TAIL:-$top/build/tests/pt_tail}
MARGIN_NS=${MARGIN_NS:-100000}
kernel=0
[ "${1:-}" = --kernel ] && { kernel=1; shift; }
[ $# -ge 1 ] || { echo "usage: freeze_physics.sh [--kernel] CAPTURE..." >&2; exit 2; }
[ -x "$PT_TAIL" ] || { echo "freeze_physics.sh: $PT_TAIL is not built" >&2; exit 2; }

rc=0
for cap in "$@"; do
	declare -A f=()
	while IFS='=' read -r k v; do f[$k]=$v; done < <("$PT_TAIL" "$cap")
	why=
	[ -n "${f[cpu]:-}" ] || why="pt_tail could not read it"
	kind=${f[trigger_kind]:-none}
	if [ -z "$why" ] && [ $kernel = 0 ]; then
		case ${f[last_packets]} in
		*tip.pgd) ;;
		*) why="the trace of CPU ${f[cpu]} does not end with TIP.PGD (${f[last_packets]})" ;;
		esac
		[ -z "$why" ] && [ "${f[timing_after_stop]}" != 0 ] &&
			why="${f[timing_after_stop]} timing packet(s) after the TIP.PGD"
	fi
	[ -z "$why" ] && [ "${f[errors]}" != 0 ] && why="${f[errors]} packet error(s)"
	if [ -z "$why" ] && [ "${f[last_time]}" != 0 ] && [ "${f[trigger_time]}" != 0 ] &&
	   [ "${f[last_time]}" -gt $((f[trigger_time] + MARGIN_NS)) ]; then
		why="a timestamp $((f[last_time] - f[trigger_time])) ns after the fire"
	fi
	if [ -z "$why" ] && [ $kernel = 1 ] &&
	   [ $((f[last_ip] >> 63 & 1)) != 1 ]; then
		why="--kernel, but the last IP ${f[last_ip]} is not the kernel's"
	fi
	if [ -z "$why" ]; then
		case $kind in
		uprobe | usdt)
			d=$((f[last_user_ip] - f[trigger_ip]))
			if [ "$d" -lt 0 ] || [ "$d" -gt 15 ]; then
				why="the last user IP ${f[last_user_ip]} is not the probe's ${f[trigger_ip]}"
			elif [[ ${f[last_packets]} == *tnt* ]]; then
				why="branches ran after the probe (${f[last_packets]})"
			fi
			;;
		uprobe_latency)
			[ "${f[last_user_map]}" = "[uprobes]" ] &&
				[ "${f[last_tip_ip]}" = "${f[last_user_ip]}" ] &&
				[[ ${f[last_packets]} != *tnt* ]] ||
				why="the last branch is not the return into [uprobes] (last user IP ${f[last_user_ip]} in ${f[last_user_map]})"
			;;
		none)
			why="no trigger record"
			;;
		esac
	fi
	if [ -n "$why" ]; then
		echo "FREEZE NOT AT THE PROBE: $cap ($kind): $why"
		rc=1
	else
		echo "freeze at the probe: $cap ($kind, CPU ${f[cpu]}): ends ${f[last_packets]} at ${f[last_user_ip]}, last TSC $((f[trigger_time] - f[last_time])) ns before the fire"
	fi
	unset f
done
exit $rc
