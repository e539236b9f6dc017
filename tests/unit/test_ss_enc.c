// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The singlestep packet writer against libipt's instruction decoder: a small program
 * (ss_testprog.h) is "executed" by hand, its steps encoded, and the decoded instruction addresses
 * must be the executed ones, with and without return compression, PSB+ every few
 * bytes, ring wrap-around, asynchronous disables and timing packets.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <intel-pt.h>

#include "aux_ring.h"
#include "ss_enc.h"
#include "ss_insn.h"
#include "ss_testprog.h"

#define BASE 0x400000ull

struct step {
	uint64_t ip, next;
};

/* One pass through the test program at BASE. */
static size_t run_once(struct step *s)
{
	struct ss_testprog_step p[SS_TESTPROG_STEPS];
	size_t n = ss_testprog_pass(p), i;

	for (i = 0; i < n; i++)
		s[i] = (struct step){ BASE + p[i].from, BASE + p[i].to };
	return n;
}

static int read_code(uint8_t *buffer, size_t size, const struct pt_asid *asid, uint64_t ip,
		     void *context)
{
	if (ip < BASE || ip >= BASE + SS_TESTPROG_SIZE)
		return -pte_nomap;
	if (size > BASE + SS_TESTPROG_SIZE - ip)
		size = BASE + SS_TESTPROG_SIZE - ip;
	memcpy(buffer, ss_testprog_code + (ip - BASE), size);
	return (int)size;
}

static struct ss_dis *dis;

static int setup(void **state)
{
	return ss_dis__new(&dis);
}

static int teardown(void **state)
{
	ss_dis__free(dis);
	return 0;
}

static void encode_step(struct ss_enc *e, const struct step *s, uint64_t tsc)
{
	struct ss_insn insn;

	assert_int_equal(ss_dis__decode(dis, ss_testprog_code + (s->ip - BASE), 15, s->ip, &insn),
			 0);
	assert_int_equal(ss_enc__begin(e, s->ip, tsc), 0);
	assert_int_equal(ss_enc__end(e, &insn, s->ip, s->next), 0);
}

/* Decode `buf` from its first PSB; the IPs land in `ips`. Returns how many. */
static size_t decode_timed(uint8_t *buf, size_t len, uint64_t *ips, uint64_t *times, size_t max,
			   int mtc_freq)
{
	struct pt_insn_decoder *d;
	struct pt_image *image;
	struct pt_config cfg;
	size_t n = 0;
	int status;

	pt_config_init(&cfg);
	cfg.begin = buf;
	cfg.end = buf + len;
	cfg.mtc_freq = mtc_freq;
	cfg.cpuid_0x15_eax = 1;
	cfg.cpuid_0x15_ebx = 40;
	cfg.nom_freq = 20;
	d = pt_insn_alloc_decoder(&cfg);
	assert_non_null(d);
	image = pt_insn_get_image(d);
	assert_int_equal(pt_image_set_callback(image, read_code, NULL), 0);
	status = pt_insn_sync_forward(d);
	assert_true(status >= 0);
	for (;;) {
		struct pt_insn insn;

		while (status & pts_event_pending) {
			struct pt_event ev;

			status = pt_insn_event(d, &ev, sizeof(ev));
			if (status < 0)
				break;
		}
		if (status < 0)
			break;
		/* an error leaves `insn` unwritten, or holds the last instruction decoded */
		memset(&insn, 0, sizeof(insn));
		status = pt_insn_next(d, &insn, sizeof(insn));
		if (insn.iclass != ptic_error && n < max) {
			if (times)
				pt_insn_time(d, &times[n], NULL, NULL);
			ips[n++] = insn.ip;
		}
		if (status < 0)
			break;
	}
	assert_int_equal(status, -pte_eos);
	pt_insn_free_decoder(d);
	return n;
}

static size_t decode(uint8_t *buf, size_t len, uint64_t *ips, size_t max, int mtc_freq)
{
	return decode_timed(buf, len, ips, NULL, max, mtc_freq);
}

static const struct ss_enc_config base_cfg = {
	.ring_size = 1 << 16,
	.psb_period = 1 << 14,
	.retcomp = true,
	.tsc = true,
	.mtc = true,
	.mtc_freq = 3,
	.ctc_eax = 1,
	.ctc_ebx = 40,
	.cbr = 20,
};

/* Count packets of one type in a linear buffer. */
static int count_packets(uint8_t *buf, size_t len, enum pt_packet_type type)
{
	struct pt_packet_decoder *pd;
	struct pt_packet pkt;
	struct pt_config cfg;
	int n = 0;

	pt_config_init(&cfg);
	cfg.begin = buf;
	cfg.end = buf + len;
	pd = pt_pkt_alloc_decoder(&cfg);
	assert_non_null(pd);
	assert_true(pt_pkt_sync_forward(pd) >= 0);
	while (pt_pkt_next(pd, &pkt, sizeof(pkt)) > 0)
		n += pkt.type == type;
	pt_pkt_free_decoder(pd);
	return n;
}

