#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# Runs each libFuzzer harness of tests/fuzz for SECONDS (make fuzz FUZZ_SECONDS=N, and CI
# with 60), one after the other, niced, from the committed seeds (corpus/) plus what
# earlier runs found ($FUZZ_OUT/corpus/, not committed), with the dictionary. Prints one
# line per harness: executions, exec/s, coverage (cov: edges, ft: features), new
# inputs, and crashes. A crash, leak, sanitizer report, timeout (30 s: this build decodes
# some 30x slower than -O2) or out-of-memory leaves its input in
# $FUZZ_OUT/crashes/HARNESS/ and fails the run: once understood and fixed, minimise it and
# add it to tests/fuzz/regressions/HARNESS/, which `make test` replays through the ptbpf
# CLI (tests/integration/fuzz_regressions.sh).
#
# usage: run.sh SECONDS [PATTERN]    (FUZZ_OUT: the harnesses' directory, build/fuzz)
set -u
here=$(cd "$(dirname "$0")" && pwd)
secs=${1:?usage: run.sh SECONDS [PATTERN]}
pattern=${2:-}
: "${FUZZ_OUT:=$here/../../build/fuzz}"
export PTBPF_FUZZ_DATA=$here/data

# harness -> its seed directory under corpus/
seeds_of() {
	case $1 in
	perfdata_*) echo "$here/corpus/perfdata" ;;
	*) echo "$here/corpus/$1" ;;
	esac
}

# libFuzzer writes a "slow-unit-*" for an input that took over 10 s of wall time, which a
# loaded machine reaches with inputs that cost a tenth of a second. What the rule bounds
# is work: replay each one alone and keep it as a failure only if it needs over
# SLOW_UNIT_CPU_S seconds of CPU (this sanitizer build decodes ~30x slower than -O2, so
# 10 s here is ~0.3 s of the real CLI on a 64 KiB input, the largest the runs make).
SLOW_UNIT_CPU_S=${SLOW_UNIT_CPU_S:-10}
recheck_slow_units() {
	local bin=$1 dir=$2 unit cpu
	for unit in "$dir"/slow-unit-*; do
		[ -e "$unit" ] || continue
		/usr/bin/time -f '%U %S' -o "$dir/.cpu" "$bin" "$unit" >/dev/null 2>&1
		cpu=$(awk 'END { print $1 + $2 }' "$dir/.cpu")
		rm -f "$dir/.cpu"
		if awk -v c="$cpu" -v l="$SLOW_UNIT_CPU_S" 'BEGIN { exit !(c <= l) }'; then
			mkdir -p "$FUZZ_OUT/slow-under-load"
			mv "$unit" "$FUZZ_OUT/slow-under-load/"
			echo "    $(basename "$unit"): slow only under load (${cpu} s CPU alone), kept in $FUZZ_OUT/slow-under-load"
		fi
	done
}

failed=0
printf '%-16s %10s %8s %7s %7s %6s %s\n' harness execs exec/s cov ft corpus crashes
for bin in "$FUZZ_OUT"/fuzz_*; do
	[ -x "$bin" ] || continue
	name=$(basename "$bin")
	name=${name#fuzz_}
	[ -n "$pattern" ] && [[ $name != *$pattern* ]] && continue
	work=$FUZZ_OUT/corpus/$name crashes=$FUZZ_OUT/crashes/$name log=$FUZZ_OUT/$name.log
	mkdir -p "$work" "$crashes"
	nice -n 10 "$bin" -max_total_time="$secs" -timeout=30 -rss_limit_mb=4096 \
		-max_len=65536 -dict="$here/ptbpf.dict" -artifact_prefix="$crashes/" \
		-print_final_stats=1 "$work" "$(seeds_of "$name")" >"$log" 2>&1
	rc=$?
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
	rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
	last=$(grep -E '^#[0-9]+' "$log" | tail -1)
	cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$last")
	ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$last")
	recheck_slow_units "$bin" "$crashes"
	found=$(find "$crashes" -type f | wc -l)
	printf '%-16s %10s %8s %7s %7s %6s %s\n' "$name" "${execs:-?}" "${rate:-?}" "${cov:-?}" \
		"${ft:-?}" "$(find "$work" -type f | wc -l)" "$found"
	if [ "$rc" -ne 0 ] || [ "$found" -gt 0 ]; then
		failed=1
		grep -E 'ERROR|SUMMARY|runtime error|Test unit written' "$log" | head -5 | sed 's/^/    /'
		echo "    full log: $log"
	fi
done
exit $failed
