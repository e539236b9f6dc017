#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# The capture command's decoder flags, as `ptbpf decode` has them: --verify-fast decodes
# the snapshot both ways (block decoder, fast path) and fails at the first difference;
# --no-fast decodes with libipt's block decoder alone. -v says which ran. The suite's
# PTBPF_VERIFY_FAST=1 is turned off here, so that only the flag asks for the check.
. "$(dirname "$0")/capture_common.inc"
need_singlestep
export PTBPF_VERIFY_FAST=0

cap plain -v -o "$TMP/plain.fxt" -- "$CHAIN" -n 1
[ "$RC" = 0 ] || { cat "$TMP/plain.err"; fail "capture: exit $RC"; }
grep -q "^  decoded   fast path [1-9][0-9]* of [0-9]* blocks$" "$TMP/plain.err" ||
	{ cat "$TMP/plain.err"; fail "a plain capture: no 'decoded ... fast path' line, or checked"; }

cap verify -v --verify-fast -o "$TMP/verify.fxt" -- "$CHAIN" -n 1
[ "$RC" = 0 ] || { cat "$TMP/verify.err"; fail "--verify-fast: exit $RC"; }
grep -q "^  decoded   fast path [1-9][0-9]* of [0-9]* blocks, checked against libipt's block decoder (--verify-fast): no difference$" \
	"$TMP/verify.err" || { cat "$TMP/verify.err"; fail "--verify-fast: not checked both ways"; }
fxt_ok "$TMP/verify.fxt"

cap nofast -v --no-fast -o "$TMP/nofast.fxt" -- "$CHAIN" -n 1
[ "$RC" = 0 ] || { cat "$TMP/nofast.err"; fail "--no-fast: exit $RC"; }
grep -q "^  decoded   libipt's block decoder alone (--no-fast), [1-9][0-9]* blocks$" \
	"$TMP/nofast.err" || { cat "$TMP/nofast.err"; fail "--no-fast: not the block decoder alone"; }
fxt_ok "$TMP/nofast.fxt"
# the same functions either way (two runs of one program: its calls, not its times)
names() { "$FXTCHECK" --stacks "$1" | awk 'NF == 4 { print $2 }' | sort -u; }
[ "$(names "$TMP/nofast.fxt")" = "$(names "$TMP/verify.fxt")" ] ||
	{ diff <(names "$TMP/nofast.fxt") <(names "$TMP/verify.fxt"); fail "--no-fast: other functions"; }
echo "capture: -v names the decoder; --verify-fast checked both ways, --no-fast the block decoder alone"
exit 0
