// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The tests' FXT validator (tests/tools/fxtcheck.c) on hand-built traces, word by word
 * from the specification (doc/fxt.md): valid ones are accepted and listed as expected
 * (--stacks, --events), each kind of broken one is rejected with its issue code.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>
#include <cmocka.h>

#include "fxtcheck_run.h"

#define MAGIC 0x0016547846040010ULL

/* A trace under construction. */
struct fxt {
	uint64_t w[4096];
	size_t n;
};

static void put(struct fxt *t, uint64_t w)
{
	assert_true(t->n < 4096);
	t->w[t->n++] = w;
}

/* `len` bytes of s as zero-padded words. */
static void put_stream(struct fxt *t, const char *s, size_t len)
{
	size_t i;

	for (i = 0; i < len; i += 8) {
		uint64_t w = 0;

		memcpy(&w, s + i, len - i < 8 ? len - i : 8);
		put(t, w);
	}
}

static size_t words(size_t len)
{
	return (len + 7) / 8;
}

static void string_rec(struct fxt *t, unsigned idx, const char *s)
{
	size_t len = strlen(s);

	put(t, 2 | (1 + words(len)) << 4 | (uint64_t)idx << 16 | (uint64_t)len << 32);
	put_stream(t, s, len);
}

static void thread_rec(struct fxt *t, unsigned idx, uint64_t pid, uint64_t tid)
{
	put(t, 3 | 3 << 4 | (uint64_t)idx << 16);
	put(t, pid);
	put(t, tid);
}

/* Event with indexed thread and name, no category, no arguments. */
static void event(struct fxt *t, unsigned type, unsigned thread, unsigned name, uint64_t ts)
{
	unsigned extra = type == 4;

	put(t, 4 | (uint64_t)(2 + extra) << 4 | (uint64_t)type << 16 | (uint64_t)thread << 24 |
		       (uint64_t)name << 48);
	put(t, ts);
}

static void complete(struct fxt *t, unsigned thread, unsigned name, uint64_t ts, uint64_t end)
{
	event(t, 4, thread, name, ts);
	put(t, end);
}

/* Magic, strings 1 "main" 2 "a" 3 "b" 4 "process", thread 1 = pid 10 tid 11. */
static void start(struct fxt *t)
{
	t->n = 0;
	put(t, MAGIC);
	string_rec(t, 1, "main");
	string_rec(t, 2, "a");
	string_rec(t, 3, "b");
	string_rec(t, 4, "process");
	thread_rec(t, 1, 10, 11);
}

static char *save(const struct fxt *t, const char *ext)
{
	static char path[256];
	FILE *f;

	test_tmp_path(path, sizeof(path), "fxtcheck", ext);
	f = fopen(path, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(t->w, 8, t->n, f), t->n);
	assert_int_equal(fclose(f), 0);
	return path;
}

/* Runs fxtcheck FLAGS on the trace; asserts its exit status; returns its output. */
static char *check(const struct fxt *t, const char *flags, int want)
{
	char *path = save(t, "fxt"), *out = NULL;
	int rc = fxtcheck_run(path, flags, &out);

	if (rc != want)
		print_error("fxtcheck %s: exit %d, want %d\n%s\n", flags, rc, want, out ? out : "");
	unlink(path);
	assert_int_equal(rc, want);
	assert_non_null(out);
	return out;
}

/* The trace is invalid (under FLAGS) and the first error names CODE. */
static void rejects(const struct fxt *t, const char *flags, const char *code)
{
	char *out = check(t, flags, 1), want[64];

	snprintf(want, sizeof(want), "]: %s: ", code);
	if (!strstr(out, want))
		print_error("no %s in:\n%s\n", code, out);
	assert_non_null(strstr(out, want));
	free(out);
}

