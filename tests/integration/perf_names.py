#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""Compare the names perf and ptbpf give to the targets of calls and returns.

usage: perf_names.py PERF_OUT PTBPF_OUT [--allow N] [--show N] [--plt-order-exempt]
PERF_OUT: `perf script --itrace=cr -F tid,flags,ip,sym,addr`, lines
    TID  call|return  FROM [FROM_SYM] =>  TO TO_SYM
PTBPF_OUT: `ptbpf decode --format calls`: PID/TID TIME KIND FROM TO NAME.

For every (kind, target address) that perf names (not [unknown]) and ptbpf's events
also hold, ptbpf's name must be perf's. Prints one line "N targets named by perf, M same
in ptbpf ...", then each disagreement; exit 0 when all agree (at most --allow differ).
--plt-order-exempt: a PLT entry that ptbpf names "FUNC@plt" is counted apart, not as a
disagreement, whatever perf calls it: perf 6.1 names PLT entries in .rela.plt order,
which is wrong where the PLT also holds IRELATIVE (ifunc) entries (libc: "@plt" or
another function's name), and its lookup returns an unsized symbol below the PLT
(`_init`) for the first entry of a binary's .plt; ptbpf reads the GOT slot each entry
jumps through.
"""
import re
import sys

# perf: "  1234   call   7ffff7fe434d _dl_sysdep_start =>     7ffff7fe5fc0 dl_main"
PERF_RE = re.compile(r'^\s*(\d+)\s+(call|return)\s+[0-9a-f]+\s+(?:.*?\s+)?=>\s+([0-9a-f]+)\s+(.*?)\s*$')


def perf_names(path):
    out = {}
    for line in open(path, errors='replace'):
        m = PERF_RE.match(line)
        if not m:
            continue
        name = m.group(4)
        if not name or name.startswith('[unknown]'):
            continue
        # perf prints "sym+0xoff" with symoff; the plain sym field has no offset
        out.setdefault((m.group(2), int(m.group(3), 16)), name)
    return out


def ptbpf_names(path):
    out = {}
    for line in open(path, errors='replace'):
        f = line.rstrip('\n').split(None, 5)
        if len(f) == 6 and f[2] in ('call', 'return'):
            out.setdefault((f[2], int(f[4], 16)), f[5])
    return out


def main():
    args = sys.argv[1:]
    allow, show = 0, 20
    if '--allow' in args:
        i = args.index('--allow')
        allow = int(args[i + 1])
        del args[i:i + 2]
    if '--show' in args:
        i = args.index('--show')
        show = int(args[i + 1])
        del args[i:i + 2]
    exempt_plt = '--plt-order-exempt' in args
    if exempt_plt:
        args.remove('--plt-order-exempt')
    p, o = perf_names(args[0]), ptbpf_names(args[1])
    common = [k for k in p if k in o]
    bad = [k for k in common if p[k] != o[k]]
    plt = []
    if exempt_plt:
        plt = [k for k in bad if o[k].endswith('@plt')]
        bad = [k for k in bad if k not in plt]
    calls = sum(1 for k in common if k[0] == 'call')
    print(f'{len(common)} targets named by perf, {len(common) - len(bad) - len(plt)} same in '
          f'ptbpf ({calls} calls, {len(common) - calls} returns); '
          f'{len(plt)} PLT entries perf names otherwise')
    for k in sorted(bad)[:show]:
        print(f'  {k[0]} {k[1]:#x}: perf {p[k]!r}, ptbpf {o[k]!r}')
    for k in sorted(plt)[:show]:
        print(f'  (plt) {k[0]} {k[1]:#x}: perf {p[k]!r}, ptbpf {o[k]!r}')
    return 0 if len(bad) <= allow else 1


if __name__ == '__main__':
    sys.exit(main())
