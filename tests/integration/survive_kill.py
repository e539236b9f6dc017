# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""SIGKILL of ptbpf at random moments; the traced program must not notice (ss_survive.sh).

  survive_kill.py MODE TRIES WINDOW PTBPF SURVIVOR TMPDIR

MODE "cmd": `ptbpf ... -- SURVIVOR`; MODE "pid": SURVIVOR started here, `ptbpf ... -p`.
Each try kills ptbpf (the process the user started) with SIGKILL after a random delay
in [0, WINDOW] s (with -- CMD: from ptbpf's first fork, before which it has started
nothing), then waits for every process that run left: this script is their
subreaper (PR_SET_CHILD_SUBREAPER), so the orphaned program's exit status comes here
as it would to the shell that started it. The program must exit 3 with its one line
of output, "TracerPid 0" in it (it reads its own /proc status just before it exits).
Prints one line per try; exits 1 at the first try that harmed the program.
"""
import ctypes
import os
import random
import signal
import subprocess
import sys
import time

PR_SET_CHILD_SUBREAPER = 36


def comm(pid):
    try:
        with open(f"/proc/{pid}/comm") as f:
            return f.read().strip()
    except OSError:
        return "?"


def reap_all(deadline):
    """Waits for every descendant; returns {pid: (comm, status)}."""
    ended = {}
    while True:
        try:
            # Peek first: the comm of a zombie is still readable.
            info = os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOWAIT | os.WNOHANG)
        except ChildProcessError:
            return ended
        if info is None:
            if time.monotonic() > deadline:
                raise TimeoutError("processes still running: " + ", ".join(
                    f"{p} {comm(p)}" for p in os.listdir("/proc") if p.isdigit() and
                    os.path.exists(f"/proc/{p}/status") and
                    f"PPid:\t{os.getpid()}\n" in open(f"/proc/{p}/status").read()))
            time.sleep(0.02)
            continue
        name = comm(info.si_pid)
        _, status = os.waitpid(info.si_pid, 0)
        ended[info.si_pid] = (name, status)


def describe(status):
    if os.WIFSIGNALED(status):
        return "killed by " + signal.Signals(os.WTERMSIG(status)).name
    return f"exit {os.WEXITSTATUS(status)}"


def main():
    mode, tries, window, ptbpf, survivor, tmp = sys.argv[1:7]
    tries, window = int(tries), float(window)
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0):
        print("cannot become a subreaper:", os.strerror(ctypes.get_errno()))
        return 1
    rng = random.Random(int(os.environ.get("SEED", time.time_ns())))
    opts = [ptbpf, "--backend", "singlestep", "--decode=no"]
    for i in range(tries):
        delay = rng.uniform(0, window)
        out_path = os.path.join(tmp, f"{mode}{i}.out")
        err_path = os.path.join(tmp, f"{mode}{i}.err")
        data = os.path.join(tmp, f"{mode}{i}.data")
        with open(out_path, "w") as out, open(err_path, "w") as err:
            if mode == "cmd":
                target = None
                p = subprocess.Popen(opts + [f"--keep-capture={data}", "--", survivor, "150"],
                                     stdout=out, stderr=err)
                # Killed before it forked, ptbpf never started the program: nothing to
                # harm. The random moments count from its first child.
                children = f"/proc/{p.pid}/task/{p.pid}/children"
                while p.poll() is None and not open(children).read().strip():
                    time.sleep(0.001)
            else:
                target = subprocess.Popen([survivor, "150"], stdout=out)
                time.sleep(0.05)
                p = subprocess.Popen(opts + [f"--keep-capture={data}", "-p", str(target.pid)],
                                     stdout=err, stderr=err)
            time.sleep(delay)
            p.kill()
            try:
                ended = reap_all(time.monotonic() + 120)
            except TimeoutError as e:
                print(f"try {i} ({mode}, kill at {delay:.2f}s): {e}")
                return 1
        progs = {pid: (name, st) for pid, (name, st) in ended.items() if name == "survivor"}
        with open(out_path) as f:
            output = f.read()
        bad = None
        if len(progs) != 1:
            bad = f"{len(progs)} survivor processes ended: {ended}"
        else:
            status = next(iter(progs.values()))[1]
            if not os.WIFEXITED(status) or os.WEXITSTATUS(status) != 3:
                bad = f"the program ended with {describe(status)}, not exit 3"
            elif "TracerPid 0\n" not in output:
                bad = f"its output is {output!r}, not a line ending in 'TracerPid 0'"
        ptbpf_end = describe(ended.get(p.pid, ("", 0))[1])
        print(f"try {i} ({mode}): ptbpf SIGKILLed at {delay:.2f}s; program "
              f"{'harmed: ' + bad if bad else 'ended normally, untraced'}")
        if bad:
            with open(err_path) as f:
                print(f.read())
            return 1
        for path in (data, data + ".old"):
            if os.path.exists(path):
                os.unlink(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
