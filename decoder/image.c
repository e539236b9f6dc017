// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Memory images for libipt: address spaces made of mappings, over one image section
 * cache shared by every decoder thread.
 *
 * Every piece of code is a section of the iscache (pt_iscache_add_file), and an address
 * space's libipt image refers to those sections (pt_image_add_cached): libipt keeps its
 * block cache in the section, so all decoders that run the same code share it. Bytes
 * that no file holds (the vDSO from the capture, the uretprobe trampoline) are written
 * to memfds and added through /proc/self/fd, so they go the same cached way.
 *
 * Address spaces are made in capture order (one per process at its first mmap, a new
 * one at each exec, a copy at fork); their images are built on first use, under a lock,
 * because decoder threads ask for them.
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "array.h"
#include "fastpath.h"
#include "log.h"
#include "ptd.h"
#include "symtab.h"

/* Sections stay mapped (with their block caches) up to this many bytes. */
#define ISCACHE_LIMIT (1ull << 30)

/*
 * The kernel's [uprobes] page, which no file backs and no process can read. Its first
 * bytes are the x86-64 uretprobe trampoline of Linux 6.11+ (arch/x86/kernel/uprobes.c):
 * push %rax, push %rcx, push %r11, mov $__NR_uretprobe,%rax, syscall, then pop %r11,
 * pop %rcx, ret to the return address the system call left on the stack (the system
 * call may also return there itself; older kernels have a lone int3: a far transfer
 * too). The rest holds the out-of-line copies of probed instructions, each executed
 * alone and ended by a single-step trap; we cannot know them, and fill the page with
 * one-byte nops, so that decoding walks from a slot to wherever the trap stopped
 * tracing, with no error.
 */
#define UPROBES_PAGE 4096

static const uint8_t uretprobe_trampoline[] = {
	0x50, 0x51, 0x41, 0x53, 0x48, 0xc7, 0xc0, 0x4f, 0x01, 0x00, 0x00, 0x0f, 0x05,
	0x41, 0x5b, 0x59, 0xc3,
};

int ptd_errno(int pte)
{
	switch (pt_errcode(pte)) {
	case pte_ok:
		return 0;
	case pte_nomem:
		return -ENOMEM;
	case pte_invalid:
	case pte_bad_config:
		return -EINVAL;
	case pte_not_supported:
		return -ENOTSUP;
	case pte_eos:
		return -ENODATA;
	case pte_nomap:
		return -EFAULT;
	default:
		return -EIO;
	}
}

const char *ptd_image_strerror(int err)
{
	switch (err) {
	case -ENOEXEC:
		return "not an ELF file";
	case -EBADMSG:
		return "damaged ELF file: a segment's bytes lie past the end of the file, or "
		       "its addresses wrap past 2^64";
	case -EOVERFLOW:
		return "the image does not fit below 2^64 at that address (use a lower BASE "
		       "or VADDR)";
	default:
		return strerror(-err);
	}
}

int ptd_images_init(struct ptd_images *im, const char *sysroot, const char *debug_dir,
		    bool strict)
{
	memset(im, 0, sizeof(*im));
	im->kernel_as = -1;
	im->sysroot = sysroot && *sysroot ? sysroot : NULL;
	im->debug_dir = debug_dir;
	im->strict = strict;
	im->iscache = pt_iscache_alloc("ptbpf");
	if (!im->iscache)
		return -ENOMEM;
	pt_iscache_set_limit(im->iscache, ISCACHE_LIMIT);
	pthread_mutex_init(&im->lock, NULL);
	return 0;
}

void ptd_images_fini(struct ptd_images *im)
{
	uint32_t i;
	int k;

	if (!im->iscache)
		return;
	for (i = 0; i < im->nr_as; i++) {
		pt_image_free(im->as[i].image);
		free(im->as[i].maps);
	}
	for (i = 0; i < im->nr_dsos; i++) {
		free(im->dsos[i].name);
		free(im->dsos[i].path);
	}
	for (k = 0; k < im->nr_memfds; k++)
		close(im->memfds[k]);
	free(im->as);
	free(im->dsos);
	pt_iscache_free(im->iscache);
	ptd_run_store_free(im->run_store);
	pthread_mutex_destroy(&im->lock);
	memset(im, 0, sizeof(*im));
}

