#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# Fleet storage against a real Ceph RGW (Debian's radosgw, one node, memstore on tmpfs,
# started here on 127.0.0.1 and stopped by PID at the end). Every upload case runs
# through `ptbpf daemon` (an upload: section, its metrics textfile, its own spool that
# the test fills in the daemon's format before starting it, or that a rule filled);
# tests/tools/upload_tool (the same uploader without the daemon) only times the
# bandwidth cap, where the daemon's start-up would blur the measure. One RGW for all
# cases; what does not need it (captures, spools, a singlestep daemon's capture) is done
# while it starts, and independent daemons run side by side:
#   - 50 captures land once (no other object, sha256 of each as its manifest says, and
#     captures ls --json lists exactly them), with RGW stopped for 30 s in the middle:
#     nothing lost, the uploads resume
#   - the daemon SIGKILLed mid-multipart: no object under the final name; restarted, it
#     resumes the upload (the parts its saved state confirmed are not sent again,
#     ptbpf_upload_multipart_parts_total) and the object is complete; an upload id the
#     store no longer knows (NoSuchUpload) starts again cleanly
#   - wrong secret: one clear error, the captures stay spooled; no bucket: a clear error
#   - a bandwidth cap holds within 10 %
#   - captures ls --since / --rule / --host return exactly the expected sets
#   - decode s3://... gives the same FXT and text as decoding the local capture
#   - a daemon with a singlestep rule on a fleet_server: captures, keeps the capture
#     spooled while its bucket is missing, uploads it once the bucket exists and frees the
#     spool; its /metrics has every ptbpf_upload* family and passes promtool; captures ls
#     and decode s3:// read its own config; decode s3:// equals decoding the spooled file
#   - the secret appears in no log, metric or manifest
set -u
: "${PTBPF:?}" "${BUILD:?}"
here=$(cd "$(dirname "$0")" && pwd)
SERVERS=$here/../servers
TOOL=$BUILD/tests/upload_tool
SERVER=$BUILD/targets/fleet_server
TMP=$(mktemp -d "/tmp/ptbpf-s3-test-$$-XXXXXX")
# Ports: free ones below the ephemeral range, unless given: other worktrees on the same
# machine run this test at the same time, each with its own RGW.
read -r P_RGW P_V2 P_V1 P_D P_O < <("${PYTHON:-python3}" -c '
import random, socket
held = []
while len(held) < 5:
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", random.randint(20000, 32000)))
        held.append(s)
    except OSError:
        s.close()
print(*[s.getsockname()[1] for s in held])')
export RGW_BASE=/dev/shm/ptbpf-rgw-test-$$ RGW_PORT=${PTBPF_RGW_PORT:-$P_RGW}
export RGW_MON_V2_PORT=${PTBPF_RGW_MON_V2_PORT:-$P_V2} RGW_MON_V1_PORT=${PTBPF_RGW_MON_V1_PORT:-$P_V1}
# a secret that cannot appear anywhere by chance
export RGW_ACCESS_KEY=PTBPFTESTKEY RGW_SECRET_KEY=ptbpfSecret-7f3e9a1c5b
AK=$RGW_ACCESS_KEY SK=$RGW_SECRET_KEY
E=http://127.0.0.1:$RGW_PORT
EMPTY=e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855
pids=()

cleanup() {
	local p
	for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null; done
	# its state is thrown away: no graceful stop (that dumps the OSD's memstore)
	RGW_STOP_SIGNAL=KILL "$SERVERS/rgw-down.sh" 2>/dev/null
	rm -rf "$TMP"
}
trap cleanup EXIT

fail() {
	echo "FAIL: $*"
	exit 1
}
skip() {
	echo "SKIP: $*"
	exit 77
}

for b in radosgw ceph-mon ceph-osd zstd curl; do
	command -v "$b" >/dev/null ||
		skip "$b not installed (apt-get install radosgw ceph-mon ceph-osd ceph-common zstd curl)"
done
[ -x "$TOOL" ] || fail "$TOOL not built"
[ "$(cat /proc/sys/kernel/yama/ptrace_scope 2>/dev/null || echo 0)" != 3 ] ||
	skip "kernel.yama.ptrace_scope=3 forbids ptrace (the singlestep backend)"

s3() { curl -sS --aws-sigv4 aws:amz:us-east-1:s3 --user "$AK:$SK" "$@"; }
mkbucket() {
	[ "$(s3 -X PUT -H "x-amz-content-sha256: $EMPTY" "$E/$1" -o /dev/null -w '%{http_code}')" = 200 ] ||
		fail "cannot create bucket $1"
}
urlenc() { printf %s "$1" | sed 's|/|%2F|g'; }
# keys BUCKET PREFIX: every object key under PREFIX (one page is enough here)
keys() {
	s3 -H "x-amz-content-sha256: $EMPTY" "$E/$1?list-type=2&max-keys=1000&prefix=$(urlenc "$2")" |
		grep -o '<Key>[^<]*</Key>' | sed 's|</\?Key>||g' | sort
}
# unfinished PREFIX: the unfinished multipart uploads under PREFIX in bucket captures
unfinished() {
	s3 -H "x-amz-content-sha256: $EMPTY" "$E/captures?prefix=$(urlenc "$1")&uploads=" |
		grep -o '<UploadId>[^<]*</UploadId>' | sed 's|</\?UploadId>||g'
}
# spool DIR RULE NAME TIME_NS HOST [SRC]: a spooled capture and its manifest (every key
# the daemon writes), the manifest renamed into place last as the daemon does. Queued,
# then written by spool_flush in one process: there are many and the machine is loaded.
KERNEL=$(uname -r)
spool() { echo "$1 $2 $3 $4 $5 ${6:-$TMP/rec.zst}" >>"$TMP/spool.list"; }
spool_flush() {
	"${PYTHON:-python3}" - "$KERNEL" "$BUILD/targets/recurse" "$TMP/spool.list" <<'PY' ||
import hashlib, json, os, shutil, sys
kernel, binary, listing = sys.argv[1:4]
sums = {}
for line in open(listing).read().splitlines():
    top, rule, name, t, host, src = line.split()
    t = int(t)
    if src not in sums:
        sums[src] = (hashlib.sha256(open(src, "rb").read()).hexdigest(), os.path.getsize(src))
    sha, size = sums[src]
    d = os.path.join(top, rule)
    os.makedirs(d, exist_ok=True)
    shutil.copyfile(src, f"{d}/{name}.perf.data.zst")
    m = {"version": 1, "host": host, "boot_id": "00000000-0000-0000-0000-000000000000",
         "kernel": kernel, "cpu": "test", "ptbpf_version": "0.1.0", "rule": rule,
         "labels": {"team": "test"}, "time_ns": t,
         "trigger": {"kind": "uprobe_latency", "latency_ns": 5300000, "pid": 1, "tid": 1,
                     "comm": "recurse", "ip": 0, "sym": "main"},
         "window_ns": {"begin": t - 1000000, "end": t}, "capture": f"{name}.perf.data.zst",
         "bytes": size, "sha256": sha, "binaries": [{"path": binary, "build_id": ""}]}
    with open(f"{d}/.{name}.json.tmp", "w") as f:
        f.write(json.dumps(m, separators=(",", ":")) + "\n")
    os.rename(f"{d}/.{name}.json.tmp", f"{d}/{name}.json")
PY
		fail "cannot write the spools"
	rm -f "$TMP/spool.list"
}
metric() { awk -v k="$1" '$1 == k { print $2 }' "$2"; }
now_ns() { date +%s%N; }

# Daemons: NAME's config, spool, metrics textfile and log under $TMP/d-NAME.
# dconf NAME BUCKET PREFIX CREDENTIALS BYTES_PER_S CONCURRENCY
dconf() {
	local d=$TMP/d-$1
	mkdir -p "$d/etc" "$d/prom"
	cat >"$d/etc/ptbpf.yaml" <<EOF
host_labels: {dc: test}
spool: {dir: $d/spool, max_bytes: 1G, max_files: 1000}
metrics: {textfile_dir: $d/prom}
upload:
  s3: {endpoint: "$E", region: us-east-1, bucket: $2, prefix: $3, path_style: true,
       credentials_file: $4}
  concurrency: $6
EOF
	[ "$5" = 0 ] || echo "  max_bytes_per_second: $5" >>"$d/etc/ptbpf.yaml"
}
declare -A DPID
# dstart NAME: in the background, until its log says "ready" (30 s)
dstart() {
	local d=$TMP/d-$1 n i
	n=$(grep -c '"event":"ready"' "$d/log" 2>/dev/null)
	mkdir -p "$d/spool"
	"$PTBPF" daemon --config "$d/etc/ptbpf.yaml" --state-dir "$d/state" 2>>"$d/log" &
	DPID[$1]=$!
	pids+=("$!")
	for ((i = 0; i < 300; i++)); do
		[ "$(grep -c '"event":"ready"' "$d/log" 2>/dev/null)" -gt "${n:-0}" ] && return 0
		kill -0 "${DPID[$1]}" 2>/dev/null || break
		sleep 0.1
	done
	dfail "$1" "the daemon did not get ready"
}
dstop() {
	kill -TERM "${DPID[$1]}"
	wait "${DPID[$1]}" || dfail "$1" "the daemon exited $? after SIGTERM"
}
dkill() {
	kill -KILL "${DPID[$1]}"
	wait "${DPID[$1]}" 2>/dev/null
	while [ -e "/proc/${DPID[$1]}" ]; do sleep 0.05; done
}
dfail() {
	echo "--- daemon $1 (last 20 log lines)"
	tail -20 "$TMP/d-$1/log"
	fail "daemon $1: $2"
}
dmetric() { metric "$2" "$TMP/d-$1/prom/ptbpf.prom" 2>/dev/null; }
# dwait NAME METRIC MIN SECONDS: until the daemon's METRIC >= MIN (its textfile is
# rewritten within a second of an upload's news)
dwait() {
	local v i
	for ((i = 0; i < $4 * 10; i++)); do
		v=$(dmetric "$1" "$2")
		[ -n "$v" ] && [ "${v%.*}" -ge "$3" ] && return 0
		kill -0 "${DPID[$1]}" 2>/dev/null || return 1
		sleep 0.1
	done
	return 1
}
# upload_lines NAME: the uploader's lines in the daemon's log
upload_lines() { grep 'upload: ' "$TMP/d-$1/log"; }
# state_parts FILE: the parts a multipart state file holds as confirmed
state_parts() { grep -o '"n":[0-9]*' "$1" 2>/dev/null | wc -l; }

printf '[default]\naws_access_key_id = %s\naws_secret_access_key = %s\n' "$AK" "$SK" >"$TMP/creds.ini"
printf '[default]\naws_access_key_id = %s\naws_secret_access_key = wrong-secret\n' "$AK" >"$TMP/bad.ini"
chmod 600 "$TMP"/*.ini

# ---- while RGW starts: a real capture, every spool, and a daemon's own capture ---------
"$SERVERS/rgw-up.sh" >"$TMP/rgw.env" 2>"$TMP/rgw.log" &
rgw_up=$!
pids+=("$rgw_up")

# A daemon with a singlestep rule on a fleet_server (its config is the one `captures ls`
# and `decode s3://` read later). Its bucket does not exist: the capture stays spooled
# (a copy is taken to compare decodes); once the bucket exists, the restarted daemon
# uploads it and frees the spool.
D=$TMP/daemon
DPORT=${PTBPF_DAEMON_TEST_PORT:-$P_D}
mkdir -p "$D/etc"
"$SERVER" -s 300 -i 50 >/dev/null &
srv=$!
pids+=("$srv")
cat >"$D/etc/ptbpf.yaml" <<EOF
host_labels: {dc: test}
spool: {dir: $D/spool, max_bytes: 100M, max_files: 100}
metrics: {listen: "127.0.0.1:$DPORT"}
upload:
  s3: {endpoint: "$E", region: us-east-1, bucket: fleetd, prefix: fleet, path_style: true,
       credentials_file: $TMP/creds.ini}
  concurrency: 1
rules:
  - name: slow-handle
    match: {pid: $srv}
    trigger: {uprobe: "$SERVER:handle", latency_over: 100ms}
    capture: {backend: singlestep}
    budget: {max_per_hour: 1}
EOF
# wait_dlog PATTERN SECONDS [COUNT]: the daemon's log has COUNT lines matching
wait_dlog() {
	local i
	for ((i = 0; i < $2 * 10; i++)); do
		[ "$(grep -c -- "$1" "$D/log" 2>/dev/null)" -ge "${3:-1}" ] && return 0
		kill -0 "$dpid" 2>/dev/null || return 1
		sleep 0.1
	done
	return 1
}
sfail() { tail -20 "$D/log"; fail "$@"; }
# wait_metric FILE NAME MIN: /metrics into FILE until NAME >= MIN (30 s)
wait_metric() {
	local v
	for _ in $(seq 120); do
		curl -sS "http://127.0.0.1:$DPORT/metrics" >"$1" || return 1
		v=$(metric "$2" "$1")
		[ -n "$v" ] && [ "$v" -ge "$3" ] && return 0
		sleep 0.25
	done
	return 1
}
start_sdaemon() {
	"$PTBPF" daemon --config "$D/etc/ptbpf.yaml" --state-dir "$D/state" 2>>"$D/log" &
	dpid=$!
	pids+=("$dpid")
	wait_dlog '"event":"ready"' 30 "$1" || sfail "the daemon did not get ready"
}
stop_sdaemon() {
	kill -TERM "$dpid"
	wait "$dpid" || sfail "the daemon exited $? after SIGTERM"
}
start_sdaemon 1
# a real capture to upload, made while the daemon arms its rule
"$PTBPF" --backend singlestep --keep-capture="$TMP/rec.data" --decode=no -- \
	"$BUILD/targets/recurse" >"$TMP/rec.run" 2>&1 || { cat "$TMP/rec.run"; fail "singlestep capture of recurse"; }
zstd -q -19 "$TMP/rec.data" -o "$TMP/rec.zst" || fail "zstd"
wait_dlog '"event":"capture_started"' 30 || sfail "the singlestep rule was not armed"
sleep 2	# the capture child attaches and single-steps the server
kill -USR1 "$srv"	# one slow call (300 ms)

# the spools of the other cases, in the daemon's format (the 50 captures: four of them
# over 16 MiB, multipart: random bytes after the real capture)
T0=$(now_ns)
{ cat "$TMP/rec.zst"; head -c $((18 << 20)) /dev/urandom; } >"$TMP/big.zst"
for i in $(seq -w 1 50); do
	if [ "$i" -le 04 ]; then
		spool "$TMP/d-s50/spool" slow "c$i" $((T0 + 10#$i)) "h$((10#$i % 3))" "$TMP/big.zst"
	else
		spool "$TMP/d-s50/spool" slow "c$i" $((T0 + 10#$i)) "h$((10#$i % 3))"
	fi
done
head -c $((40 << 20)) /dev/urandom >"$TMP/huge.zst"
spool "$TMP/d-sk/spool" kill huge "$(now_ns)" hk "$TMP/huge.zst"
spool "$TMP/d-su/spool" gone huge "$(now_ns)" hk "$TMP/huge.zst"
for d in bad nb; do
	spool "$TMP/d-$d/spool" r1 b1 "$(now_ns)" h1
	spool "$TMP/d-$d/spool" r1 b2 "$(now_ns)" h1
done
for i in 1 2 3; do
	head -c $((4 << 20)) /dev/urandom >"$TMP/bw$i.zst"
	spool "$TMP/bw" bw "bw$i" "$(now_ns)" h1 "$TMP/bw$i.zst"
done
NOW=$(now_ns) H=3600000000000
spool "$TMP/d-ls/spool" alpha a_now "$((NOW - 60000000000))" web1
spool "$TMP/d-ls/spool" alpha a_3h "$((NOW - 3 * H))" web2
spool "$TMP/d-ls/spool" alpha a_30h "$((NOW - 30 * H))" web1
spool "$TMP/d-ls/spool" beta b_now "$((NOW - 120000000000))" web2
spool "$TMP/d-ls/spool" beta b_50h "$((NOW - 50 * H))" web1
spool_flush
cp "$TMP/d-ls/spool/beta/b_now.json" "$TMP/template.json"
echo "+${SECONDS}s: spools ready"

wait_dlog '"event":"captured"' 60 || sfail "no capture spooled"
wait "$rgw_up" || { cat "$TMP/rgw.log"; fail "RGW did not start"; }
echo "+${SECONDS}s: RGW up, the singlestep daemon captured"
sed 's/^/    /' "$TMP/rgw.log"
mkbucket captures

# --- the singlestep daemon: its capture waits for its bucket, then lands ---------------
# While RGW started, its answers were refusals (no user yet: a wrong key, retried a
# minute later); a restart sends at once.
stop_sdaemon
start_sdaemon 2
wait_dlog 'bucket fleetd does not exist' 30 || sfail "the missing bucket was not reported"
man=$(ls "$D"/spool/slow-handle/*.json)
zst=${man%.json}.perf.data.zst
[ -f "$zst" ] || sfail "the capture left the spool although its upload failed"
cp "$zst" "$TMP/spooled.perf.data.zst"
wait_metric "$D/m1.prom" 'ptbpf_upload_errors_total{cause="no_bucket"}' 1 ||
	sfail "no_bucket not counted in /metrics"
[ "$(metric ptbpf_upload_queue_files "$D/m1.prom")" = 1 ] || sfail "the queue does not hold the capture"
echo "+${SECONDS}s: the missing bucket reported, the capture kept"
stop_sdaemon
mkbucket fleetd
start_sdaemon 3
wait_metric "$D/m2.prom" 'ptbpf_uploads_total{result="ok"}' 1 || sfail "no upload confirmed within 30 s"
stop_sdaemon
echo "+${SECONDS}s: the capture uploaded once the bucket existed"
[ ! -e "$man" ] && [ ! -e "$zst" ] || sfail "the spool was not freed within 30 s of the bucket's creation"
for f in ptbpf_uploads_total ptbpf_upload_bytes_total ptbpf_upload_seconds ptbpf_upload_queue_files \
	ptbpf_upload_queue_bytes ptbpf_upload_errors_total ptbpf_upload_multipart_parts_total; do
	grep -q "^# TYPE $f " "$D/m2.prom" || sfail "/metrics lacks the $f family"
done
[ "$(metric 'ptbpf_uploads_total{result="ok"}' "$D/m2.prom")" = 1 ] || sfail "uploads_total ok != 1"
[ "$(metric ptbpf_upload_queue_files "$D/m2.prom")" = 0 ] || sfail "the queue is not empty"
echo "+${SECONDS}s: the metrics checked"
if command -v promtool >/dev/null; then
	promtool check metrics <"$D/m2.prom" || sfail "promtool rejects the daemon's /metrics"
fi
# the daemon's config serves ls and decode from anywhere (no AWS_* variables)
env -u AWS_ACCESS_KEY_ID -u AWS_SECRET_ACCESS_KEY HOME=$TMP "$PTBPF" captures ls s3://fleetd/fleet \
	--config "$D/etc/ptbpf.yaml" --rule slow-handle --since 1h --json >"$D/ls.json" 2>"$D/ls.err" ||
	{ cat "$D/ls.err"; fail "captures ls with the daemon's config"; }
[ "$(wc -l <"$D/ls.json")" = 1 ] || { cat "$D/ls.json"; fail "captures ls: not exactly the daemon's capture"; }
key=$(sed 's|.*"key":"\([^"]*\)".*|\1|' "$D/ls.json")
case $key in
fleet/v1/slow-handle/$(date -u +%Y/%m/%d)/*/"$(basename "$zst")") ;;
*) fail "the daemon's capture is not where the layout puts it: $key" ;;
esac
grep -q "\"comm\":\"fleet_server\"" "$D/ls.json" || fail "the listed manifest is not the daemon's"
mkdir -p "$TMP/tmpd"
export TMPDIR=$TMP/tmpd	# where decode s3:// downloads to: left empty
env -u AWS_ACCESS_KEY_ID -u AWS_SECRET_ACCESS_KEY HOME=$TMP "$PTBPF" decode "s3://fleetd/$key" \
	--config "$D/etc/ptbpf.yaml" -o "$D/s3.fxt" 2>"$D/dec.err" || { cat "$D/dec.err"; fail "decode s3:// of the daemon's capture"; }
