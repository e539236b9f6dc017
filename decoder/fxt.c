// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Fuchsia Trace Format writer. Record layouts: doc/fxt.md; every record is built in
 * place in an output buffer as little-endian 64-bit words.
 *
 * Interning. Strings and threads are the writer's own objects with stable ids; an FXT
 * index (string 1..32767, thread 1..255) is lent to an object when an event needs it and
 * taken back, least recently used first, when the table is full. An object that lost its
 * index gets a new one, and a new string or thread record, at its next use. Every index
 * an event references is therefore defined by a record earlier in the file, and at most
 * 1 + 1 + 15 indices are touched per record, far below the table sizes, so resolving the
 * refs of one record never recycles an index that record uses.
 */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "array.h"
#include "fxt.h"

#define FXT_MAGIC		0x0016547846040010ULL
#define STR_SLOTS		32767	/* string indices 1..32767 */
#define THR_SLOTS		255	/* thread indices 1..255 */
#define OUT_BUF			(256 * 1024)
#define NS_PER_SEC		1000000000ULL
#define ELLIPSIS		"\xe2\x80\xa6"
#define REPLACEMENT		"\xef\xbf\xbd"

enum fxt_rec {
	REC_METADATA = 0,
	REC_INIT = 1,
	REC_STRING = 2,
	REC_THREAD = 3,
	REC_EVENT = 4,
	REC_KOBJ = 7,
};

enum fxt_ev {
	EV_INSTANT = 0,
	EV_COUNTER = 1,
	EV_BEGIN = 2,
	EV_END = 3,
	EV_COMPLETE = 4,
};

enum fxt_argt {
	ARGT_INT32 = 1,
	ARGT_UINT32 = 2,
	ARGT_INT64 = 3,
	ARGT_UINT64 = 4,
	ARGT_DOUBLE = 5,
	ARGT_STRING = 6,
	ARGT_POINTER = 7,
	ARGT_KOID = 8,
	ARGT_BOOL = 9,
};

#define ZX_OBJ_TYPE_PROCESS 1
#define ZX_OBJ_TYPE_THREAD 2

/*
 * Recency order over the indices 1..cap of one FXT table; index 0 is the lists' nil.
 * Until the table is full nothing is recycled and the order is only needed later, so a
 * use is one store, a stamp; the first time an index must be recycled (or the stamps
 * wrap) the list is built from the stamps, the order it would have had, and kept from
 * then on (doc/fxt.md: the output is the same either way).
 */
struct lru {
	uint32_t *owner;	/* id of the string or thread holding each index, [0..cap] */
	uint32_t *stamp;	/* !linked: when each index was last used (clock), [0..cap] */
	uint16_t *prev;		/* linked: more recently used neighbour, 0 for the head */
	uint16_t *next;		/* linked: less recently used neighbour, 0 for the tail */
	uint32_t clock;		/* !linked: uses so far */
	bool linked;		/* the order is in prev/next (else in stamp) */
	uint16_t head;		/* linked: most recently used index, 0 while empty */
	uint16_t tail;		/* linked: least recently used index: the next recycled */
	uint16_t used;		/* indices handed out so far, 0..cap */
	uint16_t cap;		/* table size */
};

/* An interned string; its id is its position in fxt_writer.strs (0 is ""). */
struct fxt_str {
	char *s;		/* sanitised text, NUL-terminated, owned */
	uint32_t len;		/* bytes in s, <= FXT_MAX_NAME_LEN */
	uint32_t hash;		/* FNV-1a of s, for the content table */
};

/* A thread; its id is its position in fxt_writer.thrs (0 is unused). */
struct fxt_thr {
	uint64_t pid;		/* process koid */
	uint64_t tid;		/* thread koid */
	uint8_t idx;		/* FXT thread index defining it now, 0 if none */
	uint32_t txt;		/* text mode: 1 + index in fxt_writer.txt, 0 before first slice */
};

/* Text mode: one duration slice as fxtcheck --stacks lists it. */
struct txt_slice {
	uint64_t begin;		/* rebased ns */
	uint64_t end;		/* rebased ns, UINT64_MAX while open */
	uint32_t name;		/* string id */
	uint32_t depth;		/* Perfetto depth when it began */
};

/* Text mode: the slices and the Perfetto-style open stack of one thread. */
struct txt_thread {
	uint32_t thr;		/* thread id */
	struct txt_slice *sl;	/* slices in begin order */
	uint32_t nsl, capsl;	/* slices; room for */
	uint32_t *stack;	/* open slices: index in sl, bit 31 set for complete events */
	uint32_t nst, capst;	/* open slices; room for */
};

/* Text mode: a thread name from a thread kernel object (fxtcheck keys them by tid). */
struct txt_name {
	uint64_t tid;		/* thread koid */
	uint32_t name;		/* string id */
};

/* One argument ready to be written. */
struct arg_prep {
	uint16_t name_ref;	/* FXT string ref of the argument name */
	uint16_t words;		/* size in words, header included */
	uint32_t slen;		/* STRING: inline value length in bytes */
	const char *s;		/* STRING: sanitised value (scratch) */
};

struct fxt_writer {
	int fd;			/* output file, -1 after close */
	bool own_fd;		/* fd is ours to close (not stdout) */
	char *path;		/* the regular file we write, removed if writing fails (a
				 * truncated trace must not pass for a whole one); NULL for
				 * stdout, pipes and devices */
	bool gz;		/* deflate the output (gzip container) */
	bool text;		/* text mode */
	int err;		/* first error, sticky; 0 while fine */
	uint64_t base;		/* opts.time_base, ns */
	uint8_t *buf;		/* records not yet handed to write() or deflate() */
	size_t len;		/* bytes used in buf, always a multiple of 8 */
	uint8_t *zbuf;		/* deflate output staging, gz only */
	z_stream z;		/* gz only */
	bool z_init;		/* z needs deflateEnd() */

	struct fxt_str *strs;	/* interned strings by id */
	uint16_t *sidx;		/* FXT string index defining each id now, 0 if none; apart
				 * from strs so that the hot lookups stay in few cache lines */
	uint32_t nstrs, capstrs;	/* ids used (0 included); room for */
	uint32_t *shash;	/* open-addressed content table of string ids, 0 = free */
	uint32_t shmask;	/* size of shash - 1 (power of two) */
	struct lru slru;	/* string indices */

