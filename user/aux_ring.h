/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Overwrite-mode (snapshot) AUX rings, shared by both backends: the pt backend reads
 * the kernel's AUX area, the singlestep backend writes its own ring laid out the same
 * way (notes/kernel-pt-abi.md §2).
 */
#ifndef PTBPF_AUX_RING_H
#define PTBPF_AUX_RING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Bytes at the end of the ring that tell a wrapped ring from a fresh (zeroed) one. */
#define AUX_WRAP_PROBE_BYTES 4096

/*
 * Linearise the ring, oldest byte first, into `out` (room for `size` bytes):
 * `head` is the write offset in the ring (masked with size-1 here). The ring has
 * wrapped if `known_wrapped`, or if a byte at or after `head` within its last
 * AUX_WRAP_PROBE_BYTES is non-zero (rings start zeroed): then [head,size) + [0,head)
 * is copied, else [0,head).
 * Returns the number of bytes copied; *wrapped says which case it was.
 * `size` must be a power of two; with a NULL ring or out, or a size that is not, nothing
 * is copied and 0 returned.
 */
size_t aux_ring_copy(const void *ring, size_t size, uint64_t head, bool known_wrapped, void *out,
		     bool *wrapped);

struct perf_event_mmap_page;

/*
 * aux_ring_copy() of a kernel AUX area: `aux` is the mapping at pc->aux_offset, of
 * pc->aux_size bytes; aux_head is read from the user page (with acquire ordering, after
 * the event was disabled: in overwrite mode it is an offset in the ring and is only
 * published when PT is stopped with an update, notes/kernel-pt-abi.md §2.2). `*head`
 * (optional) gets the offset used.
 */
size_t aux_ring_snapshot(const struct perf_event_mmap_page *pc, const void *aux, bool known_wrapped,
			 void *out, bool *wrapped, uint64_t *head);

#endif /* PTBPF_AUX_RING_H */
