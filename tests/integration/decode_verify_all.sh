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
. "$(dirname "$0")/decode_captures.inc"
export PTBPF_VERIFY_FAST=0
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

each_capture verify hase quipper dynamorio keeper raw_pt perfdata
echo "$n captures decoded both ways (--verify-fast): no difference"
exit 0
