// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * libipt's block decoder (2.0.5) done again over libipt's query decoder, with a cache of
 * straight runs. The block decoder spends most of its time finding, for every block,
 * the instructions from the block's ip to the next decision point; the query decoder
 * under it (TNT bits, TIP targets, events, time) is two to four times faster. Here:
 *
 *   - a run is the instructions from an address to the first branch, or to the end of
 *     its section: how many, the last one's ip, class, length and direct target. It is
 *     decoded once (capstone for lengths, decode.c's classify() for libipt's classes)
 *     and cached per stream, bounded; each run links to the run its branch went to, so
 *     a loop's blocks cost no hashing.
 *   - a block is one run, exactly as libipt 2.0.5 cuts them with end_on_call and
 *     end_on_jump: it ends at every branch (the block cache's decision points and its
 *     direct call/jump stops) and where the section ends.
 *   - the queries are libipt's own, in the block decoder's order: a conditional branch
 *     asks pt_qry_cond_branch, a return first asks it for a compressed return (a taken
 *     bit pops the 64-entry return stack) and else pt_qry_indirect_branch, an indirect
 *     call pushes its return address and asks for the target, and after each block a
 *     pending event is fetched with pt_qry_event and bound as the block decoder binds
 *     it (proceed to its ip, to the next branch needing trace for a disable without
 *     one...). The trace offset and the time are the query decoder's, so they are the
 *     same as the block decoder's at every step. The answers come from pktq
 *     (decoder/pktq.c: libipt's query decoder done again on its packet decoder, faster;
 *     where it falls back, so does the fast path), or PTBPF_FAST_QUERY=libipt's.
 *   - a stretch (ptd_fast_stretch()): the blocks that end in a conditional or direct
 *     jump staying in the caller's function range, walked here one after the other
 *     (link, TNT bit, compare) and handed to decode.c as one sum, since they make no
 *     output, and through calls, returns and indirect jumps in the function, the calls
 *     and returns handed to decode.c as edges (its events); their bits come from
 *     next_bit(), or a TNT packet's at once where a tracelet (the walk those bits made
 *     before from the same ip, with its calls and returns) says where they lead.
 *
 * Anything else (decode errors, a mode other than 64-bit, TSX, paging/VMCS events while
 * tracing, ptwrite, power events, errata work-arounds that apply, an instruction the
 * walk cannot classify, a run that leaves the image) answers PTD_FAST_FALLBACK: the
 * stream redoes that step with the block decoder, the reference.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "capstone_lazy.h"
#include "fastpath.h"
#include "log.h"
#include "pktq.h"
#include "ptd.h"

/* What ends a run. */
enum run_kind {
	RUN_COND,		/* conditional branch: one TNT bit */
	RUN_RET,		/* near return: compressed (a TNT bit) or a TIP */
	RUN_ICALL,		/* near indirect call: return address pushed, TIP */
	RUN_INDIRECT,		/* indirect jump or far transfer: TIP */
	RUN_CALL,		/* near direct call: the block ends (end_on_call) */
	RUN_JUMP,		/* near direct jump: the block ends (end_on_jump) */
	RUN_EDGE,		/* the section ends after a non-branch: the block ends */
	RUN_BAD,		/* not for the fast path */
};

/* The longest run cached; longer straight code goes to the block decoder. */
#define RUN_MAX_INSNS 4096
/* Runs cached per stream (the bound: the cache is emptied when it is full). */
#define RUN_CACHE_RUNS (1u << 13)
#define RUN_HASH_SLOTS (1u << 14)
#define LENS_POOL (RUN_CACHE_RUNS * 16u)

struct run {
	uint64_t ip;		/* first instruction */
	uint64_t end_ip;	/* last instruction */
	uint64_t target;	/* direct branch target; RUN_EDGE: the next ip */
	int32_t as;		/* address space it was decoded in */
	int isid;		/* libipt section id */
	uint32_t ninsn;
	uint32_t lens;		/* index of its instruction lengths in the pool */
	int32_t link[2];	/* the run reached after it: [taken] for a conditional
				 * branch, [0] else; -1: not known yet */
	/*
	 * The function of end_ip as the stretch's range (run_range()) asked it, in the run's
	 * own cache line: [end_ip - fn_below, end_ip + fn_above), the answer fn_answer.
	 */
	uint32_t fn_below, fn_above;
	uint8_t kind;		/* enum run_kind */
	uint8_t iclass;		/* libipt's class of the last instruction */
	uint8_t size;		/* its length */
	bool push;		/* RUN_CALL: pushes its return address (not a call to the
				 * next instruction, position-independent code) */
	uint8_t tl_short;	/* tracelets from here too short to pay, in a row (tl_note()) */
	int8_t fn_answer;	/* (see fn_below) */
	uint8_t fn_state;	/* enum run_fn_state */
	uint8_t pad;		/* to 64 bytes: in the 64-byte aligned cache, a run is one
				 * cache line, a lookup reads one */
};
_Static_assert(sizeof(struct run) == 64, "a run is one cache line");

/*
 * A stretch's range (ptd_stretch_lim.range) asked of a run's last instruction is kept
 * with the run, as it depends on nothing but the address space and the address (a
 * stretch after each call or return asks it, a million times on mruby).
 */
enum run_fn_state {
	RUN_FN_UNKNOWN,		/* not asked yet */
	RUN_FN_KEPT,		/* fn_below, fn_above and fn_answer hold the answer */
	RUN_FN_ASK,		/* an answer the run cannot hold (a range over 4 GiB): ask */
};

/*
 * The runs of one decode, shared by all its fast decoders (every stream, every piece of a
 * split stream; through ptd_images): a run depends only on its address space and ip, so
 * a run one decoder decoded with capstone, another copies into its own cache. Without
 * it, each piece of a split stream decoded its runs anew (a third of -j 2's CPU on
 * mruby). Insert-only and lock-free: a slot, once set, holds the same run until the
 * decode ends; bounded (runs and instruction bytes), past the bound runs stay local.
 */
#define STORE_SLOTS (1u << 16)
#define STORE_RUNS (STORE_SLOTS / 2)
#define STORE_LENS ((size_t)8 << 20)

struct stored_run {
	struct run r;		/* lens and link unused */
	uint8_t lens[];		/* r.ninsn instruction lengths */
};

/*
 * Fast decoders of streams that ended, kept for the next stream's (ptd_fast_new()): a
 * split stream's pieces start warm with the runs of the pieces before, and no piece pays
 * for its cache's memory again. Guarded by the images' lock.
 */
#define FAST_POOL 8
/* ptd_fast.site_link's slots */
#define SITE_LINK_BITS 11
#define SITE_LINKS (1u << SITE_LINK_BITS)
/* skd022_may_apply()'s answers kept per fast decoder (a power of two up to 256) */
#define SKD_CACHE 256

struct ptd_run_store {
	_Atomic(struct stored_run *) slot[STORE_SLOTS];
	atomic_uint nr;
	atomic_size_t lens;
	struct ptd_fast *pool[FAST_POOL];
	pthread_t pool_thread[FAST_POOL];	/* the thread that used each last */
	unsigned nr_pool;
};

struct ptd_fast {
	struct pktq *qry;	/* the queries (decoder/pktq.c, or libipt's: PTBPF_FAST_QUERY) */
	struct pt_config cfg;
	struct ptd_images *im;
	struct ptd_run_store *store;	/* the decode's runs (im->run_store), NULL: none */
	int as;
	const struct capstone_fns *csf;
	csh cs;
	bool cs_open;

	/* the block decoder's state */
	uint64_t ip;
	enum pt_exec_mode mode;
	int status;
	bool enabled;
	bool process_event;
	bool speculative;	/* in a transaction (TSX) */
	struct pt_event event;
	uint64_t retstack[65];	/* libipt's: 64 entries, one slot free */
	uint8_t top, bottom;

	/*
	 * The link the ip was reached through (runs[i].link[k] or a site_link), &no_link:
	 * none (look the run up). A direct branch's link is its one target, a compressed
	 * return's the run it reached last time (checked by ip), an indirect branch's or an
	 * enable's the site link of where it went. A pointer, not an index: the stretch
	 * reads it once a block, with no test and no index arithmetic.
	 */
	int32_t *from_link;
	int32_t no_link;	/* -1, never written */
	/*
	 * The runs at the ips an indirect branch (an uncompressed return too) or an enable
	 * reached, by ip (direct-mapped; -1: none, as 0 is a run), in the current address
	 * space (ptd_fast_set_as() empties them): their links. A branch's
	 * own link holds one target, where an indirect jump may have many and a function
	 * many callers, its first returns after an enable uncompressed (mruby: 310 K missed
	 * it, a hashed lookup each); an enable has no branch to hold one (kAFL's filters:
	 * 340 K enables on mruby, at the return addresses of the calls that left the filter).
	 */
	int32_t site_link[SITE_LINKS];

	struct run *runs;
	uint32_t nr_runs;
	int32_t *hash;		/* run index + 1, 0: empty (open addressing) */
	uint8_t *lens;		/* instruction lengths of the runs */
	uint32_t nr_lens;

	struct tracelet *tl;	/* TL_SETS * TL_WAYS; NULL: none */
	/* their edges (an entry is read only where its tracelet has edges: written);
	 * allocated at the first tracelet with edges, NULL: none yet */
	struct tl_more *tl_more;
	uint32_t tl_clock;	/* tracelet uses so far (their LRU stamps) */
	bool tl_on;		/* tracelets used (PTBPF_TRACELETS, an engine with bulk bits) */

	struct ptd_fast_stats st;
	/* PTBPF_FAST_REFUSE=N: refuse every Nth block (the tests' way to exercise the
	 * hand-over to the block decoder on any trace); 0: never */
	uint64_t refuse_every, nexts;

	/*
	 * skd022_may_apply()'s answers by ip: the bytes there do not change, and
	 * pt_iscache_read() takes the image section cache's locks, which every thread
	 * of a split stream takes (HASE: twice per asynchronous disable, 20 K reads)
	 */
	struct skd_ent {
		uint64_t ip;
		int32_t isid;	/* 0: an empty slot */
		bool may;
	} skd[SKD_CACHE];
};

/* Refuse a step, saying where under -vv (which case the fast path leaves to libipt). */
#define FALLBACK(f) fallback_at(f, __func__, __LINE__)

static int fallback_at(const struct ptd_fast *f, const char *fn, int line)
{
	ddlog("[fast path: to the block decoder at ip %#" PRIx64 ", %s:%d]\n", f->ip, fn, line);
	return PTD_FAST_FALLBACK;
}

