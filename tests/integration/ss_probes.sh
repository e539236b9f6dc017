#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# Uprobes meet single-stepping (notes/uprobes-and-singlestep.md): the probed instruction
# shows 0xcc and its step stops with SIGTRAP/SI_USER, a uretprobe sends returns through
# the unreadable [uprobes] trampoline. With an entry uprobe or a uretprobe (--latency-over)
# on a target's function, firing on a late hit so many probed calls and returns are
# stepped first: the target's output and exit status are unchanged, --verify passes,
# and the capture ends at the fire.
. "$(dirname "$0")/ss_common.inc"
need_ptrace
[ "$(id -u)" = 0 ] || skip "BPF triggers need root"
[ -e /sys/kernel/btf/vmlinux ] || skip "the kernel has no BTF (CO-RE needs /sys/kernel/btf/vmlinux)"
need_perf

# probe NAME TARGET FUNC CALLED [OPTIONS...]: probe FUNC; perf must see a call to CALLED.
probe() {
	local name=$1 target=$2 func=$3 called=$4 rc
	shift 4
	ss "$name" --uprobe "$TARGETS/$target:$func" "$@" -- "$TARGETS/$target"
	"$TARGETS/$target" >"$TMP/$name.native" 2>&1
	rc=$?
	diff -u "$TMP/$name.native" "$TMP/$name.out" || fail "$name: output changed by the probes"
	[ $rc = 0 ] || fail "$name: the native run exited $rc"
	perf script -i "$TMP/$name.data" --itrace=cr -F tid,ip,sym,addr,flags >"$TMP/$name.perf" \
		2>/dev/null || fail "$name: perf script failed"
	grep -qE "call .*=> +[0-9a-f]+ $called\$" "$TMP/$name.perf" ||
		fail "$name: perf shows no call to $called"
}

# Entry uprobe: 40 probed entries of fib are stepped, the 41st fires.
probe entry-fib recurse fib fib --nth 41
# Uretprobe: fib's returns go through [uprobes]; fires on the 30th slow return.
probe ret-fib recurse fib fib --latency-over 1ns --nth 30
grep -q '\[uprobes\]' <("$PTBPF" decode --info "$TMP/ret-fib.data" 2>&1) ||
	fail "ret-fib: no [uprobes] mapping in the sideband"
# leaf is reached by middle's tail jump; deep never returns (longjmp leaves its frames,
# so this one runs to the end, never firing: --snapshot-on-exit takes the snapshot at the
# exit); level3 (mangled) throws.
probe ret-leaf tailcall leaf middle --latency-over 1ns --nth 6
probe ret-deep sigjmp deep deep --latency-over 1ns --snapshot-on-exit
probe entry-level3 cxxexc _Z6level3i level3 --nth 2
echo "entry uprobes and uretprobes: output unchanged, --verify passed"
