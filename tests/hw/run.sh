#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# Hardware self-test of the pt backend. Run as root on a bare-metal Intel host with
# Intel PT (Skylake or newer), from the repository:  sudo tests/hw/run.sh
# Not run by `make test` (CI machines are VMs without PT).
#
# It builds ptbpf, runs `ptbpf doctor`, then captures the bundled demo_server (one
# request in fifty takes a slow path) with real Intel PT, for every trigger kind:
#   uprobe     --uprobe demo_server:slow_path --max-snapshots 2   (two snapshots in a row)
#   latency    --uprobe demo_server:handle_request --latency-over 100ms
#   syscall    --syscall-latency-over 100ms --syscall clock_nanosleep
#   tracepoint --tracepoint syscalls:sys_enter_clock_nanosleep
#   runq       --latency-over 2ms (demo_server and two busy loops pinned to one CPU)
#   filter     --uprobe demo_server:slow_path --filter demo_server:slow_path
#   kernel     --uprobe demo_server:slow_path --kernel
# each with the in-kernel freeze (aux_pause, Linux 6.13+) and with the user-space one
# (PERF_EVENT_IOC_DISABLE, forced by PTBPF_PT_FREEZE=ioctl), where the kernel has both.
# For every capture it checks that
#   - the FXT passes the independent validator (tests/tools/fxtcheck --strict);
#   - with the in-kernel freeze, the physics of the freeze (tests/hw/freeze_physics.sh,
#     on the kept perf.data, by the firing CPU's packets): the trace ends at the probe,
#     with no branch and no timestamp after it (the user-space freeze lets the program run
#     on until the loader's disable, so it is not held to this);
# and for uprobe and latency also that
#   - the slow request's frames are there with instruction-level detail: slow_path,
#     rebuild_index and its 64 calls of hash_key, and wait_for_disk;
#   - `perf script --itrace=cr` on the kept perf.data (perf's own PT decoder) sees the same
#     calls of demo_server's functions as `ptbpf decode` does (each count within one: a
#     frame may be cut at the start of the window);
# and prints a one-screen report. Exit status: 0 all passed, 1 a check failed, 77 this
# host cannot run the test (the last line says why: "SKIP: reason"). Results stay in
# $PTBPF_HW_OUT (default /tmp/ptbpf-hw-<pid>).
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top" || exit 2
out=${PTBPF_HW_OUT:-/tmp/ptbpf-hw-$$}
mkdir -p "$out"
PTBPF=$top/build/ptbpf
TARGET=$top/build/targets/demo_server
PYTHON=${PYTHON:-python3}
FXTCHECK=$top/build/tests/fxtcheck
PHYSICS=$top/tests/hw/freeze_physics.sh
report=()
failed=0

say() { printf '%s\n' "$*"; }
cannot() {
	[ -z "${PTBPF_HW_OUT:-}" ] && rm -rf "$out"	# nothing worth keeping
	say "SKIP: ptbpf hw test cannot run here: $*"
	exit 77
}
result() { # name status detail
	report+=("$(printf '%-34s %-5s %s' "$1" "$2" "$3")")
	[ "$2" = FAIL ] && failed=1
}

[ "$(id -u)" -eq 0 ] || cannot "run as root (sudo tests/hw/run.sh)"
command -v perf >/dev/null || cannot "perf is not installed (Debian: linux-perf)"

say "== build"
if ! make -j"$(nproc)" >"$out/build.log" 2>&1; then
	tail -20 "$out/build.log"
	cannot "the build failed"
fi
[ -x "$FXTCHECK" ] || cannot "$FXTCHECK was not built"

say "== ptbpf doctor"
"$PTBPF" doctor | tee "$out/doctor.txt"
"$PTBPF" doctor --json >"$out/doctor.json"
read -r pt_usable pt_path why < <("$PYTHON" - "$out/doctor.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
print(int(d["backends"]["pt"]["usable"]), d["freeze"]["pt_path"],
      (d["backends"]["pt"]["why"] or "").replace("\n", " "))
PY
)
[ "$pt_usable" = 1 ] || cannot "the pt backend is not usable: $why"
freezes=(ioctl)
[ "$pt_path" = aux_pause ] && freezes=(aux_pause ioctl)