"$PTBPF" decode "$TMP/spooled.perf.data.zst" -o "$D/spooled.fxt" 2>/dev/null || fail "decode of the spooled capture"
cmp -s "$D/s3.fxt" "$D/spooled.fxt" || fail "decode s3:// and the decode of the spooled file differ"
[ -z "$(ls -A "$TMP/tmpd")" ] || fail "decode s3:// left files behind: $(ls "$TMP/tmpd")"
kill -KILL "$srv"
echo "ok (+${SECONDS}s): the daemon captured, spooled, kept the capture while the bucket was missing, uploaded it, freed the spool; ls and decode s3:// from its config"

# --- side by side: SIGKILL mid-multipart (resume; NoSuchUpload), wrong secret, no bucket,
# and the captures ls set
# 40 MiB at 2 MB/s: five parts of 8 MiB, over 4 s each, so that a loaded machine still
# sees the state between two parts and kills well before the last one
dconf sk captures fleet "$TMP/creds.ini" 2000000 1
dconf su captures fleet "$TMP/creds.ini" 2000000 1
dconf bad captures fleet "$TMP/bad.ini" 0 2
dconf nb nosuchbucket fleet "$TMP/creds.ini" 0 2
dconf ls captures team/x "$TMP/creds.ini" 0 2	# the captures ls set, checked later
for d in bad nb ls sk su; do dstart "$d"; done
SKSTATE=$TMP/d-sk/spool/kill/huge.perf.data.zst.multipart
SUSTATE=$TMP/d-su/spool/gone/huge.perf.data.zst.multipart
# kill each once its saved state confirms parts (2 of sk's, 1 of su's): mid-multipart
for ((i = 0; i < 600; i++)); do
	[ -n "${sk_killed:-}" ] || { [ "$(state_parts "$SKSTATE")" -ge 2 ] && dkill sk && sk_killed=1; }
	[ -n "${su_killed:-}" ] || { [ "$(state_parts "$SUSTATE")" -ge 1 ] && dkill su && su_killed=1; }
	[ -n "${sk_killed:-}" ] && [ -n "${su_killed:-}" ] && break
	sleep 0.1
