#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""Put this kernel's vDSO into a perf build-id cache: DIR/.build-id/XX/YYYY.../vdso.

usage: perf_vdso_cache.py DIR      (DIR is what perf calls ~/.debug)
perf reads a capture's vDSO only from its build-id cache, by the vDSO's build id; without
the entry it fails on every instruction there ("Failed to get instruction"). The image
is this process's own vDSO (the kernel maps the same one into every 64-bit process).
Prints the build id; prints nothing when there is no vDSO.
"""
import os
import struct
import sys

for line in open('/proc/self/maps'):
    if line.rstrip().endswith('[vdso]'):
        a, b = (int(x, 16) for x in line.split()[0].split('-'))
        break
else:
    sys.exit(0)
with open('/proc/self/mem', 'rb') as f:
    f.seek(a)
    img = f.read(b - a)
phoff = struct.unpack_from('<Q', img, 0x20)[0]
phentsize, phnum = struct.unpack_from('<HH', img, 0x36)
for i in range(phnum):
    p_type, _, p_offset, _, _, p_filesz = struct.unpack_from('<IIQQQQ', img, phoff + i * phentsize)
    off, end = p_offset, p_offset + p_filesz
    while p_type == 4 and off + 12 <= end:
        namesz, descsz, kind = struct.unpack_from('<III', img, off)
        desc = off + 12 + ((namesz + 3) & ~3)
        if kind == 3 and img[off + 12:off + 12 + namesz].rstrip(b'\0') == b'GNU':
            bid = img[desc:desc + descsz].hex()
            d = os.path.join(sys.argv[1], '.build-id', bid[:2], bid[2:])
            os.makedirs(d, exist_ok=True)
            with open(os.path.join(d, 'vdso'), 'wb') as out:
                out.write(img)
            print(bid)
            sys.exit(0)
        off = desc + ((descsz + 3) & ~3)
