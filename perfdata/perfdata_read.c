// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * perf.data reader. The file is untrusted: every offset and size is checked against the
 * file (or the section holding it) before anything is read or allocated, so memory use
 * is bounded by the file's size, and a bad file gives one error line naming the offset
 * and what was wrong.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include "array.h"
#include "log.h"
#include "perfdata.h"
#include "perfdata_int.h"

/*
 * Records are at most 64 KiB (u16 size); the window always holds a whole one. It starts
 * at RD_WINDOW_MIN and doubles while the records follow each other, up to RD_WINDOW: the
 * records before an AUXTRACE payload (mapped, not read) are a few KiB, and a full window
 * there copied a MiB of the trace for nothing (256 page faults and 0.5 ms of a decode).
 */
#define RD_WINDOW (1024 * 1024)
#define RD_WINDOW_MIN (16 * 1024)
/*
 * A zstd-compressed capture (the daemon's spool: .perf.data.zst) is decompressed into
 * memory first; more than this is a corrupt file or a decompression bomb, not a capture
 * (the largest real ones, 64 CPUs x 64 MiB rings with sideband, stay well below).
 */
#define RD_ZSTD_MAX_BYTES ((uint64_t)4 << 30)

/* The bound; PTBPF_ZSTD_MAX_BYTES lowers it (the tests' bombs stay small). */
static uint64_t zstd_max_bytes(void)
{
	const char *env = getenv("PTBPF_ZSTD_MAX_BYTES");
	unsigned long long v;
	char *end;

	if (!env || !*env)
		return RD_ZSTD_MAX_BYTES;
	errno = 0;
	v = strtoull(env, &end, 0);
	if (errno || *end || !v || v > RD_ZSTD_MAX_BYTES)
		return RD_ZSTD_MAX_BYTES;
	return v;
}
/* Bigger attrs than this are not attrs (perf's is 136 bytes in 2025). */
#define RD_MAX_ATTR_SIZE 4096

/* State of one perfdata_read(). */
struct rd {
	const char *path;		/* file named in messages */
	int fd;				/* the file being read */
	uint64_t fsize;			/* its size */
	struct capture *cap;		/* what is being filled */
	uint8_t *win;			/* window on the data section */
	uint64_t win_off;		/* file offset of win[0] */
	size_t win_len;			/* valid bytes in win */
	size_t win_cap;			/* bytes allocated at win */
	bool sample_id_all;		/* the attrs' common sample_id_all */
	bool by_id;			/* trailers differ: find the attr by the trailer's id */
	unsigned int id_pos;		/* with by_id: perf's is_pos of the id */
	uint64_t sample_type;		/* without by_id: the common sample_type */
	uint8_t *vdso;			/* the vDSO being put together from its chunks */
	uint64_t vdso_total;		/* its size, from the first chunk */
	uint64_t vdso_have;		/* bytes received, in order */
	uint64_t vdso_off;		/* file offset of the last chunk, for messages */
};

static int __attribute__((format(printf, 3, 4))) rd_err(struct rd *r, uint64_t off,
							 const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	elog("%s: offset %#llx: %s\n", r->path, (unsigned long long)off, msg);
	return -EINVAL;
}

/* [off, off+len) lies inside [lo, hi): overflow-safe. */
static bool in_range(uint64_t off, uint64_t len, uint64_t lo, uint64_t hi)
{
	return off >= lo && off <= hi && len <= hi - off;
}

static int rd_pread(struct rd *r, uint64_t off, void *buf, size_t len, const char *what)
{
	size_t done = 0;

	if (!in_range(off, len, 0, r->fsize))
		return rd_err(r, off, "%s (%zu bytes) extends past the end of the file (%llu bytes)",
			      what, len, (unsigned long long)r->fsize);
	while (done < len) {
		ssize_t n = pread(r->fd, (char *)buf + done, len - done, off + done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int err = -errno;

			elog("%s: offset %#llx: cannot read %s: %s\n", r->path,
			     (unsigned long long)(off + done), what, strerror(errno));
			return err;
		}
		if (n == 0)
			return rd_err(r, off + done, "file shrank while reading %s", what);
		done += n;
	}
	return 0;
}

/* Bytes [off, off+len) of the file through the window; the caller checked the range. */
static const uint8_t *rd_map(struct rd *r, uint64_t off, size_t len, uint64_t end, int *err)
{
	size_t want;

	if (off >= r->win_off && off - r->win_off <= r->win_len &&
	    len <= r->win_len - (off - r->win_off))
		return r->win + (off - r->win_off);
	/* records that go on from the window: a bigger one; after a jump, a small one */
	want = r->win_len && off >= r->win_off && off - r->win_off <= r->win_len ?
		       2 * r->win_len : RD_WINDOW_MIN;
	if (want > RD_WINDOW)
		want = RD_WINDOW;
	if (want > end - off)
		want = end - off;
	if (want < len)
		want = len;
	if (want > r->win_cap) {
		/*
		 * Past the first window, the largest at once: one buffer for the doublings (its
		 * pages fault in as reads reach them), not one each. What it holds is read
		 * again: no copy (realloc's).
		 */
		free(r->win);
		r->win_cap = want <= RD_WINDOW_MIN ? RD_WINDOW_MIN : RD_WINDOW;
		r->win = malloc(r->win_cap);
		if (!r->win) {
			r->win_cap = 0;
			*err = -ENOMEM;
			return NULL;
		}
	}
	r->win_len = 0;
	*err = rd_pread(r, off, r->win, want, "record");
	if (*err)
		return NULL;
	r->win_off = off;
	r->win_len = want;
	return r->win;
}

