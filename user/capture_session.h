/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * What the capture command and --dry-run share (user/capture_cmd.c, user/dryrun.c): the
 * target (spawned and held before exec, attached with -p, or none for a system-wide dry
 * run), the triggers, and the ways a session ends besides a fire: Ctrl-C, SIGTERM or
 * SIGHUP (read from a signalfd, so that the end is orderly and the target let go),
 * --duration (a timerfd), the target's exit. Each command keeps its own loop: the
 * capture's backend polls these fds between steps, the dry run sleeps in epoll.
 */
#ifndef PTBPF_CAPTURE_SESSION_H
#define PTBPF_CAPTURE_SESSION_H

#include <stdbool.h>

#include "cli.h"
#include "ptdecode.h"
#include "target.h"
#include "triggers.h"

/* Why a session stopped (or paused, for a fire). */
enum session_stop {
	STOP_NONE,		/* still running */
	STOP_TRIGGER,		/* a BPF trigger fired */
	STOP_SIGNAL,		/* Ctrl-C / SIGTERM / SIGHUP: capture_session.signo */
	STOP_EXIT,		/* the target exited */
	STOP_DURATION,		/* --duration elapsed */
};

struct capture_session {
	const struct capture_opts *opts;
	struct target *target;		/* NULL: no target (system-wide dry run) */
	struct triggers *trig;		/* NULL: not armed yet, or released */
	int sfd;			/* signalfd of SIGINT, SIGTERM, SIGHUP; -1 before watch */
	int tfd;			/* --duration's timerfd; -1 without */
	int fds[3];			/* sfd, tfd, the trigger ring buffer: what ends a wait */
	int nr_fds;
	enum session_stop reason;	/* STOP_NONE while running */
	int signo;			/* reason STOP_SIGNAL: which */
};

/* An empty session over the command line `opts` (kept, not copied). */
void capture_session__init(struct capture_session *s, const struct capture_opts *opts);

/*
 * The target: `opts->cmd` spawned (held before exec until target__release()), else
 * `opts->pid` attached, else none when `optional` (a dry run watches the whole system).
 * 0 or -errno, said in one line.
 */
int capture_session__start_target(struct capture_session *s, bool optional);

/* The triggers of the command line, attached in `mode`. 0 or -errno, said. */
int capture_session__arm(struct capture_session *s, enum trigger_attach_mode mode);

/*
 * After the target's fork (it must not inherit blocked signals): block the stop signals
 * into a signalfd, start the --duration timer, and list in fds what ends a wait. The
 * triggers, if any, must be armed before. 0 or -errno.
 */
int capture_session__watch(struct capture_session *s);

/*
 * Whether readable `fd` ends the session: the signalfd (reason STOP_SIGNAL, signo read)
 * or the timer (STOP_DURATION). Other fds are the caller's: false.
 */
bool capture_session__stop_on(struct capture_session *s, int fd);

/* Looks at the signalfd and timer without waiting: true (and the reason) if one ended it. */
bool capture_session__poll_stop(struct capture_session *s);

/* Detach the triggers (the backend, if any, first let the target go). NULL-safe. */
void capture_session__release_triggers(struct capture_session *s);

/*
 * How the capture command decodes a snapshot to `fxt`: only the target's threads
 * (`*target_pid`'s, and with --follow-forks its children's: a CPU's trace of other
 * processes is skipped), all of them with --system-wide (a trigger may fire anywhere);
 * -j, --kernel, --no-fast and --verify-fast as given. `target_pid` must outlive it.
 */
struct decode_opts capture_session__decode_opts(const struct capture_opts *opts,
						const uint32_t *target_pid, const char *fxt);

/* Frees what is left: triggers, target, fds. */
void capture_session__close(struct capture_session *s);

#endif /* PTBPF_CAPTURE_SESSION_H */