done
[ -n "${sk_killed:-}" ] && [ -n "${su_killed:-}" ] || { dfail sk "no multipart progress in 60 s"; }
k_parts=$(state_parts "$SKSTATE")
[ "$k_parts" -ge 2 ] && [ "$k_parts" -lt 5 ] ||
	dfail sk "killed too late: its state holds $k_parts confirmed parts (the upload ended?)"
for c in kill gone; do
	[ -z "$(keys captures fleet/v1/$c/)" ] || fail "after SIGKILL mid-multipart, objects exist under fleet/v1/$c/"
	[ -n "$(unfinished fleet/v1/$c/)" ] || fail "the killed daemon left no unfinished multipart upload under fleet/v1/$c/"
done
[ -f "$TMP/d-sk/spool/kill/huge.json" ] || fail "the capture left the spool before its upload was confirmed"
# the store forgets su's upload: its restart must start again, not fail or resume
su_id=$(sed 's/.*"upload_id":"\([^"]*\)".*/\1/' "$SUSTATE")
su_key=$(sed 's/.*"key":"\([^"]*\)".*/\1/' "$SUSTATE")
[ "$(s3 -X DELETE -H "x-amz-content-sha256: $EMPTY" -o /dev/null -w '%{http_code}' \
	"$E/captures/$su_key?uploadId=$su_id")" = 204 ] || fail "cannot abort su's upload $su_id"