static void roundtrip(const struct ss_enc_config *cfg, int passes, bool async_every_pass)
{
	struct step steps[64];
	size_t nsteps = run_once(steps), i, n, nexp = 0;
	uint64_t *exp = calloc(passes * 64, sizeof(*exp));
	uint64_t *ips = calloc(passes * 64 + 16, sizeof(*ips));
	uint64_t tsc = 1000000;
	struct ss_enc *e;
	uint8_t *lin;
	bool wrapped;
	int p;

	assert_int_equal(ss_enc__new(cfg, &e), 0);
	for (p = 0; p < passes; p++) {
		for (i = 0; i < nsteps; i++) {
			encode_step(e, &steps[i], tsc);
			exp[nexp++] = steps[i].ip;
			tsc += 7;
		}
		if (async_every_pass)
			assert_int_equal(ss_enc__async_disable(e, 0x400000), 0);
	}
	assert_int_equal(ss_enc__async_disable(e, 0x400000), 0);
	lin = malloc(cfg->ring_size);
	n = aux_ring_copy(ss_enc__ring(e), cfg->ring_size, ss_enc__total(e), false, lin,
			  &wrapped);
	assert_int_equal(wrapped, ss_enc__total(e) > cfg->ring_size);
	n = decode(lin, n, ips, passes * 64 + 16, cfg->mtc_freq);
	if (!wrapped) {
		assert_int_equal(n, nexp);
		assert_memory_equal(ips, exp, n * sizeof(*ips));
	} else {
		/* From the first PSB in the ring on, the decoded IPs are the last executed ones. */
		assert_true(n > 0 && n < nexp);
		assert_memory_equal(ips, exp + nexp - n, n * sizeof(*ips));
	}
	free(lin);
	free(exp);
	free(ips);
	ss_enc__free(e);
}

static void test_roundtrip_retcomp(void **state)
{
	roundtrip(&base_cfg, 3, false);
}

static void test_roundtrip_noretcomp(void **state)
{
	struct ss_enc_config cfg = base_cfg;

	cfg.retcomp = false;
	roundtrip(&cfg, 3, false);
}

static void test_roundtrip_psb_often(void **state)
{
	struct ss_enc_config cfg = base_cfg;

	cfg.psb_period = 32;
	roundtrip(&cfg, 20, true);
}

static void test_roundtrip_wrapped(void **state)
{
	struct ss_enc_config cfg = base_cfg;

	cfg.ring_size = 4096;
	cfg.psb_period = 256;
	roundtrip(&cfg, 400, false);
}

static void test_roundtrip_tsc_only(void **state)
{
	struct ss_enc_config cfg = base_cfg;

	cfg.mtc = false;
	roundtrip(&cfg, 5, true);
}

static void test_packets(void **state)
{
	struct step steps[64];
	size_t nsteps = run_once(steps), i, n;
	struct ss_enc_config cfg = base_cfg;
	struct ss_enc *e;
	uint8_t *lin;

	for (int retcomp = 0; retcomp < 2; retcomp++) {
		cfg.retcomp = retcomp;
		assert_int_equal(ss_enc__new(&cfg, &e), 0);
		for (i = 0; i < nsteps; i++)
			encode_step(e, &steps[i], 1000);
		lin = malloc(cfg.ring_size);
		n = aux_ring_copy(ss_enc__ring(e), cfg.ring_size, ss_enc__total(e), false, lin,
				  NULL);
		assert_int_equal(count_packets(lin, n, ppt_psb), 1);
		assert_int_equal(count_packets(lin, n, ppt_tip_pge), 2);	/* start, syscall */
		assert_int_equal(count_packets(lin, n, ppt_tip_pgd), 1);	/* syscall */
		/* call* is a TIP; the 4 rets are TIPs unless compressed. */
		assert_int_equal(count_packets(lin, n, ppt_tip), retcomp ? 1 : 5);
		assert_int_equal(count_packets(lin, n, ppt_fup), 0);
		free(lin);
		ss_enc__free(e);
	}
}

static void test_async_disable(void **state)
{
	struct ss_enc *e;
	struct ss_insn nop = { .len = 1, .cls = SS_INSN_OTHER };
	uint8_t *lin;
	size_t n;

	assert_int_equal(ss_enc__new(&base_cfg, &e), 0);
	assert_false(ss_enc__enabled(e));
	/* Disabled: nothing to do. */
	assert_int_equal(ss_enc__async_disable(e, 0x400012), 0);
	assert_int_equal(ss_enc__total(e), 0);
	assert_int_equal(ss_enc__begin(e, 0x400012, 5000), 0);
	assert_int_equal(ss_enc__end(e, &nop, 0x400012, 0x400013), 0);
	assert_true(ss_enc__enabled(e));
	assert_int_equal(ss_enc__async_disable(e, 0x400013), 0);
	assert_false(ss_enc__enabled(e));
	/* Ending an instruction with tracing off is the caller's bug. */
	assert_int_equal(ss_enc__end(e, &nop, 0x400012, 0x400013), -EINVAL);
	lin = malloc(base_cfg.ring_size);
	n = aux_ring_copy(ss_enc__ring(e), base_cfg.ring_size, ss_enc__total(e), false, lin, NULL);
	assert_int_equal(count_packets(lin, n, ppt_fup), 1);
	assert_int_equal(count_packets(lin, n, ppt_tip_pgd), 1);
	free(lin);
	ss_enc__free(e);
}

