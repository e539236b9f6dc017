// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * pktq (decoder/pktq.c) against libipt's query decoder, query by query: both engines in
 * step (PKTQ_CHECK), every answer, status, offset and time compared, the first
 * difference aborts the child that drives them. The queries are asked in a seeded
 * random order, the fast path's (events when pending, conditional branches, indirect
 * branches on -pte_bad_query) mixed with out-of-order ones (an event or an indirect
 * branch while TNT bits are left, a re-sync), so that libipt's errors are compared too.
 * Over: every file of tests/data (the perf.data captures whole, their AUX data inside;
 * the raw hw-pt traces), the kAFL traces ($KAFL), the fuzzers' raw PT corpus and
 * regressions, each under every CPU configuration of fuzz_raw_pt.c and Apollo Lake's;
 * and random packet streams made with libipt's encoder (every packet kind pktq does and
 * some it leaves to the block decoder). And the bulk TNT API against single calls.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include <intel-pt.h>

#include "pktq.h"

/* fuzz_raw_pt.c's configurations, and Apollo Lake (APL11, APL12) */
static const struct cpu_config {
	uint8_t family, model, stepping, mtc_freq, nom_freq;
	uint32_t eax, ebx;
} configs[] = {
	{ 0, 0, 0, 0, 0, 0, 0 },
	{ 6, 85, 4, 3, 37, 2, 308 },
	{ 6, 61, 4, 0, 0, 0, 0 },
	{ 6, 126, 5, 0, 0, 0, 0 },
	{ 6, 94, 3, 9, 24, 2, 200 },
	{ 6, 142, 10, 0, 40, 2, 216 },
	{ 6, 151, 2, 15, 255, 1, 4294967295u },
	{ 6, 92, 9, 3, 20, 2, 168 },
};

struct totals {
	uint64_t inputs, queries, fallbacks, bits_checked;
};