static int read_header(struct rd *r, struct pd_file_header *h)
{
	int err;

	memset(h, 0, sizeof(*h));
	if (r->fsize < 16)
		return rd_err(r, 0, "not a perf.data file: %llu bytes, too short for a header",
			      (unsigned long long)r->fsize);
	err = rd_pread(r, 0, h, 16, "file header");
	if (err)
		return err;
	if (h->magic == PD_MAGIC2_SWAPPED)
		return rd_err(r, 0, "big-endian perf.data files are not supported");
	if (h->magic == PD_MAGIC1)
		return rd_err(r, 0, "perf.data version 1 (PERFFILE) is not supported");
	if (h->magic != PD_MAGIC2)
		return rd_err(r, 0, "not a perf.data file (magic %#llx, expected \"PERFILE2\")",
			      (unsigned long long)h->magic);
	if (h->size == sizeof(struct pd_pipe_header))
		return rd_err(r, 8, "pipe-mode perf.data (perf record -o -) is not supported: "
			      "record to a file");
	/* perf also reads headers from before the feature bitmap existed. */
	if (h->size != sizeof(*h) && h->size != offsetof(struct pd_file_header, adds_features))
		return rd_err(r, 8, "file header size %llu, expected %zu",
			      (unsigned long long)h->size, sizeof(*h));
	err = rd_pread(r, 0, h, h->size, "file header");
	if (err)
		return err;
	if (!in_range(h->data.offset, h->data.size, 0, r->fsize))
		return rd_err(r, 40, "data section [%#llx, +%#llx) lies outside the file (%llu bytes)",
			      (unsigned long long)h->data.offset, (unsigned long long)h->data.size,
			      (unsigned long long)r->fsize);
	if (h->data.offset < h->size && h->data.size)
		return rd_err(r, 40, "data section at %#llx overlaps the file header",
			      (unsigned long long)h->data.offset);
	return 0;
}

static int read_attrs(struct rd *r, const struct pd_file_header *h)
{
	uint64_t nr, i, attr_bytes;
	uint8_t *buf = NULL;
	uint64_t *ids = NULL;
	int err = 0;

	if (h->attr_size < PERF_ATTR_SIZE_VER0 + sizeof(struct pd_file_section) ||
	    h->attr_size > RD_MAX_ATTR_SIZE)
		return rd_err(r, 16, "attr entry size %llu is not plausible (%u..%u)",
			      (unsigned long long)h->attr_size,
			      (unsigned)(PERF_ATTR_SIZE_VER0 + sizeof(struct pd_file_section)),
			      RD_MAX_ATTR_SIZE);
	if (!in_range(h->attrs.offset, h->attrs.size, 0, r->fsize))
		return rd_err(r, 24, "attrs section [%#llx, +%#llx) lies outside the file (%llu bytes)",
			      (unsigned long long)h->attrs.offset,
			      (unsigned long long)h->attrs.size, (unsigned long long)r->fsize);
	if (h->attrs.size % h->attr_size)
		return rd_err(r, 32, "attrs section of %llu bytes is not a whole number of %llu-byte entries",
			      (unsigned long long)h->attrs.size, (unsigned long long)h->attr_size);
	nr = h->attrs.size / h->attr_size;
	if (!nr)
		return rd_err(r, 32, "no events: the attrs section is empty");
	attr_bytes = h->attr_size - sizeof(struct pd_file_section);
	buf = malloc(h->attr_size);
	if (!buf)
		return -ENOMEM;
	for (i = 0; i < nr; i++) {
		uint64_t off = h->attrs.offset + i * h->attr_size;
		struct perf_event_attr attr;
		struct pd_file_section ids_sec;
		uint32_t asz;

		err = rd_pread(r, off, buf, h->attr_size, "attr");
		if (err)
			goto out;
		memset(&attr, 0, sizeof(attr));
		memcpy(&attr, buf, attr_bytes < sizeof(attr) ? attr_bytes : sizeof(attr));
		asz = attr.size ? attr.size : PERF_ATTR_SIZE_VER0;
		if (asz < PERF_ATTR_SIZE_VER0 || asz > attr_bytes) {
			err = rd_err(r, off + 4, "attr %llu: size %u does not fit its %llu-byte entry",
				     (unsigned long long)i, attr.size,
				     (unsigned long long)attr_bytes);
			goto out;
		}
		memcpy(&ids_sec, buf + attr_bytes, sizeof(ids_sec));
		if (!in_range(ids_sec.offset, ids_sec.size, 0, r->fsize) || ids_sec.size % 8) {
			err = rd_err(r, off + attr_bytes,
				     "attr %llu: ids [%#llx, +%#llx) lie outside the file or are not u64s",
				     (unsigned long long)i, (unsigned long long)ids_sec.offset,
				     (unsigned long long)ids_sec.size);
			goto out;
		}
		if (ids_sec.size > UINT32_MAX * 8ULL) {
			err = rd_err(r, off + attr_bytes, "attr %llu: too many ids",
				     (unsigned long long)i);
			goto out;
		}
		free(ids);
		ids = NULL;
		if (ids_sec.size) {
			ids = malloc(ids_sec.size);
			if (!ids) {
				err = -ENOMEM;
				goto out;
			}
			err = rd_pread(r, ids_sec.offset, ids, ids_sec.size, "attr ids");
			if (err)
				goto out;
		}
		err = capture__add_attr(r->cap, &attr, ids, ids_sec.size / 8, NULL);
		if (err)
			goto out;
	}
out:
	free(ids);
	free(buf);
	return err;
}

