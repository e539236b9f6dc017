// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The daemon's decode worker (decode_worker.h). */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "cpu_share.h"
#include "decode_worker.h"

struct decode_worker {
	pthread_t thread;
	bool started, stopping;
	pthread_mutex_t lock;
	pthread_cond_t wake;
	struct decode_job *todo, **todo_tail;	/* FIFO */
	struct decode_job *done, **done_tail;	/* FIFO */
	unsigned queued;
	int efd;
	double share;
	struct cpu_share *running;	/* the hold of the job being decoded, NULL between */
	uint64_t cpu_ns, paused_ns, decoded, failed;
};

static void push(struct decode_job ***tail, struct decode_job *job)
{
	job->next = NULL;
	**tail = job;
	*tail = &job->next;
}

static struct decode_job *pop(struct decode_job **head, struct decode_job ***tail)
{
	struct decode_job *job = *head;

	if (job) {
		*head = job->next;
		if (!*head)
			*tail = head;
	}
	return job;
}

static void finish(struct decode_worker *w, struct decode_job *job)
{
	uint64_t one = 1;

	push(&w->done_tail, job);
	w->queued--;
	if (write(w->efd, &one, sizeof(one)) < 0) {
		/* the counter cannot overflow in practice; the job waits for the next one */
	}
}

static void *worker_main(void *arg)
{
	struct decode_worker *w = arg;
	struct decode_job *job;
	struct cpu_share cs;
	double share;

	pthread_mutex_lock(&w->lock);
	for (;;) {
		while (!w->todo && !w->stopping)
			pthread_cond_wait(&w->wake, &w->lock);
		job = pop(&w->todo, &w->todo_tail);
		if (!job)
			break;	/* stopping, nothing left */
		if (w->stopping) {
			job->err = -ECANCELED;
			finish(w, job);
			continue;
		}
		share = w->share;
		pthread_mutex_unlock(&w->lock);
		/*
		 * The hold runs only outside the lock: its pauses happen in this thread's
		 * signal handler, and must never keep the daemon's loop waiting on the lock.
		 */
		job->err = cpu_share__start(&cs, share);
		if (!job->err) {
			/* -j 1: the decode runs on this thread alone, the one the hold's
			 * CPU clock counts (test_decode: it starts no thread) */
			struct decode_opts o = { .output = job->output, .format = DECODE_FXT,
						 .jobs = 1, .no_fast = job->no_fast,
						 .verify_fast = job->verify_fast };

			if (job->pid) {
				o.pids = &job->pid;
				o.nr_pids = 1;
			}

			pthread_mutex_lock(&w->lock);
			w->running = &cs;
			if (w->stopping || w->share != share)
				cpu_share__set(&cs, w->stopping ? 1 : w->share);
			pthread_mutex_unlock(&w->lock);
			job->err = ptdecode_capture(job->cap, &o, &job->stats);
			cpu_share__stop(&cs);	/* its last pause, outside the lock; none after it */
		}
		pthread_mutex_lock(&w->lock);
		w->running = NULL;
		w->cpu_ns += cs.cpu_ns;
		w->paused_ns += cs.slept_ns;
		job->cpu_ns = cs.cpu_ns;
		job->wall_ns = cs.wall_ns;
		job->paused_ns = cs.slept_ns;
		job->share = cs.share;
		if (job->err)
			w->failed++;
		else
			w->decoded++;
		finish(w, job);
	}
	pthread_mutex_unlock(&w->lock);
	return NULL;
}

int decode_worker__new(double share, struct decode_worker **out)
{
	struct decode_worker *w = calloc(1, sizeof(*w));
	sigset_t all, old;
	int err;

	*out = NULL;
	if (!w)
		return -ENOMEM;
	w->todo_tail = &w->todo;
	w->done_tail = &w->done;
	w->share = share;
	pthread_mutex_init(&w->lock, NULL);
	pthread_cond_init(&w->wake, NULL);
	w->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (w->efd < 0) {
		err = -errno;
		goto fail;
	}
	/* the daemon's signals (signalfd) stay with its loop: the thread blocks them all */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	err = -pthread_create(&w->thread, NULL, worker_main, w);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (err)
		goto fail;
	w->started = true;
	*out = w;
	return 0;
fail:
	decode_worker__free(w);
	return err;
}

int decode_worker__fd(const struct decode_worker *w)
{
	return w->efd;
}

int decode_worker__submit(struct decode_worker *w, struct decode_job *job)
{
	int err = 0;

	pthread_mutex_lock(&w->lock);
	if (w->stopping || !w->started) {
		err = -ESHUTDOWN;
	} else {
		push(&w->todo_tail, job);
		w->queued++;
		pthread_cond_signal(&w->wake);
	}
	pthread_mutex_unlock(&w->lock);
	return err;
}

struct decode_job *decode_worker__take_done(struct decode_worker *w)
{
	struct decode_job *job;
	uint64_t n;

	pthread_mutex_lock(&w->lock);
	job = pop(&w->done, &w->done_tail);
	if (!w->done && read(w->efd, &n, sizeof(n)) < 0) {
		/* EAGAIN: already clear */
	}
	pthread_mutex_unlock(&w->lock);
	return job;
}

void decode_worker__set_share(struct decode_worker *w, double share)
{
	pthread_mutex_lock(&w->lock);
	w->share = share;
	if (w->running)
		cpu_share__set(w->running, share);
	pthread_mutex_unlock(&w->lock);
}

void decode_worker__stats(struct decode_worker *w, struct decode_worker_stats *st)
{
	pthread_mutex_lock(&w->lock);
	st->cpu_ns = w->cpu_ns;
	st->paused_ns = w->paused_ns + (w->running ? w->running->slept_ns : 0);
	st->decoded = w->decoded;
	st->failed = w->failed;
	st->queued = w->queued;
	pthread_mutex_unlock(&w->lock);
}

void decode_worker__stop(struct decode_worker *w)
{
	if (!w || !w->started)
		return;
	pthread_mutex_lock(&w->lock);
	w->stopping = true;
	if (w->running)
		cpu_share__set(w->running, 1);	/* a stop must not wait on the share */
	pthread_cond_signal(&w->wake);
	pthread_mutex_unlock(&w->lock);
	pthread_join(w->thread, NULL);
	w->started = false;
}

void decode_worker__free(struct decode_worker *w)
{
	if (!w)
		return;
	decode_worker__stop(w);
	if (w->efd >= 0)
		close(w->efd);
	pthread_cond_destroy(&w->wake);
	pthread_mutex_destroy(&w->lock);
	free(w);
}
