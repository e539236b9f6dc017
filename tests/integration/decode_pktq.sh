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
. "$(dirname "$0")/decode_captures.inc"
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

each_capture same hase quipper dynamorio kafl
[ "$KAFL_DECODED" = 1 ] || echo "kAFL/Nyx traces not present (PTBPF_TESTDATA): not compared"

# hostile input: the raw PT corpus and regressions, under the harness's configuration;
# the same output, where pktq may hand over more often (a packet libipt refuses)
QUIET=1 HOSTILE=1 more=0 hostile=$n
each_capture same raw_pt
echo "$n inputs: the same output with pktq as with libipt's query decoder, no difference in step; the same fast path share and hand-overs on the $hostile captures, more hand-overs on $more of the $((n - hostile)) hostile inputs"