	struct fxt_thr *thrs;	/* threads by id */
	uint32_t nthrs, capthrs;	/* ids used (0 included); room for */
	uint32_t *thash;	/* open-addressed (pid, tid) table of thread ids, 0 = free */
	uint32_t thmask;	/* size of thash - 1 (a power of two) */
	struct lru tlru;	/* thread indices */

	struct txt_thread *txt;	/* text mode threads, in order of first slice */
	uint32_t ntxt, captxt;	/* text threads; room for */
	struct txt_name *tnames;/* text mode thread names, in definition order */
	uint32_t ntnames, captnames;	/* names; room for */

	struct fxt_stats st;	/* counters for fxt_writer__stats() */
	char scratch[FXT_MAX_ARGS][FXT_MAX_NAME_LEN + 1];	/* sanitised string values */
};

/* ---- output ------------------------------------------------------------------------- */

static void set_err(struct fxt_writer *w, int err)
{
	if (!w->err)
		w->err = err;
}

static void write_all(struct fxt_writer *w, const uint8_t *p, size_t n)
{
	while (n && !w->err) {
		ssize_t r = write(w->fd, p, n);

		if (r < 0) {
			if (errno == EINTR)
				continue;
			set_err(w, -errno);
			return;
		}
		p += r;
		n -= (size_t)r;
		w->st.bytes += (uint64_t)r;
	}
}

static void deflate_out(struct fxt_writer *w, int flush)
{
	int ret;

	w->z.next_in = w->buf;
	w->z.avail_in = (uInt)w->len;
	do {
		w->z.next_out = w->zbuf;
		w->z.avail_out = OUT_BUF;
		ret = deflate(&w->z, flush);
		if (ret == Z_STREAM_ERROR) {
			set_err(w, -EIO);
			return;
		}
		write_all(w, w->zbuf, OUT_BUF - w->z.avail_out);
	} while (!w->err && (w->z.avail_out == 0 || (flush == Z_FINISH && ret != Z_STREAM_END)));
}

/* Hands the buffer to the file; on error the data is dropped and the error kept. */
static void out_flush(struct fxt_writer *w, int zflush)
{
	if (w->gz && !w->err)
		deflate_out(w, zflush);
	else
		write_all(w, w->buf, w->len);
	w->len = 0;
}

/* Room for `nwords` words of one record; never fails (after an error the bytes are lost). */
static uint64_t *out_words(struct fxt_writer *w, size_t nwords)
{
	uint64_t *p;

	if (w->len + nwords * 8 > OUT_BUF)
		out_flush(w, Z_NO_FLUSH);
	p = (uint64_t *)(w->buf + w->len);
	w->len += nwords * 8;
	w->st.records++;
	return p;
}

static inline uint64_t le(uint64_t v)
{
	return htole64(v);
}

static size_t stream_words(size_t len)
{
	return (len + 7) / 8;
}

/* A string stream: the bytes, then zeros up to the next word. */
static void put_stream(uint64_t *p, const char *s, size_t len)
{
	size_t words = stream_words(len);

	if (!words)
		return;
	p[words - 1] = 0;
	memcpy(p, s, len);
}

/* ---- names -------------------------------------------------------------------------- */

/* Length of the valid UTF-8 sequence at p (RFC 3629: no overlongs, surrogates, > U+10FFFF). */
static unsigned utf8_seq(const unsigned char *p)
{
	unsigned char c = p[0];

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		return (p[1] & 0xc0) == 0x80 ? 2 : 0;
	if (c >= 0xe0 && c <= 0xef) {
		unsigned char lo = c == 0xe0 ? 0xa0 : 0x80, hi = c == 0xed ? 0x9f : 0xbf;

		return p[1] >= lo && p[1] <= hi && (p[2] & 0xc0) == 0x80 ? 3 : 0;
	}
	if (c >= 0xf0 && c <= 0xf4) {
		unsigned char lo = c == 0xf0 ? 0x90 : 0x80, hi = c == 0xf4 ? 0x8f : 0xbf;

		return p[1] >= lo && p[1] <= hi && (p[2] & 0xc0) == 0x80 &&
		       (p[3] & 0xc0) == 0x80 ? 4 : 0;
	}
	return 0;
}

unsigned fxt_sanitize(const char *in, char *out, bool *fixed, bool *cut)
{
	const unsigned char *p = (const unsigned char *)(in ? in : "");
	unsigned len = 0, keep = 0;
	bool f = false, c = false;

	while (*p) {
		unsigned n = utf8_seq(p), outn = n;
		const void *src = p;

		if (!n) {
			n = 1;
			outn = 3;
			src = REPLACEMENT;
			f = true;
		}
		if (len + outn > FXT_MAX_NAME_LEN) {
			/* keep is the last character boundary that leaves room for the marker */
			len = keep;
			memcpy(out + len, ELLIPSIS, 3);
			len += 3;
			c = true;
			break;
		}
		memcpy(out + len, src, outn);
		len += outn;
		p += n;
		if (len <= FXT_MAX_NAME_LEN - 3)
			keep = len;
	}
	out[len] = 0;
	if (fixed)
		*fixed = f;
	if (cut)
		*cut = c;
	return len;
}

static uint32_t fnv1a(const char *s, size_t n)
{
	uint32_t h = 2166136261u;

	while (n--)
		h = (h ^ (unsigned char)*s++) * 16777619u;
	return h;
}

static int str_hash_grow(struct fxt_writer *w)
{
	uint32_t size = (w->shmask + 1) * 2, i;
	uint32_t *t = calloc(size, sizeof(*t));

	if (!t)
		return -ENOMEM;
	for (i = 1; i < w->nstrs; i++) {
		uint32_t j = w->strs[i].hash & (size - 1);

		while (t[j])
			j = (j + 1) & (size - 1);
		t[j] = i;
	}
	free(w->shash);
	w->shash = t;
	w->shmask = size - 1;
	return 0;
}

/* Room for `need` strings in strs and sidx. */
static int strs_grow(struct fxt_writer *w, uint32_t need)
{
	uint32_t cap = w->capstrs, capsidx = w->capstrs;
	int err;

	/* both double from the same capacity, so they reach as far; if sidx fails,
	 * capstrs still says how far both reach */
	err = array_grow((void **)&w->strs, &cap, need, sizeof(*w->strs));
	err = err ?: array_grow((void **)&w->sidx, &capsidx, cap, sizeof(*w->sidx));
	if (!err)
		w->capstrs = cap < capsidx ? cap : capsidx;
	return err;
}

