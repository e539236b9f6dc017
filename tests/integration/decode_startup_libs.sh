#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# What a decode loads: capstone (the singlestep backend's disassembler and the decoder
# fast path's instruction lengths, 77,000 relocations, ~10 ms of CPU at every start) is
# loaded when the first disassembler is made, never by `ptbpf --version` nor by
# `ptbpf decode --no-fast`; a decode with the fast path loads it for its first run of
# code. The ss_* tests show the backend still loads it when it disassembles.
. "$(dirname "$0")/decode_common.inc"

H=$PERFPT/hase-2018/skl-control_flow
readelf -d "$PTBPF" >"$TMP/dynamic" 2>&1 || skip "readelf is not installed (binutils)"
grep -q 'NEEDED.*libipt' "$TMP/dynamic" || fail "readelf shows no libraries ptbpf needs"
if grep 'NEEDED.*libcapstone' "$TMP/dynamic"; then
	fail "ptbpf is linked against capstone: every run pays its relocations"
fi
# the dynamic loader says every file it loads (LD_DEBUG=files)
LD_DEBUG=files "$PTBPF" --version >/dev/null 2>"$TMP/version.ld" ||
	fail "ptbpf --version failed"
grep -q 'file=libipt' "$TMP/version.ld" || fail "LD_DEBUG=files shows nothing loaded"
grep 'capstone' "$TMP/version.ld" && fail "ptbpf --version loads capstone"
LD_DEBUG=files PTBPF_VERIFY_FAST=0 "$PTBPF" decode "$H/control_flow-20180404T163033.perf" \
	--sysroot "$H/symfs" -o "$TMP/out.fxt" --no-fast 2>"$TMP/decode.ld" ||
	{ tail -5 "$TMP/decode.ld"; fail "ptbpf decode failed"; }
fxt_ok "$TMP/out.fxt"
grep 'capstone' "$TMP/decode.ld" && fail "ptbpf decode --no-fast loads capstone"
LD_DEBUG=files PTBPF_VERIFY_FAST=0 "$PTBPF" decode "$H/control_flow-20180404T163033.perf" \
	--sysroot "$H/symfs" -o "$TMP/out.fxt" 2>"$TMP/fast.ld" ||
	{ tail -5 "$TMP/fast.ld"; fail "ptbpf decode failed"; }
grep -q 'file=libcapstone' "$TMP/fast.ld" || fail "the fast path did not load capstone"
echo "--version and decode --no-fast load no capstone; the fast path loads it on first use"
