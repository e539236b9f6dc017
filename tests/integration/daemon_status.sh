#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# `ptbpf daemon status` over the status socket: root reads the rules, fires and spool;
# another user is refused twice over: by the file system (0600 socket in a 0700
# directory; the client run as nobody) and, for a peer that gets past it (root's fsuid
# but nobody's euid), by the daemon's SO_PEERCRED check, which answers with a refusal
# and logs it. A second daemon on the same state directory is refused; a SIGKILLed
# daemon's socket is replaced at the next start; SIGTERM removes it.
. "$(dirname "$0")/daemon_common.inc"
command -v setpriv >/dev/null || skip "no setpriv (Debian package util-linux)"

base_config "rules:
  - name: handle-feed
    match: {binary: $SERVER}
    trigger: {uprobe: \"$SERVER:handle\"}
    capture: {backend: events-only}"
start_daemon
start_server -s 60 -i 20
wait_log '"event":"fire"' 15 || fail "no fire"
sock=$STATE/status.sock
[ -S "$sock" ] || fail "no status socket $sock"
[ "$(stat -c %a "$STATE")" = 700 ] && [ "$(stat -c %a "$sock")" = 600 ] ||
	fail "state directory $(stat -c %a "$STATE") / socket $(stat -c %a "$sock"), want 700 / 600"
[ ! -e "$STATE/status.json" ] || fail "a state file beside the socket"

"$PTBPF" daemon status --state-dir "$STATE" >"$TMP/status" 2>&1 || { cat "$TMP/status"; fail "status as root"; }
grep -q "^ptbpf daemon, pid $DPID, ready" "$TMP/status" &&
	grep -q '^rule handle-feed: armed' "$TMP/status" &&
	grep -q '^  fires       [1-9]' "$TMP/status" &&
	grep -q '^spool ' "$TMP/status" || { cat "$TMP/status"; fail "status output"; }
"$PTBPF" daemon status --state-dir "$STATE" --json >"$TMP/status.json" || fail "status --json"
$PYTHON -c 'import json,sys; s=json.load(open(sys.argv[1])); assert s["rules"][0]["name"]=="handle-feed", s' \
	"$TMP/status.json" || fail "status --json is not the status"
echo "root: $(grep -c . "$TMP/status") lines of status, --json parses"

# the file system's lock: the client as nobody
setpriv --reuid=nobody --regid=nogroup --clear-groups "$PTBPF" daemon status \
	--state-dir "$STATE" >"$TMP/status.nobody" 2>&1 && fail "nobody read the daemon's status"
grep -q "permission denied" "$TMP/status.nobody" || { cat "$TMP/status.nobody"; fail "status as nobody"; }
echo "nobody: $(head -1 "$TMP/status.nobody")"

# the kernel's word: a peer with root's fsuid (passes the modes) but nobody's euid
$PYTHON - "$sock" >"$TMP/peer.out" 2>&1 <<'EOP' || { cat "$TMP/peer.out"; fail "the SO_PEERCRED peer"; }
import ctypes, os, pwd, socket, sys
nobody = pwd.getpwnam("nobody").pw_uid
os.setresuid(0, nobody, 0)          # euid nobody: what SO_PEERCRED reports
libc = ctypes.CDLL(None, use_errno=True)
libc.setfsuid(0)                    # fsuid root: connect() passes the 0600/0700 modes
assert libc.setfsuid(-1) == 0, "fsuid is not 0"
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.connect(sys.argv[1])
data = b""
while True:
    b = s.recv(65536)
    if not b:
        break
    data += b
print(data.decode(errors="replace"))
EOP
grep -q '^error: .*root only' "$TMP/peer.out" || { cat "$TMP/peer.out"; fail "a non-root peer got: $(head -c 200 "$TMP/peer.out")"; }
grep -q 'handle-feed' "$TMP/peer.out" && fail "the non-root peer got the rules"
wait_log '"event":"status_refused"' 5 || fail "the refusal is not logged"
grep '"event":"status_refused"' "$LOG" | grep -q "uid $(id -u nobody)" || fail "the log does not name the uid"
echo "SO_PEERCRED: euid $(id -u nobody) with fsuid 0 refused and logged"

# one daemon per state directory
"$PTBPF" daemon --config "$CFG" --state-dir "$STATE" 2>"$TMP/second.log" && fail "a second daemon started"
grep -q 'another ptbpf daemon runs on this state directory' "$TMP/second.log" ||
	{ cat "$TMP/second.log"; fail "the second daemon's refusal"; }
"$PTBPF" daemon status --state-dir "$STATE" >/dev/null || fail "the second daemon broke the first's socket"

# SIGKILL leaves the socket; the next start replaces it; SIGTERM removes it
kill -9 "$DPID"
wait "$DPID" 2>/dev/null
DPID=
[ -S "$sock" ] || fail "expected the killed daemon's socket to stay"
"$PTBPF" daemon status --state-dir "$STATE" >"$TMP/status.dead" 2>&1 && fail "status of a dead daemon"
grep -q 'no daemon answers' "$TMP/status.dead" || { cat "$TMP/status.dead"; fail "status of a dead daemon"; }
start_daemon
"$PTBPF" daemon status --state-dir "$STATE" | grep -q "pid $DPID" || fail "the restarted daemon's status"
stop_daemon
[ ! -e "$sock" ] || fail "the socket was left behind after SIGTERM"
echo "restart after SIGKILL: socket replaced; SIGTERM: removed"