int fxt_intern(struct fxt_writer *w, const char *s, uint32_t *id)
{
	char buf[FXT_MAX_NAME_LEN + 1];
	struct fxt_str *e;
	unsigned len;
	uint32_t h, j;
	bool fixed, cut;
	int err;

	if (!w || !id)
		return -EINVAL;
	len = fxt_sanitize(s, buf, &fixed, &cut);
	if (!len) {
		*id = 0;
		return 0;
	}
	h = fnv1a(buf, len);
	for (j = h & w->shmask; w->shash[j]; j = (j + 1) & w->shmask) {
		e = &w->strs[w->shash[j]];
		if (e->hash == h && e->len == len && !memcmp(e->s, buf, len)) {
			*id = w->shash[j];
			return 0;
		}
	}
	if ((uint64_t)(w->nstrs + 1) * 2 > w->shmask + 1) {
		err = str_hash_grow(w);
		if (err)
			return err;
		for (j = h & w->shmask; w->shash[j]; j = (j + 1) & w->shmask)
			;
	}
	err = strs_grow(w, w->nstrs + 1);
	if (err)
		return err;
	e = &w->strs[w->nstrs];
	e->s = malloc(len + 1);
	if (!e->s)
		return -ENOMEM;
	memcpy(e->s, buf, len + 1);
	e->len = len;
	e->hash = h;
	w->sidx[w->nstrs] = 0;
	w->shash[j] = w->nstrs;
	*id = w->nstrs++;
	w->st.names_fixed += fixed;
	w->st.names_cut += cut;
	return 0;
}

const char *fxt_string(const struct fxt_writer *w, uint32_t id)
{
	if (!w || id >= w->nstrs)
		return "";
	return w->strs[id].s;
}

/* ---- index tables ------------------------------------------------------------------- */

static int lru_init(struct lru *l, uint16_t cap)
{
	l->owner = calloc(cap + 1u, sizeof(*l->owner));
	l->stamp = calloc(cap + 1u, sizeof(*l->stamp));
	l->prev = calloc(cap + 1u, sizeof(*l->prev));
	l->next = calloc(cap + 1u, sizeof(*l->next));
	l->cap = cap;
	return l->owner && l->stamp && l->prev && l->next ? 0 : -ENOMEM;
}

static void lru_free(struct lru *l)
{
	free(l->owner);
	free(l->stamp);
	free(l->prev);
	free(l->next);
}

static void lru_push_front(struct lru *l, uint16_t i)
{
	l->prev[i] = 0;
	l->next[i] = l->head;
	if (l->head)
		l->prev[l->head] = i;
	l->head = i;
	if (!l->tail)
		l->tail = i;
}

static int cmp_stamp(const void *a, const void *b, void *ctx)
{
	const uint32_t *stamp = ctx;
	uint32_t x = stamp[*(const uint16_t *)a], y = stamp[*(const uint16_t *)b];

	return x < y ? -1 : x > y;
}

/* From stamps to the list: the indices in use, least recently used at the tail. */
static void lru_link(struct lru *l)
{
	uint16_t order[STR_SLOTS], i;	/* 64 KiB: the larger table */

	for (i = 0; i < l->used; i++)
		order[i] = i + 1;
	qsort_r(order, l->used, sizeof(order[0]), cmp_stamp, l->stamp);
	l->head = l->tail = 0;
	for (i = 0; i < l->used; i++)
		lru_push_front(l, order[i]);
	l->linked = true;
}

static inline void lru_touch(struct lru *l, uint16_t i)
{
	uint16_t p, n;

	if (!l->linked) {
		if (++l->clock) {
			l->stamp[i] = l->clock;
			return;
		}
		lru_link(l);	/* the stamps wrapped */
	}
	if (l->head == i)
		return;
	p = l->prev[i];
	n = l->next[i];
	l->next[p] = n;
	if (n)
		l->prev[n] = p;
	else
		l->tail = p;
	lru_push_front(l, i);
}

/* An index for `owner`: a fresh one while any is left, else the least recently used. */
static uint16_t lru_take(struct lru *l, uint32_t owner, uint32_t *evicted)
{
	uint16_t i;

	*evicted = 0;
	if (l->used < l->cap) {
		i = ++l->used;
		if (l->linked)
			lru_push_front(l, i);
		else
			lru_touch(l, i);
	} else {
		if (!l->linked)
			lru_link(l);
		i = l->tail;
		*evicted = l->owner[i];
		lru_touch(l, i);
	}
	l->owner[i] = owner;
	return i;
}

/* A string record for string `id`, which has no index now: it gets one. */
static uint16_t str_define(struct fxt_writer *w, uint32_t id)
{
	struct fxt_str *e;
	uint32_t evicted;
	uint64_t *p;
	uint16_t idx;

	idx = lru_take(&w->slru, id, &evicted);
	if (evicted) {
		w->sidx[evicted] = 0;
		w->st.strings_recycled++;
	}
	w->sidx[id] = idx;
	e = &w->strs[id];
	p = out_words(w, 1 + stream_words(e->len));
	p[0] = le(REC_STRING | (1 + stream_words(e->len)) << 4 | (uint64_t)idx << 16 |
		  (uint64_t)e->len << 32);
	put_stream(p + 1, e->s, e->len);
	w->st.string_records++;
	return idx;
}

/* The FXT ref of string `id`, writing its string record first if it has no index now. */
static inline uint16_t str_ref(struct fxt_writer *w, uint32_t id)
{
	uint16_t idx;

	if (!id)
		return 0;
	idx = w->sidx[id];
	if (!idx)
		return str_define(w, id);
	lru_touch(&w->slru, idx);
	return idx;
}

static uint64_t thr_key(uint64_t pid, uint64_t tid)
{
	uint64_t h = pid * 0x9e3779b97f4a7c15ULL ^ tid;

	return h ^ (h >> 29);
}

static int thr_hash_grow(struct fxt_writer *w)
{
	uint32_t size = (w->thmask + 1) * 2, i;
	uint32_t *t = calloc(size, sizeof(*t));

	if (!t)
		return -ENOMEM;
	for (i = 1; i < w->nthrs; i++) {
		uint32_t j = thr_key(w->thrs[i].pid, w->thrs[i].tid) & (size - 1);

		while (t[j])
			j = (j + 1) & (size - 1);
		t[j] = i;
	}
	free(w->thash);
	w->thash = t;
	w->thmask = size - 1;
	return 0;
}

