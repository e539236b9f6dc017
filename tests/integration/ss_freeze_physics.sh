#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# The freeze checked by its physics, as tests/hw/run.sh checks it on Intel PT hardware,
# here on singlestep captures (whose encoder emits the packets the hardware would):
# tests/hw/freeze_physics.sh reads the firing CPU's packets with tests/tools/pt_tail and
# holds each capture to "the trace ends at the probe" (last IP, no branch and no timestamp
# after it) for every trigger kind this host runs under singlestep, two snapshots in a row
# included. The check itself must refuse a trace that runs on past its probe (a
# perfdata_tool capture whose trigger names leaf, and whose thread ran on to a system
# call) and a user-only trace given as --kernel.
. "$(dirname "$0")/ss_common.inc"
need_ptrace
[ "$(id -u)" = 0 ] || skip "triggers need root (BPF, uprobes)"
PT_TAIL=$BUILD/tests/pt_tail
CHECK=$(dirname "$0")/../hw/freeze_physics.sh
[ -x "$PT_TAIL" ] || fail "$PT_TAIL not built"
export PT_TAIL
CHAIN=$TARGETS/cap_chain

# cap NAME TRIGGER... -- ARGS: a singlestep capture kept as $TMP/NAME.data (.N.data)
cap() {
	local name=$1
	shift
	timeout 240 "$PTBPF" --backend singlestep --keep-capture "$TMP/$name.data" \
		-o "$TMP/$name.fxt" "$@" >"$TMP/$name.out" 2>"$TMP/$name.err" ||
		{ tail -5 "$TMP/$name.err"; fail "$name: ptbpf"; }
}

# 10 ms apart: with MTC timing (the default) a TSC comes only in a PSB+, which the encoder
# writes every --psb-period bytes or where tracing resumes after a wait longer than MTC's
# 8 bits span (41 us on this clock), as after the sleep; back to back, the iteration
# between the hits (about 30 us of trace, a few hundred bytes) may hold no PSB, and both
# snapshots end at the same last TSC though the second has more trace
cap uprobe --uprobe "$CHAIN:leaf" --max-snapshots 2 -- "$CHAIN" -n 3 -p 10
cap latency --uprobe "$CHAIN:level1" --latency-over 100ms -- "$CHAIN" -n 5 -s 3
cap syscall --syscall-latency-over 100ms --syscall clock_nanosleep -- "$CHAIN" -n 5 -s 3
cap tracepoint --tracepoint syscalls:sys_enter_clock_nanosleep -- "$CHAIN" -n 2 -s 1
for f in uprobe.1 uprobe.2; do
	[ -s "$TMP/$f.data" ] || fail "no $f.data: two snapshots in a row were asked"
done
"$CHECK" "$TMP"/uprobe.1.data "$TMP"/uprobe.2.data "$TMP"/latency.data "$TMP"/syscall.data \
	"$TMP"/tracepoint.data >"$TMP/check.out" || { cat "$TMP/check.out"; fail "freeze physics"; }
cat "$TMP/check.out"
grep -q "uprobe.2.data (uprobe, CPU [0-9]*): ends fup,tip.pgd" "$TMP/check.out" ||
	fail "the second snapshot does not end in FUP + TIP.PGD at the probe"
# each snapshot ends at its own fire: the second one's trace is later
t1=$("$PT_TAIL" "$TMP/uprobe.1.data" | sed -n 's/^last_time=//p')
t2=$("$PT_TAIL" "$TMP/uprobe.2.data" | sed -n 's/^last_time=//p')
[ "$t2" -gt "$t1" ] || fail "the second snapshot ends no later than the first ($t2 <= $t1)"

# the check refuses what does not end at the probe
"$BUILD/tests/perfdata_tool" synth "$TARGETS/pd_calls" "$TMP/ranon.data" || fail "synth"
"$CHECK" "$TMP/ranon.data" >"$TMP/ranon.out" && { cat "$TMP/ranon.out"; fail "ran-on trace accepted"; }
grep -q "branches ran after the probe" "$TMP/ranon.out" || { cat "$TMP/ranon.out"; fail "reason"; }
"$CHECK" --kernel "$TMP/uprobe.1.data" >"$TMP/kernel.out" &&
	fail "a user-only trace passed as --kernel"
grep -q "is not the kernel's" "$TMP/kernel.out" || { cat "$TMP/kernel.out"; fail "reason"; }
# and pt_tail's own errors
"$PT_TAIL" "$TMP/nonexistent.data" 2>/dev/null && fail "pt_tail read a missing file"
"$PT_TAIL" "$TMP/uprobe.1.data" --cpu 99 2>"$TMP/cpu.err" && fail "pt_tail --cpu 99"
grep -q "no trace of CPU 99" "$TMP/cpu.err" || fail "pt_tail --cpu 99 message"
echo PASS
