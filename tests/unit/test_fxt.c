// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* FXT writer: byte-exact records, interning and recycling, names, gzip, errors, text mode. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>
#include <zlib.h>
#include <cmocka.h>

#include "fxt.h"
#include "fxtcheck_run.h"

#define BASE 1000

/* The 8 words every trace starts with (provider "ptbpf", time base BASE). */
static const uint64_t header[] = {
	0x0016547846040010, /* magic */
	0x0050000000010020, /* provider info, id 0, name length 5, 2 words */
	0x0000006670627470, /* "ptbpf" */
	0x0000000000020010, /* provider section 0 */
	0x0000000000000041, /* initialization, 4 words */
	1000000000,	    /* ticks per second */
	0,		    /* base ticks */
	BASE,		    /* base time */
};

struct trace {
	char path[256];
	struct fxt_writer *w;
};

static void trace_open(struct trace *t, const char *ext, const struct fxt_opts *opts)
{
	struct fxt_opts def = { .time_base = BASE };

	test_tmp_path(t->path, sizeof(t->path), "fxt", ext);
	assert_int_equal(fxt_writer__open(&t->w, t->path, opts ? opts : &def), 0);
}

/* Closes the trace and checks its words after the header. */
static void trace_expect(struct trace *t, const uint64_t *words, size_t n)
{
	size_t len = 0, i;
	uint64_t *got;

	assert_int_equal(fxt_writer__close(t->w), 0);
	got = (uint64_t *)test_read_file(t->path, &len);
	assert_non_null(got);
	assert_int_equal(len, sizeof(header) + n * 8);
	for (i = 0; i < 8; i++)
		assert_int_equal(got[i], header[i]);
	for (i = 0; i < n; i++) {
		if (got[8 + i] != words[i])
			print_error("word %zu: got %#018llx want %#018llx\n", i,
				    (unsigned long long)got[8 + i], (unsigned long long)words[i]);
		assert_int_equal(got[8 + i], words[i]);
	}
	free(got);
}

static void trace_unlink(struct trace *t)
{
	unlink(t->path);
}

/* Runs fxtcheck; returns its output (caller frees) after asserting its exit status. */
static char *check(const char *path, const char *flags, int want)
{
	char *out = NULL;
	int rc = fxtcheck_run(path, flags, &out);

	if (rc != want) {
		char *full = NULL;

		fxtcheck_run(path, "", &full);
		print_error("fxtcheck %s %s: exit %d, want %d\n%s\n", flags, path, rc, want,
			    full ? full : "");
		free(full);
	}
	assert_int_equal(rc, want);
	return out;
}

/* ---- byte-exact records -------------------------------------------------------------- */

static void test_header_only(void **state)
{
	struct trace t;

	trace_open(&t, "fxt", NULL);
	trace_expect(&t, NULL, 0);
	trace_unlink(&t);
}

static void test_complete_record(void **state)
{
	static const uint64_t want[] = {
		0x0000000000010033, 1, 2,		/* thread 1 = (1, 2) */
		0x0000000300010022, 0x0000000000746163, /* string 1 "cat" */
		0x0000000400020022, 0x00000000656d616e, /* string 2 "name" */
		0x0002000101040034, 5, 9,		/* complete, thread 1, cat 1, name 2 */
	};
	struct trace t;

	trace_open(&t, "fxt", NULL);
	assert_int_equal(fxt_complete(t.w, 1, 2, "cat", "name", BASE + 5, BASE + 9, NULL, 0), 0);
	trace_expect(&t, want, sizeof(want) / 8);
	trace_unlink(&t);
}

static void test_begin_end_counter(void **state)
{
	static const uint64_t want[] = {
		0x0000000000010033, 1, 2,
		0x0000000100010022, 0x63,		/* "c" */
		0x0000000100020022, 0x62,		/* "b" */
		0x0002000101020024, 10,			/* begin */
		0x0002000101030024, 20,			/* end */
		0x0000000300030022, 0x746e63,		/* "cnt" */
		0x0000000100040022, 0x76,		/* "v" */
		0x0003000101110054, 30,			/* counter, 1 arg */
		0x0000000000040023, 5,			/* int64 v = 5 */
		77,					/* counter id */
	};
	struct fxt_arg v = { .name = "v", .type = FXT_ARG_INT64, .i = 5 };
	struct trace t;

	trace_open(&t, "fxt", NULL);
	assert_int_equal(fxt_begin(t.w, 1, 2, "c", "b", BASE + 10, NULL, 0), 0);
	assert_int_equal(fxt_end(t.w, 1, 2, "c", "b", BASE + 20, NULL, 0), 0);
	assert_int_equal(fxt_counter(t.w, 1, 2, "c", "cnt", BASE + 30, 77, &v, 1), 0);
	trace_expect(&t, want, sizeof(want) / 8);
	trace_unlink(&t);
}

