#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# Faults: the spool's file system full, then read-only (a real tmpfs of 64 KiB): the
# capture is dropped and counted (spool_full), the daemon runs on, and once the spool is
# writable again the next fire is spooled. Then SIGKILL of the daemon in the middle of a
# capture: the capture child lets the target go; the next start removes what the dead
# instance left (an in-progress temp file, a capture whose manifest was never written,
# a tracefs probe of a dead ptbpf) and keeps the complete captures.
. "$(dirname "$0")/daemon_common.inc"
need_singlestep

mkdir -p "$SPOOL"
mount -t tmpfs -o size=64k,mode=0700 ptbpf-test-spool "$SPOOL" 2>/dev/null ||
	skip "cannot mount a tmpfs (not root, or no mount namespace rights)"
MOUNTS+=("$SPOOL")
start_server -s 300 -i 50
base_config "rules:
  - name: slow
    match: {pid: $SRV}
    trigger: {uprobe: \"$SERVER:handle\", latency_over: 100ms}
    capture: {backend: singlestep, buffer_size: 64K, timing: mtc}"
start_daemon
wait_log '"event":"capture_started"' 30 || fail "the rule was not armed"
# capture.timing reaches the capture command (mtc: its default, so the captures are as before)
cpid=$(sed -n 's/.*"event":"capture_started".*(capture pid \([0-9]*\)).*/\1/p' "$LOG" | head -1)
tr '\0' ' ' <"/proc/$cpid/cmdline" | grep -q -- '--timing mtc' ||
	fail "capture.timing not passed to the capture: $(tr '\0' ' ' <"/proc/$cpid/cmdline" 2>&1)"
sleep 2

# fire N: make the server's next call slow; wait for the Nth capture outcome
fire() {
	kill -USR1 "$SRV"
	wait_log '"event":"capture\(d\|_dropped\)"' 60 "$1" || fail "no outcome for fire $1"
}

# 1: the spool is full
dd if=/dev/zero of="$SPOOL/filler" bs=4k count=100 status=none 2>/dev/null
fire 1
grep -q '"event":"capture_dropped".*No space left on device' "$LOG" || fail "full spool: not dropped"
publish_wait
[ "$(metric 'ptbpf_captures_suppressed_total{rule="slow",reason="spool_full"}')" = 1 ] ||
	fail "full spool: not counted as spool_full"
[ "$(metric 'ptbpf_captures_total{rule="slow",result="failed"}')" = 1 ] || fail "failed capture not counted"
ls -A "$SPOOL/slow" 2>/dev/null | grep -q . && fail "full spool: something of the capture was left"
echo "full spool: dropped, counted, nothing left"

# 2: writable again: spooled
rm -f "$SPOOL/filler"
fire 2
grep -q '"event":"captured"' "$LOG" || fail "the spool has room again, but nothing was spooled"
echo "spool with room: $(ls "$SPOOL/slow" | grep -c json) capture spooled"

# 3: read-only
mount -o remount,ro "$SPOOL" || fail "remount ro"
fire 3
grep -q '"event":"capture_dropped".*Read-only file system' "$LOG" || fail "read-only spool: not dropped"
publish_wait
[ "$(metric 'ptbpf_captures_suppressed_total{rule="slow",reason="spool_full"}')" = 2 ] ||
	fail "read-only spool: not counted"
kill -0 "$DPID" || fail "the daemon died"
mount -o remount,rw "$SPOOL"
echo "read-only spool: dropped, counted, daemon running"

# SIGKILL in the middle of a capture, with leftovers planted as a crash leaves them
good=$(ls "$SPOOL/slow/"*.json)
touch "$SPOOL/slow/.20990101T000000.000Z-x-1-9.perf.data.zst.tmp"
echo junk >"$SPOOL/slow/20990101T000000.000Z-x-1-8.perf.data.zst"
kill -9 "$DPID"
wait "$DPID" 2>/dev/null
DPID=
for i in $(seq 50); do
	[ "$(awk '/^TracerPid:/ { print $2 }' "/proc/$SRV/status")" = 0 ] && break
	sleep 0.2
done
not_traced "$SRV"
kill -0 "$SRV" || fail "the target died with the daemon"
echo "SIGKILL: the capture child let the target go"
# The dead instance's probe is planted last: any ptbpf daemon that starts on this host
# removes it (another test's, another suite's run beside this one), so the moments
# between planting it and our daemon's start are kept as few as possible.
echo "p:ptbpf_4194999/u0 $SERVER:0x1139" >>/sys/kernel/tracing/uprobe_events 2>/dev/null &&
	probe=1 || probe=0
start_daemon
[ -e "$SPOOL/slow/.20990101T000000.000Z-x-1-9.perf.data.zst.tmp" ] && fail "temp file left"
[ -e "$SPOOL/slow/20990101T000000.000Z-x-1-8.perf.data.zst" ] && fail "capture without manifest left"
[ -f "$good" ] && [ -f "${good%.json}.perf.data.zst" ] || fail "a complete capture was removed"
if [ "$probe" = 1 ]; then
	grep -q 'ptbpf_4194999' /sys/kernel/tracing/uprobe_events && fail "the dead instance's probe is left"
	grep -q '"event":"cleanup".*ptbpf_4194999' "$LOG" || fail "the probe's removal is not logged"
fi
echo "restart: leftovers removed$([ $probe = 1 ] && echo ", stale tracefs probe too"), complete capture kept"
stop_daemon
