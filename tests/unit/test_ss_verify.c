// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * --verify: a small program (ss_testprog.h) placed in executable memory of this process is "run" by
 * hand, encoded, and checked by libipt against the log of its steps; a log that does
 * not match the trace, a wrapped ring and a ring without PSB are told apart.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <cmocka.h>

#include "aux_ring.h"
#include "ss_enc.h"
#include "ss_insn.h"
#include "ss_mm.h"
#include "ss_testprog.h"
#include "ss_verify.h"

struct fixture {
	uint8_t *mem;
	uint64_t base;
	struct ss_mm *mm;
	struct ss_dis *dis;
};

static struct ss_mm *mm_of(void *ctx, int id)
{
	struct fixture *f = ctx;

	return id == 0 ? f->mm : NULL;
}

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));

	f->mem = mmap(NULL, 4096, PROT_READ | PROT_WRITE | PROT_EXEC,
		      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (f->mem == MAP_FAILED)
		return -1;
	memcpy(f->mem, ss_testprog_code, SS_TESTPROG_SIZE);
	f->base = (uint64_t)(uintptr_t)f->mem;
	if (ss_mm__new(getpid(), 0, NULL, NULL, &f->mm) || ss_dis__new(&f->dis))
		return -1;
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	ss_mm__free(f->mm);
	ss_dis__free(f->dis);
	munmap(f->mem, 4096);
	free(f);
	return 0;
}

static const struct ss_enc_config cfg0 = {
	.ring_size = 1 << 16,
	.psb_period = 1 << 12,
	.retcomp = true,
	.tsc = true,
	.mtc = true,
	.mtc_freq = 3,
	.ctc_eax = 1,
	.ctc_ebx = 40,
	.cbr = 20,
	.log_psb = true,
};

/* Run `passes` passes; log every step, except step `bad` gets a wrong address. */
static void run(struct fixture *f, struct ss_enc *e, struct ss_verify *v, int passes, long bad)
{
	struct ss_testprog_step st[SS_TESTPROG_STEPS];
	size_t n = ss_testprog_pass(st), i;
	uint64_t tsc = 1000000;
	long k = 0;
	int p;

	for (p = 0; p < passes; p++) {
		for (i = 0; i < n; i++, k++) {
			uint64_t ip = f->base + st[i].from;
			struct ss_insn insn;

			assert_int_equal(ss_mm__insn(f->mm, f->dis, ip, &insn), 0);
			assert_int_equal(ss_verify__log(v, 0, k == bad ? ip + 1 : ip, 0), 0);
			assert_int_equal(ss_enc__begin(e, ip, tsc), 0);
			assert_int_equal(ss_enc__end(e, &insn, ip, f->base + st[i].to), 0);
			tsc += 2;
		}
	}
	assert_int_equal(ss_enc__async_disable(e, f->base), 0);
}

static void fresh(struct fixture *f, const struct ss_enc_config *cfg, struct ss_enc **e,
		  struct ss_verify **v)
{
	assert_int_equal(ss_enc__new(cfg, e), 0);
	assert_int_equal(ss_verify__new(1, mm_of, f, v), 0);
}

static int check(struct ss_enc *e, struct ss_verify *v, const struct ss_enc_config *cfg,
		 struct ss_verify_result *res)
{
	uint8_t *lin = malloc(cfg->ring_size);
	const struct ss_psb_mark *marks;
	uint64_t total = ss_enc__total(e);
	size_t n, nr;
	int err;

	n = aux_ring_copy(ss_enc__ring(e), cfg->ring_size, total, false, lin, NULL);
	marks = ss_enc__psb_marks(e, &nr);
	err = ss_verify__check(v, 0, cfg, lin, n, total - n, marks, nr, res);
	free(lin);
	return err;
}

static void test_match(void **state)
{
	struct fixture *f = *state;
	struct ss_verify_result res;
	struct ss_verify *v;
	struct ss_enc *e;

	fresh(f, &cfg0, &e, &v);
	run(f, e, v, 50, -1);
	assert_int_equal(check(e, v, &cfg0, &res), 0);
	assert_int_equal(res.checked, 50 * SS_TESTPROG_STEPS);
	assert_int_equal(res.skipped, 0);
	ss_verify__free(v);
	ss_enc__free(e);
}

