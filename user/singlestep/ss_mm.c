// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <unistd.h>

#include "array.h"
#include "log.h"
#include "perfdata.h"
#include "proc_synth.h"
#include "ss_mm.h"

#define PAGE 4096ull

/* A kept copy of one page of code that no file holds (anonymous, vDSO, [uprobes]). */
struct ss_page {
	uint64_t addr;		/* page address */
	uint8_t *bytes;		/* PAGE bytes */
};

/* Decoded instructions by address; ip 0 marks a free slot (no code runs at 0). */
struct ss_icache_ent {
	uint64_t ip;
	struct ss_insn insn;
};

struct ss_mm {
	pid_t pid;
	int id;
	ss_mm_map_cb cb;
	void *ctx;
	struct ss_map *maps;	/* every executable mapping seen, gone ones included */
	size_t nr_maps, cap_maps;
	struct ss_page *pages;
	size_t nr_pages, cap_pages;
	struct ss_icache_ent *ic;
	size_t ic_cap, ic_used;	/* ic_cap is a power of two */
};

static void map_release(struct ss_map *m)
{
	free(m->name);
	if (m->fd >= 0)
		close(m->fd);
}

void ss_mm__free(struct ss_mm *mm)
{
	size_t i;

	if (!mm)
		return;
	for (i = 0; i < mm->nr_maps; i++)
		map_release(&mm->maps[i]);
	for (i = 0; i < mm->nr_pages; i++)
		free(mm->pages[i].bytes);
	free(mm->maps);
	free(mm->pages);
	free(mm->ic);
	free(mm);
}

pid_t ss_mm__pid(const struct ss_mm *mm)
{
	return mm->pid;
}

int ss_mm__id(const struct ss_mm *mm)
{
	return mm->id;
}

const struct ss_map *ss_mm__maps(const struct ss_mm *mm, size_t *nr)
{
	*nr = mm->nr_maps;
	return mm->maps;
}

static void icache_clear(struct ss_mm *mm)
{
	/* before the first insert there is no table (memset(NULL) is undefined) */
	if (mm->ic)
		memset(mm->ic, 0, mm->ic_cap * sizeof(*mm->ic));
	mm->ic_used = 0;
}

static struct ss_icache_ent *icache_slot(struct ss_icache_ent *ic, size_t cap, uint64_t ip)
{
	size_t i = (ip * 0x9e3779b97f4a7c15ull) >> 20 & (cap - 1);

	while (ic[i].ip && ic[i].ip != ip)
		i = (i + 1) & (cap - 1);
	return &ic[i];
}

static int icache_put(struct ss_mm *mm, uint64_t ip, const struct ss_insn *insn)
{
	struct ss_icache_ent *e;

	if ((mm->ic_used + 1) * 2 > mm->ic_cap) {
		size_t cap = mm->ic_cap ? mm->ic_cap * 2 : 4096, i;
		struct ss_icache_ent *ic = calloc(cap, sizeof(*ic));

		if (!ic)
			return -ENOMEM;
		for (i = 0; i < mm->ic_cap; i++)
			if (mm->ic[i].ip)
				*icache_slot(ic, cap, mm->ic[i].ip) = mm->ic[i];
		free(mm->ic);
		mm->ic = ic;
		mm->ic_cap = cap;
	}
	e = icache_slot(mm->ic, mm->ic_cap, ip);
	if (!e->ip)
		mm->ic_used++;
	e->ip = ip;
	e->insn = *insn;
	return 0;
}

static const struct ss_insn *icache_get(const struct ss_mm *mm, uint64_t ip)
{
	const struct ss_icache_ent *e;

	if (!mm->ic_cap)
		return NULL;
	e = icache_slot(mm->ic, mm->ic_cap, ip);
	return e->ip ? &e->insn : NULL;
}

static enum ss_map_kind map_kind(const char *name, uint64_t ino)
{
	if (!strcmp(name, "[vdso]"))
		return SS_MAP_VDSO;
	if (!strcmp(name, "[uprobes]"))
		return SS_MAP_UPROBES;
	if (name[0] == '[')
		return SS_MAP_SPECIAL;
	if (name[0] == '/' && ino)
		return SS_MAP_FILE;
	return SS_MAP_ANON;
}

static bool same_map(const struct ss_map *m, const struct pd_record *r)
{
	return m->start == r->mmap.addr && m->end == r->mmap.addr + r->mmap.len &&
	       m->pgoff == r->mmap.pgoff && m->ino == r->mmap.ino && m->prot == r->mmap.prot &&
	       !strcmp(m->name, r->mmap.filename);
}

