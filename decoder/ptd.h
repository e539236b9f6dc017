/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Internals of the PT decoder (decoder/decode.c, image.c, raw.c, symbolizer.c, output.c).
 * Not a public header: libipt's types and its -pte_* error space stay behind it.
 *
 * Data flow:
 *   image.c   address spaces (one libipt image each) over one image section cache
 *   decode.c  one stream per CPU (or per thread buffer): libipt block decoder -> events
 *             (struct ptd_event), chunked so several streams can decode in parallel;
 *             a merger hands the events to a sink in a deterministic order
 *   output.c  sinks: the call-stack builder (FXT / text), a perf-script-like call list
 *   symbolizer.c address -> function for the call-stack builder and for jump detection
 */
#ifndef PTBPF_DECODER_PTD_H
#define PTBPF_DECODER_PTD_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <intel-pt.h>

#include "callstack.h"
#include "ptdecode.h"

struct symbols;
struct ptd_run_store;

/* ---------------------------------------------------------------- events */

enum ptd_kind {
	PTD_CALL = 1,		/* near call at `from` to `to` */
	PTD_RETURN,		/* near return at `from` landed at `to` */
	PTD_JUMP,		/* a jump at `from` left its function for `to` */
	PTD_START,		/* tracing (re)started at `to` */
	PTD_STOP,		/* tracing stopped; `from` is the last instruction, `reason` why,
				 * `to` where the program goes on if nothing else (signal
				 * delivery, exec) intervenes, 0 if unknown */
	PTD_ERROR,		/* decode error `code` at trace `offset`, last ip `from` */
	PTD_OVERFLOW,		/* OVF at trace `offset`; tracing resumed at `to` (0: no) */
	PTD_SWITCH_IN,		/* the thread was scheduled in on this CPU */
	PTD_SWITCH_OUT,		/* the thread was scheduled out */
	PTD_TRIGGER,		/* the capture's trigger fired on this thread (sideband) */
	PTD_COMM,		/* the thread got a name (sideband): `code` indexes names */
	PTD_GAP,		/* the kernel flagged lost or damaged trace on this thread's
				 * CPU (sideband PERF_RECORD_AUX): `code` holds the
				 * PERF_AUX_FLAG_* bits; the stack restarts after it */
};

/* One control-flow event of one thread, in the order its stream produced it. */
struct ptd_event {
	uint64_t time;		/* perf clock ns (capture) or ns from the raw TSC */
	uint64_t from;		/* source ip (branch instruction), 0 if none */
	uint64_t to;		/* destination ip, 0 if unknown */
	uint64_t offset;	/* PT byte offset in the stream's buffer (ERROR, OVERFLOW) */
	uint32_t pid, tid;	/* thread the event belongs to */
	uint32_t asid;		/* address space the ips belong to (index in ptd_images) */
	uint16_t kind;		/* enum ptd_kind */
	uint16_t reason;	/* STOP: enum cs_stop_reason; COMM: 1 if the thread exec'd */
	int32_t code;		/* ERROR: libipt error code (negative); COMM/TRIGGER: index */
	uint32_t cpu;		/* index of the producing stream (merge tie-break) */
};

/*
 * Receives the merged events, in time order per thread: `n` (at least 1) at a time, as
 * runs of them come from one stream, so that the per-event cost is the sink's loop only.
 */
struct ptd_sink {
	int (*events)(void *ctx, const struct ptd_event *ev, size_t n);
	void *ctx;
};

/* ---------------------------------------------------------------- images */

/* One mapping of an address space, sorted by start. */
struct ptd_map {
	uint64_t start, end;	/* virtual address range [start, end) */
	uint64_t pgoff;		/* file offset mapped at start */
	uint64_t bias;		/* run-time = link-time address + bias (ELF files) */
	int isid;		/* libipt section id in the iscache, 0 if not loaded */
	uint32_t dso;		/* index into ptd_images.dsos, UINT32_MAX for none */
	bool exec;		/* executable mapping */
	bool uprobes;		/* the kernel's [uprobes] page (uretprobe trampoline) */
	bool bias_valid;	/* bias is set (raw ELF, or computed by the symbolizer) */
	bool bias_known;	/* ... from the file's program headers (else 0, a guess) */
};

/* A file whose code or symbols we use, shared by every mapping of it. */
struct ptd_dso {
	char *name;		/* as the capture names it (MMAP2 filename) */
	char *path;		/* file read (sysroot, build-id cache...), NULL: missing */
	uint8_t build_id[20];	/* from MMAP2 or the file, valid if build_id_size */
	uint8_t build_id_size;
	bool warned;		/* "missing binary" already reported */
	bool kernel;		/* kernel code (kcore copy) */
};

