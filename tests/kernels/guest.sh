#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# guest.sh: what tests/kernels/run.sh runs on each kernel (in QEMU, or on the host for
# the host's own kernel), from the top of the tree, as root. One line per check:
# "ok NAME: detail", "FAIL NAME: detail" or "skip NAME: why". Exit 0 when nothing failed.
#   doctor     ptbpf doctor --json: each verdict against what this kernel has
#   dryrun.*   every trigger kind against programs with known call counts and latencies
#   singlestep a capture decoded to FXT, with the call chain the program makes
#   kcore      the kcore copy of --kernel against the live kernel's text (kcore_check)
# Env: BUILD (default build), PYTHON (python3).
set -u
BUILD=${BUILD:-build}
P=$BUILD/ptbpf T=$BUILD/targets
PY=${PYTHON:-python3}
W=$(mktemp -d "${TMPDIR:-/tmp}/ptbpf-kernel.XXXXXX")
trap 'rm -rf "$W"' EXIT
failed=0
ok() { echo "ok $1: $2"; }
fail() { echo "FAIL $1: $2"; failed=1; }
skip() { echo "skip $1: $2"; }
release=$(uname -r)
echo "kernel $release"

# ---- doctor -------------------------------------------------------------------
if ! "$P" doctor --json > "$W/doctor.json" 2> "$W/doctor.err" &&
   ! [ -s "$W/doctor.json" ]; then
	fail doctor "ptbpf doctor --json failed: $(head -c 300 "$W/doctor.err")"
else
	# expected verdicts, from the kernel's version and its files, not from ptbpf
	"$PY" - "$W/doctor.json" <<'PY' || failed=1
import json, os, platform, re, sys
d = json.load(open(sys.argv[1]))
rel = platform.release()
ver = tuple(int(x) for x in re.match(r"(\d+)\.(\d+)", rel).groups())
btf = os.path.exists("/sys/kernel/btf/vmlinux")
tfs = next((p for p in ("/sys/kernel/tracing", "/sys/kernel/debug/tracing")
            if os.path.exists(p + "/events")), None)
kprobes = os.path.exists("/sys/bus/event_source/devices/kprobe") or \
    bool(tfs and os.path.exists(tfs + "/kprobe_events"))
# aux_pause came in 6.13, and some distributions carry it earlier (Debian 13's 6.12):
# the kernel has it when its code does
try:
    aux_pause = any(l.split()[2] == "perf_event_aux_pause" for l in open("/proc/kallsyms")
                    if len(l.split()) >= 3)
except OSError:
    aux_pause = ver >= (6, 13)
expect = {
    "kernel": ver >= (5, 8),
    "btf": btf,
    "bpf_prog_load": True,
    "bpf_ringbuf": ver >= (5, 8),
    "uprobe_attach": True,
    "tracepoint_attach": True,
    "tp_btf_attach": btf and ver >= (5, 5),
    "kprobe_attach": kprobes,
    "bpf_atomics": ver >= (5, 12),
    "task_storage": ver >= (5, 12),
    "trigger_programs": ver >= (5, 8),
    "aux_pause": aux_pause,
    "intel_pt": os.path.exists("/sys/bus/event_source/devices/intel_pt"),
    # --filter: address ranges on CPU-wide PT events (5.18), on a CPU that has ranges
    "pt_filter": os.path.exists("/sys/bus/event_source/devices/intel_pt/caps/num_address_ranges")
                 and open("/sys/bus/event_source/devices/intel_pt/caps/num_address_ranges").read().strip() not in ("", "0")
                 and ver >= (5, 18),
    "kcore": os.access("/proc/kcore", os.R_OK),
    "backend_singlestep": True,
}
bad = 0
if d["kernel"]["release"] != rel:
    print("FAIL doctor.kernel: release %s, uname says %s" % (d["kernel"]["release"], rel))
    bad = 1
for key, want in expect.items():
    c = d["checks"].get(key)
    if c is None:
        print("FAIL doctor.%s: no such check" % key)
        bad = 1
    elif c["present"] != want:
        print("FAIL doctor.%s: %s, expected %s on Linux %s: %s" % (
            key, c["present"], want, rel, c["evidence"]))
        bad = 1
    else:
        print("ok doctor.%s: %s (%s)" % (key, "present" if want else "absent", c["evidence"][:110]))
sys.exit(bad)
PY
fi

# ---- dry runs -------------------------------------------------------------------
# dry NAME ARGS...: ptbpf --dry-run ARGS, output in $W/NAME.out / .err, status in RC
dry() {
	local name=$1; shift
	"$P" --dry-run "$@" > "$W/$name.out" 2> "$W/$name.err" < /dev/null
	RC=$?
}
# fires NAME CHECK: the JSON fires of NAME checked by the Python expression CHECK over
# `f` (the list of fires); prints a summary, or the fires on failure
fires() {
	"$PY" - "$W/$1.out" "$2" <<'PY'
import json, sys
f = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
if not eval(sys.argv[2]):
    print("fires: %s" % json.dumps(f[:4]))
    sys.exit(1)
lat = [x["latency_ns"] for x in f if "latency_ns" in x]
print("%d fires%s" % (len(f), " latency %.2f-%.2f ms" % (min(lat) / 1e6, max(lat) / 1e6) if lat else ""))
PY
}
# expect NAME WHAT CHECK: the dry run NAME exited 0 and its fires pass CHECK
expect() {
	local out
	if [ "$RC" != 0 ]; then
		fail "dryrun.$1" "exit $RC: $(grep -m3 '^ptbpf:' "$W/$1.err" | tr '\n' ' ')"
	elif out=$(fires "$1" "$3"); then
		ok "dryrun.$1" "$2: $out"
	else
		fail "dryrun.$1" "$2: $out"
	fi
}

