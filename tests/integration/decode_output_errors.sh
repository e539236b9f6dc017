#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# An output ptbpf decode cannot write (a full disk, an I/O error) fails with one line
# naming the file and the reason, in every format and mode, never silently.
. "$(dirname "$0")/decode_common.inc"

DR=$HWPT/dynamorio-drpt2trace/test_simple.tracedir-841a2b04
H=$PERFPT/hase-2018/skl-control_flow
[ -d "$DR" ] && [ -d "$H" ] || skip "tests/data is incomplete"
[ -w /dev/full ] || skip "no /dev/full"

# one_line WHAT FILE REASON: exit 1 and exactly one stderr line "cannot write FILE: REASON"
one_line() {
	[ "$rc" = 1 ] || { cat "$TMP/err"; fail "$1: exit $rc, want 1"; }
	[ "$(wc -l <"$TMP/err")" = 1 ] && grep -qx "ptbpf: cannot write $2: $3" "$TMP/err" ||
		{ cat "$TMP/err"; fail "$1: not one line 'cannot write $2: $3'"; }
}

for fmt in fxt text calls; do
	"$PTBPF" decode "$H/control_flow-20180404T163033.perf" --sysroot "$H/symfs" \
		--format "$fmt" -o /dev/full >/dev/null 2>"$TMP/err"
	rc=$?
	one_line "perf.data to a full disk ($fmt)" /dev/full "No space left on device"
done

"$PTBPF" decode --raw-pt "$DR/pt.bin" --elf "$DR/hello" -o /dev/full 2>"$TMP/err"
rc=$?
one_line "raw PT to a full disk" /dev/full "No space left on device"

# a write that fails with EIO: root may open /proc/version for writing, procfs refuses
# the write itself
if [ "$(id -u)" = 0 ]; then
	"$PTBPF" decode "$H/control_flow-20180404T163033.perf" --sysroot "$H/symfs" \
		-o /proc/version 2>"$TMP/err"
	rc=$?
	one_line "an output that fails with EIO" /proc/version "Input/output error"
fi
echo "unwritable outputs: exit 1, one line each"
