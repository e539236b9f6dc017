#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# The decoder's output, byte for byte, on every stored capture: the perf captures of
# hase-2018, the DynamoRIO raw traces, the kAFL/Nyx traces (when present, see
# decode_hw_kafl.sh) and the corrupt inputs of tests/fuzz (regressions and corpora), each
# decoded -j 1 to FXT, to the call list (--format calls) and to text, must give the
# sha256 digests (and exit statuses) recorded in decode_golden.sha256. A change that
# makes the decoder faster (a cache, a fast path) must not change one byte of them.
#
# A deliberate change of the output (a new field, a fix) records the new digests:
#   DECODE_GOLDEN_UPDATE=1 TESTS=decode_golden tests/run.sh
# and the commit says why the output changed.
. "$(dirname "$0")/decode_common.inc"
. "$(dirname "$0")/decode_captures.inc"
GOLDEN=$(cd "$(dirname "$0")" && pwd)/decode_golden.sha256
[ -f "$GOLDEN" ] || [ -n "${DECODE_GOLDEN_UPDATE:-}" ] || fail "no $GOLDEN"
command -v sha256sum >/dev/null || skip "sha256sum is not installed (coreutils)"

: >"$TMP/digests"
# one NAME DECODE-ARGS...: NAME's three outputs, "DIGEST EXIT NAME.FORMAT" each
one() {
	local name=$1 fmt out rc digest
	shift
	for fmt in fxt calls text; do
		out=$TMP/out.$fmt
		rm -f "$out"
		HOME=$FUZZ/data/sysroot timeout -k 5 120 "$PTBPF" decode "$@" -j 1 \
			--format "$fmt" -o "$out" 2>"$TMP/err"
		rc=$?
		case $rc in
		0 | 1) ;;
		*) head -5 "$TMP/err"; fail "$name: decode --format $fmt: exit $rc" ;;
		esac
		digest=$( [ -f "$out" ] && sha256sum <"$out" | cut -c1-64 || echo none)
		echo "$digest $rc $name.$fmt" >>"$TMP/digests"
	done
}

each_capture one hase dynamorio kafl kafl-no-cpu raw_pt perfdata

if [ -n "${DECODE_GOLDEN_UPDATE:-}" ]; then
	# keep the kAFL digests recorded elsewhere when this machine has no kAFL data
	# (read before the file is rewritten: in one pipeline the shell may empty it first)
	{
		cat "$TMP/digests"
		[ "$KAFL_DECODED" = 1 ] || grep ' kafl-' "$GOLDEN" 2>/dev/null
	} | sort -k3 >"$TMP/golden"
	cp "$TMP/golden" "$GOLDEN"
	echo "recorded $(wc -l <"$GOLDEN") digests in $GOLDEN"
	exit 0
fi

# every output recorded here is the one recorded in the file, and none is missing
"$PYTHON" - "$GOLDEN" "$TMP/digests" "$KAFL_DECODED" <<'PY' || fail "the decoder's output changed"
import sys
want = {l.split()[2]: l.split()[:2] for l in open(sys.argv[1]) if l.strip()}
got = {l.split()[2]: l.split()[:2] for l in open(sys.argv[2]) if l.strip()}
kafl = sys.argv[3] == '1'
bad = 0
for name in sorted(set(want) | set(got)):
    if name.startswith('kafl-') and not kafl:
        continue
    w, g = want.get(name), got.get(name)
    if w != g:
        bad += 1
        print(f'  {name}: recorded {w and " exit ".join(w) or "nothing"}, '
              f'now {g and " exit ".join(g) or "nothing"}')
print(f'  {len(got)} outputs compared byte for byte, {bad} differ'
      + ('' if kafl else ' (kAFL/Nyx traces not present: their digests not checked)'))
sys.exit(1 if bad else 0)
PY
echo "the decoder's output is byte-identical on every stored capture"
