#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# ptbpf doctor on this host and on fake sysfs trees (tests/data/sysfs-*): what it says
# must match what the host really has, checked here by independent means.
set -u
: "${PTBPF:?}" "${TOP:?}" "${BUILD:?}" "${PYTHON:=python3}"
tmp=$(mktemp -d "/tmp/ptbpf-doctor-$$-XXXX")
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
data=$TOP/tests/data
root=false
[ "$(id -u)" -eq 0 ] && root=true

# Assertions on doctor's JSON, one Python run per file (Python starts slowly here):
# each stdin line is "EXPRESSION  # MESSAGE", with d = the document, c = d["checks"].
check_json() {
	"$PYTHON" - "$1" <<PY || fail "$1: see above"
import json, sys
d = json.load(open(sys.argv[1]))
c = d["checks"]
bad = 0
for line in """$(cat)""".splitlines():
    line = line.strip()
    if not line:
        continue
    expr, _, msg = line.partition("  # ")
    if not eval(expr):
        print("FAIL: " + (msg or expr) + "\n  (" + expr + ")")
        bad += 1
if bad:
    print(json.dumps(d, indent=1)[:3000])
sys.exit(1 if bad else 0)
PY
}

# --- this host ---------------------------------------------------------------
"$PTBPF" doctor >"$tmp/text" 2>"$tmp/err"
rc=$?
cat "$tmp/text"
[ "$rc" -eq 0 ] || [ "$rc" -eq 1 ] || fail "doctor exited $rc"
[ -s "$tmp/err" ] && { cat "$tmp/err"; fail "doctor wrote to stderr"; }
grep -q '^  present kernel ' "$tmp/text" || fail "no kernel line"
n_text=$(grep -c '^  \(present\|absent \) ' "$tmp/text")

"$PTBPF" doctor --json >"$tmp/host.json" || [ $? -eq 1 ] || fail "doctor --json failed"
"$PYTHON" -m json.tool "$tmp/host.json" >/dev/null || fail "--json does not parse"

no_pmu=False kcore=True kprobes_off=False
[ -e /sys/bus/event_source/devices/intel_pt ] || no_pmu=True
[ -e /proc/kcore ] || kcore=False
zcat /proc/config.gz 2>/dev/null | grep -q '^# CONFIG_KPROBES is not set' && kprobes_off=True
btf_aux=False
bpftool btf dump file /sys/kernel/btf/vmlinux format raw 2>/dev/null | grep -q "'aux_pause'" &&
	btf_aux=True
is_root=False
$root && is_root=True

check_json "$tmp/host.json" <<EOF2
d['exit_status'] == $rc  # exit status differs between text and JSON
(d['exit_status'] == 0) == (d['backends']['pt']['usable'] or d['backends']['singlestep']['usable'])  # exit status does not follow the backends
all(set(v) == {'present', 'evidence', 'fix'} for v in c.values())  # a check with other keys than present/evidence/fix
all(v['present'] or v['evidence'] for v in c.values())  # an absent check without evidence
len(c) == $n_text  # text and JSON list different numbers of checks
not $no_pmu or (not c['intel_pt']['present'] and not d['intel_pt']['present'])  # intel_pt present without the PMU
not $no_pmu or '/sys/bus/event_source/devices/intel_pt' in c['intel_pt']['evidence']  # intel_pt evidence does not name the sysfs path
not $no_pmu or (not d['backends']['pt']['usable'] and c['intel_pt']['fix'])  # pt usable without a PMU, or no fix
not $no_pmu or d['default_backend'] == ('singlestep' if d['backends']['singlestep']['usable'] else None)  # wrong default backend
c['aux_pause']['present'] == $btf_aux  # aux_pause disagrees with bpftool btf dump
$btf_aux or d['freeze']['pt_path'] == 'disable_ioctl'  # in-kernel freeze without aux_pause
$kcore or not c['kcore']['present']  # kcore present without /proc/kcore
not $kprobes_off or (not c['kprobe_attach']['present'] and 'CONFIG_KPROBES' in c['kprobe_attach']['evidence'] and 'CONFIG_KPROBES' in c['kprobe_attach']['fix'])  # kprobes: the missing kernel option is not named
not $is_root or all(c[k]['present'] for k in ('btf', 'bpf_prog_load', 'bpf_ringbuf', 'uprobe_attach', 'tracefs', 'tracepoint_attach', 'tp_btf_attach', 'ptrace', 'backend_singlestep', 'cap_bpf', 'cap_perfmon'))  # a feature every supported kernel gives root is absent
not $is_root or 'record arrived' in c['bpf_ringbuf']['evidence']  # the ring buffer did not carry the uprobe's record
EOF2

# --- fake trees -----------------------------------------------------------------
IFS=. read -r kmaj kmin _ < <(uname -r)
kmin=${kmin%%[!0-9]*}
PTBPF_SYSFS_ROOT=$data/sysfs-skylake "$PTBPF" doctor --json >"$tmp/sky.json" || fail "skylake: exit $?"
check_json "$tmp/sky.json" <<EOF2
c['intel_pt']['present'] and d['intel_pt']['type'] == 8  # skylake: PMU
d['intel_pt']['caps']['mtc_periods'] == 0x249 and d['intel_pt']['caps']['num_address_ranges'] == 2 and d['intel_pt']['caps']['psb_cyc'] == 1  # skylake: caps
d['intel_pt']['max_nonturbo_ratio'] == 40 and d['intel_pt']['tsc_art_ratio'] == {'num': 334, 'den': 2}  # skylake: timing
'mtc_periods=0x249' in c['intel_pt_caps']['evidence'] and 'psb_cyc=1' in c['intel_pt_caps']['evidence']  # skylake: caps line
d['sysfs_root'].endswith('sysfs-skylake')  # skylake: sysfs_root
c['pt_filter']['present'] == (($kmaj, $kmin) >= (5, 18)) and ('2 address ranges' in c['pt_filter']['evidence'] or '5.18' in c['pt_filter']['fix'])  # skylake: --filter needs 2+ ranges and Linux 5.18
not $is_root or (d['backends']['pt']['usable'] and d['default_backend'] == 'pt' and d['freeze']['path'] == d['freeze']['pt_path'])  # skylake: pt should be the default backend
EOF2

