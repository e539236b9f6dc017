#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# debuginfod-down.sh - stop the debuginfod started by debuginfod-up.sh (by PID) and wipe its db.
set -u
BASE=${DEBUGINFOD_BASE:-/dev/shm/ptbpf-debuginfod-test}
running() { local st; st=$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null) && [ "${st%% *}" != Z ]; }
if p=$(cat "$BASE/pid" 2>/dev/null) && running "$p" && grep -qaF -- "$BASE/db.sqlite" "/proc/$p/cmdline"; then
  kill -TERM "$p"
  for i in $(seq 1 100); do running "$p" || break; sleep 0.05; done   # ~0.6 s normally
  running "$p" && kill -KILL "$p"
  echo "debuginfod-down: stopped pid $p" >&2
fi
rm -rf "$BASE"
exit 0
