// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fxtcheck_run.h"

/* FXTCHECK (tests/run.sh sets it), else the one built beside this test binary. */
const char *fxtcheck_path(void)
{
	static char beside[PATH_MAX];
	const char *p = getenv("FXTCHECK");
	ssize_t n;
	char *slash;

	if (p && *p)
		return access(p, X_OK) ? NULL : p;
	n = readlink("/proc/self/exe", beside, sizeof(beside) - sizeof("/fxtcheck"));
	if (n <= 0)
		return NULL;
	beside[n] = 0;
	slash = strrchr(beside, '/');
	if (!slash)
		return NULL;
	strcpy(slash, "/fxtcheck");
	return access(beside, X_OK) ? NULL : beside;
}

int fxtcheck_run(const char *file, const char *flags, char **out)
{
	const char *tool = fxtcheck_path();
	size_t len = 0, cap = 0;
	char *cmd, *buf = NULL;
	FILE *f;
	int st;

	if (out)
		*out = NULL;
	if (!tool || asprintf(&cmd, "'%s' %s '%s'", tool, flags, file) < 0)
		return -1;
	f = popen(cmd, "r");
	free(cmd);
	if (!f)
		return -1;
	for (;;) {
		size_t n;

		if (len + 4096 + 1 > cap) {
			char *nb = realloc(buf, cap = (cap ? cap * 2 : 65536));

			if (!nb)
				break;
			buf = nb;
		}
		n = fread(buf + len, 1, cap - len - 1, f);
		if (!n)
			break;
		len += n;
	}
	if (buf)
		buf[len] = 0;
	st = pclose(f);
	if (out)
		*out = buf ? buf : strdup("");
	else
		free(buf);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

void test_tmp_path(char *buf, size_t size, const char *tag, const char *ext)
{
	static unsigned n;
	const char *dir = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";

	snprintf(buf, size, "%s/ptbpf-%s-%d-%u.%s", dir, tag, (int)getpid(), n++, ext);
}

char *test_read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	long n;

	if (!f)
		return NULL;
	if (fseek(f, 0, SEEK_END) || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET))
		goto out;
	buf = malloc((size_t)n + 1);
	if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
		free(buf);
		buf = NULL;
		goto out;
	}
	if (buf) {
		buf[n] = 0;
		if (len)
			*len = (size_t)n;
	}
out:
	fclose(f);
	return buf;
}

int test_have_dev_full(void)
{
	if (!access("/dev/full", W_OK))
		return 1;
	printf("SKIP: no writable /dev/full\n");
	return 0;
}

/* The text of string ref `ref` (indexed or inline at *p, which it advances). */
static const char *ref_text(char *const *table, uint16_t ref, const uint8_t **p, char *buf)
{
	size_t n = ref & 0x7fff;

	if (!ref)
		return "";
	if (!(ref & 0x8000))
		return table[ref] ? table[ref] : "";
	memcpy(buf, *p, n);
	buf[n] = 0;
	*p += (n + 7) / 8 * 8;
	return buf;
}

int test_fxt_count_arg(const void *data, size_t len, const char *arg)
{
	const uint8_t *p = data, *end = p + len;
	char *table[0x8000] = { 0 }, buf[0x8000];
	int count = 0, i;

	while (p + 8 <= end) {
		uint64_t h, a;
		const uint8_t *q = p + 8, *next;
		unsigned size, nargs, k;

		memcpy(&h, p, 8);
		size = (h >> 4) & 0xfff;
		if (!size)
			break;
		next = p + size * 8;
		if ((h & 0xf) == 2) {		/* string record */
			unsigned idx = (h >> 16) & 0x7fff, n = (h >> 32) & 0x7fff;

			free(table[idx]);
			table[idx] = strndup((const char *)q, n);
		} else if ((h & 0xf) == 4) {	/* event */
			nargs = (h >> 20) & 0xf;
			q += 8;			/* timestamp */
			if (!((h >> 24) & 0xff))
				q += 16;	/* inline thread */
			ref_text(table, (h >> 32) & 0xffff, &q, buf);
			ref_text(table, (h >> 48) & 0xffff, &q, buf);
			for (k = 0; k < nargs && q + 8 <= next; k++) {
				const uint8_t *an;

				memcpy(&a, q, 8);
				an = q + 8;
				if (!strcmp(ref_text(table, (a >> 16) & 0xffff, &an, buf), arg))
					count++;
				q += ((a >> 4) & 0xfff) * 8;
			}
		}
		p = next;
	}
	for (i = 0; i < 0x8000; i++)
		free(table[i]);
	return count;
}
