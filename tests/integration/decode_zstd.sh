#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# `ptbpf decode` reads a zstd-compressed capture (the daemon's spool: .perf.data.zst) as
# it reads the perf.data: same output; a truncated or corrupt stream, or one that
# decompresses past the bound (a decompression bomb), is one error line and exit 1.
. "$(dirname "$0")/capture_common.inc"
need_singlestep
command -v zstd >/dev/null || skip "no zstd tool (Debian package zstd)"

cap run --uprobe "$CHAIN:leaf" --decode=no --keep-capture="$TMP/run.data" -- "$CHAIN" -n 2
[ "$RC" = 0 ] || { cat "$TMP/run.err"; fail "capture: exit $RC"; }
zstd -q -19 "$TMP/run.data" -o "$TMP/run.perf.data.zst" || fail "zstd"

"$PTBPF" decode "$TMP/run.data" --format text -o "$TMP/plain.txt" || fail "decode perf.data"
"$PTBPF" decode "$TMP/run.perf.data.zst" --format text -o "$TMP/zst.txt" 2>"$TMP/err" ||
	{ cat "$TMP/err"; fail "decode .zst"; }
cmp -s "$TMP/plain.txt" "$TMP/zst.txt" || fail "the .zst decodes differently from the perf.data"
grep -q ' leaf ' "$TMP/zst.txt" || fail "no leaf call in the decoded .zst"
"$PTBPF" decode "$TMP/run.perf.data.zst" -o "$TMP/zst.fxt" || fail "decode .zst to FXT"
fxt_ok "$TMP/zst.fxt"
"$PTBPF" decode --info "$TMP/run.perf.data.zst" >"$TMP/info" || fail "decode --info of the .zst"
echo "the .zst decodes to the same $(wc -l <"$TMP/plain.txt") slices as the perf.data"

# refused: exit 1, one line naming the file, no output left
refused() {
	local what=$1 file=$2 want=$3
	shift 3
	rm -f "$TMP/bad.fxt"
	timeout 60 env "$@" "$PTBPF" decode "$file" -o "$TMP/bad.fxt" >"$TMP/out" 2>"$TMP/err"
	rc=$?
	[ $rc = 1 ] || { cat "$TMP/err"; fail "$what: exit $rc, want 1"; }
	[ "$(wc -l <"$TMP/err")" = 1 ] || { cat "$TMP/err"; fail "$what: not one error line"; }
	grep -q "$file.*$want" "$TMP/err" || { cat "$TMP/err"; fail "$what: message"; }
	[ ! -e "$TMP/bad.fxt" ] || fail "$what: an output was left"
	echo "$what: $(cat "$TMP/err")"
}

size=$(stat -c %s "$TMP/run.perf.data.zst")
head -c $((size / 2)) "$TMP/run.perf.data.zst" >"$TMP/trunc.zst"
refused truncated "$TMP/trunc.zst" "truncated zstd stream"

# a byte of the first block's header flipped: zstd's checksum or block parser refuses it
cp "$TMP/run.perf.data.zst" "$TMP/corrupt.zst"
printf '\xff\xff\xff\xff' | dd of="$TMP/corrupt.zst" bs=1 seek=$((size / 3)) conv=notrunc status=none
refused corrupt "$TMP/corrupt.zst" "zstd"

# 300 MB of zeros in ~10 KB: stopped at the bound, not decompressed whole
head -c 300M /dev/zero | zstd -q >"$TMP/bomb.zst"
refused bomb "$TMP/bomb.zst" "decompresses to more than 50000000 bytes" PTBPF_ZSTD_MAX_BYTES=50000000
