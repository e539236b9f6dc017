#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# --syscall-latency-over: 5 ms sleeps caught by name (nanosleep, clock_nanosleep), the
# fast getppid() calls around them not; tp fallback too.
. "$(dirname "$0")/triggers_common.inc"
need_bpf
T=$TARGETS/trig_sleep

check() { # name syscall-names expected-count-of-each
	"$PYTHON" - "$TMP/$1.out" "$2" "$3" <<'PY' || fail "$1"
import json, sys
fires = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
want = sys.argv[2].split(",")
for name in want:
    n = sum(f["syscall"] == name for f in fires)
    assert n == int(sys.argv[3]), "%d %s fires, expected %s" % (n, name, sys.argv[3])
assert all(4e6 < f["latency_ns"] < 1e9 for f in fires)
assert not any(f["syscall"] == "getppid" for f in fires), "a fast getppid() fired"
# without --syscall, another call of the target may really take 4 ms on a busy machine
others = sorted({f["syscall"] for f in fires} - set(want))
print("%d fires: %s%s" % (len(fires), want, ", also slow: %s" % others if others else ""))
PY
}
run_fg ns --dry-run --syscall-latency-over 4ms --syscall nanosleep -- "$T" -n 5
[ $RC = 0 ] || fail "nanosleep: exit $RC: $(cat "$TMP/ns.err")"
check ns nanosleep 5
run_fg cns --dry-run --syscall-latency-over 4ms --syscall clock_nanosleep -- "$T" -n 5
[ $RC = 0 ] || fail "clock_nanosleep: exit $RC"
check cns clock_nanosleep 5
run_fg any --dry-run --syscall-latency-over 4ms -- "$T" -n 5
[ $RC = 0 ] || fail "any syscall: exit $RC"
check any clock_nanosleep,nanosleep 5
# Two syscall triggers at once, each fires with its own index.
run_fg two --dry-run --syscall-latency-over 4ms --syscall nanosleep \
	--syscall-latency-over 4ms --syscall clock_nanosleep -- "$T" -n 3
[ $RC = 0 ] || fail "two triggers: exit $RC"
[ "$(fires two | grep -c '"trigger":0,.*"syscall":"nanosleep"')" = 3 ] &&
	[ "$(fires two | grep -c '"trigger":1,.*"syscall":"clock_nanosleep"')" = 3 ] ||
	fail "two triggers: $(fires two)"
# The tracepoint fallback (kernels without tp_btf) finds the same.
PTBPF_NO_TP_BTF=1 run_fg tp --dry-run --syscall-latency-over 4ms --syscall nanosleep -v -- "$T" -n 5
[ $RC = 0 ] || fail "tp fallback: exit $RC"
grep -q "tp fallback" "$TMP/tp.err" || fail "tp fallback not used: $(cat "$TMP/tp.err")"
check tp nanosleep 5
echo PASS
