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
# The team's shared notes, test data and FXT validator live beside the repository
# (../shared); worktrees elsewhere find them through PTBPF_SHARED or /work/shared.
for d in "${PTBPF_SHARED:-}" "$top/../shared" /work/shared; do
	[ -n "$d" ] && [ -f "$d/tools/fxtcheck.py" ] && { SHARED=$(cd "$d" && pwd); break; }
done
: "${SHARED:?cannot find the shared directory (tools/fxtcheck.py, testdata/): set PTBPF_SHARED}"
export BUILD PTBPF PYTHON TOP="$top" SHARED FXTCHECK="$SHARED/tools/fxtcheck.py"
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
