#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# `ptbpf decode` on real `perf record -e intel_pt//u` captures (shared testdata,
# perf-intel-pt/hase-2018: Skylake full trace and Broadwell snapshot mode, static musl
# programs with their binaries): binaries found through --sysroot, instruction counts
# as the README reports, and every call and return equal to perf's own decoder's
# (`perf script --itrace=cr`) on the same file. The FXT is valid.
. "$(dirname "$0")/decode_common.inc"

H=$PERFPT/hase-2018
[ -d "$H" ] || skip "no $H"
command -v perf >/dev/null || skip "perf is not installed (linux-perf)"

# case DIR FILE SYSROOT INSNS CALLS
case_() {
	local d=$H/$1 name=$1
	perf script -f -i "$d/$2" --symfs="$d/$3" --itrace=cr -F tid,flags,ip,addr \
		>"$TMP/$name.perf" 2>"$TMP/$name.perf.err" || { cat "$TMP/$name.perf.err"; fail "perf script $name"; }
	"$PTBPF" decode "$d/$2" --sysroot "$d/$3" --format calls -o "$TMP/$name.calls" \
		--stats 2>"$TMP/stats" || { cat "$TMP/stats"; fail "decode $name"; }
	printf '%-28s %s instructions, %s errors\n' "$name" "$(figure instructions "$TMP/stats")" \
		"$(figure errors "$TMP/stats")"
	[ "$(figure instructions "$TMP/stats")" = "$4" ] || fail "$name: expected $4 instructions"
	[ "$(figure errors "$TMP/stats")" = 0 ] || fail "$name: decode errors"
	[ "$(figure calls "$TMP/stats")" = "$5" ] || fail "$name: expected $5 calls"
	"$PYTHON" "$(dirname "$0")/perf_calls.py" "$TMP/$name.perf" "$TMP/$name.calls" ||
		fail "$name: calls and returns differ from perf script's"
	"$PTBPF" decode "$d/$2" --sysroot "$d/$3" -o "$TMP/$name.fxt.gz" || fail "decode $name to FXT"
	fxt_ok "$TMP/$name.fxt.gz"
	"$PYTHON" "$FXTCHECK" --stacks "$TMP/$name.fxt.gz" >"$TMP/$name.stacks"
}

case_ skl-control_flow control_flow-20180404T163033.perf symfs 1092 17
grep -q " main " "$TMP/skl-control_flow.stacks" || fail "no main frame"
grep -q "name=control_flow" "$TMP/skl-control_flow.stacks" || fail "thread not named control_flow"
case_ skl-loopy loopy-20180404T162955.perf symfs 57 0
case_ bdw-snapshot-control_flow perf.data.1 binaries 956 17
grep -q " raise " "$TMP/bdw-snapshot-control_flow.stacks" || fail "no raise frame"
case_ bdw-snapshot-loopy perf.data.1 binaries 57 0

# Without the binaries: one warning naming the file, frames as binary+0xoff, no crash.
d=$H/skl-control_flow
"$PTBPF" decode "$d/control_flow-20180404T163033.perf" -o "$TMP/nosym.fxt" 2>"$TMP/nosym.err" ||
	fail "decode without --sysroot failed"
grep -q "control_flow: binary not found" "$TMP/nosym.err" || { cat "$TMP/nosym.err"; fail "no missing-binary warning"; }
fxt_ok "$TMP/nosym.fxt"
# --strict makes it an error
if "$PTBPF" decode "$d/control_flow-20180404T163033.perf" --strict -o "$TMP/strict.fxt" 2>/dev/null; then
	fail "--strict accepted a missing binary"
fi
echo "hase captures agree with perf script"
