#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# `ptbpf decode --info FILE` on real perf files (tests/data), on the directory
# form, on ptbpf's own captures, and on bad input (one clear error line, exit 1).
. "$(dirname "$0")/perfdata_common.inc"

# info FILE: the summary in $TMP/info, failing if ptbpf failed or wrote to stderr.
info() {
	"$PTBPF" decode --info "$1" >"$TMP/info" 2>"$TMP/info.err" || {
		cat "$TMP/info.err"
		fail "decode --info $1 exited $?"
	}
	no_stderr "$TMP/info.err" "decode --info $1"
}

has() {
	grep -qF -- "$1" "$TMP/info" || { cat "$TMP/info"; fail "no '$1' in the summary of $2"; }
}

# bad FILE WORDS: exit 1 and one error line containing WORDS.
bad() {
	local rc
	"$PTBPF" decode --info "$1" >"$TMP/bad.out" 2>"$TMP/bad.err"
	rc=$?
	[ $rc = 1 ] || fail "decode --info on $1 exited $rc, expected 1"
	[ "$(wc -l <"$TMP/bad.err")" = 1 ] || { cat "$TMP/bad.err"; fail "not one error line for $1"; }
	grep -qF -- "$2" "$TMP/bad.err" || { cat "$TMP/bad.err"; fail "error for $1 does not say '$2'"; }
	echo "bad input $(basename "$1"): $(cat "$TMP/bad.err")"
}

f=$PERFPT/hase-2018/skl-control_flow/control_flow-20180404T163033.perf
info "$f"
cat "$TMP/info"
has "cpus:       4 online, 4 available" skl
has "cpuid GenuineIntel,6,94,3" skl
has "0: intel_pt//u  type 6 config 0x300e601 ( pt mtc tsc branch mtc_period=3 psb_period=3 ), user only" skl
has "PT:         PMU type 6, per-CPU buffers, full trace, context switches: CPU-wide SWITCH records" skl
has "TSC -> perf time: shift 31, mult 672770566" skl
has "TSC:CTC 266/2, max non-turbo ratio 32" skl
has "cpu 1: 1 buffer, 1616 bytes" skl
has "19731/19731 control_flow (exec)" skl
# the path the capture names: where the set keeps the program, below symfs/
mapped=$(cd "$(dirname "$f")/symfs" && find . -type f -name control_flow | sed 's/^\.//')
has "19731 0x400000-0x401000 pgoff 0 $mapped" skl
has "time span:  969388.447843504 .. 969388.522198892" skl
has "trigger:    none recorded" skl

info "$PERFPT/hase-2018/bdw-snapshot-control_flow/perf.data.1"
has "snapshot (overwrite) mode" bdw
has "( pt tsc branch )" bdw
has "cpu 1: 1 buffer, 760 bytes" bdw

info "$PERFPT/quipper-echo-m7-6y75/perf.data.intel_pt-4.14"
has "cpu 0: 1 buffer, 12240 bytes" quipper
has "cpu 3: 1 buffer, 137728 bytes" quipper
has "15 samples skipped" quipper
has "kernel: 56 mappings" quipper
has "3174 0x7fb36c8bb000-0x7fb36cc66000 pgoff 0 /lib64/libc-2.23.so" quipper

# Directory form: perf.data/data and perf.data/kcore_dir/.
mkdir -p "$TMP/perf.data/kcore_dir"
cp "$f" "$TMP/perf.data/data"
info "$TMP/perf.data"
has "cpu 1: 1 buffer, 1616 bytes" directory
has "kcore:      $TMP/perf.data/kcore_dir" directory

# ptbpf's own capture: trigger, vDSO and its build id.
"$TOOL" synth "$PD_CALLS" "$TMP/own.data" --vdso || fail "perfdata_tool synth failed"
info "$TMP/own.data"
has 'trigger:    uprobe "uprobe:pd_calls:leaf" (#0) cpu 0 pid 4242 tid 4242 at 1.000008000 ip 0x401000' own
has "vdso:       " own
has " [vdso]" own
has "4242 0x401000-0x402000 pgoff 0x1000 $(realpath "$PD_CALLS")" own

# Per-thread buffers (perf record --per-thread, magic-trace).
"$TOOL" synth "$PD_CALLS" "$TMP/thread.data" --per-thread || fail "perfdata_tool synth failed"
info "$TMP/thread.data"
has "per-thread buffers, snapshot (overwrite) mode, context switches: none" per-thread
has "tid 4242: 1 buffer, 48 bytes" per-thread

bad "$PERFPT/quipper-echo-m7-6y75/perf.data.piped.intel_pt-4.14" "pipe-mode perf.data"
bad "$PTBPF" "not a perf.data file (magic"
: >"$TMP/empty"
bad "$TMP/empty" "too short for a header"
bad "$TMP/missing" "No such file or directory"
head -c 5000 "$f" >"$TMP/truncated"
bad "$TMP/truncated" "data section [0x248, +0x2cf8) lies outside the file (5000 bytes)"

"$PTBPF" decode --info >/dev/null 2>&1
[ $? = 2 ] || fail "decode --info without a file should be a usage error (2)"
echo "ok"