# the hidden option does what the environment variable does
"$PTBPF" doctor --json --sysfs-root "$data/sysfs-broadwell" >"$tmp/bdw.json" || fail "broadwell: exit $?"
check_json "$tmp/bdw.json" <<EOF2
d['intel_pt']['type'] == 7 and d['intel_pt']['caps']['psb_cyc'] == 0  # broadwell: caps
d['intel_pt']['caps']['ptwrite'] is None and 'ptwrite=missing' in c['intel_pt_caps']['evidence']  # broadwell: ptwrite is missing on that kernel
d['intel_pt']['tsc_art_ratio'] == {'num': 0, 'den': 0} and 'not enumerated' in c['intel_pt_timing']['evidence']  # broadwell: tsc_art_ratio 0:0
not c['pt_filter']['present'] and 'num_address_ranges=0' in c['pt_filter']['evidence']  # broadwell: no address ranges, no --filter
EOF2

PTBPF_SYSFS_ROOT=$data/sysfs-missing-cap "$PTBPF" doctor --json >"$tmp/mc.json" || fail "missing-cap: exit $?"
check_json "$tmp/mc.json" <<EOF2
d['intel_pt']['caps']['mtc_periods'] is None  # missing-cap: the missing cap
not c['intel_pt_timing']['present'] and c['intel_pt_timing']['fix']  # missing-cap: missing timing files
EOF2

PTBPF_SYSFS_ROOT=$data/sysfs-nopt "$PTBPF" doctor --json >"$tmp/nopt.json" || [ $? -eq 1 ] || fail "nopt: exit $?"
check_json "$tmp/nopt.json" <<EOF2
not c['intel_pt']['present'] and 'sysfs-nopt/bus/event_source/devices/intel_pt does not exist' in c['intel_pt']['evidence']  # nopt: the absent PMU and its path
not d['backends']['pt']['usable'] and d['backends']['pt']['why'].startswith('no Intel PT PMU') and 'fix: ' in d['backends']['pt']['why']  # nopt: the pt backend's reason
d['intel_pt']['caps'] is None and not c['intel_pt_caps']['present']  # nopt: caps
EOF2

# --- usage ----------------------------------------------------------------------
"$PTBPF" doctor --bogus >"$tmp/out" 2>&1
[ $? -eq 2 ] || fail "unknown option: want exit 2"
[ "$(wc -l <"$tmp/out")" -eq 1 ] || { cat "$tmp/out"; fail "unknown option: want one line"; }
grep -q -- "--bogus" "$tmp/out" || fail "unknown option not named"
"$PTBPF" doctor extra >"$tmp/out" 2>&1
[ $? -eq 2 ] || fail "extra argument: want exit 2"
"$PTBPF" doctor --help >"$tmp/out" 2>&1 || fail "--help failed"
grep -q -- "--json" "$tmp/out" && grep -q "Examples:" "$tmp/out" || fail "--help lacks --json or examples"
grep -q -- "--sysfs-root" "$tmp/out" && fail "--help shows the hidden test option"

# --- a host where nothing can capture: no PT PMU, and ptrace forbidden by a seccomp
# filter (as under Docker's default profile).
no_ptrace=$BUILD/targets/no_ptrace
[ -x "$no_ptrace" ] || fail "missing $no_ptrace (make targets)"
# With make test SANITIZE=1: LeakSanitizer stops the process's threads with ptrace to scan
# them, which this filter forbids (a fatal error at exit); leaks are checked everywhere else.
export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0
PTBPF_SYSFS_ROOT=$data/sysfs-nopt "$no_ptrace" "$PTBPF" doctor --json >"$tmp/none.json" 2>"$tmp/none.err"
rc=$?
[ "$rc" -eq 1 ] || { cat "$tmp/none.err"; fail "no backend: want exit 1, got $rc"; }
check_json "$tmp/none.json" <<EOF2
d['exit_status'] == 1 and d['default_backend'] is None and d['freeze']['path'] == 'none' and not c['freeze_path']['present']  # no backend: not reported as such
not c['ptrace']['present'] and 'PTRACE_SEIZE' in c['ptrace']['evidence'] and 'seccomp' in c['ptrace']['evidence'] and c['ptrace']['fix']  # no backend: the ptrace failure is not explained
not d['backends']['singlestep']['usable'] and 'PTRACE_SEIZE' in d['backends']['singlestep']['why']  # no backend: singlestep's reason
EOF2
PTBPF_SYSFS_ROOT=$data/sysfs-nopt "$no_ptrace" "$PTBPF" doctor >"$tmp/none.txt" 2>&1
[ $? -eq 1 ] || fail "no backend (text): want exit 1"
grep -q "^No backend can capture on this host" "$tmp/none.txt" || fail "no backend: no summary line"
echo "doctor: all checks passed"
