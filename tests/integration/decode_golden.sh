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

here=$(cd "$(dirname "$0")" && pwd)
FUZZ=$here/../fuzz
GOLDEN=$here/decode_golden.sha256
[ -f "$GOLDEN" ] || [ -n "${DECODE_GOLDEN_UPDATE:-}" ] || fail "no $GOLDEN"
command -v sha256sum >/dev/null || skip "sha256sum is not installed (coreutils)"

. "$FUZZ/raw_configs.inc"
SKL="--cpu 6/85/4 --mtc-freq 3 --nom-freq 37 --cpuid-0x15 2,308"

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

H=$PERFPT/hase-2018
[ -d "$H" ] || skip "no $H"
one hase-skl-control_flow "$H/skl-control_flow/control_flow-20180404T163033.perf" \
	--sysroot "$H/skl-control_flow/symfs"
one hase-skl-loopy "$H/skl-loopy/loopy-20180404T162955.perf" --sysroot "$H/skl-loopy/symfs"
one hase-bdw-snapshot-control_flow "$H/bdw-snapshot-control_flow/perf.data.1" \
	--sysroot "$H/bdw-snapshot-control_flow/binaries"
one hase-bdw-snapshot-loopy "$H/bdw-snapshot-loopy/perf.data.1" \
	--sysroot "$H/bdw-snapshot-loopy/binaries"

DR=$HWPT/dynamorio-drpt2trace
[ -d "$DR" ] || skip "no $DR"
for t in test_simple.raw test_simple.tracedir-841a2b04; do
	# shellcheck disable=SC2086
	one "dynamorio-$t" --raw-pt "$DR/$t/pt.bin" --elf "$DR/$t/hello" $SKL --tsc-hz 2000000000
done

kafl=0
if [ -n "${KAFL:-}" ] && [ -d "$KAFL" ]; then
	# kafl NAME DIR TRACE MEM [CPU]: as decode_hw_kafl.sh decodes them
	kafl() {
		# shellcheck disable=SC2046
		one "kafl-$1" --raw-pt "$KAFL/$2/$3" $(kafl_images "$KAFL/$2" "$4") ${5:+--cpu $5}
	}
	kafl unzip Unzip trace data
	kafl foo foo trace data
	kafl mruby mruby trace data
	kafl qemu qemu trace1 page_cache
	kafl avscript_32-no-cpu avscript_32 failed_trace_12709_1 page_cache
	kafl avscript_32 avscript_32 failed_trace_12709_1 page_cache 6/61/4
	kafl icelake_tip icelake_tip ptlog pagecache 6/126/5
	kafl dyn_test dyn_test sample_raw_0 page_cache
	kafl=1
fi

# the corrupt inputs, with the options their fuzz harness used
for f in "$FUZZ"/regressions/raw_pt/* "$FUZZ"/corpus/raw_pt/*; do
	case $f in *.expect) continue ;; esac
	tail -c +2 "$f" >"$TMP/pt"
	[ -s "$TMP/pt" ] || continue
	cfg=$(od -An -tu1 -N1 "$f" | tr -d ' ')
	# shellcheck disable=SC2086
	one "raw_pt-$(basename "$(dirname "$(dirname "$f")")")-$(basename "$f")" \
		--raw-pt "$TMP/pt" --elf "$FUZZ/data/hello" --raw "$FUZZ/data/code.bin:0x10000000" \
		${RAW_CONFIGS[cfg % ${#RAW_CONFIGS[@]}]}
done
for f in "$FUZZ"/regressions/perfdata_decode/* "$FUZZ"/corpus/perfdata/*; do
	case $f in *.expect) continue ;; esac
	one "perfdata-$(basename "$(dirname "$(dirname "$f")")")-$(basename "$f")" "$f" \
		--sysroot "$FUZZ/data/sysroot" --debug-dir "$FUZZ/data/sysroot"
done

if [ -n "${DECODE_GOLDEN_UPDATE:-}" ]; then
	# keep the kAFL digests recorded elsewhere when this machine has no kAFL data
	{
		cat "$TMP/digests"
		[ "$kafl" = 1 ] || grep ' kafl-' "$GOLDEN" 2>/dev/null
	} | sort -k3 >"$GOLDEN"
	echo "recorded $(wc -l <"$GOLDEN") digests in $GOLDEN"
	exit 0
fi

# every output recorded here is the one recorded in the file, and none is missing
"$PYTHON" - "$GOLDEN" "$TMP/digests" "$kafl" <<'PY' || fail "the decoder's output changed"
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
