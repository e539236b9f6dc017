// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * perf.data writer: a file perf 6.1 reads without warnings (the layout perf record
 * writes, see perfdata_int.h), written to a temporary name next to the target, mode
 * 0600, and renamed into place only when complete and synced.
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"
#include "perfdata.h"
#include "perfdata_int.h"
#include "symtab.h"

#define WR_BUF (256 * 1024)

/* Buffered output with a sticky error. */
struct wr {
	int fd;				/* the temporary file */
	const char *path;		/* the final name, for messages */
	uint8_t *buf;			/* WR_BUF bytes */
	size_t len;			/* bytes pending in buf */
	uint64_t off;			/* file offset of the next byte put */
	int err;			/* first error (-errno), 0 if none */
};

static void wr_fail(struct wr *w, int err, const char *what)
{
	if (w->err)
		return;
	w->err = err;
	elog("cannot write %s: %s%s%s\n", w->path, strerror(-err), what ? " " : "",
	     what ? what : "");
}

static void wr_flush(struct wr *w)
{
	size_t done = 0;

	while (!w->err && done < w->len) {
		ssize_t n = write(w->fd, w->buf + done, w->len - done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			wr_fail(w, -errno, NULL);
		else if (n == 0)
			wr_fail(w, -EIO, NULL);
		else
			done += n;
	}
	w->len = 0;
}

static void wr_put(struct wr *w, const void *p, size_t n)
{
	const uint8_t *s = p;

	w->off += n;
	while (!w->err && n) {
		size_t k = WR_BUF - w->len < n ? WR_BUF - w->len : n;

		if (s)
			memcpy(w->buf + w->len, s, k);
		else
			memset(w->buf + w->len, 0, k);
		w->len += k;
		n -= k;
		if (s)
			s += k;
		if (w->len == WR_BUF)
			wr_flush(w);
	}
}

static void wr_zero(struct wr *w, size_t n)
{
	wr_put(w, NULL, n);
}

static void wr_u32(struct wr *w, uint32_t v)
{
	wr_put(w, &v, 4);
}

static void wr_u64(struct wr *w, uint64_t v)
{
	wr_put(w, &v, 8);
}

/* Write at an earlier offset (header, section table) once everything was flushed. */
static void wr_at(struct wr *w, uint64_t off, const void *p, size_t n)
{
	wr_flush(w);
	while (!w->err && n) {
		ssize_t k = pwrite(w->fd, p, n, off);

		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0) {
			wr_fail(w, k < 0 ? -errno : -EIO, NULL);
			return;
		}
		p = (const uint8_t *)p + k;
		n -= k;
		off += k;
	}
}

/* A perf feature string: u32 padded length, the string, zeros to NAME_ALIGN. */
static void wr_str(struct wr *w, const char *s)
{
	size_t len = strlen(s ? s : "") + 1;
	size_t padded = (len + PD_NAME_ALIGN - 1) & ~(size_t)(PD_NAME_ALIGN - 1);

	wr_u32(w, padded);
	wr_put(w, s ? s : "", len - 1);
	wr_zero(w, padded - len + 1);
}

/* What the writer decided about the capture before writing. */
struct plan {
	const struct capture *cap;
	uint64_t **ids;			/* per attr: ids to write (the capture's or made up) */
	uint32_t *nr_ids;		/* per attr: their number */
	uint64_t *id_offsets;		/* per attr: file offset of its ids */
	struct pd_build_id vdso_bid;	/* made from the vDSO image */
	bool add_vdso_bid;		/* write vdso_bid too */
	uint32_t nr_cpus;		/* for HEADER_NRCPUS when the host did not say */
	bool have_time_conv;		/* the records include a TIME_CONV */
	uint64_t *aux_offsets;		/* file offset of each AUXTRACE record */
};

