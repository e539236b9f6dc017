#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# `make bench`: runs every benchmark binary (build/bench/*) and script (tests/bench/*.sh).
# Each prints its figures and its ratio against the named baseline.
set -u
here=$(cd "$(dirname "$0")" && pwd)
# Debian's tools first: a python3 shim from a version manager costs seconds per call.
[ -x /usr/bin/python3 ] && PATH=/usr/bin:$PATH
top=$(cd "$here/../.." && pwd)
: "${BUILD:=$top/build}" "${PTBPF:=$BUILD/ptbpf}" "${PYTHON:=python3}"
# Data from the repository (tests/data); the kAFL/Nyx set (AGPL-3.0, not in the
# repository) from $PTBPF_TESTDATA or ../shared/testdata, else its benchmark is skipped.
KAFL=
for d in "${PTBPF_TESTDATA:-}" "$top/../shared/testdata"; do
	[ -n "$d" ] && [ -d "$d/hw-pt/kafl-libxdc-experiments" ] &&
		{ KAFL=$(cd "$d/hw-pt/kafl-libxdc-experiments" && pwd); break; }
done
export BUILD PTBPF PYTHON TOP="$top" TESTDATA="$top/tests/data" KAFL \
	FXTCHECK="$BUILD/tests/fxtcheck"
pattern=${BENCH:-}
rc=0
for b in "$BUILD"/bench/* "$here"/*.sh; do
	[ -e "$b" ] || continue
	name=$(basename "$b")
	case $name in run.sh | *.d | *.o) continue ;; esac
	[ -n "$pattern" ] && [[ $name != *$pattern* ]] && continue
	echo "=== $name"
	case $b in
	*.sh) bash "$b" || rc=1 ;;
	*) [ -x "$b" ] && { "$b" || rc=1; } ;;
	esac
	echo
done
exit $rc