/* ---------------------------------------------------------------- runs */

/* The first slot of (ip, as) in a table of `slots` (a power of two up to 2^24). */
static uint32_t hash_ip(uint64_t ip, int as, uint32_t slots)
{
	uint64_t h = (ip ^ ((uint64_t)(uint32_t)as << 47)) * 0x9e3779b97f4a7c15ull;

	return (uint32_t)(h >> 40) & (slots - 1);
}

static void tl_flush(struct ptd_fast *f);

static void site_links_clear(struct ptd_fast *f)
{
	unsigned k;

	for (k = 0; k < SITE_LINKS; k++)
		f->site_link[k] = -1;
}

/* The link of a return or an enable to `ip` (ptd_fast.site_link) */
static inline int32_t *site_link(struct ptd_fast *f, uint64_t ip)
{
	return &f->site_link[(ip * 0x9e3779b97f4a7c15ull) >> (64 - SITE_LINK_BITS)];
}

static void cache_flush(struct ptd_fast *f)
{
	memset(f->hash, 0, RUN_HASH_SLOTS * sizeof(*f->hash));
	f->nr_runs = 0;
	f->nr_lens = 0;
	f->from_link = &f->no_link;
	site_links_clear(f);
	f->st.flushes++;
	tl_flush(f);
}

/* The section holding `ip` in the current address space (the kernel's too). */
static const struct ptd_map *map_of(struct ptd_fast *f, uint64_t ip)
{
	const struct ptd_map *m;

	/* no address space: libipt's decoder has an empty image */
	if (f->as < 0)
		return NULL;
	m = ptd_aspace_lookup(f->im, f->as, ip);
	if (!m && f->im->kernel_as >= 0 && f->im->kernel_as != f->as)
		m = ptd_aspace_lookup(f->im, f->im->kernel_as, ip);
	if (!m || !m->exec || m->isid <= 0)
		return NULL;
	return m;
}

/* The class, direct target and kind of the branch `insn` (len bytes at ip). */
static enum run_kind branch_kind(const uint8_t *p, size_t len, uint64_t ip, uint8_t *iclass,
				 uint64_t *target, bool *push)
{
	enum pt_insn_class c = ptd_classify(p, len, ptem_64bit);
	size_t i = 0;
	int64_t rel;

	*iclass = (uint8_t)c;
	*push = false;
	while (i < len && (p[i] == 0x66 || p[i] == 0x67 || p[i] == 0xf0 || p[i] == 0xf2 ||
			   p[i] == 0xf3 || p[i] == 0x2e || p[i] == 0x36 || p[i] == 0x3e ||
			   p[i] == 0x26 || p[i] == 0x64 || p[i] == 0x65 || (p[i] & 0xf0) == 0x40)) {
		/* an operand-size prefix on a near branch: CPUs disagree, leave it to libipt */
		if (p[i] == 0x66 && c != ptic_other)
			return RUN_BAD;
		i++;
	}
	switch (c) {
	case ptic_other:
		return RUN_EDGE;	/* not a branch: the caller goes on */
	case ptic_cond_jump:
		if (p[i] == 0x0f)
			rel = (int32_t)((uint32_t)p[len - 4] | (uint32_t)p[len - 3] << 8 |
					(uint32_t)p[len - 2] << 16 | (uint32_t)p[len - 1] << 24);
		else
			rel = (int8_t)p[len - 1];
		*target = ip + len + (uint64_t)rel;
		return RUN_COND;
	case ptic_return:
		return RUN_RET;
	case ptic_call:
		if (p[i] == 0xff)
			return RUN_ICALL;
		rel = (int32_t)((uint32_t)p[len - 4] | (uint32_t)p[len - 3] << 8 |
				(uint32_t)p[len - 2] << 16 | (uint32_t)p[len - 1] << 24);
		*target = ip + len + (uint64_t)rel;
		*push = rel != 0;
		return RUN_CALL;
	case ptic_jump:
		if (p[i] == 0xff)
			return RUN_INDIRECT;
		if (p[i] == 0xeb)
			rel = (int8_t)p[len - 1];
		else
			rel = (int32_t)((uint32_t)p[len - 4] | (uint32_t)p[len - 3] << 8 |
					(uint32_t)p[len - 2] << 16 | (uint32_t)p[len - 1] << 24);
		*target = ip + len + (uint64_t)rel;
		return RUN_JUMP;
	case ptic_far_call:
	case ptic_far_return:
	case ptic_far_jump:
		return RUN_INDIRECT;
	default:
		return RUN_BAD;
	}
}

/* Whether capstone sees a control transfer (or a mov to cr3, ptwrite) that classify()
 * calls ptic_other: such code is left to libipt's own instruction decoder. */
static bool other_is_odd(const cs_insn *ci)
{
	const cs_detail *d = ci->detail;
	uint8_t k;

	if (!d)
		return false;
	for (k = 0; k < d->groups_count; k++)
		switch (d->groups[k]) {
		case CS_GRP_JUMP:
		case CS_GRP_CALL:
		case CS_GRP_RET:
		case CS_GRP_INT:
		case CS_GRP_IRET:
		case CS_GRP_BRANCH_RELATIVE:
			return true;
		default:
			break;
		}
	/* mov to a control register (0f 22), ptwrite (f3 0f ae /4, unknown to capstone 4) */
	for (k = 0; k + 2 < ci->size; k++)
		if (ci->bytes[k] == 0x0f && (ci->bytes[k + 1] == 0x22 ||
					     (ci->bytes[k + 1] == 0xae &&
					      ((ci->bytes[k + 2] >> 3) & 7) == 4)))
			return true;
	return false;
}

/* A new run at `ip` in the cache (emptied first when full); run_commit() makes it found. */
static struct run *run_new(struct ptd_fast *f, uint64_t ip, int isid)
{
	struct run *r;

	if (f->nr_runs >= RUN_CACHE_RUNS || f->nr_lens + RUN_MAX_INSNS > LENS_POOL)
		cache_flush(f);
	r = &f->runs[f->nr_runs];
	memset(r, 0, sizeof(*r));
	r->ip = ip;
	r->as = f->as;
	r->isid = isid;
	r->lens = f->nr_lens;
	r->link[0] = r->link[1] = -1;
	r->kind = RUN_BAD;
	return r;
}

/* Run `r` of run_new(), its lengths in the pool, goes into the cache; its index. */
static int32_t run_commit(struct ptd_fast *f, struct run *r)
{
	int32_t idx = (int32_t)(r - f->runs);
	uint32_t h = hash_ip(r->ip, r->as, RUN_HASH_SLOTS);

	f->nr_lens += r->ninsn;
	f->nr_runs++;
	while (f->hash[h])
		h = (h + 1) & (RUN_HASH_SLOTS - 1);
	f->hash[h] = idx + 1;
	return idx;
}

/* The decode's run at (ip, as), or NULL. */
static const struct stored_run *store_get(struct ptd_run_store *st, uint64_t ip, int as)
{
	const struct stored_run *sr;
	uint32_t h;

	if (!st)
		return NULL;
	for (h = hash_ip(ip, as, STORE_SLOTS);
	     (sr = atomic_load_explicit(&st->slot[h], memory_order_acquire));
	     h = (h + 1) & (STORE_SLOTS - 1))
		if (sr->r.ip == ip && sr->r.as == as)
			return sr;
	return NULL;
}

/* Run `r` (decoded, `lens` its lengths) for the decode's other decoders; within bounds. */
static void store_put(struct ptd_run_store *st, const struct run *r, const uint8_t *lens)
{
	struct stored_run *sr, *seen;
	uint32_t h;

	if (!st || atomic_fetch_add_explicit(&st->nr, 1, memory_order_relaxed) >= STORE_RUNS ||
	    atomic_fetch_add_explicit(&st->lens, r->ninsn, memory_order_relaxed) + r->ninsn >
		    STORE_LENS)
		return;
	sr = malloc(sizeof(*sr) + r->ninsn);
	if (!sr)
		return;
	sr->r = *r;
	memcpy(sr->lens, lens, r->ninsn);
	for (h = hash_ip(r->ip, r->as, STORE_SLOTS);; h = (h + 1) & (STORE_SLOTS - 1)) {
		seen = NULL;
		if (atomic_compare_exchange_strong_explicit(&st->slot[h], &seen, sr,
							    memory_order_release,
							    memory_order_acquire))
			return;
		if (seen->r.ip == r->ip && seen->r.as == r->as)
			break;	/* another decoder stored it first */
	}
	free(sr);
}

/* The run at the ip from the decode's store into the cache: its index, -1: not there. */
static int32_t run_stored(struct ptd_fast *f)
{
	const struct stored_run *sr = store_get(f->store, f->ip, f->as);
	struct run *r;
	uint32_t lens;

	if (!sr)
		return -1;
	r = run_new(f, f->ip, sr->r.isid);
	lens = r->lens;
	*r = sr->r;
	r->lens = lens;
	r->fn_state = RUN_FN_UNKNOWN;
	r->link[0] = r->link[1] = -1;
	memcpy(f->lens + lens, sr->lens, r->ninsn);
	f->st.stored++;
	return run_commit(f, r);
}