static void test_args_all_types(void **state)
{
	static const uint64_t want[] = {
		0x0000000000010033, 7, 8,
		0x0000000200010022, 0x7665,		/* "ev" */
		0x0000000300020022, 0x323369,		/* "i32" */
		0x0000000300030022, 0x323375,		/* "u32" */
		0x0000000300040022, 0x343669,		/* "i64" */
		0x0000000300050022, 0x343675,		/* "u64" */
		0x0000000300060022, 0x6c6264,		/* "dbl" */
		0x0000000300070022, 0x727473,		/* "str" */
		0x0000000300080022, 0x727470,		/* "ptr" */
		0x0000000400090022, 0x64696f6b,		/* "koid" */
		0x00000004000a0022, 0x6c6f6f62,		/* "bool" */
		0x0001000001900124, 3,			/* instant, 9 args, 18 words */
		0xfffffffe00020011,			/* int32 -2 */
		0x1234567800030012,			/* uint32 */
		0x0000000000040023, 0xfffffffffffffffd, /* int64 -3 */
		0x0000000000050024, 0x1122334455667788, /* uint64 */
		0x0000000000060025, 0x3ff8000000000000, /* double 1.5 */
		0x0000800b00070036, 0x6f77206f6c6c6568, 0x646c72, /* inline "hello world" */
		0x0000000000080027, 0xdeadbeef,		/* pointer */
		0x0000000000090028, 42,			/* koid */
		0x00000001000a0019,			/* bool true */
	};
	struct fxt_arg a[9] = {
		{ .name = "i32", .type = FXT_ARG_INT32, .i = -2 },
		{ .name = "u32", .type = FXT_ARG_UINT32, .u = 0x12345678 },
		{ .name = "i64", .type = FXT_ARG_INT64, .i = -3 },
		{ .name = "u64", .type = FXT_ARG_UINT64, .u = 0x1122334455667788 },
		{ .name = "dbl", .type = FXT_ARG_DOUBLE, .d = 1.5 },
		{ .name = "str", .type = FXT_ARG_STRING, .s = "hello world" },
		{ .name = "ptr", .type = FXT_ARG_POINTER, .u = 0xdeadbeef },
		{ .name = "koid", .type = FXT_ARG_KOID, .u = 42 },
		{ .name = "bool", .type = FXT_ARG_BOOL, .b = true },
	};
	struct trace t;

	trace_open(&t, "fxt", NULL);
	assert_int_equal(fxt_instant(t.w, 7, 8, NULL, "ev", BASE + 3, a, 9), 0);
	trace_expect(&t, want, sizeof(want) / 8);
	free(check(t.path, "--strict", 0));
	trace_unlink(&t);
}

static void test_kernel_objects(void **state)
{
	static const uint64_t want[] = {
		0x0000000400010022, 0x636f7270,			/* "proc" */
		0x0000000c00020032, 0x7361625f656d6974, 0x736e5f65, /* "time_base_ns" */
		0x0000010001010047, 100,			/* process 100 "proc" */
		0x0000000000020024, BASE,			/* uint64 time_base_ns */
		0x0000000300030022, 0x726874,			/* "thr" */
		0x0000000700040022, 0x00737365636f7270,		/* "process" */
		0x0000010003020047, 101,			/* thread 101 "thr" */
		0x0000000000040028, 100,			/* koid process = 100 */
	};
	struct trace t;

	trace_open(&t, "fxt", NULL);
	assert_int_equal(fxt_process(t.w, 100, "proc"), 0);
	assert_int_equal(fxt_thread(t.w, 100, 101, "thr"), 0);
	trace_expect(&t, want, sizeof(want) / 8);
	free(check(t.path, "--strict", 0));
	trace_unlink(&t);
}

static void test_padding_and_empty(void **state)
{
	/* an 8-byte name has no padding word; empty names and categories use ref 0 */
	static const uint64_t want[] = {
		0x0000000000010033, 1, 1,
		0x0000000800010022, 0x6867666564636261, /* "abcdefgh", exactly one word */
		0x0001000001040034, 0, 0,		/* complete, cat ref 0 */
		0x0000000001040034, 1, 1,		/* complete, name ref 0 */
	};
	struct trace t;

	trace_open(&t, "fxt", NULL);
	assert_int_equal(fxt_complete(t.w, 1, 1, "", "abcdefgh", BASE, BASE, NULL, 0), 0);
	assert_int_equal(fxt_complete(t.w, 1, 1, NULL, NULL, BASE + 1, BASE + 1, NULL, 0), 0);
	trace_expect(&t, want, sizeof(want) / 8);
	trace_unlink(&t);
}