static void test_valid(void **state)
{
	struct fxt t;
	char *out;

	start(&t);
	/* process 10 "main", thread 11 "a" of process 10 */
	put(&t, 7 | 2 << 4 | 1 << 16 | 1 << 24);
	put(&t, 10);
	put(&t, 7 | 4 << 4 | 2 << 16 | 2 << 24 | 1ULL << 40);
	put(&t, 11);
	put(&t, 8 | 2 << 4 | 4 << 16);		/* koid "process" = 10 */
	put(&t, 10);
	event(&t, 2, 1, 1, 100);		/* main [100, 400] */
	complete(&t, 1, 2, 100, 200);		/* a [100, 200) */
	complete(&t, 1, 3, 200, 200);		/* b, zero length at a's end: not inside a */
	complete(&t, 1, 3, 200, 200);		/* zero length at the same time: stacks */
	/* instant "b" at 300 with an int32 -5 and a bool argument, both named "a" */
	put(&t, 4 | 4 << 4 | 2 << 20 | 1 << 24 | 3ULL << 48);
	put(&t, 300);
	put(&t, 1 | 1 << 4 | 2 << 16 | (uint64_t)(uint32_t)-5 << 32);
	put(&t, 9 | 1 << 4 | 2 << 16 | 1ULL << 32);
	event(&t, 3, 1, 1, 400);
	out = check(&t, "--strict --stacks", 0);
	assert_string_equal(out, "# thread pid=10 tid=11 name=a\n"
				 "0 main 100 400\n"
				 "1 a 100 200\n"
				 "1 b 200 200\n"
				 "2 b 200 200\n");
	free(out);
	out = check(&t, "--events", 0);
	assert_string_equal(out, "process\t10\tmain\n"
				 "thread\t10\t11\ta\n"
				 "slice\t10\t11\t0\t100\t400\tmain\n"
				 "slice\t10\t11\t1\t100\t200\ta\n"
				 "slice\t10\t11\t1\t200\t200\tb\n"
				 "slice\t10\t11\t2\t200\t200\tb\n"
				 "instant\t10\t11\t300\tb\n"
				 "arg\ta\t-5\n"
				 "arg\ta\ttrue\n");
	free(out);
	out = check(&t, "--strict", 0);
	assert_non_null(strstr(out, ": VALID (strict)\n"));
	assert_non_null(strstr(out, "duration events: begin=1 end=1 complete=3 slices=4 max_depth=3"));
	assert_non_null(strstr(out, "time span: 300 ns (first 100 ns, last 400 ns"));
	free(out);
}

static void test_magic_only_and_gzip(void **state)
{
	struct fxt t = { .n = 0 };
	char *path, gzpath[256], *out = NULL;
	gzFile gz;

	put(&t, MAGIC);
	free(check(&t, "--strict", 0));
	/* the same, gzip-compressed: recognised by content */
	start(&t);
	complete(&t, 1, 1, 5, 9);
	path = save(&t, "fxt");
	snprintf(gzpath, sizeof(gzpath), "%s.gz", path);
	gz = gzopen(gzpath, "wb");
	assert_non_null(gz);
	assert_int_equal(gzwrite(gz, t.w, t.n * 8), (int)(t.n * 8));
	assert_int_equal(gzclose(gz), Z_OK);
	assert_int_equal(fxtcheck_run(gzpath, "--strict --stacks", &out), 0);
	assert_string_equal(out, "# thread pid=10 tid=11 name=\n0 main 5 9\n");
	free(out);
	/* a gzip stream cut short is invalid, not unreadable */
	assert_int_equal(truncate(gzpath, 20), 0);
	assert_int_equal(fxtcheck_run(gzpath, "", &out), 1);
	assert_non_null(strstr(out, "]: gzip: "));
	free(out);
	unlink(gzpath);
	unlink(path);
}

static void test_framing_errors(void **state)
{
	struct fxt t = { .n = 0 };

	rejects(&t, "", "truncated");			/* empty */
	put(&t, 0x1000044678541600ULL);			/* byte-swapped magic */
	rejects(&t, "", "wrong-magic");
	start(&t);
	put(&t, 2);					/* size 0 */
	rejects(&t, "", "zero-size");
	start(&t);
	put(&t, 4 | 5 << 4 | 2ULL << 16 | 1 << 24);	/* 5 words, 1 left */
	rejects(&t, "", "overrun");
	start(&t);
	put(&t, 3 | 4 << 4 | 2 << 16);			/* thread record of 4 words */
	put(&t, 1);
	put(&t, 2);
	put(&t, 0);
	rejects(&t, "", "size-mismatch");
	start(&t);
	put(&t, 2 | 2 << 4 | 5 << 16 | 1ULL << 31 | 1ULL << 32);	/* bit 31 set */
	put(&t, 'x');
	rejects(&t, "", "reserved-bits");
}

static void test_truncated_word(void **state)
{
	struct fxt t;
	char *path, *out = NULL;
	FILE *f;

	start(&t);
	path = save(&t, "fxt");
	f = fopen(path, "ab");
	assert_non_null(f);
	fputs("abc", f);
	fclose(f);
	assert_int_equal(fxtcheck_run(path, "", &out), 1);
	assert_non_null(strstr(out, "]: truncated: file ends with a partial word: 3"));
	free(out);
	unlink(path);
}

