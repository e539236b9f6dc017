#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# The triggers as they run on kernels before 5.12 (Debian 11's 5.10), forced here with
# PTBPF_NO_BPF_ATOMICS=1 and PTBPF_NO_TASK_STORAGE=1: the object built without BPF
# atomics, the run queue on tp programs and a hash, one program per trigger (no attach
# cookies). The same conditions and counts as with every feature; doctor reports the
# features absent and the trigger programs loading. (tests/kernels/ runs the real 5.10.)
. "$(dirname "$0")/triggers_common.inc"
need_bpf
export PTBPF_NO_BPF_ATOMICS=1 PTBPF_NO_TASK_STORAGE=1
T=$TARGETS

fires() { grep -c '^{' "$TMP/$1.out"; }

# two uprobe triggers at once: each fire names its own trigger (no cookie to tell them apart)
run_fg up --dry-run -v --uprobe "$T/cap_chain:leaf" --uprobe "$T/cap_chain:level2" \
	--max-snapshots 100 -- "$T/cap_chain" -n 4
[ $RC = 0 ] || fail "uprobes: exit $RC: $(cat "$TMP/up.err")"
grep -q "plain counters" "$TMP/up.err" || fail "not the object without atomics: $(grep triggers: "$TMP/up.err")"
"$PYTHON" - "$TMP/up.out" <<'PY' || fail "uprobe fires: $(head -c 600 "$TMP/up.out")"
import json, sys
f = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
assert len(f) == 8, len(f)
assert sorted(x["sym"] for x in f if x["trigger"] == 0) == ["leaf"] * 4
assert sorted(x["sym"] for x in f if x["trigger"] == 1) == ["level2"] * 4
assert [x["seq"] for x in f] == list(range(1, 9))
PY

# the conditions on plain counters: the 2nd and 3rd of 5 calls
run_fg nth --dry-run --uprobe "$T/cap_chain:leaf" --nth 2 --max-snapshots 2 -- "$T/cap_chain" -n 5
[ $RC = 0 ] || fail "--nth: exit $RC: $(cat "$TMP/nth.err")"
[ "$(grep -o '"seq":[0-9]*' "$TMP/nth.out" | tr '\n' ' ')" = '"seq":2 "seq":3 ' ] ||
	fail "--nth 2 --max-snapshots 2: $(cat "$TMP/nth.out")"

# latency triggers: the entry/return pair, syscalls, the run queue without task storage
run_fg lat --dry-run --uprobe "$T/cap_chain:level1" --latency-over 100ms --max-snapshots 10 \
	-- "$T/cap_chain" -n 4 -s 2
[ $RC = 0 ] && [ "$(fires lat)" = 1 ] || fail "uprobe latency: exit $RC, $(fires lat) fires"
run_fg sys --dry-run --syscall-latency-over 4ms --syscall nanosleep --max-snapshots 10 \
	-- "$T/trig_sleep" -n 3 -s 5000
[ $RC = 0 ] && [ "$(fires sys)" = 3 ] || fail "syscall latency: exit $RC, $(fires sys) fires"
cpu=$(( $(nproc) - 1 ))
run_fg runq --dry-run -v --latency-over 1ms --max-snapshots 1000 -- "$T/trig_runq" -c $cpu -h -n 100
[ $RC = 0 ] || fail "run queue: exit $RC: $(cat "$TMP/runq.err")"
grep -q "run queue tp," "$TMP/runq.err" || fail "the run queue did not use the tp programs"
[ "$(grep -c '"comm":"trig_runq"' "$TMP/runq.out")" -ge 10 ] || fail "run queue: $(fires runq) fires"

# doctor: the features absent, the trigger programs loading all the same
"$PTBPF" doctor --json > "$TMP/doctor.json" || true
"$PYTHON" - "$TMP/doctor.json" <<'PY' || fail "doctor: $(cat "$TMP/doctor.json")"
import json, sys
c = json.load(open(sys.argv[1]))["checks"]
assert not c["bpf_atomics"]["present"] and "5.12" in c["bpf_atomics"]["fix"]
assert not c["task_storage"]["present"] and "5.12" in c["task_storage"]["fix"]
assert c["trigger_programs"]["present"], c["trigger_programs"]
assert "plain counters" in c["trigger_programs"]["evidence"]
PY
echo PASS
