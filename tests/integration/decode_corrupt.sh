#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# Corrupt input never crashes or hangs the decoder: real PT with random bytes flipped
# and truncated at random points decodes (exit 0) to valid FXT with the errors marked;
# a perf.data file with random bytes flipped decodes or fails with one clear error line.
. "$(dirname "$0")/decode_common.inc"

DR=$HWPT/dynamorio-drpt2trace/test_simple.tracedir-841a2b04
H=$PERFPT/hase-2018/skl-control_flow
[ -d "$DR" ] && [ -d "$H" ] || skip "tests/data is incomplete"
SKL="--cpu 6/85/4 --mtc-freq 3 --nom-freq 37 --cpuid-0x15 2,308"

# corrupt IN OUT SEED FLIPS TRUNCATE(0/1) [SKIP]: a copy with FLIPS random bytes changed
# after the first SKIP bytes, cut at a random length if TRUNCATE.
corrupt() {
	"$PYTHON" - "$@" <<'PY'
import random, sys
src, dst, seed, flips, trunc = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5] == '1'
skip = int(sys.argv[6]) if len(sys.argv) > 6 else 0
r = random.Random(seed)
b = bytearray(open(src, 'rb').read())
for _ in range(flips):
    i = r.randrange(skip, len(b))
    b[i] = r.randrange(256)
if trunc:
    b = b[:r.randrange(1, len(b))]
open(dst, 'wb').write(b)
PY
}

# run: ptbpf decode with a time limit; sets rc
run() {
	timeout 60 "$PTBPF" decode "$@" >"$TMP/out" 2>"$TMP/err"
	rc=$?
	[ $rc -lt 124 ] || { cat "$TMP/err"; fail "ptbpf decode $* crashed or hung (exit $rc)"; }
}

errors=0
for seed in $(seq 1 24); do
	trunc=$((seed % 3 == 0))
	corrupt "$DR/pt.bin" "$TMP/pt.bin" "$seed" $((seed * 3)) $trunc
	# shellcheck disable=SC2086
	run --raw-pt "$TMP/pt.bin" --elf "$DR/hello" $SKL -o "$TMP/c.fxt" --stats
	[ $rc = 0 ] || { cat "$TMP/err"; fail "seed $seed: exit $rc on corrupt PT"; }
	fxt_ok "$TMP/c.fxt"
	e=$(figure errors "$TMP/err")
	errors=$((errors + e))
done
echo "24 corrupt raw traces: exit 0, valid FXT, $errors decode errors marked in all"
[ $errors -gt 0 ] || fail "no decode error in 24 corrupt traces: corruption not seen?"

# --strict turns decode errors into a failure, after writing the trace
corrupt "$DR/pt.bin" "$TMP/pt.bin" 7 40 0
# shellcheck disable=SC2086
run --raw-pt "$TMP/pt.bin" --elf "$DR/hello" $SKL -o "$TMP/c.fxt" --strict
[ $rc = 1 ] || fail "--strict: exit $rc with decode errors"

# perf.data with bytes flipped past its header: decodes, or one error line
f=$H/control_flow-20180404T163033.perf
size=$(wc -c <"$f")
failed=0
for seed in $(seq 1 24); do
	corrupt "$f" "$TMP/c.perf" "$seed" 8 $((seed % 4 == 0)) 104
	run "$TMP/c.perf" --sysroot "$H/symfs" -o "$TMP/c.fxt"
	if [ $rc = 0 ]; then
		fxt_ok "$TMP/c.fxt"
	else
		[ $rc = 1 ] || fail "seed $seed: exit $rc"
		grep -q . "$TMP/err" || fail "seed $seed: failed without a message"
		failed=$((failed + 1))
	fi
done
echo "24 corrupt perf.data files ($size bytes): $((24 - failed)) decoded, $failed refused with a message"
