#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# `ptbpf decode` on real `perf record -e intel_pt//u` captures (tests/data,
# perf-intel-pt/hase-2018: Skylake full trace and Broadwell snapshot mode, static musl
# programs with their binaries): binaries found through --sysroot, instruction counts
# as the README reports, and every call and return equal to perf's own decoder's
# (`perf script --itrace=cr`) on the same file. The FXT is valid.
. "$(dirname "$0")/decode_common.inc"

H=$PERFPT/hase-2018
[ -d "$H" ] || skip "no $H"
command -v perf >/dev/null || skip "perf is not installed (linux-perf)"

# times NAME MAX_NS: each call and return at perf's time (TSC -> perf time by TIME_CONV,
# refined by MTC), to within MAX_NS; ptbpf's are rebased to the FXT's base_time_ns.
times() {
	local base
	base=$("$FXTCHECK" "$TMP/$1.fxt.gz" | sed -n 's/.*base_time_ns=\([0-9]*\).*/\1/p')
	"$PYTHON" - "$TMP/$1.perf" "$TMP/$1.calls" "$base" "$2" <<'PY' || fail "$1: times differ from perf's"
import re, sys
perf, ours, base, tol = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
a = [int(m[1]) * 10**9 + int(m[2]) for m in
     (re.match(r'\s*\d+\s+(\d+)\.(\d{9}):\s+(call|return)\s', l) for l in open(perf)) if m]
b = [base + int(f[1]) for f in (l.split() for l in open(ours)) if len(f) > 4 and f[2] in ('call', 'return')]
d = [y - x for x, y in zip(a, b)]
print(f'  times: {len(d)} calls and returns within {max(map(abs, d), default=0)} ns of perf\'s')
sys.exit(0 if a and len(a) == len(b) and all(abs(x) <= tol for x in d) else 1)
PY
}

# case DIR FILE SYSROOT INSNS CALLS
case_() {
	local d=$H/$1 name=$1
	perf script -f -i "$d/$2" --symfs="$d/$3" --itrace=cr -F tid,time,flags,ip,addr --ns \
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
	"$FXTCHECK" --stacks "$TMP/$name.fxt.gz" >"$TMP/$name.stacks"
}

case_ skl-control_flow control_flow-20180404T163033.perf symfs 1092 17
# Skylake, TSC+MTC: perf and libipt place a few events one MTC period (333 ns) apart
times skl-control_flow 333
grep -q " main " "$TMP/skl-control_flow.stacks" || fail "no main frame"
grep -q "name=control_flow" "$TMP/skl-control_flow.stacks" || fail "thread not named control_flow"
case_ skl-loopy loopy-20180404T162955.perf symfs 57 0
case_ bdw-snapshot-control_flow perf.data.1 binaries 956 17
times bdw-snapshot-control_flow 0
grep -q " raise " "$TMP/bdw-snapshot-control_flow.stacks" || fail "no raise frame"
case_ bdw-snapshot-loopy perf.data.1 binaries 57 0

# Without the binaries: one warning naming the file, frames as binary+0xoff, no crash.
d=$H/skl-control_flow
"$PTBPF" decode "$d/control_flow-20180404T163033.perf" -o "$TMP/nosym.fxt" 2>"$TMP/nosym.err" ||
	fail "decode without --sysroot failed"
grep -q "control_flow: binary not found" "$TMP/nosym.err" || { cat "$TMP/nosym.err"; fail "no missing-binary warning"; }
fxt_ok "$TMP/nosym.fxt"
"$FXTCHECK" --stacks "$TMP/nosym.fxt" | grep -q " control_flow+0x202 " ||
	fail "without the binary, frames are not named binary+0xoff"
# --strict makes it an error
if "$PTBPF" decode "$d/control_flow-20180404T163033.perf" --strict -o "$TMP/strict.fxt" 2>/dev/null; then
	fail "--strict accepted a missing binary"
fi
echo "hase captures agree with perf script"