int fxt_thread_id(struct fxt_writer *w, uint64_t pid, uint64_t tid, uint32_t *id)
{
	struct fxt_thr *t;
	uint32_t j;
	int err;

	if (!w || !id)
		return -EINVAL;
	for (j = thr_key(pid, tid) & w->thmask; w->thash[j]; j = (j + 1) & w->thmask) {
		t = &w->thrs[w->thash[j]];
		if (t->pid == pid && t->tid == tid) {
			*id = w->thash[j];
			return 0;
		}
	}
	if ((uint64_t)(w->nthrs + 1) * 2 > w->thmask + 1) {
		err = thr_hash_grow(w);
		if (err)
			return err;
		for (j = thr_key(pid, tid) & w->thmask; w->thash[j]; j = (j + 1) & w->thmask)
			;
	}
	err = array_grow((void **)&w->thrs, &w->capthrs, w->nthrs + 1, sizeof(*w->thrs));
	if (err)
		return err;
	t = &w->thrs[w->nthrs];
	memset(t, 0, sizeof(*t));
	t->pid = pid;
	t->tid = tid;
	w->thash[j] = w->nthrs;
	*id = w->nthrs++;
	return 0;
}

/* A thread record for thread `id`, which has no index now: it gets one. */
static uint8_t thr_define(struct fxt_writer *w, uint32_t id)
{
	struct fxt_thr *t = &w->thrs[id];
	uint32_t evicted;
	uint64_t *p;
	uint16_t idx;

	idx = lru_take(&w->tlru, id, &evicted);
	if (evicted) {
		w->thrs[evicted].idx = 0;
		w->st.threads_recycled++;
	}
	t->idx = (uint8_t)idx;
	p = out_words(w, 3);
	p[0] = le(REC_THREAD | 3 << 4 | (uint64_t)idx << 16);
	p[1] = le(t->pid);
	p[2] = le(t->tid);
	w->st.thread_records++;
	return t->idx;
}

/* The FXT ref of thread `id`, writing its thread record first if it has no index now. */
static inline uint8_t thr_ref(struct fxt_writer *w, uint32_t id)
{
	uint8_t idx = w->thrs[id].idx;

	if (!idx)
		return thr_define(w, id);
	lru_touch(&w->tlru, idx);
	return idx;
}

/* ---- arguments ---------------------------------------------------------------------- */

static bool args_valid(const struct fxt_arg *args, unsigned nargs)
{
	unsigned i;

	if (nargs > FXT_MAX_ARGS || (nargs && !args))
		return false;
	for (i = 0; i < nargs; i++)
		if ((unsigned)args[i].type > FXT_ARG_BOOL)
			return false;
	return true;
}

/* Resolves names and sizes of `args` (string records go out now); returns their words. */
static int args_prepare(struct fxt_writer *w, const struct fxt_arg *args, unsigned nargs,
			struct arg_prep *prep, size_t *words)
{
	unsigned i;
	int err;

	*words = 0;
	if (nargs > FXT_MAX_ARGS || (nargs && !args))
		return -EINVAL;
	for (i = 0; i < nargs; i++) {
		uint32_t name;
		bool fixed, cut;

		err = fxt_intern(w, args[i].name, &name);
		if (err)
			return err;
		prep[i].name_ref = str_ref(w, name);
		switch (args[i].type) {
		case FXT_ARG_INT32:
		case FXT_ARG_UINT32:
		case FXT_ARG_BOOL:
			prep[i].words = 1;
			break;
		case FXT_ARG_INT64:
		case FXT_ARG_UINT64:
		case FXT_ARG_DOUBLE:
		case FXT_ARG_POINTER:
		case FXT_ARG_KOID:
			prep[i].words = 2;
			break;
		case FXT_ARG_STRING:
			prep[i].s = w->scratch[i];
			prep[i].slen = fxt_sanitize(args[i].s, w->scratch[i], &fixed, &cut);
			prep[i].words = 1 + stream_words(prep[i].slen);
			w->st.names_fixed += fixed;
			w->st.names_cut += cut;
			break;
		default:
			return -EINVAL;
		}
		*words += prep[i].words;
	}
	return 0;
}

static uint64_t *args_put(uint64_t *p, const struct fxt_arg *args, unsigned nargs,
			  const struct arg_prep *prep)
{
	static const uint8_t type[] = {
		[FXT_ARG_INT32] = ARGT_INT32,	[FXT_ARG_UINT32] = ARGT_UINT32,
		[FXT_ARG_INT64] = ARGT_INT64,	[FXT_ARG_UINT64] = ARGT_UINT64,
		[FXT_ARG_DOUBLE] = ARGT_DOUBLE, [FXT_ARG_STRING] = ARGT_STRING,
		[FXT_ARG_POINTER] = ARGT_POINTER, [FXT_ARG_KOID] = ARGT_KOID,
		[FXT_ARG_BOOL] = ARGT_BOOL,
	};
	unsigned i;

	for (i = 0; i < nargs; i++) {
		const struct fxt_arg *a = &args[i];
		uint64_t h = type[a->type] | (uint64_t)prep[i].words << 4 |
			     (uint64_t)prep[i].name_ref << 16;
		union {
			double d;
			uint64_t u;
		} dv;

		switch (a->type) {
		case FXT_ARG_INT32:
			*p++ = le(h | (uint64_t)(uint32_t)(int32_t)a->i << 32);
			break;
		case FXT_ARG_UINT32:
			*p++ = le(h | (uint64_t)(uint32_t)a->u << 32);
			break;
		case FXT_ARG_BOOL:
			*p++ = le(h | (uint64_t)!!a->b << 32);
			break;
		case FXT_ARG_INT64:
			*p++ = le(h);
			*p++ = le((uint64_t)a->i);
			break;
		case FXT_ARG_DOUBLE:
			dv.d = a->d;
			*p++ = le(h);
			*p++ = le(dv.u);
			break;
		case FXT_ARG_UINT64:
		case FXT_ARG_POINTER:
		case FXT_ARG_KOID:
			*p++ = le(h);
			*p++ = le(a->u);
			break;
		case FXT_ARG_STRING:
			if (prep[i].slen)
				h |= (uint64_t)(0x8000 | prep[i].slen) << 32;
			*p++ = le(h);
			put_stream(p, prep[i].s, prep[i].slen);
			p += stream_words(prep[i].slen);
			break;
		}
	}
	return p;
}

/* ---- text mode ---------------------------------------------------------------------- */

#define TXT_COMPLETE 0x80000000u

