#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# What a decode loads. The libraries only other commands use (libcurl, libcrypto,
# libmicrohttpd, libsystemd, libcyaml, libyaml, libdebuginfod: 25 ms of every start when
# linked) and capstone (the singlestep backend's disassembler and the decoder fast path's
# instruction lengths, ~10 ms) are loaded on first use (include/lazylib.h): ptbpf is not
# linked against them, `ptbpf --version` and `ptbpf decode --no-fast` never load them and
# run on a host where they are all missing; a command that needs one says which package
# to install. The ss_* tests show the backend still loads capstone when it disassembles.
. "$(dirname "$0")/decode_common.inc"

H=$PERFPT/hase-2018/skl-control_flow
LAZY='capstone|libcurl|libcrypto|libssl|gnutls|microhttpd|libsystemd|cyaml|libyaml|debuginfod'
readelf -d "$PTBPF" >"$TMP/dynamic" 2>&1 || skip "readelf is not installed (binutils)"
grep -q 'NEEDED.*libipt' "$TMP/dynamic" || fail "readelf shows no libraries ptbpf needs"
if grep -E "NEEDED.*($LAZY)" "$TMP/dynamic"; then
	fail "ptbpf is linked against a library decoding does not need: every run pays it"
fi
# the dynamic loader says every file it loads (LD_DEBUG=files)
LD_DEBUG=files "$PTBPF" --version >/dev/null 2>"$TMP/version.ld" ||
	fail "ptbpf --version failed"
grep -q 'file=libipt' "$TMP/version.ld" || fail "LD_DEBUG=files shows nothing loaded"
grep -E "file=[^ ]*($LAZY)" "$TMP/version.ld" && fail "ptbpf --version loads one of them"
LD_DEBUG=files PTBPF_VERIFY_FAST=0 "$PTBPF" decode "$H/control_flow-20180404T163033.perf" \
	--sysroot "$H/symfs" -o "$TMP/out.fxt" --no-fast 2>"$TMP/decode.ld" ||
	{ tail -5 "$TMP/decode.ld"; fail "ptbpf decode failed"; }
fxt_ok "$TMP/out.fxt"
grep -E "file=[^ ]*($LAZY)" "$TMP/decode.ld" && fail "ptbpf decode --no-fast loads one of them"
LD_DEBUG=files PTBPF_VERIFY_FAST=0 "$PTBPF" decode "$H/control_flow-20180404T163033.perf" \
	--sysroot "$H/symfs" -o "$TMP/out.fxt" 2>"$TMP/fast.ld" ||
	{ tail -5 "$TMP/fast.ld"; fail "ptbpf decode failed"; }
grep -q 'file=libcapstone' "$TMP/fast.ld" || fail "the fast path did not load capstone"
grep -E "file=[^ ]*(${LAZY#capstone|})" "$TMP/fast.ld" && fail "ptbpf decode loads one of them"
echo "--version and decode --no-fast load none of them; the fast path loads capstone"

# A host without them: each library file replaced by an empty one in a mount namespace
# of this test's own (bind mounts over the real files, gone with the namespace).
[ "$(id -u)" = 0 ] && command -v unshare >/dev/null ||
	skip "hiding libraries needs root and unshare (util-linux)"
hide=
for soname in libcapstone.so.4 libcurl.so.4 libcrypto.so.3 libmicrohttpd.so.12 \
	      libsystemd.so.0 libcyaml.so.1 libyaml-0.so.2 libdebuginfod.so.1; do
	f=$(ldconfig -p | awk -v s="$soname" '$1 == s && /x86-64/ { print $NF; exit }')
	[ -n "$f" ] || fail "ldconfig does not know $soname (the build needs it)"
	hide="$hide mount --bind /dev/null $(readlink -f "$f") &&"
done
cat >"$TMP/bare.sh" <<SH
set -e
$hide true
"$PTBPF" --version
PTBPF_VERIFY_FAST=0 "$PTBPF" decode "$H/control_flow-20180404T163033.perf" \
	--sysroot "$H/symfs" -o "$TMP/bare.fxt" --no-fast
if AWS_ACCESS_KEY_ID=a AWS_SECRET_ACCESS_KEY=b "$PTBPF" captures ls s3://bucket/prefix \
	--s3-endpoint http://127.0.0.1:1 2>"$TMP/s3.err"; then
	echo "captures ls ran without libcurl"; exit 1
fi
# the fast path hands every block to libipt's block decoder, after one line
PTBPF_VERIFY_FAST=0 "$PTBPF" decode "$H/control_flow-20180404T163033.perf" \
	--sysroot "$H/symfs" -o "$TMP/fast.fxt" 2>"$TMP/fast.err"
SH
unshare -m bash "$TMP/bare.sh" >"$TMP/bare.out" 2>&1 ||
	{ cat "$TMP/bare.out"; fail "a decode needs one of the hidden libraries"; }
fxt_ok "$TMP/bare.fxt"
cmp -s "$TMP/bare.fxt" "$TMP/out.fxt" || fail "the decode without them differs"
cmp -s "$TMP/fast.fxt" "$TMP/out.fxt" || fail "the default decode without capstone differs"
cat "$TMP/s3.err"
[ "$(wc -l <"$TMP/s3.err")" = 1 ] && grep -q 'needs libcurl.so.4: .*: install libcurl4$' \
	"$TMP/s3.err" || fail "captures ls without libcurl: not one line naming the package"
cat "$TMP/fast.err"
[ "$(wc -l <"$TMP/fast.err")" = 1 ] &&
	grep -q 'needs libcapstone.so.4: .*: install libcapstone4$' "$TMP/fast.err" ||
	fail "the fast path without capstone: not one line naming the package"
echo "with all of them hidden: --version and decode run (the same trace; the fast path" \
     "without capstone after one line naming the package); captures ls names libcurl4"