static int plan_attrs(struct plan *pl)
{
	const struct capture *cap = pl->cap;
	uint64_t next_id = 1;
	bool all_identifier = true, same = true;
	uint32_t i, j;

	for (i = 0; i < cap->nr_attrs; i++) {
		const struct perf_event_attr *a = &cap->attrs[i].attr;

		for (j = 0; j < cap->attrs[i].nr_ids; j++)
			if (cap->attrs[i].ids[j] >= next_id)
				next_id = cap->attrs[i].ids[j] + 1;
		if (!(a->sample_type & PERF_SAMPLE_IDENTIFIER))
			all_identifier = false;
		if (a->sample_type != cap->attrs[0].attr.sample_type)
			same = false;
		if (a->sample_id_all != cap->attrs[0].attr.sample_id_all) {
			elog("cannot write %s: attr %u's sample_id_all differs from attr 0's\n",
			     "capture", i);
			return -EINVAL;
		}
	}
	if (!same && !all_identifier) {
		elog("cannot write capture: its events have different sample_type and not all of "
		     "them have PERF_SAMPLE_IDENTIFIER (perf could not tell their records apart)\n");
		return -EINVAL;
	}
	pl->ids = calloc(cap->nr_attrs, sizeof(*pl->ids));
	pl->nr_ids = calloc(cap->nr_attrs, sizeof(*pl->nr_ids));
	pl->id_offsets = calloc(cap->nr_attrs, sizeof(*pl->id_offsets));
	if (!pl->ids || !pl->nr_ids || !pl->id_offsets)
		return -ENOMEM;
	for (i = 0; i < cap->nr_attrs; i++) {
		pl->ids[i] = cap->attrs[i].ids;
		pl->nr_ids[i] = cap->attrs[i].nr_ids;
		if (pl->nr_ids[i])
			continue;
		/* perf maps records to events by id: an event without one gets one. */
		pl->ids[i] = malloc(sizeof(uint64_t));
		if (!pl->ids[i])
			return -ENOMEM;
		pl->ids[i][0] = next_id++;
		pl->nr_ids[i] = 1;
	}
	return 0;
}

static void plan_cpus(struct plan *pl)
{
	const struct capture *cap = pl->cap;
	uint32_t max = 0;
	size_t i;

	for (i = 0; i < cap->nr_aux; i++)
		if (cap->aux[i].cpu != UINT32_MAX && cap->aux[i].cpu + 1 > max)
			max = cap->aux[i].cpu + 1;
	for (i = 0; i < cap->nr_records; i++) {
		const struct pd_record *r = &cap->records[i];

		if ((r->sample.valid & PERF_SAMPLE_CPU) && r->sample.cpu != UINT32_MAX &&
		    r->sample.cpu + 1 > max)
			max = r->sample.cpu + 1;
		if (r->type == PD_RECORD_PTBPF_TRIGGER && r->trigger.cpu != UINT32_MAX &&
		    r->trigger.cpu + 1 > max)
			max = r->trigger.cpu + 1;
	}
	pl->nr_cpus = max ? max : 1;
}

static int plan_capture(struct plan *pl)
{
	const struct capture *cap = pl->cap;
	size_t i;
	int err;

	if (!cap->nr_attrs) {
		elog("cannot write capture: it has no events (attrs)\n");
		return -EINVAL;
	}
	err = plan_attrs(pl);
	if (err)
		return err;
	plan_cpus(pl);
	for (i = 0; i < cap->nr_records; i++) {
		const struct pd_record *r = &cap->records[i];

		if (r->type == PD_RECORD_TIME_CONV)
			pl->have_time_conv = true;
		else if (r->type == PD_RECORD_PTBPF_TRIGGER)
			continue;
		else if (pd_record_encode(r, 0, false, NULL, 0) == -EINVAL) {
			elog("cannot write capture: record %zu (type %u, %s) cannot be written: "
			     "unknown type or longer than 64 KiB\n", i, r->type,
			     pd_record_type_name(r->type));
			return -EINVAL;
		}
	}
	for (i = 0; i < cap->nr_aux; i++) {
		if (cap->aux[i].size && !cap->aux[i].data) {
			elog("cannot write capture: trace buffer %zu has %llu bytes but no data\n", i,
			     (unsigned long long)cap->aux[i].size);
			return -EINVAL;
		}
	}
	pl->aux_offsets = calloc(cap->nr_aux ? cap->nr_aux : 1, sizeof(*pl->aux_offsets));
	if (!pl->aux_offsets)
		return -ENOMEM;
	if (cap->vdso) {
		bool have = false;

		for (i = 0; i < cap->nr_build_ids; i++)
			if (cap->build_ids[i].filename && !strcmp(cap->build_ids[i].filename, "[vdso]"))
				have = true;
		if (!have && !symtab__image_build_id(cap->vdso, cap->vdso_size, pl->vdso_bid.id,
						     &pl->vdso_bid.size)) {
			pl->vdso_bid.pid = -1;
			pl->vdso_bid.misc = PERF_RECORD_MISC_USER;
			pl->vdso_bid.filename = "[vdso]";
			pl->add_vdso_bid = true;
		}
	}
	return 0;
}

