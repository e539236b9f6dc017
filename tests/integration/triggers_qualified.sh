#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# Qualified names as triggers: --uprobe BIN:ns::Class::method on the C++ program of
# tests/corpus/ (and the Rust one where rustc is installed). The spec splits at the first
# single colon after a file that exists, so "::" stays in the name and BIN may sit in a
# directory whose name has a colon; the name matches the demangled one (full, without
# parameters, or a unique prefix); an overloaded or generic name lists its candidates;
# a typo is answered with the demangled near names; mangled names keep working.
. "$(dirname "$0")/triggers_common.inc"
need_bpf
command -v g++ >/dev/null || skip "g++ is not installed (the C++ program)"
CORPUS=$(cd "$(dirname "$0")/../corpus" && pwd)
mkdir -p "$TMP/dir:with:colons"
CXX="$TMP/dir:with:colons/cxx"
g++ -O1 -g -fno-omit-frame-pointer "$CORPUS/corpus_cxx.cc" -o "$CXX" || fail "g++"

# fires NAME SPEC SYM: --dry-run with --uprobe SPEC fires once, naming SYM
fires() {
	local name=$1 spec=$2 sym=$3
	run_fg "$name" --dry-run --uprobe "$spec" -- "${4:-$CXX}"
	[ $RC = 0 ] || fail "$name: exit $RC: $(cat "$TMP/$name.err")"
	grep -qF "\"sym\":\"$sym\"" "$TMP/$name.out" ||
		fail "$name: no fire in $sym: $(cat "$TMP/$name.out" "$TMP/$name.err")"
	echo "$name: $spec fires in $sym"
}

# refused NAME REGEX SPEC: exit 2 with one line matching REGEX
refused() {
	local name=$1 re=$2
	run_fg "$name" --dry-run --uprobe "$3" -- "$CXX"
	[ $RC = 2 ] || fail "$name: exit $RC, expected 2: $(cat "$TMP/$name.err")"
	[ "$(wc -l <"$TMP/$name.err")" = 1 ] || fail "$name: not one line: $(cat "$TMP/$name.err")"
	grep -Eq -- "$re" "$TMP/$name.err" || fail "$name: message: $(cat "$TMP/$name.err")"
	echo "$name: $(cat "$TMP/$name.err")"
}

fires method "$CXX:shapes::Area::total" "shapes::Area::total(int)"
fires full "$CXX:shapes::scale(double)" "shapes::scale(double)"
fires prefix "$CXX:shapes::Box<double>::ar" "shapes::Box<double>::area() const"
fires mangled "$CXX:_ZN6shapes4Area5totalEi" "shapes::Area::total(int)"
fires template "$CXX:shapes::apply" \
	"long shapes::apply<shapes::Area::total(int)::{lambda(int)#1}>(shapes::Area::total(int)::{lambda(int)#1}, int)"
(cd "$TMP/dir:with:colons" && fires relative "./cxx:shapes::Area::total" "shapes::Area::total(int)") ||
	exit 1
refused overload "'shapes::scale' names 2 functions in .*cxx \(did you mean 'shapes::scale\(int\)', 'shapes::scale\(double\)'\?\)" \
	"$CXX:shapes::scale"
refused generic "'shapes::Box' names 2 functions .*'shapes::Box<int>::area\(\) const'" \
	"$CXX:shapes::Box"
refused typo "no function 'shapes::Area::totl' in .*cxx \(did you mean shapes::Area::total\(int\)" \
	"$CXX:shapes::Area::totl"
refused nofile "cannot open '$TMP/nowhere': No such file" "$TMP/nowhere:shapes::Area::total"
refused nodir "cannot open '$TMP/dir': No such file" "$TMP/dir:with:colons:shapes::Area::total"

if command -v rustc >/dev/null; then
	for mangling in v0 legacy; do
		flags=
		[ $mangling = v0 ] && flags="-C symbol-mangling-version=v0"
		rustc -O -g $flags "$CORPUS/corpus.rs" -o "$TMP/rust_$mangling" 2>"$TMP/rustc.err" ||
			{ cat "$TMP/rustc.err"; fail "rustc $mangling"; }
		fires "rust_$mangling" "$TMP/rust_$mangling:corpus::m::total" "corpus::m::total" \
			"$TMP/rust_$mangling"
		fires "rust_${mangling}_trait" "$TMP/rust_$mangling:<corpus::m::Rect as corpus::m::Shape>::area" \
			"<corpus::m::Rect as corpus::m::Shape>::area" "$TMP/rust_$mangling"
	done
else
	echo "rustc is not installed: Rust names not tested"
fi
echo PASS