[ -z "$(unfinished fleet/v1/gone/)" ] || fail "su's upload is still known to the store"
echo "+${SECONDS}s: sk killed with $k_parts parts confirmed, su's upload aborted on the store"
# restarted without the cap, which only made the first run slow enough to kill mid-way
dconf sk captures fleet "$TMP/creds.ini" 0 1
dconf su captures fleet "$TMP/creds.ini" 0 1
dstart sk
dstart su
# meanwhile the wrong secret and the missing bucket have been refused
dwait bad 'ptbpf_upload_errors_total{cause="auth"}' 2 30 || dfail bad "auth errors not counted"
dwait nb 'ptbpf_upload_errors_total{cause="no_bucket"}' 1 30 || dfail nb "no_bucket not counted"
dstop bad
dstop nb
[ "$(upload_lines bad | wc -l)" = 1 ] || dfail bad "wrong secret: not exactly one line"
upload_lines bad | grep -q 'SignatureDoesNotMatch.*fix the credentials' || dfail bad "wrong secret: no clear error"
[ "$(ls "$TMP/d-bad/spool/r1" | wc -l)" = 4 ] || fail "wrong secret: captures not kept in the spool"
echo "ok (+${SECONDS}s): wrong secret: $(upload_lines bad)"
[ "$(upload_lines nb | wc -l)" = 1 ] && upload_lines nb | grep -q 'bucket nosuchbucket does not exist' ||
	dfail nb "missing bucket: no clear error"