static void test_ids_fast_path(void **state)
{
	/* the _id forms write the same bytes as the named forms */
	static const uint64_t want[] = {
		0x0000000000010033, 1, 2,
		0x0000000300010022, 0x0000000000746163,
		0x0000000400020022, 0x00000000656d616e,
		0x0002000101040034, 5, 9,
		0x0002000101040034, 9, 9 + (1ull << 32),
	};
	uint32_t thr, cat, name, again;
	struct trace t;

	trace_open(&t, "fxt", NULL);
	assert_int_equal(fxt_thread_id(t.w, 1, 2, &thr), 0);
	assert_int_equal(fxt_intern(t.w, "cat", &cat), 0);
	assert_int_equal(fxt_intern(t.w, "name", &name), 0);
	assert_int_equal(fxt_intern(t.w, "name", &again), 0);
	assert_int_equal(name, again);
	assert_string_equal(fxt_string(t.w, name), "name");
	assert_int_equal(fxt_complete_id(t.w, thr, cat, name, BASE + 5, BASE + 9, NULL, 0), 0);
	assert_int_equal(fxt_complete_id(t.w, thr, cat, name, BASE + 9, BASE + 9 + (1ull << 32),
					 NULL, 0), 0);
	trace_expect(&t, want, sizeof(want) / 8);
	trace_unlink(&t);
}

static void test_time_before_base_clamped(void **state)
{
	static const uint64_t want[] = {
		0x0000000000010033, 1, 1,
		0x0000000100010022, 0x78,
		0x0001000001000024, 0, /* instant at 0, not at a negative time */
	};
	struct fxt_stats st;
	struct trace t;

	trace_open(&t, "fxt", NULL);
	assert_int_equal(fxt_instant(t.w, 1, 1, NULL, "x", BASE - 10, NULL, 0), 0);
	fxt_writer__stats(t.w, &st);
	assert_int_equal(st.ts_clamped, 1);
	trace_expect(&t, want, sizeof(want) / 8);
	trace_unlink(&t);
}

/* ---- tables ------------------------------------------------------------------------- */

static void test_string_recycling(void **state)
{
	enum { N = 40000 };
	struct fxt_stats st;
	struct trace t;
	char name[32], *out, *line;
	int i, n = 0;

	NEED_FXTCHECK();

	trace_open(&t, "fxt", NULL);
	for (i = 0; i < N; i++) {
		snprintf(name, sizeof(name), "n%d", i);
		assert_int_equal(fxt_complete(t.w, 1, 1, NULL, name, BASE + 2 * i, BASE + 2 * i + 1,
					      NULL, 0), 0);
		/* a hot name is never the least recently used: defined once */
		if (i % 100 == 0)
			assert_int_equal(fxt_instant(t.w, 1, 1, NULL, "hot", BASE + 2 * i + 1, NULL,
						     0), 0);
	}
	/* n0 lost its index long ago: it is defined again before use */
	assert_int_equal(fxt_complete(t.w, 1, 1, NULL, "n0", BASE + 2 * N, BASE + 2 * N + 1, NULL,
				      0), 0);
	fxt_writer__stats(t.w, &st);
	assert_int_equal(st.string_records, N + 2);
	assert_int_equal(st.strings_recycled, N + 2 - 32767);
	assert_int_equal(fxt_writer__close(t.w), 0);

	out = check(t.path, "--strict --stacks", 0);
	for (line = strtok(out, "\n"); line; line = strtok(NULL, "\n")) {
		if (line[0] == '#')
			continue;
		snprintf(name, sizeof(name), "0 n%d %d %d", n % N, 2 * n, 2 * n + 1);
		assert_string_equal(line, name);
		n++;
	}
	assert_int_equal(n, N + 1);
	free(out);
	trace_unlink(&t);
}

static void test_thread_recycling(void **state)
{
	enum { N = 300 };
	struct fxt_stats st;
	struct trace t;
	char *out, *p;
	int i, r, threads = 0, slices = 0;

	NEED_FXTCHECK();

	trace_open(&t, "fxt", NULL);
	for (r = 0; r < 3; r++) {
		for (i = 0; i < N; i++) {
			uint64_t ts = BASE + r * 10;

			assert_int_equal(fxt_complete(t.w, 10 + i % 7, 1000 + i, NULL, "f", ts,
						      ts + 5, NULL, 0), 0);
		}
	}
	fxt_writer__stats(t.w, &st);
	assert_int_equal(st.thread_records, 3 * N);
	assert_int_equal(st.threads_recycled, 3 * N - 255);
	assert_int_equal(fxt_writer__close(t.w), 0);
	out = check(t.path, "--strict --stacks", 0);
	for (p = out; (p = strchr(p, '\n')); p++) {
		if (p[1] == '#')
			threads++;
		else if (p[1])
			slices++;
	}
	assert_int_equal(threads + 1, N);	/* the first line has no '\n' before it */
	assert_int_equal(slices, 3 * N);
	assert_non_null(strstr(out, "# thread pid=15 tid=1299 name=\n"
				    "0 f 0 5\n0 f 10 15\n0 f 20 25"));
	free(out);
	trace_unlink(&t);
}