static int as_new(struct ptd_images *im, uint32_t pid, uint64_t time)
{
	struct ptd_aspace *as;

	if (array_grow((void **)&im->as, &im->cap_as, im->nr_as + 1, sizeof(*im->as)))
		return -ENOMEM;
	as = &im->as[im->nr_as];
	memset(as, 0, sizeof(*as));
	as->pid = pid;
	as->start_time = time;
	return (int)im->nr_as++;
}

int ptd_aspace_new(struct ptd_images *im, uint32_t pid, uint64_t time)
{
	return as_new(im, pid, time);
}

int ptd_aspace_fork(struct ptd_images *im, uint32_t parent, uint32_t pid, uint64_t time)
{
	int p = ptd_aspace_find(im, parent, time), c;
	struct ptd_aspace *pa, *ca;

	c = as_new(im, pid, time);
	if (c < 0 || p < 0)
		return c;
	pa = &im->as[p];
	ca = &im->as[c];
	if (!pa->nr_maps)
		return c;
	ca->maps = malloc(pa->nr_maps * sizeof(*ca->maps));
	if (!ca->maps)
		return -ENOMEM;
	memcpy(ca->maps, pa->maps, pa->nr_maps * sizeof(*ca->maps));
	ca->nr_maps = pa->nr_maps;
	return c;
}

int ptd_aspace_find_span(const struct ptd_images *im, uint32_t pid, uint64_t time,
			 uint64_t *from, uint64_t *until)
{
	int best = -1, oldest = -1;
	uint64_t next = UINT64_MAX;
	uint32_t i;

	/* The newest started at or before `time`; before all of them, the oldest. */
	for (i = 0; i < im->nr_as; i++) {
		const struct ptd_aspace *as = &im->as[i];

		if (as->pid != pid || as->kernel)
			continue;
		if (oldest < 0 || as->start_time < im->as[oldest].start_time)
			oldest = (int)i;
		if (as->start_time <= time &&
		    (best < 0 || as->start_time >= im->as[best].start_time))
			best = (int)i;
		/* the next start changes the answer */
		if (as->start_time > time && as->start_time < next)
			next = as->start_time;
	}
	/* the same spaces started at or before any time of [from, until): the same answer */
	*from = best >= 0 ? im->as[best].start_time : 0;
	*until = next;
	if (best < 0)
		best = oldest;
	return best >= 0 ? best : -ENOENT;
}

int ptd_aspace_find(const struct ptd_images *im, uint32_t pid, uint64_t time)
{
	uint64_t from, until;

	return ptd_aspace_find_span(im, pid, time, &from, &until);
}