/* Decode the run at `ip`; its index, or -1 when the fast path cannot take it. */
static int32_t run_decode(struct ptd_fast *f, uint64_t ip)
{
	const struct ptd_map *m = map_of(f, ip);
	uint8_t buf[256];
	struct run *r;
	cs_insn *ci;
	uint64_t at = ip;
	uint32_t n = 0;

	if (!m)
		return -1;
	if (!f->cs_open) {
		/* capstone is loaded by the first run decoded (not for a trace without code) */
		f->csf = capstone_lazy();
		if (!f->csf || f->csf->open(CS_ARCH_X86, CS_MODE_64, &f->cs) != CS_ERR_OK)
			return -1;
		f->cs_open = true;
		f->csf->option(f->cs, CS_OPT_DETAIL, CS_OPT_ON);
	}
	r = run_new(f, ip, m->isid);
	ci = f->csf->malloc(f->cs);
	if (!ci)
		return -1;
	for (;;) {
		const uint8_t *code = buf;
		size_t avail;
		uint64_t addr = at;
		int got;

		got = pt_iscache_read(f->im->iscache, buf, sizeof(buf), m->isid, at);
		if (got <= 0)
			break;
		avail = (size_t)got;
		while (avail && n < RUN_MAX_INSNS) {
			uint64_t target = 0;
			enum run_kind k;
			uint8_t iclass;
			bool push;

			/* an instruction that may go past what was read: read again from it */
			if (avail < 16 && at + avail < m->end && (size_t)got == sizeof(buf))
				break;
			if (!f->csf->disasm_iter(f->cs, &code, &avail, &addr, ci))
				goto out;	/* undecodable or cut by the section's end */
			k = branch_kind(ci->bytes, ci->size, at, &iclass, &target, &push);
			if (k == RUN_BAD || (k == RUN_EDGE && other_is_odd(ci)))
				goto out;
			f->lens[f->nr_lens + n++] = (uint8_t)ci->size;
			r->end_ip = at;
			r->iclass = iclass;
			r->size = (uint8_t)ci->size;
			at += ci->size;
			if (k != RUN_EDGE) {
				r->kind = (uint8_t)k;
				r->target = target;
				r->push = push;
				goto done;
			}
			if (at >= m->end) {
				r->kind = RUN_EDGE;
				r->target = at;
				goto done;
			}
		}
		if (n >= RUN_MAX_INSNS)
			goto out;
	}
out:
	f->csf->free(ci, 1);
	return -1;
done:
	f->csf->free(ci, 1);
	r->ninsn = n;
	store_put(f->store, r, f->lens + r->lens);
	return run_commit(f, r);
}

/* run_here() without a link to the run: by hashing, else decoded. */
static struct run *run_lookup(struct ptd_fast *f)
{
	struct run *r;
	int32_t idx;
	uint32_t h;

	if (f->mode != ptem_64bit)
		return NULL;
	for (h = hash_ip(f->ip, f->as, RUN_HASH_SLOTS); f->hash[h]; h = (h + 1) & (RUN_HASH_SLOTS - 1)) {
		r = &f->runs[f->hash[h] - 1];
		if (r->ip == f->ip && r->as == f->as) {
			f->st.hits++;
			goto found;
		}
	}
	idx = run_stored(f);
	if (idx < 0)
		idx = run_decode(f, f->ip);
	if (idx < 0)
		return NULL;
	r = &f->runs[idx];
found:
	/* the link it was reached through (gone if the decode emptied the cache) */
	if (f->from_link != &f->no_link)
		*f->from_link = (int32_t)(r - f->runs);
	return r;
}

/* The run starting at the current ip; NULL: not for the fast path. */
static inline struct run *run_here(struct ptd_fast *f)
{
	int32_t idx = *f->from_link;

	f->st.lookups++;
	/* a link is only made in 64-bit mode, and a mode change drops it */
	if (idx >= 0 && f->runs[idx].ip == f->ip && f->runs[idx].as == f->as &&
	    f->mode == ptem_64bit) {
		f->st.hits++;
		f->st.linked++;
		return &f->runs[idx];
	}
	return run_lookup(f);
}

/*
 * No run at the ip: -pte_nomap where libipt's image maps nothing there (it fails the
 * same way, with an empty block), else the fast path's refusal.
 */
static int no_run(struct ptd_fast *f)
{
	if (f->mode == ptem_64bit && !map_of(f, f->ip))
		return -pte_nomap;
	return FALLBACK(f);
}

/* The ip was reached from `r` through its link `k` (taken or not, or its one successor). */
static void follow(struct ptd_fast *f, const struct run *r, int k)
{
	/* (the run is the cache's: const only for the callers) */
	f->from_link = (int32_t *)&r->link[k];
}

/* ---------------------------------------------------------------- libipt's steps */

static inline void retstack_push(struct ptd_fast *f, uint64_t ip)
{
	/* ring indices wrap with a compare: % 65 is a multiply and shifts per call */
	f->retstack[f->top] = ip;
	f->top = f->top == 64 ? 0 : (uint8_t)(f->top + 1);
	if (f->top == f->bottom)
		f->bottom = f->bottom == 64 ? 0 : (uint8_t)(f->bottom + 1);
}

static int retstack_pop(struct ptd_fast *f, uint64_t *ip)
{
	if (f->top == f->bottom)
		return -pte_retstack_empty;
	f->top = (uint8_t)((f->top ? f->top : 65) - 1);
	*ip = f->retstack[f->top];
	return 0;
}

static int blk_status(const struct ptd_fast *f, int flags)
{
	if (!f->enabled)
		flags |= pts_ip_suppressed;
	if ((f->status & pts_eos) && !f->process_event)
		flags |= pts_eos;
	return flags;
}

static void add_run(struct pt_block *b, const struct run *r, uint32_t ninsn, uint64_t end_ip,
		    uint8_t iclass)
{
	b->isid = r->isid;
	b->ninsn = (uint16_t)(b->ninsn + ninsn);
	b->end_ip = end_ip;
	b->iclass = (enum pt_insn_class)iclass;
}

/*
 * The next conditional branch's outcome: the one place TNT bits come from (a bulk
 * source can take them here). libipt's status, or its error.
 */
static inline int next_bit(struct ptd_fast *f, int *taken)
{
	return pktq_cond_branch(f->qry, taken);
}

/* The conditional branch ending run `r` went the way `taken` says (status: next_bit's). */
static inline int take_cond(struct ptd_fast *f, const struct run *r, int status, int taken)
{
	if (status < 0)
		return status;
	if (status & pts_ip_suppressed)
		return FALLBACK(f);
	f->status = status;
	if (taken) {
		f->ip = r->target;
		follow(f, r, 1);
	} else {
		f->ip = r->end_ip + r->size;
		follow(f, r, 0);
	}
	return 0;
}

static inline int indirect_trace(struct ptd_fast *f, struct run *r);

/*
 * The return ending run `r` after its TNT query (status, taken): a compressed return
 * (a taken bit) pops the return stack (*compressed), an uncompressed one (no bit: a
 * TIP follows) goes where the TIP says. As with_trace().
 */
static inline int ret_trace(struct ptd_fast *f, struct run *r, int status, int taken,
			    bool *compressed)
{
	*compressed = false;
	if (status >= 0) {
		if (status & pts_ip_suppressed)
			return FALLBACK(f);
		f->status = status;
		/* a compressed return is a taken bit */
		if (!taken)
			return -pte_bad_retcomp;
		status = retstack_pop(f, &f->ip);
		follow(f, r, 0);
		*compressed = status >= 0;
		return status;
	}
	if (status != -pte_bad_query)
		return status;
	return indirect_trace(f, r);
}

/*
 * The branch ending run `r` (already in the block) using trace: the next ip. 0 or a
 * query error; PTD_FAST_FALLBACK where libipt's paths differ (no ip in a TIP). In line,
 * as block_run(): every block that is not in a stretch ends here or there.
 */
static inline __attribute__((always_inline)) int with_trace(struct ptd_fast *f, struct run *r)
{
	int status, taken;

	bool compressed;

	switch (r->kind) {
	case RUN_COND:
		status = next_bit(f, &taken);
		return take_cond(f, r, status, taken);
	case RUN_RET:
		status = next_bit(f, &taken);
		return ret_trace(f, r, status, taken, &compressed);
	case RUN_ICALL:
	case RUN_INDIRECT:
		return indirect_trace(f, r);
	default:
		return FALLBACK(f);
	}
}

/* The indirect branch ending run `r` goes where the next TIP says (as with_trace()), through
 * the site link there. */
static inline int indirect_trace(struct ptd_fast *f, struct run *r)
{
	int status = pktq_indirect_branch(f->qry, &f->ip);

	if (status < 0)
		return status;
	/* libipt's first visit says -pte_noip here, its cached path goes on */
	if (status & pts_ip_suppressed)
		return FALLBACK(f);
	f->status = status;
	f->from_link = site_link(f, f->ip);
	return 0;
}

/*
 * The block of run `r` at the ip, with no event: the block decoder's cached flow. In line
 * (the block ptd_fast_stretch() hands back, ptd_fast_next()'s): a call's saves and
 * restores cost about what the usual block does.
 */
static inline __attribute__((always_inline)) int block_run(struct ptd_fast *f, struct pt_block *b,
							    struct run *r)
{
	add_run(b, r, r->ninsn, r->end_ip, r->iclass);
	switch (r->kind) {
	case RUN_CALL:
		if (r->push)
			retstack_push(f, r->end_ip + r->size);
		f->ip = r->target;
		follow(f, r, 0);
		return 0;
	case RUN_JUMP:
	case RUN_EDGE:
		f->ip = r->target;
		follow(f, r, 0);
		return 0;
	case RUN_ICALL:
		retstack_push(f, r->end_ip + r->size);
		return with_trace(f, r);
	default:
		return with_trace(f, r);
	}
}

/* Block ends with no event: the block decoder's cached no-event flow. */
static int proceed_no_event(struct ptd_fast *f, struct pt_block *b)
{
	struct run *r = run_here(f);

	if (!r)
		return no_run(f);
	return block_run(f, b, r);
}

/*
 * What a walk (walk()) does with the run at the ip, walking to `target` (to_ip) or to the
 * next branch needing trace (walk_step()): walk()'s and the stretch's walking to a disable.
 */
enum walk_step {
	WALK_STEP_THROUGH,	/* a direct call or jump elsewhere: the block ends, the walk goes on */
	WALK_STEP_ARRIVE,	/* a direct call or jump to target: reached after it */
	WALK_STEP_EDGE_ARRIVE,	/* the section ends, target next: reached after it */
	WALK_STEP_EDGE,		/* the section ends, target not next: libipt's */
	WALK_STEP_TRACE,	/* a branch needing trace: the walk stops at it */
	WALK_STEP_INSIDE = 8,	/* (with one of those) target at or in the run: the walk stops
				 * there if an instruction starts there, else as said */
};

static inline enum walk_step walk_step(const struct run *r, bool to_ip, uint64_t target)
{
	enum walk_step step;

	switch (r->kind) {
	case RUN_CALL:
	case RUN_JUMP:
		step = to_ip && r->target == target ? WALK_STEP_ARRIVE : WALK_STEP_THROUGH;
		break;
	case RUN_EDGE:
		step = to_ip && r->target == target ? WALK_STEP_EDGE_ARRIVE : WALK_STEP_EDGE;
		break;
	default:
		step = WALK_STEP_TRACE;
		break;
	}
	if (to_ip && target >= r->ip && target <= r->end_ip)
		step |= WALK_STEP_INSIDE;
	return step;
}

