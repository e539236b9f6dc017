#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# A capture whose binary exists only on a debuginfod server (Debian's debuginfod, started
# here on 127.0.0.1 serving a directory of test binaries, stopped by PID): `ptbpf decode`
# gets the executable (code bytes) and, the binary being stripped, its debug file
# (symbols) from the server, and decodes with full symbols, as with the binary in place.
# Without the server, the missing binary is named once with its build-id and its frames
# keep binary+0xoff names.
set -u
: "${PTBPF:?}" "${BUILD:?}"
here=$(cd "$(dirname "$0")" && pwd)
SERVERS=$here/../servers
TMP=$(mktemp -d "/tmp/ptbpf-dbgd-test-$$-XXXXXX")
export DEBUGINFOD_BASE=/dev/shm/ptbpf-debuginfod-test-$$ DEBUGINFOD_PORT=${PTBPF_DEBUGINFOD_PORT:-18012}
trap '"$SERVERS/debuginfod-down.sh" 2>/dev/null; rm -rf "$TMP"' EXIT

fail() {
	echo "FAIL: $*"
	exit 1
}
skip() {
	echo "SKIP: $*"
	exit 77
}
command -v debuginfod >/dev/null || skip "debuginfod not installed (apt-get install debuginfod)"
command -v objcopy >/dev/null || skip "objcopy not installed (binutils)"

# The program as a distribution ships it: stripped, its debug info in a separate file.
mkdir -p "$TMP/app" "$TMP/serve"
cp "$BUILD/targets/recurse" "$TMP/full"
objcopy --only-keep-debug "$TMP/full" "$TMP/serve/recurse.debug"
objcopy --strip-all "$TMP/full" "$TMP/app/recurse"
readelf -S "$TMP/app/recurse" | grep -q "\.symtab" && fail "the stripped binary still has symbols"
build_id=$(readelf -n "$TMP/app/recurse" | awk '/Build ID/ { print $3 }')
[ -n "$build_id" ] || fail "the test binary has no build-id"
cp "$TMP/app/recurse" "$TMP/serve/recurse"

"$PTBPF" --backend singlestep --keep-capture="$TMP/cap.data" --decode=no -- "$TMP/app/recurse" \
	>"$TMP/cap.run" 2>&1 || {
	grep -qiE "ptrace|not permitted" "$TMP/cap.run" && skip "singlestep cannot run here: $(tail -1 "$TMP/cap.run")"
	cat "$TMP/cap.run"
	fail "singlestep capture"
}
"$PTBPF" decode --info "$TMP/cap.data" | grep -q "$build_id" ||
	fail "the capture does not name its binary's build-id"

# Reference: the unstripped binary where the capture saw it.
cp "$TMP/full" "$TMP/app/recurse"
env -u DEBUGINFOD_URLS "$PTBPF" decode "$TMP/cap.data" --format text -o "$TMP/ref.txt" 2>"$TMP/ref.err" ||
	{ cat "$TMP/ref.err"; fail "reference decode"; }
grep -q ' main ' "$TMP/ref.txt" && grep -q ' fib ' "$TMP/ref.txt" || fail "reference decode has no symbols"

# Gone from this machine: named once, with its build-id.
rm -rf "$TMP/app"
env -u DEBUGINFOD_URLS HOME="$TMP" "$PTBPF" decode "$TMP/cap.data" --format text -o "$TMP/none.txt" \
	2>"$TMP/none.err" || { cat "$TMP/none.err"; fail "decode without the binary"; }
[ "$(grep -c "binary not found" "$TMP/none.err")" = 1 ] || { cat "$TMP/none.err"; fail "missing binary not named exactly once"; }
grep -q "$TMP/app/recurse: binary not found (build-id $build_id)" "$TMP/none.err" ||
	{ cat "$TMP/none.err"; fail "the warning does not name the binary and its build-id"; }
grep -q ' main ' "$TMP/none.txt" && fail "symbols without the binary?"

# Only on the debuginfod server.
"$SERVERS/debuginfod-up.sh" "$TMP/serve" >"$TMP/dbgd.env" 2>"$TMP/dbgd.log" ||
	{ cat "$TMP/dbgd.log"; fail "debuginfod did not start"; }
urls=$(sed -n 's/^DEBUGINFOD_URLS=//p' "$TMP/dbgd.env")
DEBUGINFOD_URLS=$urls DEBUGINFOD_CACHE_PATH="$TMP/cache" HOME="$TMP" "$PTBPF" decode "$TMP/cap.data" \
	--format text -o "$TMP/dbgd.txt" 2>"$TMP/dbgd.err" || { cat "$TMP/dbgd.err"; fail "decode with debuginfod"; }
grep -q "not found" "$TMP/dbgd.err" && { cat "$TMP/dbgd.err"; fail "a binary was not found on debuginfod"; }
# The same slices, the same names, but for PLT stubs: "strlen@plt" is made from the
# binary's .symtab and its .plt/.rela.plt together, and a stripped binary has no .symtab
# while its debug file has no .plt contents (the same with a local debug file).
plt_as_one() { awk '{ if ($2 ~ /@plt$/ || $2 ~ /^recurse\+0x/) $2 = "<plt>"; print }' "$1"; }
plt_as_one "$TMP/ref.txt" >"$TMP/ref.norm"
plt_as_one "$TMP/dbgd.txt" >"$TMP/dbgd.norm"
cmp -s "$TMP/ref.norm" "$TMP/dbgd.norm" || { diff "$TMP/ref.norm" "$TMP/dbgd.norm" | head; fail "decode through debuginfod differs from the decode with the binary in place"; }
[ "$(grep -c ' fib ' "$TMP/dbgd.txt")" = "$(grep -c ' fib ' "$TMP/ref.txt")" ] || fail "fib frames differ"
ls "$TMP/cache/$build_id/executable" "$TMP/cache/$build_id/debuginfo" >/dev/null ||
	fail "executable and debuginfo not in debuginfod's cache"
# --sysroot comes first: a sysroot holding the binary is used without asking the server
mkdir -p "$TMP/sysroot$TMP/app"
cp "$TMP/full" "$TMP/sysroot$TMP/app/recurse"
DEBUGINFOD_URLS=http://127.0.0.1:1 DEBUGINFOD_CACHE_PATH="$TMP/cache2" HOME="$TMP" "$PTBPF" decode \
	"$TMP/cap.data" --sysroot "$TMP/sysroot" --format text -o "$TMP/sys.txt" 2>"$TMP/sys.err" ||
	{ cat "$TMP/sys.err"; fail "decode with --sysroot"; }
cmp -s "$TMP/ref.txt" "$TMP/sys.txt" || fail "decode with --sysroot differs"
[ ! -e "$TMP/cache2/$build_id" ] || fail "debuginfod asked though --sysroot has the binary"
echo "ok: $(grep -c . "$TMP/dbgd.txt") slices with symbols from debuginfod, as with the binary in place"