/* The file behind a mapping, even if its path was replaced since: map_files has it. */
static int open_mapped_file(pid_t pid, const struct pd_record *r)
{
	char path[96];
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/map_files/%" PRIx64 "-%" PRIx64, pid, r->mmap.addr,
		 r->mmap.addr + r->mmap.len);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		fd = open(r->mmap.filename, O_RDONLY | O_CLOEXEC);
	return fd;
}

static int add_map(struct ss_mm *mm, const struct pd_record *r, int fd)
{
	struct ss_map *m;

	if (array_grow_sz((void **)&mm->maps, &mm->cap_maps, mm->nr_maps + 1, sizeof(*mm->maps)))
		return -ENOMEM;
	m = &mm->maps[mm->nr_maps];
	*m = (struct ss_map){
		.start = r->mmap.addr,
		.end = r->mmap.addr + r->mmap.len,
		.pgoff = r->mmap.pgoff,
		.prot = r->mmap.prot,
		.flags = r->mmap.flags,
		.maj = r->mmap.maj,
		.min = r->mmap.min,
		.ino = r->mmap.ino,
		.name = strdup(r->mmap.filename),
		.kind = map_kind(r->mmap.filename, r->mmap.ino),
		.fd = -1,
	};
	if (!m->name)
		return -ENOMEM;
	if (m->kind == SS_MAP_FILE) {
		m->fd = fd >= 0 ? fd : open_mapped_file(mm->pid, r);
		/* Unreadable file (deleted, other namespace): read the code from memory. */
		if (m->fd < 0)
			m->kind = SS_MAP_ANON;
	}
	mm->nr_maps++;
	return 0;
}

int ss_mm__refresh(struct ss_mm *mm)
{
	char path[64], *line = NULL;
	size_t line_cap = 0, i, first_new = mm->nr_maps;
	bool *seen = NULL;
	struct pd_record r;
	int changes = 0, err = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", mm->pid);
	f = fopen(path, "re");
	if (!f)
		return errno == ENOENT ? -ESRCH : -errno;
	seen = calloc(mm->nr_maps + 1, sizeof(*seen));
	if (!seen) {
		fclose(f);
		return -ENOMEM;
	}
	while (getline(&line, &line_cap, f) > 0) {
		if (proc_synth_maps_line(line, mm->pid, &r) != 1)
			continue;
		for (i = 0; i < first_new; i++)
			if (!mm->maps[i].gone && same_map(&mm->maps[i], &r))
				break;
		if (i < first_new) {
			seen[i] = true;
			continue;
		}
		err = add_map(mm, &r, -1);
		if (err)
			break;
		changes++;
	}
	free(line);
	fclose(f);
	for (i = 0; !err && i < first_new; i++) {
		if (mm->maps[i].gone || seen[i])
			continue;
		mm->maps[i].gone = true;
		changes++;
	}
	free(seen);
	if (changes)
		icache_clear(mm);
	for (i = first_new; !err && i < mm->nr_maps; i++)
		if (mm->cb)
			err = mm->cb(mm->ctx, mm, &mm->maps[i]);
	return err ? err : changes;
}

static struct ss_mm *mm_alloc(pid_t pid, int id, ss_mm_map_cb cb, void *ctx)
{
	struct ss_mm *mm = calloc(1, sizeof(*mm));

	if (!mm)
		return NULL;
	mm->pid = pid;
	mm->id = id;
	mm->cb = cb;
	mm->ctx = ctx;
	return mm;
}

int ss_mm__new(pid_t pid, int id, ss_mm_map_cb cb, void *ctx, struct ss_mm **out)
{
	struct ss_mm *mm = mm_alloc(pid, id, cb, ctx);
	int err;

	if (!mm)
		return -ENOMEM;
	err = ss_mm__refresh(mm);
	if (err < 0) {
		ss_mm__free(mm);
		return err;
	}
	*out = mm;
	return 0;
}

void ss_map__record(const struct ss_map *m, pid_t pid, struct pd_record *r)
{
	*r = (struct pd_record){ .type = PERF_RECORD_MMAP2, .misc = PERF_RECORD_MISC_USER };
	r->mmap.pid = pid;
	r->mmap.tid = pid;
	r->mmap.addr = m->start;
	r->mmap.len = m->end - m->start;
	r->mmap.pgoff = m->pgoff;
	r->mmap.maj = m->maj;
	r->mmap.min = m->min;
	r->mmap.ino = m->ino;
	r->mmap.prot = m->prot;
	r->mmap.flags = m->flags;
	r->mmap.filename = m->name;
}

