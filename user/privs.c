// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <linux/capability.h>

#include "privs.h"
#include "proc_synth.h"

#define PARANOID_PATH "/proc/sys/kernel/perf_event_paranoid"

bool privs_has_cap(int cap)
{
	struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3] = {};

	if (cap < 0 || cap >= 32 * _LINUX_CAPABILITY_U32S_3)
		return false;
	/* glibc has no capget() wrapper; libcap would be one more dependency for one call. */
	if (syscall(SYS_capget, &hdr, data))
		return false;
	return data[cap / 32].effective & (1u << (cap % 32));
}

const char *privs_attach_denied(int err, bool uprobe)
{
	if (err != -EACCES && err != -EPERM)
		return NULL;
	if (uprobe && !privs_has_cap(CAP_SYS_ADMIN))
		return "a missing privilege, not a missing kernel feature: the kernel attaches "
		       "uprobes only with CAP_SYS_ADMIN (CAP_PERFMON is not enough): run as root, "
		       "or setcap " PRIVS_SETCAP_SET "+ep on the ptbpf binary";
	if (!uprobe && !privs_has_cap(CAP_DAC_READ_SEARCH) && !privs_has_cap(CAP_DAC_OVERRIDE))
		return "a missing privilege, not a missing kernel feature: tracepoint ids are read "
		       "from tracefs, which only root may read (mode 0700) without "
		       "CAP_DAC_READ_SEARCH: run as root, or setcap " PRIVS_SETCAP_SET
		       "+ep on the ptbpf binary";
	return NULL;
}

int privs_read_sysctl(const char *path, int *value)
{
	FILE *f;
	int err = 0;

	if (!path || !value)
		return -EINVAL;
	f = fopen(path, "re");
	if (!f)
		return -errno;
	if (fscanf(f, "%d", value) != 1)
		err = -EINVAL;
	fclose(f);
	return err;
}

static bool perfmon_capable(void)
{
	return privs_has_cap(CAP_PERFMON) || privs_has_cap(CAP_SYS_ADMIN);
}

/* The kernel allows the action when paranoid <= max or the process is perfmon-capable. */
static bool perf_allowed(int max, const char *what, char *why, size_t size)
{
	int paranoid, err;

	if (perfmon_capable())
		return true;
	err = privs_read_sysctl(PARANOID_PATH, &paranoid);
	if (!err && paranoid <= max)
		return true;
	if (why && size) {
		if (err)
			snprintf(why, size, "%s needs CAP_PERFMON (cannot read %s: %s); fix: run "
				 "as root or grant CAP_PERFMON", what, PARANOID_PATH,
				 strerror(-err));
		else
			snprintf(why, size, "%s needs CAP_PERFMON or kernel.perf_event_paranoid "
				 "<= %d (it is %d); fix: run as root, grant CAP_PERFMON, or "
				 "sysctl kernel.perf_event_paranoid=%d", what, max, paranoid,
				 max);
	}
	return false;
}

bool privs_cpu_wide_perf(char *why, size_t size)
{
	return perf_allowed(0, "per-CPU perf events", why, size);
}

bool privs_kernel_perf(char *why, size_t size)
{
	return perf_allowed(1, "kernel tracing", why, size);
}

/* An integer field of /proc/self/status, 0 if absent. */
static int status_field(const char *name)
{
	char line[256];
	size_t len = strlen(name);
	int v = 0;
	FILE *f;

	f = fopen("/proc/self/status", "re");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		if (!strncmp(line, name, len)) {
			v = atoi(line + len);
			break;
		}
	}
	fclose(f);
	return v;
}

/* Loops until killed; dies with its parent so an interrupted probe leaves nothing. */
static void __attribute__((noreturn)) ptrace_probe_child(void)
{
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	for (;;)
		__asm__ volatile("pause" ::: "memory");
}

