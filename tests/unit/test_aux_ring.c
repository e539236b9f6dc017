// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_not_wrapped),
		cmocka_unit_test(test_not_wrapped_head_in_probe_area),
		cmocka_unit_test(test_wrapped),
		cmocka_unit_test(test_head_zero_and_masking),
		cmocka_unit_test(test_known_wrapped_zero_tail),
	};

	return cmocka_run_group_tests_name("aux_ring", tests, NULL, NULL);
}