static void plan_free(struct plan *pl)
{
	uint32_t i;

	for (i = 0; pl->ids && i < pl->cap->nr_attrs; i++)
		if (pl->ids[i] != pl->cap->attrs[i].ids)
			free(pl->ids[i]);
	free(pl->ids);
	free(pl->nr_ids);
	free(pl->id_offsets);
	free(pl->aux_offsets);
}

static void write_auxtrace_info(struct wr *w, const struct pd_pt_info *pt)
{
	size_t flen = pt->filter ? strlen(pt->filter) : 0;
	size_t fbytes = flen ? (flen + 1 + 7) & ~(size_t)7 : 0;
	uint64_t priv[PD_PT_PRIV_WORDS] = {
		pt->pmu_type, pt->time_shift, pt->time_mult, pt->time_zero,
		pt->cap_user_time_zero, pt->tsc_bit, pt->noretcomp_bit, pt->have_sched_switch,
		pt->snapshot_mode, pt->per_cpu_mmaps, pt->mtc_bit, pt->mtc_freq_bits,
		pt->tsc_ctc_ratio_n, pt->tsc_ctc_ratio_d, pt->cyc_bit, pt->max_non_turbo_ratio,
		flen,
	};
	struct perf_event_header h = {
		.type = PD_RECORD_AUXTRACE_INFO,
		.size = 16 + sizeof(priv) + fbytes + 8,
	};

	wr_put(w, &h, sizeof(h));
	wr_u32(w, PD_AUXTRACE_INTEL_PT);
	wr_u32(w, 0);
	wr_put(w, priv, sizeof(priv));
	if (flen) {
		wr_put(w, pt->filter, flen);
		wr_zero(w, fbytes - flen);
	}
	/* perf >= 5.19 reads one more word, cap_event_trace, when the record has it. */
	wr_u64(w, pt->cap_event_trace);
}

/* perf's header and ptbpf's for a ptbpf record of `body` more bytes. */
static void write_ptbpf_header(struct wr *w, uint32_t kind, size_t body)
{
	struct perf_event_header h = {
		.type = PD_RECORD_HEADER_EVENT_TYPE,
		.size = sizeof(h) + sizeof(struct pd_ptbpf_header) + body,
	};
	struct pd_ptbpf_header ph = {
		.magic = PD_PTBPF_MAGIC, .kind = kind, .version = PD_PTBPF_VERSION,
	};

	wr_put(w, &h, sizeof(h));
	wr_put(w, &ph, sizeof(ph));
}

static int write_trigger(struct wr *w, const struct pd_trigger *t)
{
	struct pd_trigger_disk d = {
		.kind = t->kind, .index = t->index, .cpu = t->cpu, .pid = t->pid, .tid = t->tid,
		.time = t->time, .ktime = t->ktime, .ip = t->ip, .latency_ns = t->latency_ns,
		.arg0 = t->arg0, .arg1 = t->arg1,
	};
	size_t len = t->desc ? strlen(t->desc) : 0;
	size_t padded = (len + 1 + 7) & ~(size_t)7;

	if (sizeof(struct perf_event_header) + sizeof(struct pd_ptbpf_header) + sizeof(d) +
	    padded > UINT16_MAX) {
		elog("cannot write %s: trigger description of %zu bytes is too long\n", w->path,
		     len);
		return -EINVAL;
	}
	write_ptbpf_header(w, PD_PTBPF_TRIGGER, sizeof(d) + padded);
	wr_put(w, &d, sizeof(d));
	wr_put(w, t->desc, len);
	wr_zero(w, padded - len);
	return 0;
}

