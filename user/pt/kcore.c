// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <linux/bpf.h>

#include "kcore.h"
#include "log.h"

#define MAX_PIECES 64
#define PAGE 4096ull

struct range {
	uint64_t start, end;	/* kernel virtual addresses, end exclusive */
};

struct piece {
	uint64_t vaddr, len;	/* at this kernel address, this many bytes */
	uint64_t src_off;	/* from this offset of the source kcore */
};

/* Whole-file copy; returns 0 or -errno. */
static int copy_file(const char *from, const char *to)
{
	char buf[65536];
	int in, out, err = 0;
	ssize_t n;

	in = open(from, O_RDONLY | O_CLOEXEC);
	if (in < 0)
		return -errno;
	out = open(to, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (out < 0) {
		err = -errno;
		close(in);
		return err;
	}
	while ((n = read(in, buf, sizeof(buf))) > 0) {
		if (write(out, buf, n) != n) {
			err = errno ? -errno : -EIO;
			break;
		}
	}
	if (n < 0)
		err = -errno;
	close(in);
	if (close(out) && !err)
		err = -errno;
	return err;
}

static bool same_file(const char *a, const char *b)
{
	char x[65536], y[65536];
	FILE *fa = fopen(a, "re"), *fb = fopen(b, "re");
	bool same = fa && fb;
	size_t na, nb;

	while (same) {
		na = fread(x, 1, sizeof(x), fa);
		nb = fread(y, 1, sizeof(y), fb);
		if (na != nb || memcmp(x, y, na))
			same = false;
		if (!na)
			break;
	}
	if (fa)
		fclose(fa);
	if (fb)
		fclose(fb);
	return same;
}

/* _stext.._etext from a kallsyms copy; -EACCES when addresses are hidden. */
static int kernel_text(const char *kallsyms, struct range *r)
{
	char line[512], name[256];
	unsigned long long addr;
	bool seen = false;
	char type;
	FILE *f;

	r->start = r->end = 0;
	f = fopen(kallsyms, "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%llx %c %255s", &addr, &type, name) != 3)
			continue;
		if (!strcmp(name, "_stext")) {
			r->start = addr;
			seen = true;
		} else if (!strcmp(name, "_etext")) {
			r->end = addr;
		}
	}
	fclose(f);
	/* listed with address 0: hidden from this process */
	if (seen && !r->start)
		return -EACCES;
	return r->start && r->end > r->start ? 0 : -EINVAL;
}

/* The span of all loaded modules ("name size refs deps state address"), or none. */
static int module_area(const char *modules, struct range *r)
{
	char line[1024], name[256], deps[512], state[32];
	unsigned long long size, addr;
	int refs;
	FILE *f;

	r->start = UINT64_MAX;
	r->end = 0;
	f = fopen(modules, "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%255s %llu %d %511s %31s %llx", name, &size, &refs, deps, state,
			   &addr) != 6 || !addr)
			continue;
		if (addr < r->start)
			r->start = addr;
		if (addr + size > r->end)
			r->end = addr + size;
	}
	fclose(f);
	if (r->start >= r->end)
		r->start = r->end = 0;
	return 0;
}

/* The parts of kcore's PT_LOADs that fall in the ranges. */
static int find_pieces(int fd, const struct range *want, int nr_want, Elf64_Ehdr *eh,
		       struct piece *pieces)
{
	Elf64_Phdr ph;
	int i, j, n = 0;

	if (pread(fd, eh, sizeof(*eh), 0) != sizeof(*eh) || memcmp(eh->e_ident, ELFMAG, SELFMAG) ||
	    eh->e_ident[EI_CLASS] != ELFCLASS64 || eh->e_type != ET_CORE ||
	    eh->e_phentsize != sizeof(ph))
		return -EINVAL;
	for (i = 0; i < eh->e_phnum; i++) {
		if (pread(fd, &ph, sizeof(ph), eh->e_phoff + i * sizeof(ph)) != sizeof(ph))
			return -EINVAL;
		if (ph.p_type != PT_LOAD || !ph.p_filesz)
			continue;
		for (j = 0; j < nr_want; j++) {
			uint64_t s = ph.p_vaddr > want[j].start ? ph.p_vaddr : want[j].start;
			uint64_t e = ph.p_vaddr + ph.p_filesz < want[j].end ?
				     ph.p_vaddr + ph.p_filesz : want[j].end;

			if (s >= e)
				continue;
			if (n == MAX_PIECES)
				return -E2BIG;
			pieces[n++] = (struct piece){ s, e - s, ph.p_offset + (s - ph.p_vaddr) };
		}
	}
	return n;
}