static struct txt_thread *txt_thread(struct fxt_writer *w, uint32_t thr)
{
	struct fxt_thr *t = &w->thrs[thr];
	struct txt_thread *tt;

	if (t->txt)
		return &w->txt[t->txt - 1];
	if (array_grow((void **)&w->txt, &w->captxt, w->ntxt + 1, sizeof(*w->txt)))
		return NULL;
	tt = &w->txt[w->ntxt++];
	memset(tt, 0, sizeof(*tt));
	tt->thr = thr;
	t->txt = w->ntxt;
	return tt;
}

/* As fxtcheck's pop_complete: finished complete slices leave the stack (Perfetto rules). */
static void txt_pop_complete(struct txt_thread *tt, uint64_t ts, bool zero_len_new)
{
	while (tt->nst) {
		uint32_t top = tt->stack[tt->nst - 1];
		struct txt_slice *s = &tt->sl[top & ~TXT_COMPLETE];

		if (!(top & TXT_COMPLETE))
			break;
		if (s->end < ts || (s->end == ts && !(s->end == s->begin && zero_len_new)))
			tt->nst--;
		else
			break;
	}
}

static int txt_push(struct txt_thread *tt, uint32_t name, uint64_t ts, uint64_t end,
		    bool complete)
{
	struct txt_slice *s;

	if (array_grow((void **)&tt->sl, &tt->capsl, tt->nsl + 1, sizeof(*tt->sl)) ||
	    array_grow((void **)&tt->stack, &tt->capst, tt->nst + 1, sizeof(*tt->stack)))
		return -ENOMEM;
	s = &tt->sl[tt->nsl];
	s->begin = ts;
	s->end = end;
	s->name = name;
	s->depth = tt->nst;
	tt->stack[tt->nst++] = tt->nsl++ | (complete ? TXT_COMPLETE : 0);
	return 0;
}

static int txt_event(struct fxt_writer *w, unsigned type, uint32_t thr, uint32_t name,
		     uint64_t ts, uint64_t end)
{
	struct txt_thread *tt;

	if (type != EV_BEGIN && type != EV_END && type != EV_COMPLETE)
		return 0;
	tt = txt_thread(w, thr);
	if (!tt)
		return -ENOMEM;
	switch (type) {
	case EV_BEGIN:
		txt_pop_complete(tt, ts, false);
		w->st.records++;
		return txt_push(tt, name, ts, UINT64_MAX, false);
	case EV_END:
		txt_pop_complete(tt, ts, false);
		while (tt->nst && (tt->stack[tt->nst - 1] & TXT_COMPLETE))
			tt->nst--;
		if (tt->nst)
			tt->sl[tt->stack[--tt->nst]].end = ts;
		return 0;
	default:
		txt_pop_complete(tt, ts, end == ts);
		w->st.records++;
		return txt_push(tt, name, ts, end, true);
	}
}

static void txt_puts_escaped(struct fxt_writer *w, const char *s);

static void txt_put(struct fxt_writer *w, const char *s, size_t n)
{
	while (n) {
		size_t room = OUT_BUF - w->len, k = n < room ? n : room;

		memcpy(w->buf + w->len, s, k);
		w->len += k;
		s += k;
		n -= k;
		if (w->len == OUT_BUF)
			out_flush(w, Z_NO_FLUSH);
	}
}

static void txt_puts_escaped(struct fxt_writer *w, const char *s)
{
	const char *run = s;

	for (; *s; s++) {
		const char *esc;

		switch (*s) {
		case '\\':
			esc = "\\\\";
			break;
		case '\n':
			esc = "\\n";
			break;
		case '\r':
			esc = "\\r";
			break;
		case '\t':
			esc = "\\t";
			break;
		default:
			continue;
		}
		txt_put(w, run, (size_t)(s - run));
		txt_put(w, esc, 2);
		run = s + 1;
	}
	txt_put(w, run, (size_t)(s - run));
}

static int txt_cmp(const void *a, const void *b, void *ctx)
{
	const struct fxt_writer *w = ctx;
	const struct fxt_thr *x = &w->thrs[((const struct txt_thread *)a)->thr];
	const struct fxt_thr *y = &w->thrs[((const struct txt_thread *)b)->thr];

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	return 0;
}

/* Prints what `fxtcheck --stacks` prints, from the slices gathered. */
static void txt_print(struct fxt_writer *w)
{
	char line[96];
	uint32_t i, j, k;

	if (w->ntxt)	/* no threads: no table (qsort_r(NULL) is undefined) */
		qsort_r(w->txt, w->ntxt, sizeof(*w->txt), txt_cmp, w);
	for (i = 0; i < w->ntxt; i++) {
		struct txt_thread *tt = &w->txt[i];
		struct fxt_thr *t = &w->thrs[tt->thr];
		uint32_t name = 0;

		if (!tt->nsl)
			continue;
		for (k = 0; k < w->ntnames; k++)
			if (w->tnames[k].tid == t->tid)
				name = w->tnames[k].name;
		snprintf(line, sizeof(line), "# thread pid=%" PRIu64 " tid=%" PRIu64 " name=",
			 t->pid, t->tid);
		txt_put(w, line, strlen(line));
		txt_puts_escaped(w, w->strs[name].s);
		txt_put(w, "\n", 1);
		for (j = 0; j < tt->nsl; j++) {
			struct txt_slice *s = &tt->sl[j];

			snprintf(line, sizeof(line), "%u ", s->depth);
			txt_put(w, line, strlen(line));
			txt_puts_escaped(w, w->strs[s->name].s);
			if (s->end == UINT64_MAX)
				snprintf(line, sizeof(line), " %" PRIu64 " -\n", s->begin);
			else
				snprintf(line, sizeof(line), " %" PRIu64 " %" PRIu64 "\n",
					 s->begin, s->end);
			txt_put(w, line, strlen(line));
		}
	}
}

/* ---- records ------------------------------------------------------------------------ */

static inline uint64_t rebase(struct fxt_writer *w, uint64_t ts)
{
	if (ts < w->base) {
		w->st.ts_clamped++;
		return 0;
	}
	ts -= w->base;
	return ts > (uint64_t)INT64_MAX ? (uint64_t)INT64_MAX : ts;
}

