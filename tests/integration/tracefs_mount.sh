#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Issue 15: tracefs is left as ptbpf found it. Where it is not mounted, doctor and a
# capture mount it for what they need (as perf does) and unmount it when done: a
# tracepoint trigger, and a uprobe on a command ptbpf starts, whose exec it follows with
# a tracepoint program (SEC("tp/sched/sched_process_exec"): libbpf reads its id under
# tracefs; a host whose init mounts no tracefs failed it with a bare ENOENT). Checked
# in a private mount namespace (unshare -m), so the host's tracefs is never touched.
set -u
: "${BUILD:?}" "${PTBPF:?}"
fail() { echo "FAIL: $*"; exit 1; }
skip() { echo "SKIP: $*"; exit 77; }
[ "$(id -u)" = 0 ] || skip "needs root (unshare -m, mount)"
command -v unshare >/dev/null || skip "no unshare (util-linux)"
unshare -m --propagation private true 2>/dev/null || skip "cannot make a mount namespace here"

out=$(unshare -m --propagation private bash -c '
	mounted() { grep -c " /sys/kernel/tracing tracefs " /proc/mounts; }
	umount /sys/kernel/tracing 2>/dev/null
	umount /sys/kernel/debug 2>/dev/null
	echo "before $(mounted)"
	"$1" doctor >/dev/null 2>&1
	echo "doctor $(mounted)"
	"$1" --dry-run --tracepoint syscalls:sys_enter_nanosleep --max-snapshots 1 \
		-- "$2" -n 1 >/dev/null 2>&1 || echo "capture failed"
	echo "dry-run $(mounted)"
	"$1" --dry-run --uprobe main --max-snapshots 1 \
		-- "$2" -n 1 >/dev/null 2>&1 || echo "uprobe failed"
	echo "uprobe $(mounted)"
' _ "$PTBPF" "$BUILD/targets/cap_chain")
echo "$out"
grep -q '^before 0$' <<<"$out" || skip "tracefs could not be unmounted in the namespace"
grep -q 'capture failed' <<<"$out" && fail "the tracepoint trigger failed without tracefs mounted"
grep -q 'uprobe failed' <<<"$out" && fail "a uprobe on a started command failed without tracefs mounted"
grep -q '^doctor 0$' <<<"$out" || fail "doctor left tracefs mounted"
grep -q '^uprobe 0$' <<<"$out" || fail "a uprobe capture left tracefs mounted"
grep -q '^dry-run 0$' <<<"$out" || fail "a tracepoint trigger left tracefs mounted"
echo PASS