[ "$(ls "$TMP/d-nb/spool/r1" | wc -l)" = 4 ] || fail "missing bucket: captures not kept"
AWS_ACCESS_KEY_ID=$AK AWS_SECRET_ACCESS_KEY=$SK "$PTBPF" captures ls s3://nosuchbucket/fleet \
	--s3-endpoint "$E" >/dev/null 2>"$TMP/nbls.err" && fail "captures ls of a missing bucket succeeded"
grep -q 'does not exist' "$TMP/nbls.err" || { cat "$TMP/nbls.err"; fail "captures ls: unclear error"; }
echo "ok (+${SECONDS}s): missing bucket: $(upload_lines nb)"
dwait sk 'ptbpf_uploads_total{result="ok"}' 1 60 || dfail sk "the restarted daemon did not upload the capture"
dwait su 'ptbpf_uploads_total{result="ok"}' 1 60 || dfail su "the restarted daemon did not upload the capture"
dstop sk
dstop su
echo "+${SECONDS}s: sk and su restarted and uploaded"
# sk: the parts its state confirmed were not sent again, the others were
[ "$(dmetric sk 'ptbpf_upload_multipart_parts_total{result="resumed"}')" = "$k_parts" ] ||
	dfail sk "resumed parts: $(dmetric sk 'ptbpf_upload_multipart_parts_total{result="resumed"}'), its state confirmed $k_parts"
[ "$(dmetric sk 'ptbpf_upload_multipart_parts_total{result="sent"}')" = $((5 - k_parts)) ] ||
	dfail sk "parts sent after the restart: $(dmetric sk 'ptbpf_upload_multipart_parts_total{result="sent"}'), not $((5 - k_parts))"
upload_lines sk | grep -q "resuming upload .*, $k_parts of 5 parts already stored" || dfail sk "no resume in the log"
# su: started again, all five parts
upload_lines su | grep -q 'no longer knows upload .*NoSuchUpload.*starting it again' ||
	dfail su "the forgotten upload was not reported"
