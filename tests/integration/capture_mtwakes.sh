#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Issue 15: cross-thread order on the singlestep clock (--clock mixed) for waits that no
# futex ends. mt_handoffs: in four phases a writer naps, then hands its reader a pipe
# write, a signal (pthread_kill, taken by sigwaitinfo), an eventfd write and a plain
# store to a flag the reader spins on. The reader blocks after stepping a few hundred
# instructions, so its own clock is behind the writer's when it waits. On the trace:
#  - each got_KIND() of the reader begins after the writer's send_KIND() began (the
#    handover happened in it): the wake, seen by the kernel side of the clock
#    (sched_waking), or the store, seen by the stepping order, orders them;
#  - and at most 1 ms after it: the reader's wait is the writer's time, not the real
#    time that stepping the writer took.
# Before: a wait lasted its real length from where the reader's clock stood, so every
# got_KIND() began tens of ms before its send_KIND(), and the flag's by the whole nap.
. "$(dirname "$0")/capture_common.inc"
need_singlestep
PROG=$BUILD/targets/mt_handoffs
PHASE_MS=600

cap handoffs -o "$TMP/handoffs.fxt" -- "$PROG" -p "$PHASE_MS"
[ "$RC" = 0 ] || { cat "$TMP/handoffs.err"; fail "exit $RC"; }
if grep -q "the kernel side of the clock is unavailable" "$TMP/handoffs.err"; then
	skip "$(grep -o 'the kernel side of the clock is unavailable ([^)]*)' "$TMP/handoffs.err")"
fi
fxt_ok "$TMP/handoffs.fxt"
$EVENTS "$TMP/handoffs.fxt" >"$TMP/handoffs.events"
"$PYTHON" - "$TMP/handoffs.out" "$TMP/handoffs.events" "$PHASE_MS" <<'PY' || fail "see above"
import collections, sys
out, events, phase_ms = sys.argv[1], sys.argv[2], int(sys.argv[3])
tids, blocked = {}, {}
for l in open(out):
    f = l.split()
    if f[0] in ("reader", "writer"):
        tids[f[0]] = f[1]
    elif f[0] == "blocked":
        blocked[f[1]] = int(f[2])
assert set(tids) == {"reader", "writer"}, f"the program named {tids}"
begins = collections.defaultdict(list)
for l in open(events):
    f = l.split()
    if len(f) >= 5 and f[2] in ("begin", "complete"):
        begins[(f[1], f[4])].append(int(f[3]))
for kind in ("pipe", "signal", "eventfd", "flag"):
    # the handover is only a wake if the reader waited: untraced it waits a whole nap
    assert blocked[kind] >= phase_ms * 1e6 / 4, \
        f"{kind}: the reader waited only {blocked[kind] / 1e6:.1f} ms (stepping too slow for -p {phase_ms})"
    send = begins[(tids["writer"], "send_" + kind)]
    got = begins[(tids["reader"], "got_" + kind)]
    assert len(send) == 1 and len(got) == 1, f"{kind}: {len(send)} send, {len(got)} got slices"
    lag = (got[0] - send[0]) / 1e6
    assert lag > 0, f"{kind}: got_{kind}() begins {-lag:.3f} ms before send_{kind}() on the trace's clock"
    assert lag <= 1, f"{kind}: got_{kind}() begins {lag:.3f} ms after send_{kind}(): the wait counts the stepping"
    print(f"{kind}: got_{kind}() {lag * 1e3:.1f} us after send_{kind}(); the reader waited {blocked[kind] / 1e6:.0f} ms while stepped")
PY
echo PASS