/* One address space: a process between two execs, or the kernel. */
struct ptd_aspace {
	uint32_t pid;		/* owning process (any value a capture holds) */
	bool kernel;		/* the kernel's (kcore copy): no process finds it by pid */
	uint64_t start_time;	/* valid from this time on (exec / fork / first mmap) */
	struct ptd_map *maps;	/* sorted by start, non-overlapping */
	uint32_t nr_maps;
	struct pt_image *image;	/* libipt image of the executable maps (built lazily) */
	bool built;		/* image holds every exec map */
};

struct ptd_images {
	struct pt_image_section_cache *iscache;
	struct ptd_aspace *as;		/* address spaces, in creation order */
	uint32_t nr_as, cap_as;
	struct ptd_dso *dsos;
	uint32_t nr_dsos, cap_dsos;
	const char *sysroot;		/* prefix for file names, NULL for none */
	const char *debug_dir;		/* build-id cache, NULL: ~/.debug */
	int kernel_as;			/* address space index of the kernel, -1 if none */
	int memfds[8];			/* in-memory files (vDSO, trampoline) */
	int nr_memfds;
	pthread_mutex_t lock;		/* image building from decoder threads */
	bool strict;			/* missing binaries are errors */
	struct ptd_run_store *run_store;	/* the fast path's runs, shared (fastpath.c) */
};

int ptd_images_init(struct ptd_images *im, const char *sysroot, const char *debug_dir,
		    bool strict);
void ptd_images_fini(struct ptd_images *im);
/* New, empty address space for `pid` valid from `time`; returns its index or -errno. */
int ptd_aspace_new(struct ptd_images *im, uint32_t pid, uint64_t time);
/* New address space copying `parent`'s mappings (fork). */
int ptd_aspace_fork(struct ptd_images *im, uint32_t parent, uint32_t pid, uint64_t time);
/* The address space of `pid` at `time` (the newest started at or before it), or -ENOENT. */
int ptd_aspace_find(const struct ptd_images *im, uint32_t pid, uint64_t time);
/* As ptd_aspace_find(), and the times [from, until) around `time` it answers the same for. */
int ptd_aspace_find_span(const struct ptd_images *im, uint32_t pid, uint64_t time,
			 uint64_t *from, uint64_t *until);
/*
 * Add a file mapping (MMAP2) to address space `as`. `name` is the capture's file name;
 * "[vdso]" takes the capture's vDSO bytes, "[uprobes]" a synthetic trampoline.
 */
int ptd_aspace_map_file(struct ptd_images *im, int as, const char *name, uint64_t start,
			uint64_t len, uint64_t pgoff, bool exec, const uint8_t *build_id,
			uint8_t build_id_size);
/* The kernel: the PT_LOAD segments of a kcore copy, in an address space of its own that
 * every other one includes, with those of `bpf_jit` (NULL: none), the BPF programs' JIT
 * images a capture recorded beside it (user/pt/kcore.h, kcore_add_bpf_jit()). */
int ptd_images_add_kcore(struct ptd_images *im, const char *kcore, const char *bpf_jit);
/* Raw-mode images (ptxed --elf / --raw). */
int ptd_aspace_map_elf(struct ptd_images *im, int as, const char *path, uint64_t base);
int ptd_aspace_map_raw(struct ptd_images *im, int as, const char *path, uint64_t from,
		       uint64_t to, uint64_t vaddr);
/* Build the libipt image of `as` now (thread-safe); 0 or -errno (-ENOENT: --strict). */
int ptd_images_build(struct ptd_images *im, int as);
/* The libipt image of `as`, building it on first use (thread-safe). NULL on failure. */
struct pt_image *ptd_aspace_image(struct ptd_images *im, int as);
/* The file of a dso, looked up (sysroot, build-id cache) on first use; NULL: missing. */
const char *ptd_dso_path(struct ptd_images *im, uint32_t dso);
/* The executable (or, with debuginfo, the debug file) of a build-id from the debuginfod
 * servers of DEBUGINFOD_URLS; *path is allocated. -ENOSYS when none is set. */