/* Decide how a record's trailer is found (perf's evlist__valid_sample_id_all/type). */
static int plan_trailers(struct rd *r, const struct pd_file_header *h)
{
	const struct capture *cap = r->cap;
	bool same = true;
	uint32_t i;

	r->sample_id_all = cap->attrs[0].attr.sample_id_all;
	r->sample_type = cap->attrs[0].attr.sample_type;
	for (i = 1; i < cap->nr_attrs; i++) {
		if (cap->attrs[i].attr.sample_id_all != r->sample_id_all)
			return rd_err(r, h->attrs.offset + i * h->attr_size,
				      "attr %u: sample_id_all differs from attr 0's", i);
		if (cap->attrs[i].attr.sample_type != r->sample_type)
			same = false;
	}
	if (same || !r->sample_id_all)
		return 0;
	r->by_id = true;
	r->id_pos = pd_sample_id_pos(cap->attrs[0].attr.sample_type);
	for (i = 0; i < cap->nr_attrs; i++) {
		unsigned int pos = pd_sample_id_pos(cap->attrs[i].attr.sample_type);

		if (!pos || pos != r->id_pos)
			return rd_err(r, h->attrs.offset + i * h->attr_size,
				      "attr %u: events have different sample_type and no common id "
				      "position (PERF_SAMPLE_IDENTIFIER): records cannot be told apart",
				      i);
	}
	return 0;
}

static int parse_auxtrace_info(struct rd *r, uint64_t off, const uint8_t *p, size_t size)
{
	struct pd_pt_info *pt = &r->cap->pt;
	uint64_t priv[PD_PT_PRIV_WORDS] = { 0 };
	size_t nr, i;
	uint32_t type;

	if (size < 16)
		return rd_err(r, off, "AUXTRACE_INFO record of %zu bytes is too short", size);
	type = pd_get32(p + 8);
	if (pt->present || pt->auxtrace_type)
		return rd_err(r, off, "second AUXTRACE_INFO record");
	pt->auxtrace_type = type;
	if (type != PD_AUXTRACE_INTEL_PT) {
		vlog("%s: offset %#llx: AUXTRACE_INFO of type %u is not Intel PT, ignored\n", r->path,
		     (unsigned long long)off, type);
		return 0;
	}
	nr = (size - 16) / 8;
	if (nr < PD_PT_PRIV_MIN_WORDS)
		return rd_err(r, off, "intel_pt AUXTRACE_INFO has %zu private words, perf writes at least %d",
			      nr, PD_PT_PRIV_MIN_WORDS);
	for (i = 0; i < nr && i < PD_PT_PRIV_WORDS; i++)
		priv[i] = pd_get64(p + 16 + 8 * i);
	pt->pmu_type = priv[0];
	pt->time_shift = priv[1];
	pt->time_mult = priv[2];
	pt->time_zero = priv[3];
	if (pt->time_shift >= 64)
		return rd_err(r, off, "intel_pt time shift %llu cannot convert a 64-bit TSC",
			      (unsigned long long)pt->time_shift);
	pt->cap_user_time_zero = priv[4];
	pt->tsc_bit = priv[5];
	pt->noretcomp_bit = priv[6];
	pt->have_sched_switch = priv[7];
	pt->snapshot_mode = priv[8];
	pt->per_cpu_mmaps = priv[9];
	pt->mtc_bit = priv[10];
	pt->mtc_freq_bits = priv[11];
	pt->tsc_ctc_ratio_n = priv[12];
	pt->tsc_ctc_ratio_d = priv[13];
	pt->cyc_bit = priv[14];
	pt->max_non_turbo_ratio = priv[15];
	pt->nr_priv = nr;
	i = PD_PT_PRIV_WORDS;	/* next word after FILTER_STR_LEN */
	if (nr >= PD_PT_PRIV_WORDS && priv[16]) {
		uint64_t len = priv[16], bytes;
		const char *f = (const char *)p + 16 + 8 * i;

		if (len > (nr - i) * 8)
			return rd_err(r, off, "intel_pt filter string of %llu bytes overruns its record",
				      (unsigned long long)len);
		bytes = (len + 1 + 7) & ~7ULL;
		if (bytes > (nr - i) * 8)
			return rd_err(r, off, "intel_pt filter string of %llu bytes overruns its record",
				      (unsigned long long)len);
		pt->filter = capture__alloc(r->cap, len + 1);
		if (!pt->filter)
			return -ENOMEM;
		memcpy(pt->filter, f, len);
		pt->filter[strnlen(pt->filter, len)] = 0;
		i += bytes / 8;
	}
	if (nr > i)
		pt->cap_event_trace = pd_get64(p + 16 + 8 * i);
	pt->present = true;
	return 0;
}

static int read_auxtrace(struct rd *r, uint64_t off, const uint8_t *p, size_t size,
			 uint64_t end, uint64_t *payload)
{
	struct pd_auxtrace aux = { 0 };
	uint64_t data_off = off + size;
	void *data = NULL;
	int err;

	if (size < PD_AUXTRACE_SIZE)
		return rd_err(r, off, "AUXTRACE record of %zu bytes, expected %d", size,
			      PD_AUXTRACE_SIZE);
	aux.size = pd_get64(p + 8);
	aux.offset = pd_get64(p + 16);
	aux.reference = pd_get64(p + 24);
	aux.idx = pd_get32(p + 32);
	aux.tid = pd_get32(p + 36);
	aux.cpu = pd_get32(p + 40);
	aux.file_offset = data_off;
	if (!in_range(data_off, aux.size, 0, end))
		return rd_err(r, off, "AUXTRACE payload of %llu bytes extends past the end of the data section (%llu bytes left)",
			      (unsigned long long)aux.size, (unsigned long long)(end - data_off));
	if (aux.size) {
		if (aux.size > SIZE_MAX / 2)
			return -ENOMEM;
		/* The trace is the bulk of the file: map it rather than copy it. */
		data = pd_map_file(r->cap, r->fd, data_off, aux.size);
		if (!data) {
			data = capture__alloc(r->cap, aux.size);
			if (!data)
				return -ENOMEM;
			err = rd_pread(r, data_off, data, aux.size, "AUXTRACE payload");
			if (err)
				return err;
		}
	}
	/* capture__add_aux() would copy: hand the buffer over instead. */
	err = capture__add_aux(r->cap, &(struct pd_auxtrace){ .size = 0 }, NULL);
	if (err)
		return err;
	aux.data = data;
	r->cap->aux[r->cap->nr_aux - 1] = aux;
	*payload = aux.size;
	return 0;
}

