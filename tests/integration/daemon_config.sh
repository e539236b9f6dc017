#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# The daemon's configuration: the installed example parses; `--check-config` names the
# file and line of each error and exits 2; the daemon refuses to start on an invalid
# configuration (exit 2, the line in its log); and, as sshd's StrictModes, it refuses a
# configuration file, drop-in file or drop-in directory not owned by root or writable by
# group or others, naming the path and the fix.
. "$(dirname "$0")/daemon_common.inc"

# check FILE: --check-config, output in $TMP/check.out, exit status in $RC
check() {
	"$PTBPF" daemon --check-config "$1" >"$TMP/check.out" 2>&1
	RC=$?
}

# refused WHAT PATTERN: --check-config of $CFG exits 2 with PATTERN in its output
refused() {
	check "$CFG"
	[ "$RC" = 2 ] || { cat "$TMP/check.out"; fail "$1: exit $RC, want 2"; }
	grep -qE -- "$2" "$TMP/check.out" || { cat "$TMP/check.out"; fail "$1: no '$2'"; }
	echo "$1: $(head -1 "$TMP/check.out")"
}

check "$TOP/user/daemon/ptbpf.yaml"
[ "$RC" = 0 ] || { cat "$TMP/check.out"; fail "the example configuration does not parse"; }
echo "example: $(cat "$TMP/check.out")"

