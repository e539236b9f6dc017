// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <stdio.h>

#include "log.h"

int ptbpf_log_level;

static log_sink_fn log_sink;
static void *log_sink_ctx;

void log_set_sink(log_sink_fn fn, void *ctx)
{
	log_sink = fn;
	log_sink_ctx = ctx;
}

void log_get_sink(log_sink_fn *fn, void **ctx)
{
	*fn = log_sink;
	*ctx = log_sink_ctx;
}

void log_vprintf(int level, const char *fmt, va_list ap)
{
	if (log_sink) {
		char msg[1024];

		vsnprintf(msg, sizeof(msg), fmt, ap);
		log_sink(log_sink_ctx, level, msg);
		return;
	}
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
