#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Conditions enforced in the kernel: --nth, --max-snapshots, --cooldown, --warmup.
. "$(dirname "$0")/triggers_common.inc"
need_bpf
T=$TARGETS/trig_slow

# One thread, so that "the Nth hit" is the Nth call.
run_fg nth --dry-run --uprobe "$T:slow_path" --nth 3 --max-snapshots 2 -v -- "$T" -t 1 -n 20
[ $RC = 0 ] || fail "nth: exit $RC: $(cat "$TMP/nth.err")"
[ "$(fires nth | "$PYTHON" -c 'import json,sys; print([(int(json.loads(l)["arg0"],16), json.loads(l)["seq"]) for l in sys.stdin])')" = "[(2, 3), (3, 4)]" ] ||
	fail "--nth 3 --max-snapshots 2 fired for $(fires nth)"
grep -q "20 hits, 20 qualifying, 2 fired, 18 suppressed" "$TMP/nth.err" ||
	fail "nth counters: $(grep hits "$TMP/nth.err")"

# The same with a latency condition: the 3rd and 4th slow calls (45 and 66).
run_fg nthlat --dry-run --uprobe "$T:slow_path" --latency-over 4ms --nth 3 --max-snapshots 2 \
	-- "$T" -t 1 -s 6000
[ $RC = 0 ] || fail "nth latency: exit $RC"
# A fast call preempted between its probes (a busy machine) qualifies too, and then it
# counts: the fires are the 3rd and 4th of the qualifying calls, which are the slow ones
# and maybe some the target itself saw take more than 4 ms.
"$PYTHON" - "$TMP/nthlat.out" <<'PY' || fail "latency --nth 3 --max-snapshots 2 fired for $(fires nthlat)"
import json, sys
lines = open(sys.argv[1]).read().splitlines()
calls = [c.split() for c in lines if c.startswith("call ")]
slow = [int(c[1]) for c in calls if c[9] == "1"]
maybe = [int(c[1]) for c in calls if c[9] == "1" or int(c[11]) > 4e6]
fires = [json.loads(l) for l in lines if l.startswith("{")]
got = [int(f["arg0"], 16) for f in fires]
assert [f["seq"] for f in fires] == [3, 4], "seq %s" % [f["seq"] for f in fires]
assert all(i in maybe for i in got), "fired for calls %s, qualifying at most %s" % (got, maybe)
a, b = got
assert len([i for i in slow if i < a]) <= 2 <= len([i for i in maybe if i < a]), "not the 3rd: %s" % got
assert not [i for i in slow if a < i < b], "not the 4th: %s" % got
print("fired for calls", got, "(slow calls: %s)" % slow)
PY

# --cooldown 20ms over calls 2 ms apart: fires at least 20 ms apart, and a call that
# came after a cooldown ran out fired. Held against the calls' own start times (the
# target prints them on CLOCK_MONOTONIC, bpf_ktime_get_ns's clock), not against how
# long the run should take: a loaded machine stretches the run, not the rule.
run_fg cool --dry-run --uprobe "$T:slow_path" --cooldown 20ms -v -- "$T" -t 1 -n 60 -i 2000
[ $RC = 0 ] || fail "cooldown: exit $RC"
"$PYTHON" - "$TMP/cool.out" <<'PY' || fail "cooldown"
import json, sys
lines = open(sys.argv[1]).read().splitlines()
fires = [json.loads(l) for l in lines if l.startswith("{")]
fired = {int(f["arg0"], 16) for f in fires}
# (index, first instant before the probe, last instant after it) of each call
calls = [(int(c[1]), int(c[5]), int(c[5]) + int(c[11]))
         for c in (l.split() for l in lines if l.startswith("call "))]
times = [f["time_ns"] for f in fires]
gaps = [b - a for a, b in zip(times, times[1:])]
assert len(fires) >= 2, "%d fires" % len(fires)
assert min(gaps) >= 20e6, "fires %d ns apart" % min(gaps)
# A call that did not fire, whose probe surely ran after a fire's cooldown ended and
# before the next fire, was wrongly suppressed. 1 ms covers the two clocks' reads.
slack = 1e6
for a, b in zip(times, times[1:] + [float("inf")]):
    missed = [i for i, t0, t1 in calls if i not in fired and t0 > a + 20e6 + slack and t1 < b]
    assert not missed, "call %d came after the cooldown and did not fire" % missed[0]
print("%d fires, smallest gap %.1f ms" % (len(fires), min(gaps) / 1e6))
PY

# --cooldown across CPUs: two threads hitting at once on two CPUs fire once, not twice
# (the cooldown is claimed atomically, not read then written).
run_fg cool2 --dry-run --uprobe "$T:slow_path" --cooldown 10s -v -- "$T" -t 2 -n 4000
[ $RC = 0 ] || fail "cooldown, two threads: exit $RC"
n=$(fires cool2 | wc -l)
[ "$n" = 1 ] || fail "--cooldown 10s with two threads fired $n times"
grep -Eq "4000 hits, [12] qualifying, 1 fired, 3999 suppressed" "$TMP/cool2.err" ||
	fail "cooldown counters: $(grep hits "$TMP/cool2.err")"

# --warmup 1s: the calls of the first second do not fire, every later one does. Warmup
# counts from arming, before the target's exec: 1 s leaves room for a slow start on a
# loaded machine, and 800 calls 2 ms apart run past it.
run_fg warm --dry-run --uprobe "$T:slow_path" --warmup 1s -- "$T" -t 1 -n 800 -i 2000
[ $RC = 0 ] || fail "warmup: exit $RC"
"$PYTHON" - "$TMP/warm.out" <<'PY' || fail "warmup"
import json, sys
lines = open(sys.argv[1]).read().splitlines()
calls = {int(c[1]): int(c[5]) for c in (l.split() for l in lines if l.startswith("call "))}
fired = {int(json.loads(l)["arg0"], 16) for l in lines if l.startswith("{")}
first = min(calls.values())
assert fired and len(fired) < len(calls), "%d of %d calls fired" % (len(fired), len(calls))
assert min(fired) == max(set(calls) - fired) + 1, "not a prefix of calls ignored: %s" % sorted(fired)
late = {i for i, t in calls.items() if t > first + 1e9}
assert late <= fired, "calls after the warmup did not fire: %s" % sorted(late - fired)
print("calls 0..%d ignored, %d fired" % (min(fired) - 1, len(fired)))
PY
echo PASS
