#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# --tracepoint CAT:NAME: hits in the target's threads only (each of its 4 threads exits).
. "$(dirname "$0")/triggers_common.inc"
need_bpf
run_fg tp --dry-run --tracepoint sched:sched_process_exit -- "$TARGETS/trig_slow" -n 8
[ $RC = 0 ] || fail "exit $RC: $(cat "$TMP/tp.err")"
"$PYTHON" - "$TMP/tp.out" <<'PY' || fail "tracepoint fires"
import json, sys
lines = open(sys.argv[1]).read().splitlines()
tids = {int(c.split()[3]) for c in lines if c.startswith("call ")}
fires = [json.loads(l) for l in lines if l.startswith("{")]
assert {f["tid"] for f in fires} == tids and len(fires) == 4, "fires %s, threads %s" % (fires, tids)
assert all(f["kind"] == "tracepoint" for f in fires)
print("4 thread exits caught")
PY
echo PASS
