// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <unistd.h>
#include <cmocka.h>

#include "proc_synth.h"

static void test_maps_line(void **state)
{
	char exec_line[] = "55d0c8a00000-55d0c8a05000 r-xp 00002000 fd:01 1234567    "
			   "/usr/bin/true\n";
	char data_line[] = "7f0000000000-7f0000001000 rw-s 00000000 00:05 99 /dev/zero (deleted)\n";
	char anon_line[] = "7f0000002000-7f0000003000 r-xp 00000000 00:00 0 \n";
	char vdso_line[] = "7ffd5e7f0000-7ffd5e7f2000 r-xp 00000000 00:00 0      [vdso]\n";
	char bad[] = "not a maps line\n", backwards[] = "2000-1000 r-xp 0 0:0 0 x\n";
	struct pd_record r;

	assert_int_equal(proc_synth_maps_line(exec_line, 42, &r), 1);
	assert_int_equal(r.type, PERF_RECORD_MMAP2);
	assert_int_equal(r.misc, PERF_RECORD_MISC_USER);
	assert_int_equal(r.mmap.pid, 42);
	assert_int_equal(r.mmap.tid, 42);
	assert_int_equal(r.mmap.addr, 0x55d0c8a00000ull);
	assert_int_equal(r.mmap.len, 0x5000);
	assert_int_equal(r.mmap.pgoff, 0x2000);
	assert_int_equal(r.mmap.maj, 0xfd);
	assert_int_equal(r.mmap.min, 1);
	assert_int_equal(r.mmap.ino, 1234567);
	assert_int_equal(r.mmap.prot, PROT_READ | PROT_EXEC);
	assert_int_equal(r.mmap.flags, MAP_PRIVATE);
	assert_string_equal(r.mmap.filename, "/usr/bin/true");

	assert_int_equal(proc_synth_maps_line(data_line, 42, &r), 0);
	assert_int_equal(r.mmap.prot, PROT_READ | PROT_WRITE);
	assert_int_equal(r.mmap.flags, MAP_SHARED);
	assert_int_equal(r.misc, PERF_RECORD_MISC_USER | PERF_RECORD_MISC_MMAP_DATA);
	assert_string_equal(r.mmap.filename, "/dev/zero (deleted)");

	assert_int_equal(proc_synth_maps_line(anon_line, 42, &r), 1);
	assert_string_equal(r.mmap.filename, "//anon");
	assert_int_equal(proc_synth_maps_line(vdso_line, 42, &r), 1);
	assert_string_equal(r.mmap.filename, "[vdso]");

	assert_int_equal(proc_synth_maps_line(bad, 42, &r), -EINVAL);
	assert_int_equal(proc_synth_maps_line(backwards, 42, &r), -EINVAL);
	assert_int_equal(proc_synth_maps_line(NULL, 42, &r), -EINVAL);
	assert_int_equal(proc_synth_maps_line(exec_line, 42, NULL), -EINVAL);
}

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int stage;

static void *named_thread(void *arg)
{
	prctl(PR_SET_NAME, "synth-worker");
	pthread_mutex_lock(&mu);
	stage = 1;
	pthread_cond_broadcast(&cv);
	while (stage != 2)
		pthread_cond_wait(&cv, &mu);
	pthread_mutex_unlock(&mu);
	return NULL;
}

static void test_process_self(void **state)
{
	struct pd_sample_id tmpl = { .time = 0, .cpu = 3, .id = 99, .valid = 0x10086 };
	struct capture *cap = capture__new();
	char exe[PATH_MAX];
	bool saw_main = false, saw_worker = false, saw_exe = false, saw_vdso = false;
	ssize_t len;
	pthread_t th;
	size_t i;
	int n;

	len = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	assert_true(len > 0);
	exe[len] = '\0';
	pthread_create(&th, NULL, named_thread, NULL);
	pthread_mutex_lock(&mu);
	while (stage != 1)
		pthread_cond_wait(&cv, &mu);
	pthread_mutex_unlock(&mu);

	n = proc_synth_process(cap, getpid(), &tmpl);
	assert_int_equal(n, (int)cap->nr_records);
	for (i = 0; i < cap->nr_records; i++) {
		const struct pd_record *r = &cap->records[i];

		assert_int_equal(r->sample.cpu, 3);
		assert_int_equal(r->sample.id, 99);
		assert_int_equal(r->sample.valid, 0x10086);
		assert_int_equal(r->sample.pid, getpid());
		if (r->type == PERF_RECORD_COMM) {
			assert_int_equal(r->sample.tid, r->comm.tid);
			saw_worker |= !strcmp(r->comm.comm, "synth-worker");
			saw_main |= r->comm.tid == (uint32_t)getpid();
		} else {
			assert_int_equal(r->type, PERF_RECORD_MMAP2);
			assert_true(r->mmap.prot & PROT_EXEC);
			saw_exe |= !strcmp(r->mmap.filename, exe);
			saw_vdso |= !strcmp(r->mmap.filename, "[vdso]");
		}
	}
	assert_true(saw_main);
	assert_true(saw_worker);
	assert_true(saw_exe);
	assert_true(saw_vdso);

	pthread_mutex_lock(&mu);
	stage = 2;
	pthread_cond_broadcast(&cv);
	pthread_mutex_unlock(&mu);
	pthread_join(th, NULL);
	capture__free(cap);
}

