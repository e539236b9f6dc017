#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# Symbols of a stripped lld-linked binary (code segment at p_vaddr != p_offset) from its
# separate debug file, found by build-id (--debug-dir DIR/.build-id/xx/yyy.debug) and by
# .gnu_debuglink (.debug/NAME beside the binary); and without any, the fallback names
# binary+0xVADDR, the addresses nm prints for the unstripped binary.
. "$(dirname "$0")/decode_common.inc"

CORPUS=$TOP/tests/corpus
command -v gcc >/dev/null || skip "gcc is not installed"
echo 'int main(void){return 0;}' | gcc -x c - -fuse-ld=lld -o "$TMP/probe" 2>/dev/null ||
	skip "lld is not installed (Debian's lld): its layout is what this tests"
FUNCS="main fold add mul depth text_work"

gcc -O1 -g -fno-omit-frame-pointer -fno-inline -static -fuse-ld=lld "$CORPUS/corpus.c" \
	-o "$TMP/full" || fail "gcc -static -fuse-ld=lld"
mkdir -p "$TMP/bid" "$TMP/link/.debug" "$TMP/dbg"
strip --strip-all -o "$TMP/bid/prog" "$TMP/full"
id=$(readelf -n "$TMP/full" | sed -n 's/.*Build ID: *\([0-9a-f]*\).*/\1/p')
[ -n "$id" ] || fail "no build-id in the binary"
mkdir -p "$TMP/dbg/.build-id/${id:0:2}"
objcopy --only-keep-debug "$TMP/full" "$TMP/dbg/.build-id/${id:0:2}/${id:2}.debug"
objcopy --only-keep-debug "$TMP/full" "$TMP/link/.debug/prog.debug"
strip --strip-all -o "$TMP/link/prog" "$TMP/full"
(cd "$TMP/link" && objcopy --add-gnu-debuglink=.debug/prog.debug prog) || fail "objcopy"
read -r off vaddr < <(readelf -lW "$TMP/full" | awk '$1 == "LOAD" && / E / { print $2, $3; exit }')
[ -n "$off" ] && [ $((off)) != $((vaddr)) ] ||
	fail "lld's code segment has p_vaddr == p_offset: the test would not test the mapping"

# capture DIR: a singlestep capture of DIR/prog in DIR/prog.data
capture() {
	timeout 600 setarch -R "$PTBPF" --backend singlestep --keep-capture="$1/prog.data" \
		--decode=no -- "$1/prog" >"$1/run" 2>&1 || {
		grep -qiE "ptrace|not permitted" "$1/run" &&
			skip "the singlestep backend cannot run here: $(tail -1 "$1/run")"
		cat "$1/run"
		fail "singlestep capture of $1/prog"
	}
}
capture "$TMP/bid"
capture "$TMP/link"

# calls NAME DATA [OPTIONS]: ptbpf decode --format calls of DATA into $TMP/NAME.calls
calls() {
	local name=$1 data=$2
	shift 2
	"$PTBPF" decode "$data" --format calls -o "$TMP/$name.calls" "$@" 2>"$TMP/$name.err" ||
		{ cat "$TMP/$name.err"; fail "$name: ptbpf decode"; }
}

# No debug file: each function is prog+0xVADDR, its address in nm of the full binary.
calls fallback "$TMP/bid/prog.data"
for f in $FUNCS; do
	addr=$(nm "$TMP/full" | awk -v f="$f" '$3 == f { print $1 }')
	want=$(printf 'prog\\+0x%x' "0x$addr")
	grep -qE " call 0x[0-9a-f]+ 0x[0-9a-f]+ $want\$" "$TMP/fallback.calls" ||
		{ grep ' call ' "$TMP/fallback.calls" | tail -5; fail "fallback: no call of $want ($f)"; }
done
echo "fallback: $FUNCS named prog+0xVADDR as nm gives their addresses"

# The debug file by build-id, in --debug-dir.
calls buildid "$TMP/bid/prog.data" --debug-dir "$TMP/dbg"
for f in $FUNCS; do
	grep -qE " call 0x[0-9a-f]+ 0x[0-9a-f]+ $f\$" "$TMP/buildid.calls" ||
		fail "build-id: no call of $f named (debug file $TMP/dbg/.build-id/${id:0:2}/${id:2}.debug)"
done
echo "build-id: $FUNCS named from the separate debug file"

# The debug file by .gnu_debuglink, beside the binary.
calls debuglink "$TMP/link/prog.data"
for f in $FUNCS; do
	grep -qE " call 0x[0-9a-f]+ 0x[0-9a-f]+ $f\$" "$TMP/debuglink.calls" ||
		fail "debuglink: no call of $f named (.debug/prog.debug)"
done
# Every call target at a symbol's address is named by one of that address's symbols in
# the unstripped binary (nm). (perf 6.1 gets these wrong: with the debug file of an
# lld-linked binary it names main "__vfwprintf_internal".)
"$PYTHON" - "$TMP/debuglink.calls" <(nm "$TMP/full") <<'PY' || fail "debuglink: a name is not nm's"
import collections, sys
names = collections.defaultdict(set)
for line in open(sys.argv[2]):
    f = line.split()
    if len(f) == 3 and f[1] in 'tTwWiI':
        names[int(f[0], 16)].add(f[2])
n = bad = 0
for line in open(sys.argv[1]):
    f = line.rstrip('\n').split(None, 5)
    if len(f) == 6 and f[2] == 'call' and int(f[4], 16) in names:
        n += 1
        if f[5] not in names[int(f[4], 16)]:
            bad += 1
            print(f'call {f[4]}: ptbpf {f[5]!r}, nm {sorted(names[int(f[4], 16)])}')
print(f'{n} call targets at a symbol, {n - bad} named as nm names them')
sys.exit(1 if bad or not n else 0)
PY
echo "debuglink: $FUNCS named from .debug/prog.debug"
