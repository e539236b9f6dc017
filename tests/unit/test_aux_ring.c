// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <intel-pt.h>
#include <linux/perf_event.h>

#include "aux_ring.h"

#define RING (64 * 1024)

static void fill(uint8_t *r, size_t from, size_t to, uint8_t base)
{
	for (size_t i = from; i < to; i++)
		r[i] = (uint8_t)(base + i) | 1;
}

static void test_not_wrapped(void **state)
{
	uint8_t *r = calloc(1, RING), *out = malloc(RING);
	bool wrapped;

	fill(r, 0, 1000, 7);
	assert_int_equal(aux_ring_copy(r, RING, 1000, false, out, &wrapped), 1000);
	assert_false(wrapped);
	assert_memory_equal(out, r, 1000);
	free(r);
	free(out);
}

static void test_not_wrapped_head_in_probe_area(void **state)
{
	/* Written up to 100 bytes before the end: the written tail must not look wrapped. */
	uint8_t *r = calloc(1, RING), *out = malloc(RING);
	bool wrapped;

	fill(r, 0, RING - 100, 3);
	assert_int_equal(aux_ring_copy(r, RING, RING - 100, false, out, &wrapped), RING - 100);
	assert_false(wrapped);
	free(r);
	free(out);
}

static void test_wrapped(void **state)
{
	uint8_t *r = malloc(RING), *out = malloc(RING);
	bool wrapped;

	fill(r, 0, RING, 5);
	assert_int_equal(aux_ring_copy(r, RING, 300, false, out, &wrapped), RING);
	assert_true(wrapped);
	assert_memory_equal(out, r + 300, RING - 300);
	assert_memory_equal(out + RING - 300, r, 300);
	free(r);
	free(out);
}

static void test_head_zero_and_masking(void **state)
{
	uint8_t *r = calloc(1, RING), *out = malloc(RING);
	bool wrapped;

	/* empty ring */
	assert_int_equal(aux_ring_copy(r, RING, 0, false, out, &wrapped), 0);
	assert_false(wrapped);
	/* exactly one full turn: head back at 0 (given unmasked as RING) */
	fill(r, 0, RING, 9);
	assert_int_equal(aux_ring_copy(r, RING, RING, false, out, &wrapped), RING);
	assert_true(wrapped);
	assert_memory_equal(out, r, RING);
	free(r);
	free(out);
}

static void test_known_wrapped_zero_tail(void **state)
{
	/* A wrapped ring whose tail happens to be zero (PAD): trust the tracked state. */
	uint8_t *r = calloc(1, RING), *out = malloc(RING);
	bool wrapped;

	fill(r, 0, 200, 1);
	assert_int_equal(aux_ring_copy(r, RING, 200, true, out, &wrapped), RING);
	assert_true(wrapped);
	assert_memory_equal(out + RING - 200, r, 200);
	free(r);
	free(out);
}


static void test_head_at_size_minus_one(void **state)
{
	uint8_t *r = calloc(1, RING), *out = malloc(RING);
	bool wrapped;

	/* not wrapped: everything but the last byte written */
	fill(r, 0, RING - 1, 11);
	assert_int_equal(aux_ring_copy(r, RING, RING - 1, false, out, &wrapped), RING - 1);
	assert_false(wrapped);
	assert_memory_equal(out, r, RING - 1);
	/* wrapped: the last byte is the oldest, then [0, size-1) */
	r[RING - 1] = 0x5a;
	assert_int_equal(aux_ring_copy(r, RING, RING - 1, false, out, &wrapped), RING);
	assert_true(wrapped);
	assert_int_equal(out[0], 0x5a);
	assert_memory_equal(out + 1, r, RING - 1);
	free(r);
	free(out);
}

static void test_wrapped_head_before_probe_area(void **state)
{
	/* head early in the ring, old data everywhere after it: wrapped */
	uint8_t *r = malloc(RING), *out = malloc(RING);
	bool wrapped;

	fill(r, 0, RING, 3);
	assert_int_equal(aux_ring_copy(r, RING, 8, false, out, &wrapped), RING);
	assert_true(wrapped);
	assert_memory_equal(out, r + 8, RING - 8);
	free(r);
	free(out);
}

static void test_zero_filled_tail(void **state)
{
	/*
	 * The edge case of the zero test: the ring went round, but its last 4 KiB happen to
	 * be zero (PAD packets are 0x00). Without tracking it looks fresh and only [0,head)
	 * comes out; a caller that knows better passes known_wrapped.
	 */
	uint8_t *r = malloc(RING), *out = malloc(RING);
	bool wrapped;

	fill(r, 0, RING, 9);
	memset(r + RING - AUX_WRAP_PROBE_BYTES, 0, AUX_WRAP_PROBE_BYTES);
	assert_int_equal(aux_ring_copy(r, RING, 1000, false, out, &wrapped), 1000);
	assert_false(wrapped);
	assert_int_equal(aux_ring_copy(r, RING, 1000, true, out, &wrapped), RING);
	assert_true(wrapped);
	/* one non-zero byte at the very end is enough */
	r[RING - 1] = 1;
	assert_int_equal(aux_ring_copy(r, RING, 1000, false, out, &wrapped), RING);
	assert_true(wrapped);
	/* and a non-zero byte before the probe area is not looked at */
	memset(r + 2000, 0, RING - 2000);
	r[RING - AUX_WRAP_PROBE_BYTES - 1] = 1;
	assert_int_equal(aux_ring_copy(r, RING, 1000, false, out, &wrapped), 1000);
	assert_false(wrapped);
	free(r);
	free(out);
}

