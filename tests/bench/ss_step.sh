#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# The singlestep backend's speed: instructions single-stepped and encoded per second,
# and the slowdown against the same program run natively (baseline). Also shown: a
# tracer that only steps (ss_bare_step), the floor set by the kernel's ptrace traps.
set -u
: "${BUILD:?}" "${PTBPF:?}"
prog=$BUILD/targets/recurse
arg=10
tmp=$(mktemp -d "/tmp/ptbpf-ssbench-$$.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

now() { date +%s.%N; }

# Native: the program's whole run (exec to exit), averaged.
runs=50
t0=$(now)
for _ in $(seq $runs); do "$prog" $arg >/dev/null; done
t1=$(now)
native=$(awk -v a="$t0" -v b="$t1" -v n=$runs 'BEGIN { print (b - a) / n }')

traced() {
	local name=$1 t0 t1
	shift
	t0=$(now)
	"$PTBPF" --backend singlestep --decode=no --keep-capture="$tmp/$name.data" "$@" \
		-- "$prog" $arg >/dev/null 2>"$tmp/$name.err" ||
		{ cat "$tmp/$name.err"; echo "FAIL: ptbpf $*"; exit 1; }
	t1=$(now)
	insns=$(grep -o '[0-9]* instructions stepped' "$tmp/$name.err" | awk '{ print $1 }')
	awk -v name="singlestep $name:" -v n="$insns" -v a="$t0" -v b="$t1" -v native="$native" \
		-v native_ns="$native_ns" \
		'BEGIN { w = b - a; printf "%-28s %7d instructions in %6.2f s: %8.0f instructions/s, " \
			 "%6.1f us each, slowdown %.0fx vs native (whole run), %.0fx per instruction\n",
			 name, n, w, n / w, w * 1e6 / n, w / native, w * 1e9 / n / native_ns }'

}

awk -v name="native $(basename "$prog") $arg:" -v t="$native" -v n=$runs \
	'BEGIN { printf "%-28s %.2f ms per run (exec to exit, %d runs)\n", name, t * 1000, n }'
"$BUILD/bench/ss_bare_step" "$prog" $arg | tee "$tmp/bare10"

# Per instruction: fib(n) makes 2 fib(n+1) - 1 calls; two stepped runs give the
# instructions per call, which prices a native fib(27) long enough to time.
"$BUILD/bench/ss_bare_step" "$prog" 8 >"$tmp/bare8"
i10=$(awk '{ print $4 }' "$tmp/bare10")
i8=$(awk '{ print $4 }' "$tmp/bare8")
t0=$(now)
"$prog" 27 >/dev/null
t1=$(now)
native_ns=$(awk -v i10="$i10" -v i8="$i8" -v a="$t0" -v b="$t1" 'BEGIN {
	per_call = (i10 - i8) / (177 - 67); n = i8 + per_call * (635621 - 67);
	printf "%.3f", (b - a) * 1e9 / n }')
echo "native recurse 27:           ~$native_ns ns per instruction (instructions estimated from the stepped runs)"

traced default
traced verify --verify
traced real-clock --clock real