static uint64_t rng(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static void set_config(struct pt_config *cfg, const uint8_t *buf, size_t size,
		       const struct cpu_config *c)
{
	pt_config_init(cfg);
	cfg->begin = (uint8_t *)buf;
	cfg->end = (uint8_t *)buf + size;
	if (c->family) {
		cfg->cpu.vendor = pcv_intel;
		cfg->cpu.family = c->family;
		cfg->cpu.model = c->model;
		cfg->cpu.stepping = c->stepping;
		pt_cpu_errata(&cfg->errata, &cfg->cpu);
	}
	cfg->mtc_freq = c->mtc_freq;
	cfg->nom_freq = c->nom_freq;
	cfg->cpuid_0x15_eax = c->eax;
	cfg->cpuid_0x15_ebx = c->ebx;
}

/*
 * The bulk TNT API against single calls (compared with libipt's by the check engine):
 * the bits pktq_cond_bits says, taken one call at a time, statuses 0 but the last.
 */
static int bits_one_by_one(struct pktq *q, struct totals *t)
{
	uint64_t bits;
	unsigned n, k;
	int status = 0, taken;

	if (pktq_cond_bits(q, &bits, &n) < 0 || !n)
		return 0;
	for (k = 0; k < n; k++) {
		status = pktq_cond_branch(q, &taken);
		if (status < 0)
			return status;
		if (taken != (int)((bits >> k) & 1) || (k + 1 < n && status != 0)) {
			fprintf(stderr, "pktq_cond_bits: bit %u of %u said %d, the call %d "
				"(status %d)\n", k, n, (int)((bits >> k) & 1), taken, status);
			abort();
		}
		t->bits_checked++;
	}
	return status;
}

/* Drives both engines over one trace in the order `seed` picks; aborts on a difference. */
static void drive(const struct pt_config *cfg, uint64_t seed, struct totals *t)
{
	struct pktq *q = pktq_new(cfg, PKTQ_CHECK);
	uint64_t s = seed * 0x9e3779b97f4a7c15ull + 1, ip, off;
	unsigned syncs = 0, steps = 0;
	int status, taken;

	if (!q)
		abort();
	for (;;) {
		status = (rng(&s) % 16 || !syncs || pktq_get_sync_offset(q, &off) < 0)
				 ? pktq_sync_forward(q, &ip) : pktq_sync_set(q, &ip, off);
		if (status == -pte_eos || ++syncs > 100000)
			break;
		if (status < 0 && status != PTD_FAST_FALLBACK) {
			/* no PSB or a broken one: on past it, as decode does */
			continue;
		}
		while (status >= 0 && ++steps < 50000000) {
			uint64_t r = rng(&s) % 64;
			struct pt_event ev;
			uint64_t bits;
			unsigned n;

			t->queries++;
			if (r == 0) {
				status = pktq_event(q, &ev, sizeof(ev));
			} else if (r == 1) {
				status = pktq_indirect_branch(q, &ip);
			} else if (r < 6) {
				status = bits_one_by_one(q, t);
			} else if (r < 10 && !pktq_cond_bits(q, &bits, &n) && n) {
				status = pktq_cond_take(q, 1 + (unsigned)(rng(&s) % n));
			} else if (status & pts_event_pending) {
				status = pktq_event(q, &ev, sizeof(ev));
			} else {
				status = pktq_cond_branch(q, &taken);
				if (status == -pte_bad_query)
					status = pktq_indirect_branch(q, &ip);
				/* out of step: an event may be next (libipt's -pte_bad_query) */
				if (status == -pte_bad_query)
					status = pktq_event(q, &ev, sizeof(ev));
			}
		}
		if (status == PTD_FAST_FALLBACK)
			t->fallbacks++;
	}
	pktq_free(q);
}

/* Runs `buf` under every configuration and two orders in a child; fails on its failure. */
static void check_trace(const char *name, const uint8_t *buf, size_t size, struct totals *t)
{
	int fds[2], status;
	struct totals child = { 0 };
	pid_t pid;

	assert_int_equal(pipe(fds), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (!pid) {
		struct pt_config cfg;
		size_t c;
		uint64_t seed;

		close(fds[0]);
		for (c = 0; c < sizeof(configs) / sizeof(configs[0]); c++)
			for (seed = 1; seed <= 2; seed++) {
				set_config(&cfg, buf, size, &configs[c]);
				drive(&cfg, seed + c * 7, &child);
			}
		if (write(fds[1], &child, sizeof(child)) != sizeof(child))
			_exit(3);
		_exit(0);
	}
	close(fds[1]);
	if (read(fds[0], &child, sizeof(child)) != sizeof(child))
		memset(&child, 0, sizeof(child));
	close(fds[0]);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	if (!WIFEXITED(status) || WEXITSTATUS(status))
		fail_msg("%s: pktq differs from libipt's query decoder (see above)", name);
	t->inputs++;
	t->queries += child.queries;
	t->fallbacks += child.fallbacks;
	t->bits_checked += child.bits_checked;
}

static void check_file(const char *path, struct totals *t)
{
	struct stat sb;
	void *p;
	int fd = open(path, O_RDONLY);

	if (fd < 0)
		return;
	if (!fstat(fd, &sb) && S_ISREG(sb.st_mode) && sb.st_size > 0 &&
	    sb.st_size < (64 << 20)) {
		p = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
		if (p != MAP_FAILED) {
			check_trace(path, p, (size_t)sb.st_size, t);
			munmap(p, (size_t)sb.st_size);
		}
	}
	close(fd);
}

static void check_tree(const char *dir, struct totals *t)
{
	struct dirent **names;
	int n, i;

	n = scandir(dir, &names, NULL, alphasort);
	for (i = 0; i < n; i++) {
		char path[4096];
		struct stat sb;

		if (names[i]->d_name[0] != '.') {
			snprintf(path, sizeof(path), "%s/%s", dir, names[i]->d_name);
			if (!stat(path, &sb) && S_ISDIR(sb.st_mode))
				check_tree(path, t);
			else if (!strstr(path, "LICENSE") && !strstr(path, ".md"))
				check_file(path, t);
		}
		free(names[i]);
	}
	if (n >= 0)
		free(names);
}

static void report(const char *what, const struct totals *t)
{
	printf("%s: %llu inputs x %zu configurations x 2 orders, %llu queries compared (%llu "
	       "bulk TNT bits), pktq fell back %llu times\n", what,
	       (unsigned long long)t->inputs, sizeof(configs) / sizeof(configs[0]),
	       (unsigned long long)t->queries, (unsigned long long)t->bits_checked,
	       (unsigned long long)t->fallbacks);
}

static void test_pktq_testdata(void **state)
{
	const char *data = getenv("TESTDATA"), *top = getenv("TOP"), *kafl = getenv("KAFL");
	struct totals t = { 0 };
	char dir[4096];

	(void)state;
	if (!data || !top)
		skip();
	check_tree(data, &t);
	snprintf(dir, sizeof(dir), "%s/tests/fuzz/corpus/raw_pt", top);
	check_tree(dir, &t);
	snprintf(dir, sizeof(dir), "%s/tests/fuzz/regressions/raw_pt", top);
	check_tree(dir, &t);
	if (kafl && *kafl)
		check_tree(kafl, &t);
	else
		printf("no kAFL traces ($KAFL): not compared\n");
	report("test data", &t);
	assert_true(t.inputs > 10);
}

/* ---------------------------------------------------------------- encoded streams */

static void put(struct pt_encoder *e, const struct pt_packet *p)
{
	/* a packet the encoder refuses (a random payload out of range) is left out */
	(void)pt_enc_next(e, p);
}

static void ip_packet(struct pt_packet *p, enum pt_packet_type type, uint64_t *r)
{
	static const enum pt_ip_compression ipc[] = {
		pt_ipc_suppressed, pt_ipc_update_16, pt_ipc_update_32, pt_ipc_update_48,
		pt_ipc_sext_48, pt_ipc_full,
	};

	memset(p, 0, sizeof(*p));
	p->type = type;
	p->payload.ip.ipc = ipc[rng(r) % 6];
	p->payload.ip.ip = 0x400000 + (rng(r) % 4096);
	if (rng(r) % 8 == 0)
		p->payload.ip.ipc = pt_ipc_sext_48;
}

/* libipt's encoder over buf */
static struct pt_encoder *new_encoder(uint8_t *buf, size_t size)
{
	struct pt_config cfg;
	struct pt_encoder *e;

	pt_config_init(&cfg);
	cfg.begin = buf;
	cfg.end = buf + size;
	e = pt_alloc_encoder(&cfg);
	assert_non_null(e);
	return e;
}

/* A random stream of PSB+ and packets; some kinds weighted as in real traces. */
static size_t encode_stream(uint8_t *buf, size_t size, uint64_t seed)
{
	struct pt_encoder *e;
	struct pt_packet p;
	uint64_t r = seed * 0x2545f4914f6cdd1dull + 7, off = 0;
	int k, n = 200 + (int)(rng(&r) % 400);

	e = new_encoder(buf, size);
	for (k = 0; k < n; k++) {
		uint64_t x = rng(&r) % 100;

		memset(&p, 0, sizeof(p));
		if (k == 0 || x < 3) {
			/* PSB+ */
			p.type = ppt_psb;
			put(e, &p);
			if (rng(&r) % 2) {
				p.type = ppt_tsc;
				p.payload.tsc.tsc = 0x100000 + k * 1000ull;
				put(e, &p);
				if (rng(&r) % 2) {
					p.type = ppt_tma;
					p.payload.tma.ctc = (uint16_t)rng(&r);
					p.payload.tma.fc = (uint16_t)(rng(&r) % 512);
					put(e, &p);
				}
			}
			if (rng(&r) % 2) {
				memset(&p, 0, sizeof(p));
				p.type = ppt_cbr;
				p.payload.cbr.ratio = (uint8_t)(rng(&r) % 40);
				put(e, &p);
			}
			if (rng(&r) % 2) {
				memset(&p, 0, sizeof(p));
				p.type = ppt_mode;
				p.payload.mode.leaf = pt_mol_exec;
				p.payload.mode.bits.exec.csl = rng(&r) % 4 != 0;
				put(e, &p);
			}
			if (rng(&r) % 3 == 0) {
				memset(&p, 0, sizeof(p));
				p.type = ppt_mode;
				p.payload.mode.leaf = pt_mol_tsx;
				p.payload.mode.bits.tsx.intx = rng(&r) % 2;
				put(e, &p);
			}
			if (rng(&r) % 3) {
				ip_packet(&p, ppt_fup, &r);
				put(e, &p);
			}
			memset(&p, 0, sizeof(p));
			p.type = ppt_psbend;
			put(e, &p);
			continue;
		}
		if (x < 30) {
			p.type = ppt_tnt_8;
			p.payload.tnt.bit_size = (uint8_t)(1 + rng(&r) % 6);
			p.payload.tnt.payload = rng(&r) & ((1ull << p.payload.tnt.bit_size) - 1);
		} else if (x < 35) {
			p.type = ppt_tnt_64;
			p.payload.tnt.bit_size = (uint8_t)(1 + rng(&r) % 47);
			p.payload.tnt.payload = rng(&r) & ((1ull << p.payload.tnt.bit_size) - 1);
		} else if (x < 50) {
			ip_packet(&p, ppt_tip, &r);
		} else if (x < 54) {
			ip_packet(&p, ppt_tip_pge, &r);
		} else if (x < 58) {
			ip_packet(&p, ppt_tip_pgd, &r);
		} else if (x < 63) {
			ip_packet(&p, ppt_fup, &r);
		} else if (x < 66) {
			p.type = ppt_mode;
			p.payload.mode.leaf = rng(&r) % 2 ? pt_mol_exec : pt_mol_tsx;
			p.payload.mode.bits.exec.csl = rng(&r) % 2;
		} else if (x < 72) {
			p.type = ppt_mtc;
			p.payload.mtc.ctc = (uint8_t)rng(&r);
		} else if (x < 75) {
			p.type = ppt_tsc;
			p.payload.tsc.tsc = 0x200000 + k * 777ull;
		} else if (x < 77) {
			p.type = ppt_tma;
			p.payload.tma.ctc = (uint16_t)rng(&r);
			p.payload.tma.fc = (uint16_t)(rng(&r) % 512);
		} else if (x < 80) {
			p.type = ppt_cbr;
			p.payload.cbr.ratio = (uint8_t)(rng(&r) % 40);
		} else if (x < 84) {
			p.type = ppt_ovf;
		} else if (x < 90) {
			p.type = ppt_pad;
		} else if (x < 92) {
			p.type = ppt_cyc;
			p.payload.cyc.value = rng(&r) % 5000;
		} else if (x < 94) {
			p.type = ppt_pip;
			p.payload.pip.cr3 = (rng(&r) % 16) << 12;
		} else if (x < 95) {
			p.type = ppt_stop;
		} else if (x < 96) {
			p.type = ppt_mnt;
		} else {
			p.type = ppt_pad;
		}
		put(e, &p);
	}
	assert_int_equal(pt_enc_get_offset(e, &off), 0);
	pt_free_encoder(e);
	/* sometimes cut in the middle of the last packets */
	if (off > 4 && rng(&r) % 4 == 0)
		off -= 1 + rng(&r) % 3;
	return (size_t)off;
}

/* The streams `encode` makes with seeds 1 to n, each checked. */
static void check_encoded(const char *what, size_t (*encode)(uint8_t *, size_t, uint64_t),
			  uint64_t n)
{
	static uint8_t buf[1 << 17];
	struct totals t = { 0 };
	uint64_t seed;
	char name[64];

	for (seed = 1; seed <= n; seed++) {
		size_t size = encode(buf, sizeof(buf), seed);

		snprintf(name, sizeof(name), "%s %llu", what, (unsigned long long)seed);
		check_trace(name, buf, size, &t);
	}
	report(what, &t);
}

static void test_pktq_encoded(void **state)
{
	(void)state;
	check_encoded("encoded streams", encode_stream, 300);
}

/* A packet without payload */
static void put_plain(struct pt_encoder *e, enum pt_packet_type type)
{
	struct pt_packet p;

	memset(&p, 0, sizeof(p));
	p.type = type;
	put(e, &p);
}

/*
 * A stream of MTC runs as traces with timing have them (HASE's: 68 % of its packets), the
 * CTC advancing by the same delta (pktq takes those from the bytes) but for a changed
 * delta, a wrap or a random CTC here and there, between TNTs, TIPs, disables and enables,
 * PADs, TSC+TMA+CBR pairs, CYCs (MTCs not steady) and PSB+; sometimes cut in an MTC.
 */
static size_t encode_mtc_runs(uint8_t *buf, size_t size, uint64_t seed)
{
	struct pt_encoder *e;
	struct pt_packet p;
	uint64_t r = seed * 0x9e3779b97f4a7c15ull + 3, off = 0;
	unsigned ctc = (unsigned)rng(&r) % 256, step = 1;
	int k, j, n = 20 + (int)(rng(&r) % 60), len;

	e = new_encoder(buf, size);
	for (k = 0; k < n; k++) {
		uint64_t x = k ? rng(&r) % 100 : 0;

		memset(&p, 0, sizeof(p));
		if (x < 5 || x >= 90) {
			/* PSB+ (first), or TSC, TMA, CBR out of it (a frequency change) */
			if (x < 5)
				put_plain(e, ppt_psb);
			p.type = ppt_tsc;
			p.payload.tsc.tsc = 0x100000 + k * 100000ull;
			put(e, &p);
			memset(&p, 0, sizeof(p));
			p.type = ppt_tma;
			p.payload.tma.ctc = (uint16_t)(ctc << 3);
			p.payload.tma.fc = (uint16_t)(rng(&r) % 512);
			put(e, &p);
			memset(&p, 0, sizeof(p));
			p.type = ppt_cbr;
			p.payload.cbr.ratio = (uint8_t)(1 + rng(&r) % 40);
			put(e, &p);
			if (x < 5) {
				ip_packet(&p, ppt_fup, &r);
				p.payload.ip.ipc = pt_ipc_sext_48;
				put(e, &p);
				put_plain(e, ppt_psbend);
			}
			continue;
		}
		if (x < 60) {
			/* a run: mostly one delta, at times another, a random CTC, a CYC, a PAD */
			len = 1 + (int)(rng(&r) % 300);
			if (rng(&r) % 4 == 0)
				step = 1 + (unsigned)(rng(&r) % 3);
			for (j = 0; j < len; j++) {
				uint64_t y = rng(&r) % 100;

				memset(&p, 0, sizeof(p));
				if (y == 0) {
					p.type = ppt_cyc;
					p.payload.cyc.value = rng(&r) % 5000;
					put(e, &p);
				} else if (y < 3) {
					put_plain(e, ppt_pad);
				}
				/* (one CTC one off, the next ones steady again; or any from here) */
				ctc = (ctc + step) % 256;
				if (y >= 6 && y < 8)
					ctc = (unsigned)rng(&r) % 256;
				memset(&p, 0, sizeof(p));
				p.type = ppt_mtc;
				p.payload.mtc.ctc = (uint8_t)(ctc + (y >= 3 && y < 6 ? 1 - y % 2 * 2 : 0));
				put(e, &p);
			}
		} else if (x < 70) {
			p.type = ppt_tnt_8;
			p.payload.tnt.bit_size = (uint8_t)(1 + rng(&r) % 6);
			p.payload.tnt.payload = rng(&r) & ((1ull << p.payload.tnt.bit_size) - 1);
			put(e, &p);
		} else if (x < 75) {
			ip_packet(&p, ppt_tip, &r);
			put(e, &p);
		} else if (x < 80) {
			ip_packet(&p, ppt_tip_pgd, &r);
			put(e, &p);
		} else if (x < 85) {
			/* (with an ip: pktq leaves an enable without one to the block decoder) */
			ip_packet(&p, ppt_tip_pge, &r);
			p.payload.ip.ipc = pt_ipc_sext_48;
			put(e, &p);
		} else {
			for (j = (int)(rng(&r) % 20); j >= 0; j--)
				put_plain(e, ppt_pad);
		}
	}
	assert_int_equal(pt_enc_get_offset(e, &off), 0);
	pt_free_encoder(e);
	/* sometimes cut in the last MTC's CTC byte */
	if (off > 2 && buf[off - 2] == 0x59 && rng(&r) % 3 == 0)
		off -= 1;
	return (size_t)off;
}

static void test_pktq_mtc_runs(void **state)
{
	(void)state;
	check_encoded("MTC runs", encode_mtc_runs, 200);
}

/* The bulk TNT API on a known stream: bits, counts, the status of the last, the time. */
static void test_pktq_cond_bits(void **state)
{
	static uint8_t buf[4096];
	struct pt_config cfg;
	struct pt_encoder *e;
	struct pt_packet p;
	struct pktq *q;
	uint64_t off, before, ip, bits, tsc;
	unsigned n;
	int taken;

	(void)state;
	pt_config_init(&cfg);
	cfg.begin = buf;
	cfg.end = buf + sizeof(buf);
	e = pt_alloc_encoder(&cfg);
	memset(&p, 0, sizeof(p));
	p.type = ppt_psb;
	assert_true(pt_enc_next(e, &p) > 0);
	p.type = ppt_tsc;
	p.payload.tsc.tsc = 1000;
	assert_true(pt_enc_next(e, &p) > 0);
	memset(&p, 0, sizeof(p));
	p.type = ppt_fup;
	p.payload.ip.ipc = pt_ipc_sext_48;
	p.payload.ip.ip = 0x400000;
	assert_true(pt_enc_next(e, &p) > 0);
	memset(&p, 0, sizeof(p));
	p.type = ppt_psbend;
	assert_true(pt_enc_next(e, &p) > 0);
	/* taken, not taken, taken, taken (oldest first) */
	p.type = ppt_tnt_8;
	p.payload.tnt.bit_size = 4;
	p.payload.tnt.payload = 0xb;
	assert_true(pt_enc_next(e, &p) > 0);
	memset(&p, 0, sizeof(p));
	p.type = ppt_tsc;
	p.payload.tsc.tsc = 2000;
	assert_true(pt_enc_next(e, &p) > 0);
	p.type = ppt_tnt_8;
	p.payload.tnt.bit_size = 2;
	p.payload.tnt.payload = 0x1;
	assert_true(pt_enc_next(e, &p) > 0);
	memset(&p, 0, sizeof(p));
	p.type = ppt_tsc;
	p.payload.tsc.tsc = 3000;
	assert_true(pt_enc_next(e, &p) > 0);
	memset(&p, 0, sizeof(p));
	p.type = ppt_tip_pgd;
	p.payload.ip.ipc = pt_ipc_suppressed;
	assert_true(pt_enc_next(e, &p) > 0);
	assert_int_equal(pt_enc_get_offset(e, &off), 0);
	pt_free_encoder(e);
	cfg.end = buf + off;

	q = pktq_new(&cfg, PKTQ_CHECK);
	assert_non_null(q);
	assert_int_equal(pktq_sync_forward(q, &ip), 0);
	assert_int_equal(ip, 0x400000);
	/* the first packet, not taken yet: nothing consumed, no time yet (libipt's time
	 * after a sync is a query's: none) */
	assert_int_equal(pktq_get_offset(q, &before), 0);
	assert_int_equal(pktq_cond_bits(q, &bits, &n), 0);
	assert_int_equal(n, 4);
	assert_int_equal(bits, 0xd);	/* 1, 0, 1, 1 from bit 0 */
	assert_int_equal(pktq_time(q, &tsc, NULL, NULL), -pte_no_time);
	assert_int_equal(pktq_get_offset(q, &off), 0);
	assert_int_equal(off, before);
	/* one by one: the first bit loads the packet, the time is the packet's */
	assert_int_equal(pktq_cond_branch(q, &taken), 0);
	assert_int_equal(taken, 1);
	assert_int_equal(pktq_time(q, &tsc, NULL, NULL), 0);
	assert_int_equal(tsc, 1000);
	assert_int_equal(pktq_cond_bits(q, &bits, &n), 0);
	assert_int_equal(n, 3);
	assert_int_equal(bits, 0x6);
	/* the rest at once: no event after them, the next packet is a TNT */
	assert_int_equal(pktq_cond_take(q, 3), 0);
	assert_int_equal(pktq_cond_bits(q, &bits, &n), 0);
	assert_int_equal(n, 2);
	assert_int_equal(bits, 0x2);	/* not taken, taken */
	/* taking the first bit of the next packet: the time at it (TSC 2000 before it) */
	assert_int_equal(pktq_cond_take(q, 2), pts_event_pending);
	assert_int_equal(pktq_time(q, &tsc, NULL, NULL), 0);
	assert_int_equal(tsc, 2000);
	/* the disable is next: no bits */
	assert_int_equal(pktq_cond_bits(q, &bits, &n), 0);
	assert_int_equal(n, 0);
	assert_int_equal(pktq_cond_take(q, 1), -pte_bad_query);
	pktq_free(q);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pktq_cond_bits),
		cmocka_unit_test(test_pktq_encoded),
		cmocka_unit_test(test_pktq_mtc_runs),
		cmocka_unit_test(test_pktq_testdata),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
