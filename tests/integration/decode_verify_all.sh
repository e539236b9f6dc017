#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# --verify-fast on every stored capture: the real-hardware traces of tests/data (HASE,
# DynamoRIO, quipper's perf.data, whose binaries are not stored, and KEEPER31337's raw
# AUX dump, which has none: every block is an error, the same both ways) and every
# corrupt input of tests/fuzz (corpora and regressions, with their harness's options).
# Each is decoded with the flag alone (PTBPF_VERIFY_FAST=0), which decodes it both
# ways, block decoder and fast path, and fails at the first difference (exit 1 and
# "--verify-fast: ... differs"). The kAFL/Nyx traces are checked so by decode_golden
# and decode_hw_kafl (slower: seconds each).
. "$(dirname "$0")/decode_common.inc"

here=$(cd "$(dirname "$0")" && pwd)
FUZZ=$here/../fuzz
. "$FUZZ/raw_configs.inc"
export PTBPF_VERIFY_FAST=0
SKL="--cpu 6/85/4 --mtc-freq 3 --nom-freq 37 --cpuid-0x15 2,308"
n=0

# verify NAME DECODE-ARGS...: decoded both ways with no difference (decode errors are
# the input's: exit 0 or 1 both)
verify() {
	local name=$1 rc
	shift
	HOME=$FUZZ/data/sysroot timeout -k 5 120 "$PTBPF" decode "$@" -j 1 --verify-fast \
		--format calls -o /dev/null 2>"$TMP/err"
	rc=$?
	if grep -q -- "--verify-fast" "$TMP/err" || [ "$rc" -gt 1 ]; then
		head -8 "$TMP/err"
		fail "$name: --verify-fast: exit $rc"
	fi
	n=$((n + 1))
}

H=$PERFPT/hase-2018
[ -d "$H" ] || skip "no $H"
verify hase-skl-control_flow "$H/skl-control_flow/control_flow-20180404T163033.perf" \
	--sysroot "$H/skl-control_flow/symfs"
verify hase-skl-loopy "$H/skl-loopy/loopy-20180404T162955.perf" --sysroot "$H/skl-loopy/symfs"
verify hase-bdw-control_flow "$H/bdw-snapshot-control_flow/perf.data.1" \
	--sysroot "$H/bdw-snapshot-control_flow/binaries"
verify hase-bdw-loopy "$H/bdw-snapshot-loopy/perf.data.1" \
	--sysroot "$H/bdw-snapshot-loopy/binaries"
verify quipper "$PERFPT/quipper-echo-m7-6y75/perf.data.intel_pt-4.14"
DR=$HWPT/dynamorio-drpt2trace
for t in test_simple.raw test_simple.tracedir-841a2b04; do
	# shellcheck disable=SC2086
	verify "dynamorio-$t" --raw-pt "$DR/$t/pt.bin" --elf "$DR/$t/hello" $SKL --tsc-hz 2000000000
done
verify keeper --raw-pt "$HWPT/keeper-perf-aux/traced_data.bin" \
	--raw "$FUZZ/data/code.bin:0x10000000"

for f in "$FUZZ"/regressions/raw_pt/* "$FUZZ"/corpus/raw_pt/*; do
	case $f in *.expect) continue ;; esac
	tail -c +2 "$f" >"$TMP/pt"
	[ -s "$TMP/pt" ] || continue
	cfg=$(od -An -tu1 -N1 "$f" | tr -d ' ')
	# shellcheck disable=SC2086
	verify "raw_pt $(basename "$f")" --raw-pt "$TMP/pt" --elf "$FUZZ/data/hello" \
		--raw "$FUZZ/data/code.bin:0x10000000" ${RAW_CONFIGS[cfg % ${#RAW_CONFIGS[@]}]}
done
for f in "$FUZZ"/regressions/perfdata_decode/* "$FUZZ"/corpus/perfdata/*; do
	case $f in *.expect) continue ;; esac
	verify "perfdata $(basename "$f")" "$f" --sysroot "$FUZZ/data/sysroot" \
		--debug-dir "$FUZZ/data/sysroot"
done
echo "$n captures decoded both ways (--verify-fast): no difference"
exit 0