dry uprobe --uprobe "$T/cap_chain:leaf" --max-snapshots 100 -- "$T/cap_chain" -n 5
expect uprobe "leaf() called 5 times" \
	'len(f) == 5 and all(x["kind"] == "uprobe" and x["sym"] == "leaf" and x["comm"] == "cap_chain" for x in f)'
dry nth --uprobe "$T/cap_chain:leaf" --nth 2 --max-snapshots 2 -- "$T/cap_chain" -n 5
expect nth "--nth 2 --max-snapshots 2 of 5 calls" '[x["seq"] for x in f] == [2, 3]'
dry uprobe_latency --uprobe "$T/cap_chain:level1" --latency-over 100ms --max-snapshots 100 \
	-- "$T/cap_chain" -n 5 -s 3
expect uprobe_latency "1 of 5 level1() calls sleeps 300 ms" \
	'len(f) == 1 and f[0]["kind"] == "uprobe_latency" and f[0]["func"] == "level1" and 3e8 <= f[0]["latency_ns"] < 3e9'
dry runq --latency-over 1ms --max-snapshots 1000 -- "$T/trig_runq" -c 0 -h -n 50
# fires in ptbpf's own child before exec ("comm":"ptbpf") are issue 15's: not counted
expect runq "a thread sharing its CPU with two busy ones" \
	'sum(x["kind"] == "runq_latency" and x["comm"] == "trig_runq" and x["latency_ns"] > 1e6 for x in f) >= 5 and all(x["comm"] in ("trig_runq", "ptbpf") for x in f)'
dry syscall --syscall-latency-over 4ms --syscall nanosleep --max-snapshots 100 -- "$T/trig_sleep" -n 3 -s 5000
expect syscall "3 nanosleep(5 ms) among 600 getppid()" \
	'len(f) == 3 and all(x["syscall"] == "nanosleep" and x["latency_ns"] >= 5e6 for x in f)'
dry tracepoint --tracepoint syscalls:sys_enter_clock_nanosleep --max-snapshots 100 -- "$T/trig_sleep" -n 3 -s 1000
expect tracepoint "3 clock_nanosleep(CLOCK_MONOTONIC) calls" \
	'len(f) == 3 and all(x["kind"] == "tracepoint" and x["arg0"] == "0xe6" and x["arg1"] == "0x1" for x in f)'
dry kprobe --kprobe do_nanosleep --max-snapshots 100 -- "$T/trig_sleep" -n 3 -s 1000
if [ -e /sys/bus/event_source/devices/kprobe ] || [ -e /sys/kernel/tracing/kprobe_events ]; then
	# each fire names its kernel address from /proc/kallsyms ("do_nanosleep+0x4" or so)
	expect kprobe "do_nanosleep() entered by 3 nanosleep and 3 clock_nanosleep" \
		'len(f) == 6 and all(x["kind"] == "kprobe" and x["comm"] == "trig_sleep" and x.get("sym", "").split("+")[0] == "do_nanosleep" for x in f)'
elif [ "$RC" = 2 ] && grep -q "this kernel has no kprobes" "$W/kprobe.err"; then
	skip dryrun.kprobe "this kernel has no kprobes (refused with: $(grep -m1 '^ptbpf:' "$W/kprobe.err"))"
else
	fail dryrun.kprobe "no kprobes here, but not the refusal: exit $RC $(head -c 300 "$W/kprobe.err")"
fi

# ---- a singlestep capture, decoded -------------------------------------------------
# pd_calls: no libc, a few dozen instructions (single-stepping is slow under TCG)
"$P" --backend singlestep --uprobe "$T/pd_calls:leaf" --keep-capture="$W/ss.data" \
	-o "$W/ss.fxt" -- "$T/pd_calls" > "$W/ss.out" 2> "$W/ss.err" < /dev/null
RC=$?
if [ "$RC" != 0 ] || [ ! -s "$W/ss.fxt" ]; then
	fail singlestep "exit $RC: $(grep -m3 '^ptbpf:' "$W/ss.err" | tr '\n' ' ')"
elif ! "$P" decode "$W/ss.data" --format text -o "$W/ss.txt" 2> "$W/ss-decode.err"; then
	fail singlestep "decode: $(head -c 300 "$W/ss-decode.err")"
elif ! awk '$2 == "_start" { s = $1 + 1 } $2 == "a" && $1 == s { a = $1 + 1 }
	    $2 == "b" && $1 == a { b = 1 } END { exit !b }' "$W/ss.txt"; then
	fail singlestep "no _start > a > b in the decoded trace: $(head -c 400 "$W/ss.txt")"
else
	ok singlestep "$(grep -m1 'covers' "$W/ss.err" | sed 's/^ *//'); FXT $(stat -c %s "$W/ss.fxt") bytes"
fi

# ---- the kcore copy against the live kernel ------------------------------------------
if [ ! -r /proc/kcore ]; then
	skip kcore "this kernel has no /proc/kcore"
elif out=$("$BUILD/kernels/kcore_check" "$W/kcore" vfs_read do_nanosleep schedule \
	   ksys_write __x64_sys_getpid 2>&1); then
	ok kcore "$(echo "$out" | tail -1)"
	echo "$out" | sed '$d; s/^/    /'
else
	fail kcore "$out"
fi
exit $failed
