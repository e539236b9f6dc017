/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Open a trace in the Perfetto UI: serve it once on 127.0.0.1:PORT for ui.perfetto.dev. */
#ifndef PTBPF_OPEN_UI_H
#define PTBPF_OPEN_UI_H

#define PERFETTO_UI_PORT 9001	/* the origin ui.perfetto.dev accepts ?url= traces from */

/* Returns 0 once the UI fetched the file whole, -EINTR on Ctrl-C, -EADDRINUSE. */
int perfetto_open(const char *path, unsigned port);

#endif /* PTBPF_OPEN_UI_H */