/*
 * The index recycled is the least recently used one, however the uses came: the table is
 * filled, then used in reverse, so the first name defined is the most recently used and
 * the last one the least; fxt_events_id() uses names as the single calls do.
 */
static void test_string_lru_order(void **state)
{
	enum { N = 32767 };
	struct fxt_packed ev[2] = {
		{ .bd = 0, .nk = (uint32_t)FXT_EVENT_BEGIN << FXT_PACKED_TYPE_SHIFT },
		{ .bd = 1, .nk = (uint32_t)FXT_EVENT_END << FXT_PACKED_TYPE_SHIFT },
	};
	static uint32_t id[N];
	uint32_t thr, fresh;
	struct fxt_stats st;
	struct trace t;
	char name[32];
	int i;

	trace_open(&t, "fxt", NULL);
	assert_int_equal(fxt_thread_id(t.w, 1, 1, &thr), 0);
	for (i = 0; i < N; i++) {
		snprintf(name, sizeof(name), "n%d", i);
		assert_int_equal(fxt_intern(t.w, name, &id[i]), 0);
		assert_int_equal(fxt_instant_id(t.w, thr, 0, id[i], BASE, NULL, 0), 0);
	}
	for (i = N; i-- > 0;) {
		ev[0].nk = (ev[0].nk & ~FXT_PACKED_NAME_MASK) | id[i];
		ev[1].nk = (ev[1].nk & ~FXT_PACKED_NAME_MASK) | id[i];
		assert_int_equal(fxt_events_id(t.w, thr, 0, BASE, ev, 2), 0);
	}
	fxt_writer__stats(t.w, &st);
	assert_int_equal(st.string_records, N);
	/* a new name takes the index of n32766, the least recently used */
	assert_int_equal(fxt_intern(t.w, "fresh", &fresh), 0);
	assert_int_equal(fxt_instant_id(t.w, thr, 0, fresh, BASE + 2, NULL, 0), 0);
	assert_int_equal(fxt_instant_id(t.w, thr, 0, id[0], BASE + 2, NULL, 0), 0);
	fxt_writer__stats(t.w, &st);
	assert_int_equal(st.string_records, N + 1);
	assert_int_equal(fxt_complete_id(t.w, thr, 0, id[N - 1], BASE + 2, BASE + 3, NULL, 0), 0);
	fxt_writer__stats(t.w, &st);
	assert_int_equal(st.string_records, N + 2);
	assert_int_equal(st.strings_recycled, 2);
	/* ... which took n32765's: defined again at its next use, n1 not */
	assert_int_equal(fxt_begin_id(t.w, thr, 0, id[1], BASE + 3, NULL, 0), 0);
	fxt_writer__stats(t.w, &st);
	assert_int_equal(st.string_records, N + 2);
	assert_int_equal(fxt_end_id(t.w, thr, 0, id[N - 2], BASE + 3, NULL, 0), 0);
	fxt_writer__stats(t.w, &st);
	assert_int_equal(st.string_records, N + 3);
	assert_int_equal(fxt_writer__close(t.w), 0);
	trace_unlink(&t);
}

