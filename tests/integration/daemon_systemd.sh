#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# The daemon as systemd and Prometheus meet it: sd_notify against a real notify socket
# the test opens (READY=1, STATUS=, WATCHDOG=1 seen, STOPPING=1 at the end); an HTTP
# scrape of /metrics, /healthz and /readyz on loopback; `promtool check metrics` on
# both the HTTP output and the textfile; `make install` into a temp root, then
# `systemd-analyze verify` of the installed unit and `--check-config` of the installed
# example configuration.
. "$(dirname "$0")/daemon_common.inc"
command -v promtool >/dev/null || skip "no promtool (Debian package prometheus)"
command -v curl >/dev/null || skip "no curl"
command -v systemd-analyze >/dev/null || skip "no systemd-analyze (Debian package systemd)"

# the notify socket: a datagram listener writing each message on one line
"$PYTHON" - "$TMP/notify.sock" "$TMP/notify.log" <<'PY' &
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
with open(sys.argv[2], "a", buffering=1) as out:
    while True:
        msg = s.recv(4096).decode()
        out.write(msg.replace("\n", " ") + "\n")
PY
PIDS+=($!)
for i in $(seq 50); do [ -S "$TMP/notify.sock" ] && break; sleep 0.1; done
[ -S "$TMP/notify.sock" ] || fail "the notify listener did not start"

port=$("$PYTHON" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
LISTEN=127.0.0.1:$port
# an upload section with a credentials file: its secret never shows anywhere
printf '[default]\naws_access_key_id = AKIDTESTKEY\naws_secret_access_key = S3CR3TdoNotLog\n' >"$TMP/s3.ini"
chmod 0600 "$TMP/s3.ini"
base_config "upload:
  s3: {endpoint: \"http://127.0.0.1:1\", bucket: captures, prefix: fleet, path_style: true,
       credentials_file: $TMP/s3.ini}
  max_bytes_per_second: 1M
  concurrency: 1
rules:
  - name: handle-feed
    match: {binary: $SERVER}
    trigger: {uprobe: \"$SERVER:handle\"}
    capture: {backend: events-only}"
NOTIFY_SOCKET=$TMP/notify.sock WATCHDOG_USEC=2000000 start_daemon
start_server -s 30 -i 20
wait_log '"event":"fire"' 10 || fail "no fire"
sleep 3
grep -q '^READY=1' "$TMP/notify.log" || fail "no READY=1"
grep -q '^STATUS=1/1 rules armed' "$TMP/notify.log" || fail "no STATUS= with the rules"
grep -q '^WATCHDOG=1' "$TMP/notify.log" || fail "no WATCHDOG=1"
echo "sd_notify: $(sort -u "$TMP/notify.log" | sed 's/STATUS=.*/STATUS=.../' | sort -u | tr '\n' ' ')"
grep '^STATUS=' "$TMP/notify.log" | tail -1

code() { curl -s -o "$TMP/body" -w '%{http_code}' "http://$LISTEN$1"; }
[ "$(code /healthz)" = 200 ] || fail "/healthz"
[ "$(code /readyz)" = 200 ] || fail "/readyz"
[ "$(code /nothing)" = 404 ] || fail "/nothing is not 404"
[ "$(code /metrics)" = 200 ] || fail "/metrics"
cp "$TMP/body" "$TMP/http.prom"
grep -q '^ptbpf_rule_fires_total{rule="handle-feed"} [1-9]' "$TMP/http.prom" ||
	fail "/metrics does not count the fires"
for fam in ptbpf_build_info ptbpf_rules ptbpf_rule_fires_total ptbpf_captures_total \
	ptbpf_captures_suppressed_total ptbpf_capture_bytes_total ptbpf_capture_seconds_bucket \
	ptbpf_spool_bytes ptbpf_spool_files ptbpf_config_reloads_total \
	ptbpf_bpf_run_seconds_total ptbpf_bpf_runs_total; do
	grep -q "^$fam[{ ]" "$TMP/http.prom" || fail "no $fam in /metrics"
done
# the plane's uprobe program serves every uprobe rule (the rule is its probe's BPF cookie):
# it is no one rule's, so its rule label is empty
runs=$(awk -F'} ' '/^ptbpf_bpf_runs_total\{rule="",program="plane_uprobe_hit"\}/ { n += $2 } END { print n + 0 }' "$TMP/http.prom")
[ "${runs:-0}" -gt 0 ] || fail "BPF run counts are 0 (BPF_ENABLE_STATS)"
promtool check metrics <"$TMP/http.prom" >"$TMP/promtool.out" 2>&1 ||
	{ cat "$TMP/promtool.out"; fail "promtool rejects /metrics"; }
promtool check metrics <"$PROM/ptbpf.prom" >"$TMP/promtool.out" 2>&1 ||
	{ cat "$TMP/promtool.out"; fail "promtool rejects the textfile"; }
[ "$(stat -c %a "$PROM/ptbpf.prom")" = 644 ] || fail "textfile mode"
echo "HTTP: /healthz /readyz /metrics ok ($runs BPF runs); promtool: both outputs pass"
"$PTBPF" daemon status --state-dir "$STATE" --json >"$TMP/status.json" || fail "daemon status"
if grep -l 'S3CR3TdoNotLog\|AKIDTESTKEY' "$LOG" "$TMP/http.prom" "$PROM/ptbpf.prom" "$TMP/status.json"; then
	fail "a credential shows in the log, metrics or state"
fi
echo "secrets: not in the log, the metrics or the state"
stop_daemon
grep -q '^STOPPING=1' "$TMP/notify.log" || fail "no STOPPING=1"

# make install into a temp root; the unit verifies, the example parses
root=$TMP/root
make -C "$TOP" -s install OUTPUT="$BUILD" PREFIX="$root/usr" UNITDIR="$root/unit" \
	SYSCONFDIR="$root/etc" SPOOLDIR="$root/spool" >"$TMP/install.out" 2>&1 ||
	{ cat "$TMP/install.out"; fail "make install"; }
[ -x "$root/usr/bin/ptbpf" ] && [ -f "$root/unit/ptbpf.service" ] &&
	[ -f "$root/etc/ptbpf/ptbpf.yaml" ] && [ -d "$root/etc/ptbpf/rules.d" ] || fail "make install"
# the unit's ReadWritePaths= must exist or systemd refuses to start it (226/NAMESPACE)
[ "$(stat -c %a "$root/spool" 2>/dev/null)" = 700 ] || fail "make install: no spool directory 0700"
systemd-analyze verify "$root/unit/ptbpf.service" >"$TMP/verify.out" 2>&1 ||
	{ cat "$TMP/verify.out"; fail "systemd-analyze verify"; }
grep -q '^Type=notify' "$root/unit/ptbpf.service" && grep -q "^ExecStart=$root/usr/bin/ptbpf daemon" \
	"$root/unit/ptbpf.service" || fail "the installed unit"
"$root/usr/bin/ptbpf" daemon --check-config "$root/etc/ptbpf/ptbpf.yaml" >/dev/null ||
	fail "the installed example configuration does not parse"
echo "make install: binary, unit (systemd-analyze verify ok), example config (parses)"
