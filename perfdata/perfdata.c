// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * struct capture: life cycle, builders, and the codec of single records shared by the
 * perf.data reader (perfdata_read.c) and writer (perfdata_write.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "array.h"
#include "perfdata.h"
#include "perfdata_int.h"
#include "trigger_abi.h"

/*
 * Everything a capture points to is owned by it. Small allocations (strings, id arrays)
 * come from chunks so that a file with a million MMAP2 records does not cost two
 * million mallocs; big ones (trace buffers, the vDSO) are allocated one by one. The
 * growable arrays of struct capture (attrs, records, aux...) grow with array_grow().
 */
#define PD_CHUNK_SIZE (64 * 1024)
#define PD_BIG_ALLOC (PD_CHUNK_SIZE / 4)

struct pd_chunk {
	struct pd_chunk *next;		/* older chunk or big allocation */
	size_t used;			/* bytes handed out from data[] (small chunks only) */
	size_t size;			/* bytes of data[] */
	max_align_t data[];		/* the memory */
};

/* A part of a file mapped into the capture (pd_map_file). */
struct pd_mapping {
	struct pd_mapping *next;
	void *addr;
	size_t len;
	int fd;				/* the file (pd_priv.fd), -1: not known */
	uint64_t start;			/* its offset mapped at addr */
};

struct pd_priv {
	struct pd_chunk *chunks;	/* newest first; the head is the one being filled */
	struct pd_chunk *big;		/* big allocations, one per chunk */
	struct pd_mapping *maps;	/* file ranges mapped by the reader */
	size_t records_cap;		/* allocated entries of cap->records */
	size_t aux_cap;			/* allocated entries of cap->aux */
	size_t build_ids_cap;		/* allocated entries of cap->build_ids */
	uint32_t attrs_cap;		/* allocated entries of cap->attrs */
	uint32_t pmus_cap;		/* allocated entries of cap->pmus */
	int fd, src_fd;			/* the mapped file: a dup of the reader's src_fd (-1:
					 * none yet), open until capture__free */
};

struct capture *capture__new(void)
{
	struct capture *cap;

	cap = calloc(1, sizeof(*cap));
	if (!cap)
		return NULL;
	cap->priv = calloc(1, sizeof(struct pd_priv));
	if (!cap->priv) {
		free(cap);
		return NULL;
	}
	((struct pd_priv *)cap->priv)->fd = -1;
	return cap;
}

static void pd_free_chunks(struct pd_chunk *c)
{
	while (c) {
		struct pd_chunk *next = c->next;

		free(c);
		c = next;
	}
}

void capture__free(struct capture *cap)
{
	struct pd_priv *priv;

	if (!cap)
		return;
	priv = cap->priv;
	if (priv) {
		pd_free_chunks(priv->chunks);
		pd_free_chunks(priv->big);
		while (priv->maps) {
			struct pd_mapping *m = priv->maps;

			priv->maps = m->next;
			munmap(m->addr, m->len);
			free(m);
		}
		if (priv->fd >= 0)
			close(priv->fd);
		free(priv);
	}
	free(cap->attrs);
	free(cap->records);
	free(cap->aux);
	free(cap->build_ids);
	free(cap->pmus);
	free(cap);
}

void *capture__alloc(struct capture *cap, size_t size)
{
	struct pd_priv *priv;
	struct pd_chunk *c;
	size_t align = sizeof(max_align_t);

	if (!cap || !cap->priv)
		return NULL;
	priv = cap->priv;
	if (size == 0)
		size = 1;
	if (size > SIZE_MAX - sizeof(*c) - align)
		return NULL;
	size = (size + align - 1) & ~(align - 1);
	if (size >= PD_BIG_ALLOC) {
		c = calloc(1, sizeof(*c) + size);
		if (!c)
			return NULL;
		c->size = c->used = size;
		c->next = priv->big;
		priv->big = c;
		return c->data;
	}
	c = priv->chunks;
	if (!c || c->size - c->used < size) {
		c = calloc(1, sizeof(*c) + PD_CHUNK_SIZE);
		if (!c)
			return NULL;
		c->size = PD_CHUNK_SIZE;
		c->next = priv->chunks;
		priv->chunks = c;
	}
	c->used += size;
	return (char *)c->data + c->used - size;
}

void *pd_map_file(struct capture *cap, int fd, uint64_t off, size_t size)
{
	long page = sysconf(_SC_PAGESIZE);
	uint64_t start = off & ~(uint64_t)(page - 1);
	struct pd_priv *priv;
	struct pd_mapping *m;
	void *addr;

	if (!cap || !cap->priv || !size || size > SIZE_MAX - (off - start))
		return NULL;
	priv = cap->priv;
	m = malloc(sizeof(*m));
	if (!m)
		return NULL;
	m->len = size + (off - start);
	/*
	 * Read-only, and not populated: a decode of some threads reads a few percent of
	 * it, and populates what it reads (decoder/session.c, populate()).
	 */
	addr = mmap(NULL, m->len, PROT_READ, MAP_PRIVATE, fd, (off_t)start);
	if (addr == MAP_FAILED) {
		free(m);
		return NULL;
	}
	m->addr = addr;
	m->start = start;
	/* for capture__file_range(): reading a few bytes costs less than touching a page */
	if (priv->fd < 0 && (priv->fd = fcntl(fd, F_DUPFD_CLOEXEC, 0)) >= 0)
		priv->src_fd = fd;
	m->fd = priv->fd >= 0 && priv->src_fd == fd ? priv->fd : -1;
	m->next = priv->maps;
	priv->maps = m;
	return (char *)addr + (off - start);
}

int capture__file_range(const struct capture *cap, const void *bytes, size_t size, int *fd,
			uint64_t *off)
{
	const struct pd_priv *priv = cap ? cap->priv : NULL;
	const struct pd_mapping *m;
	const char *p = bytes;

	for (m = priv ? priv->maps : NULL; m; m = m->next) {
		const char *a = m->addr;

		if (m->fd >= 0 && p >= a && p - a <= (ptrdiff_t)m->len &&
		    size <= m->len - (size_t)(p - a)) {
			*fd = m->fd;
			*off = m->start + (uint64_t)(p - a);
			return 0;
		}
	}
	return -ENOENT;
}

char *capture__strdup(struct capture *cap, const char *s)
{
	size_t len;
	char *p;

	if (!s)
		return NULL;
	len = strlen(s);
	p = capture__alloc(cap, len + 1);
	if (p)
		memcpy(p, s, len + 1);
	return p;
}

int capture__add_attr(struct capture *cap, const struct perf_event_attr *attr,
		      const uint64_t *ids, uint32_t nr_ids, const char *name)
{
	struct pd_priv *priv;
	struct pd_attr *a;

	if (!cap || !cap->priv || !attr || (nr_ids && !ids))
		return -EINVAL;
	priv = cap->priv;
	if (array_grow((void **)&cap->attrs, &priv->attrs_cap, cap->nr_attrs + 1,
		       sizeof(*cap->attrs)))
		return -ENOMEM;
	a = &cap->attrs[cap->nr_attrs];
	memset(a, 0, sizeof(*a));
	a->attr = *attr;
	if (nr_ids) {
		a->ids = capture__alloc(cap, nr_ids * sizeof(*ids));
		if (!a->ids)
			return -ENOMEM;
		memcpy(a->ids, ids, nr_ids * sizeof(*ids));
		a->nr_ids = nr_ids;
	}
	if (name) {
		a->name = capture__strdup(cap, name);
		if (!a->name)
			return -ENOMEM;
	}
	cap->nr_attrs++;
	return 0;
}

/* Copy a string into the capture; NULL stays NULL. */
static int pd_own_str(struct capture *cap, char **s)
{
	if (!*s)
		return 0;
	*s = capture__strdup(cap, *s);
	return *s ? 0 : -ENOMEM;
}

int capture__add_record(struct capture *cap, const struct pd_record *rec)
{
	struct pd_priv *priv;
	struct pd_record *r;
	int err;

	if (!cap || !cap->priv || !rec)
		return -EINVAL;
	priv = cap->priv;
	err = array_grow_sz((void **)&cap->records, &priv->records_cap, cap->nr_records + 1,
		      sizeof(*cap->records));
	if (err)
		return err;
	r = &cap->records[cap->nr_records];
	*r = *rec;
	switch (rec->type) {
	case PERF_RECORD_MMAP:
	case PERF_RECORD_MMAP2:
		err = pd_own_str(cap, &r->mmap.filename);
		break;
	case PERF_RECORD_COMM:
		err = pd_own_str(cap, &r->comm.comm);
		break;
	case PD_RECORD_PTBPF_TRIGGER:
		err = pd_own_str(cap, &r->trigger.desc);
		break;
	default:
		break;
	}
	if (err)
		return err;
	cap->nr_records++;
	return 0;
}

int capture__add_aux(struct capture *cap, const struct pd_auxtrace *aux, const void *data)
{
	struct pd_priv *priv;
	struct pd_auxtrace *a;
	uint8_t *copy = NULL;
	int err;

	if (!cap || !cap->priv || !aux || (aux->size && !data))
		return -EINVAL;
	priv = cap->priv;
	if (aux->size) {
		if (aux->size > SIZE_MAX / 2)
			return -ENOMEM;
		copy = capture__alloc(cap, aux->size);
		if (!copy)
			return -ENOMEM;
		memcpy(copy, data, aux->size);
	}
	err = array_grow_sz((void **)&cap->aux, &priv->aux_cap, cap->nr_aux + 1, sizeof(*cap->aux));
	if (err)
		return err;
	a = &cap->aux[cap->nr_aux++];
	*a = *aux;
	a->data = copy;
	return 0;
}

int capture__set_vdso(struct capture *cap, const void *bytes, size_t size)
{
	uint8_t *copy;

	if (!cap || !cap->priv || !bytes || !size)
		return -EINVAL;
	copy = capture__alloc(cap, size);
	if (!copy)
		return -ENOMEM;
	memcpy(copy, bytes, size);
	cap->vdso = copy;
	cap->vdso_size = size;
	return 0;
}

int capture__add_build_id(struct capture *cap, const struct pd_build_id *bid)
{
	struct pd_priv *priv;
	struct pd_build_id *b;
	int err;

	if (!cap || !cap->priv || !bid || bid->size > sizeof(bid->id))
		return -EINVAL;
	priv = cap->priv;
	err = array_grow_sz((void **)&cap->build_ids, &priv->build_ids_cap, cap->nr_build_ids + 1,
		      sizeof(*cap->build_ids));
	if (err)
		return err;
	b = &cap->build_ids[cap->nr_build_ids];
	*b = *bid;
	b->filename = capture__strdup(cap, bid->filename ? bid->filename : "");
	if (!b->filename)
		return -ENOMEM;
	cap->nr_build_ids++;
	return 0;
}

int capture__add_pmu(struct capture *cap, uint32_t type, const char *name)
{
	struct pd_pmu *pmus;
	char *copy;

	if (!cap || !cap->priv || !name)
		return -EINVAL;
	copy = capture__strdup(cap, name);
	if (!copy)
		return -ENOMEM;
	if (array_grow((void **)&cap->pmus, &((struct pd_priv *)cap->priv)->pmus_cap,
		       cap->nr_pmus + 1, sizeof(*cap->pmus)))
		return -ENOMEM;
	pmus = cap->pmus;
	pmus[cap->nr_pmus].type = type;
	pmus[cap->nr_pmus].name = copy;
	cap->nr_pmus++;
	return 0;
}

const struct pd_attr *capture__attr_by_id(const struct capture *cap, uint64_t id)
{
	uint32_t i, j;

	if (!cap)
		return NULL;
	for (i = 0; i < cap->nr_attrs; i++)
		for (j = 0; j < cap->attrs[i].nr_ids; j++)
			if (cap->attrs[i].ids[j] == id)
				return &cap->attrs[i];
	return NULL;
}

const struct pd_attr *capture__record_attr(const struct capture *cap, const struct pd_record *rec)
{
	const struct pd_attr *a;

	if (!cap || !rec || !cap->nr_attrs)
		return NULL;
	if (rec->sample.valid & (PERF_SAMPLE_ID | PERF_SAMPLE_IDENTIFIER)) {
		a = capture__attr_by_id(cap, rec->sample.id);
		if (a)
			return a;
	}
	if (rec->type == PERF_RECORD_ITRACE_START || rec->type == PERF_RECORD_AUX)
		return &cap->attrs[0];
	return &cap->attrs[cap->nr_attrs - 1];
}

uint64_t pd_tsc_to_time(const struct pd_pt_info *pt, uint64_t tsc)
{
	uint64_t quot, rem;

	if (!pt || !pt->time_mult || pt->time_shift >= 64)
		return tsc;
	quot = tsc >> pt->time_shift;
	rem = tsc & ((1ULL << pt->time_shift) - 1);
	return pt->time_zero + quot * pt->time_mult + ((rem * pt->time_mult) >> pt->time_shift);
}

uint64_t pd_time_to_tsc(const struct pd_pt_info *pt, uint64_t time)
{
	uint64_t t, quot, rem;

	if (!pt || !pt->time_mult || pt->time_shift >= 64)
		return time;
	t = time - pt->time_zero;
	quot = t / pt->time_mult;
	rem = t % pt->time_mult;
	return (quot << pt->time_shift) + (rem << pt->time_shift) / pt->time_mult;
}

const char *pd_record_type_name(uint32_t type)
{
	static const char *const names[] = {
		[PERF_RECORD_MMAP] = "MMAP",
		[PERF_RECORD_LOST] = "LOST",
		[PERF_RECORD_COMM] = "COMM",
		[PERF_RECORD_EXIT] = "EXIT",
		[PERF_RECORD_THROTTLE] = "THROTTLE",
		[PERF_RECORD_UNTHROTTLE] = "UNTHROTTLE",
		[PERF_RECORD_FORK] = "FORK",
		[PERF_RECORD_READ] = "READ",
		[PERF_RECORD_SAMPLE] = "SAMPLE",
		[PERF_RECORD_MMAP2] = "MMAP2",
		[PERF_RECORD_AUX] = "AUX",
		[PERF_RECORD_ITRACE_START] = "ITRACE_START",
		[PERF_RECORD_LOST_SAMPLES] = "LOST_SAMPLES",
		[PERF_RECORD_SWITCH] = "SWITCH",
		[PERF_RECORD_SWITCH_CPU_WIDE] = "SWITCH_CPU_WIDE",
		[PERF_RECORD_NAMESPACES] = "NAMESPACES",
		[PERF_RECORD_KSYMBOL] = "KSYMBOL",
		[PERF_RECORD_BPF_EVENT] = "BPF_EVENT",
		[PERF_RECORD_CGROUP] = "CGROUP",
		[PERF_RECORD_TEXT_POKE] = "TEXT_POKE",
		[21] = "AUX_OUTPUT_HW_ID",
		[PD_RECORD_HEADER_ATTR] = "HEADER_ATTR",
		[PD_RECORD_HEADER_EVENT_TYPE] = "HEADER_EVENT_TYPE",
		[PD_RECORD_HEADER_TRACING_DATA] = "HEADER_TRACING_DATA",
		[PD_RECORD_HEADER_BUILD_ID] = "HEADER_BUILD_ID",
		[PD_RECORD_FINISHED_ROUND] = "FINISHED_ROUND",
		[PD_RECORD_ID_INDEX] = "ID_INDEX",
		[PD_RECORD_AUXTRACE_INFO] = "AUXTRACE_INFO",
		[PD_RECORD_AUXTRACE] = "AUXTRACE",
		[PD_RECORD_AUXTRACE_ERROR] = "AUXTRACE_ERROR",
		[PD_RECORD_THREAD_MAP] = "THREAD_MAP",
		[PD_RECORD_CPU_MAP] = "CPU_MAP",
		[PD_RECORD_STAT_CONFIG] = "STAT_CONFIG",
		[PD_RECORD_STAT] = "STAT",
		[PD_RECORD_STAT_ROUND] = "STAT_ROUND",
		[PD_RECORD_EVENT_UPDATE] = "EVENT_UPDATE",
		[PD_RECORD_TIME_CONV] = "TIME_CONV",
		[PD_RECORD_HEADER_FEATURE] = "HEADER_FEATURE",
		[PD_RECORD_COMPRESSED] = "COMPRESSED",
		[PD_RECORD_FINISHED_INIT] = "FINISHED_INIT",
	};

	if (type == PD_RECORD_PTBPF_TRIGGER)
		return "TRIGGER";
	if (type < ARRAY_SIZE(names) && names[type])
		return names[type];
	return "unknown";
}

/* Both names of each trigger kind, indexed by enum trigger_kind and enum pd_stop_kind. */
static const struct {
	const char *name;	/* JSON, capture summary, FXT marker */
	const char *label;	/* decode --info */
} trigger_kinds[] = {
	[TRIGGER_UPROBE] = { "uprobe", "uprobe" },
	[TRIGGER_UPROBE_LATENCY] = { "uprobe_latency", "uprobe latency" },
	[TRIGGER_RUNQ_LATENCY] = { "runq_latency", "run-queue latency" },
	[TRIGGER_SYSCALL_LATENCY] = { "syscall_latency", "syscall latency" },
	[TRIGGER_KPROBE] = { "kprobe", "kprobe" },
	[TRIGGER_TRACEPOINT] = { "tracepoint", "tracepoint" },
	[PD_STOP_SIGNAL] = { "signal", "signal" },
	[PD_STOP_EXIT] = { "exit", "target exit" },
	[PD_STOP_DURATION] = { "duration", "duration" },
	[TRIGGER_USDT] = { "usdt", "USDT probe" },
};

const char *trigger_kind_name(uint32_t kind)
{
	if (kind < ARRAY_SIZE(trigger_kinds) && trigger_kinds[kind].name)
		return trigger_kinds[kind].name;
	return "none";
}

const char *trigger_kind_label(uint32_t kind)
{
	if (kind < ARRAY_SIZE(trigger_kinds) && trigger_kinds[kind].label)
		return trigger_kinds[kind].label;
	return "unknown";
}

const char *pd_feature_name(unsigned int feat)
{
	static const char *const names[] = {
		[PD_FEAT_TRACING_DATA] = "tracing_data",
		[PD_FEAT_BUILD_ID] = "build_id",
		[PD_FEAT_HOSTNAME] = "hostname",
		[PD_FEAT_OSRELEASE] = "osrelease",
		[PD_FEAT_VERSION] = "version",
		[PD_FEAT_ARCH] = "arch",
		[PD_FEAT_NRCPUS] = "nrcpus",
		[PD_FEAT_CPUDESC] = "cpudesc",
		[PD_FEAT_CPUID] = "cpuid",
		[PD_FEAT_TOTAL_MEM] = "total_mem",
		[PD_FEAT_CMDLINE] = "cmdline",
		[PD_FEAT_EVENT_DESC] = "event_desc",
		[PD_FEAT_CPU_TOPOLOGY] = "cpu_topology",
		[PD_FEAT_NUMA_TOPOLOGY] = "numa_topology",
		[PD_FEAT_BRANCH_STACK] = "branch_stack",
		[PD_FEAT_PMU_MAPPINGS] = "pmu_mappings",
		[PD_FEAT_GROUP_DESC] = "group_desc",
		[PD_FEAT_AUXTRACE] = "auxtrace",
		[PD_FEAT_STAT] = "stat",
		[PD_FEAT_CACHE] = "cache",
		[PD_FEAT_SAMPLE_TIME] = "sample_time",
		[PD_FEAT_MEM_TOPOLOGY] = "mem_topology",
		[PD_FEAT_CLOCKID] = "clockid",
		[PD_FEAT_DIR_FORMAT] = "dir_format",
		[PD_FEAT_BPF_PROG_INFO] = "bpf_prog_info",
		[PD_FEAT_BPF_BTF] = "bpf_btf",
		[PD_FEAT_COMPRESSED] = "compressed",
		[PD_FEAT_CPU_PMU_CAPS] = "cpu_pmu_caps",
		[PD_FEAT_CLOCK_DATA] = "clock_data",
		[PD_FEAT_HYBRID_TOPOLOGY] = "hybrid_topology",
		[PD_FEAT_PMU_CAPS] = "pmu_caps",
	};

	if (feat < ARRAY_SIZE(names))
		return names[feat];
	return NULL;
}

size_t pd_sample_id_size(uint64_t sample_type)
{
	size_t n = 0;

	n += !!(sample_type & PERF_SAMPLE_TID);
	n += !!(sample_type & PERF_SAMPLE_TIME);
	n += !!(sample_type & PERF_SAMPLE_ID);
	n += !!(sample_type & PERF_SAMPLE_STREAM_ID);
	n += !!(sample_type & PERF_SAMPLE_CPU);
	n += !!(sample_type & PERF_SAMPLE_IDENTIFIER);
	return n * 8;
}

unsigned int pd_sample_id_pos(uint64_t sample_type)
{
	if (sample_type & PERF_SAMPLE_IDENTIFIER)
		return 1;
	if (!(sample_type & PERF_SAMPLE_ID))
		return 0;
	return 1 + !!(sample_type & PERF_SAMPLE_STREAM_ID) + !!(sample_type & PERF_SAMPLE_CPU);
}

static void parse_sample_id(const uint8_t *p, uint64_t sample_type, struct pd_sample_id *s)
{
	memset(s, 0, sizeof(*s));
	if (sample_type & PERF_SAMPLE_TID) {
		s->pid = pd_get32(p);
		s->tid = pd_get32(p + 4);
		p += 8;
	}
	if (sample_type & PERF_SAMPLE_TIME) {
		s->time = pd_get64(p);
		p += 8;
	}
	if (sample_type & PERF_SAMPLE_ID) {
		s->id = pd_get64(p);
		p += 8;
	}
	if (sample_type & PERF_SAMPLE_STREAM_ID) {
		s->stream_id = pd_get64(p);
		p += 8;
	}
	if (sample_type & PERF_SAMPLE_CPU) {
		s->cpu = pd_get32(p);
		p += 8;
	}
	if (sample_type & PERF_SAMPLE_IDENTIFIER)
		s->id = pd_get64(p);
	s->valid = sample_type & PD_SAMPLE_ID_BITS;
}

/* A NUL-terminated string filling the rest of a body: NULL if it is not terminated. */
static char *body_str(const uint8_t *p, size_t len)
{
	if (!len || !memchr(p, 0, len))
		return NULL;
	return (char *)p;
}

int pd_record_parse(const void *raw, size_t size, uint64_t sample_type, bool sample_id_all,
		    struct pd_record *out)
{
	struct perf_event_header hh, *h = &hh;
	const uint8_t *b;
	size_t len, trailer = 0;

	if (!raw || !out || size < sizeof(*h))
		return -EINVAL;
	memcpy(h, raw, sizeof(*h));	/* raw may be unaligned */
	if (h->size < sizeof(*h) || h->size > size)
		return -EINVAL;
	memset(out, 0, sizeof(*out));
	out->type = h->type;
	out->misc = h->misc;
	b = (const uint8_t *)raw + sizeof(*h);
	len = h->size - sizeof(*h);

	/* Kernel records other than SAMPLE carry the trailer; perf's own (>= 64) do not. */
	if (h->type == PERF_RECORD_SAMPLE)
		return -ENOTSUP;
	if (h->type < PD_RECORD_USER_TYPE_START && sample_id_all) {
		trailer = pd_sample_id_size(sample_type);
		if (trailer > len)
			return -EINVAL;
		len -= trailer;
		parse_sample_id(b + len, sample_type, &out->sample);
	}

	switch (h->type) {
	case PERF_RECORD_MMAP:
	case PERF_RECORD_MMAP2: {
		/* MMAP2: MMAP, then device or build id, prot and flags before the name */
		size_t fixed = h->type == PERF_RECORD_MMAP ? 32 : 64;

		if (len < fixed)
			return -EINVAL;
		out->mmap.pid = pd_get32(b);
		out->mmap.tid = pd_get32(b + 4);
		out->mmap.addr = pd_get64(b + 8);
		out->mmap.len = pd_get64(b + 16);
		out->mmap.pgoff = pd_get64(b + 24);
		if (h->type == PERF_RECORD_MMAP2) {
			if (h->misc & PERF_RECORD_MISC_MMAP_BUILD_ID) {
				out->mmap.build_id_size = b[32];
				if (out->mmap.build_id_size > sizeof(out->mmap.build_id))
					return -EINVAL;
				memcpy(out->mmap.build_id, b + 36, sizeof(out->mmap.build_id));
			} else {
				out->mmap.maj = pd_get32(b + 32);
				out->mmap.min = pd_get32(b + 36);
				out->mmap.ino = pd_get64(b + 40);
				out->mmap.ino_generation = pd_get64(b + 48);
			}
			out->mmap.prot = pd_get32(b + 56);
			out->mmap.flags = pd_get32(b + 60);
		}
		out->mmap.filename = body_str(b + fixed, len - fixed);
		/* no mapping ends past the address space (perf's kernel map ends at its top) */
		if (out->mmap.addr + out->mmap.len < out->mmap.addr)
			return -EINVAL;
		return out->mmap.filename ? 0 : -EINVAL;
	}
	case PERF_RECORD_COMM:
		if (len < 8)
			return -EINVAL;
		out->comm.pid = pd_get32(b);
		out->comm.tid = pd_get32(b + 4);
		out->comm.comm = body_str(b + 8, len - 8);
		return out->comm.comm ? 0 : -EINVAL;
	case PERF_RECORD_FORK:
	case PERF_RECORD_EXIT:
		if (len < 24)
			return -EINVAL;
		out->task.pid = pd_get32(b);
		out->task.ppid = pd_get32(b + 4);
		out->task.tid = pd_get32(b + 8);
		out->task.ptid = pd_get32(b + 12);
		out->task.time = pd_get64(b + 16);
		return 0;
	case PERF_RECORD_SWITCH:
		return 0;
	case PERF_RECORD_SWITCH_CPU_WIDE:
		if (len < 8)
			return -EINVAL;
		out->sw.next_prev_pid = pd_get32(b);
		out->sw.next_prev_tid = pd_get32(b + 4);
		return 0;
	case PERF_RECORD_ITRACE_START:
		if (len < 8)
			return -EINVAL;
		out->itrace_start.pid = pd_get32(b);
		out->itrace_start.tid = pd_get32(b + 4);
		return 0;
	case PERF_RECORD_AUX:
		if (len < 24)
			return -EINVAL;
		out->aux.aux_offset = pd_get64(b);
		out->aux.aux_size = pd_get64(b + 8);
		out->aux.flags = pd_get64(b + 16);
		return 0;
	case PERF_RECORD_LOST:
		if (len < 16)
			return -EINVAL;
		out->lost.id = pd_get64(b);
		out->lost.lost = pd_get64(b + 8);
		return 0;
	case PERF_RECORD_LOST_SAMPLES:
		if (len < 8)
			return -EINVAL;
		out->lost_samples.lost = pd_get64(b);
		return 0;
	case PD_RECORD_TIME_CONV:
		if (len < 24)
			return -EINVAL;
		out->time_conv.time_shift = pd_get64(b);
		out->time_conv.time_mult = pd_get64(b + 8);
		out->time_conv.time_zero = pd_get64(b + 16);
		if (len >= 42) {
			out->time_conv.time_cycles = pd_get64(b + 24);
			out->time_conv.time_mask = pd_get64(b + 32);
			out->time_conv.cap_user_time_zero = b[40];
			out->time_conv.cap_user_time_short = b[41];
		}
		/* the kernel's shifts are below 32; 64 and more cannot convert a 64-bit TSC */
		return out->time_conv.time_shift < 64 ? 0 : -EINVAL;
	default:
		return -ENOTSUP;
	}
}

/* Little output cursor for pd_record_encode(). */
struct enc {
	uint8_t *p;		/* next byte */
	size_t left;		/* bytes left in the buffer */
	size_t n;		/* bytes produced (even when they did not fit) */
};

static void put(struct enc *e, const void *src, size_t len)
{
	if (e->left >= len) {
		memcpy(e->p, src, len);
		e->p += len;
		e->left -= len;
	} else {
		e->left = 0;
	}
	e->n += len;
}

static void put64(struct enc *e, uint64_t v)
{
	put(e, &v, 8);
}

static void put32x2(struct enc *e, uint32_t a, uint32_t b)
{
	put(e, &a, 4);
	put(e, &b, 4);
}

/* A string with its NUL, zero padded to 8 bytes (as the kernel writes comm/filename). */
static void put_str8(struct enc *e, const char *s)
{
	static const uint8_t zero[8];
	size_t len = strlen(s ? s : "") + 1;

	put(e, s ? s : "", len - 1);
	put(e, zero, 1 + ((8 - len % 8) % 8));
}

static void put_sample_id(struct enc *e, uint64_t sample_type, const struct pd_sample_id *s)
{
	if (sample_type & PERF_SAMPLE_TID)
		put32x2(e, s->pid, s->tid);
	if (sample_type & PERF_SAMPLE_TIME)
		put64(e, s->time);
	if (sample_type & PERF_SAMPLE_ID)
		put64(e, s->id);
	if (sample_type & PERF_SAMPLE_STREAM_ID)
		put64(e, s->stream_id);
	if (sample_type & PERF_SAMPLE_CPU)
		put32x2(e, s->cpu, 0);
	if (sample_type & PERF_SAMPLE_IDENTIFIER)
		put64(e, s->id);
}

int pd_record_encode(const struct pd_record *rec, uint64_t sample_type, bool sample_id_all,
		     void *buf, size_t size)
{
	struct perf_event_header h;
	struct enc e;
	bool trailer = sample_id_all;

	if (!rec || (!buf && size))
		return -EINVAL;
	e.p = buf;
	e.left = size;
	e.n = 0;
	h.type = rec->type;
	h.misc = rec->misc;
	h.size = 0;
	put(&e, &h, sizeof(h));

	switch (rec->type) {
	case PERF_RECORD_MMAP:
	case PERF_RECORD_MMAP2:
		put32x2(&e, rec->mmap.pid, rec->mmap.tid);
		put64(&e, rec->mmap.addr);
		put64(&e, rec->mmap.len);
		put64(&e, rec->mmap.pgoff);
		if (rec->type == PERF_RECORD_MMAP2) {
			if (rec->misc & PERF_RECORD_MISC_MMAP_BUILD_ID) {
				uint8_t bid[24] = { rec->mmap.build_id_size };

				if (rec->mmap.build_id_size > sizeof(rec->mmap.build_id))
					return -EINVAL;
				memcpy(bid + 4, rec->mmap.build_id, sizeof(rec->mmap.build_id));
				put(&e, bid, sizeof(bid));
			} else {
				put32x2(&e, rec->mmap.maj, rec->mmap.min);
				put64(&e, rec->mmap.ino);
				put64(&e, rec->mmap.ino_generation);
			}
			put32x2(&e, rec->mmap.prot, rec->mmap.flags);
		}
		put_str8(&e, rec->mmap.filename);
		break;
	case PERF_RECORD_COMM:
		put32x2(&e, rec->comm.pid, rec->comm.tid);
		put_str8(&e, rec->comm.comm);
		break;
	case PERF_RECORD_FORK:
	case PERF_RECORD_EXIT:
		put32x2(&e, rec->task.pid, rec->task.ppid);
		put32x2(&e, rec->task.tid, rec->task.ptid);
		put64(&e, rec->task.time);
		break;
	case PERF_RECORD_SWITCH:
		break;
	case PERF_RECORD_SWITCH_CPU_WIDE:
		put32x2(&e, rec->sw.next_prev_pid, rec->sw.next_prev_tid);
		break;
	case PERF_RECORD_ITRACE_START:
		put32x2(&e, rec->itrace_start.pid, rec->itrace_start.tid);
		break;
	case PERF_RECORD_AUX:
		put64(&e, rec->aux.aux_offset);
		put64(&e, rec->aux.aux_size);
		put64(&e, rec->aux.flags);
		break;
	case PERF_RECORD_LOST:
		put64(&e, rec->lost.id);
		put64(&e, rec->lost.lost);
		break;
	case PERF_RECORD_LOST_SAMPLES:
		put64(&e, rec->lost_samples.lost);
		break;
	case PD_RECORD_TIME_CONV: {
		uint8_t caps[8] = { rec->time_conv.cap_user_time_zero,
				    rec->time_conv.cap_user_time_short };

		trailer = false;
		put64(&e, rec->time_conv.time_shift);
		put64(&e, rec->time_conv.time_mult);
		put64(&e, rec->time_conv.time_zero);
		put64(&e, rec->time_conv.time_cycles);
		put64(&e, rec->time_conv.time_mask);
		put(&e, caps, sizeof(caps));
		break;
	}
	default:
		return -EINVAL;
	}
	if (trailer)
		put_sample_id(&e, sample_type, &rec->sample);
	if (e.n > UINT16_MAX)
		return -EINVAL;
	if (e.n > size)
		return -ENOSPC;
	h.size = e.n;
	memcpy(buf, &h, sizeof(h));
	return e.n;
}