static void test_small_ring(void **state)
{
	/* a one-page ring is all probe area: bytes after head decide */
	uint8_t r[4096] = {}, out[4096];
	bool wrapped;

	fill(r, 0, 100, 1);
	assert_int_equal(aux_ring_copy(r, sizeof(r), 100, false, out, &wrapped), 100);
	assert_false(wrapped);
	r[4000] = 1;
	assert_int_equal(aux_ring_copy(r, sizeof(r), 100, false, out, &wrapped), 4096);
	assert_true(wrapped);
}

/* The AUX area as the kernel maps it: aux_head in the user page, ring at aux_offset. */
static void test_snapshot_user_page(void **state)
{
	struct perf_event_mmap_page *pc = calloc(1, 4096);
	uint8_t *r = calloc(1, RING), *out = malloc(RING);
	uint64_t head;
	bool wrapped;

	pc->aux_offset = 4096 * 3;
	pc->aux_size = RING;
	fill(r, 0, 5000, 2);
	pc->aux_head = 5000;
	assert_int_equal(aux_ring_snapshot(pc, r, false, out, &wrapped, &head), 5000);
	assert_int_equal(head, 5000);
	assert_false(wrapped);
	assert_memory_equal(out, r, 5000);
	/* in overwrite mode head is an offset; mask it anyway, as the kernel does */
	fill(r, 0, RING, 4);
	pc->aux_head = 2 * RING + 12;
	assert_int_equal(aux_ring_snapshot(pc, r, false, out, &wrapped, &head), RING);
	assert_int_equal(head, 12);
	assert_true(wrapped);
	assert_memory_equal(out, r + 12, RING - 12);
	/* head is optional */
	assert_int_equal(aux_ring_snapshot(pc, r, false, out, NULL, NULL), RING);
	free(pc);
	free(r);
	free(out);
}

static void test_invalid(void **state)
{
	uint8_t r[4096] = { 1 }, out[4096];
	struct perf_event_mmap_page pc = { .aux_size = sizeof(r) };
	bool wrapped = true;

	assert_int_equal(aux_ring_copy(NULL, sizeof(r), 0, false, out, &wrapped), 0);
	assert_false(wrapped);
	assert_int_equal(aux_ring_copy(r, sizeof(r), 0, false, NULL, &wrapped), 0);
	assert_int_equal(aux_ring_copy(r, 0, 0, false, out, &wrapped), 0);
	assert_int_equal(aux_ring_copy(r, 3000, 0, false, out, &wrapped), 0);
	assert_int_equal(aux_ring_copy(r, sizeof(r), 0, false, out, NULL), sizeof(r));
	assert_int_equal(aux_ring_snapshot(NULL, r, false, out, &wrapped, NULL), 0);
	assert_int_equal(aux_ring_snapshot(&pc, NULL, false, out, &wrapped, NULL), 0);
	assert_int_equal(aux_ring_snapshot(&pc, r, false, NULL, &wrapped, NULL), 0);
	pc.aux_size = 0;
	assert_int_equal(aux_ring_snapshot(&pc, r, false, out, &wrapped, NULL), 0);
}


/* Packets from the first PSB to the end, and the offset of that PSB. */
static int count_packets(const uint8_t *buf, size_t size, uint64_t *sync_at)
{
	struct pt_config config;
	struct pt_packet_decoder *dec;
	struct pt_packet pkt;
	int n = 0, err;

	pt_config_init(&config);
	config.begin = (uint8_t *)buf;
	config.end = (uint8_t *)buf + size;
	dec = pt_pkt_alloc_decoder(&config);
	assert_non_null(dec);
	assert_true(pt_pkt_sync_forward(dec) >= 0);
	assert_int_equal(pt_pkt_get_sync_offset(dec, sync_at), 0);
	while ((err = pt_pkt_next(dec, &pkt, sizeof(pkt))) >= 0)
		n++;
	assert_int_equal(err, -pte_eos);
	pt_pkt_free_decoder(dec);
	return n;
}

/*
 * Real Intel PT bytes (a 12 KiB AUX buffer captured on hardware, see its README in
 * tests/data/hw-pt/keeper-perf-aux) written into a 16 KiB ring the way the
 * hardware does, going round once: the linearised copy decodes to the same packets
 * from its first PSB as the original.
 */
