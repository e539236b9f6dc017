/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Capstone, loaded when first asked for (decoder/capstone_lazy.c, include/lazylib.h),
 * not when ptbpf starts: its 77,000 relocations cost every run ~10 ms of CPU. The
 * singlestep backend and the decoder's fast path use it through these pointers.
 */
#ifndef PTBPF_CAPSTONE_LAZY_H
#define PTBPF_CAPSTONE_LAZY_H

#include <capstone/capstone.h>

struct capstone_fns {
	__typeof__(cs_open) *open;
	__typeof__(cs_option) *option;
	__typeof__(cs_malloc) *malloc;
	__typeof__(cs_free) *free;
	__typeof__(cs_close) *close;
	__typeof__(cs_strerror) *strerror;
	__typeof__(cs_disasm_iter) *disasm_iter;
};

/* The library's functions, loaded on the first call (thread-safe); NULL (said on
 * stderr) when it cannot be loaded. */
const struct capstone_fns *capstone_lazy(void);

#endif /* PTBPF_CAPSTONE_LAZY_H */
