// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>

#include "log.h"
#include "vdso.h"

int vdso_find(pid_t pid, uint64_t *start, uint64_t *end)
{
	char path[64], line[512];
	uint64_t lo, hi;
	int err = -ENOENT;
	FILE *f;

	if (pid)
		snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	else
		snprintf(path, sizeof(path), "/proc/self/maps");
	f = fopen(path, "re");
	if (!f)
		return errno == ENOENT ? -ESRCH : -errno;
	while (fgets(line, sizeof(line), f)) {
		size_t n = strcspn(line, "\n");

		line[n] = '\0';
		if (n < 6 || strcmp(line + n - 6, "[vdso]"))
			continue;
		if (sscanf(line, "%" SCNx64 "-%" SCNx64, &lo, &hi) != 2)
			continue;
		*start = lo;
		*end = hi;
		err = 0;
		break;
	}
	fclose(f);
	return err;
}

int vdso_read(uint8_t **bytes, size_t *size)
{
	uint64_t start, end;
	unsigned long ehdr;
	uint8_t *copy;
	int err;

	err = vdso_find(0, &start, &end);
	if (err)
		return err;
	/* The auxiliary vector names the same image; a mismatch means maps lied to us. */
	ehdr = getauxval(AT_SYSINFO_EHDR);
	if (ehdr && ehdr != start) {
		elog("vDSO: AT_SYSINFO_EHDR %#lx is not the [vdso] mapping at %#" PRIx64 "\n",
		     ehdr, start);
		return -EINVAL;
	}
	copy = malloc(end - start);
	if (!copy)
		return -ENOMEM;
	memcpy(copy, (const void *)(uintptr_t)start, end - start);
	*bytes = copy;
	*size = end - start;
	return 0;
}
