#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# The kernel's word on lost or damaged trace: PERF_RECORD_AUX with PERF_AUX_FLAG_TRUNCATED,
# _PARTIAL or _COLLISION, in captures of tests/targets/pd_calls written by the project's
# own perf.data writer (tests/tools/perfdata_tool synth --aux-flags). Each is a gap
# marked in the trace ("[trace gap]" instant, a `gap` event in --format calls) on the
# thread that ran on that CPU, a figure of `ptbpf decode --stats`, and part of the one-line
# summary; the flow decoded around it is pd_calls' own, nothing invented. perf reports
# the same records: TRUNCATED as a "Lost trace data" error (`perf script --itrace=e`,
# intel_pt_process_event() -> intel_pt_lost()), each flag in its session warnings.
. "$(dirname "$0")/decode_common.inc"

TOOL=$BUILD/tests/perfdata_tool
PD_CALLS=$BUILD/targets/pd_calls
[ -x "$TOOL" ] && [ -x "$PD_CALLS" ] || skip "perfdata_tool or pd_calls not built"

"$TOOL" synth "$PD_CALLS" x --expect | awk '{ print $1, $3 }' >"$TMP/expected"

# gaps FLAGS TRUNCATED PARTIAL COLLISION: a capture with one AUX record of FLAGS
gaps() {
	local flags=$1 name=flags$1 words
	"$TOOL" synth "$PD_CALLS" "$TMP/$name.data" --aux-flags "$flags" ||
		fail "$name: perfdata_tool synth"
	"$PTBPF" decode "$TMP/$name.data" --format calls -o "$TMP/$name.calls" --stats \
		2>"$TMP/$name.stats" || { cat "$TMP/$name.stats"; fail "$name: ptbpf decode"; }
	[ "$(figure errors "$TMP/$name.stats")" = 0 ] || fail "$name: decode errors"
	grep -q "^gaps          1 (kernel AUX flags: $2 truncated, $3 partial, $4 collision)$" \
		"$TMP/$name.stats" || { cat "$TMP/$name.stats"; fail "$name: --stats gap line"; }
	words=$(awk '$3 == "gap" { print $1, $6 }' "$TMP/$name.calls")
	case $flags in
	1) [ "$words" = "4242/4242 truncated" ] ;;
	4) [ "$words" = "4242/4242 partial" ] ;;
	8) [ "$words" = "4242/4242 collision" ] ;;
	13) [ "$words" = "4242/4242 truncated,partial,collision" ] ;;
	esac || fail "$name: the gap event is '$words'"
	# the flow is pd_calls' own, the gap after it and before the thread left the CPU
	awk '$3 == "call" || $3 == "return" { print $3, $6 }' "$TMP/$name.calls" >"$TMP/$name.got"
	diff -u "$TMP/expected" "$TMP/$name.got" || fail "$name: calls differ from pd_calls'"
	awk '$3 == "trigger" { t = NR } $3 == "gap" { g = NR } $3 == "switch-out" { s = NR }
	     END { exit !(t < g && g < s) }' "$TMP/$name.calls" ||
		fail "$name: the gap is not at its record's time"
	# FXT: the instant on the thread, the count on the capture slice, the stderr line
	"$PTBPF" decode "$TMP/$name.data" -o "$TMP/$name.fxt" 2>"$TMP/$name.err" ||
		fail "$name: decode to FXT"
	fxt_ok "$TMP/$name.fxt"
	"$FXTCHECK" --events "$TMP/$name.fxt" >"$TMP/$name.events"
	grep -q "^instant	4242	4242	[0-9]*	\[trace gap\]$" "$TMP/$name.events" ||
		fail "$name: no [trace gap] instant on the thread"
	grep -q "^arg	trace_gaps	1$" "$TMP/$name.events" || fail "$name: trace_gaps arg"
	grep -q "0 decode error(s), 0 overflow(s), 1 gap(s) the kernel reported" \
		"$TMP/$name.err" || { cat "$TMP/$name.err"; fail "$name: no one-line summary"; }
	[ "$(wc -l <"$TMP/$name.err")" = 1 ] || fail "$name: more than one line on stderr"
	echo "$name: one gap ($words), flow as pd_calls"
}

gaps 1 1 0 0
gaps 4 0 1 0
gaps 8 0 0 1
gaps 13 1 1 1

# without the flags: no gap, no line
"$TOOL" synth "$PD_CALLS" "$TMP/none.data" || fail "synth"
"$PTBPF" decode "$TMP/none.data" -o "$TMP/none.fxt" 2>"$TMP/none.err" || fail "decode"
[ ! -s "$TMP/none.err" ] || { cat "$TMP/none.err"; fail "a clean capture reports gaps"; }
"$FXTCHECK" --events "$TMP/none.fxt" | grep -q "trace gap" && fail "a clean capture has a gap"

# perf reads the same records
if command -v perf >/dev/null; then
	perf script -i "$TMP/flags1.data" --itrace=e >"$TMP/perf1.out" 2>"$TMP/perf1.err" ||
		fail "perf script --itrace=e"
	grep -c "cpu 0 pid 4242 tid 4242 .*Lost trace data" "$TMP/perf1.out" |
		grep -qx 1 || { cat "$TMP/perf1.out"; fail "perf: not one Lost trace data error"; }
	perf script -i "$TMP/flags4.data" --itrace=e >/dev/null 2>"$TMP/perf4.err"
	grep -q "AUX data had gaps in it 1 times" "$TMP/perf4.err" ||
		{ cat "$TMP/perf4.err"; fail "perf does not see the PARTIAL record"; }
	perf script -i "$TMP/flags8.data" --itrace=e >/dev/null 2>"$TMP/perf8.err"
	grep -q "AUX data detected collision *1 times" "$TMP/perf8.err" ||
		{ cat "$TMP/perf8.err"; fail "perf does not see the COLLISION record"; }
	perf script -i "$TMP/none.data" --itrace=e 2>/dev/null | grep -q "Lost trace data" &&
		fail "perf: a lost-data error in the clean capture"
	echo "perf: the same record as one Lost trace data error, PARTIAL and COLLISION warnings"
else
	echo "perf not installed: the comparison with perf script is left out"
fi
echo PASS
