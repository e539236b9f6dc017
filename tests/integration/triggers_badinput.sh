#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Bad trigger input: one clear line on stderr, exit 2, nothing left behind.
. "$(dirname "$0")/triggers_common.inc"
need_bpf
T=$TARGETS/trig_slow
strip -o "$TMP/stripped" "$T"

expect() { # name 'regex of the one error line' ptbpf-args...
	local name=$1 re=$2
	shift 2
	TMO=20 run_fg "$name" "$@"
	[ $RC = 2 ] || fail "$name: exit $RC, expected 2: $(cat "$TMP/$name.err")"
	[ "$(wc -l <"$TMP/$name.err")" = 1 ] || fail "$name: not one line: $(cat "$TMP/$name.err")"
	grep -Eq -- "$re" "$TMP/$name.err" || fail "$name: message: $(cat "$TMP/$name.err")"
	[ -s "$TMP/$name.out" ] && fail "$name: the target ran: $(head -3 "$TMP/$name.out")"
	echo "$name: $(cat "$TMP/$name.err")"
}
expect nobin "cannot open '/nonexistent/prog': No such file" \
	--dry-run --uprobe /nonexistent/prog:main -- "$T"
expect nosym "no function 'slow_pat' in .*trig_slow \(did you mean slow_path" \
	--dry-run --uprobe "$T:slow_pat" -- "$T"
expect stripped "stripped.*has no symbol table|has no symbol table \(stripped\)" \
	--dry-run --uprobe "$TMP/stripped:slow_path" -- "$TMP/stripped"
expect notelf "is not an ELF file" --dry-run --uprobe "/etc/passwd:main" -- "$T"
expect nopid "no process with PID 999999999|invalid value for -p" \
	--dry-run --uprobe "$T:slow_path" -p 999999999
pid=$( (sleep 0.01 & echo $!) ); wait 2>/dev/null; sleep 0.1
expect deadpid "no process with PID $pid" --dry-run --uprobe "$T:slow_path" -p "$pid"
expect nounit "invalid duration for --latency-over: '5'" \
	--dry-run --uprobe "$T:slow_path" --latency-over 5 -- "$T"
expect badsys "unknown syscall 'nanoslep' \(did you mean nanosleep" \
	--dry-run --syscall-latency-over 1ms --syscall nanoslep -- "$T"
expect notp "no tracepoint 'sched:no_such_event'" \
	--dry-run --tracepoint sched:no_such_event -- "$T"
expect latoff "--latency-over needs a function entry" \
	--dry-run --uprobe "$T:slow_path+4" --latency-over 1ms -- "$T"
expect badaddr "0x12345678 is not in a loaded segment" \
	--dry-run --uprobe "$T:0x12345678" -- "$T"
echo PASS
