#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# Raw mode on real hardware PT (shared testdata/hw-pt): DynamoRIO's perf captures of
# static hello programs (Skylake-SP, TSC+MTC+CYC) and kAFL/Nyx guest traces with page
# dumps. Instruction counts must be exactly those the READMEs report for libipt 2.0.5,
# with 0 errors (the errata cases as described there), and the FXT must be valid.
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
	"$PYTHON" "$FXTCHECK" --stacks "$out" >"$TMP/$1.stacks"
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

# kAFL/Nyx: NAME DIR TRACE MEM INSNS|- ERRORS OVERFLOWS [CPU]
KAFL=$HWPT/kafl-libxdc-experiments
kafl() {
	local name=$1 dir=$KAFL/$2 cpu=${8:-}
	# shellcheck disable=SC2046
	"$PTBPF" decode --raw-pt "$dir/$3" $(kafl_images "$dir" "$4") ${cpu:+--cpu $cpu} \
		-o "$TMP/$name.fxt" --stats 2>"$TMP/stats" || { cat "$TMP/stats"; fail "decode $name"; }
	printf '%-22s %s instructions, %s errors, %s overflows\n' "$name" \
		"$(figure instructions "$TMP/stats")" "$(figure errors "$TMP/stats")" \
		"$(figure overflows "$TMP/stats")"
	[ "$5" = - ] || [ "$(figure instructions "$TMP/stats")" = "$5" ] ||
		fail "$name: expected $5 instructions"
	[ "$(figure errors "$TMP/stats")" = "$6" ] || fail "$name: expected $6 errors"
	[ "$(figure overflows "$TMP/stats")" = "$7" ] || fail "$name: expected $7 overflows"
	fxt_ok "$TMP/$name.fxt"
}
kafl unzip Unzip trace data 149576 0 0
kafl foo foo trace data 117967 0 0
kafl mruby mruby trace data 6334131 0 1
kafl qemu qemu trace1 page_cache 9635736 0 1
# BDM70: without a cpu no errata, one error at the PGE/FUP/PGD sequence; with one, none
kafl avscript_32-no-cpu avscript_32 failed_trace_12709_1 page_cache - 1 0
kafl avscript_32 avscript_32 failed_trace_12709_1 page_cache 1114194 0 0 6/61/4
kafl icelake_tip icelake_tip ptlog pagecache 15 0 0 6/126/5
# deliberately partial memory: errors marked, decoding goes on, output valid
# shellcheck disable=SC2046
"$PTBPF" decode --raw-pt "$KAFL/dyn_test/sample_raw_0" $(kafl_images "$KAFL/dyn_test" page_cache) \
	-o "$TMP/dyn.fxt" --stats 2>"$TMP/stats" || fail "dyn_test"
[ "$(figure errors "$TMP/stats")" -gt 0 ] || fail "dyn_test: no errors reported"
fxt_ok "$TMP/dyn.fxt"
# each error is an instant event: "[decode error]" with trace offset, ip and message
inst=$("$PYTHON" "$(dirname "$0")/fxt_events.py" "$TMP/dyn.fxt" |
	grep -cE ' instant [0-9]+ \[decode error\] offset=[0-9]+ ip=[0-9]+ message=[a-z]')
[ "$inst" = "$(figure errors "$TMP/stats")" ] || fail "dyn_test: errors not marked ($inst instants)"
echo "all hardware traces decode as expected"