/*
 * One build-id entry (struct perf_record_header_build_id), `size` bytes at p, checked
 * by the caller to be at least 36: header, pid, 24 bytes of id, filename.
 */
static int add_build_id(struct capture *cap, const uint8_t *p, uint16_t size)
{
	struct pd_build_id bid = { 0 };
	/* struct perf_event_header: u32 type (unused here), u16 misc, u16 size. */
	uint16_t misc = pd_get32(p + 4) & 0xffff;

	bid.pid = (int32_t)pd_get32(p + 8);
	bid.misc = misc;
	memcpy(bid.id, p + 12, 20);
	/* PERF_RECORD_MISC_BUILD_ID_SIZE: the size byte is valid. */
	bid.size = (misc & (1 << 15)) ? p[32] : 20;
	if (bid.size > 20)
		bid.size = 20;
	bid.filename = capture__alloc(cap, size - 36 + 1);
	if (!bid.filename)
		return -ENOMEM;
	memcpy(bid.filename, p + 36, size - 36);
	bid.filename[strnlen(bid.filename, size - 36)] = 0;
	return capture__add_build_id(cap, &bid);
}

static int read_ptbpf_trigger(struct rd *r, uint64_t off, const uint8_t *p, size_t len)
{
	struct pd_record rec = { .type = PD_RECORD_PTBPF_TRIGGER };
	struct pd_trigger *t = &rec.trigger;
	struct pd_trigger_disk d;

	if (len < sizeof(d) + 1 || !memchr(p + sizeof(d), 0, len - sizeof(d)))
		return rd_err(r, off, "malformed ptbpf trigger record (%zu bytes)", len);
	memcpy(&d, p, sizeof(d));
	t->kind = d.kind;
	t->index = d.index;
	t->cpu = d.cpu;
	t->pid = d.pid;
	t->tid = d.tid;
	t->time = d.time;
	t->ktime = d.ktime;
	t->ip = d.ip;
	t->latency_ns = d.latency_ns;
	t->arg0 = d.arg0;
	t->arg1 = d.arg1;
	t->desc = p[sizeof(d)] ? (char *)p + sizeof(d) : NULL;
	return capture__add_record(r->cap, &rec);
}

static int read_ptbpf_vdso(struct rd *r, uint64_t off, const uint8_t *p, size_t len)
{
	struct pd_vdso_chunk c;

	if (len < sizeof(c))
		return rd_err(r, off, "malformed ptbpf vDSO record (%zu bytes)", len);
	memcpy(&c, p, sizeof(c));
	if (c.size > len - sizeof(c))
		return rd_err(r, off, "vDSO chunk of %llu bytes overruns its %zu-byte record",
			      (unsigned long long)c.size, len);
	if (!r->vdso) {
		/* All of it comes in chunks of this file: it cannot be bigger. */
		if (!c.total || c.total > r->fsize)
			return rd_err(r, off, "vDSO of %llu bytes in a file of %llu bytes",
				      (unsigned long long)c.total, (unsigned long long)r->fsize);
		r->vdso = capture__alloc(r->cap, c.total);
		if (!r->vdso)
			return -ENOMEM;
		r->vdso_total = c.total;
	}
	if (c.total != r->vdso_total || c.offset != r->vdso_have ||
	    c.size > r->vdso_total - r->vdso_have)
		return rd_err(r, off, "vDSO chunk [%llu, +%llu) of %llu bytes does not follow the "
			      "%llu bytes before it", (unsigned long long)c.offset,
			      (unsigned long long)c.size, (unsigned long long)c.total,
			      (unsigned long long)r->vdso_have);
	memcpy(r->vdso + r->vdso_have, p + sizeof(c), c.size);
	r->vdso_have += c.size;
	r->vdso_off = off;
	return 0;
}

/*
 * A PERF_RECORD_HEADER_EVENT_TYPE: ptbpf's if marked so (perfdata_int.h), else one of
 * old pipe-mode files, skipped as perf does.
 */
static int read_ptbpf(struct rd *r, uint64_t off, const uint8_t *p, size_t size)
{
	struct pd_ptbpf_header ph;
	size_t hs = sizeof(struct perf_event_header) + sizeof(ph);

	if (size < hs || (memcpy(&ph, p + 8, sizeof(ph)), ph.magic != PD_PTBPF_MAGIC)) {
		r->cap->nr_skipped++;
		return 0;
	}
	if (ph.version != PD_PTBPF_VERSION)
		return rd_err(r, off, "ptbpf record version %u: this ptbpf reads version %d",
			      ph.version, PD_PTBPF_VERSION);
	switch (ph.kind) {
	case PD_PTBPF_TRIGGER:
		return read_ptbpf_trigger(r, off, p + hs, size - hs);
	case PD_PTBPF_VDSO:
		return read_ptbpf_vdso(r, off, p + hs, size - hs);
	default:
		r->cap->nr_skipped++;
		return 0;
	}
}

/* The attr a kernel record's trailer belongs to. */
static int record_trailer(struct rd *r, uint64_t off, const uint8_t *p, size_t size,
			  uint64_t *sample_type)
{
	const struct pd_attr *a;
	uint64_t id;

	*sample_type = r->sample_type;
	if (!r->by_id)
		return 0;
	if (size < sizeof(struct perf_event_header) + 8 * r->id_pos)
		return rd_err(r, off, "%s record of %zu bytes is too short for its sample id",
			      pd_record_type_name(pd_get32(p) & 0xffff), size);
	id = pd_get64(p + size - 8 * r->id_pos);
	/* perf's synthesized records (MMAP of the kernel...) have id 0: the first event. */
	a = id ? capture__attr_by_id(r->cap, id) : &r->cap->attrs[0];
	if (!a)
		return rd_err(r, off, "%s record's sample id %llu matches no event",
			      pd_record_type_name(pd_get32(p) & 0xffff), (unsigned long long)id);
	*sample_type = a->attr.sample_type;
	return 0;
}

