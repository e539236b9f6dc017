#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# Upload throughput of the daemon's uploader (tests/tools/upload_tool: a spool of
# captures and manifests, one upload at a time) to a local Ceph RGW, against
# `curl --aws-sigv4` uploading the same files one after the other (baseline; its
# x-amz-content-sha256 computed by sha256sum, as the uploader computes its own), and the
# uploader's CPU time per uploaded MB. Goal: >= 0.9x curl's MB/s.
set -u
: "${BUILD:?}"
here=$(cd "$(dirname "$0")" && pwd)
SERVERS=$here/../servers
TOOL=$BUILD/tests/upload_tool
for b in radosgw ceph-mon ceph-osd curl; do
	command -v "$b" >/dev/null || { echo "SKIP: $b not installed"; exit 0; }
done
TMP=$(mktemp -d "/tmp/ptbpf-s3bench-$$-XXXXXX")
export RGW_BASE=/dev/shm/ptbpf-rgw-bench-$$ RGW_PORT=${PTBPF_RGW_BENCH_PORT:-17495}
export RGW_MON_V2_PORT=13315 RGW_MON_V1_PORT=16795 RGW_ACCESS_KEY=BENCHKEY RGW_SECRET_KEY=bench-secret
trap '"$SERVERS/rgw-down.sh" 2>/dev/null; rm -rf "$TMP"' EXIT
E=http://127.0.0.1:$RGW_PORT
EMPTY=e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855
"$SERVERS/rgw-up.sh" >/dev/null 2>"$TMP/rgw.log" || { cat "$TMP/rgw.log"; echo "FAIL: RGW"; exit 1; }
s3() { curl -sS --aws-sigv4 aws:amz:us-east-1:s3 --user "$RGW_ACCESS_KEY:$RGW_SECRET_KEY" "$@"; }
s3 -X PUT -H "x-amz-content-sha256: $EMPTY" "$E/bench" -o /dev/null
printf '[default]\naws_access_key_id = %s\naws_secret_access_key = %s\n' \
	"$RGW_ACCESS_KEY" "$RGW_SECRET_KEY" >"$TMP/creds.ini"
chmod 600 "$TMP/creds.ini"