int ptd_debuginfod_find(bool debuginfo, const uint8_t *build_id, uint32_t size, char **path);
/* Whether an ELF file has a .symtab (a stripped one has at most .dynsym). */
bool ptd_elf_has_symtab(const char *path);
/* The mapping of `as` holding `addr`, or NULL. */
const struct ptd_map *ptd_aspace_lookup(const struct ptd_images *im, int as, uint64_t addr);
/* The vDSO bytes ("[vdso]" mappings use them). */
void ptd_images_set_vdso(struct ptd_images *im, const void *bytes, size_t size);

/* ---------------------------------------------------------------- symbols */

struct symbols *symbols__new(struct ptd_images *im, const char *debug_dir);
void symbols__free(struct symbols *sy);
/*
 * The function holding `addr` in address space `as`: 0 and its [start, end); 1 and the
 * range between functions (or the mapping, without symbols) that holds it; -ENOENT if
 * nothing is mapped there. Read-only and lock-free once symbols__preload() ran: used
 * from decoder threads.
 */
int symbols__func_range(struct symbols *sy, int as, uint64_t addr, uint64_t *start,
			uint64_t *end);
/*
 * The same answers through a cache of one decoder thread's own (not shared between
 * threads; bounded: a fixed number of slots, the last answer per slot). A NULL cache
 * asks symbols__func_range() each time.
 */
struct symbols_range_cache;
struct symbols_range_cache *symbols__range_cache_new(void);
void symbols__range_cache_free(struct symbols_range_cache *c);

/*
 * The cache is direct-mapped; its slots are seen here so that a hit (~97 % of lookups on
 * mruby, a million a second) costs a hash and a compare in line, not a call.
 */
#define SYMBOLS_RANGE_CACHE_SLOTS 512	/* a power of two: 16 KiB */

struct symbols_range_slot {
	uint64_t addr;
	uint64_t start, end;
	int32_t as_plus1;	/* the address space + 1; 0: empty slot */
	int32_t result;		/* what symbols__func_range() returned */
};

struct symbols_range_cache {
	struct symbols_range_slot slot[SYMBOLS_RANGE_CACHE_SLOTS];
	uint64_t lookups, hits;
};

/* The one slot that may hold the answer for (as, addr). */
static inline struct symbols_range_slot *symbols__range_slot(struct symbols_range_cache *c,
							     int as, uint64_t addr)
{
	return &c->slot[((addr * 0x9e3779b97f4a7c15ull) >> 40 ^ (uint64_t)as) &
			(SYMBOLS_RANGE_CACHE_SLOTS - 1)];
}

/* symbols__func_range_cached() when the slot does not hold the answer: asks and fills it. */
int symbols__func_range_fill(struct symbols *sy, struct symbols_range_cache *c, int as,
			     uint64_t addr, uint64_t *start, uint64_t *end);

static inline int symbols__func_range_cached(struct symbols *sy, struct symbols_range_cache *c,
					     int as, uint64_t addr, uint64_t *start,
					     uint64_t *end)
{
	const struct symbols_range_slot *e;

	if (!c || as < 0 || as == INT32_MAX)
		return symbols__func_range(sy, as, addr, start, end);
	c->lookups++;
	e = symbols__range_slot(c, as, addr);
	if (e->as_plus1 != as + 1 || e->addr != addr)
		return symbols__func_range_fill(sy, c, as, addr, start, end);
	c->hits++;
	*start = e->start;
	*end = e->end;
	return e->result;
}

/* Lookups made through the cache, and how many it answered. */
void symbols__range_cache_stats(const struct symbols_range_cache *c, uint64_t *lookups,
				uint64_t *hits);
/* Kernel text symbols from a kallsyms copy; 0, -errno, or -ENODATA (no text symbols). */
int symbols__load_kallsyms(struct symbols *sy, const char *path);
/* Loads every symbol table the address spaces need (before decoder threads start). */
int symbols__preload(struct symbols *sy);
/* Demangled name of the function at `addr` (or "binary+0xoff"), cached; single thread. */
int symbols__lookup(struct symbols *sy, int as, uint64_t addr, struct cs_symbol *out);

/* ---------------------------------------------------------------- streams */

/* Where the thread attribution of a stream comes from. */
struct ptd_sched {
	uint64_t time;		/* from this time on (perf ns)... */
	uint32_t pid, tid;	/* ...this thread runs on the stream's CPU */
	bool out;		/* a switch-out: nothing of ours runs after it */
};

