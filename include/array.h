/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Fixed arrays' length and growable arrays, for every room. */
#ifndef PTBPF_ARRAY_H
#define PTBPF_ARRAY_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Elements of a true array (not a pointer). libiberty.h has the same one. */
#ifndef ARRAY_SIZE
#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#endif

/*
 * Makes room for `need` elements of `elem` bytes in the array *p of capacity *cap
 * (elements), doubling from 16; the new elements are zeroed, so a caller may rely on
 * fields it has not set yet. 0 or -ENOMEM (then *p and *cap are unchanged).
 */
static inline int array_grow_sz(void **p, size_t *cap, size_t need, size_t elem)
{
	size_t n = *cap ? *cap : 16;
	void *np;

	if (need <= *cap)
		return 0;
	while (n < need) {
		if (n > SIZE_MAX / 2 / elem)
			return -ENOMEM;
		n *= 2;
	}
	np = realloc(*p, n * elem);
	if (!np)
		return -ENOMEM;
	memset((char *)np + *cap * elem, 0, (n - *cap) * elem);
	*p = np;
	*cap = n;
	return 0;
}

/* The same for a 32-bit capacity, as the decoder's per-thread arrays keep it. */
static inline int array_grow(void **p, uint32_t *cap, uint32_t need, size_t elem)
{
	size_t c = *cap;
	int err;

	if (need <= *cap)
		return 0;
	err = array_grow_sz(p, &c, need, elem);
	if (err)
		return err;
	*cap = c > UINT32_MAX ? UINT32_MAX : (uint32_t)c;	/* need fits: it is a uint32_t */
	return 0;
}

#endif /* PTBPF_ARRAY_H */
