#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# Raw mode on real hardware PT (tests/data/hw-pt): DynamoRIO's perf captures of static
# hello programs (Skylake-SP, TSC+MTC+CYC). Instruction counts must be exactly those the
# README reports for libipt 2.0.5, with 0 errors, and the FXT must be valid. (The kAFL/Nyx
# guest traces are decode_hw_kafl's.)
. "$(dirname "$0")/decode_common.inc"

DR=$HWPT/dynamorio-drpt2trace
[ -d "$DR" ] || skip "no $DR"
SKL="--cpu 6/85/4 --mtc-freq 3 --nom-freq 37 --cpuid-0x15 2,308"

# dynamorio DIR INSNS
dynamorio() {
	local d=$DR/$1 out=$TMP/$1.fxt
	# shellcheck disable=SC2086
	"$PTBPF" decode --raw-pt "$d/pt.bin" --elf "$d/hello" $SKL --tsc-hz 2000000000 \
		-o "$out" --stats 2>"$TMP/stats" || { cat "$TMP/stats"; fail "decode $1"; }
	cat "$TMP/stats"
	[ "$(figure instructions "$TMP/stats")" = "$2" ] || fail "$1: expected $2 instructions"
	[ "$(figure errors "$TMP/stats")" = 0 ] || fail "$1: decode errors"
	fxt_ok "$out"
	"$FXTCHECK" --stacks "$out" >"$TMP/$1.stacks"
	# timestamps never go back in a thread's slices (begin order)
	awk '!/^#/ { if ($(NF-1) < prev) bad++; prev = $(NF-1) } END { exit bad > 0 }' \
		"$TMP/$1.stacks" || fail "$1: slice begin times go back"
}

dynamorio test_simple.raw 8
grep -q "^0 _start " "$TMP/test_simple.raw.stacks" || fail "no _start frame in the asm hello"

dynamorio test_simple.tracedir-841a2b04 59234
s=$TMP/test_simple.tracedir-841a2b04.stacks
for f in _start __libc_start_main main _IO_puts; do
	grep -q " $f " "$s" || { head -40 "$s"; fail "no $f frame in the glibc hello"; }
done
# main is called from the libc start-up frames
awk '$2 == "main" { print $1; exit }' "$s" | grep -qv '^0$' || fail "main is not nested"
grep -q "\[syscall\]" "$s" || fail "no [syscall] slices (write/exit)"
# Time between TSC packets comes from MTC and CYC: this trace has one TSC (without the
# MTC settings every slice gets its time), yet hundreds of distinct slice times.
ntimes() { awk '!/^#/ { print $(NF-1); print $NF }' "$1" | sort -u | wc -l; }
"$PTBPF" decode --raw-pt "$DR/test_simple.tracedir-841a2b04/pt.bin" \
	--elf "$DR/test_simple.tracedir-841a2b04/hello" --cpu 6/85/4 --tsc-hz 2000000000 \
	--format text -o "$TMP/tsc-only" || fail "decode without MTC settings"
[ "$(ntimes "$TMP/tsc-only")" = 1 ] || fail "more than one TSC time without MTC settings"
[ "$(ntimes "$s")" -gt 100 ] || fail "times not refined by MTC/CYC: $(ntimes "$s") distinct"

# The text format is fxtcheck --stacks of the FXT.
# shellcheck disable=SC2086
"$PTBPF" decode --raw-pt "$DR/test_simple.tracedir-841a2b04/pt.bin" \
	--elf "$DR/test_simple.tracedir-841a2b04/hello" $SKL --tsc-hz 2000000000 \
	--format text -o "$TMP/text" || fail "--format text"
diff -q "$TMP/text" "$s" >/dev/null || { diff "$TMP/text" "$s" | head; fail "text != stacks"; }

echo "the DynamoRIO traces decode as expected"