[ "$(dmetric su 'ptbpf_upload_multipart_parts_total{result="sent"}')" = 5 ] || dfail su "not 5 parts sent"
for c in kill gone; do
	[ "$(keys captures fleet/v1/$c/ | wc -l)" = 2 ] || fail "$c: capture + manifest not both uploaded after the restart"
	[ -z "$(unfinished fleet/v1/$c/)" ] || fail "$c: an unfinished multipart upload was left behind"
	rm -rf "$TMP/gotk"
	AWS_ACCESS_KEY_ID=$AK AWS_SECRET_ACCESS_KEY=$SK "$PTBPF" captures get \
		"s3://captures/$(keys captures fleet/v1/$c/ | grep zst)" -o "$TMP/gotk" --s3-endpoint "$E" >/dev/null ||
		fail "$c: get after the restart (sha256 of the manifest)"
	cmp -s "$TMP/gotk/huge.perf.data.zst" "$TMP/huge.zst" || fail "$c: the 40 MiB object differs"
done
[ -z "$(find "$TMP/d-sk/spool" "$TMP/d-su/spool" -type f)" ] ||
	fail "the spools were not freed: $(find "$TMP/d-sk/spool" "$TMP/d-su/spool" -type f)"
echo "ok (+${SECONDS}s): SIGKILL mid-multipart: nothing under the final name; restarted, $k_parts of 5 parts resumed, 5 sent again after NoSuchUpload, objects complete"

# --- the bandwidth cap (upload_tool: its timing is the uploader's alone) ---------------
# low enough that RGW on a loaded 2-core machine is never the bottleneck
RATE=2000000
t0=$(now_ns)
"$TOOL" --endpoint "$E" --host testhost --bucket captures --prefix fleet --credentials "$TMP/creds.ini" \
	--rate $RATE --concurrency 2 --metrics "$TMP/bw.prom" --until-empty "$TMP/bw" 2>"$TMP/bw.err" ||
	{ cat "$TMP/bw.err"; fail "bandwidth run"; }
t1=$(now_ns)
bytes=$(metric ptbpf_upload_bytes_total "$TMP/bw.prom")
rate=$(( bytes * 1000000000 / (t1 - t0) ))
echo "bandwidth: $bytes bytes in $(( (t1 - t0) / 1000000 )) ms = $rate B/s with a cap of $RATE B/s"
[ "$rate" -le $(( RATE * 110 / 100 )) ] || fail "bandwidth cap exceeded by more than 10 %"
# and the cap is what limits it (not bits for bytes...); a loaded machine's RGW may not
# keep up with even 2 MB/s, so this bound is loose
[ "$rate" -ge $(( RATE * 50 / 100 )) ] || fail "uploads far slower than the cap"
dwait ls 'ptbpf_uploads_total{result="ok"}' 5 60 || dfail ls "the 5 captures were not uploaded"
dstop ls

# --- captures ls: exact sets ------------------------------------------------------------
ls_names() {
	AWS_ACCESS_KEY_ID=$AK AWS_SECRET_ACCESS_KEY=$SK "$PTBPF" captures ls s3://captures/team/x \
		--s3-endpoint "$E" --json "$@" | sed 's|.*"key":"[^"]*/\([^/"]*\)\.perf\.data\.zst".*|\1|' | tr '\n' ' '
}
check_ls() {
	local want=$1 got
	shift
	got=$(ls_names "$@")
	[ "$got" = "$want" ] || fail "captures ls $*: got '$got', want '$want'"
}
check_ls "a_now b_now " --since 2h
check_ls "a_now b_now a_3h " --since 4h
check_ls "a_now a_3h a_30h " --rule alpha
check_ls "a_now a_3h " --rule alpha --since 1d
check_ls "b_now b_50h " --rule beta --since 3d
check_ls "a_now a_30h b_50h " --host web1
check_ls "a_now a_30h " --rule alpha --host web1 --since 2d --since 40h
check_ls "a_now b_now a_3h a_30h b_50h "
AWS_ACCESS_KEY_ID=$AK AWS_SECRET_ACCESS_KEY=$SK "$PTBPF" captures ls s3://captures/team/x \
	--s3-endpoint "$E" --rule alpha >"$TMP/ls.txt" || fail "captures ls (table)"
[ "$(grep -c 'alpha  *uprobe_latency  *5.30ms' "$TMP/ls.txt")" = 3 ] || { cat "$TMP/ls.txt"; fail "ls table"; }
echo "ok (+${SECONDS}s): captures ls --since/--rule/--host exact sets"

# --- decode s3:// == decode of the local capture ----------------------------------------
key=$(AWS_ACCESS_KEY_ID=$AK AWS_SECRET_ACCESS_KEY=$SK "$PTBPF" captures ls s3://captures/team/x \
	--s3-endpoint "$E" --rule beta --since 1h --json | sed 's|.*"key":"\([^"]*\)".*|\1|')
cat >"$TMP/ptbpf.yaml" <<EOF
host_labels: {dc: test}
upload:
  s3: {endpoint: "$E", region: us-east-1, bucket: captures, prefix: team/x, path_style: true,
       credentials_file: $TMP/creds.ini}
  max_bytes_per_second: 20M
  concurrency: 2
EOF
env -u AWS_ACCESS_KEY_ID -u AWS_SECRET_ACCESS_KEY HOME=$TMP "$PTBPF" decode "s3://captures/$key" \
	--config "$TMP/ptbpf.yaml" -o "$TMP/s3.fxt" 2>"$TMP/dec.err" || { cat "$TMP/dec.err"; fail "decode s3://"; }