/* The outcome of walking to an ip or to a branch (pt_blk_proceed_to_ip/_to_insn). */
enum walk {
	WALK_REACHED = 1,	/* the ip was reached */
	WALK_ENDED = 0,		/* the block ended first (direct call or jump) */
	WALK_TRACE = 2,		/* a branch needing trace was reached (it is in the block) */
};

/*
 * Proceed to `target` (to_ip) or, with to_ip false, to the next branch needing trace,
 * without trace. *last is the run whose last instruction was reached (WALK_TRACE).
 * Or a libipt error (-pte_nomap), or PTD_FAST_FALLBACK. In line: every disable (340 K
 * times on mruby) walks once or twice, and a call cost more than its usual case.
 */
static inline __attribute__((always_inline)) int walk(struct ptd_fast *f, struct pt_block *b,
						       bool to_ip, uint64_t target, struct run **last)
{
	enum walk_step step;
	struct run *r;

	if (to_ip && f->ip == target)
		return WALK_REACHED;
	r = run_here(f);
	if (!r)
		return no_run(f);
	step = walk_step(r, to_ip, target);
	if (step & WALK_STEP_INSIDE) {
		/* stop before the instruction at target, if one starts there */
		uint64_t at = r->ip, end = r->ip;
		uint32_t k;

		for (k = 0; k < r->ninsn && at < target; k++) {
			end = at;
			at += f->lens[r->lens + k];
		}
		if (at == target) {
			add_run(b, r, k, end, ptic_other);
			f->ip = target;
			f->from_link = &f->no_link;
			return WALK_REACHED;
		}
		step &= ~WALK_STEP_INSIDE;
	}
	add_run(b, r, r->ninsn, r->end_ip, r->iclass);
	*last = r;
	switch (step) {
	case WALK_STEP_THROUGH:
	case WALK_STEP_ARRIVE:
		if (r->kind == RUN_CALL && r->push)
			retstack_push(f, r->end_ip + r->size);
		f->ip = r->target;
		follow(f, r, 0);
		return step == WALK_STEP_ARRIVE ? WALK_REACHED : WALK_ENDED;
	case WALK_STEP_EDGE_ARRIVE:
		f->ip = r->target;
		return WALK_REACHED;
	case WALK_STEP_EDGE:
		/* libipt decodes the next section's first instruction before it ends the
		 * block (an error there would be this block's): leave that to it */
		f->ip = r->target;
		return FALLBACK(f);
	default:
		if (r->kind == RUN_ICALL)
			retstack_push(f, r->end_ip + r->size);
		f->ip = r->end_ip;
		f->from_link = &f->no_link;
		return WALK_TRACE;
	}
}

/* A synchronous disable binding to the branch of `r`: where tracing would resume. */
static void disable_resume_ip(struct ptd_fast *f, const struct run *r)
{
	if (r->iclass == ptic_call || r->iclass == ptic_far_call)
		f->ip = r->end_ip + r->size;
	else
		f->ip = 0;
	f->from_link = &f->no_link;
}

/*
 * An asynchronous disable at the ip, on a CPU with erratum SKD022: libipt turns it into
 * a synchronous one when the instruction there is VMLAUNCH or VMRESUME (0f 01 c2/c3),
 * and leaves it otherwise. Whether it may apply here (or the bytes cannot be read).
 */
static bool skd022_may_apply(struct ptd_fast *f)
{
	const struct ptd_map *m;
	struct skd_ent *e;
	uint8_t p[3];
	bool may;

	if (!f->cfg.errata.skd022)
		return false;
	m = map_of(f, f->ip);
	if (!m)
		return true;
	e = &f->skd[(f->ip * 0x9e3779b97f4a7c15ull) >> 56 & (SKD_CACHE - 1)];
	if (e->isid && e->isid == m->isid && e->ip == f->ip)
		return e->may;
	may = pt_iscache_read(f->im->iscache, p, 3, m->isid, f->ip) != 3 ||
	      (p[0] == 0x0f && p[1] == 0x01 && (p[2] == 0xc2 || p[2] == 0xc3));
	if (m->isid > 0)
		*e = (struct skd_ent){ .ip = f->ip, .isid = m->isid, .may = may };
	return may;
}

/* Events that take effect where the decoder is, with no ip to proceed to. */
static bool binds_anywhere(enum pt_event_type type)
{
	switch (type) {
	case ptev_enabled:
	case ptev_overflow:
	case ptev_stop:
	case ptev_pwre:
	case ptev_pwrx:
	case ptev_tick:
	case ptev_cbr:
	case ptev_mnt:
		return true;
	default:
		return false;
	}
}

/* The pending event's location (pt_blk_proceed_event). */
static int proceed_event(struct ptd_fast *f, struct pt_block *b)
{
	struct pt_event *ev = &f->event;
	struct run *last = NULL;
	int w;

	if (binds_anywhere(ev->type))
		return blk_status(f, pts_event_pending);
	switch (ev->type) {
	case ptev_disabled:
		if (ev->ip_suppressed) {
			if (f->cfg.addr_filter.config.addr_cfg && f->cfg.errata.skl014)
				return FALLBACK(f);
			w = walk(f, b, false, 0, &last);
		} else {
			w = walk(f, b, true, ev->variant.disabled.ip, &last);
		}
		if (w < 0 || w == WALK_ENDED)
			return w;
		if (w == WALK_TRACE)
			disable_resume_ip(f, last);
		break;
	case ptev_async_disabled:
	case ptev_async_branch:
		w = walk(f, b, true, ev->type == ptev_async_branch ? ev->variant.async_branch.from
				 : ev->variant.async_disabled.at, &last);
		if (w < 0 || w == WALK_ENDED)
			return w;
		/* a branch needing trace before the location: libipt's error too */
		if (w == WALK_TRACE)
			return -pte_bad_query;
		if (ev->type == ptev_async_disabled && skd022_may_apply(f))
			return FALLBACK(f);
		break;
	case ptev_paging:
	case ptev_vmcs:
		if (f->enabled)
			return FALLBACK(f);
		break;
	case ptev_exec_mode:
	case ptev_async_paging:
	case ptev_async_vmcs: {
		/* pt_blk_proceed_to_ip_with_trace: a branch on the way is taken with trace */
		uint64_t ip = ev->type == ptev_exec_mode ? ev->variant.exec_mode.ip :
			      ev->type == ptev_async_paging ? ev->variant.async_paging.ip
							    : ev->variant.async_vmcs.ip;

		if (ev->ip_suppressed)
			break;
		w = walk(f, b, true, ip, &last);
		if (w < 0)
			return w;
		if (w == WALK_TRACE) {
			w = with_trace(f, last);
			if (w < 0)
				return w;
		}
		if (f->ip != ip)
			return 0;
		break;
	}
	case ptev_tsx:
		if (ev->ip_suppressed)
			break;
		w = walk(f, b, true, ev->variant.tsx.ip, &last);
		if (w < 0 || w == WALK_ENDED)
			return w;
		if (w == WALK_TRACE)
			return -pte_bad_query;
		break;
	case ptev_exstop:
	case ptev_mwait:
		if (f->enabled && !ev->ip_suppressed)
			return FALLBACK(f);
		break;
	case ptev_ptwrite:
		if (f->enabled)
			return FALLBACK(f);
		break;
	default:
		return FALLBACK(f);
	}
	return blk_status(f, pts_event_pending);
}

/* After a block or an event: fetch the next event and say if it binds here. */
static int bind_event(struct ptd_fast *f, bool after_block)
{
	struct pt_event *ev = &f->event;

	if (!f->process_event) {
		int status = pktq_event(f->qry, ev, sizeof(*ev));

		if (status < 0)
			return status;
		f->process_event = true;
		f->status = status;
	}
	if (binds_anywhere(ev->type))
		return blk_status(f, pts_event_pending);
	switch (ev->type) {
	case ptev_disabled:
		break;
	case ptev_async_disabled:
		if (f->ip != ev->variant.async_disabled.at)
			break;
		if (skd022_may_apply(f))
			return FALLBACK(f);
		return blk_status(f, pts_event_pending);
	case ptev_async_branch:
		if (f->ip != ev->variant.async_branch.from)
			break;
		return blk_status(f, pts_event_pending);
	case ptev_paging:
	case ptev_vmcs:
	case ptev_ptwrite:
		if (!f->enabled)
			return blk_status(f, pts_event_pending);
		break;
	case ptev_async_paging:
		if (!ev->ip_suppressed && f->ip != ev->variant.async_paging.ip)
			break;
		return blk_status(f, pts_event_pending);
	case ptev_async_vmcs:
		if (!ev->ip_suppressed && f->ip != ev->variant.async_vmcs.ip)
			break;
		return blk_status(f, pts_event_pending);
	case ptev_exec_mode:
		if (!ev->ip_suppressed && f->ip != ev->variant.exec_mode.ip)
			break;
		return blk_status(f, pts_event_pending);
	case ptev_tsx:
		if (ev->ip_suppressed)
			return blk_status(f, pts_event_pending);
		/* BDM64: libipt looks back at the block for a corrupted branch */
		if (after_block && f->cfg.errata.bdm64)
			return FALLBACK(f);
		if (f->ip != ev->variant.tsx.ip)
			break;
		return blk_status(f, pts_event_pending);
	case ptev_exstop:
		if (!ev->ip_suppressed && f->enabled && f->ip != ev->variant.exstop.ip)
			break;
		return blk_status(f, pts_event_pending);
	case ptev_mwait:
		if (!ev->ip_suppressed && f->enabled && f->ip != ev->variant.mwait.ip)
			break;
		return blk_status(f, pts_event_pending);
	default:
		return FALLBACK(f);
	}
	return blk_status(f, 0);
}

/* As bind_event(), in line for the usual case: no event pending, none to fetch. */
static inline int trailing_event(struct ptd_fast *f, bool after_block)
{
	if (!f->process_event && !(f->status & pts_event_pending))
		return blk_status(f, 0);
	return bind_event(f, after_block);
}

/*
 * After a stretch's branch took its trace (`status`, f->status): whether an event is
 * pending that is a disable binding further on, at the next branch needing trace or at
 * its ip (proceed_event()'s walk), which the stretch may walk to
 * (disable_step()): kAFL's filters, 340 K on mruby. The event is fetched and
 * bound as the block's trailing_event() would (*have_bound, its answer in *bound).
 */
static inline bool disable_ahead(struct ptd_fast *f, int status, bool *have_bound, int *bound)
{
	if (status < 0 || !(f->status & pts_event_pending))
		return false;
	*have_bound = true;
	*bound = bind_event(f, true);
	return !*bound && f->event.type == ptev_disabled &&
	       !(f->event.ip_suppressed && f->cfg.addr_filter.config.addr_cfg &&
		 f->cfg.errata.skl014);
}

