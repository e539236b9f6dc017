// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * A selected process's flow alone (--pid) is what the whole decode gives it, and the
 * whole decode is the same at -j 1 and split in pieces at -j 2, where a process's time
 * slices alternate on one CPU with another process's.
 *
 * The capture: HASE's control_flow (the target) and loopy (another process, other
 * code), both real Skylake PT, their traces laid end to end on one CPU in a pattern of
 * slices (runs of the target, of the other, single ones), each copy's TSCs moved on so
 * that time goes forward, with context switches in the sideband between slices of
 * different processes. Each copy starts with tracing enabled at _start and stopped
 * again before its first instruction, so the stop's last instruction is the one
 * decoded before: the target's own (the slice before was its own) or none (another
 * thread's), at -j 1, at -j 2 where a piece begins at that copy, and with --pid.
 *
 * The capture command decodes only its target's threads by default (issue 17): its
 * decode options (capture_session__decode_opts()), for a command or -p, skip the other
 * process's slices and give the FXT `ptbpf decode --pid TARGET` gives; with
 * --system-wide they skip nothing and give the whole decode's.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>
#include <intel-pt.h>
#include <linux/perf_event.h>

#include "capture_session.h"
#include "capture_synth.h"
#include "perfdata.h"
#include "ptdecode.h"

#define HASE "perf-intel-pt/hase-2018"
#define BIN_DIR "/home/joerg/git/angr/hase/tests/bin"

/* which process each slice is: T the target, O the other */
static const char pattern[] = "TTTOOTOTTOTTTTOOOTOTTOTOOTTT";

struct trace {
	struct capture *cap;
	const uint8_t *pt;
	size_t len;
	uint64_t tsc_off[64];	/* the TSC packets' offsets */
	size_t nr_tsc;
	uint64_t first, last;	/* their first and last values */
	uint32_t pid;		/* the process that exec'd */
};

static char dir[64], data_path[128], sysroot[128];

static int load(const char *path, struct trace *t)
{
	struct pt_packet_decoder *pd;
	struct pt_config cfg;
	struct pt_packet p;
	uint64_t off;
	size_t i;

	if (perfdata_read(path, &t->cap) || t->cap->nr_aux != 1)
		return -1;
	t->pt = t->cap->aux[0].data;
	t->len = t->cap->aux[0].size;
	pt_config_init(&cfg);
	cfg.begin = (uint8_t *)t->pt;
	cfg.end = (uint8_t *)t->pt + t->len;
	pd = pt_pkt_alloc_decoder(&cfg);
	if (!pd || pt_pkt_sync_forward(pd) < 0)
		return -1;
	while (pt_pkt_get_offset(pd, &off) >= 0 && pt_pkt_next(pd, &p, sizeof(p)) > 0) {
		if (p.type != ppt_tsc)
			continue;
		if (t->nr_tsc == sizeof(t->tsc_off) / sizeof(t->tsc_off[0]))
			break;
		if (!t->nr_tsc)
			t->first = p.payload.tsc.tsc;
		t->last = p.payload.tsc.tsc;
		t->tsc_off[t->nr_tsc++] = off;
	}
	pt_pkt_free_decoder(pd);
	for (i = 0; i < t->cap->nr_records; i++)
		if (t->cap->records[i].type == PERF_RECORD_COMM &&
		    (t->cap->records[i].misc & PERF_RECORD_MISC_COMM_EXEC))
			t->pid = t->cap->records[i].comm.pid;
	return t->nr_tsc && t->pid ? 0 : -1;
}

static int link_binary(const char *testdata, const char *sub, const char *name)
{
	char from[512], to[256];

	snprintf(from, sizeof(from), "%s/" HASE "/%s/symfs" BIN_DIR "/%s/%s", testdata, sub,
		 name, name);
	snprintf(to, sizeof(to), "%s" BIN_DIR "/%s", sysroot, name);
	if (mkdir(to, 0700) && errno != EEXIST)
		return -1;
	snprintf(to, sizeof(to), "%s" BIN_DIR "/%s/%s", sysroot, name, name);
	return symlink(from, to);
}

