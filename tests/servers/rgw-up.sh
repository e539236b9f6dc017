#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# rgw-up.sh - start a throw-away one-node Ceph RADOS Gateway (S3) on 127.0.0.1.
# Debian 12 packages: apt-get install -y --no-install-recommends radosgw ceph-mon ceph-osd ceph-common
# 1 mon + 1 memstore OSD + 1 radosgw, no mgr, no systemd; all state on tmpfs.
# Idempotent: if our cluster already answers, just prints its details; otherwise
# stops any leftovers of ours (by PID), wipes the state dir and builds a fresh cluster.
# Output (stdout): RGW_ENDPOINT=, RGW_ACCESS_KEY=, RGW_SECRET_KEY=, RGW_PIDS= lines.
set -euo pipefail

BASE=${RGW_BASE:-/dev/shm/ptbpf-rgw-test}          # must be tmpfs (or a disk with >5% free)
MON_V2=${RGW_MON_V2_PORT:-13300}
MON_V1=${RGW_MON_V1_PORT:-16789}
PORT=${RGW_PORT:-17480}
AK=${RGW_ACCESS_KEY:-AK}
SK=${RGW_SECRET_KEY:-SK}
WAIT=${RGW_WAIT_S:-120}                       # readiness timeout, seconds
ENDPOINT=http://127.0.0.1:$PORT
CONF=$BASE/ceph.conf
DAEMONS="client.rgw.a osd.0 mon.a"

ours() { grep -qaF -- "$CONF" "/proc/$1/cmdline" 2>/dev/null; }   # guards against PID reuse
# a killed daemon stays a zombie until PID 1 reaps it (~1 s here, maybe never in a container): count Z as gone
running() { local st; st=$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null) && [ "${st%% *}" != Z ]; }
die() { echo "rgw-up: ERROR: $*" >&2; exit 1; }
log() { echo "rgw-up: $*" >&2; }
alive() { local p; p=$(cat "$BASE/run/$1.pid" 2>/dev/null) && [ -n "$p" ] && running "$p" && ours "$p"; }
pids() { local n out=""; for n in $DAEMONS; do out="$out $(cat "$BASE/run/$n.pid" 2>/dev/null || echo '?')"; done; echo "${out# }"; }
report() {
  echo "RGW_ENDPOINT=$ENDPOINT"
  echo "RGW_ACCESS_KEY=$AK"
  echo "RGW_SECRET_KEY=$SK"
  echo "RGW_REGION=us-east-1"
  echo "RGW_PIDS=\"$(pids)\"   # rgw osd mon; stop: kill \$RGW_PIDS (or rgw-down.sh)"
}
http_code() { curl -s -m 2 -o /dev/null -w '%{http_code}' "$ENDPOINT/" 2>/dev/null || true; }
port_busy() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
stop_all() {     # SIGKILL our daemons by PID (state is throw-away) and wait until gone
  local n p list=""
  for n in $DAEMONS; do p=$(cat "$BASE/run/$n.pid" 2>/dev/null) || continue
    [ -n "$p" ] && ours "$p" && kill -KILL "$p" 2>/dev/null && list="$list $p"; done
  for p in $list; do while running "$p"; do sleep 0.05; done; done
}
fail_start() {   # show the failing daemon's log, stop everything, keep $BASE for inspection
  log "ERROR: $1"
  cat "$BASE/log/$2.stderr" >&2 2>/dev/null; grep -a ' -1 ' "$BASE/log/$2.log" 2>/dev/null | tail -n 5 >&2
  stop_all; log "daemons stopped; logs kept in $BASE/log (next rgw-up.sh run wipes them)"; exit 1
}

for b in ceph ceph-mon ceph-osd radosgw radosgw-admin ceph-authtool monmaptool curl; do
  command -v "$b" >/dev/null || die "$b not found: apt-get install -y --no-install-recommends radosgw ceph-mon ceph-osd ceph-common curl"
done

wait_200() {      # wait until GET / answers 200; fail if a daemon dies or the deadline passes
  local deadline=$(( $(date +%s) + WAIT )) n
  until [ "$(http_code)" = 200 ]; do
    # A daemon returns once it has forked; its child writes the pid file a moment later
    # (later still on a loaded machine): no pid file yet is a daemon still starting.
    for n in $DAEMONS; do
      [ -s "$BASE/run/$n.pid" ] || continue
      alive "$n" || fail_start "$n died during start-up" "$n"
    done
    [ "$(date +%s)" -lt "$deadline" ] || fail_start "RGW did not answer 200 on $ENDPOINT within ${WAIT}s" client.rgw.a
    sleep 0.2
  done
}

# 1. Already running? (idempotent). mon+osd alive but radosgw gone: restart radosgw only (data kept).
if alive mon.a && alive osd.0; then
  if ! alive client.rgw.a; then
    log "mon and osd alive, radosgw not: restarting radosgw only (buckets/objects/users are kept)"
    radosgw -c "$CONF" -n client.rgw.a 2>>"$BASE/log/client.rgw.a.stderr" || fail_start "radosgw failed to start" client.rgw.a
  fi
  wait_200; log "already running"; report; exit 0
fi
# 2. Leftovers of ours (partly dead cluster): stop them by PID and wipe.
if [ -d "$BASE" ]; then log "stopping leftovers in $BASE"; stop_all; rm -rf "$BASE"; fi
# 3. Ports must be free.
for p in $MON_V2 $MON_V1 $PORT; do
  port_busy "$p" && die "port 127.0.0.1:$p is busy (another process listens there); free it or set RGW_MON_V2_PORT/RGW_MON_V1_PORT/RGW_PORT"
