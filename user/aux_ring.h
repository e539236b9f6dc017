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

/*
 * aux_ring_copy() of a ring that was kept across a snapshot (disabled and re-enabled,
 * not reallocated: it is no longer zeroed, so the zero test above cannot tell). The
 * writer went on from `prev_head`, the head of the previous snapshot; `ref` holds the
 * `ref_len` bytes the ring had just before `prev_head` then. If they are still there, the
 * writer has not come round to them: only what it wrote since, from `prev_head` to
 * `head`, is copied (*wrapped false); else the whole ring, oldest first from `head`
 * (*wrapped true). perf's snapshot mode decides the same way with its reference buffer
 * (tools/perf/arch/x86/util/intel-pt.c: intel_pt_snapshot_ref_buf_size(),
 * intel_pt_compare_ref(), intel_pt_find_snapshot()). With no reference (ref_len 0), the
 * whole ring. Returns the bytes copied; 0 for a NULL ring or out or a size that is not a
 * power of two, or ref_len > size.
 */
size_t aux_ring_copy_since(const void *ring, size_t size, uint64_t head, uint64_t prev_head,
			   const void *ref, size_t ref_len, void *out, bool *wrapped);

/* The `len` bytes of the ring just before `head` (len <= size), into `out`, for the above. */
void aux_ring_tail(const void *ring, size_t size, uint64_t head, size_t len, void *out);

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
