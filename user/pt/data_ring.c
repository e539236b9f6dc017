// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "data_ring.h"

uint64_t data_ring_pending(const struct perf_event_mmap_page *pc)
{
	uint64_t head = __atomic_load_n(&pc->data_head, __ATOMIC_ACQUIRE);

	return head - pc->data_tail;
}

int data_ring_drain(struct perf_event_mmap_page *pc, const void *data, uint64_t data_size,
		    data_ring_cb cb, void *ctx)
{
	const uint8_t *ring = data;
	uint64_t head, tail, mask = data_size - 1;
	uint8_t *bounce = NULL;
	int n = 0, err = 0;

	if (!pc || !data || !cb || !data_size || (data_size & mask))
		return -EINVAL;
	/* pairs with the kernel's smp_store_release() of data_head */
	head = __atomic_load_n(&pc->data_head, __ATOMIC_ACQUIRE);
	tail = pc->data_tail;
	if (head - tail > data_size)
		return -EINVAL;

	while (tail < head) {
		struct perf_event_header h;
		uint64_t off = tail & mask, first;
		const struct perf_event_header *rec;

		if (head - tail < sizeof(h)) {
			err = -EINVAL;
			break;
		}
		/* the header itself may straddle the end */
		first = data_size - off;
		if (first >= sizeof(h)) {
			memcpy(&h, ring + off, sizeof(h));
		} else {
			memcpy(&h, ring + off, first);
			memcpy((uint8_t *)&h + first, ring, sizeof(h) - first);
		}
		if (h.size < sizeof(h) || h.size > head - tail) {
			err = -EINVAL;
			break;
		}
		if (h.size <= first && !(off & 7)) {
			rec = (const void *)(ring + off);
		} else {
			if (!bounce) {
				bounce = malloc(DATA_RING_MAX_RECORD);
				if (!bounce) {
					err = -ENOMEM;
					break;
				}
			}
			if (h.size <= first) {
				memcpy(bounce, ring + off, h.size);
			} else {
				memcpy(bounce, ring + off, first);
				memcpy(bounce + first, ring, h.size - first);
			}
			rec = (const void *)bounce;
		}
		err = cb(ctx, rec);
		if (err < 0)
			break;
		err = 0;
		tail += h.size;
		n++;
	}
	free(bounce);
	/*
	 * Records before a callback's error are consumed. After a corrupt header nothing can
	 * be parsed, so everything up to head is dropped rather than read again next time.
	 */
	__atomic_store_n(&pc->data_tail, err == -EINVAL ? head : tail, __ATOMIC_RELEASE);
	return err < 0 ? err : n;
}

int data_ring_time_conv(const struct perf_event_mmap_page *pc, struct pd_record *out)
{
	uint32_t seq;
	int tries = 0;

	if (!pc || !out)
		return -EINVAL;
	memset(out, 0, sizeof(*out));
	out->type = PD_RECORD_TIME_CONV;
	do {
		seq = __atomic_load_n(&pc->lock, __ATOMIC_ACQUIRE);
		out->time_conv.time_shift = pc->time_shift;
		out->time_conv.time_mult = pc->time_mult;
		out->time_conv.time_zero = pc->time_zero;
		out->time_conv.time_cycles = pc->time_cycles;
		out->time_conv.time_mask = pc->time_mask;
		out->time_conv.cap_user_time_zero = pc->cap_user_time_zero;
		out->time_conv.cap_user_time_short = pc->cap_user_time_short;
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		/* an odd or changed sequence: the kernel was updating the page */
	} while ((__atomic_load_n(&pc->lock, __ATOMIC_RELAXED) != seq || (seq & 1)) &&
		 ++tries < 1000);
	if (tries >= 1000)
		return -EBUSY;
	return out->time_conv.cap_user_time_zero ? 0 : -EOPNOTSUPP;
}

/*
 * The history: records stored back to back in buf[start, end). When a push does not
 * fit after `end`, the oldest records are dropped until a quarter of the buffer is free
 * and the rest is moved to the front, so each byte is moved a bounded number of times.
 */
struct record_fifo {
	uint8_t *buf;
	size_t cap;
	size_t start, end;
	size_t count;
	uint64_t dropped;
};

struct record_fifo *record_fifo__new(size_t capacity)
{
	struct record_fifo *f;

	if (capacity < DATA_RING_MAX_RECORD) {
		errno = EINVAL;
		return NULL;
	}
	f = calloc(1, sizeof(*f));
	if (!f)
		return NULL;
	f->buf = malloc(capacity);
	if (!f->buf) {
		free(f);
		return NULL;
	}
	f->cap = capacity;
	return f;
}

void record_fifo__free(struct record_fifo *f)
{
	if (!f)
		return;
	free(f->buf);
	free(f);
}

static size_t rec_size(const uint8_t *p)
{
	const struct perf_event_header *h = (const void *)p;

	return h->size;
}

int record_fifo__push(struct record_fifo *f, const struct perf_event_header *rec)
{
	int dropped = 0;

	if (!f || !rec || rec->size < sizeof(*rec))
		return -EINVAL;
	if (rec->size > f->cap / 2)
		return -E2BIG;
	if (f->end + rec->size > f->cap) {
		size_t want = rec->size > f->cap / 4 ? rec->size : f->cap / 4;

		while (f->count && f->cap - (f->end - f->start) < want) {
			f->start += rec_size(f->buf + f->start);
			f->count--;
			f->dropped++;
			dropped++;
		}
		memmove(f->buf, f->buf + f->start, f->end - f->start);
		f->end -= f->start;
		f->start = 0;
	}
	memcpy(f->buf + f->end, rec, rec->size);
	f->end += rec->size;
	f->count++;
	return dropped;
}

int record_fifo__push_cb(void *fifo, const struct perf_event_header *rec)
{
	int ret = record_fifo__push(fifo, rec);

	return ret < 0 ? ret : 0;
}

int record_fifo__for_each(const struct record_fifo *f, data_ring_cb cb, void *ctx)
{
	size_t off;
	int n = 0, err;

	if (!f || !cb)
		return -EINVAL;
	for (off = f->start; off < f->end; off += rec_size(f->buf + off)) {
		err = cb(ctx, (const void *)(f->buf + off));
		if (err < 0)
			return err;
		n++;
	}
	return n;
}

size_t record_fifo__count(const struct record_fifo *f)
{
	return f ? f->count : 0;
}

uint64_t record_fifo__dropped(const struct record_fifo *f)
{
	return f ? f->dropped : 0;
}

void record_fifo__clear(struct record_fifo *f)
{
	if (!f)
		return;
	f->start = f->end = 0;
	f->count = 0;
}
