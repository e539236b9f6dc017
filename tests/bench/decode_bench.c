// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * `make bench`: ptbpf decode against perf script on the same perf.data.
 *
 * The input is a real `perf record -e intel_pt//u` capture (shared testdata, HASE
 * skl-control_flow: Skylake, TSC+MTC) whose AUX buffer, which starts at a PSB, is
 * repeated until it holds at least 16 MiB of PT (PTBPF_BENCH_MIB overrides): "repeated
 * PSB-aligned segments of a real trace". Both decoders run once, one thread each:
 *   ptbpf decode FILE --sysroot SYMFS -j 1 -o OUT.fxt
 *   perf script -i FILE --symfs SYMFS --itrace=cr > /dev/null
 * and the benchmark prints wall and CPU times, the ratio, and MB/s of PT decoded
 * (per wall second and per CPU second), against the goals: >= 50x perf script and
 * >= 100 MB/s per core. The libipt ceiling (block decoder alone, same data) is printed
 * too, since no libipt client can decode faster than libipt itself.
 */
#include <errno.h>
#include <fcntl.h>
#include <intel-pt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "perfdata.h"

#define CASE "perf-intel-pt/hase-2018/skl-control_flow"
#define FILE_NAME "control_flow-20180404T163033.perf"
#define GOAL_RATIO 50.0
#define GOAL_MBS 100.0

struct run {
	double wall;		/* seconds */
	double cpu;		/* user + system seconds of the child */
	int status;		/* exit status, -1 if it did not exit */
};

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static double cpu_seconds(const struct rusage *ru)
{
	return ru->ru_utime.tv_sec + ru->ru_utime.tv_usec / 1e6 + ru->ru_stime.tv_sec +
	       ru->ru_stime.tv_usec / 1e6;
}

/* Runs argv with stdout to `out` (NULL: /dev/null), stderr to /dev/null. */
static int run(char *const argv[], const char *out, struct run *r)
{
	struct rusage ru;
	double t0 = now();
	int status;
	pid_t pid;

	pid = fork();
	if (pid < 0)
		return -errno;
	if (!pid) {
		int fd = open(out ? out : "/dev/null", O_WRONLY | O_CREAT | O_TRUNC, 0600);
		int null = open("/dev/null", O_WRONLY);

		if (fd < 0 || null < 0)
			_exit(127);
		dup2(fd, 1);
		dup2(null, 2);
		execvp(argv[0], argv);
		_exit(127);
	}
	if (wait4(pid, &status, 0, &ru) < 0)
		return -errno;
	r->wall = now() - t0;
	r->cpu = cpu_seconds(&ru);
	r->status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
	return 0;
}

/* libipt's block decoder alone over the same bytes and code: the ceiling. */
static double libipt_alone(const uint8_t *pt, size_t size, const char *elf, uint64_t *insns)
{
	struct pt_image_section_cache *isc = pt_iscache_alloc(NULL);
	struct pt_image *image = pt_image_alloc(NULL);
	struct pt_block_decoder *dec;
	struct pt_config cfg;
	struct rusage a, b;
	int status, isid;

	pt_config_init(&cfg);
	cfg.begin = (uint8_t *)pt;
	cfg.end = (uint8_t *)pt + size;
	cfg.cpu.vendor = pcv_intel;
	cfg.cpu.family = 6;
	cfg.cpu.model = 94;
	cfg.cpu.stepping = 3;
	pt_cpu_errata(&cfg.errata, &cfg.cpu);
	cfg.flags.variant.block.end_on_call = 1;
	cfg.flags.variant.block.end_on_jump = 1;
	pt_iscache_set_limit(isc, 1 << 30);
	isid = pt_iscache_add_file(isc, elf, 0, 0xabc, 0x400000);
	pt_image_add_cached(image, isc, isid, NULL);
	dec = pt_blk_alloc_decoder(&cfg);
	pt_blk_set_image(dec, image);
	*insns = 0;
	getrusage(RUSAGE_SELF, &a);
	status = pt_blk_sync_forward(dec);
	while (status >= 0) {
		struct pt_block block;

		while (status & pts_event_pending) {
			struct pt_event ev;

			status = pt_blk_event(dec, &ev, sizeof(ev));
			if (status < 0)
				break;
		}
		if (status < 0)
			break;
		status = pt_blk_next(dec, &block, sizeof(block));
		*insns += block.ninsn;
	}
	getrusage(RUSAGE_SELF, &b);
	pt_blk_free_decoder(dec);
	pt_image_free(image);
	pt_iscache_free(isc);
	return cpu_seconds(&b) - cpu_seconds(&a);
}

