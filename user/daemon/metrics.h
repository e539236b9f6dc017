/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Metrics out of the daemon: Prometheus text written atomically into node_exporter's
 * textfile directory, and served over HTTP (libmicrohttpd, its own thread) at /metrics,
 * with /healthz (the daemon's loop is alive) and /readyz (configuration loaded, rules
 * armed). The daemon's loop renders the text; the server hands out the last rendering.
 */
#ifndef PTBPF_DAEMON_METRICS_H
#define PTBPF_DAEMON_METRICS_H

#include <stdbool.h>
#include <stddef.h>

struct metrics_server;

/* Listen on "ADDRESS:PORT". Returns 0 or -errno after one error line. */
int metrics_server__start(const char *listen, struct metrics_server **out);
/* Publish a rendering and the readiness; copies `text`. */
void metrics_server__publish(struct metrics_server *m, const char *text, size_t len, bool ready);
/* Stop serving; NULL-safe. */
void metrics_server__stop(struct metrics_server *m);

/* DIR/ptbpf.prom, through a temp file renamed into place (node_exporter never sees half). */
int metrics_write_textfile(const char *dir, const char *text, size_t len);

#endif /* PTBPF_DAEMON_METRICS_H */