/* The vDSO image in chunks that fit records. */
static void write_vdso(struct wr *w, const uint8_t *image, size_t size)
{
	size_t off, n;

	for (off = 0; off < size; off += n) {
		struct pd_vdso_chunk c = { .total = size, .offset = off };

		n = size - off < PD_VDSO_CHUNK ? size - off : PD_VDSO_CHUNK;
		c.size = n;
		write_ptbpf_header(w, PD_PTBPF_VDSO, sizeof(c) + ((n + 7) & ~(size_t)7));
		wr_put(w, &c, sizeof(c));
		wr_put(w, image + off, n);
		wr_zero(w, ((n + 7) & ~(size_t)7) - n);
	}
}

static int write_record(struct wr *w, struct plan *pl, const struct pd_record *rec)
{
	const struct capture *cap = pl->cap;
	const struct pd_attr *a = capture__record_attr(cap, rec);
	uint32_t ai = a - cap->attrs;
	struct pd_record r = *rec;
	uint8_t buf[UINT16_MAX + 1];
	uint64_t st = a->attr.sample_type;
	int n;

	/* The trailer's id must name the attr the trailer was laid out for. */
	if (st & (PERF_SAMPLE_ID | PERF_SAMPLE_IDENTIFIER)) {
		bool ok = false;
		uint32_t j;

		if (r.sample.valid & (PERF_SAMPLE_ID | PERF_SAMPLE_IDENTIFIER))
			for (j = 0; j < pl->nr_ids[ai] && !ok; j++)
				ok = pl->ids[ai][j] == r.sample.id;
		if (!ok) {
			r.sample.id = pl->ids[ai][0];
			if ((r.sample.valid & PERF_SAMPLE_CPU) && r.sample.cpu < pl->nr_ids[ai] &&
			    cap->pt.per_cpu_mmaps)
				r.sample.id = pl->ids[ai][r.sample.cpu];
		}
	}
	n = pd_record_encode(&r, st, a->attr.sample_id_all, buf, sizeof(buf));
	if (n < 0) {
		elog("cannot write %s: a %s record does not fit in 64 KiB\n", w->path,
		     pd_record_type_name(rec->type));
		return n;
	}
	wr_put(w, buf, n);
	return 0;
}

static int write_data(struct wr *w, struct plan *pl)
{
	const struct capture *cap = pl->cap;
	struct perf_event_header fr = { .type = PD_RECORD_FINISHED_ROUND, .size = 8 };
	size_t i;
	int err;

	if (cap->pt.present)
		write_auxtrace_info(w, &cap->pt);
	if (!pl->have_time_conv && cap->pt.present) {
		struct pd_record tc = { .type = PD_RECORD_TIME_CONV };

		tc.time_conv.time_shift = cap->pt.time_shift;
		tc.time_conv.time_mult = cap->pt.time_mult;
		tc.time_conv.time_zero = cap->pt.time_zero;
		tc.time_conv.cap_user_time_zero = cap->pt.cap_user_time_zero;
		err = write_record(w, pl, &tc);
		if (err)
			return err;
	}
	if (cap->vdso && cap->vdso_size)
		write_vdso(w, cap->vdso, cap->vdso_size);
	for (i = 0; i < cap->nr_records; i++) {
		if (cap->records[i].type == PD_RECORD_PTBPF_TRIGGER)
			err = write_trigger(w, &cap->records[i].trigger);
		else
			err = write_record(w, pl, &cap->records[i]);
		if (err)
			return err;
	}
	for (i = 0; i < cap->nr_aux; i++) {
		const struct pd_auxtrace *a = &cap->aux[i];
		uint64_t padded = (a->size + 7) & ~7ULL;
		struct perf_event_header h = { .type = PD_RECORD_AUXTRACE,
					       .size = PD_AUXTRACE_SIZE };

		pl->aux_offsets[i] = w->off;
		wr_put(w, &h, sizeof(h));
		wr_u64(w, padded);
		wr_u64(w, a->offset);
		/* perf ignores TSC packets (and 6.1 may crash) when the reference is 0. */
		wr_u64(w, a->reference ? a->reference : 1);
		wr_u32(w, a->idx);
		wr_u32(w, a->tid);
		wr_u32(w, a->cpu);
		wr_u32(w, 0);
		wr_put(w, a->data, a->size);
		wr_zero(w, padded - a->size);
	}
	wr_put(w, &fr, sizeof(fr));
	return w->err;
}

