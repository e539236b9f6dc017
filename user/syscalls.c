// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <stddef.h>
#include <string.h>

#include "array.h"
#include "syscalls.h"

static const struct {
	const char *name;
	int nr;
} syscall_table[] = {
#include "syscall_names.h"
};

#define NR_SYSCALLS (ARRAY_SIZE(syscall_table))

int syscall_nr(const char *name)
{
	size_t i;

	if (!name)
		return -EINVAL;
	for (i = 0; i < NR_SYSCALLS; i++)
		if (!strcmp(syscall_table[i].name, name))
			return syscall_table[i].nr;
	return -ENOENT;
}

const char *syscall_name(int nr)
{
	size_t i;

	for (i = 0; i < NR_SYSCALLS; i++)
		if (syscall_table[i].nr == nr)
			return syscall_table[i].name;
	return NULL;
}

/* Edit distance, capped: names are short, so the O(n*m) table is small. */
static int edit_distance(const char *a, const char *b)
{
	int row[64], i, j, prev, tmp, la = strlen(a), lb = strlen(b);

	if (la >= 63 || lb >= 63)
		return 64;
	for (j = 0; j <= lb; j++)
		row[j] = j;
	for (i = 1; i <= la; i++) {
		prev = row[0];
		row[0] = i;
		for (j = 1; j <= lb; j++) {
			tmp = row[j];
			row[j] = prev + (a[i - 1] != b[j - 1]);
			if (row[j - 1] + 1 < row[j])
				row[j] = row[j - 1] + 1;
			if (tmp + 1 < row[j])
				row[j] = tmp + 1;
			prev = tmp;
		}
	}
	return row[lb];
}

int syscall_suggest(const char *name, const char **out, int max)
{
	int n = 0, d;
	size_t i;

	if (!name || !out || max <= 0)
		return 0;
	/* Closest first: distance 1, then 2, then names that contain the input. */
	for (d = 1; d <= 3 && n < max; d++) {
		for (i = 0; i < NR_SYSCALLS && n < max; i++) {
			const char *s = syscall_table[i].name;
			int dist = edit_distance(name, s);

			if (d < 3 ? dist == d : dist > 2 && strstr(s, name) != NULL)
				out[n++] = s;
		}
	}
	return n;
}
