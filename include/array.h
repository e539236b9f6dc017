/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Growable arrays. */
#ifndef PTBPF_DECODER_ARRAY_H
#define PTBPF_DECODER_ARRAY_H

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

/*
 * Makes room for `need` elements of `elem` bytes in the array *p of capacity *cap
 * (elements), doubling from 16; 0 or -ENOMEM (then *p and *cap are unchanged).
 */
static inline int array_grow(void **p, uint32_t *cap, uint32_t need, size_t elem)
{
	uint32_t n = *cap ? *cap : 16;
	void *np;

	if (need <= *cap)
		return 0;
	while (n < need) {
		if (n > UINT32_MAX / 2)
			return -ENOMEM;
		n *= 2;
	}
	np = realloc(*p, (size_t)n * elem);
	if (!np)
		return -ENOMEM;
	*p = np;
	*cap = n;
	return 0;
}

#endif /* PTBPF_DECODER_ARRAY_H */