static void test_process_errors(void **state)
{
	struct pd_sample_id tmpl = {};
	struct capture *cap = capture__new();
	pid_t gone = 4194304;	/* above any pid_max */

	assert_int_equal(proc_synth_process(cap, gone, &tmpl), -ESRCH);
	assert_int_equal(proc_synth_process(NULL, getpid(), &tmpl), -EINVAL);
	assert_int_equal(proc_synth_process(cap, 0, &tmpl), -EINVAL);
	assert_int_equal(proc_synth_process(cap, getpid(), NULL), -EINVAL);
	capture__free(cap);
}

/* Whether a thread of this process is called `name`, as proc_read_comm() reads it. */
static bool have_thread_named(const char *name)
{
	char path[64], comm[32];
	struct dirent *de;
	bool found = false;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/task", getpid());
	d = opendir(path);
	assert_non_null(d);
	while ((de = readdir(d)))
		if (atoi(de->d_name) > 0 &&
		    !proc_read_comm(getpid(), atoi(de->d_name), comm, sizeof(comm)))
			found |= !strcmp(comm, name);
	closedir(d);
	return found;
}

/* The /proc readers: a thread's name and a status field, of this process and of none. */
static void test_proc_readers(void **state)
{
	pid_t gone = 4194304;	/* above any pid_max */
	char comm[32] = "x";
	pthread_t th;
	long v = -1;

	pthread_create(&th, NULL, named_thread, NULL);
	pthread_mutex_lock(&mu);
	while (stage != 1)
		pthread_cond_wait(&cv, &mu);
	pthread_mutex_unlock(&mu);
	assert_true(have_thread_named("synth-worker"));
	pthread_mutex_lock(&mu);
	stage = 2;
	pthread_cond_broadcast(&cv);
	pthread_mutex_unlock(&mu);
	pthread_join(th, NULL);

	/* the kernel keeps 15 characters of a name */
	assert_int_equal(proc_read_comm(getpid(), getpid(), comm, sizeof(comm)), 0);
	assert_true(comm[0] && !strncmp(comm, program_invocation_short_name, 15));
	assert_int_equal(proc_read_comm(gone, gone, comm, sizeof(comm)), -ENOENT);
	assert_string_equal(comm, "");
	assert_int_equal(proc_read_comm(getpid(), getpid(), NULL, 8), -EINVAL);
	assert_int_equal(proc_read_comm(getpid(), getpid(), comm, 0), -EINVAL);

	assert_int_equal(proc_status_field(getpid(), "Tgid", &v), 0);
	assert_int_equal(v, getpid());
	assert_int_equal(proc_status_field(getpid(), "PPid", &v), 0);
	assert_int_equal(v, getppid());
	/* a key is a whole field name ("Tg" is not "Tgid"); a missing one leaves v alone */
	v = -1;
	assert_int_equal(proc_status_field(getpid(), "Tg", &v), -ENOENT);
	assert_int_equal(v, -1);
	assert_int_equal(proc_status_field(gone, "Tgid", &v), -ENOENT);
	assert_int_equal(proc_status_field(getpid(), NULL, &v), -EINVAL);
	assert_int_equal(proc_status_field(getpid(), "Tgid", NULL), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_maps_line),
		cmocka_unit_test(test_process_self),
		cmocka_unit_test(test_process_errors),
		cmocka_unit_test(test_proc_readers),
	};

	return cmocka_run_group_tests_name("proc_synth", tests, NULL, NULL);
}