/* Time conversion TSC -> ns. */
struct ptd_clock {
	uint16_t shift;		/* perf: time_shift */
	uint32_t mult;		/* perf: time_mult; 0: use ns_per_tick */
	uint64_t zero;		/* perf: time_zero */
	double ns_per_tick;	/* raw mode with --tsc-hz; 1.0 = ticks as ns */
	bool short_cyc;		/* cap_user_time_short */
	uint64_t cycles, mask;	/* for short_cyc */
};

uint64_t ptd_clock_ns(const struct ptd_clock *c, uint64_t tsc);

/* A stretch of a stream's PT, [begin, end): from a PSB to a PSB (or the end). */
struct ptd_range {
	uint64_t begin, end;
};

/* A PSB of a stream: its trace offset and the time of its PSB+ (0: no TSC in it). */
struct ptd_psb {
	uint64_t offset;
	uint64_t time;
};

/*
 * The PSBs of `buf` that start in [from, to), with their times, in order (found by
 * their byte pattern, checked and timed with libipt's packet decoder). *out is
 * malloc'ed. 0 or -errno.
 */
int ptd_psb_index(const uint8_t *buf, size_t size, const struct pt_config *cfg,
		  const struct ptd_clock *clock, uint64_t from, uint64_t to, struct ptd_psb **out,
		  size_t *nr);
/* libipt's packet decoder over `buf` with `cfg`'s cpu and timing; NULL if refused. */
struct pt_packet_decoder *ptd_pkt_open(const uint8_t *buf, size_t size,
				       const struct pt_config *cfg);
/* The first PSB at or after `from`: 0, -ENOENT if there is none, or -errno. */
int ptd_psb_next(const uint8_t *buf, size_t size, const struct pt_config *cfg,
		 const struct ptd_clock *clock, uint64_t from, struct ptd_psb *psb);
/* A stream's bytes for the two above: in memory, and in a file (fd >= 0) at file_off. */
struct ptd_psb_src {
	const uint8_t *buf;
	size_t size;
	int fd;
	uint64_t file_off;
};
/* The same, read from the file when there is one (see scan() in psb.c). */
int ptd_psb_src_index(const struct ptd_psb_src *src, const struct pt_config *cfg,
		      const struct ptd_clock *clock, uint64_t from, uint64_t to,
		      struct ptd_psb **out, size_t *nr);
int ptd_psb_src_next(const struct ptd_psb_src *src, const struct pt_config *cfg,
		     const struct ptd_clock *clock, uint64_t from, struct ptd_psb *psb);

struct ptd_stream_opts {
	const uint8_t *buf;		/* PT bytes */
	size_t size;
	struct pt_config config;	/* cpu, errata, mtc_freq...: everything but buffer */
	struct ptd_clock clock;
	struct ptd_images *images;
	struct symbols *symbols;	/* jump classification, NULL: report no jumps */
	const struct ptd_sched *sched;	/* thread timeline of this CPU, sorted by time */
	size_t nr_sched;
	uint32_t fixed_pid, fixed_tid;	/* with no timeline: the thread of every event */
	int fixed_as;			/* with no timeline: the address space, -1: by pid */
	const struct ptd_range *ranges;	/* decode only these, each starting at a PSB, in
					 * order; NULL: all of buf */
	size_t nr_ranges;
	bool (*selected)(void *ctx, uint32_t pid, uint32_t tid);	/* events of other
					 * threads are dropped; NULL: all threads */
	void *selected_ctx;
	uint32_t index;			/* stream number, for the merge tie-break */
	bool timeless;			/* no usable time: order by position only */
	bool fast;			/* decode with the fast path (decoder/fastpath.c), the
					 * block decoder where it cannot */
	bool populate;			/* buf is a file's mapping not populated yet: the
					 * thread that decodes a piece populates its pages
					 * (ptd_stream_populate()) */
};

struct ptd_stream;

int ptd_stream_new(const struct ptd_stream_opts *opts, struct ptd_stream **out);
void ptd_stream_free(struct ptd_stream *s);
void ptd_stream_stats(const struct ptd_stream *s, struct decode_stats *st);

/*
 * Decode all streams and hand their events to `sink`, merged by time (ties: stream
 * index, then production order), with `jobs` threads. The order, and so the output,
 * does not depend on `jobs`. `extra` are sideband events (already sorted by time)
 * merged in too. Returns 0 or the first negative error of the sink.
 */
int ptd_decode_streams(struct ptd_stream **streams, size_t nr, int jobs,
		       const struct ptd_event *extra, size_t nr_extra, const struct ptd_sink *sink,
		       bool progress);

