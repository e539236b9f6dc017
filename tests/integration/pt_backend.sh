#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# `ptbpf --backend pt` where the host has no Intel PT: exit status 2 and the line
# `ptbpf doctor` gives for the pt backend; on fake sysfs trees, the configuration errors.
# On a host with Intel PT, tests/hw/run.sh is the test.
set -u
: "${PTBPF:?}" "${TOP:?}" "${PYTHON:=python3}"
fail() { echo "FAIL: $*"; exit 1; }

if [ -e /sys/bus/event_source/devices/intel_pt ]; then
	echo "SKIP: this host has Intel PT; run tests/hw/run.sh to test the pt backend on it"
	exit 77
fi

out=$("$PTBPF" --backend pt -- /bin/true 2>&1)
rc=$?
if grep -q "not implemented yet" <<<"$out"; then
	echo "$out"
	echo "SKIP: the capture path (user/capture_cmd.c) does not run backends yet;" \
	     "test_pt_backend checks open()'s message and status directly"
	exit 77
fi
echo "$out"
[ "$rc" -eq 2 ] || fail "--backend pt without a PMU: want exit 2, got $rc"
why=$("$PTBPF" doctor --json | "$PYTHON" -c \
	'import json, sys; print(json.load(sys.stdin)["backends"]["pt"]["why"])')
[ -n "$why" ] || fail "doctor gives no reason for the pt backend"
grep -qF -- "$why" <<<"$out" || fail "the message is not doctor's: want '$why'"
grep -q -- "--backend pt: " <<<"$out" || fail "the message does not name --backend pt"

# The configuration is checked against the (fake) PMU's caps before anything is opened.
if [ "$(id -u)" -eq 0 ]; then
	out=$(PTBPF_SYSFS_ROOT=$TOP/tests/data/sysfs-broadwell "$PTBPF" --backend pt \
		--timing mtc -- /bin/true 2>&1)
	rc=$?
	echo "$out"
	[ "$rc" -eq 2 ] || fail "--timing mtc on Broadwell: want exit 2, got $rc"
	grep -qF -- "--timing mtc: this CPU has no MTC packets (caps/mtc=0); use --timing tsc" \
		<<<"$out" || fail "--timing mtc on Broadwell: wrong message"
	out=$(PTBPF_SYSFS_ROOT=$TOP/tests/data/sysfs-skylake "$PTBPF" --backend pt \
		--psb-period 9 -- /bin/true 2>&1)
	rc=$?
	echo "$out"
	[ "$rc" -eq 2 ] || fail "--psb-period 9 on Skylake: want exit 2, got $rc"
	grep -qF -- "--psb-period 9 is not allowed on this CPU: caps/psb_periods=0x3f allows 0-5" \
		<<<"$out" || fail "--psb-period 9 on Skylake: wrong message"
fi
echo "pt_backend: all checks passed"