/* fxt_events_id() writes what the single calls write, byte for byte. */
static void test_events_batch(void **state)
{
	/* the bits above the time are the caller's: ignored */
	struct fxt_packed ev[3] = {
		{ .bd = 1 | 5ULL << FXT_PACKED_TIME_BITS,
		  .nk = (uint32_t)FXT_EVENT_BEGIN << FXT_PACKED_TYPE_SHIFT },
		{ .bd = 2, .nk = (uint32_t)FXT_EVENT_COMPLETE << FXT_PACKED_TYPE_SHIFT, .dur = 3 },
		{ .bd = 9, .nk = (uint32_t)FXT_EVENT_END << FXT_PACKED_TYPE_SHIFT },
	};
	struct trace a, b;
	uint32_t thr, f, g;
	char *x, *y;
	size_t nx, ny;

	trace_open(&a, "fxt", NULL);
	trace_open(&b, "fxt", NULL);
	assert_int_equal(fxt_thread_id(a.w, 7, 8, &thr), 0);
	assert_int_equal(fxt_intern(a.w, "f", &f), 0);
	assert_int_equal(fxt_intern(a.w, "g", &g), 0);
	assert_int_equal(fxt_begin_id(a.w, thr, 0, f, BASE + 1, NULL, 0), 0);
	assert_int_equal(fxt_complete_id(a.w, thr, 0, g, BASE + 2, BASE + 5, NULL, 0), 0);
	assert_int_equal(fxt_end_id(a.w, thr, 0, f, BASE + 9, NULL, 0), 0);
	assert_int_equal(fxt_thread_id(b.w, 7, 8, &thr), 0);
	assert_int_equal(fxt_intern(b.w, "f", &f), 0);
	assert_int_equal(fxt_intern(b.w, "g", &g), 0);
	ev[0].nk |= f;
	ev[1].nk |= g;
	ev[2].nk |= f;
	assert_int_equal(fxt_events_id(b.w, thr, 0, BASE, ev, 0), 0);	/* nothing at all */
	assert_int_equal(fxt_events_id(b.w, thr, 0, BASE, ev, 3), 0);
	ev[0].nk = 7u << FXT_PACKED_TYPE_SHIFT;
	assert_int_equal(fxt_events_id(b.w, thr, 0, BASE, ev, 1), -EINVAL);
	ev[0].nk = 0;	/* a pending slot of the call-stack builder's: no event */
	assert_int_equal(fxt_events_id(b.w, thr, 0, BASE, ev, 1), -EINVAL);
	assert_int_equal(fxt_events_id(NULL, thr, 0, BASE, ev, 1), -EINVAL);
	assert_int_equal(fxt_writer__close(a.w), 0);
	assert_int_equal(fxt_writer__close(b.w), 0);
	x = test_read_file(a.path, &nx);
	y = test_read_file(b.path, &ny);
	assert_int_equal(nx, ny);
	assert_memory_equal(x, y, nx);
	free(x);
	free(y);
	trace_unlink(&a);
	trace_unlink(&b);
}

/* ---- names -------------------------------------------------------------------------- */

static void test_sanitize(void **state)
{
	char out[FXT_MAX_NAME_LEN + 1], *in;
	bool fixed, cut;
	unsigned n;

	n = fxt_sanitize("plain", out, &fixed, &cut);
	assert_int_equal(n, 5);
	assert_string_equal(out, "plain");
	assert_false(fixed);
	assert_false(cut);

	/* valid 2-, 3- and 4-byte sequences stay */
	n = fxt_sanitize("\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80", out, &fixed, NULL);
	assert_int_equal(n, 9);
	assert_false(fixed);

	/* a stray continuation, an overlong, a surrogate, > U+10FFFF, a cut sequence */
	n = fxt_sanitize("a\x80" "b\xc0\x80" "c\xed\xa0\x80" "d\xf4\x90\x80\x80" "e\xe2\x82", out,
			 &fixed, &cut);
	assert_true(fixed);
	assert_false(cut);
	assert_string_equal(out, "a\xef\xbf\xbd" "b\xef\xbf\xbd\xef\xbf\xbd"
				 "c\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"
				 "d\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"
				 "e\xef\xbf\xbd\xef\xbf\xbd");
	(void)n;

	/* exactly the limit: kept whole */
	in = malloc(200000);
	memset(in, 'a', FXT_MAX_NAME_LEN);
	in[FXT_MAX_NAME_LEN] = 0;
	n = fxt_sanitize(in, out, &fixed, &cut);
	assert_int_equal(n, FXT_MAX_NAME_LEN);
	assert_false(cut);

	/* one 2-byte character over: cut on a character boundary, then the marker */
	memcpy(in + FXT_MAX_NAME_LEN - 1, "\xc3\xa9", 3);
	n = fxt_sanitize(in, out, &fixed, &cut);
	assert_true(cut);
	assert_int_equal(n, FXT_MAX_NAME_LEN);
	assert_memory_equal(out + FXT_MAX_NAME_LEN - 3, "\xe2\x80\xa6", 4);

	/* multi-byte characters across the cut are never split */
	for (n = 0; n < 3 * 400; n += 3)
		memcpy(in + n, "\xe2\x82\xac", 3);
	in[n] = 0;
	n = fxt_sanitize(in, out, &fixed, &cut);
	assert_true(cut);
	assert_int_equal(n % 3, 0);
	assert_true(n <= FXT_MAX_NAME_LEN);
	assert_int_equal(fxt_sanitize(NULL, out, NULL, NULL), 0);
	free(in);
}

