#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# The perf.data writer on a full disk: a clear error, a non-zero exit, and no half file
# (neither the capture nor its temporary) left behind. Then, with room, the file is
# complete and mode 0600 even under umask 000.
. "$(dirname "$0")/perfdata_common.inc"
[ "$(id -u)" = 0 ] || skip "mounting a small tmpfs needs root"
mkdir -p "$TMP/tiny"
mount -t tmpfs -o size=64k,mode=0755 ptbpf-perfdata-test "$TMP/tiny" 2>"$TMP/mount.err" ||
	skip "cannot mount a tmpfs: $(cat "$TMP/mount.err")"

# ~200 KB of PAD packets do not fit in 64 KiB.
"$TOOL" synth "$PD_CALLS" "$TMP/tiny/cap.data" --pad 200000 >"$TMP/out" 2>"$TMP/err"
rc=$?
cat "$TMP/err"
[ $rc != 0 ] || fail "writing 200 KB to a 64 KiB filesystem succeeded"
grep -q "cannot write $TMP/tiny/cap.data: No space left on device" "$TMP/err" ||
	fail "the error does not name the file and ENOSPC"
[ "$(wc -l <"$TMP/err")" = 1 ] || fail "more than one error line"
left=$(ls -A "$TMP/tiny")
[ -z "$left" ] || fail "left behind on the full disk: $left"

# Room enough: a complete, private file.
(umask 000 && "$TOOL" synth "$PD_CALLS" "$TMP/tiny/cap.data" --pad 1000) ||
	fail "writing a small capture failed"
[ "$(stat -c %a "$TMP/tiny/cap.data")" = 600 ] || fail "mode $(stat -c %a "$TMP/tiny/cap.data"), not 600"
[ "$(ls -A "$TMP/tiny")" = cap.data ] || fail "temporary files left: $(ls -A "$TMP/tiny")"
"$PTBPF" decode --info "$TMP/tiny/cap.data" >/dev/null || fail "the capture written does not read back"

# Overwriting an existing capture that no longer fits keeps the old one intact.
before=$(md5sum <"$TMP/tiny/cap.data")
"$TOOL" synth "$PD_CALLS" "$TMP/tiny/cap.data" --pad 200000 2>/dev/null && fail "overwrite succeeded on a full disk"
[ "$(md5sum <"$TMP/tiny/cap.data")" = "$before" ] || fail "a failed overwrite damaged the old capture"
[ "$(ls -A "$TMP/tiny")" = cap.data ] || fail "temporary files left: $(ls -A "$TMP/tiny")"
echo "ok"