static int write_event(struct fxt_writer *w, unsigned type, uint32_t thr, uint32_t cat,
		       uint32_t name, uint64_t ts, const struct fxt_arg *args, unsigned nargs,
		       bool has_extra, uint64_t extra)
{
	struct arg_prep prep[FXT_MAX_ARGS];
	uint16_t cref, nref;
	size_t awords;
	uint64_t *p;
	uint8_t tref;
	int err;

	if (!w)
		return -EINVAL;
	if (w->err)
		return w->err;
	if (!thr || thr >= w->nthrs || cat >= w->nstrs || name >= w->nstrs ||
	    !args_valid(args, nargs))
		return -EINVAL;
	ts = rebase(w, ts);
	if (type == EV_COMPLETE) {
		extra = rebase(w, extra);
		if (extra < ts)
			return -EINVAL;
	}
	if (w->text)
		return txt_event(w, type, thr, name, ts, extra);

	tref = thr_ref(w, thr);
	cref = str_ref(w, cat);
	nref = str_ref(w, name);
	err = args_prepare(w, args, nargs, prep, &awords);
	if (err)
		return err;
	p = out_words(w, 2 + awords + has_extra);
	p[0] = le(REC_EVENT | (2 + awords + has_extra) << 4 | (uint64_t)type << 16 |
		  (uint64_t)nargs << 20 | (uint64_t)tref << 24 | (uint64_t)cref << 32 |
		  (uint64_t)nref << 48);
	p[1] = le(ts);
	p = args_put(p + 2, args, nargs, prep);
	if (has_extra)
		*p = le(extra);
	return w->err;
}

/*
 * The hot path of the call-stack builder's slices: an event without arguments whose
 * thread, strings and times need no more checks than these (else write_event()).
 */
static inline bool plain_event(const struct fxt_writer *w, uint32_t thread, uint32_t cat,
			       uint32_t name, uint64_t ts, uint64_t end)
{
	return w && !w->text && !w->err && thread && thread < w->nthrs && cat < w->nstrs &&
	       name < w->nstrs && ts >= w->base && end >= ts &&
	       end - w->base <= (uint64_t)INT64_MAX;
}

/* Writes it: 2 words, or 3 with `end` (complete events). */
static inline int put_plain(struct fxt_writer *w, unsigned type, uint32_t thread, uint32_t cat,
			    uint32_t name, uint64_t ts, uint64_t end, unsigned words)
{
	uint8_t tref = thr_ref(w, thread);
	uint16_t cref = str_ref(w, cat), nref = str_ref(w, name);
	uint64_t *p = out_words(w, words);

	p[0] = le(REC_EVENT | (uint64_t)words << 4 | (uint64_t)type << 16 | (uint64_t)tref << 24 |
		  (uint64_t)cref << 32 | (uint64_t)nref << 48);
	p[1] = le(ts - w->base);
	if (words == 3)
		p[2] = le(end - w->base);
	return w->err;
}

int fxt_complete_id(struct fxt_writer *w, uint32_t thread, uint32_t cat, uint32_t name,
		    uint64_t ts, uint64_t end, const struct fxt_arg *args, unsigned nargs)
{
	if (!nargs && plain_event(w, thread, cat, name, ts, end))
		return put_plain(w, EV_COMPLETE, thread, cat, name, ts, end, 3);
	return write_event(w, EV_COMPLETE, thread, cat, name, ts, args, nargs, true, end);
}

int fxt_begin_id(struct fxt_writer *w, uint32_t thread, uint32_t cat, uint32_t name, uint64_t ts,
		 const struct fxt_arg *args, unsigned nargs)
{
	if (!nargs && plain_event(w, thread, cat, name, ts, ts))
		return put_plain(w, EV_BEGIN, thread, cat, name, ts, ts, 2);
	return write_event(w, EV_BEGIN, thread, cat, name, ts, args, nargs, false, 0);
}

int fxt_end_id(struct fxt_writer *w, uint32_t thread, uint32_t cat, uint32_t name, uint64_t ts,
	       const struct fxt_arg *args, unsigned nargs)
{
	if (!nargs && plain_event(w, thread, cat, name, ts, ts))
		return put_plain(w, EV_END, thread, cat, name, ts, ts, 2);
	return write_event(w, EV_END, thread, cat, name, ts, args, nargs, false, 0);
}

/* Record type and size in words of a packed event, by enum fxt_event_type (0: not one). */
static const uint8_t packed_type[4] = { 0, EV_COMPLETE, EV_BEGIN, EV_END };
static const uint8_t packed_words[4] = { 0, 3, 2, 2 };

/* One packed event, whatever its case (see fxt_events_id()); hdr has its thread's ref. */
static int packed_one(struct fxt_writer *w, uint64_t hdr, uint32_t thread, uint32_t cat,
		      uint64_t t0, const struct fxt_packed *e)
{
	unsigned k = e->nk >> FXT_PACKED_TYPE_SHIFT;
	uint32_t name = e->nk & FXT_PACKED_NAME_MASK;
	uint64_t ts = t0 + (e->bd & FXT_PACKED_TIME_MAX), head, *p;

	if (k >= ARRAY_SIZE(packed_type) || !packed_type[k])
		return -EINVAL;
	if (name >= w->nstrs)
		return write_event(w, packed_type[k], thread, cat, name, ts, NULL, 0,
				   k == FXT_EVENT_COMPLETE, ts + e->dur);
	head = hdr | (uint64_t)(cat ? str_ref(w, cat) : 0) << 32;
	head |= (uint64_t)str_ref(w, name) << 48;
	p = out_words(w, packed_words[k]);
	p[0] = le(head | (uint64_t)packed_words[k] << 4 | (uint64_t)packed_type[k] << 16);
	p[1] = le(ts - w->base);
	if (k == FXT_EVENT_COMPLETE)
		p[2] = le(ts + e->dur - w->base);
	return 0;
}

