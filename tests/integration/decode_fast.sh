#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# The fast path (decoder/fastpath.c): libipt's block decoder done again on its query
# decoder with a cache of straight runs. On real hardware traces (HASE perf captures,
# DynamoRIO's raw trace, kAFL's mruby when present) it must
#   - decode nearly every block itself (--stats: "fast path N of M blocks"), most of
#     them in stretches (blocks that end in a jump staying in its function, walked in
#     the fast path and counted by decode.c as one sum each),
#   - give the same output as the block decoder alone (--no-fast), byte for byte,
#   - pass --verify-fast (both ways, every event compared) with exit 0,
# and with PTBPF_FAST_REFUSE=N (the fast path refuses every Nth block, so the block
# decoder takes over mid-stream after replaying the stretch since the last sync) the
# output must still be the same: the hand-over is exact.
. "$(dirname "$0")/decode_common.inc"

SKL="--cpu 6/85/4 --mtc-freq 3 --nom-freq 37 --cpuid-0x15 2,308"

# share NAME STATS-FILE MIN [MIN-STRETCHED]: the fast path decoded at least MIN % of the
# blocks, and at least MIN-STRETCHED % went in stretches (blocks that end in a jump
# staying in its function, counted by decode.c as one sum: ptd_fast_stretch())
share() {
	local line pct st
	line=$(grep '^fast path' "$2") || { cat "$2"; fail "$1: no fast path line in --stats"; }
	pct=$(echo "$line" | sed -n 's/.*blocks (\([0-9.]*\) %;.*/\1/p')
	awk -v p="$pct" -v m="$3" 'BEGIN { exit !(p >= m) }' ||
		fail "$1: the fast path decoded $pct % of the blocks (< $3 %): $line"
	st=$(echo "$line" | sed -n 's/.*; \([0-9.]*\) % in stretches).*/\1/p')
	awk -v p="$st" -v m="${4:-0}" 'BEGIN { exit !(p != "" && p >= m) }' ||
		fail "$1: $st % of the blocks in stretches (< ${4:-0} %): $line"
}

# check NAME MIN-SHARE MIN-STRETCHED DECODE-ARGS...: the checks above on one input
check() {
	local name=$1 min=$2 stretched=$3 n
	shift 3
	PTBPF_VERIFY_FAST=0 "$PTBPF" decode "$@" -j 1 --format calls -o "$TMP/ref.calls" \
		--no-fast 2>"$TMP/ref.err" || { cat "$TMP/ref.err"; fail "$name: --no-fast decode"; }
	PTBPF_VERIFY_FAST=0 "$PTBPF" decode "$@" -j 1 --format calls -o "$TMP/fast.calls" \
		--stats 2>"$TMP/fast.err" || { cat "$TMP/fast.err"; fail "$name: decode"; }
	share "$name" "$TMP/fast.err" "$min" "$stretched"
	cmp -s "$TMP/ref.calls" "$TMP/fast.calls" || {
		diff "$TMP/ref.calls" "$TMP/fast.calls" | head -5
		fail "$name: the fast path's output differs from the block decoder's"
	}
	[ -s "$TMP/fast.calls" ] || fail "$name: no output"
	PTBPF_VERIFY_FAST=0 "$PTBPF" decode "$@" -j 1 --format calls -o /dev/null \
		--verify-fast 2>"$TMP/verify.err" || {
		cat "$TMP/verify.err"
		fail "$name: --verify-fast found a difference"
	}
	# the stretches by tracelets (PTBPF_TRACELETS=0: block by block): the same output,
	# the same fast path figures; tracelets found where there are stretches
	PTBPF_VERIFY_FAST=0 PTBPF_TRACELETS=0 "$PTBPF" decode "$@" -j 1 --format calls \
		-o "$TMP/notl.calls" --stats 2>"$TMP/notl.err" ||
		{ cat "$TMP/notl.err"; fail "$name: decode with PTBPF_TRACELETS=0"; }
	cmp -s "$TMP/notl.calls" "$TMP/fast.calls" || {
		diff "$TMP/notl.calls" "$TMP/fast.calls" | head -5
		fail "$name: the output with tracelets differs from the one without"
	}
	[ "$(grep '^fast path' "$TMP/notl.err")" = "$(grep '^fast path' "$TMP/fast.err")" ] ||
		fail "$name: the fast path's figures differ with PTBPF_TRACELETS=0"
	grep -q '^tracelets' "$TMP/notl.err" && fail "$name: tracelets with PTBPF_TRACELETS=0"
	if [ "$stretched" -gt 0 ]; then
		grep -q '^tracelets     hits [1-9]' "$TMP/fast.err" ||
			{ cat "$TMP/fast.err"; fail "$name: no tracelet found"; }
	fi
	for n in 2 7; do
		PTBPF_VERIFY_FAST=0 PTBPF_FAST_REFUSE=$n "$PTBPF" decode "$@" -j 1 --format calls \
			-o "$TMP/refuse.calls" --stats 2>"$TMP/refuse.err" ||
			{ cat "$TMP/refuse.err"; fail "$name: decode with PTBPF_FAST_REFUSE=$n"; }
		grep -q 'block decoder took over [1-9]' "$TMP/refuse.err" ||
			{ cat "$TMP/refuse.err"; fail "$name: PTBPF_FAST_REFUSE=$n: no hand-over"; }
		grep -q 'internal' "$TMP/refuse.err" &&
			{ cat "$TMP/refuse.err"; fail "$name: PTBPF_FAST_REFUSE=$n: replay failed"; }
		cmp -s "$TMP/ref.calls" "$TMP/refuse.calls" || {
			diff "$TMP/ref.calls" "$TMP/refuse.calls" | head -5
			fail "$name: PTBPF_FAST_REFUSE=$n: the output differs after a hand-over"
		}
	done
	echo "$name: $(grep '^fast path' "$TMP/fast.err")"
	grep '^tracelets' "$TMP/fast.err" || true
}

H=$PERFPT/hase-2018
[ -d "$H" ] || skip "no $H"
check hase-skl-control_flow 99 50 "$H/skl-control_flow/control_flow-20180404T163033.perf" \
	--sysroot "$H/skl-control_flow/symfs"
check hase-bdw-snapshot-loopy 99 0 "$H/bdw-snapshot-loopy/perf.data.1" \
	--sysroot "$H/bdw-snapshot-loopy/binaries"

DR=$HWPT/dynamorio-drpt2trace/test_simple.tracedir-841a2b04
[ -d "$DR" ] || skip "no $DR"
# shellcheck disable=SC2086
check dynamorio-hello 80 0 --raw-pt "$DR/pt.bin" --elf "$DR/hello" $SKL --tsc-hz 2000000000

if [ -n "${KAFL:-}" ] && [ -d "$KAFL/mruby" ]; then
	# shellcheck disable=SC2046
	check kafl-mruby 99 50 --raw-pt "$KAFL/mruby/trace" $(kafl_images "$KAFL/mruby" data)
else
	echo "kAFL/Nyx traces not present (PTBPF_TESTDATA): mruby not checked"
fi

# a bad value of the test hook is no crash: 0 or junk means never
PTBPF_VERIFY_FAST=0 PTBPF_FAST_REFUSE=junk "$PTBPF" decode \
	"$H/skl-control_flow/control_flow-20180404T163033.perf" \
	--sysroot "$H/skl-control_flow/symfs" -j 1 --format calls -o "$TMP/junk.calls" \
	2>"$TMP/junk.err" || { cat "$TMP/junk.err"; fail "PTBPF_FAST_REFUSE=junk"; }
echo "the fast path decodes as the block decoder does, and hands over to it exactly"
