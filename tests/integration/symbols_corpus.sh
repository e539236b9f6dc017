#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# Symbols as perf names them, for every linker and language. The programs of
# tests/corpus/ are built with GNU ld (bfd), gold, lld and mold, as PIE, non-PIE and
# static (lld and mold put the code segment at p_vaddr != p_offset), plus the C++ one
# (namespaces, templates, a lambda, an overload) and, where rustc is installed, the Rust
# one (lld, v0 and legacy mangling). Each is captured by the singlestep backend and
# decoded by both tools: every call and return target perf names (not [unknown]) must
# have the same name in `ptbpf decode --format calls`, binary by binary (perf_names.py),
# libc's and ld.so's aliases included. The names must also be the demangled ones users
# know (C++, Rust legacy and v0), and the executable's own functions must be named. The
# agreement count per linker ends the output.
#
# One thing perf gets wrong is left out, and counted: its PLT symbols follow the order
# of .rela.plt, so in libc, whose .plt also holds IRELATIVE (ifunc) entries, perf names
# some entries "@plt" or after the wrong function; ptbpf reads the GOT slot each entry
# jumps through. Those targets are counted apart (ptbpf names them FUNC@plt).
. "$(dirname "$0")/decode_common.inc"

CORPUS=$TOP/tests/corpus
command -v perf >/dev/null || skip "perf is not installed (linux-perf): nothing to hold the names against"
command -v gcc >/dev/null || skip "gcc is not installed"

# capture NAME: a singlestep capture of $TMP/NAME, decoded by both tools
capture() {
	local name=$1
	timeout 600 setarch -R "$PTBPF" --backend singlestep --keep-capture="$TMP/$name.data" \
		--decode=no -- "$TMP/$name" >"$TMP/$name.run" 2>&1 || {
		if grep -qiE "ptrace|not permitted" "$TMP/$name.run"; then
			skip "the singlestep backend cannot run here: $(tail -1 "$TMP/$name.run")"
		fi
		cat "$TMP/$name.run"
		fail "singlestep capture of $name"
	}
	"$PTBPF" decode "$TMP/$name.data" --format calls -o "$TMP/$name.calls" 2>"$TMP/$name.err" ||
		{ cat "$TMP/$name.err"; fail "$name: ptbpf decode"; }
	# -v: perf demangles C++ with parameter lists (DMGL_PARAMS), as ptbpf names them;
	# without it perf prints "shapes::scale" for both scale(int) and scale(double)
	perf script -v -i "$TMP/$name.data" --itrace=cr -F tid,flags,ip,sym,addr \
		>"$TMP/$name.perf" 2>/dev/null || fail "$name: perf script"
}

# compare NAME GROUP: the names of both tools; counts added to GROUP's totals
declare -A AGREE TOTAL
compare() {
	local name=$1 group=$2 line n same
	"$PYTHON" "$(dirname "$0")/perf_names.py" "$TMP/$name.perf" "$TMP/$name.calls" \
		--plt-order-exempt >"$TMP/$name.names"
	local rc=$?
	line=$(head -1 "$TMP/$name.names")
	printf '%-16s %s\n' "$name" "$line"
	[ $rc = 0 ] || { cat "$TMP/$name.names"; fail "$name: ptbpf and perf name targets differently"; }
	n=$(sed -n "s/^\([0-9]*\) targets named by perf, \([0-9]*\) same.*/\1/p" <<<"$line")
	same=$(sed -n 's/^\([0-9]*\) targets named by perf, \([0-9]*\) same.*/\2/p' <<<"$line")
	TOTAL[$group]=$(( ${TOTAL[$group]:-0} + n ))
	AGREE[$group]=$(( ${AGREE[$group]:-0} + same ))
}

# named NAME REGEX WHAT: a call in NAME's trace to a function named as REGEX
named() {
	grep -qE " call 0x[0-9a-f]+ 0x[0-9a-f]+ $2\$" "$TMP/$1.calls" ||
		{ grep -E ' call ' "$TMP/$1.calls" | grep -v -E ' (_dl|__libc|_IO)' | tail -20
		  fail "$1: $3"; }
}

