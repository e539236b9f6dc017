#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# Rings that wrap around: the oldest trace is overwritten as in the kernel's snapshot
# mode; the snapshot is linearised by the pt backend's code (aux_ring_copy), decoding
# starts at the first PSB in the ring, and --verify and perf agree from there.
. "$(dirname "$0")/ss_common.inc"
need_ptrace
need_perf

wrap() {
	local name=$1
	shift
	ss "$name" "$@"
	[ "$(skipped "$name")" -gt 0 ] || fail "$name: the ring did not wrap"
	[ "$(verified "$name")" -gt 100 ] || fail "$name: too little was verified after the wrap"
	perf script -i "$TMP/$name.data" --itrace=cr >/dev/null 2>"$TMP/$name.perferr" ||
		fail "$name: perf script failed: $(tail -3 "$TMP/$name.perferr")"
	[ "$(perf_errors "$name")" = 0 ] || fail "$name: perf reports decode errors"
	echo "$name: $(skipped "$name") instructions overwritten, $(verified "$name") verified"
}

# Returns compressed (TNT bits) and not (a TIP each): both fill a 4K ring.
wrap wrap-recurse --buffer-size 4K -- "$TARGETS/recurse" 12
wrap wrap-sigjmp --buffer-size 4K --noretcomp -- "$TARGETS/sigjmp"
# Two threads on one CPU, a wrapped ring and PSB+ every 2K.
wrap wrap-threads --buffer-size 4K --psb-period 0 --noretcomp --cpus 1 -- "$TARGETS/threads"
perf_calls wrap-threads worker