static void test_mtc_and_psb_marks(void **state)
{
	struct ss_enc_config cfg = base_cfg;
	struct ss_insn nop = { .len = 1, .cls = SS_INSN_OTHER };
	const struct ss_psb_mark *m;
	struct ss_enc *e;
	uint8_t *lin;
	size_t n, nr;
	int i;

	cfg.log_psb = true;
	cfg.psb_period = 64;
	assert_int_equal(ss_enc__new(&cfg, &e), 0);
	/* One nop every 100 ns: an MTC period is 8 * 40 ns, so most steps cross one. */
	for (i = 0; i < 200; i++) {
		assert_int_equal(ss_enc__begin(e, 0x400012, 1000000 + 100 * i), 0);
		assert_int_equal(ss_enc__end(e, &nop, 0x400012, 0x400012), 0);
	}
	lin = malloc(cfg.ring_size);
	n = aux_ring_copy(ss_enc__ring(e), cfg.ring_size, ss_enc__total(e), false, lin, NULL);
	assert_true(count_packets(lin, n, ppt_mtc) > 20);
	assert_int_equal(count_packets(lin, n, ppt_tma), count_packets(lin, n, ppt_psb));
	m = ss_enc__psb_marks(e, &nr);
	assert_int_equal(nr, count_packets(lin, n, ppt_psb));
	assert_int_equal(m[0].offset, 0);
	assert_int_equal(m[0].insn, 0);
	for (i = 1; i < (int)nr; i++)
		assert_true(m[i].offset > m[i - 1].offset && m[i].insn > m[i - 1].insn);
	ss_enc__trim_psb(e, m[nr - 1].offset);
	m = ss_enc__psb_marks(e, &n);
	assert_int_equal(n, 1);
	free(lin);
	ss_enc__free(e);
}

/* Cycle-accurate: CYC before every eligible packet gives libipt a time per packet. */
static void test_cyc(void **state)
{
	struct ss_enc_config cfg = base_cfg;
	struct step steps[64];
	size_t nsteps = run_once(steps), i, n, distinct = 1;
	uint64_t ips[20 * 64], times[20 * 64], tsc = 1000000;
	struct ss_enc *e;
	uint8_t *lin;
	int p;

	cfg.cyc = true;
	roundtrip(&cfg, 4, true);
	assert_int_equal(ss_enc__new(&cfg, &e), 0);
	for (p = 0; p < 20; p++)
		for (i = 0; i < nsteps; i++, tsc += 2)
			encode_step(e, &steps[i], tsc);
	assert_int_equal(ss_enc__async_disable(e, 0x400000), 0);
	lin = malloc(cfg.ring_size);
	n = aux_ring_copy(ss_enc__ring(e), cfg.ring_size, ss_enc__total(e), false, lin, NULL);
	assert_true(count_packets(lin, n, ppt_cyc) > 20);
	n = decode_timed(lin, n, ips, times, 20 * 64, cfg.mtc_freq);
	assert_int_equal(n, 20 * nsteps);
	for (i = 1; i < n; i++) {
		assert_true(times[i] >= times[i - 1]);
		distinct += times[i] != times[i - 1];
	}
	/* Within the last TNT packet's few branches of the true time, and rarely flat. */
	assert_true(times[n - 1] <= tsc && times[n - 1] + 16 >= tsc - 2);
	assert_true(distinct > n / 8);
	free(lin);
	ss_enc__free(e);
}

static void test_invalid_config(void **state)
{
	struct ss_enc_config cfg = base_cfg;
	struct ss_enc *e;

	cfg.ring_size = 3000;
	assert_int_equal(ss_enc__new(&cfg, &e), -EINVAL);
	cfg = base_cfg;
	cfg.psb_period = 0;
	assert_int_equal(ss_enc__new(&cfg, &e), -EINVAL);
	cfg = base_cfg;
	cfg.ctc_eax = 0;
	assert_int_equal(ss_enc__new(&cfg, &e), -EINVAL);
	ss_enc__free(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_roundtrip_retcomp),
		cmocka_unit_test(test_roundtrip_noretcomp),
		cmocka_unit_test(test_roundtrip_psb_often),
		cmocka_unit_test(test_roundtrip_wrapped),
		cmocka_unit_test(test_roundtrip_tsc_only),
		cmocka_unit_test(test_packets),
		cmocka_unit_test(test_async_disable),
		cmocka_unit_test(test_mtc_and_psb_marks),
		cmocka_unit_test(test_cyc),
		cmocka_unit_test(test_invalid_config),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
