#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# Hardware self-test of the pt backend. Run as root on a bare-metal Intel host with
# Intel PT (Skylake or newer), from the repository:  sudo tests/hw/run.sh
# Not run by `make test` (CI machines are VMs without PT).
#
# It builds ptbpf, runs `ptbpf doctor`, then captures the bundled demo_server (one
# request in fifty takes a slow path) with real Intel PT:
#   uprobe   --uprobe demo_server:slow_path             freeze when slow_path is entered
#   latency  --uprobe demo_server:handle_request --latency-over 100ms
# each with the in-kernel freeze (aux_pause, Linux 6.13+) and with the user-space one
# (PERF_EVENT_IOC_DISABLE, forced by PTBPF_PT_FREEZE=ioctl), where the kernel has both.
# For every capture it checks that
#   - the FXT passes the independent validator (tests/tools/fxtcheck --strict);
#   - the slow request's frames are there with instruction-level detail: slow_path,
#     rebuild_index and its 64 calls of hash_key, and wait_for_disk;
#   - `perf script --itrace=cr` on the kept perf.data (perf's own PT decoder) sees the same
#     calls of demo_server's functions as `ptbpf decode` does (each count within one: a
#     frame may be cut at the start of the window);
# and prints a one-screen report. Exit status: 0 all passed, 1 a check failed, 2 this host
# cannot run the test (the reason is printed). Results stay in $PTBPF_HW_OUT (default
# /tmp/ptbpf-hw-<pid>).
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top" || exit 2
out=${PTBPF_HW_OUT:-/tmp/ptbpf-hw-$$}
mkdir -p "$out"
PTBPF=$top/build/ptbpf
TARGET=$top/build/targets/demo_server
PYTHON=${PYTHON:-python3}
FXTCHECK=$top/build/tests/fxtcheck
report=()
failed=0

say() { printf '%s\n' "$*"; }
cannot() { say "ptbpf hw test: cannot run here: $*"; exit 2; }
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

run_case() { # name freeze args...
	local name=$1 freeze=$2 dir="$out/$1-$2"
	shift 2
	mkdir -p "$dir"
	say "== $name, freeze $freeze: ptbpf $* -- demo_server 120"
	local env=()
	[ "$freeze" = ioctl ] && env=(PTBPF_PT_FREEZE=ioctl)
	if ! env "${env[@]}" "$PTBPF" --backend pt -v "$@" -o "$dir/trace.fxt" \
		--keep-capture "$dir/capture.data" -- "$TARGET" 120 >"$dir/ptbpf.log" 2>&1; then
		tail -5 "$dir/ptbpf.log"
		result "$name ($freeze): capture" FAIL "see $dir/ptbpf.log"
		return
	fi
	grep -q "freeze $([ "$freeze" = aux_pause ] && echo "in the kernel" || echo "from user")" \
		"$dir/ptbpf.log" && result "$name ($freeze): freeze path" ok "as asked" ||
		result "$name ($freeze): freeze path" FAIL "not reported as $freeze"
	if "$FXTCHECK" --strict "$dir/trace.fxt" >"$dir/fxtcheck.txt" 2>&1; then
		result "$name ($freeze): FXT valid" ok "fxtcheck --strict"
	else
		result "$name ($freeze): FXT valid" FAIL "$(head -1 "$dir/fxtcheck.txt")"
	fi
	"$FXTCHECK" --stacks "$dir/trace.fxt" >"$dir/stacks.txt" 2>/dev/null
	local hk
	hk=$(awk '/ hash_key /' "$dir/stacks.txt" | wc -l)
	if grep -q " slow_path " "$dir/stacks.txt" && grep -q " rebuild_index " "$dir/stacks.txt" &&
	   grep -q " wait_for_disk " "$dir/stacks.txt" && [ "$hk" -ge 64 ]; then
		result "$name ($freeze): slow frames" ok \
			"slow_path, rebuild_index, $hk hash_key calls"
	else
		result "$name ($freeze): slow frames" FAIL \
			"see $dir/stacks.txt ($hk hash_key calls)"
	fi
	perf_calls "$dir/capture.data" >"$dir/perf-calls.txt"
	fxt_calls "$dir/trace.fxt" >"$dir/ptbpf-calls.txt"
	local cmp
	cmp=$(compare_calls "$dir/perf-calls.txt" "$dir/ptbpf-calls.txt")
	[ $? -eq 0 ] && result "$name ($freeze): perf script agrees" ok "$cmp" ||
		result "$name ($freeze): perf script agrees" FAIL "$cmp"
	"$PTBPF" decode "$dir/capture.data" -o "$dir/redecode.fxt" >/dev/null 2>&1 &&
		result "$name ($freeze): ptbpf decode" ok "re-decoded the kept capture" ||
		result "$name ($freeze): ptbpf decode" FAIL "ptbpf decode failed"
}

for f in "${freezes[@]}"; do
	run_case uprobe "$f" --uprobe "$TARGET:slow_path"
	run_case latency "$f" --uprobe "$TARGET:handle_request" --latency-over 100ms
done

say ""
cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-)
say "== ptbpf hardware self-test: $(uname -r),$cpu"
for line in "${report[@]}"; do say "$line"; done
say "results in $out"
exit $failed