linkers=()
for ld in bfd gold lld mold; do
	if echo 'int main(void){return 0;}' | gcc -x c - -fuse-ld=$ld -o "$TMP/probe.$ld" 2>/dev/null; then
		linkers+=("$ld")
	else
		echo "linker $ld: not installed (binutils' gold, Debian's lld, mold): not tested"
	fi
done
[ ${#linkers[@]} -gt 0 ] || skip "gcc cannot link with any of bfd, gold, lld, mold"

for ld in "${linkers[@]}"; do
	for mode in pie nopie static; do
		case $mode in
		pie) flags="-fPIE -pie" ;;
		nopie) flags="-fno-PIE -no-pie" ;;
		static) flags="-static" ;;
		esac
		name=c_${ld}_$mode
		gcc -O1 -g -fno-omit-frame-pointer -fno-inline $flags -fuse-ld=$ld \
			"$CORPUS/corpus.c" -o "$TMP/$name" || fail "gcc -fuse-ld=$ld $flags"
		capture "$name"
		for f in main fold add mul depth text_work; do
			named "$name" "$f" "no call of $f named"
		done
		compare "$name" "$ld"
	done
done

# C++: namespaces, a class, templates, a lambda, overloads; lld's layout
if command -v g++ >/dev/null; then
	ld=${linkers[-1]}
	g++ -O1 -g -fno-omit-frame-pointer -fuse-ld=$ld "$CORPUS/corpus_cxx.cc" -o "$TMP/cxx_$ld" ||
		fail "g++ -fuse-ld=$ld"
	capture "cxx_$ld"
	named "cxx_$ld" 'shapes::Area::total\(int\)' "C++ method not demangled"
	named "cxx_$ld" 'shapes::Box<int>::area\(\) const' "C++ template method not demangled"
	named "cxx_$ld" 'shapes::scale\(double\)' "C++ overload not demangled"
	named "cxx_$ld" 'long shapes::apply<shapes::Area::total\(int\)::\{lambda\(int\)#1\}>\(.*\)' \
		"C++ function template of a lambda not demangled"
	named "cxx_$ld" 'shapes::Area::total\(int\)::\{lambda\(int\)#1\}::operator\(\)\(int\) const' \
		"C++ lambda not demangled"
	compare "cxx_$ld" "c++"
else
	echo "g++ is not installed: the C++ program is not tested"
fi

# Rust, linked by lld, v0 and legacy mangling
if command -v rustc >/dev/null; then
	for mangling in v0 legacy; do
		name=rust_$mangling
		# legacy is the default (naming it needs -Z unstable-options)
		flags=
		[ $mangling = v0 ] && flags="-C symbol-mangling-version=v0"
		rustc -O -g -C link-arg=-fuse-ld=lld $flags \
			-C force-frame-pointers=yes "$CORPUS/corpus.rs" -o "$TMP/$name" \
			2>"$TMP/$name.rustc" || { cat "$TMP/$name.rustc"; fail "rustc $mangling"; }
		capture "$name"
		named "$name" 'corpus::m::total' "Rust ($mangling) function not demangled"
		named "$name" 'corpus::m::sum(::<corpus::m::Rect>)?' "Rust ($mangling) generic not demangled"
		named "$name" '<corpus::m::Rect as corpus::m::Shape>::area' \
			"Rust ($mangling) trait method not demangled"
		compare "$name" "rust"
	done
else
	echo "rustc is not installed: the Rust program is not tested (SKIP of that part)"
fi

echo "agreement with perf, per linker (call and return targets perf names; the rest are"
echo "PLT entries, FUNC@plt for ptbpf, that perf 6.1 names otherwise):"
for g in "${linkers[@]}" "c++" rust; do
	[ -n "${TOTAL[$g]:-}" ] || continue
	printf '  %-5s %5d of %5d the same name\n' "$g" "${AGREE[$g]}" "${TOTAL[$g]}"
done
