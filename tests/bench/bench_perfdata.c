// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * perf.data writer and reader throughput on a capture shaped like a pt snapshot:
 * 4 CPUs x 16 MiB of trace and 200,000 sideband records (MMAP2, COMM, switches).
 * Baseline: writing the same number of bytes as one plain file (with fsync, as the
 * writer does) and reading it back into fresh memory (as the reader must), so the
 * ratio is the cost of the format: records, checks, allocations.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "perfdata.h"

#define NR_CPUS 4
#define AUX_BYTES (16u << 20)
#define NR_RECORDS 200000

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static struct capture *make_capture(uint8_t *trace)
{
	struct perf_event_attr pt = { .size = sizeof(pt), .type = 8, .sample_id_all = 1 }, sb;
	struct capture *cap = capture__new();
	struct pd_record r;
	uint64_t ids[2] = { 1, 2 };
	int i;

	pt.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU |
			 PERF_SAMPLE_IDENTIFIER;
	sb = pt;
	sb.type = PERF_TYPE_SOFTWARE;
	sb.config = PERF_COUNT_SW_DUMMY;
	if (!cap || capture__add_attr(cap, &pt, &ids[0], 1, NULL) ||
	    capture__add_attr(cap, &sb, &ids[1], 1, NULL))
		return NULL;
	cap->pt.present = true;
	cap->pt.pmu_type = 8;
	cap->pt.per_cpu_mmaps = 1;
	for (i = 0; i < NR_RECORDS; i++) {
		memset(&r, 0, sizeof(r));
		switch (i % 4) {
		case 0:
			r.type = PERF_RECORD_MMAP2;
			r.mmap.pid = r.mmap.tid = 1000 + i % 97;
			r.mmap.addr = 0x400000 + (uint64_t)i * 0x1000;
			r.mmap.len = 0x1000;
			r.mmap.prot = 5;
			r.mmap.filename = "/usr/lib/x86_64-linux-gnu/libsomething.so.1.2.3";
			break;
		case 1:
			r.type = PERF_RECORD_COMM;
			r.comm.pid = r.comm.tid = 1000 + i % 97;
			r.comm.comm = "worker-thread";
			break;
		default:
			r.type = PERF_RECORD_SWITCH_CPU_WIDE;
			r.misc = i % 4 == 2 ? PERF_RECORD_MISC_SWITCH_OUT : 0;
			r.sw.next_prev_pid = r.sw.next_prev_tid = 1000 + i % 97;
			break;
		}
		r.sample.pid = r.sample.tid = 1000 + i % 97;
		r.sample.time = 1000000 + (uint64_t)i * 100;
		r.sample.cpu = i % NR_CPUS;
		r.sample.id = 2;
		r.sample.valid = PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU |
				 PERF_SAMPLE_IDENTIFIER;
		if (capture__add_record(cap, &r))
			return NULL;
	}
	for (i = 0; i < NR_CPUS; i++) {
		struct pd_auxtrace aux = { .size = AUX_BYTES, .cpu = i, .idx = i, .tid = -1,
					   .reference = 1 };

		if (capture__add_aux(cap, &aux, trace))
			return NULL;
	}
	return cap;
}

/* The baseline: the same bytes as one plain write + fsync, then one read. */
static void plain_io(const char *path, const uint8_t *buf, size_t size, double *w, double *r)
{
	uint8_t *in;
	double t = now();
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	size_t done;

	for (done = 0; fd >= 0 && done < size;)
		done += write(fd, buf + done, size - done > (1 << 20) ? 1 << 20 : size - done);
	if (fd >= 0) {
		fsync(fd);
		close(fd);
	}
	*w = now() - t;
	t = now();
	in = malloc(size);
	fd = open(path, O_RDONLY);
	for (done = 0; in && fd >= 0 && done < size;) {
		ssize_t n = read(fd, in + done, size - done > (1 << 20) ? 1 << 20 : size - done);

		if (n <= 0)
			break;
		done += n;
	}
	if (fd >= 0)
		close(fd);
	free(in);
	*r = now() - t;
	unlink(path);
}

int main(void)
{
	char path[128];
	uint8_t *trace = malloc(AUX_BYTES), *plain;
	struct capture *cap, *back = NULL;
	double tw, tr, bw, br, mb;
	long size;
	FILE *f;

	if (!trace)
		return 1;
	memset(trace, 0x55, AUX_BYTES);
	cap = make_capture(trace);
	if (!cap)
		return 1;
	snprintf(path, sizeof(path), "/tmp/ptbpf-bench-perfdata-%d.data", getpid());
	tw = now();
	if (perfdata_write(path, cap))
		return 1;
	tw = now() - tw;
	f = fopen(path, "r");
	fseek(f, 0, SEEK_END);
	size = ftell(f);
	fclose(f);
	tr = now();
	if (perfdata_read(path, &back))
		return 1;
	tr = now() - tr;
	if (back->nr_records != NR_RECORDS + 1 || back->nr_aux != NR_CPUS)
		return 1;
	capture__free(back);
	capture__free(cap);
	unlink(path);

	plain = malloc(size);
	if (!plain)
		return 1;
	memset(plain, 0x55, size);
	plain_io(path, plain, size, &bw, &br);
	free(plain);
	free(trace);
	mb = size / 1e6;
	printf("perf.data: %.1f MB (%d CPUs x %u MiB trace, %d records)\n", mb, NR_CPUS,
	       AUX_BYTES >> 20, NR_RECORDS);
	printf("write: %.3f s, %.0f MB/s; baseline plain write+fsync %.3f s: ratio %.2f\n", tw,
	       mb / tw, bw, tw / bw);
	printf("read:  %.3f s, %.0f MB/s; baseline plain read %.3f s: ratio %.2f\n", tr, mb / tr,
	       br, tr / br);
	return 0;
}
