// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The lifecycle the capture command and --dry-run share: see capture_session.h. */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "capture_session.h"

void capture_session__init(struct capture_session *s, const struct capture_opts *opts)
{
	*s = (struct capture_session){ .opts = opts, .sfd = -1, .tfd = -1 };
}

int capture_session__start_target(struct capture_session *s, bool optional)
{
	const struct capture_opts *opts = s->opts;

	if (opts->cmd)
		return target__spawn(opts->cmd, &s->target);
	if (opts->pid || !optional)
		return target__attach_pid(opts->pid, &s->target);
	return 0;
}

int capture_session__arm(struct capture_session *s, enum trigger_attach_mode mode)
{
	int err;

	err = triggers__new(s->opts, s->target ? s->target->pid : 0, mode, &s->trig);
	return err ?: triggers__attach(s->trig);
}

int capture_session__watch(struct capture_session *s)
{
	sigset_t mask;

	sigemptyset(&mask);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGHUP);
	if (sigprocmask(SIG_BLOCK, &mask, NULL))
		return -errno;
	s->sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	if (s->sfd < 0)
		return -errno;
	s->fds[s->nr_fds++] = s->sfd;
	if (s->opts->duration_ns) {
		struct itimerspec its = {
			.it_value.tv_sec = s->opts->duration_ns / 1000000000ull,
			.it_value.tv_nsec = s->opts->duration_ns % 1000000000ull,
		};

		s->tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
		if (s->tfd < 0 || timerfd_settime(s->tfd, 0, &its, NULL))
			return -errno;
		s->fds[s->nr_fds++] = s->tfd;
	}
	if (s->trig)
		s->fds[s->nr_fds++] = triggers__ringbuf_fd(s->trig);
	return 0;
}

bool capture_session__stop_on(struct capture_session *s, int fd)
{
	if (fd < 0)
		return false;
	if (fd == s->sfd) {
		struct signalfd_siginfo si;

		if (read(s->sfd, &si, sizeof(si)) == sizeof(si))
			s->signo = (int)si.ssi_signo;
		s->reason = STOP_SIGNAL;
		return true;
	}
	if (fd == s->tfd) {
		s->reason = STOP_DURATION;
		return true;
	}
	return false;
}

bool capture_session__poll_stop(struct capture_session *s)
{
	struct pollfd pfd[2];
	int n = 0, i;

	if (s->sfd >= 0)
		pfd[n++] = (struct pollfd){ .fd = s->sfd, .events = POLLIN };
	if (s->tfd >= 0)
		pfd[n++] = (struct pollfd){ .fd = s->tfd, .events = POLLIN };
	if (!n || poll(pfd, n, 0) <= 0)
		return false;
	/* the signal first: Ctrl-C at the timer's moment says so */
	for (i = 0; i < n; i++)
		if (pfd[i].revents && capture_session__stop_on(s, pfd[i].fd))
			return true;
	return false;
}

void capture_session__release_triggers(struct capture_session *s)
{
	triggers__free(s->trig);
	s->trig = NULL;
}

void capture_session__close(struct capture_session *s)
{
	capture_session__release_triggers(s);
	target__free(s->target);
	s->target = NULL;
	if (s->tfd >= 0)
		close(s->tfd);
	if (s->sfd >= 0)
		close(s->sfd);
	s->tfd = s->sfd = -1;
	s->nr_fds = 0;
}

struct decode_opts capture_session__decode_opts(const struct capture_opts *opts,
						const uint32_t *target_pid, const char *fxt)
{
	return (struct decode_opts){
		.output = fxt,
		.format = DECODE_FXT,
		.jobs = opts->jobs,
		.kernel = opts->kernel,
		.progress = true,
		.pids = target_pid,
		.nr_pids = opts->system_wide ? 0 : 1,
		.children = opts->follow_forks,
		.no_fast = opts->no_fast,
		.verify_fast = opts->verify_fast,
	};
}