/* Each feature: whether to write it, and how. */
static bool feat_wanted(const struct plan *pl, unsigned int feat)
{
	const struct capture *cap = pl->cap;
	const struct pd_host *h = &cap->host;

	switch (feat) {
	case PD_FEAT_BUILD_ID:
		return cap->nr_build_ids || pl->add_vdso_bid;
	case PD_FEAT_HOSTNAME:
		return h->hostname;
	case PD_FEAT_OSRELEASE:
		return h->osrelease;
	case PD_FEAT_VERSION:
		return true;
	case PD_FEAT_ARCH:
		return true;
	case PD_FEAT_NRCPUS:
		return true;
	case PD_FEAT_CPUDESC:
		return h->cpudesc;
	case PD_FEAT_CPUID:
		return h->cpuid;
	case PD_FEAT_TOTAL_MEM:
		return h->total_mem_kb;
	case PD_FEAT_CMDLINE:
		return h->cmdline;
	case PD_FEAT_EVENT_DESC:
		return true;
	case PD_FEAT_PMU_MAPPINGS:
		return cap->nr_pmus || cap->pt.present;
	case PD_FEAT_AUXTRACE:
		return cap->nr_aux;
	case PD_FEAT_SAMPLE_TIME:
		return h->first_sample_time || h->last_sample_time;
	default:
		return false;
	}
}

static void write_build_id(struct wr *w, const struct pd_build_id *b)
{
	const char *name = b->filename ? b->filename : "";
	size_t len = strlen(name) + 1;
	size_t padded = (len + PD_NAME_ALIGN - 1) & ~(size_t)(PD_NAME_ALIGN - 1);
	struct perf_event_header h = {
		.type = 0,
		/* PERF_RECORD_MISC_BUILD_ID_SIZE: the size byte below is valid. */
		.misc = b->misc | (1 << 15),
		.size = 36 + padded,
	};
	uint8_t id[24] = { 0 };

	memcpy(id, b->id, b->size <= 20 ? b->size : 20);
	id[20] = b->size;
	wr_put(w, &h, sizeof(h));
	wr_u32(w, (uint32_t)b->pid);
	wr_put(w, id, sizeof(id));
	wr_put(w, name, len - 1);
	wr_zero(w, padded - len + 1);
}

static const char *attr_name(const struct capture *cap, const struct pd_attr *a)
{
	if (a->name)
		return a->name;
	if (cap->pt.present && a->attr.type == cap->pt.pmu_type)
		return a->attr.exclude_kernel ? "intel_pt//u" : "intel_pt//";
	if (a->attr.type == PERF_TYPE_SOFTWARE && a->attr.config == PERF_COUNT_SW_DUMMY)
		return a->attr.exclude_kernel ? "dummy:u" : "dummy";
	return "unknown";
}