/* Read the records in [start, end) of the current file. */
static int read_records(struct rd *r, uint64_t start, uint64_t end)
{
	uint64_t off = start;
	int err = 0;

	r->win_len = 0;
	while (off < end) {
		struct perf_event_header hh, *h = &hh;
		const uint8_t *p;
		uint64_t payload = 0, sample_type;
		struct pd_record rec;

		if (end - off < sizeof(*h))
			return rd_err(r, off, "truncated record header: %llu bytes left in the data section",
				      (unsigned long long)(end - off));
		p = rd_map(r, off, sizeof(*h), end, &err);
		if (!p)
			return err;
		/* A hostile size can leave records unaligned: copy, do not cast. */
		memcpy(h, p, sizeof(*h));
		if (h->size == 0)
			return rd_err(r, off, "zero-size record (type %u)", h->type);
		if (h->size < sizeof(*h))
			return rd_err(r, off, "record size %u is smaller than its 8-byte header",
				      h->size);
		if (h->size > end - off)
			return rd_err(r, off, "%s record of %u bytes extends past the end of the data section (%llu bytes left)",
				      pd_record_type_name(h->type), h->size,
				      (unsigned long long)(end - off));
		p = rd_map(r, off, h->size, end, &err);
		if (!p)
			return err;

		switch (h->type) {
		case PERF_RECORD_SAMPLE:
			r->cap->nr_samples++;
			break;
		case PD_RECORD_FINISHED_ROUND:
			r->cap->nr_rounds++;
			break;
		case PD_RECORD_AUXTRACE_INFO:
			err = parse_auxtrace_info(r, off, p, h->size);
			break;
		case PD_RECORD_AUXTRACE:
			err = read_auxtrace(r, off, p, h->size, end, &payload);
			break;
		case PD_RECORD_HEADER_EVENT_TYPE:
			err = read_ptbpf(r, off, p, h->size);
			break;
		case PD_RECORD_HEADER_BUILD_ID:
			/* perf inject -b puts build ids among the records. */
			if (h->size < 36)
				return rd_err(r, off, "HEADER_BUILD_ID record of %u bytes is too short",
					      h->size);
			err = add_build_id(r->cap, p, h->size);
			break;
		case PD_RECORD_COMPRESSED:
			return rd_err(r, off, "zstd-compressed records (perf record -z) are not "
				      "supported: record without -z");
		case PD_RECORD_TIME_CONV:
			err = pd_record_parse(p, h->size, 0, false, &rec);
			if (err)
				return rd_err(r, off, "malformed TIME_CONV record of %u bytes", h->size);
			err = capture__add_record(r->cap, &rec);
			break;
		default:
			if (h->type >= PD_RECORD_USER_TYPE_START) {
				r->cap->nr_skipped++;
				break;
			}
			err = record_trailer(r, off, p, h->size, &sample_type);
			if (err)
				return err;
			err = pd_record_parse(p, h->size, sample_type, r->sample_id_all, &rec);
			if (err == -ENOTSUP) {
				r->cap->nr_skipped++;
				err = 0;
				break;
			}
			if (err)
				return rd_err(r, off, "malformed %s record of %u bytes",
					      pd_record_type_name(h->type), h->size);
			err = capture__add_record(r->cap, &rec);
			break;
		}
		if (err)
			return err;
		off += h->size + payload;
	}
	return 0;
}

/* Cursor over one feature section held in memory. */
struct fsec {
	struct rd *r;
	const uint8_t *p;	/* section bytes */
	uint64_t size;		/* their number */
	uint64_t pos;		/* next byte to read */
	uint64_t foff;		/* file offset of p[0], for messages */
	const char *name;	/* feature name, for messages */
};

static int fs_need(struct fsec *s, uint64_t n, const char *what)
{
	if (n > s->size - s->pos)
		return rd_err(s->r, s->foff + s->pos,
			      "%s feature: %s (%llu bytes) overruns the section (%llu bytes left)",
			      s->name, what, (unsigned long long)n,
			      (unsigned long long)(s->size - s->pos));
	return 0;
}

static int fs_u32(struct fsec *s, uint32_t *v, const char *what)
{
	int err = fs_need(s, 4, what);

	if (!err) {
		*v = pd_get32(s->p + s->pos);
		s->pos += 4;
	}
	return err;
}

static int fs_u64(struct fsec *s, uint64_t *v, const char *what)
{
	int err = fs_need(s, 8, what);

	if (!err) {
		*v = pd_get64(s->p + s->pos);
		s->pos += 8;
	}
	return err;
}

/* A perf string: u32 length (padding included), then the bytes. Copied into the capture. */
static int fs_str(struct fsec *s, char **out, const char *what)
{
	uint32_t len;
	int err;

	err = fs_u32(s, &len, what);
	if (err)
		return err;
	err = fs_need(s, len, what);
	if (err)
		return err;
	*out = capture__alloc(s->r->cap, (size_t)len + 1);
	if (!*out)
		return -ENOMEM;
	memcpy(*out, s->p + s->pos, len);
	(*out)[strnlen(*out, len)] = 0;
	s->pos += len;
	return 0;
}

static int feat_build_id(struct fsec *s)
{
	while (s->pos < s->size) {
		uint16_t size;
		int err;

		err = fs_need(s, 36, "build-id entry");
		if (err)
			return err;
		size = pd_get32(s->p + s->pos + 4) >> 16;
		if (size < 36 || size > s->size - s->pos)
			return rd_err(s->r, s->foff + s->pos,
				      "build_id feature: entry size %u outside 36..%llu", size,
				      (unsigned long long)(s->size - s->pos));
		err = add_build_id(s->r->cap, s->p + s->pos, size);
		if (err)
			return err;
		s->pos += size;
	}
	return 0;
}

