// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Helpers of the harnesses, and the log sink they link instead of decoder/log.c: every
 * message is formatted (so a bad format argument is still caught by the sanitizers),
 * then dropped, so that each of the millions of inputs does not print its error line.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fuzz_common.h"
#include "log.h"

#define SLOTS 4

int ptbpf_log_level;

void log_vprintf(int level, const char *fmt, va_list ap)
{
	char buf[1024];

	vsnprintf(buf, sizeof(buf), fmt, ap);
	if (getenv("PTBPF_FUZZ_LOG"))
		fprintf(stderr, "%s%s", level == LOG_ERROR ? "ptbpf: " : "", buf);
}

void log_printf(int level, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_vprintf(level, fmt, ap);
	va_end(ap);
}

const char *fuzz_file(int slot, const void *data, size_t size)
{
	static int fds[SLOTS] = { -1, -1, -1, -1 };
	static char paths[SLOTS][32];

	if (slot < 0 || slot >= SLOTS)
		abort();
	if (fds[slot] < 0) {
		fds[slot] = memfd_create("ptbpf-fuzz", MFD_CLOEXEC);
		if (fds[slot] < 0) {
			perror("memfd_create");
			abort();
		}
		snprintf(paths[slot], sizeof(paths[slot]), "/proc/self/fd/%d", fds[slot]);
	}
	if (ftruncate(fds[slot], 0) ||
	    (size && pwrite(fds[slot], data, size, 0) != (ssize_t)size)) {
		perror("memfd write");
		abort();
	}
	return paths[slot];
}

const char *fuzz_data(const char *name)
{
	static char paths[8][4096];
	static int next;
	const char *dir = getenv("PTBPF_FUZZ_DATA");
	char *p = paths[next++ % 8];

	snprintf(p, sizeof(paths[0]), "%s/%s", dir ? dir : "tests/fuzz/data", name);
	if (access(p, R_OK)) {
		fprintf(stderr, "fuzz: %s: %s (set PTBPF_FUZZ_DATA to tests/fuzz/data)\n", p,
			strerror(errno));
		exit(2);
	}
	return p;
}