int fxt_events_id(struct fxt_writer *w, uint32_t thread, uint32_t cat, uint64_t t0,
		  const struct fxt_packed *ev, unsigned n)
{
	const uint8_t *type = packed_type, *words = packed_words;
	uint64_t hdr, rel0, *p;
	struct lru *l;
	unsigned i;

	if (!w || (n && !ev))
		return -EINVAL;
	if (!n)
		return w->err;
	/*
	 * Every event of the run is in [t0, t0 + 2^48 + 2^32) ns: if that is in the writer's
	 * range, no event needs its own check of the time
	 */
	if (!plain_event(w, thread, cat, 0, t0, t0) ||
	    t0 - w->base > (uint64_t)INT64_MAX - (FXT_PACKED_TIME_MAX + UINT32_MAX)) {
		int err = w->err;

		for (i = 0; i < n && !err; i++) {
			unsigned k = ev[i].nk >> FXT_PACKED_TYPE_SHIFT;
			uint64_t ts = t0 + (ev[i].bd & FXT_PACKED_TIME_MAX);

			if (k >= ARRAY_SIZE(packed_type) || !type[k])
				return -EINVAL;
			err = write_event(w, type[k], thread, cat, ev[i].nk & FXT_PACKED_NAME_MASK,
					  ts, NULL, 0, k == FXT_EVENT_COMPLETE, ts + ev[i].dur);
		}
		return err;
	}
	/* touching the thread once for all: nothing else touches the thread table here */
	hdr = REC_EVENT | (uint64_t)thr_ref(w, thread) << 24;
	rel0 = t0 - w->base;
	l = &w->slru;
	for (i = 0; i < n;) {
		/*
		 * Records that fit in the buffer as it is (3 words at most each), written with
		 * no check of room, while their names have indices and the recency order is
		 * the stamps (no wrap within): str_ref()'s usual case, a stamp each. Anything
		 * else, and the records near the buffer's end (flushed where out_words() flushes),
		 * one at a time below.
		 */
		unsigned fit = (unsigned)((OUT_BUF - w->len) / 24), end = n - i < fit ? n : i + fit;
		uint64_t *p0 = (uint64_t *)(w->buf + w->len);
		uint32_t clock = l->clock;
		unsigned from = i;

		p = p0;
		if (!cat && !l->linked && clock <= UINT32_MAX - (end - i)) {
			/* in locals: the stores through p and stamp could alias them */
			const uint16_t *sidx = w->sidx;
			uint32_t *stamp = l->stamp, nstrs = w->nstrs;
			/* each kind's header but the name's ref, made once per run */
			const uint64_t head[4] = {
				0,
				hdr | (uint64_t)words[1] << 4 | (uint64_t)type[1] << 16,
				hdr | (uint64_t)words[2] << 4 | (uint64_t)type[2] << 16,
				hdr | (uint64_t)words[3] << 4 | (uint64_t)type[3] << 16,
			};

			for (; i < end; i++) {
				const struct fxt_packed *e = &ev[i];
				unsigned k = e->nk >> FXT_PACKED_TYPE_SHIFT;
				uint32_t name = e->nk & FXT_PACKED_NAME_MASK;
				uint64_t ts = rel0 + (e->bd & FXT_PACKED_TIME_MAX);
				uint16_t nref;

				if (k - 1 >= 3 || name >= nstrs || !(nref = sidx[name]))
					break;
				stamp[nref] = ++clock;
				p[0] = le(head[k] | (uint64_t)nref << 48);
				p[1] = le(ts);
				p[2] = le(ts + e->dur);	/* overwritten by the next unless complete */
				p += words[k];
			}
			l->clock = clock;
			w->len += (size_t)(p - p0) * 8;
			w->st.records += i - from;
		}
		if (i < n) {
			int err = packed_one(w, hdr, thread, cat, t0, &ev[i]);

			if (err)
				return err;
			i++;
		}
	}
	return w->err;
}

int fxt_instant_id(struct fxt_writer *w, uint32_t thread, uint32_t cat, uint32_t name,
		   uint64_t ts, const struct fxt_arg *args, unsigned nargs)
{
	return write_event(w, EV_INSTANT, thread, cat, name, ts, args, nargs, false, 0);
}

/* Resolves a named event's thread and strings to ids, then writes it. */
static int named_event(struct fxt_writer *w, unsigned type, uint64_t pid, uint64_t tid,
		       const char *cat, const char *name, uint64_t ts, const struct fxt_arg *args,
		       unsigned nargs, bool has_extra, uint64_t extra)
{
	uint32_t thr, c, n;
	int err;

	if (!w)
		return -EINVAL;
	if (w->err)
		return w->err;
	err = fxt_thread_id(w, pid, tid, &thr);
	if (!err)
		err = fxt_intern(w, cat, &c);
	if (!err)
		err = fxt_intern(w, name, &n);
	if (err)
		return err;
	return write_event(w, type, thr, c, n, ts, args, nargs, has_extra, extra);
}

int fxt_begin(struct fxt_writer *w, uint64_t pid, uint64_t tid, const char *cat, const char *name,
	      uint64_t ts, const struct fxt_arg *args, unsigned nargs)
{
	return named_event(w, EV_BEGIN, pid, tid, cat, name, ts, args, nargs, false, 0);
}

int fxt_end(struct fxt_writer *w, uint64_t pid, uint64_t tid, const char *cat, const char *name,
	    uint64_t ts, const struct fxt_arg *args, unsigned nargs)
{
	return named_event(w, EV_END, pid, tid, cat, name, ts, args, nargs, false, 0);
}

int fxt_complete(struct fxt_writer *w, uint64_t pid, uint64_t tid, const char *cat,
		 const char *name, uint64_t ts, uint64_t end, const struct fxt_arg *args,
		 unsigned nargs)
{
	return named_event(w, EV_COMPLETE, pid, tid, cat, name, ts, args, nargs, true, end);
}

int fxt_instant(struct fxt_writer *w, uint64_t pid, uint64_t tid, const char *cat,
		const char *name, uint64_t ts, const struct fxt_arg *args, unsigned nargs)
{
	return named_event(w, EV_INSTANT, pid, tid, cat, name, ts, args, nargs, false, 0);
}

int fxt_counter(struct fxt_writer *w, uint64_t pid, uint64_t tid, const char *cat,
		const char *name, uint64_t ts, uint64_t counter_id, const struct fxt_arg *args,
		unsigned nargs)
{
	return named_event(w, EV_COUNTER, pid, tid, cat, name, ts, args, nargs, true,
			   counter_id);
}

static int write_kobj(struct fxt_writer *w, unsigned obj_type, uint64_t koid, const char *name,
		      const struct fxt_arg *args, unsigned nargs)
{
	struct arg_prep prep[FXT_MAX_ARGS];
	uint32_t nid;
	uint16_t nref;
	size_t awords;
	uint64_t *p;
	int err;

	if (!args_valid(args, nargs))
		return -EINVAL;
	err = fxt_intern(w, name, &nid);
	if (err)
		return err;
	if (w->text) {
		if (obj_type == ZX_OBJ_TYPE_THREAD) {
			err = array_grow((void **)&w->tnames, &w->captnames, w->ntnames + 1,
				   sizeof(*w->tnames));
			if (err)
				return err;
			w->tnames[w->ntnames].tid = koid;
			w->tnames[w->ntnames++].name = nid;
		}
		return 0;
	}
	nref = str_ref(w, nid);
	err = args_prepare(w, args, nargs, prep, &awords);
	if (err)
		return err;
	p = out_words(w, 2 + awords);
	p[0] = le(REC_KOBJ | (2 + awords) << 4 | (uint64_t)obj_type << 16 | (uint64_t)nref << 24 |
		  (uint64_t)nargs << 40);
	p[1] = le(koid);
	args_put(p + 2, args, nargs, prep);
	return w->err;
}

