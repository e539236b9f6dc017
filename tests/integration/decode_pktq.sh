#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# The fast path's query engine (decoder/pktq.c) against libipt's query decoder on every
# test capture decoded whole: the HASE and quipper perf captures, DynamoRIO's raw traces,
# the kAFL/Nyx traces when present, the fuzzers' raw PT corpus and regressions. Each is
# decoded three ways: PTBPF_FAST_QUERY=check (both engines in step, every answer,
# status, offset and time compared: a difference aborts), pktq alone and libipt's query
# decoder alone: the outputs must be byte-identical and the fast path's share and
# hand-overs the same (pktq hands over nowhere the fast path on libipt's queries does
# not). test_pktq drives the two engines in random query orders; this is the order the
# fast path asks in.
. "$(dirname "$0")/decode_common.inc"

FUZZ=$TOP/tests/fuzz
. "$FUZZ/raw_configs.inc"
n=0

# same NAME DECODE-ARGS...: the three decodes agree
same() {
	local name=$1 e rc
	shift
	for e in check pktq libipt; do
		PTBPF_VERIFY_FAST=0 PTBPF_FAST_QUERY=$e "$PTBPF" decode "$@" -j 1 --format calls \
			-o "$TMP/$e.calls" --stats >/dev/null 2>"$TMP/$e.err"
		rc=$?
		[ "$rc" -le 1 ] || { tail -5 "$TMP/$e.err"; fail "$name: PTBPF_FAST_QUERY=$e: exit $rc"; }
		[ -f "$TMP/$e.calls" ] || : >"$TMP/$e.calls"
	done
	grep -q "differs from libipt" "$TMP/check.err" && { cat "$TMP/check.err"; fail "$name"; }
	for e in check pktq; do
		cmp -s "$TMP/$e.calls" "$TMP/libipt.calls" ||
			fail "$name: the output on PTBPF_FAST_QUERY=$e differs from libipt's queries"
		[ "$(grep '^fast path' "$TMP/$e.err")" = "$(grep '^fast path' "$TMP/libipt.err")" ] &&
			continue
		# malformed packets: pktq hands them to the block decoder, which fails the same
		[ -n "${HOSTILE:-}" ] ||
			fail "$name: PTBPF_FAST_QUERY=$e: $(grep '^fast path' "$TMP/$e.err"); libipt's: $(grep '^fast path' "$TMP/libipt.err")"
		[ $e = pktq ] && more=$((more + 1))
	done
	n=$((n + 1))
	[ -n "${QUIET:-}" ] || echo "$name: $(grep '^fast path' "$TMP/pktq.err")"
}

H=$PERFPT/hase-2018
[ -d "$H" ] || skip "no $H"
same hase-skl-control_flow "$H/skl-control_flow/control_flow-20180404T163033.perf" \
	--sysroot "$H/skl-control_flow/symfs"
same hase-skl-loopy "$H/skl-loopy/loopy-20180404T162955.perf" --sysroot "$H/skl-loopy/symfs"
same hase-bdw-snapshot-loopy "$H/bdw-snapshot-loopy/perf.data.1" \
	--sysroot "$H/bdw-snapshot-loopy/binaries"
same hase-bdw-snapshot-control_flow "$H/bdw-snapshot-control_flow/perf.data.1" \
	--sysroot "$H/bdw-snapshot-control_flow/binaries"
for f in "$PERFPT"/quipper-echo-m7-6y75/perf.data*intel_pt-4.14; do
	same "quipper-$(basename "$f")" "$f"
done

SKL="--cpu 6/85/4 --mtc-freq 3 --nom-freq 37 --cpuid-0x15 2,308 --tsc-hz 2000000000"
for d in "$HWPT"/dynamorio-drpt2trace/test_simple.*; do
	# shellcheck disable=SC2086
	same "dynamorio-$(basename "$d")" --raw-pt "$d/pt.bin" --elf "$d/hello" $SKL
done

if [ -n "${KAFL:-}" ] && [ -d "$KAFL/mruby" ]; then
	# kAFL/Nyx: NAME DIR TRACE MEM [CPU]
	kafl() {
		# shellcheck disable=SC2046
		same "kafl-$1" --raw-pt "$KAFL/$2/$3" $(kafl_images "$KAFL/$2" "$4") ${5:+--cpu $5}
	}
	kafl unzip Unzip trace data
	kafl foo foo trace data
	kafl mruby mruby trace data
	kafl qemu qemu trace1 page_cache
	kafl avscript_32 avscript_32 failed_trace_12709_1 page_cache 6/61/4
	kafl icelake_tip icelake_tip ptlog pagecache 6/126/5
	kafl dyn_test dyn_test sample_raw_0 page_cache
else
	echo "kAFL/Nyx traces not present (PTBPF_TESTDATA): not compared"
fi

# hostile input: the raw PT corpus and regressions, under the harness's configuration;
# the same output, where pktq may hand over more often (a packet libipt refuses)
QUIET=1 HOSTILE=1 more=0 hostile=$n
for f in "$FUZZ"/corpus/raw_pt/* "$FUZZ"/regressions/raw_pt/*; do
	[ -f "$f" ] || continue
	case $f in *.expect) continue ;; esac
	tail -c +2 "$f" >"$TMP/pt"
	[ -s "$TMP/pt" ] || continue
	cfg=$(od -An -tu1 -N1 "$f" | tr -d ' ')
	# shellcheck disable=SC2086
	same "raw_pt/$(basename "$f")" --raw-pt "$TMP/pt" --elf "$FUZZ/data/hello" \
		--raw "$FUZZ/data/code.bin:0x10000000" ${RAW_CONFIGS[cfg % ${#RAW_CONFIGS[@]}]}
done
echo "$n inputs: the same output with pktq as with libipt's query decoder, no difference in step; the same fast path share and hand-overs on the $hostile captures, more hand-overs on $more of the $((n - hostile)) hostile inputs"