int main(void)
{
	const char *shared = getenv("SHARED"), *ptbpf = getenv("PTBPF"), *mib_env;
	char src[512], symfs[512], elf[640], data[64], fxt[64];
	struct capture *cap = NULL;
	struct pd_auxtrace aux;
	struct run pr = {}, pe = {};
	uint64_t want, insns = 0;
	uint8_t *big = NULL;
	size_t seg, i;
	double mb, ipt;
	int err, rc = 1;

	if (!shared || !ptbpf) {
		fprintf(stderr, "decode_bench: SHARED and PTBPF must be set (make bench does)\n");
		return 1;
	}
	mib_env = getenv("PTBPF_BENCH_MIB");
	want = (mib_env ? strtoull(mib_env, NULL, 10) : 16) << 20;
	snprintf(src, sizeof(src), "%s/testdata/" CASE "/" FILE_NAME, shared);
	snprintf(symfs, sizeof(symfs), "%s/testdata/" CASE "/symfs", shared);
	snprintf(elf, sizeof(elf), "%s/home/joerg/git/angr/hase/tests/bin/control_flow/"
		 "control_flow", symfs);
	snprintf(data, sizeof(data), "/tmp/ptbpf-bench-%d.data", getpid());
	snprintf(fxt, sizeof(fxt), "/tmp/ptbpf-bench-%d.fxt", getpid());

	err = perfdata_read(src, &cap);
	if (err) {
		printf("SKIP: cannot read %s\n", src);
		return 0;
	}
	if (cap->nr_aux != 1 || !cap->aux[0].size) {
		fprintf(stderr, "decode_bench: %s: expected one AUX buffer\n", src);
		goto out;
	}
	/* the segment starts at a PSB: copies of it follow each other cleanly */
	seg = cap->aux[0].size;
	big = malloc(want + seg);
	if (!big)
		goto out;
	for (i = 0; i < want; i += seg)
		memcpy(big + i, cap->aux[0].data, seg);
	aux = cap->aux[0];
	aux.size = i;
	cap->nr_aux = 0;
	if (capture__add_aux(cap, &aux, big) || perfdata_write(data, cap)) {
		fprintf(stderr, "decode_bench: cannot write %s\n", data);
		goto out;
	}
	mb = aux.size / 1e6;
	printf("input: %s, its %zu-byte AUX buffer repeated to %.1f MB of PT\n", FILE_NAME, seg,
	       mb);

	{
		char *argv[] = { (char *)ptbpf, "decode", data, "--sysroot", symfs, "-j", "1",
				 "-o", fxt, NULL };

		if (run(argv, NULL, &pe) || pe.status) {
			fprintf(stderr, "decode_bench: ptbpf decode failed (%d)\n", pe.status);
			goto out;
		}
	}
	{
		char *argv[] = { "perf", "script", "-f", "-i", data, "--symfs", symfs,
				 "--itrace=cr", NULL };

		if (run(argv, NULL, &pr) || pr.status) {
			printf("SKIP: perf script is not available (%d); ptbpf alone: %.3f s, "
			       "%.1f MB/s\n", pr.status, pe.wall, mb / pe.wall);
			rc = 0;
			goto out;
		}
	}
	ipt = libipt_alone(big, aux.size, elf, &insns);

	printf("%-34s %9s %9s %12s %12s\n", "", "wall s", "cpu s", "MB/s (wall)", "MB/s (cpu)");
	printf("%-34s %9.3f %9.3f %12.1f %12.1f\n", "ptbpf decode -j1 -o out.fxt", pe.wall, pe.cpu,
	       mb / pe.wall, mb / pe.cpu);
	printf("%-34s %9.3f %9.3f %12.1f %12.1f\n", "perf script --itrace=cr >/dev/null", pr.wall,
	       pr.cpu, mb / pr.wall, mb / pr.cpu);
	printf("%-34s %9s %9.3f %12s %12.1f   (%llu instructions)\n",
	       "libipt block decoder alone", "", ipt, "", mb / ipt, (unsigned long long)insns);
	printf("ratio perf script / ptbpf: %.1fx wall, %.1fx cpu (goal >= %.0fx): %s\n",
	       pr.wall / pe.wall, pr.cpu / pe.cpu, GOAL_RATIO,
	       pr.wall / pe.wall >= GOAL_RATIO ? "met" : "NOT met");
	printf("PT per core: %.1f MB/s (goal >= %.0f MB/s): %s; libipt alone reaches %.1f MB/s, "
	       "ptbpf is at %.0f%% of it\n",
	       mb / pe.cpu, GOAL_MBS, mb / pe.cpu >= GOAL_MBS ? "met" : "NOT met", mb / ipt,
	       100.0 * ipt / pe.cpu);
	rc = 0;
out:
	unlink(data);
	unlink(fxt);
	free(big);
	capture__free(cap);
	return rc;
}