base_config "rules:
  - name: ok
    trigger: {uprobe: \"$SERVER:handle\"}
    capture: {backend: events-only}"
check "$CFG"
[ "$RC" = 0 ] || { cat "$TMP/check.out"; fail "a valid configuration is refused"; }

base_config "rules:
  - name: typo
    trigger: {uprobe: \"$SERVER:handle\"}
    budjet: {max_per_hour: 3}"
refused "unknown key" "^ptbpf: $CFG:7: .*budjet"

base_config "rules:
  - name: dur
    trigger: {uprobe: \"$SERVER:handle\", latency_over: 5ms}
    budget: {cooldown: 10}"
refused "bad duration" "^ptbpf: $CFG:7: budget.cooldown: invalid duration '10'"

base_config "rules:
  - name: be
    trigger: {uprobe: \"$SERVER:handle\"}
    capture: {backend: turbo}"
refused "bad backend" "$CFG:7: rule be: capture.backend 'turbo'"

base_config "rules:
  - name: tm
    trigger: {uprobe: \"$SERVER:handle\"}
    capture: {backend: auto, timing: fast}"
refused "bad timing" "$CFG:7: rule tm: capture.timing 'fast': expected tsc, mtc or cyc"

base_config "rules:
  - name: ss
    match: {binary: $SERVER}
    trigger: {uprobe: \"$SERVER:handle\"}
    capture: {backend: singlestep}"
refused "singlestep without pid" "$CFG:8: rule ss: the singlestep backend needs match.pid"

base_config "rules:
  - name: sym
    trigger: {uprobe: \"$SERVER:handel\"}"
refused "unknown symbol" "$CFG:6: rule sym: trigger: .*no function 'handel'.*did you mean handle"

# a threshold the capture command refuses: one line, with the rule's line and why
base_config "rules:
  - name: rq
    trigger: {runq_latency_over: 0ms}
    capture: {backend: events-only}"
refused "zero threshold" "$CFG:6: rule rq: trigger: .*must be more than 0"
[ "$(wc -l <"$TMP/check.out")" = 1 ] || { cat "$TMP/check.out"; fail "zero threshold: not one line"; }
base_config "rules:
  - name: rq
    trigger: {runq_latency_over: 5}
    capture: {backend: events-only}"
refused "threshold without unit" "$CFG:6: rule rq: trigger: .*'5' \\(a number with a unit"
[ "$(wc -l <"$TMP/check.out")" = 1 ] || { cat "$TMP/check.out"; fail "threshold without unit: not one line"; }

base_config "rules:
  - name: two
    trigger: {uprobe: \"$SERVER:handle\", tracepoint: \"sched:sched_switch\"}"
refused "two triggers" "$CFG:6: rule two: trigger: give exactly one"

printf 'spool: {dir: relative/spool}\n' >"$CFG"
refused "relative spool" "$CFG:1: spool.dir 'relative/spool' must be an absolute path"
base_config
cat >"$CFG" <<EOF
spool: {dir: $SPOOL}
metrics: {listen: "0.0.0.0:9432"}
EOF
refused "metrics beyond loopback" "$CFG:2: metrics.listen '0.0.0.0:9432': not loopback"

base_config
printf 'rules:\n  - name: a\n   trigger: [\n' >"$RULES/10-syntax.yaml"
refused "YAML syntax" "$RULES/10-syntax.yaml:[0-9]+: "
printf 'spool: {dir: /x}\n' >"$RULES/10-syntax.yaml"
refused "global key in a drop-in" "$RULES/10-syntax.yaml:1: .*spool.*drop-in file holds rules"
printf 'rules:\n  - name: a\n    trigger: {uprobe: "%s:handle", bogus: 1}\n' "$SERVER" >"$RULES/10-syntax.yaml"
refused "unknown key in a drop-in's rule" "$RULES/10-syntax.yaml:3: Unexpected key: bogus"
grep -q 'holds rules' "$TMP/check.out" && fail "a key inside a rule blamed as a global key: $(cat "$TMP/check.out")"
rm "$RULES/10-syntax.yaml"

base_config "rules:
  - name: dup
    trigger: {uprobe: \"$SERVER:handle\"}
  - name: dup
    trigger: {uprobe: \"$SERVER:hot\"}"
refused "duplicate rule" "$CFG:7: rule dup: a rule of that name is already defined at $CFG:5"

# the daemon itself: exit 2, the error with its line in the log, nothing armed
"$PTBPF" daemon --config "$CFG" --state-dir "$STATE" 2>"$LOG"
rc=$?
[ "$rc" = 2 ] || fail "the daemon started on an invalid configuration (exit $rc)"
grep -q "$CFG:7: rule dup" "$LOG" || fail "the daemon's log does not name the line"
echo "daemon on an invalid configuration: exit 2, $(grep -c . "$LOG") log lines"

# StrictModes
base_config
chown nobody "$CFG"
refused "owner" "$CFG: refused: configuration file owned by uid [0-9]+, not root.*chown root $CFG"
chown root "$CFG"
chmod 0664 "$CFG"
refused "group-writable" "$CFG: refused: configuration file writable by its group .*chmod go-w"
chmod 0644 "$CFG"
printf 'rules: []\n' >"$RULES/20-x.yaml"
chmod 0646 "$RULES/20-x.yaml"
refused "drop-in writable by others" "$RULES/20-x.yaml: refused: drop-in rule file writable by others"
chmod 0644 "$RULES/20-x.yaml"
chmod 0777 "$RULES"
refused "drop-in directory" "$RULES: refused: drop-in directory writable by others"
chmod 0755 "$RULES"
check "$CFG"
[ "$RC" = 0 ] || { cat "$TMP/check.out"; fail "fixed modes still refused"; }
# refused at start, too, with the refusal in the log
chown nobody "$RULES/20-x.yaml"
"$PTBPF" daemon --config "$CFG" --state-dir "$STATE" 2>"$LOG"
[ $? = 2 ] || fail "the daemon started with a drop-in owned by nobody"
grep -q "20-x.yaml: refused" "$LOG" || fail "the refusal is not logged"
chown root "$RULES/20-x.yaml"
# ... and every directory above them up to /, as sshd's secure_filename()
ETC=$TMP/etc
chmod 0777 "$ETC"
refused "directory above the file writable by others" \
	"$CFG: refused: the directory $ETC above the configuration file is writable by others \(mode 0777\).*fix: chmod go-w $ETC"
chmod 0775 "$ETC"
refused "directory above the file writable by its group" "the directory $ETC above .* writable by its group"
chmod 0755 "$ETC"
chown nobody "$ETC"
refused "directory above the file not root's" "the directory $ETC above .* owned by uid [0-9]+, not root.*fix: chown root $ETC"
chown root "$ETC"
# rules.d through a symbolic link: the directories of its real path count
mkdir -m 0777 "$TMP/w"
mv "$RULES" "$TMP/w/rules.d"
ln -s "$TMP/w/rules.d" "$RULES"
refused "drop-in directory below a world-writable one" \
	"$RULES: refused: the directory $TMP/w above the drop-in directory is writable by others"
# a sticky directory owned by root (as /tmp) is fine: only root may rename root's entries
chmod 1777 "$TMP/w"
check "$CFG"
[ "$RC" = 0 ] || { cat "$TMP/check.out"; fail "a root-owned sticky directory above rules.d refused"; }
chown nobody "$TMP/w"
refused "sticky directory not root's" "the directory $TMP/w above the drop-in directory is owned by uid"
chown root "$TMP/w"
chmod 0755 "$TMP/w"
# the link itself in a writable directory: it could be pointed elsewhere
rm "$RULES"
mv "$TMP/w/rules.d" "$RULES"
mkdir -m 0777 "$TMP/lnk"
ln -s "$CFG" "$TMP/lnk/ptbpf.yaml"
CFG0=$CFG CFG=$TMP/lnk/ptbpf.yaml
refused "configuration named through a world-writable directory" \
	"the directory $TMP/lnk above the configuration file is writable by others"
CFG=$CFG0
check "$CFG"
[ "$RC" = 0 ] || { cat "$TMP/check.out"; fail "fixed directories still refused"; }

# on reload: refused, logged, the old rules keep running
base_config "rules:
  - name: ok
    match: {binary: $SERVER}
    trigger: {uprobe: \"$SERVER:handle\"}
    capture: {backend: events-only}"
rm -f "$RULES/20-x.yaml"
: >"$LOG"
start_daemon
chmod 0777 "$ETC"
kill -HUP "$DPID"
wait_log '"event":"reload_failed"' 10 || fail "a world-writable directory above the file: reloaded"
grep -q "the directory $ETC above the configuration file is writable by others" "$LOG" ||
	fail "the refusal on reload is not logged"
chmod 0755 "$ETC"
kill -0 "$DPID" || fail "the daemon died on a refused reload"
publish_wait
[ "$(metric 'ptbpf_rules{state="armed"}')" = 1 ] || fail "the old rule is no longer armed"
stop_daemon
echo "StrictModes: every refusal names the path and the fix (files, drop-in directory, the directories above)"

# the same parser serves `ptbpf captures --config` (and decode s3://): one error line, the
# daemon's; a user's own copy (not root's) is read; without upload: it says what is missing
cat >"$TMP/up.yaml" <<EOF
spool: {dir: $TMP/spool}
upload:
  s3: {endpoint: "http://127.0.0.1:9", bucket: b, endpiont: x}
EOF
chmod 0644 "$TMP/up.yaml"
check "$TMP/up.yaml"
grep -q "up.yaml:3: Unexpected key: endpiont" "$TMP/check.out" || { cat "$TMP/check.out"; fail "check-config: the typo in upload.s3"; }
env -u AWS_ACCESS_KEY_ID -u AWS_SECRET_ACCESS_KEY HOME=$TMP "$PTBPF" captures ls s3://b/p \
	--config "$TMP/up.yaml" >/dev/null 2>"$TMP/cap.err" && fail "captures ls took a config with a typo"
[ "$(cat "$TMP/cap.err")" = "ptbpf: $TMP/up.yaml:3: Unexpected key: endpiont" ] ||
	{ cat "$TMP/cap.err"; fail "captures --config: not the daemon's one line"; }
sed -i 's/, endpiont: x//' "$TMP/up.yaml"
chown nobody "$TMP/up.yaml"
env -u AWS_ACCESS_KEY_ID -u AWS_SECRET_ACCESS_KEY HOME=$TMP "$PTBPF" captures ls s3://b/p \
	--config "$TMP/up.yaml" >/dev/null 2>"$TMP/cap.err" && fail "captures ls without credentials succeeded"
grep -q "no credentials" "$TMP/cap.err" || { cat "$TMP/cap.err"; fail "captures --config refused a user's own file"; }
printf 'spool: {dir: /tmp}\n' >"$TMP/noup.yaml"
"$PTBPF" captures ls s3://b/p --config "$TMP/noup.yaml" >/dev/null 2>"$TMP/cap.err" && fail "no upload: accepted"
grep -q "noup.yaml: no upload: section" "$TMP/cap.err" || { cat "$TMP/cap.err"; fail "no upload: section: unclear"; }
echo "captures --config: the daemon's parser (one line per error), a user's own file, upload: required"
