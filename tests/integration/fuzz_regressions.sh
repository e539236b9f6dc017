#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# Every input in tests/fuzz/regressions/HARNESS/ (what a fuzzer found once, and the
# crafted inputs of issue 16) replayed through the ptbpf CLI, as the harness
# (tests/fuzz/fuzz_HARNESS.c) fed it to the code: the decoder exits 0, or 1 with a
# "ptbpf: ..." line, within 60 s, and never crashes, hangs or trips a sanitizer (make
# test SANITIZE=1 gives their reports exit statuses 86 to 88). FILE.expect, when
# present, holds the exit status FILE must give and a pattern its stderr must match.
# FUZZ_REPLAY=DIR replays DIR/HARNESS/* instead (a fuzzer's corpus, build/fuzz/corpus),
# and the slowest inputs are printed in seconds per 100 KB (the goal: under 1).
set -u
: "${PTBPF:?}"
here=$(cd "$(dirname "$0")/../fuzz" && pwd)
DATA=$here/data
TMP=$(mktemp -d "/tmp/ptbpf-fuzzreg-$$.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

# --raw-pt options of the raw_pt harness
. "$here/raw_configs.inc"

# run NAME ARGS...: ptbpf decode ARGS; checks the exit status, sets rc
run() {
	local name=$1
	shift
	local TIMEFORMAT='%3U %3S'
	# CPU time, user + system: on a shared machine, wall time measures the neighbours
	{ time HOME=$DATA/sysroot timeout -k 5 60 "$PTBPF" decode "$@" >"$TMP/out" \
		2>"$TMP/err"; } 2>"$TMP/time"
	rc=$?
	echo "$(awk '{ print $1 + $2 }' "$TMP/time") $size $name" >>"$TMP/times"
	case $rc in
	0) ;;
	1) grep -q '^ptbpf: ' "$TMP/err" || fail "$name: exit 1 without an error line" ;;
	124 | 137) fail "$name: still decoding after 60 s" ;;
	*) cat "$TMP/err" | head -30; fail "$name: exit $rc (crash or sanitizer report)" ;;
	esac
}

# expect FILE: the exit status and stderr FILE.expect asks for, if any
expect() {
	[ -f "$1.expect" ] || return 0
	local want pattern
	want=$(sed -n 1p "$1.expect")
	pattern=$(sed -n 2p "$1.expect")
	[ "$rc" = "$want" ] || { cat "$TMP/err"; fail "$(basename "$1"): exit $rc, expected $want"; }
	[ -z "$pattern" ] || grep -q -- "$pattern" "$TMP/err" ||
		{ cat "$TMP/err"; fail "$(basename "$1"): stderr does not say '$pattern'"; }
}

n=0
for f in "${FUZZ_REPLAY:-$here/regressions}"/*/*; do
	[ -f "$f" ] || continue
	case $f in *.expect) continue ;; esac
	harness=$(basename "$(dirname "$f")") name=$harness/$(basename "$f")
	size=$(stat -c %s "$f")
	case $harness in
	perfdata_read)
		run "$name" --info "$f"
		;;
	perfdata_decode)
		run "$name" "$f" --sysroot "$DATA/sysroot" --debug-dir "$DATA/sysroot" -j 1 \
			-o "$TMP/out.fxt"
		;;
	raw_pt)
		tail -c +2 "$f" >"$TMP/pt"
		[ -s "$TMP/pt" ] || continue
		cfg=$(od -An -tu1 -N1 "$f" | tr -d ' ')
		# shellcheck disable=SC2086
		run "$name" --raw-pt "$TMP/pt" --elf "$DATA/hello" \
			--raw "$DATA/code.bin:0x10000000" ${RAW_CONFIGS[cfg % ${#RAW_CONFIGS[@]}]} \
			-j 1 -o "$TMP/out.fxt"
		;;
	elf)
		run "$name" --raw-pt "$DATA/elf.pt" --elf "$f:0xffffffffff600000" -o "$TMP/out.fxt"
		run "$name" --raw-pt "$DATA/elf.pt" --elf "$f" -o "$TMP/out.fxt"
		;;
	fxt_strings)
		# each string (up to 8, as a file name can hold it) names the trace's thread
		i=0
		tail -c +2 "$f" | tr '/' '_' | tr '\0' '\n' | head -8 | while IFS= read -r s; do
			s=${s:0:200}
			[ -n "$s" ] || s=empty
			mkdir -p "$TMP/s$i" && cp "$DATA/elf.pt" "$TMP/s$i/$s" || continue
			run "$name" --raw-pt "$TMP/s$i/$s" --elf "$DATA/hello" -o "$TMP/out.fxt"
			i=$((i + 1))
		done || exit 1
		;;
	*)
		fail "$name: no harness $harness in tests/fuzz"
		;;
	esac
	expect "$f"
	n=$((n + 1))
done
[ "$n" -gt 0 ] || fail "no input in ${FUZZ_REPLAY:-$here/regressions}"
echo "$n inputs replayed through ptbpf decode: no crash, hang or sanitizer report; slowest:"
# CPU seconds per 100 KB, inputs under 100 KB counted as 100 KB (start-up dominates them)
awk '{ b = $2 > 102400 ? $2 : 102400; printf "%8.3f s/100KB %8.3f s %8d bytes  %s\n", $1 * 102400 / b, $1, $2, $3 }' \
	"$TMP/times" | sort -rn | head -5
