#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# ptbpf decode and perf script on the same ptbpf-written captures of tests/targets/
# pd_calls (PT from libipt's encoder, made by tests/tools/perfdata_tool): per-CPU
# buffers with CPU-wide switch records, per-thread buffers, and a call into the vDSO
# whose bytes only the capture holds. Calls and returns must be equal to perf's, and
# to the program's own (perfdata_tool synth --expect); the FXT valid.
. "$(dirname "$0")/decode_common.inc"

TOOL=$BUILD/tests/perfdata_tool
PD_CALLS=$BUILD/targets/pd_calls
[ -x "$TOOL" ] && [ -x "$PD_CALLS" ] || skip "perfdata_tool or pd_calls not built"
command -v perf >/dev/null || skip "perf is not installed (linux-perf)"

# check NAME SYNTH_OPTS...
check() {
	local name=$1 cap=$TMP/$1.data perf_opts=()
	shift
	"$TOOL" synth "$PD_CALLS" "$cap" "$@" || fail "$name: perfdata_tool synth"
	if [[ " $* " == *" --vdso-call "* ]]; then
		# perf finds the vDSO only in a build-id cache; ptbpf reads it from the capture
		"$TOOL" install-vdso "$cap" "$TMP/bid-$name" >/dev/null || fail "install-vdso"
		perf_opts=(--buildid-dir "$TMP/bid-$name")
	fi
	perf "${perf_opts[@]}" script -i "$cap" --itrace=cr -F tid,flags,ip,addr \
		>"$TMP/$name.perf" 2>/dev/null || fail "$name: perf script"
	"$PTBPF" decode "$cap" --format calls -o "$TMP/$name.calls" --stats 2>"$TMP/stats" ||
		{ cat "$TMP/stats"; fail "$name: ptbpf decode"; }
	[ "$(figure errors "$TMP/stats")" = 0 ] || fail "$name: decode errors"
	"$PYTHON" "$(dirname "$0")/perf_calls.py" "$TMP/$name.perf" "$TMP/$name.calls" ||
		fail "$name: calls and returns differ from perf script's"
	# and from the program's own, by name (the calls format names the target)
	"$TOOL" synth "$PD_CALLS" x "$@" --expect | awk '{ print $1, $3 }' >"$TMP/$name.expected"
	awk '$3 == "call" || $3 == "return" { print $3, $6 }' "$TMP/$name.calls" >"$TMP/$name.got"
	diff -u "$TMP/$name.expected" "$TMP/$name.got" || fail "$name: not pd_calls' calls"
	"$PTBPF" decode "$cap" -o "$TMP/$name.fxt" || fail "$name: decode to FXT"
	fxt_ok "$TMP/$name.fxt"
	"$FXTCHECK" --stacks "$TMP/$name.fxt" >"$TMP/$name.stacks"
	grep -q " leaf " "$TMP/$name.stacks" || fail "$name: no leaf slices"
	echo "$name: $(grep -c . "$TMP/$name.expected") calls and returns, as perf and pd_calls"
}

check per-cpu --vdso
grep -q " trigger .* uprobe:pd_calls:leaf" "$TMP/per-cpu.calls" || fail "no trigger event"
check per-thread --per-thread
check vdso-call --vdso-call
grep -q "__vdso_getcpu" "$TMP/vdso-call.stacks" || fail "the call into the vDSO is not named"

# As perf record writes them: build ids only in the HEADER_BUILD_ID list (not in MMAP2),
# the vDSO only in perf's build-id cache. ptbpf finds the binary and the vDSO in a cache
# by those build ids (--debug-dir; HOME elsewhere so ~/.debug does not answer), laid out
# by perf itself (perf buildid-cache -a).
export HOME=$TMP/home
mkdir -p "$HOME"
cp "$PD_CALLS" "$TMP/moved"
"$TOOL" synth "$TMP/moved" "$TMP/bid.data" --vdso-call || fail "synth for the build-id cache"
"$TOOL" rewrite "$TMP/bid.data" "$TMP/bid-novdso.data" --no-vdso || fail "rewrite --no-vdso"
perf --buildid-dir "$TMP/cache" buildid-cache -a "$TMP/moved" || fail "perf buildid-cache -a"
"$TOOL" install-vdso "$TMP/bid.data" "$TMP/cache" >/dev/null || fail "install-vdso"
rm "$TMP/moved"
"$PTBPF" decode "$TMP/bid-novdso.data" -v --format calls -o "$TMP/nocache.calls" --stats \
	2>"$TMP/nocache.err" || { cat "$TMP/nocache.err"; fail "decode without the cache"; }
grep -q "moved: binary not found" "$TMP/nocache.err" || { cat "$TMP/nocache.err"; fail "no missing-binary warning"; }
grep -q "\[vdso\]: neither in the capture" "$TMP/nocache.err" ||
	{ cat "$TMP/nocache.err"; fail "no missing-vDSO warning"; }
"$PTBPF" decode "$TMP/bid-novdso.data" --debug-dir "$TMP/cache" --format calls \
	-o "$TMP/cache.calls" --stats 2>"$TMP/stats" || { cat "$TMP/stats"; fail "decode with --debug-dir"; }
[ "$(figure errors "$TMP/stats")" = 0 ] || { cat "$TMP/stats"; fail "--debug-dir: decode errors"; }
"$PYTHON" "$(dirname "$0")/perf_calls.py" "$TMP/vdso-call.perf" "$TMP/cache.calls" ||
	fail "--debug-dir: calls and returns differ from perf script's"
grep -q " call .* __vdso_getcpu$" "$TMP/cache.calls" || fail "--debug-dir: the vDSO is not named"
echo "binary and vDSO found by build id in perf's cache (--debug-dir)"
echo ok