"$PTBPF" decode "$TMP/rec.data" -o "$TMP/local.fxt" 2>/dev/null || fail "decode of the local capture"
cmp -s "$TMP/s3.fxt" "$TMP/local.fxt" || fail "decode s3:// and the local decode differ"
AWS_ACCESS_KEY_ID=$AK AWS_SECRET_ACCESS_KEY=$SK "$PTBPF" decode "s3://captures/$key" --s3-endpoint "$E" \
	--format text -o "$TMP/s3.txt" 2>/dev/null || fail "decode s3:// --format text"
"$PTBPF" decode "$TMP/rec.data" --format text -o "$TMP/local.txt" 2>/dev/null
cmp -s "$TMP/s3.txt" "$TMP/local.txt" || fail "text outputs differ"
grep -q ' main ' "$TMP/s3.txt" || fail "no main in the decoded capture"
[ -z "$(ls -A "$TMP/tmpd")" ] || fail "decode s3:// left files behind: $(ls "$TMP/tmpd")"
# one command from the bucket to the Perfetto UI: decode --open serves the trace once on
# 127.0.0.1 for ui.perfetto.dev (CORS), as Perfetto's open_trace_in_ui does; here curl
# plays the browser
OPORT=${PTBPF_OPEN_TEST_PORT:-$P_O}
AWS_ACCESS_KEY_ID=$AK AWS_SECRET_ACCESS_KEY=$SK "$PTBPF" decode "s3://captures/$key" --s3-endpoint "$E" \
	-o "$TMP/open.fxt" --open=$OPORT 2>"$TMP/open.err" &
open_pid=$!
pids+=("$open_pid")
for _ in $(seq 200); do grep -q "url=http://127.0.0.1:$OPORT/open.fxt" "$TMP/open.err" && break; sleep 0.1; done
grep -q "open https://ui.perfetto.dev/#!/?url=http://127.0.0.1:$OPORT/open.fxt" "$TMP/open.err" ||
	{ cat "$TMP/open.err"; fail "decode --open printed no Perfetto URL"; }
curl -sS -H "Origin: https://ui.perfetto.dev" -D "$TMP/open.hdr" -o "$TMP/open.got" \
	"http://127.0.0.1:$OPORT/open.fxt" || fail "cannot fetch the served trace"
grep -qi '^Access-Control-Allow-Origin: https://ui.perfetto.dev' "$TMP/open.hdr" || fail "no CORS header for the UI"
cmp -s "$TMP/open.got" "$TMP/local.fxt" || fail "the served trace differs"
wait "$open_pid" || fail "decode --open did not exit 0 after the trace was fetched"
# a corrupt object: its manifest's sha256 does not match -> refused, nothing decoded
sed 's/"sha256":"[0-9a-f]*"/"sha256":"0000000000000000000000000000000000000000000000000000000000000000"/' \
	"$TMP/template.json" >"$TMP/corrupt.json"
cp "$TMP/rec.zst" "$TMP/corrupt.perf.data.zst"
for f in corrupt.perf.data.zst corrupt.json; do
	s3 -X PUT -H "x-amz-content-sha256: $(sha256sum "$TMP/$f" | cut -d' ' -f1)" --data-binary @"$TMP/$f" \
		"$E/captures/bad/$f" -o /dev/null || fail "put $f"
done
AWS_ACCESS_KEY_ID=$AK AWS_SECRET_ACCESS_KEY=$SK "$PTBPF" decode s3://captures/bad/corrupt.perf.data.zst \
	--s3-endpoint "$E" -o "$TMP/bad.fxt" 2>"$TMP/bad-dec.err" && fail "a corrupt capture was decoded"
grep -q 'sha256' "$TMP/bad-dec.err" || { cat "$TMP/bad-dec.err"; fail "corrupt capture: unclear error"; }
[ ! -e "$TMP/bad.fxt" ] || fail "a trace was written for a corrupt capture"
[ -z "$(ls -A "$TMP/tmpd")" ] || fail "a failed decode s3:// left files behind: $(ls "$TMP/tmpd")"
echo "ok (+${SECONDS}s): decode s3:// equals the local decode; a corrupt object is refused"