static int feat_cmdline(struct fsec *s)
{
	char *line = NULL, *arg;
	size_t len = 0, cap = 0;
	uint32_t nr, i;
	int err;

	err = fs_u32(s, &nr, "argument count");
	if (err)
		return err;
	if (nr > (s->size - s->pos) / 4)
		return rd_err(s->r, s->foff, "cmdline feature: %u arguments cannot fit %llu bytes", nr,
			      (unsigned long long)(s->size - s->pos));
	for (i = 0; i < nr; i++) {
		err = fs_str(s, &arg, "argument");
		if (err)
			goto out;
		err = array_grow_sz((void **)&line, &cap, len + strlen(arg) + 2, 1);
		if (err)
			goto out;
		len += sprintf(line + len, "%s%s", i ? " " : "", arg);
	}
	s->r->cap->host.cmdline = capture__strdup(s->r->cap, line ? line : "");
	if (!s->r->cap->host.cmdline)
		err = -ENOMEM;
out:
	free(line);
	return err;
}

static int feat_event_desc(struct fsec *s)
{
	struct capture *cap = s->r->cap;
	uint32_t nre, sz, i, j;
	int err;

	err = fs_u32(s, &nre, "event count");
	if (!err)
		err = fs_u32(s, &sz, "attr size");
	if (err)
		return err;
	if (sz < PERF_ATTR_SIZE_VER0 || sz > RD_MAX_ATTR_SIZE)
		return rd_err(s->r, s->foff + 4, "event_desc feature: attr size %u is not plausible", sz);
	if (nre > (s->size - s->pos) / sz)
		return rd_err(s->r, s->foff, "event_desc feature: %u events cannot fit %llu bytes", nre,
			      (unsigned long long)(s->size - s->pos));
	for (i = 0; i < nre; i++) {
		uint32_t nr_ids;
		uint64_t id = 0, ids_at;
		char *name;

		err = fs_need(s, sz, "attr");
		if (err)
			return err;
		s->pos += sz;
		err = fs_u32(s, &nr_ids, "id count");
		if (!err)
			err = fs_str(s, &name, "event name");
		if (err)
			return err;
		ids_at = s->pos;
		err = fs_need(s, (uint64_t)nr_ids * 8, "event ids");
		if (err)
			return err;
		s->pos += (uint64_t)nr_ids * 8;
		if (nr_ids)
			id = pd_get64(s->p + ids_at);
		/* Name the attr holding the same id, or the same position without ids. */
		for (j = 0; j < cap->nr_attrs; j++) {
			struct pd_attr *a = &cap->attrs[j];

			if ((nr_ids && a->nr_ids && a->ids[0] == id) ||
			    ((!nr_ids || !a->nr_ids) && i == j)) {
				a->name = name;
				break;
			}
		}
	}
	return 0;
}

static int feat_pmu_mappings(struct fsec *s)
{
	uint32_t nr, i, type;
	char *name;
	int err;

	err = fs_u32(s, &nr, "PMU count");
	if (err)
		return err;
	if (nr > (s->size - s->pos) / 8)
		return rd_err(s->r, s->foff, "pmu_mappings feature: %u PMUs cannot fit %llu bytes", nr,
			      (unsigned long long)(s->size - s->pos));
	for (i = 0; i < nr; i++) {
		err = fs_u32(s, &type, "PMU type");
		if (!err)
			err = fs_str(s, &name, "PMU name");
		if (!err)
			err = capture__add_pmu(s->r->cap, type, name);
		if (err)
			return err;
	}
	return 0;
}

static int feat_auxtrace(struct fsec *s)
{
	uint64_t nr, i, foff, sz;
	int err;

	err = fs_u64(s, &nr, "index size");
	if (err)
		return err;
	if (nr > (s->size - s->pos) / 16)
		return rd_err(s->r, s->foff, "auxtrace feature: %llu index entries cannot fit %llu bytes",
			      (unsigned long long)nr, (unsigned long long)(s->size - s->pos));
	for (i = 0; i < nr; i++) {
		err = fs_u64(s, &foff, "index offset");
		if (!err)
			err = fs_u64(s, &sz, "index size");
		if (err)
			return err;
		if (!in_range(foff, sz, 0, s->r->fsize))
			return rd_err(s->r, s->foff + s->pos - 16,
				      "auxtrace feature: index entry %llu [%#llx, +%#llx) lies outside the file",
				      (unsigned long long)i, (unsigned long long)foff,
				      (unsigned long long)sz);
	}
	return 0;
}