done

# 4. Space: the mon refuses to start below 'mon data avail crit' (5% free) and its rocksdb
#    preallocates ~40 MB (a 64 MB tmpfs worked for one short run; 100 MB is the floor here).
mkdir -p "$BASE"
avail_mb=$(df -Pm "$BASE" | awk 'NR==2 {print $4}')
[ "${avail_mb:-0}" -ge 100 ] || { rm -rf "$BASE"; die "only ${avail_mb} MB free under $BASE; need >= 100 MB (set RGW_BASE)"; }

T0=$(date +%s%N)
el() { local ms=$(( ($(date +%s%N) - T0) / 1000000 )); printf '%d.%03d' $((ms / 1000)) $((ms % 1000)); }
mkdir -p "$BASE"/{run,log,mon.a,osd.0}
FSID=$(cat /proc/sys/kernel/random/uuid)
cat > "$CONF" <<EOF
[global]
fsid = $FSID
mon host = [v2:127.0.0.1:$MON_V2,v1:127.0.0.1:$MON_V1]
mon initial members = a
public addr = 127.0.0.1
cluster addr = 127.0.0.1
auth cluster required = cephx
auth service required = cephx
auth client required = cephx
keyring = $BASE/\$name.keyring
run dir = $BASE/run
admin socket = $BASE/run/\$name.asok
pid file = $BASE/run/\$name.pid
log file = $BASE/log/\$name.log
log to stderr = false
client mount timeout = 30
paxos propose interval = 0.1
osd pool default size = 1
osd pool default min size = 1
osd pool default pg num = 8
osd pool default pgp num = 8
osd pool default pg autoscale mode = off
mon allow pool size one = true
mon warn on pool no redundancy = false
osd crush chooseleaf type = 0
[mon.a]
mon data = $BASE/mon.a
[osd.0]
osd data = $BASE/osd.0
osd objectstore = memstore
memstore device bytes = 1073741824
# SIGTERM then dumps the memstore into the osd data dir, so an OSD restart keeps the data
osd fast shutdown = false
[client.rgw.a]
rgw frontends = beast endpoint=127.0.0.1:$PORT
EOF
C=(-c "$CONF")

# Keys: mon., client.admin, osd.0, client.rgw.a all go into the mon keyring; mon --mkfs imports them.
A=ceph-authtool
$A --create-keyring "$BASE/mon.a.keyring" --gen-key -n mon. --cap mon 'allow *' >/dev/null
$A --create-keyring "$BASE/client.admin.keyring" --gen-key -n client.admin \
   --cap mon 'allow *' --cap osd 'allow *' --cap mgr 'allow *' >/dev/null
$A --create-keyring "$BASE/osd.0.keyring" --gen-key -n osd.0 \
   --cap mon 'allow profile osd' --cap osd 'allow *' --cap mgr 'allow profile osd' >/dev/null
$A --create-keyring "$BASE/client.rgw.a.keyring" --gen-key -n client.rgw.a \
   --cap mon 'allow rw' --cap osd 'allow rwx' >/dev/null
for k in client.admin osd.0 client.rgw.a; do $A "$BASE/mon.a.keyring" --import-keyring "$BASE/$k.keyring" >/dev/null; done
monmaptool --create --addv a "[v2:127.0.0.1:$MON_V2,v1:127.0.0.1:$MON_V1]" --fsid "$FSID" "$BASE/monmap" >/dev/null 2>&1 \
  || die "monmaptool failed"

ceph-mon "${C[@]}" --mkfs -i a --monmap "$BASE/monmap" --keyring "$BASE/mon.a.keyring" >"$BASE/log/mkfs.log" 2>&1 \
  || { cat "$BASE/log/mkfs.log" >&2; die "ceph-mon --mkfs failed"; }
ceph-mon "${C[@]}" -i a 2>>"$BASE/log/mon.a.stderr" || fail_start "ceph-mon failed to start" mon.a          # forks; writes run/mon.a.pid
OSD_ID=$(timeout 40 ceph "${C[@]}" osd create 2>>"$BASE/log/cli.log") || fail_start "mon not answering ('ceph osd create' failed)" mon.a
[ "$OSD_ID" = 0 ] || fail_start "unexpected osd id '$OSD_ID'" mon.a
log "mon up, osd.0 allocated at +$(el)s"
# --no-mon-config: otherwise mkfs dies with "failed to fetch mon config"
ceph-osd "${C[@]}" -i 0 --mkfs --no-mon-config --keyring "$BASE/osd.0.keyring" >"$BASE/log/osd-mkfs.log" 2>&1 \
  || { cat "$BASE/log/osd-mkfs.log" >&2; fail_start "ceph-osd --mkfs failed" osd.0; }
ceph-osd "${C[@]}" -i 0 2>>"$BASE/log/osd.0.stderr" || fail_start "ceph-osd failed to start" osd.0   # adds itself to CRUSH host=$(hostname -s)
radosgw "${C[@]}" -n client.rgw.a 2>>"$BASE/log/client.rgw.a.stderr" || fail_start "radosgw failed to start" client.rgw.a  # waits for the OSD by itself

wait_200   # readiness: anonymous GET / answers 200 (an empty ListAllMyBuckets)
log "S3 answers 200 at +$(el)s"
radosgw-admin "${C[@]}" -n client.admin user create --uid test --display-name test \
  --access-key "$AK" --secret-key "$SK" >"$BASE/log/user-create.log" 2>&1 \
  || { cat "$BASE/log/user-create.log" >&2; fail_start "radosgw-admin user create failed" client.rgw.a; }
log "user test ($AK) created at +$(el)s; ready"
report