# Calls of demo_server's functions seen by perf's decoder: "=> ADDR callee+OFF" lines of
# branch samples flagged "call", counted per callee, in the target's threads only.
perf_calls() {
	perf script -i "$1" --itrace=cr -F comm,flags,ip,sym,addr --comm demo_server 2>/dev/null |
		awk '/call/ && /=>/ { n = split($0, f, "=>"); split(f[n], t, " ");
			sub(/\+0x[0-9a-f]+$/, "", t[2]); print t[2] }' | sort | uniq -c
}

# The same from ptbpf's FXT: one slice per call.
fxt_calls() {
	"$FXTCHECK" --stacks "$1" | awk '!/^#/ { $1 = ""; sub(/^ /, "");
		n = split($0, w, " "); name = w[1]
		for (i = 2; i <= n - 2; i++) name = name " " w[i]
		print name }' | sort | uniq -c
}

compare_calls() { # perf-counts fxt-counts
	"$PYTHON" - "$1" "$2" <<'PY'
import sys
funcs = ["handle_request", "parse_request", "hash_key", "lookup", "slow_path",
         "rebuild_index", "wait_for_disk", "respond"]
def load(p):
    c = {}
    for line in open(p):
        n, name = line.split(None, 1)
        c[name.strip()] = int(n)
    return c
perf, ours = load(sys.argv[1]), load(sys.argv[2])
bad = [f"{f}: perf {perf.get(f, 0)} ptbpf {ours.get(f, 0)}" for f in funcs
       if abs(perf.get(f, 0) - ours.get(f, 0)) > 1]
seen = sum(perf.get(f, 0) for f in funcs)
print("; ".join(bad) if bad else f"{seen} calls agree")
sys.exit(1 if bad or not seen else 0)
PY
}

