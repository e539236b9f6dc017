/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * A perf event's data ring (the pages after its user page, normal mode: the kernel
 * writes at data_head, we consume up to it and publish data_tail), the time
 * conversion in its user page, and a bounded history of the records drained from it.
 *
 * The pt backend drains each CPU's PT data ring (sideband: MMAP2, COMM, SWITCH_CPU_WIDE,
 * AUX, LOST...) whenever it is half full, into a history that drops its oldest records
 * first, so that a snapshot has the newest sideband however long the run was.
 */
#ifndef PTBPF_DATA_RING_H
#define PTBPF_DATA_RING_H

#include <stddef.h>
#include <stdint.h>
#include <linux/perf_event.h>

#include "perfdata.h"

/* Largest record the kernel writes (header.size is 16 bits). */
#define DATA_RING_MAX_RECORD 65536

/* Called with one whole record (contiguous, 8-byte aligned); < 0 stops with that error. */
typedef int (*data_ring_cb)(void *ctx, const struct perf_event_header *rec);

/*
 * Hand every record between the user page's data_tail and data_head to `cb`, oldest
 * first, then publish data_tail = data_head. `data` is the ring (data_size bytes, a power
 * of two): the mapping at pc->data_offset. A record that wraps past the end of the ring
 * is reassembled, so cb always sees it whole. Returns the number of records, cb's
 * negative return (the records before it stay consumed), or -EINVAL if the ring holds
 * a record that cannot be (size < 8, or more than what was written): everything up to
 * data_head is then skipped, since nothing after a bad header can be parsed.
 */
int data_ring_drain(struct perf_event_mmap_page *pc, const void *data, uint64_t data_size,
		    data_ring_cb cb, void *ctx);

/* Bytes written and not yet consumed. */
uint64_t data_ring_pending(const struct perf_event_mmap_page *pc);

/*
 * The TSC <-> perf time conversion of the user page, read under its seqlock as perf's
 * perf_read_tsc_conversion() does, as a PD_RECORD_TIME_CONV record. -EOPNOTSUPP when
 * the kernel does not provide it (cap_user_time_zero = 0: timeless decoding only).
 */
int data_ring_time_conv(const struct perf_event_mmap_page *pc, struct pd_record *out);

/*
 * History of raw records, `capacity` bytes: when full, the oldest records go first.
 * record_fifo__new() returns NULL with errno set; record_fifo__free(NULL) is fine.
 */
struct record_fifo;

struct record_fifo *record_fifo__new(size_t capacity);
void record_fifo__free(struct record_fifo *f);
/* Copy one record in. Returns how many old records were dropped, or -E2BIG / -EINVAL. */
int record_fifo__push(struct record_fifo *f, const struct perf_event_header *rec);
/* Each record, oldest first; stops at cb's negative return. Returns the count or it. */
int record_fifo__for_each(const struct record_fifo *f, data_ring_cb cb, void *ctx);
/* Records held, and records dropped since creation. */
size_t record_fifo__count(const struct record_fifo *f);
uint64_t record_fifo__dropped(const struct record_fifo *f);
void record_fifo__clear(struct record_fifo *f);

/* A record_fifo__push() shaped callback for data_ring_drain(): ctx is the fifo. */
int record_fifo__push_cb(void *fifo, const struct perf_event_header *rec);

#endif /* PTBPF_DATA_RING_H */
