/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Leveled logging shared by user/ and decoder/ (retsnoop style):
 *   elog  always, stderr, prefixed "ptbpf: "  (errors and one-line notices)
 *   vlog  -v      stderr                     (what ptbpf is doing)
 *   dlog  -vv     stderr                     (details, libbpf warnings)
 *   ddlog -vvv    stderr                     (libbpf debug output)
 */
#ifndef PTBPF_LOG_H
#define PTBPF_LOG_H

#include <stdarg.h>

enum log_level {
	LOG_ERROR = 0,
	LOG_VERBOSE = 1,
	LOG_DEBUG = 2,
	LOG_DEBUG_EXTRA = 3,
};

/* Current level, 0 by default; set from -v/-vv/-vvv. */
extern int ptbpf_log_level;

void log_vprintf(int level, const char *fmt, va_list ap);
/*
 * Send every message to `fn` instead of stderr (NULL: back to stderr). The daemon turns
 * them into JSON log lines and collects a configuration's errors this way.
 */
typedef void (*log_sink_fn)(void *ctx, int level, const char *msg);
void log_set_sink(log_sink_fn fn, void *ctx);
/* The sink in place (NULL: stderr), to put it back after a temporary one. */
void log_get_sink(log_sink_fn *fn, void **ctx);
void log_printf(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define elog(...) log_printf(LOG_ERROR, __VA_ARGS__)
#define vlog(...)                                                                                  \
	do {                                                                                       \
		if (ptbpf_log_level >= LOG_VERBOSE)                                                \
			log_printf(LOG_VERBOSE, __VA_ARGS__);                                      \
	} while (0)
#define dlog(...)                                                                                  \
	do {                                                                                       \
		if (ptbpf_log_level >= LOG_DEBUG)                                                  \
			log_printf(LOG_DEBUG, __VA_ARGS__);                                        \
	} while (0)
#define ddlog(...)                                                                                 \
	do {                                                                                       \
		if (ptbpf_log_level >= LOG_DEBUG_EXTRA)                                            \
			log_printf(LOG_DEBUG_EXTRA, __VA_ARGS__);                                  \
	} while (0)

#endif /* PTBPF_LOG_H */
