// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <intel-pt.h>

#include "array.h"
#include "log.h"
#include "ss_mm.h"
#include "ss_verify.h"

struct vlog_ent {
	uint64_t ip;
	int mm_id;
};

/* One CPU's stepped instructions; entry i is instruction number base + i. */
struct vlog {
	struct vlog_ent *ents;
	size_t nr, cap;
	uint64_t base;
};

struct ss_verify {
	struct vlog *cpus;
	int nr_cpus;
	ss_verify_mm_fn mm_of;
	void *ctx;
	/* Decoding in progress: the instruction the image callback reads for. */
	const struct vlog *cur_log;
	uint64_t cur_insn;
};

int ss_verify__new(int nr_cpus, ss_verify_mm_fn mm_of, void *ctx, struct ss_verify **out)
{
	struct ss_verify *v;

	if (nr_cpus <= 0 || !mm_of)
		return -EINVAL;
	v = calloc(1, sizeof(*v));
	if (!v)
		return -ENOMEM;
	v->cpus = calloc(nr_cpus, sizeof(*v->cpus));
	if (!v->cpus) {
		free(v);
		return -ENOMEM;
	}
	v->nr_cpus = nr_cpus;
	v->mm_of = mm_of;
	v->ctx = ctx;
	*out = v;
	return 0;
}

void ss_verify__free(struct ss_verify *v)
{
	int i;

	if (!v)
		return;
	for (i = 0; i < v->nr_cpus; i++)
		free(v->cpus[i].ents);
	free(v->cpus);
	free(v);
}

int ss_verify__log(struct ss_verify *v, int cpu, uint64_t ip, int mm_id)
{
	struct vlog *l = &v->cpus[cpu];

	if (array_grow_sz((void **)&l->ents, &l->cap, l->nr + 1, sizeof(*l->ents)))
		return -ENOMEM;
	l->ents[l->nr++] = (struct vlog_ent){ .ip = ip, .mm_id = mm_id };
	return 0;
}

void ss_verify__trim(struct ss_verify *v, int cpu, uint64_t insn)
{
	struct vlog *l = &v->cpus[cpu];
	size_t drop;

	if (insn <= l->base)
		return;
	drop = insn - l->base;
	if (drop > l->nr)
		drop = l->nr;
	memmove(l->ents, l->ents + drop, (l->nr - drop) * sizeof(*l->ents));
	l->nr -= drop;
	l->base += drop;
}

/* libipt reads code through here: from the address space of the instruction being decoded. */
static int read_image(uint8_t *buffer, size_t size, const struct pt_asid *asid, uint64_t ip,
		      void *context)
{
	struct ss_verify *v = context;
	const struct vlog *l = v->cur_log;
	uint64_t i = v->cur_insn;
	struct ss_mm *mm;
	int n;

	if (i < l->base || i - l->base >= l->nr)
		i = l->base + l->nr - 1;	/* past the log: the last address space */
	if (!l->nr)
		return -pte_nomap;
	mm = v->mm_of(v->ctx, l->ents[i - l->base].mm_id);
	if (!mm)
		return -pte_nomap;
	n = ss_mm__read(mm, ip, buffer, size);
	return n < 0 ? -pte_nomap : n;
}

static int differ(struct ss_verify_result *res, uint64_t offset, uint64_t insn, uint64_t want,
		  uint64_t got, const char *what)
{
	res->offset = offset;
	res->insn = insn;
	res->expected_ip = want;
	res->decoded_ip = got;
	snprintf(res->what, sizeof(res->what), "%s", what);
	return -EILSEQ;
}

int ss_verify__check(struct ss_verify *v, int cpu, const struct ss_enc_config *cfg,
		     const uint8_t *buf, size_t len, uint64_t offset,
		     const struct ss_psb_mark *marks, size_t nr_marks, struct ss_verify_result *res)
{
	const struct vlog *l;
	struct pt_insn_decoder *d = NULL;
	struct pt_config pc;
	uint64_t sync_off = 0, pos = 0, k, end;
	size_t m;
	int status, err = 0;

	memset(res, 0, sizeof(*res));
	if (cpu < 0 || cpu >= v->nr_cpus)
		return -EINVAL;
	l = &v->cpus[cpu];
	end = l->base + l->nr;
	if (!len)
		return l->nr ? differ(res, offset, l->base, l->ents[0].ip, 0,
				      "instructions were stepped but the ring is empty") : 0;
	pt_config_init(&pc);
	pc.begin = (uint8_t *)buf;
	pc.end = (uint8_t *)buf + len;
	pc.mtc_freq = cfg->mtc_freq;
	pc.cpuid_0x15_eax = cfg->ctc_eax;
	pc.cpuid_0x15_ebx = cfg->ctc_ebx;
	pc.nom_freq = cfg->cbr;
	d = pt_insn_alloc_decoder(&pc);
	if (!d)
		return -ENOMEM;
	status = pt_image_set_callback(pt_insn_get_image(d), read_image, v);
	if (status < 0) {
		err = -EINVAL;
		goto out;
	}
	status = pt_insn_sync_forward(d);
	if (status < 0) {
		err = differ(res, offset, l->base, l->nr ? l->ents[0].ip : 0, 0,
			     "no PSB in the ring: the PSB period is longer than the buffer");
		goto out;
	}
	pt_insn_get_sync_offset(d, &sync_off);
	for (m = 0; m < nr_marks && marks[m].offset != offset + sync_off; m++)
		;
	if (m == nr_marks) {
		err = differ(res, offset + sync_off, 0, 0, 0,
			     "the decoder synchronised where no PSB was written");
		goto out;
	}
	k = marks[m].insn;
	if (k < l->base) {
		err = differ(res, offset + sync_off, k, 0, 0,
			     "the log lost instructions the ring still holds");
		goto out;
	}
	res->skipped = k - l->base;
	v->cur_log = l;
	for (;;) {
		struct pt_insn insn;

		while (status & pts_event_pending) {
			struct pt_event ev;

			status = pt_insn_event(d, &ev, sizeof(ev));
			if (status < 0)
				break;
		}
		if (status < 0)
			break;
		v->cur_insn = k;
		/*
		 * An error may come with the instruction decoded before it, or with none, and
		 * then libipt may leave `insn` as it was: ptic_error (0) marks "none".
		 */
		memset(&insn, 0, sizeof(insn));
		status = pt_insn_next(d, &insn, sizeof(insn));
		pt_insn_get_offset(d, &pos);
		if (insn.iclass != ptic_error) {
			if (k >= end) {
				err = differ(res, offset + pos, k, 0, insn.ip,
					     "decoded past the last stepped instruction");
				goto out;
			}
			if (insn.ip != l->ents[k - l->base].ip) {
				err = differ(res, offset + pos, k, l->ents[k - l->base].ip, insn.ip,
					     "decoded another instruction");
				goto out;
			}
			k++;
			res->checked++;
		}
		if (status < 0)
			break;
	}
	if (status != -pte_eos) {
		char what[160];

		snprintf(what, sizeof(what), "decode error: %s", pt_errstr(pt_errcode(status)));
		err = differ(res, offset + pos, k, k < end ? l->ents[k - l->base].ip : 0, 0, what);
	} else if (k < end) {
		err = differ(res, offset + pos, k, l->ents[k - l->base].ip, 0,
			     "the trace ended before the last stepped instruction");
	}
out:
	pt_insn_free_decoder(d);
	return err;
}
