/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The daemon's shared pieces: JSON logging (daemon.c) and the rule runtime (rules.c). */
#ifndef PTBPF_DAEMON_DAEMON_H
#define PTBPF_DAEMON_DAEMON_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "config.h"

struct json_object;

/* Why a fire did not become a capture (the metric's `reason` label). */
enum suppress_reason {
	SUPPRESS_BUDGET = 0,
	SUPPRESS_COOLDOWN,
	SUPPRESS_SKIP,
	SUPPRESS_SPOOL_FULL,
	SUPPRESS_BACKEND_UNAVAILABLE,
	SUPPRESS_SNAPSHOT,		/* a pt fire while the rings were frozen for another */
	NR_SUPPRESS,
};
extern const char *const suppress_reason_names[NR_SUPPRESS];

/* fire -> spooled, seconds: the ptbpf_capture_seconds histogram's upper bounds */
#define NR_LATENCY_BUCKETS 10
extern const double latency_buckets[NR_LATENCY_BUCKETS];

/*
 * One log line: a JSON object on stderr ({"time","level","rule","event","msg", extra...})
 * or, with log.format text, "ptbpf: [rule] msg". `extra` (may be NULL) is consumed.
 */
void dlog_event(const char *level, const char *rule, const char *event,
		struct json_object *extra, const char *fmt, ...) __attribute__((format(printf, 5, 6)));
void dlog_set_json(bool json);

/* Remove a file or a directory tree (no symlink followed); what cannot go stays. */
void rm_tree(const char *path);

#endif /* PTBPF_DAEMON_DAEMON_H */
