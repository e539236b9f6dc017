# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""Which BPF programs one ptbpf run left behind (used by triggers_common.inc).

A program is held by a process when one of its fds is that program or a BPF link to it
(/proc/PID/fdinfo says prog_id); one that nothing holds after the run is left behind.
bpftool lists the programs; it is not asked who holds them, since a bpftool built without
skeletons (Debian 12's) never says, which made every live program look orphaned.

Program ids are global and the kernel does not record who loaded a program, so a run's
programs are told from those of other runs on the host (another worktree's tests, a
concurrent test_triggers) by elimination:

  watch DIR NAMES   before the run: writes DIR/first, the highest program id so far (the
                    run's programs come after it); then, every 0.1 s until DIR/stop exists,
                    adds to DIR/foreign the ids of programs named NAMES held by a process
                    other than the run's ptbpf (its pid is in DIR/pid once started);
  check DIR NAMES   after the run: prints the programs named NAMES that nothing holds, loaded
                    after DIR/first and no later than the highest id at the first check
                    (DIR/last), that no other process was seen holding; exits 1 if any.

A program of the run that outlives it was never held by another process, so it is always
reported: only programs seen in another process's hands are left out. bpftool itself,
which holds every program while it lists them, is not counted as a holder.
"""
import json
import os
import re
import subprocess
import sys
import time


def progs():
    out = subprocess.run(["bpftool", "-j", "prog", "list"], capture_output=True, text=True)
    try:
        return json.loads(out.stdout or "[]")
    except ValueError:
        return []


def holders():
    """{prog id: {pid, ...}} from every process's BPF program and link fds."""
    held = {}
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open("/proc/%s/comm" % pid) as f:
                if f.read().strip() == "bpftool":
                    continue
            fds = os.listdir("/proc/%s/fd" % pid)
        except OSError:
            continue
        for fd in fds:
            try:
                link = os.readlink("/proc/%s/fd/%s" % (pid, fd))
                if link not in ("anon_inode:bpf-prog", "anon_inode:bpf_link"):
                    continue
                with open("/proc/%s/fdinfo/%s" % (pid, fd)) as f:
                    m = re.search(r"^prog_id:\s*(\d+)", f.read(), re.M)
            except OSError:
                continue
            if m:
                held.setdefault(int(m.group(1)), set()).add(int(pid))
    return held


def read_int(path):
    try:
        with open(path) as f:
            return int(f.read().strip() or 0)
    except (OSError, ValueError):
        return 0


def max_id(ps):
    return max([p["id"] for p in ps] + [0])


def watch(d, ours):
    parent = os.getppid()
    ps = progs()
    with open(os.path.join(d, "first.tmp"), "w") as f:
        f.write("%d\n" % max_id(ps))
    os.rename(os.path.join(d, "first.tmp"), os.path.join(d, "first"))
    # The first look runs at the caller's priority so that the test does not wait on a
    # starved watcher; the watching itself must not delay the targets of timing tests.
    os.nice(19)
    foreign = set()
    while True:
        stop = os.path.exists(os.path.join(d, "stop"))
        run_pid = read_int(os.path.join(d, "pid"))
        held = holders()
        new = {p["id"] for p in ps if ours.match(p.get("name", "")) and
               p["id"] not in foreign and held.get(p["id"], set()) - {run_pid}}
        if new:
            foreign |= new
            with open(os.path.join(d, "foreign"), "a") as f:
                f.write("".join("%d\n" % i for i in sorted(new)))
        # stop when told, and never outlive the test that started it
        if stop or os.getppid() != parent or not os.path.isdir(d):
            return 0
        time.sleep(0.1)
        ps = progs()


def check(d, ours):
    first = read_int(os.path.join(d, "first"))
    ps = progs()
    held = holders()
    last_path = os.path.join(d, "last")
    if not os.path.exists(last_path):
        with open(last_path, "w") as f:
            f.write("%d\n" % max_id(ps))
    last = read_int(last_path)
    foreign = set()
    if os.path.exists(os.path.join(d, "foreign")):
        with open(os.path.join(d, "foreign")) as f:
            foreign = {int(x) for x in f.read().split()}
    orphans = [p for p in ps if ours.match(p.get("name", "")) and p["id"] not in held and
               first < p["id"] <= last and p["id"] not in foreign]
    for p in orphans:
        print("orphan BPF program: id %d name %s" % (p["id"], p["name"]))
    return 1 if orphans else 0


def main():
    cmd, d, names = sys.argv[1:4]
    ours = re.compile(r"^(" + names + r")$")
    return watch(d, ours) if cmd == "watch" else check(d, ours)


if __name__ == "__main__":
    sys.exit(main())
