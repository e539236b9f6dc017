#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# debuginfod-up.sh DIR - serve the ELF files under DIR with Debian 12's debuginfod (elfutils 0.188)
# on port $DEBUGINFOD_PORT (default 18002), database on tmpfs; waits until DIR is indexed.
# Idempotent: a running instance of ours is reused when it serves the same DIR (else restarted).
# Prints DEBUGINFOD_URLS=..., DEBUGINFOD_PID=... (stop: kill PID, or debuginfod-down.sh).
set -euo pipefail
DIR=$(realpath -e "${1:?usage: debuginfod-up.sh DIR}")
PORT=${DEBUGINFOD_PORT:-18002}
BASE=${DEBUGINFOD_BASE:-/dev/shm/ptbpf-debuginfod-test}
WAIT=${DEBUGINFOD_WAIT_S:-60}
URL=http://127.0.0.1:$PORT
die() { echo "debuginfod-up: ERROR: $*" >&2; exit 1; }
command -v debuginfod >/dev/null || die "apt-get install -y --no-install-recommends debuginfod"
command -v curl >/dev/null || die "apt-get install -y curl"
running() { local st; st=$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null) && [ "${st%% *}" != Z ]; }
ours() { running "$1" && grep -qaF -- "$BASE/db.sqlite" "/proc/$1/cmdline" 2>/dev/null; }
metric() { awk -v k="$1" '$1 == k { print $2 }' <<<"$M"; }
# Ready = traversal number >= $1 of DIR finished and the scan queue is empty.
wait_indexed() {
  local deadline=$(( $(date +%s) + WAIT )) p; p=$(cat "$BASE/pid")
  while :; do
    running "$p" || { cat "$BASE/log" >&2; die "debuginfod exited"; }
    [ "$(date +%s)" -lt "$deadline" ] || { kill -TERM "$p"; die "not indexed within ${WAIT}s (log: $BASE/log)"; }
    if M=$(curl -sf -m 2 "$URL/metrics"); then
      [ "$(metric 'thread_work_total{role="traverse"}')" -ge "$1" ] 2>/dev/null \
        && [ "$(metric 'thread_work_pending{role="scan"}')" = 0 ] \
        && [ "$(metric 'thread_busy{role="scan"}')" = 0 ] && return 0
    fi
    sleep 0.1
  done
}
report() { echo "DEBUGINFOD_URLS=$URL"; echo "DEBUGINFOD_PID=$(cat "$BASE/pid")"; }

if p=$(cat "$BASE/pid" 2>/dev/null) && ours "$p"; then
  if [ "$(cat "$BASE/dir" 2>/dev/null)" = "$DIR" ] && [ "$(cat "$BASE/port" 2>/dev/null)" = "$PORT" ] \
     && M=$(curl -sf -m 2 "$URL/metrics"); then
    n=$(metric 'thread_work_total{role="traverse"}')
    kill -USR1 "$p"; wait_indexed $(( ${n:-0} + 1 ))   # rescan DIR: picks up files added since
    echo "debuginfod-up: already running (pid $p), DIR rescanned" >&2; report; exit 0
  fi
  kill -TERM "$p"; while running "$p"; do sleep 0.05; done
fi
rm -rf "$BASE"; mkdir -p "$BASE"
(exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null && die "port $PORT is busy; set DEBUGINFOD_PORT"

T0=$(date +%s%N)
# -F: scan ELF/DWARF files under DIR; -t 0: no periodic rescan (send SIGUSR1 to rescan);
# -g 0: no periodic grooming; -d: sqlite db on tmpfs. It binds *all* interfaces (0.188 has no
# listen-address option). DEBUGINFOD_URLS is unset so misses are not relayed to any upstream.
env -u DEBUGINFOD_URLS setsid debuginfod -F -p "$PORT" -d "$BASE/db.sqlite" -t 0 -g 0 -v "$DIR" \
  </dev/null >"$BASE/log" 2>&1 &
PID=$!
echo "$PID" >"$BASE/pid"; echo "$DIR" >"$BASE/dir"; echo "$PORT" >"$BASE/port"

wait_indexed 1
ms=$(( ($(date +%s%N) - T0) / 1000000 ))
echo "debuginfod-up: indexed $(metric 'scanned_files_total{source="file"}') files under $DIR in ${ms} ms" >&2
report