static void test_bad_names_valid_trace(void **state)
{
	char *big = malloc(100 * 1024 + 1), *out, *line;
	struct fxt_arg a = { .name = "\xff", .type = FXT_ARG_STRING };
	struct fxt_stats st;
	struct trace t;
	size_t i;

	NEED_FXTCHECK();

	for (i = 0; i < 100 * 1024; i++)
		big[i] = (char)(i % 251 + 1);	/* every byte value but 0, mostly invalid UTF-8 */
	big[100 * 1024] = 0;
	a.s = big;
	trace_open(&t, "fxt", NULL);
	assert_int_equal(fxt_complete(t.w, 1, 1, big, big, BASE, BASE + 10, &a, 1), 0);
	assert_int_equal(fxt_complete(t.w, 1, 1, NULL, "bad \xfe\xff name", BASE + 1, BASE + 2,
				      NULL, 0), 0);
	assert_int_equal(fxt_thread(t.w, 1, 1, big), 0);
	fxt_writer__stats(t.w, &st);
	assert_true(st.names_cut >= 2);
	assert_true(st.names_fixed >= 3);
	assert_int_equal(fxt_writer__close(t.w), 0);
	out = check(t.path, "--strict --stacks", 0);
	line = strstr(out, "\n1 bad \xef\xbf\xbd\xef\xbf\xbd name 1 2\n");
	assert_non_null(line);
	free(out);
	free(big);
	trace_unlink(&t);
}

/* ---- output ------------------------------------------------------------------------- */

static void write_sample(struct fxt_writer *w)
{
	int i;

	assert_int_equal(fxt_process(w, 5, "proc"), 0);
	assert_int_equal(fxt_thread(w, 5, 6, "main\tthread"), 0);
	for (i = 0; i < 20000; i++) {
		assert_int_equal(fxt_begin(w, 5, 6, NULL, "outer", BASE + 10 * i, NULL, 0), 0);
		assert_int_equal(fxt_complete(w, 5, 6, NULL, i % 2 ? "a\\b" : "new\nline",
					      BASE + 10 * i + 1, BASE + 10 * i + 5, NULL, 0), 0);
		assert_int_equal(fxt_end(w, 5, 6, NULL, "outer", BASE + 10 * i + 5, NULL, 0), 0);
	}
	/* the Perfetto corner cases of the --stacks depth rules */
	assert_int_equal(fxt_complete(w, 5, 7, NULL, "z1", BASE + 3, BASE + 3, NULL, 0), 0);
	assert_int_equal(fxt_complete(w, 5, 7, NULL, "z2", BASE + 3, BASE + 3, NULL, 0), 0);
	assert_int_equal(fxt_complete(w, 5, 7, NULL, "p", BASE + 3, BASE + 9, NULL, 0), 0);
	assert_int_equal(fxt_complete(w, 5, 7, NULL, "q", BASE + 9, BASE + 12, NULL, 0), 0);
	assert_int_equal(fxt_begin(w, 5, 7, NULL, "open", BASE + 20, NULL, 0), 0);
	assert_int_equal(fxt_complete(w, 4, 7, NULL, "other pid", BASE + 20, BASE + 22, NULL, 0),
			 0);
}

static void test_gzip(void **state)
{
	struct trace plain, gz;
	size_t n1 = 0, n2 = 0;
	uLongf dlen;
	char *a, *b, *c;

	NEED_FXTCHECK();

	trace_open(&plain, "fxt", NULL);
	write_sample(plain.w);
	assert_int_equal(fxt_writer__close(plain.w), 0);
	trace_open(&gz, "fxt.gz", NULL);
	write_sample(gz.w);
	assert_int_equal(fxt_writer__close(gz.w), 0);

	a = test_read_file(plain.path, &n1);
	b = test_read_file(gz.path, &n2);
	assert_non_null(a);
	assert_non_null(b);
	assert_memory_equal(b, "\x1f\x8b", 2);
	assert_true(n2 < n1 / 4);
	/* same bytes once inflated (windowBits 15 + 32: gzip header) */
	{
		z_stream z = { 0 };

		c = malloc(n1 + 1);
		dlen = n1 + 1;
		assert_int_equal(inflateInit2(&z, 15 + 32), Z_OK);
		z.next_in = (Bytef *)b;
		z.avail_in = (uInt)n2;
		z.next_out = (Bytef *)c;
		z.avail_out = (uInt)dlen;
		assert_int_equal(inflate(&z, Z_FINISH), Z_STREAM_END);
		assert_int_equal(z.total_out, n1);
		inflateEnd(&z);
	}
	assert_memory_equal(a, c, n1);
	free(check(gz.path, "", 0));	/* valid; --strict: one slice left open */
	free(a);
	free(b);
	free(c);
	trace_unlink(&plain);
	trace_unlink(&gz);
}

