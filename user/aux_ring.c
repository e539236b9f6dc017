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