static int write_kcore(int in, const Elf64_Ehdr *src_eh, const struct piece *p, int n,
		       const char *path)
{
	Elf64_Ehdr eh = *src_eh;
	uint64_t off;
	char *buf;
	int out, i, err = 0;

	buf = malloc(1 << 20);
	if (!buf)
		return -ENOMEM;
	out = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (out < 0) {
		free(buf);
		return -errno;
	}
	eh.e_phoff = sizeof(eh);
	eh.e_phnum = n;
	eh.e_shoff = 0;
	eh.e_shnum = 0;
	eh.e_shstrndx = SHN_UNDEF;
	if (pwrite(out, &eh, sizeof(eh), 0) != sizeof(eh))
		err = -EIO;
	off = (sizeof(eh) + n * sizeof(Elf64_Phdr) + PAGE - 1) & ~(PAGE - 1);
	for (i = 0; i < n && !err; i++) {
		Elf64_Phdr ph = {
			.p_type = PT_LOAD,
			.p_flags = PF_R | PF_X,
			.p_offset = off,
			.p_vaddr = p[i].vaddr,
			.p_filesz = p[i].len,
			.p_memsz = p[i].len,
			.p_align = PAGE,
		};
		uint64_t done;

		if (pwrite(out, &ph, sizeof(ph), sizeof(eh) + i * sizeof(ph)) != sizeof(ph)) {
			err = -EIO;
			break;
		}
		for (done = 0; done < p[i].len && !err;) {
			size_t chunk = p[i].len - done < (1 << 20) ? p[i].len - done : (1 << 20);
			ssize_t r = pread(in, buf, chunk, p[i].src_off + done);

			if (r <= 0 || pwrite(out, buf, r, off + done) != r)
				err = r < 0 ? -errno : -EIO;
			else
				done += r;
		}
		off = (off + p[i].len + PAGE - 1) & ~(PAGE - 1);
	}
	if (close(out) && !err)
		err = -errno;
	free(buf);
	return err;
}

static int copy_once(const struct kcore_src *src, const char *dir)
{
	struct piece pieces[MAX_PIECES];
	struct range want[2];
	char path[PATH_MAX];
	Elf64_Ehdr eh;
	int fd, n, err;

	snprintf(path, sizeof(path), "%s/kallsyms", dir);
	err = copy_file(src->kallsyms, path);
	if (err) {
		elog("--kernel: cannot copy %s: %s\n", src->kallsyms, strerror(-err));
		return err;
	}
	err = kernel_text(path, &want[0]);
	if (err) {
		elog("--kernel: %s shows no _stext/_etext address%s\n", src->kallsyms,
		     err == -EACCES ? " (kernel.kptr_restrict hides them: run as root)" : "");
		return err;
	}
	snprintf(path, sizeof(path), "%s/modules", dir);
	err = copy_file(src->modules, path);
	if (!err)
		err = module_area(path, &want[1]);
	if (err) {
		elog("--kernel: cannot copy %s: %s\n", src->modules, strerror(-err));
		return err;
	}
	fd = open(src->kcore, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		err = -errno;
		elog("--kernel: cannot read %s: %s\n", src->kcore, strerror(-err));
		return err;
	}
	n = find_pieces(fd, want, want[1].end ? 2 : 1, &eh, pieces);
	if (n <= 0) {
		err = n ? n : -EINVAL;
		elog("--kernel: %s: %s\n", src->kcore, n ? "not an ELF64 core file" :
		     "no segment holds the kernel text");
		close(fd);
		return err;
	}
	snprintf(path, sizeof(path), "%s/kcore", dir);
	err = write_kcore(fd, &eh, pieces, n, path);
	close(fd);
	if (err)
		elog("--kernel: cannot write %s: %s\n", path, strerror(-err));
	return err;
}

int kcore_copy(const struct kcore_src *src, const char *dir)
{
	struct kcore_src s = {
		.kcore = src && src->kcore ? src->kcore : "/proc/kcore",
		.kallsyms = src && src->kallsyms ? src->kallsyms : "/proc/kallsyms",
		.modules = src && src->modules ? src->modules : "/proc/modules",
	};
	char path[PATH_MAX];
	int tries, err;

	if (!dir || !*dir)
		return -EINVAL;
	if (mkdir(dir, 0700) && errno != EEXIST)
		return -errno;
	/* as perf: a module loaded during the copy changes kallsyms; copy again */
	for (tries = 0; tries < 3; tries++) {
		err = copy_once(&s, dir);
		if (err)
			return err;
		snprintf(path, sizeof(path), "%s/kallsyms", dir);
		if (same_file(s.kallsyms, path))
			return 0;
	}
	elog("--kernel: %s kept changing during the copy (modules loading?)\n", s.kallsyms);
	return -EAGAIN;
}

