#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# One CPU's stream split at PSBs and decoded on several cores (on by default for -j N):
# the output must be the sequential decode's (-j 1), byte for byte, for every -j.
# PTBPF_DECODE_PIECE makes the pieces small (a few hundred bytes to a few KiB instead
# of 1 MiB), so that every test trace splits, many times:
#   singlestep captures of the test programs (per-CPU streams, thread switches at PSBs,
#   a uretprobe's trampoline, fork and exec, the vDSO) and the ones stored in the fuzz
#   corpus, the HASE perf captures (Broadwell, Skylake), the kAFL/Nyx traces (no
#   timing: times are instruction counts), DynamoRIO's (TSC, MTC, CYC), the fuzz
#   regression inputs (the work budget per piece), and the kAFL traces corrupted
#   (flipped bytes: errors and resyncs at the seams).
# Compared: the FXT (cmp) and --stats but for blocks (how libipt's shared block cache
# cuts blocks depends on which thread filled it first) and the wall time.
. "$(dirname "$0")/decode_common.inc"

T=$BUILD/targets
DR=$HWPT/dynamorio-drpt2trace
# the kAFL/Nyx traces (AGPL-3.0, outside the repository; tests/run.sh sets KAFL when found)
KAFL=${KAFL:-}

checked=0 joined=0 windows=0
# figures FILE: the --stats lines compared
figures() {
	grep -E '^(instructions|calls|returns|errors|overflows|syncs|bytes|skipped|threads|span|slowest) ' "$1"
}
# runs_decoded FILE [N]: the runs the fast path decoded with capstone (--stats); with N,
# only if the block decoder took over N times (where it took over, a piece starting
# later may take runs with the fast path that the sequential decode did not)
runs_decoded() {
	sed -n "s/^fast path .*lookups (\\([0-9]*\\) runs decoded.* took over ${2:-[0-9]*} times.*/\\1/p" "$1"
}
# same NAME DECODE-ARGS...: -j 1 against -j $JOBS (default 2, 5) with pieces of $PIECES
# bytes at least (default 1024: a stream splits in two pieces a thread, at PSBs near equal
# offsets, if it holds that many). About 150 decodes in all: the test must also finish
# on a 2-core machine shared with other work.
same() {
	local name=$1 j ps out
	shift
	"$PTBPF" decode "$@" -o "$TMP/$name.1.fxt" -j 1 --stats 2>"$TMP/$name.1.stats" ||
		{ cat "$TMP/$name.1.stats"; fail "$name: decode -j 1"; }
	figures "$TMP/$name.1.stats" >"$TMP/$name.1.want"
	for ps in ${PIECES:-1024}; do
		for j in ${JOBS:-2 5}; do
			out=$TMP/$name.$j.fxt
			PTBPF_DECODE_PIECE=$ps "$PTBPF" decode "$@" -o "$out" -j $j --stats -vv \
				2>"$TMP/$name.$j.stats" || { tail -3 "$TMP/$name.$j.stats"; fail "$name: -j $j"; }
			cmp -s "$TMP/$name.1.fxt" "$out" ||
				fail "$name: -j $j with $ps-byte pieces: the FXT differs from -j 1's"
			figures "$TMP/$name.$j.stats" | diff "$TMP/$name.1.want" - ||
				fail "$name: -j $j with $ps-byte pieces: the figures differ"
			# the pieces share the runs the fast path decoded (a piece used to start with
			# an empty cache: each decoded its runs with capstone again)
			r1=$(runs_decoded "$TMP/$name.1.stats" 0) rj=$(runs_decoded "$TMP/$name.$j.stats")
			[ -z "$r1" ] || [ -z "$rj" ] || [ "$rj" -le $((r1 + r1 / 10 + 16)) ] ||
				fail "$name: -j $j with $ps-byte pieces: $rj runs decoded, -j 1 $r1"
			joined=$((joined + $(grep -c '^\[piece .* end ' "$TMP/$name.$j.stats")))
			# the window: no piece decodes more than two a thread past the merge's
			reach=$(sed -n 's/^\[split: [0-9]* pieces, decoded at most \([0-9]*\) ahead.*/\1/p' \
				"$TMP/$name.$j.stats")
			if [ -n "$reach" ]; then
				[ "$reach" -le $((2 * j)) ] || fail "$name: -j $j with $ps-byte pieces: a" \
					"piece decoded $reach pieces past the merge's (at most $((2 * j)))"
				windows=$((windows + 1))
			fi
		done
	done
	checked=$((checked + 1))
}