static void write_feature(struct wr *w, struct plan *pl, unsigned int feat)
{
	const struct capture *cap = pl->cap;
	const struct pd_host *h = &cap->host;
	size_t i;

	switch (feat) {
	case PD_FEAT_BUILD_ID:
		for (i = 0; i < cap->nr_build_ids; i++)
			write_build_id(w, &cap->build_ids[i]);
		if (pl->add_vdso_bid)
			write_build_id(w, &pl->vdso_bid);
		break;
	case PD_FEAT_HOSTNAME:
		wr_str(w, h->hostname);
		break;
	case PD_FEAT_OSRELEASE:
		wr_str(w, h->osrelease);
		break;
	case PD_FEAT_VERSION:
		wr_str(w, h->version ? h->version : "ptbpf " PTBPF_VERSION);
		break;
	case PD_FEAT_ARCH:
		wr_str(w, h->arch ? h->arch : "x86_64");
		break;
	case PD_FEAT_NRCPUS:
		wr_u32(w, h->nr_cpus_avail ? h->nr_cpus_avail : pl->nr_cpus);
		wr_u32(w, h->nr_cpus_online ? h->nr_cpus_online : pl->nr_cpus);
		break;
	case PD_FEAT_CPUDESC:
		wr_str(w, h->cpudesc);
		break;
	case PD_FEAT_CPUID:
		wr_str(w, h->cpuid);
		break;
	case PD_FEAT_TOTAL_MEM:
		wr_u64(w, h->total_mem_kb);
		break;
	case PD_FEAT_CMDLINE: {
		/* One argument per space-separated word: the split is lost in memory. */
		char *copy = strdup(h->cmdline), *save = NULL, *tok;
		uint32_t nr = 0;

		if (!copy) {
			wr_fail(w, -ENOMEM, NULL);
			break;
		}
		for (tok = strtok_r(copy, " ", &save); tok; tok = strtok_r(NULL, " ", &save))
			nr++;
		wr_u32(w, nr);
		strcpy(copy, h->cmdline);
		for (tok = strtok_r(copy, " ", &save); tok; tok = strtok_r(NULL, " ", &save))
			wr_str(w, tok);
		free(copy);
		break;
	}
	case PD_FEAT_EVENT_DESC:
		wr_u32(w, cap->nr_attrs);
		wr_u32(w, sizeof(struct perf_event_attr));
		for (i = 0; i < cap->nr_attrs; i++) {
			struct perf_event_attr attr = cap->attrs[i].attr;

			attr.size = sizeof(attr);
			wr_put(w, &attr, sizeof(attr));
			wr_u32(w, pl->nr_ids[i]);
			wr_str(w, attr_name(cap, &cap->attrs[i]));
			wr_put(w, pl->ids[i], pl->nr_ids[i] * sizeof(uint64_t));
		}
		break;
	case PD_FEAT_PMU_MAPPINGS:
		if (cap->nr_pmus) {
			wr_u32(w, cap->nr_pmus);
			for (i = 0; i < cap->nr_pmus; i++) {
				wr_u32(w, cap->pmus[i].type);
				wr_str(w, cap->pmus[i].name);
			}
		} else {
			wr_u32(w, 2);
			wr_u32(w, PERF_TYPE_SOFTWARE);
			wr_str(w, "software");
			wr_u32(w, cap->pt.pmu_type);
			wr_str(w, "intel_pt");
		}
		break;
	case PD_FEAT_AUXTRACE:
		wr_u64(w, cap->nr_aux);
		for (i = 0; i < cap->nr_aux; i++) {
			/* sz is the record's header size; perf rejects anything else. */
			wr_u64(w, pl->aux_offsets[i]);
			wr_u64(w, PD_AUXTRACE_SIZE);
		}
		break;
	case PD_FEAT_SAMPLE_TIME:
		wr_u64(w, h->first_sample_time);
		wr_u64(w, h->last_sample_time);
		break;
	}
}

