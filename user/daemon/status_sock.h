/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The daemon's status socket: STATE_DIR/status.sock, a unix stream socket that only root
 * can open (0600 in the 0700 state directory) and that answers only a peer whose
 * SO_PEERCRED uid is 0. One connection, one answer: the daemon writes the status (JSON)
 * and closes; `ptbpf daemon status` reads it to the end.
 */
#ifndef PTBPF_DAEMON_STATUS_SOCK_H
#define PTBPF_DAEMON_STATUS_SOCK_H

#include <stddef.h>
#include <sys/types.h>

#define STATUS_SOCK_NAME "status.sock"

/* What a refused peer reads instead of the status (first bytes of the answer). */
#define STATUS_SOCK_REFUSED "error: "

/*
 * Bind and listen on DIR/status.sock (non-blocking, close-on-exec), mode 0600. A socket
 * left by a killed daemon is replaced; one a live daemon answers on is not: -EADDRINUSE.
 * Returns the listening fd or -errno.
 */
int status_sock__listen(const char *dir);

/* Close the listening fd (-1: nothing) and remove DIR/status.sock. */
void status_sock__close(int lfd, const char *dir);

/*
 * Accept every waiting connection on `lfd`; a root peer gets `text` (len bytes), any other
 * peer one refusal line; *refused_uid is set to the last refused peer's uid (-1: none),
 * *refused_pid to its pid. Never blocks: a peer that does not read gets what fits.
 */
void status_sock__serve(int lfd, const char *text, size_t len, uid_t *refused_uid,
			pid_t *refused_pid);

/*
 * The client: the whole answer of the daemon serving DIR, NUL-terminated, in *out (to
 * free). Returns 0 or -errno (-ENOENT/-ECONNREFUSED: no daemon; -EACCES: not root).
 */
int status_sock__query(const char *dir, char **out);

#endif /* PTBPF_DAEMON_STATUS_SOCK_H */