# singlestep captures of the test programs
capture() {
	local name=$1
	shift
	timeout 600 setarch -R "$PTBPF" --backend singlestep --keep-capture="$TMP/$name.data" \
		--decode=no "$@" >"$TMP/$name.run" 2>&1
}
if [ -x "$T/recurse" ] && capture recurse -- "$T/recurse"; then
	same recurse "$TMP/recurse.data"
	for t in sigjmp cxxexc threads tailcall; do
		capture $t -- "$T/$t" || { cat "$TMP/$t.run"; fail "capture $t"; }
		same $t "$TMP/$t.data"
	done
	capture fork --follow-forks -- "$T/forkexec" || { cat "$TMP/fork.run"; fail "capture forkexec"; }
	same fork "$TMP/fork.data"
	capture vdso -- "$T/vdso_clock" || { cat "$TMP/vdso.run"; fail "capture vdso_clock"; }
	same vdso "$TMP/vdso.data"
	# a uretprobe: returns through its trampoline, at seams too (2 KiB pieces, -j 5)
	capture uret --uprobe "$T/recurse:fib" --latency-over 10s --snapshot-on-exit -- "$T/recurse" ||
		{ cat "$TMP/uret.run"; fail "capture recurse with a uretprobe"; }
	PIECES="512 2048" JOBS="2 3 5 8" same uret "$TMP/uret.data"
else
	echo "(no singlestep captures: $(tail -1 "$TMP/recurse.run" 2>/dev/null))"
fi