static void test_reference_errors(void **state)
{
	struct fxt t;

	start(&t);
	event(&t, 0, 1, 9, 5);				/* name index 9 undefined */
	rejects(&t, "", "undefined-string");
	start(&t);
	event(&t, 0, 7, 1, 5);				/* thread index 7 undefined */
	rejects(&t, "", "undefined-thread");
	start(&t);
	put(&t, 4 | 3 << 4 | 1 << 20 | 1 << 24 | 1ULL << 48);	/* instant, 1 arg of 0 words */
	put(&t, 5);
	put(&t, 1 | 0 << 4 | 2 << 16);
	rejects(&t, "", "arg-size");
	start(&t);
	put(&t, 2 | 2 << 4 | 6 << 16 | 2ULL << 32);	/* "\xc3\x28": not UTF-8 */
	put(&t, 0x28c3);
	rejects(&t, "", "utf8");
	start(&t);
	put(&t, 2 | 2 << 4 | 6 << 16 | 2ULL << 32);	/* "ok" then a non-zero pad byte */
	put(&t, 0x55006b6f);
	rejects(&t, "", "padding");
}

static void test_value_errors(void **state)
{
	struct fxt t;

	start(&t);
	put(&t, 1 | 2 << 4);				/* initialization: 0 ticks per second */
	put(&t, 0);
	rejects(&t, "", "bad-value");
	start(&t);
	complete(&t, 1, 1, 9, 5);			/* ends before it begins */
	rejects(&t, "", "bad-value");
	start(&t);
	event(&t, 0, 1, 1, 1ULL << 63);			/* 2^63 ns */
	rejects(&t, "", "timestamp-overflow");
}

static void test_slice_errors(void **state)
{
	struct fxt t;

	start(&t);
	event(&t, 0, 1, 1, 10);
	event(&t, 0, 1, 1, 9);
	rejects(&t, "", "time-order");
	start(&t);
	event(&t, 3, 1, 1, 10);
	rejects(&t, "", "end-without-begin");
	start(&t);
	event(&t, 2, 1, 1, 10);
	event(&t, 3, 1, 2, 20);
	rejects(&t, "", "end-mismatch");
	start(&t);
	complete(&t, 1, 1, 10, 20);
	complete(&t, 1, 2, 15, 25);			/* overlaps without nesting */
	rejects(&t, "", "nesting");
	start(&t);
	event(&t, 2, 1, 1, 10);
	complete(&t, 1, 2, 15, 25);
	event(&t, 3, 1, 1, 20);				/* ends inside a */
	rejects(&t, "", "nesting");
}

static void test_warnings_under_strict(void **state)
{
	struct fxt t;
	char *out;
	int i;

	start(&t);
	event(&t, 2, 1, 1, 10);				/* never ended */
	out = check(&t, "", 0);
	assert_non_null(strstr(out, "warning: "));
	assert_non_null(strstr(out, "unclosed: "));
	free(out);
	out = check(&t, "--stacks", 0);
	assert_string_equal(out, "# thread pid=10 tid=11 name=\n0 main 10 -\n");
	free(out);
	rejects(&t, "--strict", "unclosed");
	start(&t);
	put(&t, 12 | 1 << 4);				/* record type 12: not in the spec */
	free(check(&t, "", 0));
	rejects(&t, "--strict", "unknown-type");
	start(&t);
	put(&t, 2 | 1 << 4);				/* string record for index 0 */
	rejects(&t, "--strict", "ignored-record");
	start(&t);
	for (i = 0; i < 513; i++)			/* deeper than Perfetto's 512 */
		event(&t, 2, 1, 1, 10);
	for (i = 0; i < 513; i++)
		event(&t, 3, 1, 1, 20);
	free(check(&t, "", 0));
	rejects(&t, "--strict", "perfetto-compat");
	start(&t);
	put(&t, 7 | 2 << 4 | 2 << 16 | 2 << 24);	/* thread object without "process" */
	put(&t, 11);
	rejects(&t, "--strict", "perfetto-compat");
}

static void test_usage_and_io(void **state)
{
	char *out = NULL;

	assert_int_equal(fxtcheck_run("/nonexistent/ptbpf.fxt", "", &out), 2);
	free(out);
	assert_int_equal(fxtcheck_run("/dev/null", "--no-such-flag", &out), 2);
	free(out);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_valid),
		cmocka_unit_test(test_magic_only_and_gzip),
		cmocka_unit_test(test_framing_errors),
		cmocka_unit_test(test_truncated_word),
		cmocka_unit_test(test_reference_errors),
		cmocka_unit_test(test_value_errors),
		cmocka_unit_test(test_slice_errors),
		cmocka_unit_test(test_warnings_under_strict),
		cmocka_unit_test(test_usage_and_io),
	};

	if (!fxtcheck_path()) {
		printf("build/tests/fxtcheck not found (make builds it; or set FXTCHECK)\n");
		return 1;
	}
	return cmocka_run_group_tests(tests, NULL, NULL);
}