/* The capture, at data_path; a sysroot holding both programs. */
static int setup(void **state)
{
	const char *testdata = getenv("TESTDATA");
	char path[512], cmd[256];
	struct trace t[2] = { 0 };	/* the target, the other */
	struct pd_record sw = { 0 };
	struct capture *cap;
	uint64_t step;
	uint8_t *big = NULL;
	size_t size = 0, k, i;
	int err = -1;

	(void)state;
	if (!testdata)
		testdata = "tests/data";
	snprintf(dir, sizeof(dir), "/tmp/ptbpf-test-select-%d", getpid());
	snprintf(data_path, sizeof(data_path), "%s/capture.data", dir);
	snprintf(sysroot, sizeof(sysroot), "%s/root", dir);
	snprintf(cmd, sizeof(cmd), "mkdir -p %s" BIN_DIR, sysroot);
	if (system(cmd))
		return -1;
	snprintf(path, sizeof(path), "%s/" HASE "/skl-control_flow/control_flow-20180404T163033.perf",
		 testdata);
	if (load(path, &t[0]))
		goto out;
	snprintf(path, sizeof(path), "%s/" HASE "/skl-loopy/loopy-20180404T162955.perf", testdata);
	if (load(path, &t[1]) || t[0].pid == t[1].pid)
		goto out;
	if (link_binary(testdata, "skl-control_flow", "control_flow") ||
	    link_binary(testdata, "skl-loopy", "loopy"))
		goto out;
	big = malloc((sizeof(pattern) - 1) * (t[0].len + t[1].len));
	if (!big)
		goto out;
	/* each copy's time: its span and ~3 ms more, MTCs after its last TSC within it */
	step = 4 * (t[0].last - t[0].first > t[1].last - t[1].first ?
		    t[0].last - t[0].first : t[1].last - t[1].first) + 10000000;
	cap = t[0].cap;
	/* the target's sideband without its switches and exit, the other's programs */
	if (capture_drop_schedule(cap, &sw))
		goto out;
	for (i = 0; i < t[1].cap->nr_records; i++) {
		const struct pd_record *r = &t[1].cap->records[i];

		if ((r->type == PERF_RECORD_COMM || r->type == PERF_RECORD_MMAP2) &&
		    capture__add_record(cap, r))
			goto out;
	}
	sw.sample.cpu = cap->aux[0].cpu;
	for (k = 0; pattern[k]; k++) {
		const struct trace *c = &t[pattern[k] == 'O'];
		uint64_t start = t[0].first + k * step;

		memcpy(big + size, c->pt, c->len);
		for (i = 0; i < c->nr_tsc; i++) {
			uint8_t *q = big + size + c->tsc_off[i] + 1;
			uint64_t v = 0;

			memcpy(&v, q, 7);
			v += start - c->first;
			memcpy(q, &v, 7);
		}
		size += c->len;
		if (k && pattern[k] != pattern[k - 1] &&
		    capture_add_switch(cap, &sw, pd_tsc_to_time(&cap->pt, start) - 1000,
			       t[pattern[k - 1] == 'O'].pid, c->pid))
			goto out;
	}
	{
		struct pd_auxtrace aux = cap->aux[0];

		aux.size = size;
		cap->nr_aux = 0;
		err = capture__add_aux(cap, &aux, big) ?: perfdata_write(data_path, cap);
	}
	*state = (void *)(uintptr_t)(((uint64_t)t[1].pid << 32) | t[0].pid);
out:
	free(big);
	capture__free(t[0].cap);
	capture__free(t[1].cap);
	return err;
}

static int teardown(void **state)
{
	char cmd[128];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	return system(cmd);
}

/* The capture decoded to `out` in the calls format, every stream checked both ways. */
static void decode(const char *out, int jobs, uint32_t pid, struct decode_stats *st)
{
	struct decode_opts o = { .output = out, .format = DECODE_CALLS, .sysroot = sysroot,
				 .jobs = jobs, .pids = &pid, .nr_pids = pid ? 1 : 0,
				 .verify_fast = true };
	struct capture *cap = NULL;

	assert_int_equal(perfdata_read(data_path, &cap), 0);
	assert_int_equal(ptdecode_capture(cap, &o, st), 0);
	capture__free(cap);
}

/* The lines of `path` that start with "PID/", or all of them (pid 0). */
static char *lines_of(const char *path, uint32_t pid)
{
	char prefix[16], line[512], *buf;
	size_t len = 0, cap = 1 << 20;
	FILE *f = fopen(path, "r");

	assert_non_null(f);
	buf = malloc(cap);
	assert_non_null(buf);
	snprintf(prefix, sizeof(prefix), "%u/", pid);
	while (fgets(line, sizeof(line), f)) {
		size_t n = strlen(line);

		if (pid && strncmp(line, prefix, strlen(prefix)))
			continue;
		if (len + n + 1 > cap) {
			cap *= 2;
			buf = realloc(buf, cap);
			assert_non_null(buf);
		}
		memcpy(buf + len, line, n);
		len += n;
	}
	buf[len] = 0;
	fclose(f);
	return buf;
}

/* The first line where a and b differ, printed, for the failure message. */
static void first_difference(const char *a, const char *b)
{
	size_t i = 0, line = 0;

	for (; a[i] && a[i] == b[i]; i++)
		if (a[i] == '\n')
			line = i + 1;
	print_error("line %.*s\n  vs %.*s\n", (int)strcspn(a + line, "\n") + 1, a + line,
		    (int)strcspn(b + line, "\n") + 1, b + line);
}

static void assert_same(const char *a, const char *b, const char *what)
{
	if (strcmp(a, b)) {
		print_error("%s differ at:\n", what);
		first_difference(a, b);
		fail();
	}
}

