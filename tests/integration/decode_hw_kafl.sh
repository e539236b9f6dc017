#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# Raw mode on real hardware PT of kAFL/Nyx fuzzing guests, with page dumps
# (github.com/nyx-fuzz/libxdc_experiments, test_data/). Instruction counts must be exactly
# those its README reports for libipt 2.0.5, with 0 errors (the errata cases as
# described there); decode errors of the partial-memory trace are instants; the FXT valid.
# The data is AGPL-3.0, so it is not in the repository: tests/run.sh finds it through
# $PTBPF_TESTDATA or ../shared/testdata (KAFL), and this test skips without it.
. "$(dirname "$0")/decode_common.inc"

[ -n "${KAFL:-}" ] && [ -d "$KAFL" ] ||
	skip "kAFL/Nyx traces (AGPL-3.0, not in the repository) not found: set PTBPF_TESTDATA to a directory holding hw-pt/kafl-libxdc-experiments"

# kAFL/Nyx: NAME DIR TRACE MEM INSNS|- ERRORS OVERFLOWS [CPU]
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
echo "the kAFL/Nyx traces decode as expected"
