// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The floor under the singlestep backend: a tracer that only single-steps a program
 * (PTRACE_SINGLESTEP, waitpid, PTRACE_GETREGS per instruction) and encodes nothing.
 * Usage: ss_bare_step [PROG ARGS...]   (default: $BUILD/targets/recurse 10)
 * Prints instructions, seconds, instructions per second and µs per instruction.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	char path[4096], *def[] = { path, "10", NULL }, **cmd = argv + 1;
	struct user_regs_struct regs;
	unsigned long steps = 0;
	int status, sig;
	double t0, t;
	pid_t pid;

	if (argc < 2) {
		snprintf(path, sizeof(path), "%s/targets/recurse", getenv("BUILD") ?: "build");
		cmd = def;
	}
	pid = fork();
	if (pid < 0)
		return 1;
	if (pid == 0) {
		/* The program's output is not the benchmark's. */
		if (!freopen("/dev/null", "w", stdout))
			_exit(127);
		ptrace(PTRACE_TRACEME, 0, NULL, NULL);
		raise(SIGSTOP);
		execv(cmd[0], cmd);
		_exit(127);
	}
	if (waitpid(pid, &status, 0) != pid ||
	    ptrace(PTRACE_SETOPTIONS, pid, NULL, (void *)(long)PTRACE_O_TRACEEXEC) ||
	    ptrace(PTRACE_CONT, pid, NULL, NULL) || waitpid(pid, &status, 0) != pid) {
		fprintf(stderr, "ss_bare_step: cannot trace %s: %s\n", cmd[0], strerror(errno));
		return 1;
	}
	t0 = now_s();
	for (sig = 0;; steps++) {
		if (ptrace(PTRACE_SINGLESTEP, pid, NULL, (void *)(long)sig) ||
		    waitpid(pid, &status, 0) != pid || !WIFSTOPPED(status))
			break;
		sig = WSTOPSIG(status) == SIGTRAP ? 0 : WSTOPSIG(status);
		ptrace(PTRACE_GETREGS, pid, NULL, &regs);
	}
	t = now_s() - t0;
	printf("bare single-stepping %s: %lu instructions in %.2f s: %.0f instructions/s, "
	       "%.1f us per instruction\n", cmd[0], steps, t, steps / t, t * 1e6 / steps);
	return 0;
}