/* What the walk to the pending disable (proceed_event()'s) does with run `r` at the ip. */
static inline enum walk_step disable_step(const struct ptd_fast *f, const struct run *r)
{
	return walk_step(r, !f->event.ip_suppressed, f->event.variant.disabled.ip);
}

int ptd_fast_next(struct ptd_fast *f, struct pt_block *b)
{
	int status;

	if (f->refuse_every && !(++f->nexts % f->refuse_every))
		return FALLBACK(f);
	memset(b, 0, sizeof(*b));
	b->ip = f->ip;
	b->mode = f->mode;
	b->speculative = f->speculative;
	if (f->process_event)
		return proceed_event(f, b);
	if (!f->enabled)
		return (f->status & pts_eos) ? -pte_eos : -pte_no_enable;
	status = proceed_no_event(f, b);
	if (status < 0)
		return status;
	return trailing_event(f, true);
}

/* ---------------------------------------------------------------- tracelets */

/*
 * A tracelet: what a stretch's walk does from an ip with the TNT bits pending there
 * (pktq_cond_bits(): the rest of the TNT packet, or the next one), in a function range:
 * the blocks and instructions up to the last conditional branch whose bit it takes
 * (the final block), and that block's run. A hit takes the bits at once
 * (pktq_cond_take()) and adds the sums; the final block is then walked as any other,
 * with the last bit's status, so an event or error there ends the stretch exactly
 * where the walk block by block would. The walk from (ip, address space, bits, range)
 * is always the same, so is the tracelet; it holds run indices, so a flush of the run
 * cache empties the tracelets too. Bounded: TL_SETS sets of TL_WAYS, the least recently
 * used one of a set evicted. PTBPF_TRACELETS=0: none (the walk block by block).
 */
#define TL_SETS (1u << 12)
#define TL_WAYS 4
/*
 * A tracelet pays from 2 blocks (its lookup costs about what one or two blocks walked
 * one by one cost; callgrind: from 3, mruby and HASE take 0.1 % more instructions); from
 * a run whose last TL_SHORT_MAX were shorter (or had no bits to look up with), lookups
 * are left out until its count wraps (248 blocks later): tried again.
 */
#define TL_PAYS_BLOCKS 1	/* blocks before the final one */
#define TL_SHORT_MAX 8

/*
 * Calls and returns a tracelet holds (edges, struct ptd_stretch_edge), without time: only
 * stretches whose edges have none (no clock: instructions stand in) record and use them.
 * A return in a tracelet pops a frame a call in it pushed (its target is then the one
 * recorded); one that would pop an older frame, an indirect call or jump, and an
 * uncompressed return end the tracelet before them. A hit replays its pushes and pops
 * on the return stack, which keeps it exact (it is bounded and wraps).
 */
#define TL_EDGES 4

struct tl_edge {
	uint64_t from, to;
	uint64_t pushed;	/* a call's return address pushed (if push) */
	uint32_t insns;		/* the tracelet's instructions up to and with it */
	bool ret, push;
};

struct tracelet {
	uint64_t ip;		/* where it starts */
	uint64_t bits;		/* the bits pending there, the oldest in bit 0 */
	uint64_t lo, hi;	/* the stretch's function range (0, 0 if asks) */
	int32_t as;
	int32_t final;		/* the run of its final block (a conditional branch) */
	int32_t pre;		/* the run of the block before that one, -1: none */
	uint16_t blocks;	/* blocks before the final one (a stretch has < 4096) */
	bool asks;		/* the range is still to be asked where it starts (after an
				 * edge): its first block asks it */
	uint64_t insns;		/* and their instructions */
	uint32_t stamp;		/* last use (LRU within the set) */
	uint8_t nbits;		/* the bits' count; 0: an empty slot */
	uint8_t take;		/* bits it takes: the last is the final block's */
	uint8_t nedges;		/* edges before the final block (in its struct tl_more) */
	bool pre_edge;		/* the block before the final one is the last edge's */
};
_Static_assert(sizeof(struct tracelet) == 64, "a tracelet is one cache line");

/*
 * A tracelet's edges, apart (ptd_fast.tl_more, the same index): only decodes without
 * time use them, and a tracelet stays one cache line. With edges: the range is asked
 * at the final block (ask), or was after the last edge: the answer, [flo, fhi).
 */
struct tl_more {
	bool ask, franged;
	int frange;
	uint64_t flo, fhi;
	struct tl_edge edge[TL_EDGES];
};

/* A tracelet being recorded by the walk block by block (after a miss). */
struct tl_rec {
	bool on;
	int32_t start;		/* its first block's run */
	uint64_t ip, bits;
	unsigned nbits, took;	/* its key's bits, and the ones taken so far */
	uint64_t n0, insns0;	/* the stretch's blocks and instructions when it began */
	uint64_t flushes;	/* the run cache's flushes then: a flush drops it */
	unsigned nedges;	/* edges recorded (in t.edge; t.nedges: up to the last
				 * conditional branch counted) */
	unsigned depth;		/* frames its calls pushed that its returns did not pop */
	uint64_t asked;		/* the block at which the range was last asked */
	struct tracelet t;	/* up to the last conditional branch counted */
	struct tl_more more;	/* its edges */
};

static inline struct tracelet *tl_set(struct ptd_fast *f, uint64_t ip, uint64_t bits,
				      unsigned nbits)
{
	uint64_t h = (ip ^ (bits << 17) ^ ((uint64_t)nbits << 9)) * 0x9e3779b97f4a7c15ull;

	return &f->tl[((uint32_t)(h >> 40) & (TL_SETS - 1)) * TL_WAYS];
}

static struct tracelet *tl_find(struct ptd_fast *f, uint64_t ip, uint64_t bits, unsigned nbits,
				uint64_t lo, uint64_t hi, bool asks)
{
	struct tracelet *t = tl_set(f, ip, bits, nbits);
	unsigned w;

	for (w = 0; w < TL_WAYS; w++, t++)
		if (t->ip == ip && t->bits == bits && t->nbits == nbits && t->as == f->as &&
		    t->lo == lo && t->hi == hi && t->asks == asks) {
			t->stamp = ++f->tl_clock;
			return t;
		}
	return NULL;
}

/* A tracelet from run `r` paid (or did not): whether to look one up there next time. */
static inline void tl_note(struct run *r, bool paid)
{
	if (paid)
		r->tl_short = 0;
	else if (r->tl_short < TL_SHORT_MAX)
		r->tl_short++;
}

/* The recorded tracelet into its set, in the place of the least recently used one. */
static void tl_put(struct ptd_fast *f, const struct tl_rec *rec)
{
	struct tracelet *t = tl_set(f, rec->ip, rec->bits, rec->nbits), *old = t;
	unsigned w;

	if (rec->flushes != f->st.flushes)
		return;
	tl_note(&f->runs[rec->start], rec->t.take && rec->t.blocks >= TL_PAYS_BLOCKS);
	if (!rec->t.take)
		return;
	/* its edges go apart, into a table made for the first (no memory: not kept) */
	if (rec->t.nedges && !f->tl_more &&
	    !(f->tl_more = malloc(TL_SETS * TL_WAYS * sizeof(*f->tl_more))))
		return;
	for (w = 0; w < TL_WAYS; w++, t++) {
		if (!t->nbits) {
			old = t;
			break;
		}
		if (t->stamp < old->stamp)
			old = t;
	}
	if (old->nbits)
		f->st.tl_evictions++;
	*old = rec->t;
	old->ip = rec->ip;
	old->bits = rec->bits;
	old->as = f->as;
	old->nbits = (uint8_t)rec->nbits;
	old->stamp = ++f->tl_clock;
	if (rec->t.nedges)
		f->tl_more[old - f->tl] = rec->more;
}

static void tl_flush(struct ptd_fast *f)
{
	if (f->tl)
		memset(f->tl, 0, TL_SETS * TL_WAYS * sizeof(*f->tl));
}

/*
 * The walk counted conditional branch `r` (after `before`, NULL: none) into the tracelet
 * being recorded, the stretch now at n blocks (r not yet counted) and insns.
 */
static void tl_rec_cond(struct ptd_fast *f, struct tl_rec *rec, const struct run *r,
			const struct run *before, bool before_edge, uint64_t n, uint64_t insns,
			const struct ptd_stretch *st)
{
	if (n - rec->n0 > UINT16_MAX) {
		rec->on = false;	/* (more than a tracelet counts; a stretch has fewer) */
		return;
	}
	rec->took++;
	rec->t.take = (uint8_t)rec->took;
	rec->t.final = (int32_t)(r - f->runs);
	rec->t.pre = n > rec->n0 ? (int32_t)(before - f->runs) : -1;
	rec->t.pre_edge = n > rec->n0 && before_edge;
	rec->t.blocks = (uint16_t)(n - rec->n0);
	rec->t.insns = insns - rec->insns0;
	rec->t.nedges = (uint8_t)rec->nedges;
	if (rec->nedges) {
		/* the range since the last edge: asked at this block, or before it (or
		 * never: no range to ask) */
		rec->more.ask = rec->asked == n;
		rec->more.franged = st->ranged;
		if (st->ranged) {
			rec->more.frange = st->range;
			rec->more.flo = st->lo;
			rec->more.fhi = st->hi;
		}
	}
	if (rec->took == rec->nbits) {
		tl_put(f, rec);
		rec->on = false;
	}
}

/* run_range() where the run holds no answer: ask lim->range (and keep it if it fits). */
static __attribute__((noinline)) int run_range_ask(struct run *r,
						   const struct ptd_stretch_lim *lim,
						   uint64_t *lo, uint64_t *hi)
{
	uint64_t at = r->end_ip;
	int answer;

	*lo = *hi = 0;
	answer = lim->range(lim->ctx, at, lo, hi);
	if (r->fn_state == RUN_FN_ASK)
		return answer;
	r->fn_state = RUN_FN_ASK;
	if (answer >= INT8_MIN && answer <= INT8_MAX && *lo <= at && *hi >= at &&
	    at - *lo <= UINT32_MAX && *hi - at <= UINT32_MAX) {
		r->fn_below = (uint32_t)(at - *lo);
		r->fn_above = (uint32_t)(*hi - at);
		r->fn_answer = (int8_t)answer;
		r->fn_state = RUN_FN_KEPT;
	}
	return answer;
}