/* One program's JITed functions: pieces[] point into `mem` at `mem_off` on. */
static int jit_pieces(int prog_fd, int mem, uint64_t *mem_off, struct piece *pieces, int max,
		      FILE *syms)
{
	struct bpf_prog_info info = {};
	__u32 len = sizeof(info), nr_ksyms, nr_lens, insns_len, i;
	uint64_t *ksyms = NULL, off = 0;
	__u32 *lens = NULL;
	uint8_t *insns = NULL;
	char tag[2 * BPF_TAG_SIZE + 1];
	int n = 0, err = 0;

	if (bpf_obj_get_info_by_fd(prog_fd, &info, &len))
		return -errno;
	nr_ksyms = info.nr_jited_ksyms;
	nr_lens = info.nr_jited_func_lens;
	insns_len = info.jited_prog_len;
	if (!insns_len || !nr_ksyms || nr_ksyms != nr_lens)
		return -ENOENT;		/* not JITed (the interpreter runs it) */
	if (nr_ksyms > (__u32)max)
		return -E2BIG;
	ksyms = calloc(nr_ksyms, sizeof(*ksyms));
	lens = calloc(nr_lens, sizeof(*lens));
	insns = malloc(insns_len);
	if (!ksyms || !lens || !insns) {
		err = -ENOMEM;
		goto out;
	}
	memset(&info, 0, sizeof(info));
	info.nr_jited_ksyms = nr_ksyms;
	info.jited_ksyms = (uintptr_t)ksyms;
	info.nr_jited_func_lens = nr_lens;
	info.jited_func_lens = (uintptr_t)lens;
	info.jited_prog_len = insns_len;
	info.jited_prog_insns = (uintptr_t)insns;
	len = sizeof(info);
	if (bpf_obj_get_info_by_fd(prog_fd, &info, &len)) {
		err = -errno;
		goto out;
	}
	/* the kernel zeroes what bpf_dump_raw_ok() does not let this caller see */
	if (!ksyms[0] || info.jited_prog_len != insns_len) {
		err = -EPERM;
		goto out;
	}
	for (i = 0; i < BPF_TAG_SIZE; i++)
		sprintf(tag + 2 * i, "%02x", info.tag[i]);
	if (pwrite(mem, insns, insns_len, *mem_off) != (ssize_t)insns_len) {
		err = -EIO;
		goto out;
	}
	/* the functions' bytes follow each other in jited_prog_insns, main program first */
	for (i = 0; i < nr_ksyms && off + lens[i] <= insns_len; i++) {
		pieces[n++] = (struct piece){ ksyms[i], lens[i], *mem_off + off };
		off += lens[i];
		if (i)	/* a subprogram: the kernel names it after its BTF func_info */
			fprintf(syms, "%016llx t bpf_prog_%s_%s_f%u\t[bpf]\n",
				(unsigned long long)ksyms[i], tag, info.name, i);
		else
			fprintf(syms, "%016llx t bpf_prog_%s_%s\t[bpf]\n",
				(unsigned long long)ksyms[i], tag, info.name);
	}
	*mem_off += insns_len;
	err = n;
out:
	free(ksyms);
	free(lens);
	free(insns);
	return err;
}

int kcore_add_bpf_jit(const char *dir, const int *prog_fds, int nr)
{
	Elf64_Ehdr eh = {
		.e_ident = { ELFMAG0, ELFMAG1, ELFMAG2, ELFMAG3, ELFCLASS64, ELFDATA2LSB,
			     EV_CURRENT, ELFOSABI_NONE },
		.e_type = ET_CORE,
		.e_machine = EM_X86_64,
		.e_version = EV_CURRENT,
		.e_ehsize = sizeof(Elf64_Ehdr),
		.e_phentsize = sizeof(Elf64_Phdr),
	};
	struct piece pieces[MAX_PIECES];
	char path[PATH_MAX];
	uint64_t mem_off = 0;
	FILE *syms = NULL;
	int mem, i, n = 0, got, err = 0;

	if (!dir || (nr && !prog_fds))
		return -EINVAL;
	if (!nr)
		return 0;
	mem = memfd_create("ptbpf-bpf-jit", MFD_CLOEXEC);
	if (mem < 0)
		return -errno;
	snprintf(path, sizeof(path), "%s/kallsyms", dir);
	syms = fopen(path, "ae");
	if (!syms) {
		err = -errno;
		elog("--kernel: cannot add the BPF programs to %s: %s\n", path, strerror(-err));
		goto out;
	}
	for (i = 0; i < nr && !err; i++) {
		got = jit_pieces(prog_fds[i], mem, &mem_off, pieces + n, MAX_PIECES - n, syms);
		if (got < 0) {
			err = got;
			elog("--kernel: cannot read the JIT image of BPF program fd %d: %s%s\n",
			     prog_fds[i], strerror(-err), err == -EPERM ? " (the kernel hides it: "
			     "kernel.kptr_restrict, or no CAP_SYSLOG)" : "");
		} else {
			n += got;
		}
	}
	if (fclose(syms) && !err)
		err = -errno;
	if (err)
		goto out;
	snprintf(path, sizeof(path), "%s/bpf_jit", dir);
	err = write_kcore(mem, &eh, pieces, n, path);
	if (err)
		elog("--kernel: cannot write %s: %s\n", path, strerror(-err));
out:
	close(mem);
	return err;
}
