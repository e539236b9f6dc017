// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The guardian process and its worker: see guardian.h for why. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "guardian.h"
#include "log.h"

/* In the worker: its guardian's pid (0: no guardian, the process works alone). */
static pid_t guardian;

/* Signals the guardian handles itself; the worker reads the first three from a signalfd. */
static void guardian_signals(sigset_t *set)
{
	sigemptyset(set);
	sigaddset(set, SIGINT);
	sigaddset(set, SIGTERM);
	sigaddset(set, SIGHUP);
	sigaddset(set, SIGCHLD);
}

static void __attribute__((noreturn)) guard(pid_t worker, const sigset_t *set)
{
	siginfo_t si;
	int status, sig;

	for (;;) {
		sig = sigwaitinfo(set, &si);
		if (sig < 0)
			continue;
		if (sig == SIGCHLD) {
			if (waitpid(worker, &status, WNOHANG) == worker)
				break;
			continue;
		}
		/*
		 * A signal from the terminal (SI_KERNEL: Ctrl-C, hangup) reached the worker
		 * too, through the process group; one from kill(2) was meant for ptbpf.
		 */
		if (si.si_code == SI_USER || si.si_code == SI_QUEUE || si.si_code == SI_TKILL)
			kill(worker, sig);
	}
	if (WIFEXITED(status))
		exit(WEXITSTATUS(status));
	elog("the tracing process (pid %d) was killed by SIG%s\n", worker,
	     sigabbrev_np(WTERMSIG(status)) ?: "?");
	exit(128 + WTERMSIG(status));
}

int guardian_split(void)
{
	sigset_t set, old;
	pid_t parent = getpid(), worker;
	int err;

	guardian_signals(&set);
	if (sigprocmask(SIG_BLOCK, &set, &old))
		return -errno;
	fflush(NULL);
	worker = fork();
	if (worker < 0) {
		err = -errno;
		sigprocmask(SIG_SETMASK, &old, NULL);
		return err;
	}
	if (worker > 0)
		guard(worker, &set);

	guardian = parent;
	if (prctl(PR_SET_PDEATHSIG, GUARDIAN_DEATH_SIGNAL)) {
		err = -errno;
		elog("cannot ask for the guardian's death signal: %s\n", strerror(-err));
		_exit(1);
	}
	/* The guardian died before prctl(): the signal it would have sent, now. */
	if (getppid() != parent)
		kill(getpid(), GUARDIAN_DEATH_SIGNAL);
	/* SIGINT, SIGTERM and SIGHUP stay blocked: pending until the capture's signalfd. */
	sigemptyset(&set);
	sigaddset(&set, SIGCHLD);
	sigprocmask(SIG_UNBLOCK, &set, NULL);
	return 0;
}

bool guardian_gone(void)
{
	return guardian && getppid() != guardian;
}

pid_t guardian_pid(void)
{
	return guardian;
}

void guardian_protect(void)
{
	int fd = open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);

	if (fd < 0)
		return;
	/* -999, not -1000: the last choice, not exempt, should ptbpf itself run away. */
	if (write(fd, "-999", 4) != 4)
		vlog("oom_score_adj -999: %s (needs CAP_SYS_RESOURCE)\n", strerror(errno));
	close(fd);
}
