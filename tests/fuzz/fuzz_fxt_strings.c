// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * libFuzzer harness: the FXT writer's string handling. The input is a flags byte (bit 0:
 * text output, bit 1: gzip) and NUL-separated strings, which become process, thread,
 * slice, instant and argument names and string argument values, interned and written;
 * every interned string must read back as valid UTF-8 of at most FXT_MAX_NAME_LEN
 * bytes (README: "Names in the FXT and text outputs"), else the harness aborts.
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"
#include "fxt.h"
#include "../tools/utf8_check.h"

#define MAX_STRINGS 64

static void check(const char *s)
{
	size_t n = strlen(s);

	if (n > FXT_MAX_NAME_LEN || utf8_invalid_at((const uint8_t *)s, n) >= 0)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fxt_opts o = { .time_base = 1000 };
	const char *strs[MAX_STRINGS];
	char sane[FXT_MAX_NAME_LEN + 1];
	struct fxt_writer *w;
	unsigned n = 0, i;
	char *buf;

	if (!size)
		return 0;
	o.text = data[0] & 1;
	o.gzip = data[0] & 2;
	/* the strings, NUL-terminated in a copy (the last one may run to the end) */
	buf = malloc(size);
	if (!buf)
		return 0;
	memcpy(buf, data + 1, size - 1);
	buf[size - 1] = '\0';
	for (i = 0; i < size - 1 && n < MAX_STRINGS; i += strlen(buf + i) + 1)
		strs[n++] = buf + i;
	if (!n)
		strs[n++] = "";
	if (fxt_writer__open(&w, "/dev/null", &o)) {
		free(buf);
		return 0;
	}
	fxt_process(w, 1, strs[0]);
	fxt_thread(w, 1, 2, strs[n - 1]);
	for (i = 0; i < n; i++) {
		const char *s = strs[i], *next = strs[(i + 1) % n];
		struct fxt_arg args[2] = {
			{ .name = next, .type = FXT_ARG_STRING, .s = s },
			{ .name = s, .type = FXT_ARG_UINT64, .u = i },
		};
		uint32_t id, th;

		if (!fxt_intern(w, s, &id))
			check(fxt_string(w, id));
		fxt_sanitize(s, sane, NULL, NULL);
		check(sane);
		fxt_begin(w, 1, 2, next, s, 1000 + i, args, 2);
		fxt_instant(w, 1, 2 + i % 3, s, next, 1000 + i, args, 1);
		if (!fxt_thread_id(w, 1, 3 + i, &th) && !fxt_intern(w, next, &id))
			fxt_complete_id(w, th, id, id, 1000 + i, 2000 + i, args, 2);
		fxt_thread(w, 1, 3 + i, s);
	}
	for (i = n; i-- > 0;)
		fxt_end(w, 1, 2, strs[(i + 1) % n], strs[i], 3000 + i, NULL, 0);
	fxt_writer__close(w);
	free(buf);
	return 0;
}