static void test_text_mode_matches_fxtcheck(void **state)
{
	struct fxt_opts topts = { .time_base = BASE, .text = true };
	struct trace fxt, txt;
	char *want, *got;

	NEED_FXTCHECK();

	trace_open(&fxt, "fxt", NULL);
	write_sample(fxt.w);
	assert_int_equal(fxt_writer__close(fxt.w), 0);
	trace_open(&txt, "txt", &topts);
	write_sample(txt.w);
	assert_int_equal(fxt_writer__close(txt.w), 0);

	/* the open slice makes the FXT fail --strict, but --stacks still prints */
	want = check(fxt.path, "--stacks", 0);
	got = test_read_file(txt.path, NULL);
	assert_non_null(got);
	assert_string_equal(got, want);
	assert_non_null(strstr(got, "# thread pid=5 tid=6 name=main\\tthread\n0 outer 0 5\n"
				    "1 new\\nline 1 5\n"));
	assert_non_null(strstr(got, "# thread pid=5 tid=7 name=\n0 z1 3 3\n1 z2 3 3\n"
				    "0 p 3 9\n0 q 9 12\n0 open 20 -\n"));
	free(want);
	free(got);
	trace_unlink(&fxt);
	trace_unlink(&txt);
}

static void test_enospc(void **state)
{
	struct fxt_writer *w;
	int i, err = 0;

	if (!test_have_dev_full())
		skip();
	assert_int_equal(fxt_writer__open(&w, "/dev/full", NULL), 0);
	for (i = 0; i < 100000 && !err; i++)
		err = fxt_complete(w, 1, 1, NULL, "f", i, i + 1, NULL, 0);
	assert_int_equal(err, -ENOSPC);
	/* sticky: later calls and close report it */
	assert_int_equal(fxt_instant(w, 1, 1, NULL, "g", i, NULL, 0), -ENOSPC);
	assert_int_equal(fxt_writer__close(w), -ENOSPC);

	/* an error found only when close flushes */
	assert_int_equal(fxt_writer__open(&w, "/dev/full", NULL), 0);
	assert_int_equal(fxt_complete(w, 1, 1, NULL, "f", 1, 2, NULL, 0), 0);
	assert_int_equal(fxt_writer__close(w), -ENOSPC);
}

/* A regular file that cannot be written to its end is removed: no half trace is left. */
static void test_failed_file_removed(void **state)
{
	struct rlimit old, lim;
	struct fxt_writer *w;
	char path[256];
	int i, err = 0;

	test_tmp_path(path, sizeof(path), "fxt", ".fxt");
	assert_int_equal(getrlimit(RLIMIT_FSIZE, &old), 0);
	/* writes past 4 KiB fail with EFBIG (SIGXFSZ ignored), as a full disk fails them */
	lim = old;
	lim.rlim_cur = 4096;
	signal(SIGXFSZ, SIG_IGN);
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &lim), 0);
	assert_int_equal(fxt_writer__open(&w, path, NULL), 0);
	for (i = 0; i < 100000 && !err; i++)
		err = fxt_complete(w, 1, 1, NULL, "f", i, i + 1, NULL, 0);
	err = fxt_writer__close(w);
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &old), 0);
	signal(SIGXFSZ, SIG_DFL);
	assert_int_equal(err, -EFBIG);
	assert_int_equal(access(path, F_OK), -1);

	/* a trace that was written whole stays */
	assert_int_equal(fxt_writer__open(&w, path, NULL), 0);
	assert_int_equal(fxt_complete(w, 1, 1, NULL, "f", 1, 2, NULL, 0), 0);
	assert_int_equal(fxt_writer__close(w), 0);
	assert_int_equal(access(path, F_OK), 0);
	unlink(path);
}

/* ---- invalid arguments -------------------------------------------------------------- */