/*
 * lim->range's answer for the function of `r`'s last instruction, asked once per run. In
 * line: the stretch asks it after every edge, and a tracelet at its first jump.
 */
static inline int run_range(struct run *r, const struct ptd_stretch_lim *lim, uint64_t *lo,
			    uint64_t *hi)
{
	if (__builtin_expect(r->fn_state == RUN_FN_KEPT, 1)) {
		*lo = r->end_ip - r->fn_below;
		*hi = r->end_ip + r->fn_above;
		return r->fn_answer;
	}
	return run_range_ask(r, lim, lo, hi);
}

/* The tracelet being recorded ends here (cut short where its walk always ends). */
static inline void tl_end(struct ptd_fast *f, struct tl_rec *rec)
{
	if (rec->on) {
		tl_put(f, rec);
		rec->on = false;
	}
}

/* Whether the tracelet being recorded may hold the call or return ending run `r`. */
static inline bool tl_holds(const struct tl_rec *rec, const struct run *r,
			    const struct ptd_stretch_lim *lim)
{
	if (lim->time || rec->nedges >= TL_EDGES)
		return false;
	if (r->kind == RUN_CALL)
		return true;
	/* a return pops a frame of the tracelet, its bit not the last (the final block's) */
	return r->kind == RUN_RET && rec->depth && rec->took + 1 < rec->nbits;
}

/* Whether tracelet `t`'s edges (`m`) fit in the stretch (after `edges`) and may be replayed. */
static bool tl_edges_fit(const struct tracelet *t, const struct tl_more *m,
			 const struct ptd_stretch_lim *lim, unsigned edges)
{
	unsigned k;

	if (lim->time || edges + t->nedges > lim->max_edges)
		return false;
	for (k = 0; k < t->nedges; k++)
		if (m->edge[k].ret && m->edge[k].to >= lim->up_start && m->edge[k].to < lim->up_end)
			return false;
	return true;
}

/*
 * Tracelet `t`'s edges into the stretch's (after `edges`, `insns` its instructions before
 * the tracelet), their pushes and pops on the return stack; the number of edges after.
 */
static unsigned tl_replay(struct ptd_fast *f, const struct tracelet *t, const struct tl_more *m,
			  const struct ptd_stretch_lim *lim, unsigned edges, uint64_t insns)
{
	uint64_t popped;
	unsigned k;

	for (k = 0; k < t->nedges; k++) {
		const struct tl_edge *te = &m->edge[k];
		struct ptd_stretch_edge *e = &lim->edges[edges++];

		if (te->ret)
			retstack_pop(f, &popped);	/* a frame of the tracelet: te->to */
		else if (te->push)
			retstack_push(f, te->pushed);
		e->from = te->from;
		e->to = te->to;
		e->insns = insns + te->insns;
		e->time = 0;
		e->kind = te->ret ? PTD_EDGE_RETURN : PTD_EDGE_CALL;
	}
	return edges;
}

/* The time of an edge (lim->time's answer to ptd_fast_time()'s), asked when that changes. */
struct edge_clock {
	int status;		/* the last answer (1: none yet) */
	uint64_t tsc;
	uint64_t time;		/* and lim->time's to it */
};

static inline uint64_t edge_time(struct ptd_fast *f, const struct ptd_stretch_lim *lim,
				 struct edge_clock *c)
{
	uint32_t lost_mtc, lost_cyc;
	uint64_t tsc = 0;
	int status = pktq_time(f->qry, &tsc, &lost_mtc, &lost_cyc);

	if (status != c->status || tsc != c->tsc) {
		c->status = status;
		c->tsc = tsc;
		c->time = lim->time(lim->ctx, status, tsc);
	}
	return c->time;
}

/* What a stretch did at a disable bound at its last block's branch (take_toggle()). */
struct toggled {
	bool resumed;		/* the disable and the enable after it taken: it goes on (else
				 * it ends at its events: ptd_stretch.event_status) */
	int status;		/* ptd_fast_event()'s answer for the last event taken, or for
				 * the one it fails on (not taken) */
	unsigned events;	/* events taken, their edges in lim->edges */
	uint64_t at;		/* the stretch's blocks up to the last disable taken (its
				 * toggled_last) */
};

/*
 * Whether the stretch may take the disable bound at the branch of run `r` (take_toggle()),
 * with room for its edges after `edges`. Not: ptd_fast_event()'s refusal, a far call's
 * disable (a system call's STOP, after its bytes: HASE's), an event with no time where
 * events have one; the stretch ends with `r`, the event pending.
 */
static inline bool toggle_takes(const struct ptd_fast *f, const struct ptd_stretch_lim *lim,
				const struct run *r, unsigned edges)
{
	return lim->resume && edges + 2 <= lim->max_edges && !f->event.status_update &&
	       (!lim->time || f->event.has_tsc) && r->iclass != ptic_far_call &&
	       r->iclass != ptic_error;
}

/*
 * The disable bound at the branch of run `r`, the stretch's last block, taken as
 * ptd_fast_event() takes it (a STOP edge after `edges`), and the enable it fetches, if
 * that is next and lim->resume agrees (a START edge): kAFL's filters, 340 K pairs on
 * mruby. `insns`, `n`: the stretch's instructions and blocks with `r`. Not in line, `tg`
 * kept in memory: the stretch's loop keeps its registers for the usual block.
 */
static __attribute__((noinline)) void take_toggle(struct ptd_fast *f,
						  const struct ptd_stretch_lim *lim,
						  const struct run *r, uint64_t insns, uint64_t n,
						  unsigned edges, struct toggled *tg)
{
	struct pt_event *ev = &f->event;
	struct ptd_stretch_edge *e = &lim->edges[edges];
	uint64_t tsc = ev->tsc, ip;

	tg->resumed = false;
	tg->events = 0;
	f->enabled = false;
	f->process_event = false;
	tg->status = trailing_event(f, false);
	if (tg->status < 0)
		return;
	e->from = r->end_ip;
	e->to = 0;
	e->insns = insns;
	e->time = lim->time ? lim->time(lim->ctx, 0, tsc) : 0;
	e->kind = PTD_EDGE_STOP;
	tg->events++;
	tg->at = n;
	/* the enable, if next and as ptd_fast_event() takes it ((resumed) is not read) */
	if (!(tg->status & pts_event_pending) || ev->type != ptev_enabled || ev->status_update ||
	    ev->ip_suppressed || (lim->time && !ev->has_tsc))
		return;
	ip = ev->variant.enabled.ip;
	tsc = ev->tsc;
	if (!lim->resume(lim->ctx, ip, tsc, insns))
		return;
	f->ip = ip;
	f->from_link = site_link(f, ip);
	f->enabled = true;
	f->process_event = false;
	tg->status = trailing_event(f, false);
	if (tg->status < 0)
		return;
	e++;
	e->from = 0;
	e->to = ip;
	e->insns = insns;
	e->time = lim->time ? lim->time(lim->ctx, 0, tsc) : 0;
	e->kind = PTD_EDGE_START;
	tg->events++;
	/* an event fetched that binds further on: the next block is taken alone */
	tg->resumed = !(tg->status & (pts_event_pending | pts_eos)) && !f->process_event;
}

int ptd_fast_stretch(struct ptd_fast *f, struct pt_block *b, const struct ptd_stretch_lim *lim,
		     struct ptd_stretch *st)
{
	uint64_t lo = lim->lo, hi = lim->hi, left = lim->max_blocks, ip = 0;
	uint64_t n = 0, insns = 0, linked = 0;
	struct run *r = NULL, *last = NULL;
	struct tl_rec rec;	/* (only .on until a tracelet is recorded) */
	struct edge_clock clock = { .status = 1 };
	bool next = false, keep = false, last_edge = false;
	/* a disable is pending (disable_ahead()): its walk's blocks go on; bound: an event
	 * was fetched, bind_event()'s answer */
	bool walking = false, have_bound = false, binds = false;
	int bound = 0;
	struct toggled tg = { .at = 0 };
	/* [lo, hi) is asked at the next jump: at the start, or after an edge */
	bool need_range = lim->ask_range && lim->range;
	unsigned edges = 0;
	int32_t idx;
	int status = 0, taken;

