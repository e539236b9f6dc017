#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# --dry-run with --uprobe: fires from every thread, latency at the return, Ctrl-C, -p PID.
. "$(dirname "$0")/triggers_common.inc"
need_bpf
T=$TARGETS/trig_slow

# 100 calls from 4 threads: 100 fires, from more than one thread, at slow_path's address.
run_fg all --dry-run --uprobe "$T:slow_path" -- "$T"
[ $RC = 0 ] || fail "dry run exited $RC: $(cat "$TMP/all.err")"
"$PYTHON" - "$TMP/all.out" <<'PY' || fail "uprobe fires wrong"
import json, sys
lines = open(sys.argv[1]).read().splitlines()
addr = int([l for l in lines if l.startswith("slow_path ")][0].split()[1], 16)
calls = [l.split() for l in lines if l.startswith("call ")]
fires = [json.loads(l) for l in lines if l.startswith("{")]
tids_target = {int(c[3]) for c in calls}
assert len(fires) == 100, "expected 100 fires, got %d" % len(fires)
assert sorted(int(f["arg0"], 16) for f in fires) == list(range(100)), "arg0 is not the call index"
tids = {f["tid"] for f in fires}
assert tids == tids_target and len(tids) == 4, "fires from threads %s, target threads %s" % (tids, tids_target)
assert all(int(f["ip"], 16) == addr for f in fires), "ip is not slow_path's address"
assert sorted(f["seq"] for f in fires) == list(range(1, 101)), "seq not 1..100"
assert all(f["kind"] == "uprobe" and f["trigger"] == 0 for f in fires)
print("100 fires from %d threads at 0x%x" % (len(tids), addr))
PY

# --latency-over 1ms: exactly the 5 slow calls, latency within 10% of the target's own.
run_fg lat --dry-run --uprobe "$T:slow_path" --latency-over 1ms -v -- "$T" -i 2000
[ $RC = 0 ] || fail "latency dry run exited $RC: $(cat "$TMP/lat.err")"
"$PYTHON" - "$TMP/lat.out" <<'PY' || fail "latency fires wrong"
import json, sys
lines = open(sys.argv[1]).read().splitlines()
addr = int([l for l in lines if l.startswith("slow_path ")][0].split()[1], 16)
calls = {int(c[1]): c for c in (l.split() for l in lines if l.startswith("call "))}
fires = [json.loads(l) for l in lines if l.startswith("{")]
idx = sorted(int(f["arg0"], 16) for f in fires)
slow = [3, 24, 45, 66, 87]
# A fast call preempted between its entry and its return (a busy machine) is slow too:
# allowed only if the target itself saw it take more than 1 ms around the call.
extra = [i for i in idx if i not in slow]
assert all(i in idx for i in slow), "fired for calls %s, expected the 5 slow ones" % idx
assert all(int(calls[i][11]) > 1e6 for i in extra), "fast calls fired: %s" % extra
if extra:
    print("preempted fast calls also fired (the target saw them slow too):", extra)
for f in fires:
    c = calls[int(f["arg0"], 16)]
    own, outer = int(c[7]), int(c[11])
    if c[1] in map(str, extra):
        continue
    # within 10% of the function's own measurement, unless the call was disturbed from
    # outside (preempted), where it must lie between the inner and the outer measurement
    ok = abs(f["latency_ns"] - own) <= own * 0.10 or own <= f["latency_ns"] <= outer
    assert ok, "call %s: %d ns vs own %d ns (outer %d)" % (c[1], f["latency_ns"], own, outer)
    assert f["tid"] == int(c[3]), "call %s: tid %d, target says %s" % (c[1], f["tid"], c[3])
    assert int(f["func_ip"], 16) == addr
    assert f["kind"] == "uprobe_latency" and f["func"] == "slow_path"
print("5 latency fires within 10%:", [(int(f["arg0"], 16), f["latency_ns"]) for f in fires])
PY
n=$(fires lat | wc -l)
grep -q "100 hits, $n qualifying, $n fired, 0 suppressed" "$TMP/lat.err" ||
	fail "-v counters: $(grep 'hits' "$TMP/lat.err")"

# Ctrl-C ends a dry run cleanly (exit 0), probes removed.
"$T" -n 100000 -i 1000 -t 1 >/dev/null &
target=$!
run_bg sigint --dry-run --uprobe "$T:slow_path" -p $target
# Ctrl-C once more than 10 fires are out (attaching can take seconds on a loaded
# machine), bounded at 60 s.
for _ in $(seq 600); do
	[ "$(fires sigint 2>/dev/null | wc -l)" -gt 10 ] && break
	kill -0 $RUN_PID 2>/dev/null || break
	sleep 0.1
done
kill -INT $RUN_PID
wait $RUN_PID
rc=$?
[ $rc = 0 ] || fail "after Ctrl-C: exit $rc: $(cat "$TMP/sigint.err")"
check_no_leaks $RUN_PID
[ "$(fires sigint | wc -l)" -gt 10 ] || fail "-p $target: too few fires before Ctrl-C"

# -p PID with --max-snapshots: ends after that many fires, the target runs on.
run_fg max -p $target --dry-run --uprobe "$T:slow_path" --max-snapshots 3
[ $RC = 0 ] || fail "-p with --max-snapshots exited $RC: $(cat "$TMP/max.err")"
[ "$(fires max | wc -l)" = 3 ] || fail "expected 3 fires, got $(fires max | wc -l)"
kill -0 $target || fail "the target died"
kill $target
wait $target 2>/dev/null
echo "PASS"
