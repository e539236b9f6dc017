// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The PSBs of a stream and their times: where a decode can start, and when.
 *
 * Skipping the stretches of a CPU's trace that no selected thread ran in (and starting
 * a --window at the PSB before it, as perf's intel_pt_fast_forward does for --time)
 * needs the PSBs without decoding what lies between them. The PSB's 16-byte pattern is
 * found with memmem, at memory speed; each candidate is then read with libipt's packet
 * decoder, which confirms it is a PSB and gives the TSC of its PSB+.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "array.h"
#include "ptd.h"

/* Packets a PSB+ holds at most before PSBEND (PSB, TSC, TMA, CBR, MODE, PIP, VMCS, FUP...). */
#define PSB_PLUS_PACKETS 32

static const uint8_t psb_pattern[16] = {
	0x02, 0x82, 0x02, 0x82, 0x02, 0x82, 0x02, 0x82,
	0x02, 0x82, 0x02, 0x82, 0x02, 0x82, 0x02, 0x82,
};

struct pt_packet_decoder *ptd_pkt_open(const uint8_t *buf, size_t size,
				       const struct pt_config *cfg_in)
{
	struct pt_config cfg = *cfg_in;

	cfg.size = sizeof(cfg);
	cfg.begin = (uint8_t *)buf;
	cfg.end = (uint8_t *)buf + size;
	return pt_pkt_alloc_decoder(&cfg);
}

/* The TSC in the PSB+ at `off` (0: none); -1 if `off` holds no PSB. */
static int psb_time(struct pt_packet_decoder *pkt, uint64_t off, uint64_t *tsc)
{
	struct pt_packet p;
	int i;

	*tsc = 0;
	if (pt_pkt_sync_set(pkt, off) < 0 || pt_pkt_next(pkt, &p, sizeof(p)) < 0 ||
	    p.type != ppt_psb)
		return -1;
	for (i = 0; i < PSB_PLUS_PACKETS && pt_pkt_next(pkt, &p, sizeof(p)) >= 0; i++) {
		if (p.type == ppt_tsc)
			*tsc = p.payload.tsc.tsc;
		if (p.type == ppt_psbend || p.type == ppt_psb)
			break;
	}
	return 0;
}

/* Bytes after a PSB that hold its PSB+ (at most PSB_PLUS_PACKETS packets). */
#define PSB_PLUS_BYTES 1024

/*
 * The PSBs starting in [from, to), at most `max`; see ptd_psb_index(). From a file
 * (src->fd), the bytes are read a window at a time, the first one `first` bytes long
 * (then doubling): a probe then costs a small read, not the first touch of a mapped
 * page. From memory, one window holds the rest of the stream.
 */
static int scan(const struct ptd_psb_src *src, const struct pt_config *cfg,
		const struct ptd_clock *clock, uint64_t from, uint64_t to, size_t max,
		size_t first, struct ptd_psb **out, size_t *nr)
{
	struct ptd_psb *v = NULL;
	size_t n = 0, cap = 0, size = src->size, want = first;
	uint8_t *win = NULL;
	uint64_t off = from;
	int err = 0;

	*out = NULL;
	*nr = 0;
	if (to > size)
		to = size;
	while (!err && n < max && off < to) {
		uint64_t w = off, lim;
		size_t len = size - w;
		const uint8_t *bytes = src->buf + w, *hit;
		struct pt_packet_decoder *pkt;

		if (src->fd >= 0) {
			if (len > want + PSB_PLUS_BYTES)
				len = want + PSB_PLUS_BYTES;
			free(win);
			win = malloc(len);
			if (!win || pread(src->fd, win, len, (off_t)(src->file_off + w)) != (ssize_t)len) {
				err = win ? -EIO : -ENOMEM;
				break;
			}
			bytes = win;
			want *= 2;
		}
		/* a PSB found before lim has its PSB+ in the window */
		lim = w + len == size ? size : w + len - PSB_PLUS_BYTES;
		if (lim > to)
			lim = to;
		pkt = ptd_pkt_open(bytes, len, cfg);
		if (!pkt) {
			err = -EINVAL;
			break;
		}
		while (n < max && off < lim &&
		       (hit = memmem(bytes + (off - w), len - (off - w), psb_pattern,
				     sizeof(psb_pattern)))) {
			uint64_t tsc;

			off = w + (uint64_t)(hit - bytes);
			if (off >= lim)
				break;
			if (psb_time(pkt, off - w, &tsc) < 0) {
				off++;
				continue;
			}
			err = array_grow_sz((void **)&v, &cap, n + 1, sizeof(*v));
			if (err)
				break;
			v[n].offset = off;
			v[n].time = tsc ? ptd_clock_ns(clock, tsc) : 0;
			n++;
			off += sizeof(psb_pattern);
		}
		pt_pkt_free_decoder(pkt);
		if (off < lim && n < max)
			off = lim;
	}
	free(win);
	if (err) {
		free(v);
		return err;
	}
	*out = v;
	*nr = n;
	return 0;
}

int ptd_psb_src_index(const struct ptd_psb_src *src, const struct pt_config *cfg,
		      const struct ptd_clock *clock, uint64_t from, uint64_t to,
		      struct ptd_psb **out, size_t *nr)
{
	return scan(src, cfg, clock, from, to, SIZE_MAX, to > from ? to - from : 1, out, nr);
}

int ptd_psb_src_next(const struct ptd_psb_src *src, const struct pt_config *cfg,
		     const struct ptd_clock *clock, uint64_t from, struct ptd_psb *psb)
{
	struct ptd_psb *v;
	size_t n;
	int err = scan(src, cfg, clock, from, src->size, 1, 4096, &v, &n);

	if (err)
		return err;
	if (n)
		*psb = v[0];
	free(v);
	return n ? 0 : -ENOENT;
}

int ptd_psb_index(const uint8_t *buf, size_t size, const struct pt_config *cfg,
		  const struct ptd_clock *clock, uint64_t from, uint64_t to, struct ptd_psb **out,
		  size_t *nr)
{
	struct ptd_psb_src src = { .buf = buf, .size = size, .fd = -1 };

	return ptd_psb_src_index(&src, cfg, clock, from, to, out, nr);
}

int ptd_psb_next(const uint8_t *buf, size_t size, const struct pt_config *cfg,
		 const struct ptd_clock *clock, uint64_t from, struct ptd_psb *psb)
{
	struct ptd_psb_src src = { .buf = buf, .size = size, .fd = -1 };

	return ptd_psb_src_next(&src, cfg, clock, from, psb);
}