int privs_ptrace_probe(char *evidence, size_t size)
{
	int status, scope = -1, seccomp = 0, err = 0;
	char yama[96] = "";
	pid_t pid;

	if (!evidence || !size)
		return -EINVAL;
	seccomp = status_field("Seccomp:");
	if (!privs_read_sysctl("/proc/sys/kernel/yama/ptrace_scope", &scope))
		snprintf(yama, sizeof(yama), ", kernel.yama.ptrace_scope=%d", scope);
	pid = fork();
	if (pid < 0) {
		err = -errno;
		snprintf(evidence, size, "fork: %s", strerror(-err));
		return err;
	}
	if (pid == 0)
		ptrace_probe_child();

	if (ptrace(PTRACE_SEIZE, pid, 0, 0)) {
		err = -errno;
		if (seccomp > 0 && (err == -EPERM || err == -EACCES))
			snprintf(evidence, size, "PTRACE_SEIZE of a child: %s, with a seccomp "
				 "filter on this process (Seccomp: %d in /proc/self/status); fix: "
				 "run outside the sandbox, or allow ptrace (docker: --cap-add "
				 "SYS_PTRACE --security-opt seccomp=unconfined)", strerror(-err),
				 seccomp);
		else if (privs_has_cap(CAP_SYS_PTRACE))
			snprintf(evidence, size, "PTRACE_SEIZE of a child: %s although "
				 "CAP_SYS_PTRACE is effective%s; fix: an LSM policy (AppArmor, "
				 "SELinux) forbids ptrace: allow it for ptbpf", strerror(-err),
				 yama);
		else
			snprintf(evidence, size, "PTRACE_SEIZE of a child: %s%s; fix: %s",
				 strerror(-err), yama, scope == 3 ? "kernel.yama.ptrace_scope=3 "
				 "forbids ptrace until reboot" : "run as root or grant "
				 "CAP_SYS_PTRACE, or sysctl kernel.yama.ptrace_scope=1");
		goto cleanup;
	}
	if (ptrace(PTRACE_INTERRUPT, pid, 0, 0) || waitpid(pid, &status, __WALL) != pid) {
		err = -errno;
		snprintf(evidence, size, "PTRACE_INTERRUPT: %s", strerror(-err));
		goto cleanup;
	}
	if (ptrace(PTRACE_SINGLESTEP, pid, 0, 0) || waitpid(pid, &status, __WALL) != pid) {
		err = -errno;
		snprintf(evidence, size, "PTRACE_SINGLESTEP: %s", strerror(-err));
		goto cleanup;
	}
	if (!WIFSTOPPED(status) || WSTOPSIG(status) != SIGTRAP) {
		err = -EIO;
		snprintf(evidence, size, "PTRACE_SINGLESTEP did not stop with SIGTRAP (status "
			 "0x%x)", status);
		goto cleanup;
	}
	snprintf(evidence, size, "seized, interrupted and single-stepped a child process%s",
		 yama);

cleanup:
	kill(pid, SIGKILL);
	while (waitpid(pid, &status, __WALL) < 0 && errno == EINTR)
		;
	return err;
}

void privs_ptrace_denied(pid_t pid, char *why, size_t size)
{
	char path[64], self[64], other[64], lsm[128] = "";
	long tracer = 0, uid = -1;
	ssize_t n;
	FILE *f;
	int scope = 0;

	if (!proc_status_field(pid, "TracerPid", &tracer) && tracer) {
		snprintf(why, size, "process %ld (a debugger?) already traces it; only one tracer "
			 "at a time", tracer);
		return;
	}
	if (!privs_read_sysctl("/proc/sys/kernel/yama/ptrace_scope", &scope) && scope) {
		if (scope >= 3) {
			snprintf(why, size, "kernel.yama.ptrace_scope=3 forbids attaching to any "
				 "process (it can only be lowered by a reboot)");
			return;
		}
		if (!privs_has_cap(CAP_SYS_PTRACE)) {
			snprintf(why, size, "kernel.yama.ptrace_scope=%d lets only %s attach: run as "
				 "root (CAP_SYS_PTRACE) or sysctl kernel.yama.ptrace_scope=0", scope,
				 scope == 1 ? "a parent" : "CAP_SYS_PTRACE");
			return;
		}
	}
	if (!privs_has_cap(CAP_SYS_PTRACE) && !proc_status_field(pid, "Uid", &uid) &&
	    uid != (long)getuid()) {
		snprintf(why, size, "it runs as user %ld: tracing another user's process needs "
			 "CAP_SYS_PTRACE (run as root, or setcap cap_sys_ptrace+ep on ptbpf)", uid);
		return;
	}
	/* /proc/PID/ns/ needs the access ptrace needs (PTRACE_MODE_READ) */
	snprintf(path, sizeof(path), "/proc/%d/ns/user", pid);
	n = readlink(path, other, sizeof(other) - 1);
	if (n < 0) {
		snprintf(why, size, "the kernel denies ptbpf access to it: the process is "
			 "protected (not dumpable: prctl(PR_SET_DUMPABLE, 0), a setuid program, "
			 "or credentials ptbpf's capabilities do not cover)");
		return;
	}
	other[n] = '\0';
	n = readlink("/proc/self/ns/user", self, sizeof(self) - 1);
	if (n > 0) {
		self[n] = '\0';
		if (strcmp(self, other)) {
			snprintf(why, size, "it is in another user namespace (%s, a container's "
				 "process?) where ptbpf has no CAP_SYS_PTRACE: run ptbpf inside it",
				 other);
			return;
		}
	}
	f = fopen("/sys/kernel/security/lsm", "r");
	if (f) {
		if (!fgets(lsm, sizeof(lsm), f))
			lsm[0] = '\0';
		lsm[strcspn(lsm, "\n")] = '\0';
		fclose(f);
	}
	snprintf(why, size, "refused by a security module (active: %s)", *lsm ? lsm : "none listed");
}

/* The soft limit privs_raise_nofile() found, for the commands ptbpf starts. */
static struct rlimit nofile_found;
static bool nofile_raised;

int privs_raise_nofile(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl))
		return -errno;
	if (rl.rlim_cur >= rl.rlim_max)
		return 0;
	nofile_found = rl;
	rl.rlim_cur = rl.rlim_max;
	if (setrlimit(RLIMIT_NOFILE, &rl))
		return -errno;
	nofile_raised = true;
	return 0;
}

void privs_restore_nofile(void)
{
	if (nofile_raised)
		setrlimit(RLIMIT_NOFILE, &nofile_found);
}
