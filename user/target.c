// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "log.h"
#include "privs.h"
#include "proc_synth.h"
#include "target.h"

static int pidfd_open_compat(pid_t pid)
{
#ifdef SYS_pidfd_open
	return syscall(SYS_pidfd_open, pid, 0);
#else
	errno = ENOSYS;
	return -1;
#endif
}

/* execvp's lookup, done before fork so "no such command" is an error of ptbpf's. */
int target_resolve_command(const char *cmd, char **out)
{
	const char *path, *p, *end;
	char buf[PATH_MAX];
	int err = -ENOENT;

	if (strchr(cmd, '/')) {
		if (access(cmd, X_OK))
			return -errno;
		*out = realpath(cmd, NULL);
		return *out ? 0 : -errno;
	}
	path = getenv("PATH");
	if (!path)
		path = "/usr/local/bin:/usr/bin:/bin";
	for (p = path; *p; p = *end ? end + 1 : end) {
		end = strchrnul(p, ':');
		if (snprintf(buf, sizeof(buf), "%.*s/%s", (int)(end - p), end == p ? "." : p,
			     cmd) >= (int)sizeof(buf))
			continue;
		if (!access(buf, X_OK)) {
			*out = realpath(buf, NULL);
			return *out ? 0 : -errno;
		}
		if (errno == EACCES)
			err = -EACCES;
	}
	return err;
}

static struct target *target__alloc(void)
{
	struct target *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	t->pidfd = -1;
	t->go_fd = -1;
	t->exec_err_fd = -1;
	t->exit_status = -1;
	return t;
}

int target__spawn(char *const argv[], struct target **out)
{
	int go[2] = { -1, -1 }, exec_err[2] = { -1, -1 };
	struct target *t;
	const char *base;
	char c;
	int err;

	t = target__alloc();
	if (!t)
		return -ENOMEM;
	err = target_resolve_command(argv[0], &t->exe);
	if (err) {
		elog("cannot run '%s': %s\n", argv[0], strerror(-err));
		goto cleanup;
	}
	if (pipe2(go, O_CLOEXEC) || pipe2(exec_err, O_CLOEXEC)) {
		err = -errno;
		goto cleanup;
	}
	t->pid = fork();
	if (t->pid < 0) {
		err = -errno;
		goto cleanup;
	}
	if (t->pid == 0) {
		sigset_t none;

		close(go[1]);
		close(exec_err[0]);
		/* ptbpf reads its signals from a signalfd: the command gets them as usual. */
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		/*
		 * Held here until the rings and triggers are armed. An end of file without
		 * the byte means ptbpf died before: the command the user asked for runs
		 * anyway, untraced. (ptbpf's own errors kill it first, see target__free.)
		 */
		if (read(go[0], &c, 1) < 0)
			_exit(127);
		privs_restore_nofile();
		execv(t->exe, argv);
		err = errno;
		if (write(exec_err[1], &err, sizeof(err)) < 0)
			_exit(127);
		_exit(127);
	}
	close(go[0]);
	close(exec_err[1]);
	t->go_fd = go[1];
	t->exec_err_fd = exec_err[0];
	t->spawned = true;
	t->pidfd = pidfd_open_compat(t->pid);
	base = strrchr(argv[0], '/');
	snprintf(t->comm, sizeof(t->comm), "%s", base ? base + 1 : argv[0]);
	*out = t;
	return 0;

cleanup:
	if (go[0] >= 0)
		close(go[0]);
	if (go[1] >= 0)
		close(go[1]);
	if (exec_err[0] >= 0)
		close(exec_err[0]);
	if (exec_err[1] >= 0)
		close(exec_err[1]);
	free(t->exe);
	free(t);
	return err;
}

int target__attach_pid(pid_t pid, struct target **out)
{
	char path[64], buf[PATH_MAX];
	struct target *t;
	ssize_t n;

	if (kill(pid, 0)) {
		int err = -errno;

		char why[320];

		if (err == -ESRCH) {
			elog("no process with PID %d\n", pid);
		} else if (err == -EPERM) {
			privs_ptrace_denied(pid, why, sizeof(why));
			elog("cannot trace PID %d: %s\n", pid, why);
		} else {
			elog("cannot trace PID %d: %s\n", pid, strerror(-err));
		}
		return err;
	}
	t = target__alloc();
	if (!t)
		return -ENOMEM;
	t->pid = pid;
	t->pidfd = pidfd_open_compat(pid);
	proc_read_comm(pid, pid, t->comm, sizeof(t->comm));
	snprintf(path, sizeof(path), "/proc/%d/exe", pid);
	n = readlink(path, buf, sizeof(buf) - 1);
	if (n > 0) {
		buf[n] = '\0';
		t->exe = strdup(buf);
	}
	*out = t;
	return 0;
}

int target__release(struct target *t)
{
	ssize_t n;
	int err = 0;

	if (!t->spawned || t->released)
		return 0;
	t->released = true;
	if (write(t->go_fd, "g", 1) != 1)
		err = -errno;
	close(t->go_fd);
	t->go_fd = -1;
	if (err)
		return err;
	/* EOF: exec succeeded (CLOEXEC closed the pipe); a number: exec's errno. */
	do
		n = read(t->exec_err_fd, &err, sizeof(err));
	while (n < 0 && errno == EINTR);
	close(t->exec_err_fd);
	t->exec_err_fd = -1;
	if (n == sizeof(err)) {
		elog("cannot exec '%s': %s\n", t->exe, strerror(err));
		return -err;
	}
	return 0;
}

void target__free(struct target *t)
{
	if (!t)
		return;
	if (t->spawned && !t->released && t->pid > 0) {
		kill(t->pid, SIGKILL);
		waitpid(t->pid, NULL, 0);
	}
	if (t->go_fd >= 0)
		close(t->go_fd);
	if (t->exec_err_fd >= 0)
		close(t->exec_err_fd);
	if (t->pidfd >= 0)
		close(t->pidfd);
	free(t->exe);
	free(t);
}