# singlestep and synthetic captures stored in the fuzz corpus
FUZZ=$TOP/tests/fuzz
for f in "$FUZZ"/corpus/perfdata/*.perf; do
	PIECES=1024 same "corpus-$(basename "$f")" "$f" --sysroot "$FUZZ/data/sysroot" \
		--debug-dir "$FUZZ/data/sysroot"
done

# HASE: tiny traces, tiny pieces (Skylake TSC+MTC; Broadwell snapshots)
for d in skl-control_flow skl-loopy; do
	f=$(ls "$PERFPT/hase-2018/$d"/*.perf)
	PIECES="64 256" JOBS="2 5 8" same "hase-$d" "$f" --sysroot "$PERFPT/hase-2018/$d/symfs"
done
for d in bdw-snapshot-control_flow bdw-snapshot-loopy; do
	PIECES="64 256" JOBS="2 5 8" same "hase-$d" "$PERFPT/hase-2018/$d/perf.data.1" \
		--sysroot "$PERFPT/hase-2018/$d/binaries"
done

# kAFL/Nyx raw traces (no timing: instruction-count times), when present
if [ -n "$KAFL" ] && [ -d "$KAFL" ]; then
	# shellcheck disable=SC2046
	same unzip --raw-pt "$KAFL/Unzip/trace" $(kafl_images "$KAFL/Unzip" data)
	# shellcheck disable=SC2046
	same foo --raw-pt "$KAFL/foo/trace" $(kafl_images "$KAFL/foo" data)
	# shellcheck disable=SC2046
	PIECES=65536 same mruby --raw-pt "$KAFL/mruby/trace" $(kafl_images "$KAFL/mruby" data)
	# shellcheck disable=SC2046
	same avscript --raw-pt "$KAFL/avscript_32/failed_trace_12709_1" \
		$(kafl_images "$KAFL/avscript_32" page_cache) --cpu 6/61/4
	# shellcheck disable=SC2046
	same dyn --raw-pt "$KAFL/dyn_test/sample_raw_0" $(kafl_images "$KAFL/dyn_test" page_cache)
else
	echo "(no kAFL/Nyx traces: set PTBPF_TESTDATA; the others are checked)"
fi

# DynamoRIO's Skylake capture: TSC, MTC and CYC (times between TSCs from CYC)
for d in "$DR"/*.tracedir-*; do
	[ -f "$d/pt.bin" ] || continue
	PIECES="512 2048" same "dr-$(basename "$d")" --raw-pt "$d/pt.bin" --elf "$d/hello" \
		--cpu 6/85/4 --mtc-freq 3 --nom-freq 37 --cpuid-0x15 2,308 --tsc-hz 2000000000
done

# the fuzz regression inputs as fuzz_regressions.sh gives them to ptbpf decode: errors,
# endless loops and the work budget at the seams
. "$FUZZ/raw_configs.inc"
for f in "$FUZZ"/regressions/raw_pt/* "$FUZZ"/corpus/raw_pt/*; do
	case $f in *.expect) continue ;; esac
	n=$(basename "$f")
	tail -c +2 "$f" >"$TMP/raw-$n"
	[ -s "$TMP/raw-$n" ] || continue
	cfg=$(od -An -tu1 -N1 "$f" | tr -d ' ')
	# shellcheck disable=SC2086
	PIECES="128 4096" same "raw-$n" --raw-pt "$TMP/raw-$n" --elf "$FUZZ/data/hello" \
		--raw "$FUZZ/data/code.bin:0x10000000" ${RAW_CONFIGS[cfg % ${#RAW_CONFIGS[@]}]}
done
for f in "$FUZZ"/regressions/perfdata_decode/*; do
	case $f in *.expect) continue ;; esac
	PIECES=1024 same "reg-$(basename "$f")" "$f" --sysroot "$FUZZ/data/sysroot" \
		--debug-dir "$FUZZ/data/sysroot"
done

if [ -n "$KAFL" ] && [ -d "$KAFL" ]; then
	# corrupt: bytes flipped all over the foo trace (errors and resyncs near the seams)
	for seed in 1 2 3; do
		"$PYTHON" - "$KAFL/foo/trace" "$TMP/foo-bad$seed" "$seed" <<-'PY'
	import random, sys
	data = bytearray(open(sys.argv[1], 'rb').read())
	rnd = random.Random(int(sys.argv[3]))
	for _ in range(12):
	    data[rnd.randrange(len(data))] ^= 1 << rnd.randrange(8)
	open(sys.argv[2], 'wb').write(data)
	PY
		# shellcheck disable=SC2046
		same "foo-bad$seed" --raw-pt "$TMP/foo-bad$seed" $(kafl_images "$KAFL/foo" data)
	done
fi
if [ -n "$KAFL" ] && [ -d "$KAFL" ]; then
	# memory: a long stream (mruby's trace repeated to 8 MiB) split at -j 2 holds a few
	# pieces' events at a time, not the stream's (~50 MiB of events)
	"$PYTHON" - "$KAFL/mruby/trace" "$TMP/mruby-long" <<-'PY'
	import sys
	data = open(sys.argv[1], 'rb').read()
	psb = bytes([0x02, 0x82] * 8)
	seg = data[data.index(psb):data.rindex(psb)]
	open(sys.argv[2], 'wb').write(seg * (8 * 2**20 // len(seg) + 1))
	PY
	# peak RSS (KiB) of ptbpf decode ARGS...
	peak_rss() {
		"$PYTHON" -c 'import resource, subprocess, sys
subprocess.run(sys.argv[1:], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)' "$PTBPF" decode "$@"
	}
	# shellcheck disable=SC2046
	set -- --raw-pt "$TMP/mruby-long" $(kafl_images "$KAFL/mruby" data) -o "$TMP/long.fxt"
	rss1=$(peak_rss "$@" -j 1) || fail "mruby 8 MiB: decode -j 1"
	rss2=$(peak_rss "$@" -j 2) || fail "mruby 8 MiB: decode -j 2"
	echo "mruby 8 MiB: peak RSS $((rss1 / 1024)) MiB at -j 1, $((rss2 / 1024)) MiB at -j 2"
	# under ASan freed memory waits in its quarantine instead of being reused: the
	# peak measures the allocations made, not those held, so the bound is not checked
	if ldd "$PTBPF" | grep -q libasan; then
		echo "mruby 8 MiB: memory bound not checked (ASan build)"
	else
		[ "$rss2" -le $((rss1 + 16384)) ] ||
			fail "mruby 8 MiB: -j 2 peaked at $((rss2 / 1024)) MiB, -j 1 at $((rss1 / 1024)) MiB"
	fi
fi
[ "$joined" -gt 50 ] || fail "only $joined seams: the streams did not split"
[ "$windows" -gt 10 ] || fail "only $windows split decodes: the window was not checked"
echo "$checked traces: the same output split in pieces as with -j 1 ($joined seams;" \
	"$windows split decodes within their window)"
exit 0
