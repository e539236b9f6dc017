/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The host's 64-bit vDSO. Its code is the same in every 64-bit process on a given
 * kernel, so the capturing tool saves its own copy with the capture and the decoder
 * loads it at each process's [vdso] address (notes/kernel-pt-abi.md §7).
 */
#ifndef PTBPF_VDSO_H
#define PTBPF_VDSO_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/*
 * Copy this process's [vdso] mapping (the whole ELF image) into a malloc'ed buffer.
 * Returns 0, -ENOENT if the process has no vDSO, or -errno.
 */
int vdso_read(uint8_t **bytes, size_t *size);

/*
 * Where [vdso] is mapped in process `pid` (0: this process), from /proc/PID/maps.
 * Returns 0, -ENOENT if it has none, or -errno (-ESRCH: no such process).
 */
int vdso_find(pid_t pid, uint64_t *start, uint64_t *end);

#endif /* PTBPF_VDSO_H */
