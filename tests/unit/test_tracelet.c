// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The fast path's tracelets (decoder/fastpath.c): a loop traced as the same TNT packet
 * again and again costs one tracelet lookup per packet, found from the second time the
 * walk sees that packet at that address, with the output and counts of the walk block
 * by block (PTBPF_TRACELETS=0), of the fast path on libipt's query decoder (which has
 * none) and of libipt's block decoder (verify_fast).
 */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include <intel-pt.h>

#include "ptdecode.h"

#define CODE_BASE 0x400000ull

/*
 * 0x400000: nop
 * 0x400001: je 0x400004
 * 0x400003: nop
 * 0x400004: jne 0x400000
 * 0x400006: syscall
 * 0x400008: jmp 0x400008
 */
static const uint8_t code[] = {
	0x90, 0x74, 0x01, 0x90, 0x75, 0xfa, 0x0f, 0x05, 0xeb, 0xfe,
};

static char code_path[64], out_path[64], pt_path[64];

static int setup(void **state)
{
	snprintf(code_path, sizeof(code_path), "/tmp/ptbpf-test-tracelet-%d.code", getpid());
	snprintf(out_path, sizeof(out_path), "/tmp/ptbpf-test-tracelet-%d.out", getpid());
	snprintf(pt_path, sizeof(pt_path), "/tmp/ptbpf-test-tracelet-%d.pt", getpid());
	return 0;
}

static int teardown(void **state)
{
	unlink(code_path);
	unlink(out_path);
	unlink(pt_path);
	return 0;
}

static void write_file(const char *path, const void *data, size_t size)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, data, size), (ssize_t)size);
	close(fd);
}

/* The whole of a file (NUL-terminated), to compare outputs. */
static char *read_text(const char *path)
{
	static char buf[1 << 16];
	FILE *f = fopen(path, "r");
	size_t n;

	assert_non_null(f);
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	return strdup(buf);
}

struct enc {
	uint8_t buf[4096];
	struct pt_encoder *e;
};

static void put(struct enc *en, struct pt_packet p)
{
	assert_true(pt_enc_next(en->e, &p) > 0);
}

static void put_tnt(struct enc *en, unsigned bits, uint64_t payload)
{
	put(en, (struct pt_packet){ .type = ppt_tnt_8,
				    .payload.tnt = { .bit_size = (uint8_t)bits,
						     .payload = payload } });
}

/*
 * PSB at the loop, then `loops` TNT packets of three iterations each: je
 * taken (the second nop skipped), not taken, taken; jne taken every time (the oldest
 * bit is the packet's highest: je, jne, je, jne, je, jne = 1 1 0 1 1 1). Then the
 * last iteration's jne not taken, and the syscall's TIP.PGD.
 */
static size_t put_loop(struct enc *en, unsigned loops)
{
	struct pt_config cfg;
	uint64_t off;
	unsigned i;

	memset(en->buf, 0, sizeof(en->buf));
	pt_config_init(&cfg);
	cfg.begin = en->buf;
	cfg.end = en->buf + sizeof(en->buf);
	en->e = pt_alloc_encoder(&cfg);
	assert_non_null(en->e);
	put(en, (struct pt_packet){ .type = ppt_psb });
	put(en, (struct pt_packet){ .type = ppt_mode, .payload.mode.leaf = pt_mol_exec,
				    .payload.mode.bits.exec.csl = 1 });
	put(en, (struct pt_packet){ .type = ppt_fup,
				    .payload.ip = { .ipc = pt_ipc_sext_48, .ip = CODE_BASE } });
	put(en, (struct pt_packet){ .type = ppt_psbend });
	for (i = 0; i < loops; i++)
		put_tnt(en, 6, 0x37);
	put_tnt(en, 2, 0x2);
	put(en, (struct pt_packet){ .type = ppt_tip_pgd,
				    .payload.ip = { .ipc = pt_ipc_suppressed } });
	assert_int_equal(pt_enc_get_offset(en->e, &off), 0);
	pt_free_encoder(en->e);
	return (size_t)off;
}

/* Decodes `pt` (raw, the code at CODE_BASE) with tracelets on or off; its output. */
static char *decode(const void *pt, size_t size, bool tracelets, bool verify,
		    struct decode_stats *st)
{
	struct raw_image img = { .path = code_path, .vaddr = CODE_BASE };
	struct raw_decode_opts raw = {
		.pt_path = pt_path, .images = &img, .nr_images = 1,
	};
	struct decode_opts opts = { .output = out_path, .format = DECODE_CALLS, .jobs = 1,
				    .verify_fast = verify };

	write_file(code_path, code, sizeof(code));
	write_file(pt_path, pt, size);
	setenv("PTBPF_TRACELETS", tracelets ? "1" : "0", 1);
	memset(st, 0, sizeof(*st));
	assert_int_equal(ptdecode_raw(&raw, &opts, st), 0);
	unsetenv("PTBPF_TRACELETS");
	return read_text(out_path);
}

static void test_tracelet_loop(void **state)
{
	const unsigned loops = 40;
	struct decode_stats on, off, ver, ipt;
	char *out_on, *out_off, *out_ver, *out_ipt;
	struct enc en;
	size_t n;

	/* the counts below are of one decode (not of the verifying one's two), on pktq */
	unsetenv("PTBPF_VERIFY_FAST");
	unsetenv("PTBPF_FAST_QUERY");
	n = put_loop(&en, loops);
	out_on = decode(en.buf, n, true, false, &on);
	out_off = decode(en.buf, n, false, false, &off);
	out_ver = decode(en.buf, n, true, true, &ver);
	/* libipt's query decoder has no bulk bits: no tracelets, the same output */
	setenv("PTBPF_FAST_QUERY", "libipt", 1);
	out_ipt = decode(en.buf, n, true, false, &ipt);
	unsetenv("PTBPF_FAST_QUERY");
	assert_string_equal(out_on, out_ipt);
	assert_int_equal(ipt.fast_tl_lookups, 0);
	assert_int_equal(ipt.insns, on.insns);

	/* the same output and counts either way, and libipt's block decoder agrees */
	assert_string_equal(out_on, out_off);
	assert_string_equal(out_on, out_ver);
	assert_non_null(strstr(out_on, "start"));
	assert_int_equal(on.insns, off.insns);
	assert_int_equal(on.blocks, off.blocks);
	assert_int_equal(on.fast_blocks, off.fast_blocks);
	assert_int_equal(on.fast_stretched, off.fast_stretched);
	assert_int_equal(on.errors, 0);
	assert_true(ver.verified_fast);
	/* 3 iterations a packet, 2 blocks each; the last one's, the syscall's block */
	assert_int_equal(on.blocks, 6 * loops + 2 + 1);
	assert_int_equal(on.insns, 10 * loops + 3 + 1);

	/*
	 * The first block (the start) takes the first packet's first bit: its other five
	 * are a tracelet of their own, missed; the second packet misses, every later one
	 * hits (6 blocks each); the last, shorter packet misses. Without tracelets: none.
	 */
	assert_int_equal(on.fast_tl_lookups, loops + 1);
	assert_int_equal(on.fast_tl_hits, loops - 2);
	assert_int_equal(on.fast_tl_blocks, 6 * (loops - 2));
	assert_int_equal(on.fast_tl_evictions, 0);
	assert_int_equal(off.fast_tl_lookups, 0);
	assert_int_equal(off.fast_tl_hits, 0);
	free(out_on);
	free(out_off);
	free(out_ver);
	free(out_ipt);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tracelet_loop),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