static void test_select_alternating(void **state)
{
	uint64_t pids = (uint64_t)(uintptr_t)*state;
	uint32_t target = (uint32_t)pids, other = (uint32_t)(pids >> 32);
	struct decode_stats st_all, st;
	char all[160], split[160], sel[160];
	char *a, *b, *whole;
	uint32_t p;

	snprintf(all, sizeof(all), "%s/all.calls", dir);
	snprintf(split, sizeof(split), "%s/split.calls", dir);
	snprintf(sel, sizeof(sel), "%s/sel.calls", dir);
	decode(all, 1, 0, &st_all);
	assert_int_equal(st_all.errors, 0);
	whole = lines_of(all, 0);
	/* a piece every copy or two: seams between slices of one process and of two */
	setenv("PTBPF_DECODE_PIECE", "1024", 1);
	decode(split, 2, 0, &st);
	a = lines_of(split, 0);
	assert_same(whole, a, "-j 1 and -j 2");
	free(a);
	for (p = target; p; p = p == target ? other : 0) {
		decode(sel, 1, p, &st);
		assert_true(st.skipped > 0);
		a = lines_of(all, p);
		b = lines_of(sel, 0);
		assert_true(strlen(b) > 0);
		assert_same(a, b, "--pid's and the whole decode's lines");
		free(b);
		decode(sel, 2, p, &st);
		b = lines_of(sel, 0);
		assert_same(a, b, "--pid -j 2's and the whole decode's lines");
		free(a);
		free(b);
	}
	unsetenv("PTBPF_DECODE_PIECE");
	/* the copies' first stops: after one of its own, the target's last instruction */
	assert_non_null(strstr(whole, " stop 0x400a05 0x400202 __restore_sigs untraced\n"));
	assert_non_null(strstr(whole, " stop 0 0x400202 untraced\n"));
	free(whole);
}

/* The bytes of `path` (NUL-terminated too), their count in *len. */
static char *file_bytes(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf;
	long n;

	assert_non_null(f);
	assert_int_equal(fseek(f, 0, SEEK_END), 0);
	n = ftell(f);
	assert_true(n > 0);
	rewind(f);
	buf = malloc(n + 1);
	assert_non_null(buf);
	assert_int_equal(fread(buf, 1, n, f), (size_t)n);
	buf[n] = 0;
	fclose(f);
	*len = (size_t)n;
	return buf;
}

static void assert_same_file(const char *a, const char *b, const char *what)
{
	size_t na, nb;
	char *x = file_bytes(a, &na), *y = file_bytes(b, &nb);

	if (na != nb || memcmp(x, y, na)) {
		print_error("%s differ (%zu and %zu bytes)\n", what, na, nb);
		fail();
	}
	free(x);
	free(y);
}

/* A decode to FXT at `out` with `o` (the capture's binaries under the sysroot). */
static void decode_fxt(struct decode_opts o, const char *out, struct decode_stats *st)
{
	struct capture *cap = NULL;

	o.output = out;
	o.sysroot = sysroot;
	o.progress = false;
	assert_int_equal(perfdata_read(data_path, &cap), 0);
	assert_int_equal(ptdecode_capture(cap, &o, st), 0);
	capture__free(cap);
}

static void test_capture_default_selection(void **state)
{
	uint32_t target = (uint32_t)(uintptr_t)*state;
	struct capture_opts co = { .decode = true, .jobs = 1 };
	struct decode_opts pid_only = { .format = DECODE_FXT, .jobs = 1, .pids = &target,
					.nr_pids = 1 };
	struct decode_opts all = { .format = DECODE_FXT, .jobs = 1 };
	struct decode_stats st, st_ref;
	char cap_fxt[160], ref_fxt[160];

	snprintf(cap_fxt, sizeof(cap_fxt), "%s/capture.fxt", dir);
	snprintf(ref_fxt, sizeof(ref_fxt), "%s/ref.fxt", dir);
	/* a capture of a command (or -p): the target's threads, the rest skipped */
	decode_fxt(capture_session__decode_opts(&co, &target, cap_fxt), cap_fxt, &st);
	assert_int_equal(st.errors, 0);
	assert_true(st.skipped > 0);
	decode_fxt(pid_only, ref_fxt, &st_ref);
	assert_int_equal(st.skipped, st_ref.skipped);
	assert_same_file(cap_fxt, ref_fxt, "the capture's decode and decode --pid's FXT");
	/* --system-wide: everything */
	co.system_wide = true;
	decode_fxt(capture_session__decode_opts(&co, &target, cap_fxt), cap_fxt, &st);
	assert_int_equal(st.skipped, 0);
	decode_fxt(all, ref_fxt, &st_ref);
	assert_same_file(cap_fxt, ref_fxt, "the --system-wide capture's and the whole decode's FXT");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_select_alternating),
		cmocka_unit_test(test_capture_default_selection),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
