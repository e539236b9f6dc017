#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# --latency-over alone: run-queue latency of the target's threads. Two CPU-bound threads
# pinned with the target to one CPU make every thread wait; alone on the CPU, it hardly
# waits (other load on this shared machine may still delay it now and then).
. "$(dirname "$0")/triggers_common.inc"
need_bpf
T=$TARGETS/trig_runq
cpu=$(( $(nproc) - 1 ))

count() { # name: fires, checking that each is a thread of the target above 1 ms
	"$PYTHON" - "$TMP/$1.out" <<'PY'
import json, sys
lines = open(sys.argv[1]).read().splitlines()
tids = {int(l.split()[1]) for l in lines if l.startswith(("sleeper ", "hog "))}
fires = [json.loads(l) for l in lines if l.startswith("{")]
bad = [f for f in fires if f["tid"] not in tids or f["latency_ns"] <= 1e6 or f["kind"] != "runq_latency"
       or f.get("comm") != "trig_runq"]
assert not bad, "fires outside the target or below the threshold: %s" % bad[:3]
print(len(fires))
PY
}
run_fg hog --dry-run --latency-over 1ms -- "$T" -c $cpu -h -n 100
[ $RC = 0 ] || fail "with hogs: exit $RC: $(cat "$TMP/hog.err")"
hog=$(count hog) || fail "with hogs: $hog"
run_fg alone --dry-run --latency-over 1ms -- "$T" -c $cpu -n 100
[ $RC = 0 ] || fail "alone: exit $RC"
alone=$(count alone) || fail "alone: $alone"
echo "fires above 1 ms: $hog with two CPU hogs, $alone alone"
[ "$hog" -ge 20 ] || fail "with two hogs on the CPU only $hog fires"
[ "$alone" -le $((hog / 4)) ] || fail "alone on the CPU $alone fires (with hogs $hog)"
# Never ptbpf's own processes: the command before its exec is ptbpf's child, named
# "ptbpf", woken by the go-ahead; with a 1 us threshold its wait for a CPU always fired.
run_fg own --dry-run --latency-over 1us -- "$T" -n 3
[ $RC = 0 ] || fail "1 us: exit $RC: $(cat "$TMP/own.err")"
"$PYTHON" - "$TMP/own.out" <<'PY' || fail "a fire outside the program"
import json, sys
fires = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
bad = [f for f in fires if f.get("comm") != "trig_runq"]
assert fires and not bad, "fires in ptbpf's own processes: %s" % bad[:3]
PY
# tp fallback
PTBPF_NO_TP_BTF=1 run_fg tp --dry-run --latency-over 1ms -v -- "$T" -c $cpu -h -n 100
[ $RC = 0 ] || fail "tp fallback: exit $RC"
grep -q "tp fallback" "$TMP/tp.err" || fail "tp fallback not used"
tp=$(count tp) || fail "tp fallback: $tp"
[ "$tp" -ge 10 ] || fail "tp fallback: only $tp fires"
echo "tp fallback: $tp fires"
echo PASS