# 4 captures of 16 MiB (single PUTs) and one of 64 MiB (multipart for the uploader)
mkdir -p "$TMP/files"
for i in 1 2 3 4; do head -c $((16 << 20)) /dev/urandom >"$TMP/files/f$i.perf.data.zst"; done
head -c $((64 << 20)) /dev/urandom >"$TMP/files/f5.perf.data.zst"
total=$(cat "$TMP/files"/* | wc -c)
mb=$(awk -v b="$total" 'BEGIN { print b / 1e6 }')

spool() {
	local f n
	rm -rf "$TMP/spool"
	mkdir -p "$TMP/spool/bench"
	for f in "$TMP/files"/*; do
		n=$(basename "$f" .perf.data.zst)
		cp "$f" "$TMP/spool/bench/"
		printf '{"version":1,"host":"b","rule":"bench","time_ns":%s,"capture":"%s","bytes":%s,"sha256":"%s"}\n' \
			"$(date +%s%N)" "$n.perf.data.zst" "$(stat -c %s "$f")" \
			"$(sha256sum "$f" | cut -d' ' -f1)" >"$TMP/spool/bench/$n.json"
	done
}
now() { date +%s.%N; }
best_tool=0 best_curl=0 cpu_per_mb=0
for round in 1 2 3; do
	spool
	t0=$(now)
	/usr/bin/time -f '%U %S' -o "$TMP/cpu" "$TOOL" --endpoint "$E" --bucket bench --prefix p \
		--credentials "$TMP/creds.ini" --concurrency 1 --until-empty "$TMP/spool" 2>"$TMP/tool.err" ||
		{ cat "$TMP/tool.err"; echo "FAIL: upload_tool"; exit 1; }
	t1=$(now)
	tool=$(awk -v a="$t0" -v b="$t1" -v mb="$mb" 'BEGIN { print mb / (b - a) }')
	cpu=$(awk -v mb="$mb" '{ print ($1 + $2) / mb * 1000 }' "$TMP/cpu")
	t0=$(now)
	for f in "$TMP/files"/*; do
		s3 -H "x-amz-content-sha256: $(sha256sum "$f" | cut -d' ' -f1)" -T "$f" \
			"$E/bench/curl/$(basename "$f")" -o /dev/null || { echo "FAIL: curl"; exit 1; }
	done
	t1=$(now)
	curl_rate=$(awk -v a="$t0" -v b="$t1" -v mb="$mb" 'BEGIN { print mb / (b - a) }')
	printf 'round %d: uploader %.1f MB/s (%.2f ms CPU per MB), curl --aws-sigv4 %.1f MB/s\n' \
		"$round" "$tool" "$cpu" "$curl_rate"
	best_tool=$(awk -v a="$best_tool" -v b="$tool" 'BEGIN { print (b > a) ? b : a }')
	best_curl=$(awk -v a="$best_curl" -v b="$curl_rate" 'BEGIN { print (b > a) ? b : a }')
	cpu_per_mb=$(awk -v a="$cpu_per_mb" -v b="$cpu" -v r="$round" 'BEGIN { print (r == 1 || b < a) ? b : a }')
done
# The daemon itself on the same spool: its whole CPU time (start-up, spool scan, metrics,
# uploads) per uploaded MB, from /proc/PID/stat just before it stops.
spool
mkdir -p "$TMP/prom"
cat >"$TMP/ptbpf.yaml" <<EOF
spool: {dir: $TMP/spool, max_bytes: 1G, max_files: 100}
metrics: {textfile_dir: $TMP/prom}
upload:
  s3: {endpoint: "$E", bucket: bench, prefix: d, path_style: true, credentials_file: $TMP/creds.ini}
  concurrency: 1
EOF
nfiles=$(ls "$TMP/files" | wc -l)
t0=$(now)
"$BUILD/ptbpf" daemon --config "$TMP/ptbpf.yaml" --state-dir "$TMP/state" 2>"$TMP/daemon.log" &
dpid=$!
for _ in $(seq 1200); do
	[ "$(awk '$1 == "ptbpf_uploads_total{result=\"ok\"}" { print $2 }' "$TMP/prom/ptbpf.prom" 2>/dev/null)" = "$nfiles" ] && break
	sleep 0.1
done
t1=$(now)
ticks=$(awk '{ print $14 + $15 }' "/proc/$dpid/stat")
kill -TERM "$dpid"
wait "$dpid" || { cat "$TMP/daemon.log"; echo "FAIL: daemon"; exit 1; }
[ -z "$(ls "$TMP/spool/bench")" ] || { cat "$TMP/daemon.log"; echo "FAIL: the daemon did not drain the spool"; exit 1; }
daemon_cpu=$(awk -v t="$ticks" -v hz="$(getconf CLK_TCK)" -v mb="$mb" 'BEGIN { print t / hz / mb * 1000 }')
daemon_rate=$(awk -v a="$t0" -v b="$t1" -v mb="$mb" 'BEGIN { print mb / (b - a) }')
awk -v t="$best_tool" -v c="$best_curl" -v cpu="$cpu_per_mb" -v mb="$mb" -v dc="$daemon_cpu" -v dr="$daemon_rate" 'BEGIN {
	printf "s3 upload (%.0f MB, best of 3): uploader %.1f MB/s, curl --aws-sigv4 %.1f MB/s: ratio %.2f (goal >= 0.9); uploader CPU %.2f ms per MB\n",
	       mb, t, c, t / c, cpu
	printf "s3 upload through ptbpf daemon (one run, start to drained, metrics polled at 10 Hz): %.1f MB/s; daemon CPU %.2f ms per uploaded MB\n", dr, dc }'