static int read_feature(struct rd *r, unsigned int feat, const struct pd_file_section *sec,
			uint64_t table_off)
{
	struct pd_host *host = &r->cap->host;
	struct fsec s = { .r = r, .size = sec->size, .foff = sec->offset };
	uint8_t *buf;
	uint32_t a, b;
	int err;

	s.name = pd_feature_name(feat);
	if (!s.name)
		return 0;	/* unknown: skipped, as perf does */
	if (!in_range(sec->offset, sec->size, 0, r->fsize))
		return rd_err(r, table_off, "%s feature section [%#llx, +%#llx) lies outside the file (%llu bytes)",
			      s.name, (unsigned long long)sec->offset,
			      (unsigned long long)sec->size,
			      (unsigned long long)r->fsize);
	switch (feat) {
	case PD_FEAT_BUILD_ID:
	case PD_FEAT_HOSTNAME:
	case PD_FEAT_OSRELEASE:
	case PD_FEAT_VERSION:
	case PD_FEAT_ARCH:
	case PD_FEAT_NRCPUS:
	case PD_FEAT_CPUDESC:
	case PD_FEAT_CPUID:
	case PD_FEAT_TOTAL_MEM:
	case PD_FEAT_CMDLINE:
	case PD_FEAT_EVENT_DESC:
	case PD_FEAT_PMU_MAPPINGS:
	case PD_FEAT_AUXTRACE:
	case PD_FEAT_SAMPLE_TIME:
		break;
	default:
		return 0;	/* known to perf, not needed here */
	}
	buf = malloc(sec->size ? sec->size : 1);
	if (!buf)
		return -ENOMEM;
	err = rd_pread(r, sec->offset, buf, sec->size, s.name);
	if (err)
		goto out;
	s.p = buf;
	switch (feat) {
	case PD_FEAT_BUILD_ID:
		err = feat_build_id(&s);
		break;
	case PD_FEAT_HOSTNAME:
		err = fs_str(&s, &host->hostname, "hostname");
		break;
	case PD_FEAT_OSRELEASE:
		err = fs_str(&s, &host->osrelease, "os release");
		break;
	case PD_FEAT_VERSION:
		err = fs_str(&s, &host->version, "version");
		break;
	case PD_FEAT_ARCH:
		err = fs_str(&s, &host->arch, "arch");
		break;
	case PD_FEAT_CPUDESC:
		err = fs_str(&s, &host->cpudesc, "cpu description");
		break;
	case PD_FEAT_CPUID:
		err = fs_str(&s, &host->cpuid, "cpuid");
		break;
	case PD_FEAT_NRCPUS:
		err = fs_u32(&s, &a, "available CPUs");
		if (!err)
			err = fs_u32(&s, &b, "online CPUs");
		if (!err) {
			host->nr_cpus_avail = a;
			host->nr_cpus_online = b;
		}
		break;
	case PD_FEAT_TOTAL_MEM:
		err = fs_u64(&s, &host->total_mem_kb, "total memory");
		break;
	case PD_FEAT_CMDLINE:
		err = feat_cmdline(&s);
		break;
	case PD_FEAT_EVENT_DESC:
		err = feat_event_desc(&s);
		break;
	case PD_FEAT_PMU_MAPPINGS:
		err = feat_pmu_mappings(&s);
		break;
	case PD_FEAT_AUXTRACE:
		err = feat_auxtrace(&s);
		break;
	case PD_FEAT_SAMPLE_TIME:
		err = fs_u64(&s, &host->first_sample_time, "first sample time");
		if (!err)
			err = fs_u64(&s, &host->last_sample_time, "last sample time");
		break;
	}
out:
	free(buf);
	return err;
}

static int read_features(struct rd *r, const struct pd_file_header *h)
{
	struct pd_file_section *table = NULL;
	uint64_t table_off = h->data.offset + h->data.size;
	unsigned int feat, nr = 0, i = 0;
	int err;

	for (feat = 0; feat < PD_FEAT_BITS; feat++)
		nr += (h->adds_features[feat / 64] >> (feat % 64)) & 1;
	if (!nr)
		return 0;
	table = malloc(nr * sizeof(*table));
	if (!table)
		return -ENOMEM;
	err = rd_pread(r, table_off, table, nr * sizeof(*table), "feature section table");
	if (err)
		goto out;
	for (feat = 0; feat < PD_FEAT_BITS; feat++) {
		if (!((h->adds_features[feat / 64] >> (feat % 64)) & 1))
			continue;
		if (feat < 64)
			r->cap->features |= 1ULL << feat;
		err = read_feature(r, feat, &table[i], table_off + i * sizeof(*table));
		if (err)
			goto out;
		i++;
	}
out:
	free(table);
	return err;
}

/* Sort key of a record: its time; records without one sort first. */
static uint64_t rec_time(const struct pd_record *rec)
{
	if (rec->type == PD_RECORD_PTBPF_TRIGGER)
		return rec->trigger.time;
	if (rec->sample.valid & PERF_SAMPLE_TIME)
		return rec->sample.time;
	return 0;
}

/* Stable merge sort by time: files hold per-CPU rounds, not one time order. */
static int sort_records(struct capture *cap)
{
	size_t n = cap->nr_records, width, i;
	struct pd_record *a = cap->records, *b, *t;
	bool sorted = true;

	for (i = 1; i < n && sorted; i++)
		sorted = rec_time(&a[i - 1]) <= rec_time(&a[i]);
	if (sorted)
		return 0;
	b = malloc(n * sizeof(*b));
	if (!b)
		return -ENOMEM;
	for (width = 1; width < n; width *= 2) {
		for (i = 0; i < n; i += 2 * width) {
			size_t lo = i, mid = i + width < n ? i + width : n;
			size_t hi = i + 2 * width < n ? i + 2 * width : n;
			size_t l = lo, r = mid, k = lo;

			while (l < mid && r < hi)
				b[k++] = rec_time(&a[r]) < rec_time(&a[l]) ? a[r++] : a[l++];
			while (l < mid)
				b[k++] = a[l++];
			while (r < hi)
				b[k++] = a[r++];
		}
		t = a;
		a = b;
		b = t;
	}
	if (a != cap->records) {
		memcpy(cap->records, a, n * sizeof(*a));
		free(a);
	} else {
		free(b);
	}
	return 0;
}

/*
 * Decompress the zstd frames of `fd` into a memfd that replaces it, so the reader maps and
 * reads it as it reads a file. Bounded by RD_ZSTD_MAX_BYTES; a truncated or corrupt
 * stream is an error naming the offset in the compressed file.
 */
