#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# Real `perf record -e intel_pt//u` files (tests/data), read by ptbpf's reader and
# written back by its writer, decode in perf exactly as the originals do, with nothing
# on stderr, and summarise (`ptbpf decode --info`) the same. Samples (PERF_RECORD_SAMPLE)
# are not kept by the reader, so the cycles samples of the quipper file go.
. "$(dirname "$0")/perfdata_common.inc"
need_perf

check() {
	local orig=$1 symfs=$2 name=$3 out=$TMP/$3.data
	"$TOOL" rewrite "$orig" "$out" || fail "$name: rewrite failed"
	perf script -i "$orig" --symfs="$symfs" --itrace=cr -F tid,ip,sym,dso,flags \
		>"$TMP/$name.orig" 2>/dev/null || fail "$name: perf script on the original failed"
	perf script -i "$out" --symfs="$symfs" --itrace=cr -F tid,ip,sym,dso,flags \
		>"$TMP/$name.new" 2>"$TMP/$name.err" || fail "$name: perf script on the rewrite failed"
	no_stderr "$TMP/$name.err" "$name: perf script on the rewrite"
	[ -s "$TMP/$name.orig" ] || fail "$name: perf printed nothing for the original"
	# The reader skips PERF_RECORD_SAMPLE (quipper's cycles): compare PT lines only.
	sed -i -E '/^ *[0-9]+ +[0-9a-f]+ /d' "$TMP/$name.orig"
	diff -u "$TMP/$name.orig" "$TMP/$name.new" || fail "$name: perf decodes the rewrite differently"
	perf script -i "$out" --symfs="$symfs" --itrace=b -F ip,addr >"$TMP/$name.b" 2>&1 ||
		fail "$name: perf script --itrace=b on the rewrite failed"
	# The summaries but for the file line and FINISHED_ROUND counts (the writer writes one).
	"$PTBPF" decode --info "$orig" | grep -v '^capture:' |
		sed -e 's/ [0-9]* FINISHED_ROUND//' -e 's/; [0-9]* samples skipped//' >"$TMP/$name.info.orig"
	"$PTBPF" decode --info "$out" | grep -v '^capture:' |
		sed -e 's/ [0-9]* FINISHED_ROUND//' -e 's/; [0-9]* samples skipped//' >"$TMP/$name.info.new"
	diff -u "$TMP/$name.info.orig" "$TMP/$name.info.new" || fail "$name: decode --info differs"
	echo "$name: $(wc -l <"$TMP/$name.new") call/return lines and $(wc -l <"$TMP/$name.b") branches, identical"
}

H=$PERFPT/hase-2018
check "$H/skl-control_flow/control_flow-20180404T163033.perf" "$H/skl-control_flow/symfs" skl-cf
check "$H/skl-loopy/loopy-20180404T162955.perf" "$H/skl-loopy/symfs" skl-loopy
check "$H/bdw-snapshot-control_flow/perf.data.1" "$H/bdw-snapshot-control_flow/binaries" bdw-cf
check "$H/bdw-snapshot-loopy/perf.data.1" "$H/bdw-snapshot-loopy/binaries" bdw-loopy
# No binaries for this one: perf decodes only packets, the same ones.
check "$PERFPT/quipper-echo-m7-6y75/perf.data.intel_pt-4.14" "$TMP/none" quipper
