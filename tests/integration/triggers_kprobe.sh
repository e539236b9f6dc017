#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# --kprobe: the program passes the verifier (test_triggers' test_kprobe_loads); where the
# kernel has no kprobes, ptbpf says so on one line and exits 2, never a silent no-op.
. "$(dirname "$0")/triggers_common.inc"
need_bpf
run_fg kp --dry-run --kprobe do_nanosleep -v -- "$TARGETS/trig_sleep" -n 1
if [ -e /sys/bus/event_source/devices/kprobe ]; then
	[ $RC = 0 ] || fail "kprobes exist here but --kprobe failed: $(cat "$TMP/kp.err")"
	fires kp | grep -q '"kind":"kprobe"' || fail "no kprobe fire"
	echo PASS
	exit 0
fi
[ $RC = 2 ] || fail "exit $RC, expected 2: $(cat "$TMP/kp.err")"
# the programs loaded (the verifier ran) before attaching failed
grep -q "triggers: 1 loaded" "$TMP/kp.err" || fail "the kprobe program did not load: $(cat "$TMP/kp.err")"
[ "$(grep -c '^ptbpf: ' "$TMP/kp.err")" = 1 ] || fail "not one error line: $(cat "$TMP/kp.err")"
grep -q "^ptbpf: kprobe do_nanosleep: this kernel has no kprobes (.*CONFIG_KPROBES" "$TMP/kp.err" ||
	fail "error message: $(cat "$TMP/kp.err")"
grep -q "trig_sleep\|done" "$TMP/kp.out" && fail "the target ran although the trigger failed"
echo "kprobe error: $(grep '^ptbpf:' "$TMP/kp.err")"
echo "SKIP: attaching kprobes: this kernel has none (the program loaded; the error is tested)"
exit 77
