/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The traced process: spawned by ptbpf (`-- CMD`) and held before exec until the
 * triggers and rings are armed, or an existing process (`-p PID`).
 */
#ifndef PTBPF_TARGET_H
#define PTBPF_TARGET_H

#include <stdbool.h>
#include <sys/types.h>

struct target {
	pid_t pid;		/* tgid of the target */
	int pidfd;		/* pidfd_open(pid), readable when it exits; -1 if unsupported */
	bool spawned;		/* started by ptbpf */
	bool released;		/* spawned: exec has been allowed to proceed */
	int go_fd;		/* spawned: write end of the pipe the child waits on, -1 after */
	int exec_err_fd;	/* spawned: read end; the child writes errno if exec fails */
	char comm[16];		/* short name (argv[0] basename, or /proc/PID/comm) */
	char *exe;		/* the program: path of CMD as exec will find it, or /proc/PID/exe */
	int exit_status;	/* wait status once reaped, -1 before */
};

/*
 * Fork a child that waits, before exec, until target__release(). Returns 0 or -errno;
 * a command that cannot be found or run is reported here (-ENOENT, -EACCES), not after
 * release.
 */
/* The file `cmd` names, found as execvp() finds it (PATH). Returns 0 or -errno. */
int target_resolve_command(const char *cmd, char **out);
int target__spawn(char *const argv[], struct target **out);
/* An existing process; -ESRCH if it does not exist, -EPERM if not ours to trace. */
int target__attach_pid(pid_t pid, struct target **out);
/* Let the spawned child exec. Returns -errno if exec failed (e.g. -EACCES). */
int target__release(struct target *t);
/* Kill a spawned child that was never released; NULL-safe. */
void target__free(struct target *t);

#endif /* PTBPF_TARGET_H */
