#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# The daemon end to end on this PT-less VM: it starts with no rule; a server starts; a
# rule for its pid (singlestep backend, uprobe latency trigger) is dropped into rules.d;
# the daemon reloads on its own (inotify), captures the slow call, and spools it: the
# manifest validates against the documented schema, its sha256 and bytes match the
# capture, modes are 0700/0600, and `ptbpf decode` of the .zst gives an FXT that passes
# the validator and shows the slow call. Then: an invalid drop-in keeps the old rule
# armed (and counts the failure); the target's exit leaves the daemon running; SIGTERM
# during a capture stops it cleanly (no work files, no state file, the target untraced).
. "$(dirname "$0")/daemon_common.inc"
need_singlestep
: "${FXTCHECK:?}"

# decoding (decode: host) may use 2 % of a core: the decode worker is held to it
base_config "budget: {decode_cpu_share: 0.02}"
start_daemon
start_server -s 120 -i 50
cat >"$RULES/50-slow.yaml" <<EOF
rules:
  - name: slow-handle
    match: {pid: $SRV}
    trigger: {uprobe: "$SERVER:handle", latency_over: 100ms}
    capture: {backend: singlestep}
    budget: {max_per_hour: 2, cooldown: 1s}
    decode: host
    labels: {team: storage}
EOF
wait_log '"event":"capture_started"' 30 || fail "the dropped-in rule was not armed"
grep -q '"event":"reloaded"' "$LOG" || fail "no reload logged"
sleep 2	# the capture child attaches and single-steps the server
kill -USR1 "$SRV"
wait_log '"event":"captured"' 60 || fail "no capture spooled"
man=$(ls "$SPOOL"/slow-handle/*.json | head -1)
[ -f "$man" ] || fail "no manifest in $SPOOL/slow-handle"
echo "spooled: $(basename "$man")"

"$PYTHON" - "$man" "$SRV" "$SERVER" <<'PY' || fail "the manifest does not match its schema"
import hashlib, json, os, re, stat, sys
path, pid, server = sys.argv[1], int(sys.argv[2]), sys.argv[3]
m = json.load(open(path))
schema = {"version": int, "host": str, "boot_id": str, "kernel": str, "cpu": str,
          "ptbpf_version": str, "rule": str, "labels": dict, "time_ns": int,
          "trigger": dict, "window_ns": dict, "capture": str, "bytes": int,
          "sha256": str, "binaries": list}
for k, t in schema.items():
    assert isinstance(m.get(k), t), f"{k}: {m.get(k)!r} is not {t.__name__}"
for k, t in {"kind": str, "latency_ns": int, "pid": int, "tid": int, "comm": str,
             "ip": str, "sym": str}.items():
    assert isinstance(m["trigger"].get(k), t), f"trigger.{k}: {m['trigger'].get(k)!r}"
for k in ("begin", "end"):
    assert isinstance(m["window_ns"][k], int), f"window_ns.{k}"
w = m["window_ns"]
# the capture's window (first trace time to the fire) holds the slow call it caught,
# not just the sideband records around the snapshot (a few microseconds)
assert 0 < w["begin"] <= w["end"], w
assert w["end"] - w["begin"] >= m["trigger"]["latency_ns"], (w, m["trigger"]["latency_ns"])
print("window: %.1f ms, the slow call %.1f ms" % ((w["end"] - w["begin"]) / 1e6,
                                                  m["trigger"]["latency_ns"] / 1e6))
assert m["version"] == 1 and m["rule"] == "slow-handle"
assert m["labels"] == {"dc": "test1", "team": "storage"}, m["labels"]
t = m["trigger"]
assert t["kind"] == "uprobe_latency" and t["pid"] == pid and t["sym"] == "handle", t
assert t["latency_ns"] >= 250_000_000, t["latency_ns"]   # slow_path sleeps 300 ms
assert t["comm"] == "fleet_server", t["comm"]
assert re.fullmatch(r"0x[0-9a-f]+", t["ip"]), t["ip"]
d = os.path.dirname(path)
name = os.path.basename(path)[:-len(".json")]
assert m["capture"] == name + ".perf.data.zst", m["capture"]
assert re.fullmatch(r"\d{8}T\d{6}\.\d{3}Z-.+-%d-\d+" % pid, name), name
cap = os.path.join(d, m["capture"])
data = open(cap, "rb").read()
assert m["bytes"] == len(data), (m["bytes"], len(data))
assert m["sha256"] == hashlib.sha256(data).hexdigest(), "sha256"
assert any(b["path"] == server and re.fullmatch(r"[0-9a-f]{40}", b["build_id"])
           for b in m["binaries"]), m["binaries"]
for f in (path, cap):
    mode = stat.S_IMODE(os.stat(f).st_mode)
    assert mode == 0o600, f"{f}: mode {mode:o}"
for dd in (d, os.path.dirname(d)):
    mode = stat.S_IMODE(os.stat(dd).st_mode)
    assert mode == 0o700, f"{dd}: mode {mode:o}"
print("manifest: schema, sha256, bytes, build-id, modes ok")
PY

zst=${man%.json}.perf.data.zst
"$PTBPF" decode "$zst" -o "$TMP/cap.fxt" 2>"$TMP/decode.err" ||
	{ cat "$TMP/decode.err"; fail "decode of the spooled .zst"; }
"$FXTCHECK" --strict "$TMP/cap.fxt" >"$TMP/fxtcheck.out" 2>&1 ||
	{ tail "$TMP/fxtcheck.out"; fail "the FXT of the spooled capture is not valid"; }
"$PTBPF" decode "$zst" --format text -o "$TMP/cap.txt" || fail "decode --format text"
awk '$2 == "slow_path" && $4 - $3 >= 250000000 { found = 1 } END { exit !found }' "$TMP/cap.txt" ||
	{ grep -E 'handle|slow_path' "$TMP/cap.txt" | tail; fail "no slow_path of >= 250 ms in the trace"; }
echo "decoded: valid FXT with the slow call ($(awk '$2 == "slow_path" { print ($4 - $3) / 1e6 " ms" }' "$TMP/cap.txt" | tail -1))"
# decode: host spooled the daemon's own FXT beside it
hostfxt=${man%.json}.fxt
[ -f "$hostfxt" ] || fail "decode: host, but no $hostfxt"
"$FXTCHECK" --strict "$hostfxt" >"$TMP/fxtcheck.out" 2>&1 ||
	{ tail "$TMP/fxtcheck.out"; fail "the daemon's FXT is not valid"; }
[ "$(stat -c %a "$hostfxt")" = 600 ] || fail "the daemon's FXT is not 0600"
echo "decode: host: the spooled FXT is valid"
# its decode was held to the daemon's CPU share: CPU <= 2 % of its wall time, the whole
# of it (the hold's stop pauses for the CPU since its last check), so the worker paused
# however fast the decode (this one takes a few ms of CPU, under the hold's 5 ms quantum:
# its timer may never fire) unless its thread ran less than 2 % of the time anyway
line=$(grep '"rule":"slow-handle","event":"decoded"' "$LOG" | head -1)
[ -n "$line" ] || fail "no decoded event"
"$PYTHON" - "$line" <<'PY' || fail "the decode was not held to decode_cpu_share 0.02"
import json, sys
e = json.loads(sys.argv[1])
cpu, wall, paused = e["cpu_ns"], e["wall_ns"], e["paused_ns"]
print("decode share: %.1f ms CPU in %.1f ms wall (%.3f of a core; held to %.2f), paused %.1f ms"
      % (cpu / 1e6, wall / 1e6, cpu / max(wall, 1), e["cpu_share"], paused / 1e6))
assert e["cpu_share"] == 0.02, e
assert cpu <= 0.02 * wall, e
assert paused > 0, e
PY
publish_wait
[ "$(metric ptbpf_decodes_total'{result="ok"}')" -ge 1 ] || fail "ptbpf_decodes_total"
awk '$1 == "ptbpf_decode_paused_seconds_total" && $2 > 0 { ok = 1 } END { exit !ok }' \
	"$PROM/ptbpf.prom" || fail "the decode worker never paused (ptbpf_decode_paused_seconds_total)"

# the state is root's: another user cannot read it
if command -v setpriv >/dev/null; then
	setpriv --reuid=nobody --regid=nogroup --clear-groups "$PTBPF" daemon status \
		--state-dir "$STATE" >"$TMP/status.nobody" 2>&1 && fail "nobody can read the daemon's status"
	grep -q "permission denied" "$TMP/status.nobody" || { cat "$TMP/status.nobody"; fail "status as nobody"; }
	[ "$(stat -c %a "$STATE")" = 700 ] && [ "$(stat -c %a "$STATE/status.sock")" = 600 ] ||
		fail "state directory / status socket modes"
	echo "status: refused to a non-root user (state 0700, socket 0600)"
fi

# an invalid drop-in: the old rule keeps running, the failure is counted
cp "$RULES/50-slow.yaml" "$TMP/saved.yaml"
# written as editors and config tools do, in several steps (create, write, chmod, touch):
# the directory's events are one batch, so one reload attempt and one count
# (one process, 50 ms apart: the steps are well inside the daemon's 300 ms debounce; as
# commands, four forks and execs on a loaded machine once took longer and made two batches)
"$PYTHON" - "$RULES/60-bad.yaml" "$SERVER" <<'PY' || fail "writing the bad drop-in"
import os, sys, time
path, server = sys.argv[1], sys.argv[2]
t0 = time.monotonic()
open(path, "w").close()
time.sleep(0.05)
with open(path, "a") as f:
    f.write('rules:\n  - name: broken\n    trigger: {uprobe: "%s:no_such_function"}\n' % server)
time.sleep(0.05)
os.chmod(path, 0o600)
time.sleep(0.05)
os.utime(path)
print("bad drop-in: 4 changes in %.0f ms" % ((time.monotonic() - t0) * 1e3))
PY
wait_log '"event":"reload_failed"' 10 || fail "an invalid drop-in was not refused"
grep -q '60-bad.yaml:3: rule broken: trigger' "$LOG" ||
	fail "the reload error does not name the file and line"
publish_wait
sleep 1	# a second batch, were the events not one, would have been counted by now
publish_wait
n=$(metric 'ptbpf_config_reloads_total{result="failure"}')
[ "$n" = 1 ] || fail "one bad drop-in (4 changes) counted $n failed reloads, not 1"
[ "$(grep -c '"event":"reload_failed"' "$LOG")" = 1 ] || fail "one bad drop-in: several reload attempts"
[ "$(metric 'ptbpf_rules{state="armed"}')" = 1 ] || fail "the old rule is no longer armed"
"$PTBPF" daemon status --state-dir "$STATE" >"$TMP/status" || fail "daemon status"
grep -q 'rule slow-handle: armed' "$TMP/status" || { cat "$TMP/status"; fail "status"; }
# SIGHUP reloads too (here: the same valid files again)
rm -f "$RULES/60-bad.yaml"
wait_log '"event":"reloaded"' 10 2 || fail "no reload after the bad file went"
kill -HUP "$DPID"
wait_log 'reload (SIGHUP)' 10 || fail "SIGHUP did not reload"
echo "invalid reload: refused with file:line, old rule still armed; SIGHUP reloads"

# the target exits: the rule becomes unavailable, the daemon runs on
kill -TERM "$SRV"
wait_log '"event":"target_exited"' 30 || fail "the target's exit was not noticed"
kill -0 "$DPID" || fail "the daemon died with its target"
publish_wait
[ "$(metric 'ptbpf_rules{state="unavailable"}')" = 1 ] || fail "the rule is not reported unavailable"
echo "target exit: rule unavailable, daemon running"

# a second target; SIGTERM while it is being captured
start_server -s 120 -i 50
sed "s/pid: [0-9]*/pid: $SRV/" "$TMP/saved.yaml" >"$RULES/50-slow.yaml"
wait_log '"event":"capture_started"' 30 2 || fail "the edited rule was not re-armed"
sleep 2
stop_daemon
sleep 0.5
not_traced "$SRV"
kill -0 "$SRV" || fail "the target did not survive the daemon's stop"
[ ! -e "$STATE/work" ] || fail "the work directory was left behind"
[ ! -e "$STATE/status.sock" ] || fail "the status socket was left behind"
if ls -a "$SPOOL"/slow-handle | grep -q '^\.[^.]'; then fail "a temp file was left in the spool"; fi
echo "SIGTERM: clean stop, target running untraced, spool consistent"