static void test_real_trace_wrapped(void **state)
{
	const char *data = getenv("TESTDATA");	/* tests/run.sh sets it */
	char path[512];
	uint8_t trace[12288], *ring = calloc(1, 16384), *out = malloc(16384);
	uint64_t sync_orig, sync_copy;
	size_t n, start = 8192, i;
	bool wrapped;
	FILE *f;

	snprintf(path, sizeof(path), "%s/hw-pt/keeper-perf-aux/traced_data.bin",
		 data && *data ? data : "tests/data");
	f = fopen(path, "rb");
	if (!f)
		print_error("%s: %s (run from the top of the tree, or set TESTDATA)\n", path,
			    strerror(errno));
	assert_non_null(f);
	n = fread(trace, 1, sizeof(trace), f);
	fclose(f);
	assert_int_equal(n, sizeof(trace));
	for (i = 0; i < n; i++)
		ring[(start + i) % 16384] = trace[i];
	/* head = where the next byte would go: 4096, after one wrap */
	assert_int_equal(aux_ring_copy(ring, 16384, (start + n) % 16384, false, out, &wrapped),
			 16384);
	assert_true(wrapped);
	/* oldest first: the 4 KiB never written (zero = PAD), then the trace in order */
	assert_memory_equal(out + 16384 - n, trace, n);
	assert_int_equal(count_packets(out, 16384, &sync_copy),
			 count_packets(trace, n, &sync_orig));
	assert_int_equal(sync_copy, sync_orig + 16384 - n);
	free(ring);
	free(out);
}

/*
 * A ring kept across snapshots (no longer zero): what the writer added since the last
 * snapshot is told by the reference bytes before its head, as perf's snapshot mode does.
 */
static void test_kept_ring(void **state)
{
	uint8_t *r = calloc(1, RING), *out = malloc(RING), ref[4096];
	bool wrapped;

	/* snapshot 1 ended at 5000 (after one wrap); the ring is full of old bytes */
	fill(r, 0, RING, 3);
	aux_ring_tail(r, RING, 5000, sizeof(ref), ref);
	assert_memory_equal(ref, r + 5000 - sizeof(ref), sizeof(ref));
	/* the writer went on from 5000 to 9000: those 4000 bytes alone */
	fill(r, 5000, 9000, 11);
	assert_int_equal(aux_ring_copy_since(r, RING, 9000, 5000, ref, sizeof(ref), out, &wrapped),
			 4000);
	assert_false(wrapped);
	assert_memory_equal(out, r + 5000, 4000);
	/* nothing written: nothing new */
	assert_int_equal(aux_ring_copy_since(r, RING, 9000, 9000, r + 9000 - 100, 100, out,
					     &wrapped), 0);
	/* past the end of the ring and round to 1000: [9000, RING) + [0, 1000) */
	aux_ring_tail(r, RING, 9000, sizeof(ref), ref);
	fill(r, 9000, RING, 5);
	fill(r, 0, 1000, 5);
	assert_int_equal(aux_ring_copy_since(r, RING, 1000, 9000, ref, sizeof(ref), out, &wrapped),
			 RING - 8000);
	assert_false(wrapped);
	assert_memory_equal(out, r + 9000, RING - 9000);
	assert_memory_equal(out + RING - 9000, r, 1000);
	/* the reference before 1000 wraps the ring's end too; a full lap overwrites it */
	aux_ring_tail(r, RING, 1000, sizeof(ref), ref);
	assert_memory_equal(ref + sizeof(ref) - 1000, r, 1000);
	assert_memory_equal(ref, r + RING - (sizeof(ref) - 1000), sizeof(ref) - 1000);
	fill(r, 0, RING, 9);
	assert_int_equal(aux_ring_copy_since(r, RING, 3000, 1000, ref, sizeof(ref), out, &wrapped),
			 RING);
	assert_true(wrapped);
	assert_memory_equal(out, r + 3000, RING - 3000);
	/* no reference, or a bad one: the whole ring; bad arguments: nothing */
	assert_int_equal(aux_ring_copy_since(r, RING, 3000, 1000, NULL, 0, out, &wrapped), RING);
	assert_true(wrapped);
	assert_int_equal(aux_ring_copy_since(r, RING, 3000, 1000, ref, RING + 1, out, &wrapped), 0);
	assert_int_equal(aux_ring_copy_since(r, 3000, 3000, 1000, ref, 10, out, &wrapped), 0);
	assert_int_equal(aux_ring_copy_since(NULL, RING, 3000, 1000, ref, 10, out, &wrapped), 0);
	free(r);
	free(out);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_not_wrapped),
		cmocka_unit_test(test_not_wrapped_head_in_probe_area),
		cmocka_unit_test(test_wrapped),
		cmocka_unit_test(test_head_zero_and_masking),
		cmocka_unit_test(test_known_wrapped_zero_tail),
		cmocka_unit_test(test_head_at_size_minus_one),
		cmocka_unit_test(test_wrapped_head_before_probe_area),
		cmocka_unit_test(test_zero_filled_tail),
		cmocka_unit_test(test_small_ring),
		cmocka_unit_test(test_snapshot_user_page),
		cmocka_unit_test(test_invalid),
		cmocka_unit_test(test_real_trace_wrapped),
		cmocka_unit_test(test_kept_ring),
	};

	return cmocka_run_group_tests_name("aux_ring", tests, NULL, NULL);
}