static int zstd_inflate(struct rd *r)
{
	size_t in_cap = ZSTD_DStreamInSize(), out_cap = ZSTD_DStreamOutSize();
	uint64_t in_off = 0, total = 0, max = zstd_max_bytes();
	ZSTD_DStream *ds = NULL;
	void *in_buf = NULL, *out_buf = NULL;
	size_t last = 0;
	int memfd = -1, err;

	ds = ZSTD_createDStream();
	in_buf = malloc(in_cap);
	out_buf = malloc(out_cap);
	if (!ds || !in_buf || !out_buf) {
		err = -ENOMEM;
		goto out;
	}
	memfd = memfd_create("ptbpf-perf.data", MFD_CLOEXEC);
	if (memfd < 0) {
		err = -errno;
		elog("%s: cannot decompress: memfd_create: %s\n", r->path, strerror(errno));
		goto out;
	}
	for (;;) {
		ssize_t n = pread(r->fd, in_buf, in_cap, in_off);
		ZSTD_inBuffer in = { in_buf, n > 0 ? (size_t)n : 0, 0 };

		if (n < 0) {
			err = -errno;
			elog("%s: read: %s\n", r->path, strerror(errno));
			goto out;
		}
		if (n == 0)
			break;
		while (in.pos < in.size) {
			ZSTD_outBuffer o = { out_buf, out_cap, 0 };

			last = ZSTD_decompressStream(ds, &o, &in);
			if (ZSTD_isError(last)) {
				err = rd_err(r, in_off + in.pos, "corrupt zstd stream: %s",
					     ZSTD_getErrorName(last));
				goto out;
			}
			total += o.pos;
			if (total > max) {
				err = rd_err(r, in_off + in.pos, "decompresses to more than %llu "
					     "bytes: not a capture", (unsigned long long)max);
				goto out;
			}
			if (o.pos && write(memfd, out_buf, o.pos) != (ssize_t)o.pos) {
				err = errno ? -errno : -EIO;
				elog("%s: cannot decompress: %s\n", r->path, strerror(-err));
				goto out;
			}
		}
		in_off += n;
	}
	if (last != 0) {
		err = rd_err(r, in_off, "truncated zstd stream (the last frame is incomplete)");
		goto out;
	}
	close(r->fd);
	r->fd = memfd;
	r->fsize = total;
	memfd = -1;
	err = 0;
out:
	if (memfd >= 0)
		close(memfd);
	ZSTD_freeDStream(ds);
	free(in_buf);
	free(out_buf);
	return err;
}

static int open_file(struct rd *r, const char *path)
{
	uint8_t magic[4];
	struct stat st;

	r->path = path;
	r->fd = open(path, O_RDONLY | O_CLOEXEC);
	if (r->fd < 0) {
		int err = -errno;

		elog("%s: cannot open: %s\n", path, strerror(errno));
		return err;
	}
	if (fstat(r->fd, &st) < 0) {
		int err = -errno;

		elog("%s: cannot stat: %s\n", path, strerror(errno));
		return err;
	}
	if (!S_ISREG(st.st_mode)) {
		elog("%s: not a regular file\n", path);
		return -EINVAL;
	}
	r->fsize = st.st_size;
	/* zstd frame magic 0xFD2FB528, little-endian */
	if (pread(r->fd, magic, sizeof(magic), 0) == sizeof(magic) &&
	    magic[0] == 0x28 && magic[1] == 0xb5 && magic[2] == 0x2f && magic[3] == 0xfd)
		return zstd_inflate(r);
	return 0;
}

/* perf record --threads: more records in DIR/data.0, data.1 ... (HEADER_DIR_FORMAT). */
static int read_dir_data(struct rd *r, const char *dir)
{
	char path[PATH_MAX];
	unsigned int i;
	int err;

	for (i = 0;; i++) {
		struct rd sub = *r;

		snprintf(path, sizeof(path), "%s/data.%u", dir, i);
		if (access(path, F_OK))
			return 0;
		sub.win = NULL;
		sub.win_cap = 0;
		err = open_file(&sub, path);
		if (!err)
			err = read_records(&sub, 0, sub.fsize);
		if (sub.fd >= 0)
			close(sub.fd);
		free(sub.win);
		if (err)
			return err;
	}
}

int perfdata_read(const char *path, struct capture **out)
{
	struct rd r = { .fd = -1 };
	struct pd_file_header h;
	char data_path[PATH_MAX];
	struct capture *cap;
	bool is_dir = false;
	struct stat st;
	int err;

	if (!path || !out)
		return -EINVAL;
	*out = NULL;
	if (stat(path, &st) < 0) {
		err = -errno;
		elog("%s: %s\n", path, strerror(errno));
		return err;
	}
	if (S_ISDIR(st.st_mode)) {
		is_dir = true;
		if (snprintf(data_path, sizeof(data_path), "%s/data", path) >= (int)sizeof(data_path))
			return -ENAMETOOLONG;
	} else {
		snprintf(data_path, sizeof(data_path), "%s", path);
	}
	cap = r.cap = capture__new();
	if (!cap)
		return -ENOMEM;
	err = open_file(&r, data_path);
	if (err)
		goto out;
	cap->file_size = r.fsize;
	cap->path = capture__strdup(cap, path);
	if (!cap->path) {
		err = -ENOMEM;
		goto out;
	}
	if (is_dir) {
		char kdir[PATH_MAX];

		snprintf(kdir, sizeof(kdir), "%s/kcore_dir", path);
		if (!stat(kdir, &st) && S_ISDIR(st.st_mode)) {
			cap->kcore_dir = capture__strdup(cap, kdir);
			if (!cap->kcore_dir) {
				err = -ENOMEM;
				goto out;
			}
		}
	}
	err = read_header(&r, &h);
	if (!err)
		err = read_attrs(&r, &h);
	if (!err)
		err = plan_trailers(&r, &h);
	if (!err)
		err = read_records(&r, h.data.offset, h.data.offset + h.data.size);
	if (!err && is_dir)
		err = read_dir_data(&r, path);
	if (!err)
		err = read_features(&r, &h);
	if (!err && r.vdso_have != r.vdso_total)
		err = rd_err(&r, r.vdso_off, "the vDSO chunks hold %llu of its %llu bytes",
			     (unsigned long long)r.vdso_have, (unsigned long long)r.vdso_total);
	if (!err && r.vdso) {
		cap->vdso = r.vdso;
		cap->vdso_size = r.vdso_total;
	}
	if (!err)
		err = sort_records(cap);
	if (err == -ENOMEM)
		elog("%s: out of memory\n", path);
out:
	if (r.fd >= 0)
		close(r.fd);
	free(r.win);
	if (err) {
		capture__free(cap);
		return err;
	}
	*out = cap;
	return 0;
}
