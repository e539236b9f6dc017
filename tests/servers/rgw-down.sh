#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# rgw-down.sh - stop the cluster started by rgw-up.sh (by PID, from its pid files) and wipe its state.
# SIGTERM one at a time: radosgw, osd, mon (radosgw hangs in shutdown if its OSD goes first,
# an OSD whose mon is gone waits 5 s); SIGKILL a daemon still running after RGW_STOP_S s.
# RGW_STOP_SIGNAL=KILL skips the graceful part (state is wiped anyway).
set -u
BASE=${RGW_BASE:-/dev/shm/ptbpf-rgw-test}
STOP_S=${RGW_STOP_S:-5}
SIG=${RGW_STOP_SIGNAL:-TERM}
stopped=""
# a killed daemon stays a zombie until PID 1 reaps it (~1 s here, maybe never in a container): count Z as gone
running() { local st; st=$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null) && [ "${st%% *}" != Z ]; }
stop() {   # stop <daemon names...>: signal all, wait for all
  local n p list=""
  for n in "$@"; do
    p=$(cat "$BASE/run/$n.pid" 2>/dev/null) || continue
    [ -n "$p" ] || continue
    grep -qaF -- "$BASE/ceph.conf" "/proc/$p/cmdline" 2>/dev/null || continue  # dead or PID reused
    kill -"$SIG" "$p" 2>/dev/null && list="$list $p"
  done
  local end=$(( $(date +%s) + STOP_S ))
  for p in $list; do
    while running "$p"; do
      [ "$(date +%s)" -ge "$end" ] && kill -KILL "$p" 2>/dev/null
      sleep 0.05
    done
  done
  stopped="$stopped$list"
}
stop client.rgw.a
stop osd.0
stop mon.a
[ -n "$stopped" ] && echo "rgw-down: stopped pids:$stopped" >&2
rm -rf "$BASE"
exit 0