int ss_mm__fork(const struct ss_mm *parent, pid_t child, int id, struct ss_mm **out)
{
	struct ss_mm *mm = mm_alloc(child, id, parent->cb, parent->ctx);
	size_t i;
	int err = 0;

	if (!mm)
		return -ENOMEM;
	for (i = 0; !err && i < parent->nr_maps; i++) {
		const struct ss_map *p = &parent->maps[i];
		struct pd_record r;
		int fd;

		if (p->gone)
			continue;
		fd = p->fd >= 0 ? fcntl(p->fd, F_DUPFD_CLOEXEC, 0) : -1;
		ss_map__record(p, child, &r);
		err = add_map(mm, &r, fd);
		if (err && fd >= 0)
			close(fd);
	}
	for (i = 0; !err && i < parent->nr_pages; i++) {
		struct ss_page *pg;

		err = array_grow_sz((void **)&mm->pages, &mm->cap_pages, mm->nr_pages + 1,
				    sizeof(*mm->pages));
		if (err)
			break;
		pg = &mm->pages[mm->nr_pages];
		pg->addr = parent->pages[i].addr;
		pg->bytes = malloc(PAGE);
		if (!pg->bytes) {
			err = -ENOMEM;
			break;
		}
		memcpy(pg->bytes, parent->pages[i].bytes, PAGE);
		mm->nr_pages++;
	}
	if (err) {
		ss_mm__free(mm);
		return err;
	}
	*out = mm;
	return 0;
}

static const struct ss_map *find(const struct ss_mm *mm, uint64_t ip, bool any)
{
	size_t i;

	/* Newest first: a gone mapping only answers for code nothing replaced. */
	for (i = mm->nr_maps; i-- > 0;) {
		const struct ss_map *m = &mm->maps[i];

		if ((any || !m->gone) && ip >= m->start && ip < m->end)
			return m;
	}
	return NULL;
}

bool ss_mm__has_uprobes(const struct ss_mm *mm)
{
	size_t i;

	for (i = 0; i < mm->nr_maps; i++)
		if (mm->maps[i].kind == SS_MAP_UPROBES && !mm->maps[i].gone)
			return true;
	return false;
}

const struct ss_map *ss_mm__find(const struct ss_mm *mm, uint64_t ip)
{
	return find(mm, ip, false);
}

static struct ss_page *page_get(struct ss_mm *mm, uint64_t addr)
{
	size_t i;

	for (i = 0; i < mm->nr_pages; i++)
		if (mm->pages[i].addr == addr)
			return &mm->pages[i];
	return NULL;
}

/* A kept page; `fill` decides its bytes when it is new: from memory, or all int3. */
static int page_keep(struct ss_mm *mm, uint64_t addr, bool from_memory, struct ss_page **out)
{
	struct ss_page *pg = page_get(mm, addr);
	uint8_t *bytes;

	if (pg) {
		*out = pg;
		return 0;
	}
	bytes = malloc(PAGE);
	if (!bytes)
		return -ENOMEM;
	if (from_memory) {
		struct iovec local = { bytes, PAGE }, remote = { (void *)(uintptr_t)addr, PAGE };

		if (process_vm_readv(mm->pid, &local, 1, &remote, 1, 0) != (ssize_t)PAGE) {
			free(bytes);
			return -EFAULT;
		}
	} else {
		memset(bytes, 0xcc, PAGE);
	}
	if (array_grow_sz((void **)&mm->pages, &mm->cap_pages, mm->nr_pages + 1,
			  sizeof(*mm->pages))) {
		free(bytes);
		return -ENOMEM;
	}
	pg = &mm->pages[mm->nr_pages++];
	pg->addr = addr;
	pg->bytes = bytes;
	*out = pg;
	return 0;
}

/* Bytes of one mapping at ip, at most to its end. */
static int read_map(struct ss_mm *mm, const struct ss_map *m, uint64_t ip, uint8_t *buf,
		    size_t size, bool may_fetch)
{
	uint64_t avail = m->end - ip;
	struct ss_page *pg;
	ssize_t n;
	size_t off;
	int err;

	if (size > avail)
		size = avail;
	switch (m->kind) {
	case SS_MAP_FILE:
		n = pread(m->fd, buf, size, m->pgoff + (ip - m->start));
		if (n < 0)
			return -EFAULT;
		/* Past the end of the file the mapping reads as zeros. */
		memset(buf + n, 0, size - n);
		return (int)size;
	case SS_MAP_UPROBES:
		pg = page_get(mm, ip & ~(PAGE - 1));
		if (!pg)
			return -EFAULT;
		break;
	default:
		if (may_fetch && !m->gone)
			err = page_keep(mm, ip & ~(PAGE - 1), true, &pg);
		else
			err = (pg = page_get(mm, ip & ~(PAGE - 1))) ? 0 : -EFAULT;
		if (err)
			return err;
		break;
	}
	off = ip & (PAGE - 1);
	if (size > PAGE - off)
		size = PAGE - off;
	memcpy(buf, pg->bytes + off, size);
	return (int)size;
}

