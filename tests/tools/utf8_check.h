/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Strict UTF-8 (RFC 3629) for the test side: the FXT validator (fxtcheck.c) and the FXT
 * strings fuzz harness check the writer's output with it. Written apart from the writer's
 * own sanitiser (decoder/fxt.c) on purpose: an oracle that shared the writer's code would
 * share its mistakes.
 */
#ifndef PTBPF_TESTS_UTF8_CHECK_H
#define PTBPF_TESTS_UTF8_CHECK_H

#include <stddef.h>
#include <stdint.h>

/* Where s[0..n) stops being strict UTF-8 (an overlong form, a surrogate, a code point above
 * U+10FFFF, a cut or bad sequence), or -1 when all of it is valid. */
static inline long utf8_invalid_at(const uint8_t *s, size_t n)
{
	size_t i = 0;

	while (i < n) {
		uint8_t c = s[i];
		size_t len, k;
		uint32_t cp;

		if (c < 0x80) {
			i++;
			continue;
		}
		if (c >= 0xc2 && c <= 0xdf)
			len = 2, cp = c & 0x1f;
		else if (c >= 0xe0 && c <= 0xef)
			len = 3, cp = c & 0x0f;
		else if (c >= 0xf0 && c <= 0xf4)
			len = 4, cp = c & 0x07;
		else
			return (long)i;
		if (i + len > n)
			return (long)i;
		for (k = 1; k < len; k++) {
			if ((s[i + k] & 0xc0) != 0x80)
				return (long)i;
			cp = cp << 6 | (s[i + k] & 0x3f);
		}
		if ((len == 3 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) ||
		    (len == 4 && (cp < 0x10000 || cp > 0x10ffff)))
			return (long)i;
		i += len;
	}
	return -1;
}

#endif
