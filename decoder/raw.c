// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Raw mode, as ptxed: a file of raw PT (an AUX area dump) decoded against images the
 * user lists (--elf FILE[:BASE], --raw FILE[:FROM[-TO]]:VADDR), with the decoder
 * parameters of the recording CPU given on the command line. No sideband: the whole
 * trace is one thread of one address space.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"
#include "ptd.h"

/* Raw traces have no threads: they are shown as this one. */
#define RAW_PID 1
#define RAW_TID 1

/* Maps a whole file read-only; empty files are refused. */
int ptd_map_file(const char *path, const uint8_t **buf, size_t *size)
{
	struct stat sb;
	void *p;
	int fd, err = 0;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &sb)) {
		err = -errno;
		goto out;
	}
	if (!S_ISREG(sb.st_mode)) {
		err = -EINVAL;
		goto out;
	}
	if (!sb.st_size) {
		err = -ENODATA;
		goto out;
	}
	p = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
	if (p == MAP_FAILED) {
		err = -errno;
		goto out;
	}
	*buf = p;
	*size = (size_t)sb.st_size;
out:
	close(fd);
	return err;
}

void ptd_config_cpu(struct pt_config *cfg, uint32_t family, uint32_t model, uint32_t stepping)
{
	if (!family)
		return;
	cfg->cpu.vendor = pcv_intel;
	cfg->cpu.family = (uint16_t)family;
	cfg->cpu.model = (uint8_t)model;
	cfg->cpu.stepping = (uint8_t)stepping;
	/* errata workarounds follow the cpu (BDM70, SKD022...) */
	pt_cpu_errata(&cfg->errata, &cfg->cpu);
}

int ptdecode_raw(const struct raw_decode_opts *raw, const struct decode_opts *opts,
		 struct decode_stats *stats)
{
	struct ptd_stream_opts so = { .fixed_pid = RAW_PID, .fixed_tid = RAW_TID };
	struct ptd_output_opts oo = { .opts = opts };
	struct ptd_stream *s = NULL;
	struct symbols *sy = NULL;
	struct ptd_images im = {};
	struct ptd_event comm;
	const char *names[1];
	const uint8_t *buf = NULL;
	size_t size = 0;
	double t0 = ptd_seconds();
	uint64_t first;
	unsigned i;
	int as, err;

	if (!raw || !opts || !raw->pt_path || (raw->nr_images && !raw->images))
		return -EINVAL;
	if (stats)
		memset(stats, 0, sizeof(*stats));
	err = ptd_map_file(raw->pt_path, &buf, &size);
	if (err) {
		elog("cannot read %s: %s\n", raw->pt_path,
		     err == -ENODATA ? "empty file, no PT data" : strerror(-err));
		return err;
	}
	err = ptd_images_init(&im, NULL, opts->debug_dir, opts->strict);
	if (err)
		goto cleanup;
	as = ptd_aspace_new(&im, RAW_PID, 0);
	if (as < 0) {
		err = as;
		goto cleanup;
	}
	for (i = 0; i < raw->nr_images; i++) {
		const struct raw_image *ri = &raw->images[i];

		if (ri->elf)
			err = ptd_aspace_map_elf(&im, as, ri->path, ri->vaddr);
		else
			err = ptd_aspace_map_raw(&im, as, ri->path, ri->from, ri->to, ri->vaddr);
		if (err) {
			elog("cannot load %s %s: %s\n", ri->elf ? "ELF" : "raw image", ri->path,
			     ptd_image_strerror(err));
			goto cleanup;
		}
	}
	err = ptd_images_build(&im, as);
	if (err)
		goto cleanup;
	sy = symbols__new(&im, opts->debug_dir);
	if (!sy) {
		err = -ENOMEM;
		goto cleanup;
	}
	symbols__preload(sy);

	pt_config_init(&so.config);
	ptd_config_cpu(&so.config, raw->cpu_family, raw->cpu_model, raw->cpu_stepping);
	so.config.mtc_freq = (uint8_t)raw->mtc_freq;
	so.config.nom_freq = (uint8_t)raw->nom_freq;
	so.config.cpuid_0x15_eax = raw->cpuid_0x15_eax;
	so.config.cpuid_0x15_ebx = raw->cpuid_0x15_ebx;
	so.clock.ns_per_tick = raw->tsc_hz ? 1e9 / (double)raw->tsc_hz : 1.0;
	so.buf = buf;
	so.size = size;
	so.images = &im;
	so.symbols = sy;
	so.fixed_as = as;
	so.fast = !opts->no_fast;
	if (ptd_first_time(buf, size, &so.config, &so.clock, &first)) {
		/* no TSC: instructions stand in for time (1 instruction = 1 ns) */
		so.timeless = true;
		first = 0;
	}
	err = ptd_stream_new(&so, &s);
	if (err) {
		elog("cannot decode %s: bad decoder configuration\n", raw->pt_path);
		goto cleanup;
	}

	oo.symbols = sy;
	oo.time_base = first;
	names[0] = strrchr(raw->pt_path, '/') ? strrchr(raw->pt_path, '/') + 1 : raw->pt_path;
	oo.names = names;
	comm = (struct ptd_event){
		.time = first, .pid = RAW_PID, .tid = RAW_TID, .asid = (uint32_t)as,
		.kind = PTD_COMM, .code = 0,
	};
	if (stats)
		stats->seconds = ptd_seconds() - t0;
	err = ptd_output_run(&oo, &s, 1, &comm, 1, stats);

cleanup:
	ptd_stream_free(s);
	symbols__free(sy);
	ptd_images_fini(&im);
	if (buf)
		munmap((void *)buf, size);
	return err;
}