int fxt_process(struct fxt_writer *w, uint64_t pid, const char *name)
{
	struct fxt_arg a = { .name = "time_base_ns", .type = FXT_ARG_UINT64 };

	if (!w)
		return -EINVAL;
	if (w->err)
		return w->err;
	a.u = w->base;
	return write_kobj(w, ZX_OBJ_TYPE_PROCESS, pid, name, &a, 1);
}

int fxt_thread(struct fxt_writer *w, uint64_t pid, uint64_t tid, const char *name)
{
	struct fxt_arg a = { .name = "process", .type = FXT_ARG_KOID, .u = pid };

	if (!w)
		return -EINVAL;
	if (w->err)
		return w->err;
	return write_kobj(w, ZX_OBJ_TYPE_THREAD, tid, name, &a, 1);
}

/* ---- open / close ------------------------------------------------------------------- */

static void write_header(struct fxt_writer *w, const char *provider)
{
	size_t n = strlen(provider);
	uint64_t *p;

	if (n > 255)
		n = 255;
	p = out_words(w, 1);
	p[0] = le(FXT_MAGIC);
	/* provider info (metadata type 1) and provider section (type 2), provider id 0 */
	p = out_words(w, 1 + stream_words(n));
	p[0] = le(REC_METADATA | (1 + stream_words(n)) << 4 | 1 << 16 | (uint64_t)n << 52);
	put_stream(p + 1, provider, n);
	p = out_words(w, 1);
	p[0] = le(REC_METADATA | 1 << 4 | 2 << 16);
	/* initialization: ns ticks; base ticks 0 is absolute time_base ns */
	p = out_words(w, 4);
	p[0] = le(REC_INIT | 4 << 4);
	p[1] = le(NS_PER_SEC);
	p[2] = 0;
	p[3] = le(w->base);
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);

	return n >= m && !strcmp(s + n - m, suffix);
}

int fxt_writer__open(struct fxt_writer **out, const char *path, const struct fxt_opts *opts)
{
	static const struct fxt_opts defaults;
	struct fxt_writer *w;
	int err;

	if (!out || !path || !*path)
		return -EINVAL;
	*out = NULL;
	if (!opts)
		opts = &defaults;
	w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	w->fd = -1;
	w->base = opts->time_base;
	w->text = opts->text;
	w->gz = opts->gzip || ends_with(path, ".gz");
	w->buf = malloc(OUT_BUF);
	w->shash = calloc(1024, sizeof(*w->shash));
	w->thash = calloc(64, sizeof(*w->thash));
	w->shmask = 1023;
	w->thmask = 63;
	err = -ENOMEM;
	if (!w->buf || !w->shash || !w->thash || lru_init(&w->slru, STR_SLOTS) ||
	    lru_init(&w->tlru, THR_SLOTS))
		goto err_out;
	if (strs_grow(w, 1024) || array_grow((void **)&w->thrs, &w->capthrs, 64, sizeof(*w->thrs)))
		goto err_out;
	/* id 0: the empty string, and no thread */
	w->strs[0] = (struct fxt_str){ .s = strdup("") };
	w->sidx[0] = 0;
	memset(&w->thrs[0], 0, sizeof(w->thrs[0]));
	if (!w->strs[0].s)
		goto err_out;
	w->nstrs = w->nthrs = 1;
	if (w->gz) {
		w->zbuf = malloc(OUT_BUF);
		if (!w->zbuf)
			goto err_out;
		/* windowBits 15 + 16: gzip container; fastest level, FXT is very repetitive */
		if (deflateInit2(&w->z, Z_BEST_SPEED, Z_DEFLATED, 15 + 16, 8,
				 Z_DEFAULT_STRATEGY) != Z_OK)
			goto err_out;
		w->z_init = true;
	}
	if (!strcmp(path, "-")) {
		w->fd = STDOUT_FILENO;
	} else {
		struct stat sb;

		w->fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		if (w->fd < 0) {
			err = -errno;
			goto err_out;
		}
		w->own_fd = true;
		if (!fstat(w->fd, &sb) && S_ISREG(sb.st_mode)) {
			w->path = strdup(path);
			if (!w->path)
				goto err_out;
		}
	}
	if (!w->text)
		write_header(w, opts->provider_name ? opts->provider_name : "ptbpf");
	*out = w;
	return 0;

err_out:
	w->err = err;
	fxt_writer__close(w);
	return err;
}

uint64_t fxt_writer__bytes(const struct fxt_writer *w)
{
	if (!w)
		return 0;
	return w->st.bytes + (w->gz ? 0 : w->len);
}

void fxt_writer__stats(const struct fxt_writer *w, struct fxt_stats *out)
{
	if (!out)
		return;
	memset(out, 0, sizeof(*out));
	if (!w)
		return;
	*out = w->st;
	out->bytes = fxt_writer__bytes(w);
}

int fxt_writer__close(struct fxt_writer *w)
{
	uint32_t i;
	int err;

	if (!w)
		return 0;
	if (w->fd >= 0) {
		if (w->text && !w->err)
			txt_print(w);
		out_flush(w, Z_FINISH);
		if (w->own_fd && close(w->fd) && !w->err)
			set_err(w, -errno);
	}
	err = w->err;
	if (err && w->path)
		unlink(w->path);
	free(w->path);
	if (w->z_init)
		deflateEnd(&w->z);
	for (i = 0; i < w->nstrs; i++)
		free(w->strs[i].s);
	for (i = 0; i < w->ntxt; i++) {
		free(w->txt[i].sl);
		free(w->txt[i].stack);
	}
	free(w->txt);
	free(w->tnames);
	free(w->strs);
	free(w->sidx);
	free(w->shash);
	free(w->thrs);
	free(w->thash);
	lru_free(&w->slru);
	lru_free(&w->tlru);
	free(w->buf);
	free(w->zbuf);
	free(w);
	return err;
}