# --- 50 captures through the daemon, RGW down for 30 s in the middle -------------------
# 80 MB at 12 MB/s: still sending when RGW goes away
dconf s50 captures fleet "$TMP/creds.ini" 12000000 2
dstart s50
echo "+${SECONDS}s: 50 captures spooled, the daemon uploads them"
sleep 2
rgw_pid=$(cat "$RGW_BASE/run/client.rgw.a.pid")
kill -TERM "$rgw_pid"
while [ -e "/proc/$rgw_pid" ] && ! grep -q '^State:.*Z' "/proc/$rgw_pid/status" 2>/dev/null; do sleep 0.1; done
left=$(ls "$TMP/d-s50/spool/slow" | grep -c '\.json$')
echo "+${SECONDS}s: RGW stopped with $left of 50 manifests still spooled"
[ "$left" -gt 0 ] || fail "every capture was uploaded before RGW stopped: the outage tests nothing"
sleep 30
kill -0 "${DPID[s50]}" 2>/dev/null || dfail s50 "the daemon exited while RGW was down"
"$SERVERS/rgw-up.sh" >/dev/null 2>"$TMP/rgw2.log" || { cat "$TMP/rgw2.log"; fail "RGW restart"; }
echo "+${SECONDS}s: RGW restarted, $(ls "$TMP/d-s50/spool/slow" | grep -c '\.json$') manifests spooled"
dwait s50 'ptbpf_uploads_total{result="ok"}' 50 120 || dfail s50 "not every capture was uploaded"
dwait s50 'ptbpf_upload_errors_total{cause="network"}' 1 5 || dfail s50 "the outage is not in ptbpf_upload_errors_total{cause=\"network\"}"
cp "$TMP/d-s50/prom/ptbpf.prom" "$TMP/s50.prom"
dstop s50
echo "+${SECONDS}s: the daemon drained the spool"
[ -z "$(ls -A "$TMP/d-s50/spool/slow")" ] || fail "spool not empty: $(ls "$TMP/d-s50/spool/slow" | head)"
keys captures fleet/v1/slow/ >"$TMP/s50.keys"
[ "$(wc -l <"$TMP/s50.keys")" = 100 ] || { cat "$TMP/s50.keys"; fail "expected 100 objects, got $(wc -l <"$TMP/s50.keys")"; }
[ "$(grep -c '\.perf\.data\.zst$' "$TMP/s50.keys")" = 50 ] || fail "not 50 captures"
"${PYTHON:-python3}" - "$TMP/s50.keys" "$(date -u -d @$((T0 / 1000000000)) +%Y/%m/%d)" <<'PY' ||
import sys
keys = set(open(sys.argv[1]).read().split())
want = {f"fleet/v1/slow/{sys.argv[2]}/h{i % 3}/c{i:02d}.{ext}"
        for i in range(1, 51) for ext in ("perf.data.zst", "json")}
sys.exit(0 if keys == want else print("unexpected:", sorted(keys - want), "missing:", sorted(want - keys)) or 1)
PY
	fail "the objects are not exactly the 50 captures and manifests where the layout puts them"
# every capture as spooled, by its ETag: the small ones (copies of rec.zst) the MD5 of a
# single PUT, the four multipart ones (big.zst) the MD5 of their 8 MiB parts' MD5s, "-5"
# (the uploader checked each part's MD5 and the whole file's sha256 before it sent them)
n=$(s3 -H "x-amz-content-sha256: $EMPTY" "$E/captures?list-type=2&max-keys=1000&prefix=fleet%2Fv1%2Fslow%2F" |
	"${PYTHON:-python3}" -c '
import hashlib, sys, xml.etree.ElementTree as ET
ns = {"s": "http://s3.amazonaws.com/doc/2006-03-01/"}
small = hashlib.md5(open(sys.argv[1], "rb").read()).hexdigest()
data = open(sys.argv[2], "rb").read()
parts = [data[i:i + (8 << 20)] for i in range(0, len(data), 8 << 20)]
big = hashlib.md5(b"".join(hashlib.md5(p).digest() for p in parts)).hexdigest() + "-%d" % len(parts)
root = ET.fromstring(sys.stdin.read())
etags = {c.find("s:Key", ns).text.rsplit("/", 1)[1]: c.find("s:ETag", ns).text.strip(chr(34))
         for c in root.findall("s:Contents", ns) if c.find("s:Key", ns).text.endswith(".zst")}
print(sum(1 for k, e in etags.items() if e == (big if k < "c05" else small)))' "$TMP/rec.zst" "$TMP/big.zst")
[ "$n" = 50 ] || fail "$n of the 50 captures have the ETag of what was spooled"
[ "$(metric 'ptbpf_uploads_total{result="ok"}' "$TMP/s50.prom")" = 50 ] || { cat "$TMP/s50.prom"; fail "uploads_total ok != 50"; }
if command -v promtool >/dev/null; then
	promtool check metrics <"$TMP/s50.prom" || fail "promtool rejects the daemon's metrics"
fi
[ "$(upload_lines s50 | grep -c 'cannot reach')" = 1 ] || dfail s50 "the outage is not logged exactly once"
# captures ls fetches the 50 manifests concurrently: exactly the 50, newest first
AWS_ACCESS_KEY_ID=$AK AWS_SECRET_ACCESS_KEY=$SK "$PTBPF" captures ls s3://captures/fleet --rule slow \
	--s3-endpoint "$E" --json >"$TMP/s50.ls" 2>"$TMP/s50.lserr" || { cat "$TMP/s50.lserr"; fail "captures ls of the 50"; }
sed 's|.*"key":"\([^"]*\)".*|\1|' "$TMP/s50.ls" >"$TMP/s50.lskeys"
[ "$(sort "$TMP/s50.lskeys")" = "$(grep '\.zst$' "$TMP/s50.keys")" ] ||
	fail "captures ls --json does not list exactly the 50 captures"
[ "$(sed 's|.*/\(c[0-9]*\)\.perf.*|\1|' "$TMP/s50.lskeys" | tr '\n' ' ')" = "$(seq -f 'c%02g' 50 -1 1 | tr '\n' ' ')" ] ||
	fail "captures ls: not newest first"
echo "ok (+${SECONDS}s): 50 captures landed once across a 30 s outage ($(metric 'ptbpf_upload_errors_total{cause="network"}' "$TMP/s50.prom") failed attempts, retried); ls lists exactly them"

# --- no secret anywhere -----------------------------------------------------------------
if grep -rl -- "$SK" "$TMP"/*.err "$TMP"/*.prom "$TMP"/*.txt "$TMP/got" "$TMP"/d-*/log "$TMP"/d-*/prom \
	"$D/log" "$D"/*.prom "$D"/*.json "$TMP"/*.ls 2>/dev/null; then
	fail "the secret key appears in a log, metric or manifest"
fi
echo "ok (+${SECONDS}s): the secret is in no log, metric or manifest"