/* First timestamp (ns) found in a PT buffer (first TSC packet), or -ENOENT. */
int ptd_first_time(const uint8_t *buf, size_t size, const struct pt_config *cfg,
		   const struct ptd_clock *clock, uint64_t *ns);

/* Maps a whole file read-only (munmap it); -ENODATA for an empty file. */
int ptd_map_file(const char *path, const uint8_t **buf, size_t *size);
/* Sets cfg->cpu and the errata that go with it; family 0 leaves both unset. */
void ptd_config_cpu(struct pt_config *cfg, uint32_t family, uint32_t model, uint32_t stepping);
struct capture;
/* Sets cfg's timing (MTC frequency, nominal ratio, CPUID 0x15) from the capture's perf.data. */
void ptd_config_timing(struct pt_config *cfg, const struct capture *cap);

/* CLOCK_MONOTONIC in seconds (decode times, progress). */
double ptd_seconds(void);

/* libipt's class of the instruction at `p` (n bytes), by its opcode; ptic_error: unknown. */
enum pt_insn_class ptd_classify(const uint8_t *p, size_t n, enum pt_exec_mode mode);

/*
 * Decodes each stream both ways, with the block decoder alone and with the fast path,
 * and compares every event and the decode figures. 0 when they agree; else -EDOM, with
 * the first difference (the stream, its trace offset, both events) on stderr; or -errno.
 */
int ptd_streams_verify_fast(struct ptd_stream **streams, size_t nr);

/* libipt errors at the public boundary: -pte_* -> -errno. */
int ptd_errno(int pte);
/* Why an image could not be loaded, for -errno from ptd_aspace_map_*() and kcore. */
const char *ptd_image_strerror(int err);

/*
 * A decode error of ptbpf's own, next to libipt's -pte_* codes in a PTD_ERROR event: the
 * flow ran on through direct jumps for PTD_STILL_BLOCKS blocks without reading a packet.
 * Real code does that only in an endless loop such as `jmp .`, and libipt would follow
 * it forever (a trace that ends while its program spins, or corrupt trace or image).
 */
#define PTD_ERR_ENDLESS (-0x1000)
#define PTD_STILL_BLOCKS (1u << 22)

/*
 * The other bound on decode work: the blocks a stream decodes, all segments together,
 * stay within PTD_BLOCKS_BASE + PTD_BLOCKS_PER_BYTE * (trace bytes passed so far). Real
 * traces take 0.2 to 3.5 blocks per byte on average (hardware PT of dense code,
 * singlestep captures), and the credit of the bytes before a long run without packets
 * carries over to it; a trace that repeats PSB, TIP.PGE into `jmp .` would take 4 M
 * blocks per 28 bytes (PTD_STILL_BLOCKS each time). Beyond the budget, the segment ends
 * with PTD_ERR_BUDGET and decoding resumes at the next PSB, on the credit of the bytes
 * passed: at ~20 M blocks/s, at most 0.3 s per 100 KB of trace.
 */
#define PTD_ERR_BUDGET (-0x1001)
#define PTD_BLOCKS_BASE (1ull << 16)
#define PTD_BLOCKS_PER_BYTE 64

/* The message of a PTD_ERROR code: libipt's, or ptbpf's own. */
const char *ptd_errstr(int code);

/* ---------------------------------------------------------------- output */

struct ptd_output;

struct ptd_output_opts {
	const struct decode_opts *opts;
	struct symbols *symbols;
	uint64_t time_base;		/* ns subtracted from every time (FXT rebase) */
	const char *const *names;	/* COMM names, indexed by ptd_event.code */
	const struct pd_trigger *trigger;	/* trigger to mark, NULL if none */
	const struct capture *cap;	/* a ptbpf capture (it has a trigger record): FXT gets a
					 * "ptbpf" track summarising it; NULL otherwise */
};

int ptd_output_open(const struct ptd_output_opts *o, struct ptd_output **out,
		    struct ptd_sink *sink);
/* Flushes and closes; fills the call-stack figures of `stats`. */
int ptd_output_close(struct ptd_output *out, struct decode_stats *stats);
/*
 * Open the output, decode `streams` into it (with the sideband events `extra`, with
 * opts->jobs threads), close it, and add the figures to `stats` (may be NULL).
 * -EIO under --strict when there were decode errors.
 */
int ptd_output_run(const struct ptd_output_opts *o, struct ptd_stream **streams, size_t nr,
		   const struct ptd_event *extra, size_t nr_extra, struct decode_stats *stats);

#endif /* PTBPF_DECODER_PTD_H */
