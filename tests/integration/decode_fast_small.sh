#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# A capture with little PT to decode (under 128 KiB; PTBPF_FAST_MIN_PT=BYTES sets it) is
# decoded without the fast path: loading capstone and decoding each run once cost more
# than the fast path saves on so few bytes (decoder/session.c). HASE skl-control_flow
# (1,616 bytes of PT) by default: --stats says the fast path is off, capstone is not
# loaded and the output is the fast path's, byte for byte; PTBPF_FAST_MIN_PT at its
# size turns the fast path on, one byte more off. (tests/run.sh sets it to 0: every
# other test decodes with the fast path.)
. "$(dirname "$0")/decode_common.inc"

H=$PERFPT/hase-2018/skl-control_flow
[ -d "$H" ] || skip "no $H"
export PTBPF_VERIFY_FAST=0

# decode NAME [MIN]: the capture to calls with --stats (PTBPF_FAST_MIN_PT=MIN, unset
# without), the loader's log in $TMP/NAME.ld
decode() {
	local name=$1
	env -u PTBPF_FAST_MIN_PT ${2:+PTBPF_FAST_MIN_PT=$2} LD_DEBUG=files \
		LD_DEBUG_OUTPUT="$TMP/$name.ld" "$PTBPF" decode \
		"$H/control_flow-20180404T163033.perf" --sysroot "$H/symfs" -j 1 --format calls \
		-o "$TMP/$name.calls" --stats 2>"$TMP/$name.err" ||
		{ cat "$TMP/$name.err"; fail "$name: decode"; }
	[ -s "$TMP/$name.calls" ] || fail "$name: no output"
}
# capstone NAME: whether the decode NAME loaded capstone
capstone() {
	cat "$TMP/$1".ld.* 2>/dev/null | grep -q 'file=libcapstone'
}

decode small
bytes=$(figure bytes "$TMP/small.err")
if [ "$bytes" -le 0 ] || [ "$bytes" -ge $((128 << 10)) ]; then
	fail "the capture's PT: $bytes bytes, not under 128 KiB"
fi
grep -q "^fast path     off: $bytes bytes of PT" "$TMP/small.err" ||
	{ cat "$TMP/small.err"; fail "a capture of $bytes bytes of PT: the fast path not off"; }
capstone small && fail "a capture of $bytes bytes of PT: capstone loaded"

decode forced "$bytes"
grep -q '^fast path  *[1-9][0-9]* of ' "$TMP/forced.err" ||
	{ cat "$TMP/forced.err"; fail "PTBPF_FAST_MIN_PT=$bytes: the fast path not on"; }
capstone forced || fail "PTBPF_FAST_MIN_PT=$bytes: the fast path did not load capstone"
cmp -s "$TMP/small.calls" "$TMP/forced.calls" ||
	fail "the output without the fast path differs from the fast path's"

decode above $((bytes + 1))
grep -q "^fast path     off: $bytes bytes" "$TMP/above.err" ||
	{ cat "$TMP/above.err"; fail "PTBPF_FAST_MIN_PT=$((bytes + 1)): the fast path not off"; }
cmp -s "$TMP/small.calls" "$TMP/above.calls" || fail "PTBPF_FAST_MIN_PT=$((bytes + 1)): another output"
echo "$bytes bytes of PT: no fast path nor capstone by default, nor under PTBPF_FAST_MIN_PT=$((bytes + 1)); the fast path from PTBPF_FAST_MIN_PT=$bytes; the same output"