static void test_invalid_args(void **state)
{
	struct fxt_arg many[FXT_MAX_ARGS + 1] = { 0 };
	struct fxt_arg bad = { .name = "x", .type = (enum fxt_arg_type)99 };
	struct fxt_stats st;
	struct fxt_writer *w = (void *)1;
	char out[FXT_MAX_NAME_LEN + 1];
	uint32_t id;
	struct trace t;

	assert_int_equal(fxt_writer__open(NULL, "/tmp/x", NULL), -EINVAL);
	assert_int_equal(fxt_writer__open(&w, NULL, NULL), -EINVAL);
	assert_int_equal(fxt_writer__open(&w, "", NULL), -EINVAL);
	assert_int_equal(fxt_writer__open(&w, "/nonexistent-dir/x.fxt", NULL), -ENOENT);
	assert_null(w);
	assert_int_equal(fxt_writer__close(NULL), 0);
	assert_int_equal(fxt_writer__bytes(NULL), 0);
	fxt_writer__stats(NULL, &st);
	assert_int_equal(st.records, 0);
	fxt_writer__stats(NULL, NULL);
	assert_int_equal(fxt_process(NULL, 1, "p"), -EINVAL);
	assert_int_equal(fxt_thread(NULL, 1, 2, "t"), -EINVAL);
	assert_int_equal(fxt_begin(NULL, 1, 2, NULL, "n", 0, NULL, 0), -EINVAL);
	assert_int_equal(fxt_end(NULL, 1, 2, NULL, "n", 0, NULL, 0), -EINVAL);
	assert_int_equal(fxt_complete(NULL, 1, 2, NULL, "n", 0, 1, NULL, 0), -EINVAL);
	assert_int_equal(fxt_instant(NULL, 1, 2, NULL, "n", 0, NULL, 0), -EINVAL);
	assert_int_equal(fxt_counter(NULL, 1, 2, NULL, "n", 0, 1, NULL, 0), -EINVAL);
	assert_int_equal(fxt_intern(NULL, "x", &id), -EINVAL);
	assert_int_equal(fxt_thread_id(NULL, 1, 2, &id), -EINVAL);
	assert_int_equal(fxt_begin_id(NULL, 1, 0, 0, 0, NULL, 0), -EINVAL);
	assert_int_equal(fxt_end_id(NULL, 1, 0, 0, 0, NULL, 0), -EINVAL);
	assert_int_equal(fxt_complete_id(NULL, 1, 0, 0, 0, 1, NULL, 0), -EINVAL);
	assert_int_equal(fxt_instant_id(NULL, 1, 0, 0, 0, NULL, 0), -EINVAL);
	assert_string_equal(fxt_string(NULL, 3), "");
	assert_int_equal(fxt_sanitize("", out, NULL, NULL), 0);

	trace_open(&t, "fxt", NULL);
	assert_int_equal(fxt_intern(t.w, "x", NULL), -EINVAL);
	assert_int_equal(fxt_thread_id(t.w, 1, 2, NULL), -EINVAL);
	assert_int_equal(fxt_complete_id(t.w, 0, 0, 0, BASE, BASE, NULL, 0), -EINVAL);
	assert_int_equal(fxt_complete_id(t.w, 77, 0, 0, BASE, BASE, NULL, 0), -EINVAL);
	assert_int_equal(fxt_thread_id(t.w, 1, 2, &id), 0);
	assert_int_equal(fxt_complete_id(t.w, id, 0, 12345, BASE, BASE, NULL, 0), -EINVAL);
	assert_int_equal(fxt_complete_id(t.w, id, 0, 0, BASE + 2, BASE + 1, NULL, 0), -EINVAL);
	assert_int_equal(fxt_begin_id(t.w, id, 0, 0, BASE, many, FXT_MAX_ARGS + 1), -EINVAL);
	assert_int_equal(fxt_begin_id(t.w, id, 0, 0, BASE, NULL, 1), -EINVAL);
	assert_int_equal(fxt_instant_id(t.w, id, 0, 0, BASE, &bad, 1), -EINVAL);
	assert_int_equal(fxt_end_id(t.w, id, 9999, 0, BASE, NULL, 0), -EINVAL);
	assert_string_equal(fxt_string(t.w, 12345), "");
	/* nothing invalid was written */
	trace_expect(&t, NULL, 0);
	trace_unlink(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_header_only),
		cmocka_unit_test(test_complete_record),
		cmocka_unit_test(test_begin_end_counter),
		cmocka_unit_test(test_args_all_types),
		cmocka_unit_test(test_kernel_objects),
		cmocka_unit_test(test_padding_and_empty),
		cmocka_unit_test(test_ids_fast_path),
		cmocka_unit_test(test_time_before_base_clamped),
		cmocka_unit_test(test_string_recycling),
		cmocka_unit_test(test_thread_recycling),
		cmocka_unit_test(test_string_lru_order),
		cmocka_unit_test(test_events_batch),
		cmocka_unit_test(test_sanitize),
		cmocka_unit_test(test_bad_names_valid_trace),
		cmocka_unit_test(test_gzip),
		cmocka_unit_test(test_text_mode_matches_fxtcheck),
		cmocka_unit_test(test_enospc),
		cmocka_unit_test(test_failed_file_removed),
		cmocka_unit_test(test_invalid_args),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
