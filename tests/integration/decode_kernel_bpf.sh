#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# --kernel with the in-kernel freeze: the trace ends in the kernel after running ptbpf's
# BPF program, whose JIT code the kcore copy lacks. The pt backend records the trigger
# programs' JIT images beside the kcore copy (kcore_dir/bpf_jit, named in kallsyms, by
# kcore_add_bpf_jit()), and `ptbpf decode --kernel` decodes through them. Checked on a
# synthetic capture with a real JIT image of this kernel (tests/tools/perfdata_tool synth
# --bpf-jit: pd_calls, then a fake kernel function calling a loaded BPF program, its
# image recorded by the same function the backend uses): no decode error at the end, the
# BPF frame named; without the image, the decode error it replaces.
. "$(dirname "$0")/decode_common.inc"

TOOL=$BUILD/tests/perfdata_tool
PD_CALLS=$BUILD/targets/pd_calls
[ -x "$TOOL" ] && [ -x "$PD_CALLS" ] || skip "perfdata_tool or pd_calls not built"
[ "$(id -u)" = 0 ] || skip "loading a BPF program and reading its JIT image needs root"
[ "$(cat /proc/sys/net/core/bpf_jit_enable 2>/dev/null || echo 1)" != 0 ] ||
	skip "net.core.bpf_jit_enable=0: the kernel interprets BPF, there is no JIT image"

cap=$TMP/jit.data
"$TOOL" synth "$PD_CALLS" "$cap" --bpf-jit || fail "perfdata_tool synth --bpf-jit"
[ -s "$cap/kcore_dir/bpf_jit" ] || fail "no kcore_dir/bpf_jit"
sym=$(awk '$3 ~ /^bpf_prog_[0-9a-f]+_ptbpf_jit_test$/ { print $1, $3 }' "$cap/kcore_dir/kallsyms")
[ -n "$sym" ] || fail "kallsyms does not name the program"
# the image's PT_LOAD is at the address kallsyms gives
"$PYTHON" - "$cap/kcore_dir/bpf_jit" "${sym%% *}" <<'PY' || fail "bpf_jit is not at the program's address"
import struct, sys
d = open(sys.argv[1], 'rb').read()
assert d[:4] == b'\x7fELF' and struct.unpack_from('<H', d, 16)[0] == 4   # ET_CORE
phoff, = struct.unpack_from('<Q', d, 32)
phnum, = struct.unpack_from('<H', d, 56)
vaddrs = [struct.unpack_from('<IIQQQQQQ', d, phoff + 56 * i)[3] for i in range(phnum)]
sys.exit(0 if int(sys.argv[2], 16) in vaddrs else 1)
PY

"$PTBPF" decode --kernel "$cap" --format calls -o "$TMP/jit.calls" --stats 2>"$TMP/jit.stats" ||
	{ cat "$TMP/jit.stats"; fail "ptbpf decode --kernel"; }
[ "$(figure errors "$TMP/jit.stats")" = 0 ] || { cat "$TMP/jit.calls"; fail "decode errors"; }
grep -q " call 0x[0-9a-f]* 0x${sym%% *} ${sym#* }$" "$TMP/jit.calls" ||
	{ cat "$TMP/jit.calls"; fail "no call into the BPF program"; }
"$PTBPF" decode --kernel "$cap" -o "$TMP/jit.fxt" 2>"$TMP/jit.err" || fail "decode to FXT"
[ ! -s "$TMP/jit.err" ] || { cat "$TMP/jit.err"; fail "stderr: decode errors"; }
fxt_ok "$TMP/jit.fxt"
"$FXTCHECK" --stacks "$TMP/jit.fxt" >"$TMP/jit.stacks"
grep -q "^2 ${sym#* } " "$TMP/jit.stacks" || { cat "$TMP/jit.stacks"; fail "no BPF frame"; }
grep -q "^1 fake_perf_tp_event " "$TMP/jit.stacks" || fail "no caller frame"
echo "the trace ends in ${sym#* } with no decode error"

# without the JIT image: the error this replaces, at the program's address
cp -r "$cap" "$TMP/nojit.data"
rm "$TMP/nojit.data/kcore_dir/bpf_jit"
"$PTBPF" decode --kernel "$TMP/nojit.data" --format calls -o "$TMP/nojit.calls" --stats \
	2>"$TMP/nojit.stats" || fail "decode without bpf_jit"
[ "$(figure errors "$TMP/nojit.stats")" = 1 ] || fail "no decode error without the image"
grep -q " error 0x${sym%% *} .*no memory mapped" "$TMP/nojit.calls" ||
	{ cat "$TMP/nojit.calls"; fail "the error is not at the program"; }
echo PASS
