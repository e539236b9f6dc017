#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""Print the events of an FXT file, one per line, for tests that need more than
fxtcheck's summary: where an instant sits among a thread's slices, and its arguments.

    fxt_events.py FILE [--open-at NAME]

Default output: "pid tid kind ts name [end] k=v..." in file order (kind: instant,
begin, end, complete, counter). With --open-at NAME: for the first instant named NAME,
the stack of slices open on its thread at its time, outermost first, then the
instant's arguments: the shape a test compares with the program's real call path.
Reads only what ptbpf writes (indexed or inline strings and threads); gzip is detected.
Written from the FXT specification, independent of ptbpf's writer.
"""
import gzip
import struct
import sys

EVENT_KINDS = {0: "instant", 1: "counter", 2: "begin", 3: "end", 4: "complete"}


def words(data, off, n):
    return struct.unpack_from("<%dQ" % n, data, off)


def read_stream(data, off, length):
    return data[off:off + length].decode("utf-8", "replace"), (length + 7) // 8 * 8


def events(data):
    strings, threads = {}, {}
    off = 0
    while off + 8 <= len(data):
        (h,) = words(data, off, 1)
        rtype, size = h & 0xF, (h >> 4) & 0xFFF
        if size == 0:
            raise SystemExit("zero-size record at %d" % off)
        rec = data[off:off + size * 8]
        if rtype == 2:  # string
            idx, length = (h >> 16) & 0x7FFF, (h >> 32) & 0x7FFF
            strings[idx] = rec[8:8 + length].decode("utf-8", "replace")
        elif rtype == 3:  # thread
            threads[(h >> 16) & 0xFF] = words(rec, 8, 2)
        elif rtype == 4:  # event
            yield parse_event(h, rec, strings, threads)
        off += size * 8


def string_ref(ref, rec, pos, strings):
    if ref & 0x8000:
        s, used = read_stream(rec, pos, ref & 0x7FFF)
        return s, pos + used
    return strings.get(ref, "") if ref else "", pos


def parse_event(h, rec, strings, threads):
    etype, nargs = (h >> 16) & 0xF, (h >> 20) & 0xF
    tref, cref, nref = (h >> 24) & 0xFF, (h >> 32) & 0xFFFF, (h >> 48) & 0xFFFF
    (ts,) = words(rec, 8, 1)
    pos = 16
    if tref:
        pid, tid = threads.get(tref, (0, 0))
    else:
        pid, tid = words(rec, pos, 2)
        pos += 16
    _, pos = string_ref(cref, rec, pos, strings)
    name, pos = string_ref(nref, rec, pos, strings)
    args = {}
    for _ in range(nargs):
        (ah,) = words(rec, pos, 1)
        atype, asize, aname = ah & 0xF, (ah >> 4) & 0xFFF, (ah >> 16) & 0xFFFF
        key, vpos = string_ref(aname, rec, pos + 8, strings)
        if atype in (1, 2):
            val = (ah >> 32) & 0xFFFFFFFF
            if atype == 1 and val >= 1 << 31:
                val -= 1 << 32
        elif atype in (3, 4, 7, 8):
            (val,) = struct.unpack_from("<q" if atype == 3 else "<Q", rec, vpos)
        elif atype == 5:
            (val,) = struct.unpack_from("<d", rec, vpos)
        elif atype == 6:
            val, _ = string_ref((ah >> 32) & 0xFFFF, rec, vpos, strings)
        elif atype == 9:
            val = bool((ah >> 32) & 1)
        else:
            val = None
        args[key] = val
        pos += asize * 8
    end = words(rec, pos, 1)[0] if etype == 4 else None
    return {"kind": EVENT_KINDS.get(etype, str(etype)), "pid": pid, "tid": tid, "ts": ts,
            "name": name, "end": end, "args": args}


def open_at(evs, name):
    """Slices open on the thread of the first instant `name`, at its time."""
    mark = next((e for e in evs if e["kind"] == "instant" and e["name"] == name), None)
    if not mark:
        raise SystemExit("no instant named %r" % name)
    key, t = (mark["pid"], mark["tid"]), mark["ts"]
    spans, stack = [], []
    for i, e in enumerate(evs):
        if (e["pid"], e["tid"]) != key:
            continue
        if e["kind"] == "complete":
            spans.append((e["ts"], e["end"], i, e["name"]))
        elif e["kind"] == "begin":
            stack.append((e["ts"], i, e["name"]))
        elif e["kind"] == "end" and stack:
            b, j, n = stack.pop()
            spans.append((b, e["ts"], j, n))
    spans.extend((b, None, j, n) for b, j, n in stack)
    # Open at t: began at or before t and ended at or after it. Outermost first: earlier
    # start, then later end, then written first (the spec's readers keep file order).
    live = [s for s in spans if s[0] <= t and (s[1] is None or s[1] >= t)]
    live.sort(key=lambda s: (s[0], -(s[1] if s[1] is not None else 1 << 64), s[2]))
    return [n for _, _, _, n in live], mark


def main():
    if len(sys.argv) < 2:
        raise SystemExit(__doc__)
    with open(sys.argv[1], "rb") as f:
        data = f.read()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    evs = list(events(data))
    if len(sys.argv) > 3 and sys.argv[2] == "--open-at":
        frames, mark = open_at(evs, sys.argv[3])
        print(" > ".join(frames))
        for k, v in mark["args"].items():
            print("%s=%s" % (k, v))
        return
    for e in evs:
        args = " ".join("%s=%s" % kv for kv in e["args"].items())
        end = " %d" % e["end"] if e["end"] is not None else ""
        print("%d %d %s %d %s%s %s" % (e["pid"], e["tid"], e["kind"], e["ts"], e["name"], end,
                                        args))


if __name__ == "__main__":
    main()
