#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# --latency-over with --uprobe on a recursive function: each return is matched with its own
# entry (a per-thread stack of entry times), and calls nested deeper than the stack holds
# are counted, not mistaken for their callers.
. "$(dirname "$0")/triggers_common.inc"
need_bpf
T=$TARGETS/recurse

# fib(N) makes one call of fib(k) per path: the fires, counted by argument, are the call
# tree's: its calls at depth <= 8 (TRIGGER_MAX_DEPTH); fib(11) makes 287 calls, 78 of them
# deeper, which are counted as untimed. The longest call is fib(N): it holds all the others.
for n in 8 11; do
	run_fg fib$n --dry-run -v --uprobe "$T:fib" --latency-over 1ns -- "$T" $n
	[ $RC = 0 ] || fail "fib($n): exit $RC: $(cat "$TMP/fib$n.err")"
	"$PYTHON" - "$TMP/fib$n.out" $n <<'PY' || fail "fib($n): fires do not match the call tree"
import collections, json, sys
n = int(sys.argv[2])
want = collections.Counter()
def fib(k, depth):
    if depth <= 8:
        want[k] += 1
    if k >= 2:
        fib(k - 1, depth + 1)
        fib(k - 2, depth + 1)
fib(n, 1)
fires = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
got = collections.Counter(int(f["arg0"], 16) for f in fires)
assert got == want, "fires by argument %s, the call tree %s" % (sorted(got.items()), sorted(want.items()))
top = max(fires, key=lambda f: f["latency_ns"])
assert int(top["arg0"], 16) == n, "the longest call is fib(%d), not fib(%d)" % (int(top["arg0"], 16), n)
assert all(f["func"] == "fib" for f in fires)
print("fib(%d): %d fires, as the call tree" % (n, len(fires)))
PY
done
grep -q "78 calls nested deeper than 8 were not timed" "$TMP/fib11.err" ||
	fail "fib(11): the untimed deep calls are not counted: $(cat "$TMP/fib11.err")"
grep -q "not timed" "$TMP/fib8.err" && fail "fib(8): calls reported too deep"
echo PASS
