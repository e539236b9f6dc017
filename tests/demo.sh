#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# `make demo`: a real capture of the bundled demo server (tests/targets/demo_server.c).
# It handles 60 requests; request 49 misses its cache and takes > 600 ms. ptbpf arms an
# entry uprobe + uretprobe on handle_request and freezes the rings at the return of the
# first call slower than 300 ms, decodes them and writes demo.fxt: the slow request's
# call path, instruction by instruction. Intel PT where the host has it, else the
# singlestep backend (software PT: a few seconds here).
set -u
: "${PTBPF:=build/ptbpf}" "${BUILD:=build}" "${PYTHON:=python3}"
top=$(cd "$(dirname "$0")/.." && pwd)
server=$BUILD/targets/demo_server
out=${DEMO_OUT:-demo.fxt}

echo "ptbpf demo: capturing the slow request of $server"
echo "+ ptbpf --uprobe $server:handle_request --latency-over 300ms -o $out -- $server"
rm -f "$out" "$out.old"
"$PTBPF" --uprobe "$server:handle_request" --latency-over 300ms -o "$out" -- "$server"
rc=$?
[ $rc -eq 0 ] || { echo "ptbpf demo: the capture failed (exit $rc); 'ptbpf doctor' says why" >&2; exit $rc; }

check=$BUILD/tests/fxtcheck		# built with ptbpf (make all)
[ -x "$check" ] || exit 0
echo
echo "What $out holds (tests/tools/fxtcheck --strict):"
"$check" --strict "$out" | sed -n '1,2p;/^threads:/,/^duration/p'
echo
echo "The slow request's call path, from $out (depth name begin_ns end_ns):"
"$check" --stacks "$out" | awk '/handle_request/ { last = NR } { line[NR] = $0 }
	END { for (i = last; i <= NR; i++) print line[i] }' |
	awk '$2 == "hash_key" { n++; next } n { print "  (" n " calls of hash_key)"; n = 0 }
	{ print } END { if (n) print "  (" n " calls of hash_key)" }' | head -24