	rec.on = false;
	st->ip = f->ip;
	st->insns = 0;
	st->blocks = 0;
	st->ranged = false;
	st->nr_edges = 0;
	st->edge_last = false;
	st->events = 0;
	st->toggled_last = false;
	st->event_status = false;
	if (f->process_event || !f->enabled || f->mode != ptem_64bit ||
	    (lim->check_entry && (f->ip < lo || f->ip >= hi)))
		return ptd_fast_next(f, b);
	/* the block PTBPF_FAST_REFUSE refuses goes through ptd_fast_next() */
	if (f->refuse_every && left > f->refuse_every - 1 - f->nexts % f->refuse_every)
		left = f->refuse_every - 1 - f->nexts % f->refuse_every;
	/* f->status has no event pending and no eos here: those end a stretch */
	for (;; n++) {
		if (n == left) {
			next = true;
			break;
		}
		ip = f->ip;
		/* run_here(), its usual case in line: the link of the branch before */
		idx = *f->from_link;
		/*
		 * The usual case (on mruby, 665 K blocks of 10.9 M miss the link). The run
		 * linked is of the address space: a branch's link joins runs of one, and
		 * ptd_fast_set_as() drops the link and empties the site links where it
		 * changes.
		 */
		if (__builtin_expect(idx >= 0 && f->runs[idx].ip == ip, 1)) {
			r = &f->runs[idx];
			linked++;
		} else {
			f->st.lookups++;
			r = run_lookup(f);
			if (!r) {
				status = no_run(f);
				keep = true;
				break;
			}
		}
		/* where the walk to a disable stops: the block where it binds at its branch
		 * is the stretch's (its branch makes no event: the disable follows at once),
		 * another goes to ptd_fast_next() */
		if (walking) {
			enum walk_step step = disable_step(f, r);

			if (step == WALK_STEP_TRACE) {
				if (r->kind == RUN_ICALL)
					retstack_push(f, r->end_ip + r->size);
				disable_resume_ip(f, r);
				insns += r->ninsn;
				last = r;
				last_edge = false;
				if (!toggle_takes(f, lim, r, edges)) {
					binds = true;
					n++;
					break;
				}
				take_toggle(f, lim, r, insns, n + 1, edges, &tg);
				status = tg.status;
				edges += tg.events;
				st->events += tg.events;
				if (tg.resumed) {
					/* as after an edge: the function is asked at the next jump;
					 * the edges' time asked again */
					walking = have_bound = false;
					need_range = lim->range != NULL;
					st->ranged = false;
					clock.status = 1;
					continue;
				}
				st->event_status = true;
				n++;
				break;
			}
			if (step != WALK_STEP_THROUGH) {
				next = true;
				break;
			}
		}
		/*
		 * A tracelet from a conditional branch: its bit is the tracelet's first, and
		 * the query that fails there fails for the tracelet (pktq_cond_take() below).
		 * Where the range is still to be asked (at the start, or after an edge), it
		 * asks it as the walk does: it is keyed without one.
		 */
		if (f->tl_on && !rec.on && r->kind == RUN_COND && !walking) {
			const struct tracelet *t;
			const struct tl_more *m;
			uint64_t bits;
			unsigned nbits;

			if (r->tl_short >= TL_SHORT_MAX) {
				r->tl_short++;	/* not here (until it wraps) */
			} else if (pktq_cond_bits(f->qry, &bits, &nbits) < 0) {
				f->tl_on = false;	/* libipt's engine: no bulk bits */
			} else if (!nbits) {
				tl_note(r, false);
			} else {
				f->st.tl_lookups++;
				t = tl_find(f, ip, bits, nbits, need_range ? 0 : lo,
					    need_range ? 0 : hi, need_range);
				m = t && t->nedges ? &f->tl_more[t - f->tl] : NULL;
				if (t && n + t->blocks < left &&
				    (!m || tl_edges_fit(t, m, lim, edges))) {
					/*
					 * Its bits: where reading their packet fails, the first
					 * bit's query (this block's) fails the same way, with
					 * nothing taken (pktq.h).
					 */
					status = pktq_cond_take(f->qry, t->take);
					if (status < 0)
						goto final_block;
					/* its blocks before the final one go as a sum */
					tl_note(r, t->blocks >= TL_PAYS_BLOCKS);
					f->st.tl_hits++;
					f->st.tl_blocks += t->blocks + 1;
					/* counted as the runs found they stand for (this one is) */
					linked += t->blocks;
					n += t->blocks;
					if (need_range && t->blocks) {
						/* asked at its first block as the walk did (the
						 * answer is the run's: the same) */
						need_range = false;
						st->ranged = true;
						st->range = run_range(r, lim, &lo, &hi);
						st->lo = lo;
						st->hi = hi;
					}
					if (m) {
						edges = tl_replay(f, t, m, lim, edges, insns);
						/* the range since its last edge */
						need_range = m->ask;
						st->ranged = !m->ask && m->franged;
						if (st->ranged) {
							st->range = m->frange;
							lo = st->lo = m->flo;
							hi = st->hi = m->fhi;
						}
					}
					insns += t->insns;
					if (t->pre >= 0) {
						last = &f->runs[t->pre];
						last_edge = t->pre_edge;
					}
					r = &f->runs[t->final];
					ip = f->ip = r->ip;
					f->from_link = &f->no_link;
					taken = (int)((t->bits >> (t->take - 1)) & 1);
					goto final_block;
				}
				if (!t) {
					rec.on = true;
					rec.start = (int32_t)(r - f->runs);
					rec.ip = ip;
					rec.bits = bits;
					rec.nbits = nbits;
					rec.took = 0;
					rec.nedges = 0;
					rec.depth = 0;
					rec.asked = UINT64_MAX;
					rec.t.take = 0;
					rec.t.nedges = 0;
					rec.n0 = n;
					rec.insns0 = insns;
					rec.flushes = f->st.flushes;
					rec.t.lo = need_range ? 0 : lo;
					rec.t.hi = need_range ? 0 : hi;
					rec.t.asks = need_range;
				}
			}
		}
		if (r->kind == RUN_COND) {
			status = next_bit(f, &taken);
final_block:
			status = take_cond(f, r, status, taken);
			if (status < 0 || (f->status & (pts_event_pending | pts_eos))) {
				if (!disable_ahead(f, status, &have_bound, &bound))
					break;
				/* this block counts, the blocks up to where the disable binds
				 * follow (a tracelet recorded up to here is dropped, as where
				 * the event ends the stretch) */
				walking = true;
				rec.on = false;
			}
		} else if (r->kind == RUN_JUMP) {
			f->ip = r->target;
			follow(f, r, 0);
		} else if (r->kind == RUN_INDIRECT && r->iclass == ptic_jump) {
			/*
			 * An indirect jump: a jump whose target a TIP tells. A tracelet ends
			 * before it (its walk always reaches it; where it goes, no TNT bit says).
			 */
			tl_end(f, &rec);
			status = indirect_trace(f, r);
			if (status < 0 || (f->status & (pts_event_pending | pts_eos))) {
				if (!disable_ahead(f, status, &have_bound, &bound))
					break;
				walking = true;
			}
		} else if ((r->kind == RUN_CALL || r->kind == RUN_ICALL || r->kind == RUN_RET) &&
			   edges < lim->max_edges) {
			struct ptd_stretch_edge *e = &lim->edges[edges];
			bool compressed;

			/* a tracelet it cannot hold ends before it (its walk always reaches it) */
			if (rec.on && !tl_holds(&rec, r, lim))
				tl_end(f, &rec);
			if (r->kind == RUN_CALL) {
				e->time = 0;
				if (lim->time && !(e->time = edge_time(f, lim, &clock))) {
					status = 1;	/* the block is handed back */
					keep = true;
					break;
				}
				if (r->push)
					retstack_push(f, r->end_ip + r->size);
				f->ip = r->target;
				follow(f, r, 0);
			} else {
				/*
				 * An indirect call or a return (compressed or not) goes on with no
				 * event or status after its bit or TIP, a return not into the
				 * [uprobes] trampoline; else its block, its trace taken, is handed
				 * back as block_run() leaves it.
				 */
				if (r->kind == RUN_ICALL) {
					retstack_push(f, r->end_ip + r->size);
					status = indirect_trace(f, r);
				} else {
					status = next_bit(f, &taken);
					status = ret_trace(f, r, status, taken, &compressed);
					/* (while a tracelet is recorded, a TNT bit is pending) */
					if (!compressed)
						tl_end(f, &rec);
				}
				if (r->kind == RUN_RET && f->ip >= lim->up_start && f->ip < lim->up_end) {
					tl_end(f, &rec);
					break;
				}
				if (status < 0 || (f->status & (pts_event_pending | pts_eos))) {
					tl_end(f, &rec);
					if (!disable_ahead(f, status, &have_bound, &bound))
						break;
					walking = true;
				}
				e->time = 0;
				if (lim->time && !(e->time = edge_time(f, lim, &clock)))
					break;
			}
			e->from = r->end_ip;
			e->to = f->ip;
			e->kind = r->kind == RUN_RET ? PTD_EDGE_RETURN : PTD_EDGE_CALL;
			insns += r->ninsn;
			e->insns = insns;
			edges++;
			if (rec.on) {
				struct tl_edge *te = &rec.more.edge[rec.nedges++];

				te->from = e->from;
				te->to = e->to;
				te->insns = (uint32_t)(insns - rec.insns0);
				te->ret = r->kind == RUN_RET;
				te->push = r->kind == RUN_CALL && r->push;
				te->pushed = r->end_ip + r->size;
				if (te->ret) {
					rec.depth--;
					rec.took++;	/* the return's bit */
				} else {
					rec.depth += te->push;
				}
			}
			/* the function changes: [lo, hi) is asked again at the next jump */
			need_range = lim->range != NULL;
			st->ranged = false;
			last = r;
			last_edge = true;
			continue;
		} else {
			status = 1;	/* not a jump: the block is handed back */
			keep = true;
			break;
		}
		if (need_range) {
			need_range = false;
			st->ranged = true;
			st->range = run_range(r, lim, &lo, &hi);
			st->lo = lo;
			st->hi = hi;
			rec.asked = n;
			if (st->range < 0)
				break;
		}
		if (f->ip < lo || f->ip >= hi) {
			keep = true;
			break;
		}
		if (rec.on && r->kind == RUN_COND)
			tl_rec_cond(f, &rec, r, last, last_edge, n, insns, st);
		insns += r->ninsn;
		last = r;
		last_edge = false;
	}
	/* a tracelet cut short where its walk always ends (not by max_blocks or an event) */
	if (rec.on && keep)
		tl_put(f, &rec);
	f->st.lookups += linked;
	f->st.hits += linked;
	f->st.linked += linked;
	if (f->refuse_every)
		f->nexts += n + !(next || binds || st->event_status);
	st->insns = insns;
	st->blocks = n;
	st->nr_edges = edges;
	st->edge_last = last_edge;
	st->toggled_last = st->events && tg.at == n;
	if (last) {
		st->end_ip = last->end_ip;
		st->isid = last->isid;
		st->iclass = (enum pt_insn_class)last->iclass;
	}
	if (next)
		return ptd_fast_next(f, b);
	/* the block handed back, as ptd_fast_next() makes it */
	memset(b, 0, sizeof(*b));
	b->ip = ip;
	b->mode = f->mode;
	b->speculative = f->speculative;
	/* a disable binds at the last block's branch: no block, the event is next (or was
	 * taken) */
	if (binds || st->event_status) {
		b->ip = f->ip;
		return binds ? blk_status(f, pts_event_pending) : status;
	}
	if (!r)
		return status;
	if (status > 0)
		status = block_run(f, b, r);
	else
		add_run(b, r, r->ninsn, r->end_ip, r->iclass);
	if (status < 0)
		return status;
	/* (bind_event() again would fetch again where it failed) */
	if (have_bound)
		return bound;
	return trailing_event(f, true);
}

