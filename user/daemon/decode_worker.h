/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The daemon's decode worker (`decode: host` rules): one thread that decodes captures to
 * FXT one after the other, held to the daemon-wide `budget.decode_cpu_share` of a core
 * (cpu_share.h), so that decoding never takes a host's CPU from its work; the daemon's
 * loop hands it jobs and is told through an eventfd when one is done.
 *
 *	decode_worker__new(share, &w);	epoll on decode_worker__fd(w)
 *	decode_worker__submit(w, job);	job->cap, job->output set; the worker owns it until
 *	while ((job = decode_worker__take_done(w)))	... job->err, job->stats ...
 *	decode_worker__stop(w);		the running job finishes at full speed; queued ones
 *					are done with err -ECANCELED; then take_done them
 *	decode_worker__free(w);
 */
#ifndef PTBPF_DAEMON_DECODE_WORKER_H
#define PTBPF_DAEMON_DECODE_WORKER_H

#include <stdint.h>

#include "ptdecode.h"

struct decode_job {
	struct decode_job *next;	/* the worker's lists */
	const struct capture *cap;	/* to decode (the submitter's, untouched until done) */
	const char *output;		/* FXT path */
	uint32_t pid;			/* decode only this process's threads; 0: all */
	bool no_fast, verify_fast;	/* as ptbpf decode's --no-fast, --verify-fast */
	void *ctx;			/* the submitter's */
	int err;			/* result: 0, -errno, -ECANCELED (stopped first) */
	struct decode_stats stats;
	uint64_t cpu_ns, wall_ns;	/* the decode's CPU and wall time, */
	uint64_t paused_ns;		/* and the pauses in it that held it to the share */
	double share;			/* the share it ran under */
};

struct decode_worker;

struct decode_worker_stats {
	uint64_t cpu_ns;		/* CPU the worker spent decoding */
	uint64_t paused_ns;		/* time it paused to keep its share */
	uint64_t decoded, failed;	/* jobs done */
	unsigned queued;		/* jobs waiting or running */
};

int decode_worker__new(double share, struct decode_worker **out);
/* Readable (EPOLLIN) when done jobs wait for decode_worker__take_done(). */
int decode_worker__fd(const struct decode_worker *w);
/* Queue a job. -ESHUTDOWN once stopped (decode it elsewhere or not at all). */
int decode_worker__submit(struct decode_worker *w, struct decode_job *job);
/* A done job (oldest first), or NULL. Clears the fd's readiness when none is left. */
struct decode_job *decode_worker__take_done(struct decode_worker *w);
/* A new share (a reload), from the next quantum on. */
void decode_worker__set_share(struct decode_worker *w, double share);
void decode_worker__stats(struct decode_worker *w, struct decode_worker_stats *st);
/* Finish the running job unthrottled, cancel the queued ones, join the thread. */
void decode_worker__stop(struct decode_worker *w);
/* Stops first if needed; done jobs not taken are the caller's loss. NULL-safe. */
void decode_worker__free(struct decode_worker *w);

#endif /* PTBPF_DAEMON_DECODE_WORKER_H */
