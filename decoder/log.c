// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <stdio.h>

#include "log.h"

int ptbpf_log_level;

void log_vprintf(int level, const char *fmt, va_list ap)
{
	if (level == LOG_ERROR)
		fputs("ptbpf: ", stderr);
	vfprintf(stderr, fmt, ap);
}

void log_printf(int level, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_vprintf(level, fmt, ap);
	va_end(ap);
}