# run_case NAME FREEZE CHECKS ARGS...: CHECKS "frames" adds the slow-request frame and
# perf script checks to the FXT and physics ones; "kernel" runs the physics as --kernel.
run_case() {
	local name=$1 freeze=$2 checks=$3 dir="$out/$1-$2" fxt cap n=0
	shift 3
	mkdir -p "$dir"
	say "== $name, freeze $freeze: ptbpf $* -- demo_server 120"
	local env=()
	[ "$freeze" = ioctl ] && env=(PTBPF_PT_FREEZE=ioctl)
	if ! env "${env[@]}" "$PTBPF" --backend pt -v "$@" -o "$dir/trace.fxt" \
		--keep-capture "$dir/capture.data" -- "${RUN_PREFIX[@]}" "$TARGET" 120 \
		>"$dir/ptbpf.log" 2>&1; then
		tail -5 "$dir/ptbpf.log"
		result "$name ($freeze): capture" FAIL "see $dir/ptbpf.log"
		return
	fi
	grep -q "freeze $([ "$freeze" = aux_pause ] && echo "in the kernel" || echo "from user")" \
		"$dir/ptbpf.log" && result "$name ($freeze): freeze path" ok "as asked" ||
		result "$name ($freeze): freeze path" FAIL "not reported as $freeze"
	# one output per snapshot: trace.fxt, or trace.1.fxt, trace.2.fxt... (--max-snapshots)
	for fxt in "$dir"/trace.fxt "$dir"/trace.[0-9]*.fxt; do
		[ -e "$fxt" ] || continue
		n=$((n + 1))
		cap=${fxt%.fxt}
		cap=$dir/capture${cap#"$dir"/trace}.data
		check_snapshot "$name ($freeze)$([ $n -gt 1 ] && echo " #$n")" "$freeze" "$checks" \
			"$fxt" "$cap" "$dir"
	done
	[ $n -gt 0 ] || result "$name ($freeze): snapshots" FAIL "no trace written"
}

check_snapshot() { # label freeze checks fxt capture dir
	local label=$1 freeze=$2 checks=$3 fxt=$4 cap=$5 dir=$6 base phys
	base=$(basename "$fxt" .fxt)
	if "$FXTCHECK" --strict "$fxt" >"$dir/$base.fxtcheck.txt" 2>&1; then
		result "$label: FXT valid" ok "fxtcheck --strict"
	else
		result "$label: FXT valid" FAIL "$(head -1 "$dir/$base.fxtcheck.txt")"
	fi
	if [ "$freeze" = aux_pause ]; then
		phys=$("$PHYSICS" $([ "$checks" = kernel ] && echo --kernel) "$cap" 2>&1)
		[ $? -eq 0 ] && result "$label: ends at the probe" ok "${phys#*: }" ||
			result "$label: ends at the probe" FAIL "${phys#*: }"
	fi
	[ "$checks" = frames ] || return 0
	"$FXTCHECK" --stacks "$fxt" >"$dir/$base.stacks.txt" 2>/dev/null
	local hk
	hk=$(awk '/ hash_key /' "$dir/$base.stacks.txt" | wc -l)
	if grep -q " slow_path " "$dir/$base.stacks.txt" &&
	   grep -q " rebuild_index " "$dir/$base.stacks.txt" &&
	   grep -q " wait_for_disk " "$dir/$base.stacks.txt" && [ "$hk" -ge 64 ]; then
		result "$label: slow frames" ok "slow_path, rebuild_index, $hk hash_key calls"
	else
		result "$label: slow frames" FAIL "see $dir/$base.stacks.txt ($hk hash_key calls)"
	fi
	perf_calls "$cap" >"$dir/$base.perf-calls.txt"
	fxt_calls "$fxt" >"$dir/$base.ptbpf-calls.txt"
	local cmp
	cmp=$(compare_calls "$dir/$base.perf-calls.txt" "$dir/$base.ptbpf-calls.txt")
	[ $? -eq 0 ] && result "$label: perf script agrees" ok "$cmp" ||
		result "$label: perf script agrees" FAIL "$cmp"
	"$PTBPF" decode "$cap" -o "$dir/$base.redecode.fxt" >/dev/null 2>&1 &&
		result "$label: ptbpf decode" ok "re-decoded the kept capture" ||
		result "$label: ptbpf decode" FAIL "ptbpf decode failed"
}

# Run-queue latency needs a wait: two busy loops on the CPU demo_server is pinned to.
start_hogs() {
	HOGS=()
	for _ in 1 2; do
		taskset -c 0 sh -c 'while :; do :; done' &
		HOGS+=($!)
	done
}
stop_hogs() {
	local p
	for p in "${HOGS[@]}"; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
	HOGS=()
}
HOGS=()
trap stop_hogs EXIT
RUN_PREFIX=()

for f in "${freezes[@]}"; do
	run_case uprobe "$f" frames --uprobe "$TARGET:slow_path" --max-snapshots 2
	run_case latency "$f" frames --uprobe "$TARGET:handle_request" --latency-over 100ms
	run_case syscall "$f" physics --syscall-latency-over 100ms --syscall clock_nanosleep
	run_case tracepoint "$f" physics --tracepoint syscalls:sys_enter_clock_nanosleep
	start_hogs
	RUN_PREFIX=(taskset -c 0)
	run_case runq "$f" physics --latency-over 2ms
	RUN_PREFIX=()
	stop_hogs
	run_case filter "$f" physics --uprobe "$TARGET:slow_path" --filter "$TARGET:slow_path"
	run_case kernel "$f" kernel --uprobe "$TARGET:slow_path" --kernel
done

say ""
cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-)
say "== ptbpf hardware self-test: $(uname -r),$cpu"
for line in "${report[@]}"; do say "$line"; done
say "results in $out"
exit $failed