static int cmp_map(const void *a, const void *b)
{
	const struct ptd_map *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

/*
 * Insert a mapping, cutting away what it overlaps (as mmap(MAP_FIXED) replaces). The
 * callers check their input; an empty or wrapped range here would split a neighbour into
 * overlapping pieces and overrun `out`.
 */
static int as_insert(struct ptd_aspace *as, const struct ptd_map *m)
{
	uint32_t i, n = 0, nr = as->nr_maps;
	struct ptd_map *out;

	if (m->end <= m->start)
		return -EINVAL;

	/* one existing map may be split in two: room for nr + 2 */
	out = malloc((nr + 2) * sizeof(*out));
	if (!out)
		return -ENOMEM;
	for (i = 0; i < nr; i++) {
		struct ptd_map a = as->maps[i];

		if (a.end <= m->start || a.start >= m->end) {
			out[n++] = a;
			continue;
		}
		/* the pieces left of and right of m keep their bytes: new sections */
		if (a.start < m->start) {
			out[n] = a;
			out[n].end = m->start;
			out[n++].isid = 0;
		}
		if (a.end > m->end) {
			out[n] = a;
			out[n].pgoff += m->end - a.start;
			out[n].start = m->end;
			out[n++].isid = 0;
		}
	}
	out[n++] = *m;
	qsort(out, n, sizeof(*out), cmp_map);
	free(as->maps);
	as->maps = out;
	as->nr_maps = n;
	as->built = false;
	return 0;
}

static int dso_get(struct ptd_images *im, const char *name, const uint8_t *build_id,
		   uint8_t build_id_size)
{
	struct ptd_dso *d;
	uint32_t i;

	for (i = 0; i < im->nr_dsos; i++) {
		d = &im->dsos[i];
		if (strcmp(d->name, name))
			continue;
		if (build_id_size && d->build_id_size &&
		    (d->build_id_size != build_id_size ||
		     memcmp(d->build_id, build_id, build_id_size)))
			continue;
		return (int)i;
	}
	if (array_grow((void **)&im->dsos, &im->cap_dsos, im->nr_dsos + 1, sizeof(*im->dsos)))
		return -ENOMEM;
	d = &im->dsos[im->nr_dsos];
	memset(d, 0, sizeof(*d));
	d->name = strdup(name);
	if (!d->name)
		return -ENOMEM;
	if (build_id_size && build_id_size <= sizeof(d->build_id)) {
		memcpy(d->build_id, build_id, build_id_size);
		d->build_id_size = build_id_size;
	}
	return (int)im->nr_dsos++;
}

static bool is_regular(const char *path)
{
	struct stat sb;

	return !stat(path, &sb) && S_ISREG(sb.st_mode);
}

static bool build_id_matches(const char *path, const struct ptd_dso *d)
{
	uint8_t id[64];
	uint32_t size;

	if (!d->build_id_size)
		return true;
	if (symtab__read_build_id(path, id, sizeof(id), &size))
		return false;
	return size == d->build_id_size && !memcmp(id, d->build_id, size);
}

static bool is_vdso(const struct ptd_dso *d)
{
	return !strcmp(d->name, "[vdso]");
}

/*
 * perf's build-id cache: DIR/.build-id/xx/yyyy... is a file, or a directory holding "elf"
 * (perf names a vDSO's copy "vdso" instead: build_id_cache__basename()).
 */
static bool build_id_path(const char *dir, const struct ptd_dso *d, char *buf, size_t size)
{
	char hex[2 * sizeof(d->build_id) + 1];
	unsigned i;

	if (!dir || !d->build_id_size)
		return false;
	for (i = 0; i < d->build_id_size; i++)
		sprintf(hex + 2 * i, "%02x", d->build_id[i]);
	snprintf(buf, size, "%s/.build-id/%.2s/%s", dir, hex, hex + 2);
	if (is_regular(buf))
		return true;
	snprintf(buf, size, "%s/.build-id/%.2s/%s/%s", dir, hex, hex + 2,
		 is_vdso(d) ? "vdso" : "elf");
	return is_regular(buf);
}

/*
 * Find the file of a dso: the recorded path under --sysroot (when its build-id agrees),
 * else the build-id cache (--debug-dir, then ~/.debug), else the debuginfod servers of
 * DEBUGINFOD_URLS. A vDSO the capture does not hold (perf record keeps it in its build-id
 * cache only) is looked up in the caches too.
 */
static void dso_resolve(struct ptd_images *im, struct ptd_dso *d)
{
	char buf[PATH_MAX];
	const char *home = getenv("HOME");

	if (d->path || (d->name[0] != '/' && !is_vdso(d)))
		return;
	snprintf(buf, sizeof(buf), "%s%s", im->sysroot ? im->sysroot : "", d->name);
	if (!is_vdso(d) && is_regular(buf) && build_id_matches(buf, d))
		goto found;
	if (build_id_path(im->debug_dir, d, buf, sizeof(buf)))
		goto found;
	if (home) {
		char dir[PATH_MAX];

		snprintf(dir, sizeof(dir), "%s/.debug", home);
		if (build_id_path(dir, d, buf, sizeof(buf)))
			goto found;
	}
	if (!is_vdso(d) && d->build_id_size) {
		char *path;

		if (!ptd_debuginfod_find(false, d->build_id, d->build_id_size, &path)) {
			d->path = path;
			return;
		}
	}
	/* a file whose build-id differs is better than none: decoding will tell */
	snprintf(buf, sizeof(buf), "%s%s", im->sysroot ? im->sysroot : "", d->name);
	if (!is_vdso(d) && is_regular(buf)) {
		if (!d->warned)
			elog("warning: %s: build-id differs from the capture's; using it anyway\n",
			     buf);
		d->warned = true;
		goto found;
	}
	return;
found:
	d->path = strdup(buf);
}

const char *ptd_dso_path(struct ptd_images *im, uint32_t dso)
{
	struct ptd_dso *d;

	if (dso >= im->nr_dsos)
		return NULL;
	d = &im->dsos[dso];
	pthread_mutex_lock(&im->lock);
	if (!d->path)
		dso_resolve(im, d);
	pthread_mutex_unlock(&im->lock);
	return d->path;
}

static int memfd_of(struct ptd_images *im, const char *name, const void *data, size_t size,
		    char *path, size_t path_size)
{
	int fd;

	if (im->nr_memfds == (int)(sizeof(im->memfds) / sizeof(im->memfds[0])))
		return -ENOSPC;
	fd = memfd_create(name, MFD_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (write(fd, data, size) != (ssize_t)size) {
		close(fd);
		return -EIO;
	}
	im->memfds[im->nr_memfds++] = fd;
	snprintf(path, path_size, "/proc/self/fd/%d", fd);
	return 0;
}

/* A dso whose bytes live in a memfd ([vdso], [uprobes], raw blobs). */
static int dso_of_bytes(struct ptd_images *im, const char *name, const void *data, size_t size)
{
	char path[64];
	int d, err;

	d = dso_get(im, name, NULL, 0);
	if (d < 0 || im->dsos[d].path)
		return d;
	err = memfd_of(im, name, data, size, path, sizeof(path));
	if (err)
		return err;
	im->dsos[d].path = strdup(path);
	return im->dsos[d].path ? d : -ENOMEM;
}

void ptd_images_set_vdso(struct ptd_images *im, const void *bytes, size_t size)
{
	if (bytes && size)
		dso_of_bytes(im, "[vdso]", bytes, size);
}

int ptd_aspace_map_file(struct ptd_images *im, int asi, const char *name, uint64_t start,
			uint64_t len, uint64_t pgoff, bool exec, const uint8_t *build_id,
			uint8_t build_id_size)
{
	struct ptd_map m = {
		.start = start,
		.end = start + len,
		.pgoff = pgoff,
		.dso = UINT32_MAX,
		.exec = exec,
	};
	int d;

	if (asi < 0 || (uint32_t)asi >= im->nr_as || !len || start + len < start)
		return -EINVAL;
	if (!strcmp(name, "[uprobes]")) {
		uint8_t page[UPROBES_PAGE];

		memset(page, 0x90, sizeof(page));
		memcpy(page, uretprobe_trampoline, sizeof(uretprobe_trampoline));
		d = dso_of_bytes(im, "[uprobes]", page, sizeof(page));
		m.uprobes = true;
		m.pgoff = 0;
	} else if ((name[0] == '/' && name[1] != '/') || !strcmp(name, "[vdso]")) {
		/* a file ("//anon" is anonymous memory: JIT code we have no bytes of) */
		d = dso_get(im, name, build_id, build_id_size);
	} else {
		/* [heap], [stack], //anon: no code we could read */
		d = -ENOENT;
	}
	if (d >= 0) {
		m.dso = (uint32_t)d;
		if (!strcmp(name, "[vdso]"))
			m.pgoff = 0;
	}
	return as_insert(&im->as[asi], &m);
}

int ptd_aspace_map_raw(struct ptd_images *im, int asi, const char *path, uint64_t from,
		       uint64_t to, uint64_t vaddr)
{
	struct ptd_map m = { .start = vaddr, .pgoff = from, .exec = true };
	struct stat sb;
	int d;

	if (asi < 0 || (uint32_t)asi >= im->nr_as)
		return -EINVAL;
	if (stat(path, &sb))
		return -errno;
	if (!S_ISREG(sb.st_mode))
		return -EINVAL;
	if (!to || to > (uint64_t)sb.st_size)
		to = (uint64_t)sb.st_size;
	if (from >= to)
		return -ERANGE;
	/* the bytes must fit below 2^64 (a wrapped map would split its neighbours badly) */
	if (__builtin_add_overflow(vaddr, to - from, &m.end))
		return -EOVERFLOW;
	d = dso_get(im, path, NULL, 0);
	if (d < 0)
		return d;
	if (!im->dsos[d].path)
		im->dsos[d].path = strdup(path);
	m.dso = (uint32_t)d;
	return as_insert(&im->as[asi], &m);
}

int ptd_aspace_map_elf(struct ptd_images *im, int asi, const char *path, uint64_t base)
{
	struct sym_segment *segs = NULL;
	uint64_t minaddr = UINT64_MAX, offset = 0;
	uint32_t nr = 0, i;
	int d, err;

	if (asi < 0 || (uint32_t)asi >= im->nr_as)
		return -EINVAL;
	err = symtab__read_segments(path, &segs, &nr, NULL);
	if (err)
		return err;
	/* As ptxed: BASE is where the lowest PT_LOAD goes. */
	if (base) {
		for (i = 0; i < nr; i++)
			if (segs[i].vaddr < minaddr)
				minaddr = segs[i].vaddr;
		offset = base - minaddr;
	}
	/* moved to BASE, every segment must still end below 2^64 (file-controlled values) */
	for (i = 0; i < nr; i++) {
		uint64_t start = segs[i].vaddr + offset, end;

		if (__builtin_add_overflow(start, segs[i].filesz, &end) ||
		    (base && start < base)) {
			err = -EOVERFLOW;
			goto out;
		}
	}
	d = dso_get(im, path, NULL, 0);
	if (d < 0) {
		err = d;
		goto out;
	}
	if (!im->dsos[d].path)
		im->dsos[d].path = strdup(path);
	for (i = 0; i < nr; i++) {
		struct ptd_map m = {
			.start = segs[i].vaddr + offset,
			.end = segs[i].vaddr + offset + segs[i].filesz,
			.pgoff = segs[i].offset,
			.bias = offset,
			.bias_valid = true,
			.bias_known = true,
			.dso = (uint32_t)d,
			.exec = segs[i].flags & PF_X,
		};

		if (!segs[i].filesz || !m.exec)
			continue;
		err = as_insert(&im->as[asi], &m);
		if (err)
			goto out;
	}
	if (!nr)
		err = -ENOEXEC;
out:
	free(segs);
	return err;
}

int ptd_images_add_kcore(struct ptd_images *im, const char *kcore, const char *bpf_jit)
{
	int as, err;
	size_t i;

	as = ptd_aspace_new(im, UINT32_MAX, 0);
	if (as < 0)
		return as;
	im->as[as].kernel = true;
	err = ptd_aspace_map_elf(im, as, kcore, 0);
	if (!err && bpf_jit)
		err = ptd_aspace_map_elf(im, as, bpf_jit, 0);
	if (err)
		return err;
	/* kallsyms names their code, not the files (kcore has no symbols) */
	for (i = 0; i < im->as[as].nr_maps; i++)
		im->dsos[im->as[as].maps[i].dso].kernel = true;
	im->kernel_as = as;
	/* its sections go first: user images copy them in */
	return ptd_images_build(im, as);
}

static int add_section(struct ptd_images *im, struct ptd_aspace *as, struct ptd_map *m)
{
	struct ptd_dso *d = &im->dsos[m->dso];
	int isid, err;

	if (!d->path) {
		dso_resolve(im, d);
		if (!d->path) {
			if (!d->warned && d->name[0] == '/') {
				char hex[2 * sizeof(d->build_id) + 1] = "";
				unsigned i;

				for (i = 0; i < d->build_id_size; i++)
					sprintf(hex + 2 * i, "%02x", d->build_id[i]);
				elog("warning: %s: binary not found%s%s%s%s%s; its code cannot be "
				     "decoded and its frames show as %s+0xoff\n", d->name,
				     hex[0] ? " (build-id " : "", hex, hex[0] ? ")" : "",
				     im->sysroot ? " under " : "", im->sysroot ? im->sysroot : "",
				     strrchr(d->name, '/') + 1);
			}
			else if (!d->warned && is_vdso(d))
				/* -v only: every perf capture maps one, few traces enter it */
				vlog("[vdso]: neither in the capture nor in a build-id cache "
				     "(--debug-dir, ~/.debug); code run in it cannot be decoded\n");
			d->warned = true;
			return im->strict && d->name[0] == '/' ? -ENOENT : 0;
		}
	}
	isid = pt_iscache_add_file(im->iscache, d->path, m->pgoff, m->end - m->start, m->start);
	if (isid < 0) {
		if (!d->warned)
			elog("warning: %s: cannot load code at 0x%llx: %s\n", d->path,
			     (unsigned long long)m->start, pt_errstr(pt_errcode(isid)));
		d->warned = true;
		return im->strict ? ptd_errno(isid) : 0;
	}
	err = pt_image_add_cached(as->image, im->iscache, isid, NULL);
	if (err < 0)
		return ptd_errno(err);
	m->isid = isid;
	return 0;
}

static int build_image(struct ptd_images *im, struct ptd_aspace *as)
{
	uint32_t i;
	int err;

	if (!as->image) {
		char name[32];

		snprintf(name, sizeof(name), "pid %u", as->pid);
		as->image = pt_image_alloc(name);
		if (!as->image)
			return -ENOMEM;
	}
	for (i = 0; i < as->nr_maps; i++) {
		struct ptd_map *m = &as->maps[i];

		if (!m->exec || m->dso == UINT32_MAX || m->isid)
			continue;
		err = add_section(im, as, m);
		if (err)
			return err;
	}
	/* the kernel's code is part of every address space */
	if (im->kernel_as >= 0 && &im->as[im->kernel_as] != as) {
		struct ptd_aspace *k = &im->as[im->kernel_as];

		for (i = 0; i < k->nr_maps; i++) {
			if (!k->maps[i].isid)
				continue;
			err = pt_image_add_cached(as->image, im->iscache, k->maps[i].isid, NULL);
			if (err < 0)
				return ptd_errno(err);
		}
	}
	as->built = true;
	return 0;
}

int ptd_images_build(struct ptd_images *im, int asi)
{
	int err;

	if (asi < 0 || (uint32_t)asi >= im->nr_as)
		return -EINVAL;
	pthread_mutex_lock(&im->lock);
	err = im->as[asi].built ? 0 : build_image(im, &im->as[asi]);
	pthread_mutex_unlock(&im->lock);
	return err;
}

struct pt_image *ptd_aspace_image(struct ptd_images *im, int asi)
{
	if (ptd_images_build(im, asi))
		return NULL;
	return im->as[asi].image;
}

const struct ptd_map *ptd_aspace_lookup(const struct ptd_images *im, int asi, uint64_t addr)
{
	const struct ptd_aspace *as;
	uint32_t lo = 0, hi;

	if (asi < 0 || (uint32_t)asi >= im->nr_as)
		return NULL;
	as = &im->as[asi];
	hi = as->nr_maps;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (as->maps[mid].end <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < as->nr_maps && as->maps[lo].start <= addr)
		return &as->maps[lo];
	if (im->kernel_as >= 0 && asi != im->kernel_as)
		return ptd_aspace_lookup(im, im->kernel_as, addr);
	return NULL;
}