static int write_file(struct wr *w, struct plan *pl)
{
	const struct capture *cap = pl->cap;
	struct pd_file_header h = { .magic = PD_MAGIC2, .size = sizeof(h) };
	struct pd_file_section *table;
	unsigned int feat, nr = 0, k = 0;
	uint64_t table_off;
	uint32_t i;
	int err;

	wr_zero(w, sizeof(h));
	for (i = 0; i < cap->nr_attrs; i++) {
		pl->id_offsets[i] = w->off;
		wr_put(w, pl->ids[i], pl->nr_ids[i] * sizeof(uint64_t));
	}
	h.attr_size = sizeof(struct perf_event_attr) + sizeof(struct pd_file_section);
	h.attrs.offset = w->off;
	h.attrs.size = cap->nr_attrs * h.attr_size;
	for (i = 0; i < cap->nr_attrs; i++) {
		struct perf_event_attr attr = cap->attrs[i].attr;
		struct pd_file_section ids = { pl->id_offsets[i],
					       pl->nr_ids[i] * sizeof(uint64_t) };

		attr.size = sizeof(attr);
		wr_put(w, &attr, sizeof(attr));
		wr_put(w, &ids, sizeof(ids));
	}
	h.data.offset = w->off;
	err = write_data(w, pl);
	if (err)
		return err;
	h.data.size = w->off - h.data.offset;

	for (feat = 0; feat < PD_FEAT_BITS; feat++)
		if (feat_wanted(pl, feat))
			nr++;
	table = calloc(nr ? nr : 1, sizeof(*table));
	if (!table)
		return -ENOMEM;
	table_off = w->off;
	wr_zero(w, nr * sizeof(*table));
	for (feat = 0; feat < PD_FEAT_BITS; feat++) {
		if (!feat_wanted(pl, feat))
			continue;
		h.adds_features[feat / 64] |= 1ULL << (feat % 64);
		table[k].offset = w->off;
		write_feature(w, pl, feat);
		table[k].size = w->off - table[k].offset;
		k++;
	}
	wr_at(w, table_off, table, nr * sizeof(*table));
	free(table);
	wr_at(w, 0, &h, sizeof(h));
	return w->err;
}

int perfdata_write(const char *path, const struct capture *cap)
{
	struct plan pl = { .cap = cap };
	struct wr w = { .fd = -1, .path = path };
	char tmp[PATH_MAX], dirbuf[PATH_MAX], basebuf[PATH_MAX];
	const char *dir, *base;
	bool created = false;
	struct stat st;
	int err, dfd;

	if (!path || !*path || !cap)
		return -EINVAL;
	/* the rename below would put a file in place of a device (/dev/null) or a FIFO */
	if (!stat(path, &st) && !S_ISREG(st.st_mode)) {
		elog("cannot write %s: not a regular file\n", path);
		return -EINVAL;
	}
	if (strlen(path) >= sizeof(dirbuf)) {
		elog("cannot write %s: path too long\n", path);
		return -ENAMETOOLONG;
	}
	strcpy(dirbuf, path);
	strcpy(basebuf, path);
	dir = dirname(dirbuf);
	base = basename(basebuf);
	if (snprintf(tmp, sizeof(tmp), "%s/.%s.XXXXXX", dir, base) >= (int)sizeof(tmp)) {
		elog("cannot write %s: path too long\n", path);
		return -ENAMETOOLONG;
	}

	err = plan_capture(&pl);
	if (err)
		goto out;
	w.buf = malloc(WR_BUF);
	if (!w.buf) {
		err = -ENOMEM;
		goto out;
	}
	/* mkstemp creates the file 0600: a capture holds the traced program's secrets. */
	w.fd = mkostemp(tmp, O_CLOEXEC);
	if (w.fd < 0) {
		err = -errno;
		elog("cannot create a temporary file in %s: %s\n", dir, strerror(errno));
		goto out;
	}
	created = true;
	err = write_file(&w, &pl);
	if (!err && fsync(w.fd) < 0) {
		err = -errno;
		wr_fail(&w, err, "(fsync)");
	}
	if (close(w.fd) < 0 && !err) {
		err = -errno;
		wr_fail(&w, err, "(close)");
	}
	w.fd = -1;
	if (err)
		goto out;
	if (rename(tmp, path) < 0) {
		err = -errno;
		elog("cannot rename %s to %s: %s\n", tmp, path, strerror(errno));
		goto out;
	}
	created = false;
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd >= 0) {
		fsync(dfd);
		close(dfd);
	}
out:
	if (err == -ENOMEM)
		elog("cannot write %s: out of memory\n", path);
	if (w.fd >= 0)
		close(w.fd);
	if (created)
		unlink(tmp);
	free(w.buf);
	plan_free(&pl);
	return err;
}