/* As pt_blk_event, with its checks and their errors. */
int ptd_fast_event(struct ptd_fast *f, struct pt_event *out)
{
	struct pt_event *ev = &f->event;

	if (!f->process_event)
		return -pte_bad_query;
	switch (ev->type) {
	case ptev_enabled:
		if (ev->status_update || f->enabled)
			return -pte_bad_context;
		if (ev->ip_suppressed)
			return -pte_noip;
		if (ev->variant.enabled.ip == f->ip)
			ev->variant.enabled.resumed = 1;
		f->ip = ev->variant.enabled.ip;
		f->from_link = site_link(f, f->ip);
		f->enabled = true;
		break;
	case ptev_async_disabled:
		if (f->ip != ev->variant.async_disabled.at)
			return -pte_bad_query;
		/* fall through */
	case ptev_disabled:
		if (ev->status_update || !f->enabled)
			return -pte_bad_context;
		f->enabled = false;
		break;
	case ptev_async_branch:
		if (f->ip != ev->variant.async_branch.from)
			return -pte_bad_query;
		if (ev->status_update || !f->enabled)
			return -pte_bad_context;
		f->ip = ev->variant.async_branch.to;
		f->from_link = &f->no_link;
		break;
	case ptev_async_paging:
		if (!ev->ip_suppressed && f->ip != ev->variant.async_paging.ip)
			return -pte_bad_query;
		break;
	case ptev_async_vmcs:
		if (!ev->ip_suppressed && f->ip != ev->variant.async_vmcs.ip)
			return -pte_bad_query;
		break;
	case ptev_paging:
	case ptev_vmcs:
		/* images have no asid here: the new cr3/vmcs changes no code read */
		break;
	case ptev_tsx:
		if (!ev->ip_suppressed && f->ip != ev->variant.tsx.ip)
			return -pte_bad_query;
		f->speculative = ev->variant.tsx.speculative;
		break;
	case ptev_overflow:
		if (ev->status_update)
			return -pte_bad_context;
		f->enabled = !ev->ip_suppressed;
		f->ip = ev->ip_suppressed ? 0 : ev->variant.overflow.ip;
		f->speculative = false;
		f->from_link = &f->no_link;
		break;
	case ptev_exec_mode:
		if (!ev->ip_suppressed && f->ip != ev->variant.exec_mode.ip)
			return -pte_bad_query;
		if (ev->status_update && f->enabled && f->mode != ptem_unknown &&
		    f->mode != ev->variant.exec_mode.mode)
			return -pte_bad_status_update;
		f->mode = ev->variant.exec_mode.mode;
		break;
	case ptev_stop:
		if (ev->status_update || f->enabled)
			return -pte_bad_context;
		break;
	case ptev_exstop:
		if (!ev->ip_suppressed && f->enabled && f->ip != ev->variant.exstop.ip)
			return -pte_bad_query;
		break;
	case ptev_mwait:
		if (!ev->ip_suppressed && f->enabled && f->ip != ev->variant.mwait.ip)
			return -pte_bad_query;
		break;
	case ptev_pwre:
	case ptev_pwrx:
	case ptev_ptwrite:
	case ptev_tick:
	case ptev_cbr:
	case ptev_mnt:
		break;
	default:
		return FALLBACK(f);
	}
	f->process_event = false;
	*out = *ev;
	return trailing_event(f, false);
}

/* ---------------------------------------------------------------- sync */

static void fast_reset(struct ptd_fast *f)
{
	f->mode = ptem_unknown;
	f->ip = 0;
	f->status = 0;
	f->enabled = false;
	f->process_event = false;
	f->speculative = false;
	memset(&f->event, 0, sizeof(f->event));
	f->top = f->bottom = 0;
	f->from_link = &f->no_link;
}

static int fast_start(struct ptd_fast *f, int status)
{
	if (status < 0)
		return status;
	f->status = status;
	if (!(status & pts_ip_suppressed))
		f->enabled = true;
	return trailing_event(f, false);
}

int ptd_fast_sync_forward(struct ptd_fast *f)
{
	fast_reset(f);
	return fast_start(f, pktq_sync_forward(f->qry, &f->ip));
}

int ptd_fast_sync_set(struct ptd_fast *f, uint64_t offset)
{
	fast_reset(f);
	return fast_start(f, pktq_sync_set(f->qry, &f->ip, offset));
}

int ptd_fast_get_offset(const struct ptd_fast *f, uint64_t *offset)
{
	return pktq_get_offset(f->qry, offset);
}

int ptd_fast_get_sync_offset(const struct ptd_fast *f, uint64_t *offset)
{
	return pktq_get_sync_offset(f->qry, offset);
}

int ptd_fast_time(struct ptd_fast *f, uint64_t *time, uint32_t *lost_mtc, uint32_t *lost_cyc)
{
	return pktq_time(f->qry, time, lost_mtc, lost_cyc);
}

void ptd_fast_set_as(struct ptd_fast *f, int as)
{
	/*
	 * A site link is by ip alone, and another process may have other code at the
	 * same ip (test_capture_same_ip_other_image): they hold runs of one address space,
	 * so that the stretch need not compare it for every block. (An address space
	 * changes at a context switch; emptying 8 KiB is little beside one.)
	 */
	if (as != f->as) {
		f->from_link = &f->no_link;
		site_links_clear(f);
	}
	f->as = as;
}

uint64_t ptd_fast_ip(const struct ptd_fast *f)
{
	return f->ip;
}

bool ptd_fast_event_waits(const struct ptd_fast *f)
{
	/* ptd_fast_stretch() hands such a block to ptd_fast_next() at once */
	return f->process_event;
}

void ptd_fast_stats(const struct ptd_fast *f, struct ptd_fast_stats *st)
{
	*st = f->st;
}

/* Frees a fast decoder's cache and itself (its stream's state is gone already). */
static void fast_destroy(struct ptd_fast *f)
{
	if (f->cs_open)
		f->csf->close(&f->cs);
	free(f->runs);
	free(f->hash);
	free(f->lens);
	free(f->tl);
	free(f->tl_more);
	free(f);
}

/* (fastpath.h) A copy of the zero page and its TLB flush took ~20 us on a virtual machine. */
void *ptd_zalloc_written(size_t size)
{
	volatile uint8_t *p = calloc(1, size);
	size_t i;

	/* a write a page (calloc() and a memset() after malloc() leave them to the zero page) */
	for (i = 0; p && i < size; i += 4096)
		p[i] = 0;
	return (void *)p;
}

/*
 * A fast decoder of a stream that ended, its state reset and its cache kept (the runs of
 * an address space and ip are the same for every stream of the decode); NULL: none.
 */
static struct ptd_fast *fast_recycled(struct ptd_images *im, struct ptd_run_store **store)
{
	struct ptd_fast *f = NULL, keep;

	pthread_mutex_lock(&im->lock);
	if (!im->run_store)
		im->run_store = ptd_zalloc_written(sizeof(*im->run_store));
	*store = im->run_store;
	if (*store && (*store)->nr_pool) {
		struct ptd_run_store *st = *store;
		/*
		 * The one this thread used last, if any: its cache's lines are in this core's
		 * cache, where another thread's are in its core's (a split stream's pieces)
		 */
		unsigned k = st->nr_pool - 1, i;

		for (i = 0; i < st->nr_pool; i++)
			if (pthread_equal(st->pool_thread[i], pthread_self()))
				k = i;
		f = st->pool[k];
		st->nr_pool--;
		st->pool[k] = st->pool[st->nr_pool];
		st->pool_thread[k] = st->pool_thread[st->nr_pool];
	}
	pthread_mutex_unlock(&im->lock);
	if (!f)
		return NULL;
	keep = *f;
	memset(f, 0, sizeof(*f));
	f->runs = keep.runs;
	f->nr_runs = keep.nr_runs;
	f->hash = keep.hash;
	f->lens = keep.lens;
	f->nr_lens = keep.nr_lens;
	f->tl = keep.tl;
	f->tl_more = keep.tl_more;
	f->tl_clock = keep.tl_clock;
	f->csf = keep.csf;
	f->cs = keep.cs;
	f->cs_open = keep.cs_open;
	return f;
}

/* PTBPF_TRACELETS=0: stretches walk block by block (the tests' comparison). */
static bool tracelets_wanted(void)
{
	const char *e = getenv("PTBPF_TRACELETS");

	return !e || strcmp(e, "0");
}

struct ptd_fast *ptd_fast_new(const struct pt_config *cfg, struct ptd_images *im)
{
	struct ptd_run_store *store;
	struct ptd_fast *f = fast_recycled(im, &store);

	if (!f) {
		f = calloc(1, sizeof(*f));
		if (!f)
			return NULL;
		f->runs = aligned_alloc(64, RUN_CACHE_RUNS * sizeof(*f->runs));
		f->hash = ptd_zalloc_written(RUN_HASH_SLOTS * sizeof(*f->hash));
		f->lens = malloc(LENS_POOL);
		if (tracelets_wanted())
			f->tl = ptd_zalloc_written(TL_SETS * TL_WAYS * sizeof(*f->tl));
	}
	f->cfg = *cfg;
	f->im = im;
	f->store = store;
	f->as = -1;
	f->no_link = -1;
	f->from_link = &f->no_link;
	site_links_clear(f);
	/* the block decoder's queries: the same config, no flags of its own */
	f->qry = pktq_new(cfg, pktq_engine_from_env());
	if (!f->qry || !f->runs || !f->hash || !f->lens) {
		ptd_fast_free(f);
		return NULL;
	}
	/* (none with libipt's engine: it has no bulk bits; a failed allocation: none) */
	f->tl_on = f->tl && pktq_engine_of(f->qry) != PKTQ_LIBIPT;
	if (getenv("PTBPF_FAST_REFUSE"))
		f->refuse_every = strtoull(getenv("PTBPF_FAST_REFUSE"), NULL, 10);
	return f;
}

int ptd_fast_set_end(struct ptd_fast *f, const struct pt_config *cfg)
{
	struct pktq *qry = pktq_new(cfg, pktq_engine_from_env());

	if (!qry)
		return -pte_nomem;
	pktq_free(f->qry);
	f->qry = qry;
	f->cfg = *cfg;
	f->as = -1;
	fast_reset(f);
	return 0;
}

void ptd_fast_free(struct ptd_fast *f)
{
	struct ptd_run_store *st;

	if (!f)
		return;
	/* the stream's state */
	pktq_free(f->qry);
	f->qry = NULL;
	/* the cache: for the decode's next fast decoder, if there is room */
	st = f->store;
	if (st && f->runs && f->hash && f->lens) {
		struct ptd_images *im = f->im;
		bool kept = false;

		pthread_mutex_lock(&im->lock);
		if (st->nr_pool < FAST_POOL) {
			st->pool_thread[st->nr_pool] = pthread_self();
			st->pool[st->nr_pool++] = f;
			kept = true;
		}
		pthread_mutex_unlock(&im->lock);
		if (kept)
			return;
	}
	fast_destroy(f);
}

void ptd_run_store_free(struct ptd_run_store *st)
{
	uint32_t h;

	if (!st)
		return;
	for (h = 0; h < STORE_SLOTS; h++)
		free(atomic_load_explicit(&st->slot[h], memory_order_relaxed));
	while (st->nr_pool)
		fast_destroy(st->pool[--st->nr_pool]);
	free(st);
}
