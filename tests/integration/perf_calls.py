#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""Compare per-thread call/return sequences of `perf script --itrace=cr -F tid,flags,ip,addr`
and of `ptbpf decode --format calls`.

usage: perf_calls.py PERF_OUT PTBPF_OUT [--allow N] [--one-thread]
Prints the counts and, for each thread that differs, the first differences (unified diff).
Exit 0 when every thread's sequence is equal (or differs in at most N lines, --allow).
--one-thread compares single-threaded runs of one program whose thread ids differ (two
captures): each file must hold one thread.
"""
import difflib
import re
import sys
from collections import OrderedDict

PERF_RE = re.compile(r'^\s*(\d+)\s+(?:\d+\.\d+:\s+)?(call|return)\s+([0-9a-f]+)\s+=>\s+([0-9a-f]+)\s*$')


def perf(path):
    out = OrderedDict()
    for line in open(path, errors='replace'):
        m = PERF_RE.match(line)
        if m:
            out.setdefault(int(m.group(1)), []).append(
                f'{m.group(2)} {int(m.group(3), 16):#x} {int(m.group(4), 16):#x}')
    return out


def ours(path):
    out = OrderedDict()
    for line in open(path, errors='replace'):
        f = line.split()
        if len(f) >= 5 and f[2] in ('call', 'return'):
            tid = int(f[0].split('/')[1])
            out.setdefault(tid, []).append(f'{f[2]} {int(f[3], 16):#x} {int(f[4], 16):#x}')
    return out


def main():
    allow = 0
    args = sys.argv[1:]
    if '--allow' in args:
        i = args.index('--allow')
        allow = int(args[i + 1])
        del args[i:i + 2]
    one = '--one-thread' in args
    if one:
        args.remove('--one-thread')
    a, b = perf(args[0]), ours(args[1])
    if one:
        if len(a) != 1 or len(b) != 1:
            print(f'--one-thread: perf has {len(a)} threads, ptbpf {len(b)}')
            return 1
        a, b = {0: list(a.values())[0]}, {0: list(b.values())[0]}
    total_diff = 0
    na, nb = sum(map(len, a.values())), sum(map(len, b.values()))
    print(f'perf: {na} calls+returns in {len(a)} threads; ptbpf: {nb} in {len(b)} threads')
    for tid in sorted(set(a) | set(b)):
        x, y = a.get(tid, []), b.get(tid, [])
        if x == y:
            print(f'  tid {tid}: {len(x)} equal')
            continue
        d = [l for l in difflib.unified_diff(x, y, f'perf tid {tid}', f'ptbpf tid {tid}',
                                             lineterm='', n=2)]
        changed = sum(1 for l in d if l[:1] in '+-' and l[:3] not in ('+++', '---'))
        total_diff += changed
        print(f'  tid {tid}: perf {len(x)}, ptbpf {len(y)}, {changed} lines differ')
        print('\n'.join('    ' + line for line in d[:30]))
    return 0 if total_diff <= allow else 1


if __name__ == '__main__':
    sys.exit(main())