static int read_code(struct ss_mm *mm, uint64_t ip, uint8_t *buf, size_t size, bool any)
{
	size_t done = 0;

	while (done < size) {
		const struct ss_map *m = find(mm, ip + done, any);
		int n;

		if (!m)
			break;
		n = read_map(mm, m, ip + done, buf + done, size - done, !any);
		if (n <= 0)
			break;
		done += n;
	}
	return done ? (int)done : -EFAULT;
}

int ss_mm__read(struct ss_mm *mm, uint64_t ip, uint8_t *buf, size_t size)
{
	return read_code(mm, ip, buf, size, true);
}

int ss_mm__insn(struct ss_mm *mm, struct ss_dis *dis, uint64_t ip, struct ss_insn *out)
{
	const struct ss_insn *hit = icache_get(mm, ip);
	const struct ss_map *m;
	uint8_t bytes[SS_INSN_MAX_LEN];
	int n, err;

	if (hit) {
		*out = *hit;
		return 0;
	}
	m = find(mm, ip, false);
	if (!m) {
		err = ss_mm__refresh(mm);
		if (err < 0)
			return err;
		m = find(mm, ip, false);
		if (!m)
			return -EFAULT;
	}
	if (m->kind == SS_MAP_UPROBES)
		return -EAGAIN;
	n = read_code(mm, ip, bytes, sizeof(bytes), false);
	if (n < 0)
		return n;
	err = ss_dis__decode(dis, bytes, n, ip, out);
	if (err)
		return err;
	return icache_put(mm, ip, out);
}

/* Intel's recommended NOPs of 1 to 9 bytes; longer ones take more 0x66 prefixes. */
static void write_nop(uint8_t *p, unsigned int len)
{
	static const uint8_t nops[9][9] = {
		{ 0x90 },
		{ 0x66, 0x90 },
		{ 0x0f, 0x1f, 0x00 },
		{ 0x0f, 0x1f, 0x40, 0x00 },
		{ 0x0f, 0x1f, 0x44, 0x00, 0x00 },
		{ 0x66, 0x0f, 0x1f, 0x44, 0x00, 0x00 },
		{ 0x0f, 0x1f, 0x80, 0x00, 0x00, 0x00, 0x00 },
		{ 0x0f, 0x1f, 0x84, 0x00, 0x00, 0x00, 0x00, 0x00 },
		{ 0x66, 0x0f, 0x1f, 0x84, 0x00, 0x00, 0x00, 0x00, 0x00 },
	};

	while (len > 9) {
		*p++ = 0x66;
		len--;
	}
	memcpy(p, nops[len - 1], len);
}

int ss_mm__learn_uprobes(struct ss_mm *mm, uint64_t ip, const struct ss_insn *insn)
{
	size_t off = ip & (PAGE - 1);
	struct ss_page *pg;
	int err;

	if (!insn->len || insn->len > SS_INSN_MAX_LEN || off + insn->len > PAGE ||
	    (insn->cls == SS_INSN_SYSCALL && insn->len != 2) ||
	    (insn->cls == SS_INSN_RET && insn->len != 1) ||
	    (insn->cls != SS_INSN_OTHER && insn->cls != SS_INSN_SYSCALL &&
	     insn->cls != SS_INSN_RET))
		return -EINVAL;
	err = page_keep(mm, ip & ~(PAGE - 1), false, &pg);
	if (err)
		return err;
	switch (insn->cls) {
	case SS_INSN_SYSCALL:
		pg->bytes[off] = 0x0f;
		pg->bytes[off + 1] = 0x05;
		break;
	case SS_INSN_RET:
		pg->bytes[off] = 0xc3;
		break;
	default:
		write_nop(pg->bytes + off, insn->len);
		break;
	}
	return icache_put(mm, ip, insn);
}

int ss_mm__learn(struct ss_mm *mm, uint64_t ip, const struct ss_insn *insn)
{
	return icache_put(mm, ip, insn);
}

int ss_mm__mem_byte(struct ss_mm *mm, pid_t tid, uint64_t ip)
{
	long word;

	errno = 0;
	word = ptrace(PTRACE_PEEKTEXT, tid, (void *)(uintptr_t)ip, NULL);
	if (errno)
		return -errno;
	return (uint8_t)word;
}