static void test_difference(void **state)
{
	struct fixture *f = *state;
	struct ss_verify_result res;
	struct ss_verify *v;
	struct ss_enc *e;

	fresh(f, &cfg0, &e, &v);
	/* Step 25 is pass 1's first "dec %ecx" at +0a, logged as +0b. */
	run(f, e, v, 3, 25);
	assert_int_equal(check(e, v, &cfg0, &res), -EILSEQ);
	assert_int_equal(res.insn, 25);
	assert_int_equal(res.expected_ip, f->base + 0x0b);
	assert_int_equal(res.decoded_ip, f->base + 0x0a);
	assert_int_equal(res.checked, 25);
	assert_non_null(strstr(res.what, "another instruction"));
	ss_verify__free(v);
	ss_enc__free(e);
}

static void test_log_longer_than_trace(void **state)
{
	struct fixture *f = *state;
	struct ss_verify_result res;
	struct ss_verify *v;
	struct ss_enc *e;

	fresh(f, &cfg0, &e, &v);
	run(f, e, v, 2, -1);
	/* An instruction the trace never saw. */
	assert_int_equal(ss_verify__log(v, 0, f->base, 0), 0);
	assert_int_equal(check(e, v, &cfg0, &res), -EILSEQ);
	assert_int_equal(res.insn, 36);
	assert_non_null(strstr(res.what, "ended before"));
	ss_verify__free(v);
	ss_enc__free(e);
}

static void test_wrapped_and_trimmed(void **state)
{
	struct ss_enc_config cfg = cfg0;
	struct fixture *f = *state;
	struct ss_verify_result res;
	const struct ss_psb_mark *m;
	struct ss_verify *v;
	struct ss_enc *e;
	size_t nr, i;

	cfg.ring_size = 4096;
	cfg.psb_period = 512;
	fresh(f, &cfg, &e, &v);
	run(f, e, v, 400, -1);
	assert_true(ss_enc__total(e) > cfg.ring_size);
	assert_int_equal(check(e, v, &cfg, &res), 0);
	assert_true(res.skipped > 0);
	assert_true(res.checked > 100);
	assert_int_equal(res.skipped + res.checked, 400 * SS_TESTPROG_STEPS);
	/* Forget what left the ring: the check still passes on what is left. */
	ss_enc__trim_psb(e, ss_enc__total(e) - cfg.ring_size);
	m = ss_enc__psb_marks(e, &nr);
	for (i = 0; i < nr && m[i].offset < ss_enc__total(e) - cfg.ring_size; i++)
		;
	assert_true(i < nr);
	ss_verify__trim(v, 0, m[i].insn);
	assert_int_equal(check(e, v, &cfg, &res), 0);
	assert_int_equal(res.skipped, 0);
	ss_verify__free(v);
	ss_enc__free(e);
}

static void test_no_psb(void **state)
{
	struct ss_enc_config cfg = cfg0;
	struct fixture *f = *state;
	struct ss_verify_result res;
	struct ss_verify *v;
	struct ss_enc *e;

	cfg.ring_size = 4096;
	cfg.psb_period = 1 << 20;
	fresh(f, &cfg, &e, &v);
	run(f, e, v, 800, -1);
	assert_int_equal(check(e, v, &cfg, &res), -EILSEQ);
	assert_non_null(strstr(res.what, "no PSB"));
	ss_verify__free(v);
	ss_enc__free(e);
}

static void test_invalid(void **state)
{
	struct ss_verify_result res;
	struct ss_verify *v;

	assert_int_equal(ss_verify__new(0, mm_of, NULL, &v), -EINVAL);
	assert_int_equal(ss_verify__new(1, NULL, NULL, &v), -EINVAL);
	assert_int_equal(ss_verify__new(2, mm_of, NULL, &v), 0);
	assert_int_equal(ss_verify__check(v, 2, &cfg0, NULL, 0, 0, NULL, 0, &res), -EINVAL);
	/* Nothing stepped, nothing written: nothing to say. */
	assert_int_equal(ss_verify__check(v, 1, &cfg0, NULL, 0, 0, NULL, 0, &res), 0);
	ss_verify__free(v);
	ss_verify__free(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_match, setup, teardown),
		cmocka_unit_test_setup_teardown(test_difference, setup, teardown),
		cmocka_unit_test_setup_teardown(test_log_longer_than_trace, setup, teardown),
		cmocka_unit_test_setup_teardown(test_wrapped_and_trimmed, setup, teardown),
		cmocka_unit_test_setup_teardown(test_no_psb, setup, teardown),
		cmocka_unit_test(test_invalid),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
