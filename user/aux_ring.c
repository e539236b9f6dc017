// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <string.h>
#include <linux/perf_event.h>

#include "aux_ring.h"

/*
 * Old data after the write offset means the ring went round. Only the last
 * AUX_WRAP_PROBE_BYTES are looked at (as perf does), and never bytes before `head`,
 * which a ring that has not wrapped has just written.
 */
static bool tail_nonzero(const uint8_t *ring, size_t size, size_t head)
{
	size_t from = size > AUX_WRAP_PROBE_BYTES ? size - AUX_WRAP_PROBE_BYTES : 0;
	size_t i;

	if (from < head)
		from = head;
	for (i = from; i < size; i++)
		if (ring[i])
			return true;
	return false;
}

size_t aux_ring_copy(const void *ring, size_t size, uint64_t head, bool known_wrapped, void *out,
		     bool *wrapped)
{
	const uint8_t *r = ring;
	uint8_t *o = out;
	bool wrap;

	if (wrapped)
		*wrapped = false;
	if (!ring || !out || !size || (size & (size - 1)))
		return 0;
	head &= size - 1;
	wrap = known_wrapped || tail_nonzero(r, size, head);
	if (wrapped)
		*wrapped = wrap;
	if (!wrap) {
		memcpy(o, r, head);
		return head;
	}
	memcpy(o, r + head, size - head);
	memcpy(o + size - head, r, head);
	return size;
}

/* Copy `len` bytes of the ring from offset `from` on, going round its end. */
static void ring_read(const uint8_t *ring, size_t size, size_t from, size_t len, uint8_t *out)
{
	size_t first = size - from < len ? size - from : len;

	memcpy(out, ring + from, first);
	memcpy(out + first, ring, len - first);
}

void aux_ring_tail(const void *ring, size_t size, uint64_t head, size_t len, void *out)
{
	if (!ring || !out || !size || (size & (size - 1)) || len > size)
		return;
	ring_read(ring, size, ((head & (size - 1)) + size - len) & (size - 1), len, out);
}

/* Whether the ring still holds `ref` just before `head`. */
static bool tail_equal(const uint8_t *ring, size_t size, size_t head, const uint8_t *ref,
		       size_t len)
{
	size_t from = (head + size - len) & (size - 1), first = size - from < len ? size - from : len;

	return !memcmp(ring + from, ref, first) && !memcmp(ring, ref + first, len - first);
}

size_t aux_ring_copy_since(const void *ring, size_t size, uint64_t head, uint64_t prev_head,
			   const void *ref, size_t ref_len, void *out, bool *wrapped)
{
	size_t len;

	if (wrapped)
		*wrapped = false;
	if (!ring || !out || !size || (size & (size - 1)) || ref_len > size)
		return 0;
	head &= size - 1;
	prev_head &= size - 1;
	if (!ref_len || !ref || !tail_equal(ring, size, prev_head, ref, ref_len)) {
		if (wrapped)
			*wrapped = true;
		ring_read(ring, size, head, size, out);
		return size;
	}
	len = (head + size - prev_head) & (size - 1);
	ring_read(ring, size, prev_head, len, out);
	return len;
}

size_t aux_ring_snapshot(const struct perf_event_mmap_page *pc, const void *aux, bool known_wrapped,
			 void *out, bool *wrapped, uint64_t *head)
{
	uint64_t h;

	if (wrapped)
		*wrapped = false;
	if (!pc || !aux || !out)
		return 0;
	/* pairs with the kernel's store of aux_head in perf_aux_output_end() */
	h = __atomic_load_n(&pc->aux_head, __ATOMIC_ACQUIRE);
	if (pc->aux_size)
		h &= pc->aux_size - 1;
	if (head)
		*head = h;
	return aux_ring_copy(aux, pc->aux_size, h, known_wrapped, out, wrapped);
}
