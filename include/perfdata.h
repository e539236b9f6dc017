/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * A capture, in memory and as a perf.data file.
 *
 * `struct capture` is what a backend produces at a snapshot (pt and singlestep alike),
 * what the perf.data writer serialises, what the reader returns (for ptbpf's own files
 * and for `perf record -e intel_pt//` files), and what the decoder consumes. One type
 * for all four, so a capture decoded straight after a snapshot and one read back from
 * disk go through the same code.
 *
 * Format references: tools/perf/Documentation/perf.data-file-format.txt, perf's
 * util/header.c, util/session.c, util/auxtrace.c, util/intel-pt.c.
 */
#ifndef PTBPF_PERFDATA_H
#define PTBPF_PERFDATA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <linux/perf_event.h>

/*
 * The intel_pt AUXTRACE_INFO private words, in perf's order
 * (tools/perf/util/intel-pt.h, enum INTEL_PT_PMU_TYPE ... INTEL_PT_FILTER_STR_LEN).
 */
struct pd_pt_info {
	uint64_t pmu_type;		/* intel_pt PMU type (sysfs type file) */
	uint64_t time_shift;		/* TSC -> perf time: from the PT event's mmap page */
	uint64_t time_mult;		/* perf time = time_zero + tsc * time_mult >> time_shift */
	uint64_t time_zero;		/* (pd_tsc_to_time()); perf uses these, not TIME_CONV */
	uint64_t cap_user_time_zero;	/* 0: timeless decoding (TSC values ignored) */
	uint64_t tsc_bit;		/* config mask of tsc (0x400) */
	uint64_t noretcomp_bit;		/* config mask of noretcomp (0x800) */
	uint64_t have_sched_switch;	/* 0 none, 1 sched_switch tp, 2 SWITCH, 3 SWITCH_CPU_WIDE */
	uint64_t snapshot_mode;		/* 1: AUX area was an overwrite (snapshot) ring */
	uint64_t per_cpu_mmaps;		/* 1: one AUX buffer per CPU, 0: per thread */
	uint64_t mtc_bit;		/* config mask of mtc (0x200) */
	uint64_t mtc_freq_bits;		/* mask of mtc_period in config (0x3c000) */
	uint64_t tsc_ctc_ratio_n;	/* CPUID.0x15 EBX */
	uint64_t tsc_ctc_ratio_d;	/* CPUID.0x15 EAX */
	uint64_t cyc_bit;		/* config mask of cyc (0x2) */
	uint64_t max_non_turbo_ratio;	/* MSR_PLATFORM_INFO[15:8], for libipt nom_freq */
	char *filter;			/* address filter string, NULL if none */
	bool present;			/* an AUXTRACE_INFO of type intel_pt was seen */
	/* Added by the perf.data module: */
	uint64_t cap_event_trace;	/* the word after the filter (perf >= 5.19), 0 if absent */
	uint32_t nr_priv;		/* reader: private words in the file (perf's age), else 0 */
	uint32_t auxtrace_type;		/* reader: AUXTRACE_INFO type (1 = intel_pt), 0 if none */
};

/* One event (attr) of the file, with the sample ids that name it. */
struct pd_attr {
	struct perf_event_attr attr;	/* as written (size = PERF_ATTR_SIZE_VER* of the file) */
	uint64_t *ids;			/* sample ids of this event (one per CPU or thread) */
	uint32_t nr_ids;		/* entries in ids */
	char *name;			/* from HEADER_EVENT_DESC, NULL if absent */
};

/* The sample_id_all trailer of a non-sample record; `valid` says which fields were present. */
struct pd_sample_id {
	uint32_t pid, tid;		/* PERF_SAMPLE_TID */
	uint64_t time;			/* PERF_SAMPLE_TIME, perf clock ns */
	uint64_t id;			/* PERF_SAMPLE_ID or PERF_SAMPLE_IDENTIFIER */
	uint64_t stream_id;		/* PERF_SAMPLE_STREAM_ID */
	uint32_t cpu;			/* PERF_SAMPLE_CPU */
	uint64_t valid;			/* PERF_SAMPLE_* bits of the fields above that were read */
};

/*
 * ptbpf's own records, kept out of perf's numbering. On disk, the triggers and the vDSO
 * bytes are PERF_RECORD_HEADER_EVENT_TYPE records (type 65) marked "PTBPFREC": the one
 * foreign record perf 6.1 skips in every tool (unknown types stop perf script; unknown
 * feature bits crash perf inject; see perfdata/perfdata_int.h). A trigger is written at
 * its place among the records, the vDSO after AUXTRACE_INFO.
 */
enum {
	PD_RECORD_PTBPF_TRIGGER = 0x10000,	/* in-memory type of struct pd_trigger records */
};

/* perf's user record types (tools/lib/perf/include/perf/event.h), not in the UAPI. */
enum {
	PD_RECORD_FINISHED_ROUND = 68,
	PD_RECORD_AUXTRACE_INFO = 70,
	PD_RECORD_AUXTRACE = 71,
	PD_RECORD_TIME_CONV = 79,	/* pd_record.time_conv */
};

/*
 * What a capture's trigger record holds when no BPF trigger stopped the session: kinds
 * after those of enum trigger_kind (include/trigger_abi.h), with the values captures on disk
 * already have.
 */
enum pd_stop_kind {
	PD_STOP_SIGNAL = 7,		/* Ctrl-C / SIGTERM */
	PD_STOP_EXIT = 8,		/* the target exited */
	PD_STOP_DURATION = 9,		/* --duration elapsed with --snapshot-on-exit */
};

/* The trigger that froze the rings (see include/trigger_abi.h for the kinds). */
struct pd_trigger {
	uint32_t kind;			/* enum trigger_kind or enum pd_stop_kind */
	uint32_t index;			/* the trigger's position on the command line, from 0 */
	uint32_t cpu, pid, tid;
	uint64_t time;			/* perf clock ns, when known (0 otherwise) */
	uint64_t ktime;			/* bpf_ktime_get_ns() (CLOCK_MONOTONIC) at the fire */
	uint64_t ip;			/* probed address in the target, 0 if none */
	uint64_t latency_ns;		/* measured latency for latency triggers, else 0 */
	uint64_t arg0, arg1;		/* the probe's first two arguments */
	char *desc;			/* what the user asked for, e.g. "uprobe:./bin:slow_path" */
};

/* One sideband record. Strings are owned by the capture that holds the record. */
struct pd_record {
	uint32_t type;			/* PERF_RECORD_* or PD_RECORD_PTBPF_* */
	uint16_t misc;			/* header.misc */
	struct pd_sample_id sample;	/* trailer; sample.valid == 0 if none */
	union {
		struct {		/* PERF_RECORD_MMAP and PERF_RECORD_MMAP2 */
			uint32_t pid, tid;
			uint64_t addr, len, pgoff;
			uint32_t maj, min;	/* MMAP2 without build id */
			uint64_t ino, ino_generation;
			uint32_t prot, flags;	/* MMAP2 */
			uint8_t build_id[20];	/* MMAP2 with PERF_RECORD_MISC_MMAP_BUILD_ID */
			uint8_t build_id_size;
			char *filename;
		} mmap;
		struct {		/* PERF_RECORD_COMM */
			uint32_t pid, tid;
			char *comm;
		} comm;
		struct {		/* PERF_RECORD_FORK, PERF_RECORD_EXIT */
			uint32_t pid, ppid, tid, ptid;
			uint64_t time;
		} task;
		struct {		/* PERF_RECORD_SWITCH_CPU_WIDE (SWITCH has no body) */
			uint32_t next_prev_pid, next_prev_tid;
		} sw;
		struct {		/* PERF_RECORD_ITRACE_START */
			uint32_t pid, tid;
		} itrace_start;
		struct {		/* PERF_RECORD_AUX */
			uint64_t aux_offset, aux_size, flags;	/* PERF_AUX_FLAG_* */
		} aux;
		struct {		/* PERF_RECORD_LOST */
			uint64_t id, lost;
		} lost;
		struct {		/* PERF_RECORD_LOST_SAMPLES */
			uint64_t lost;
		} lost_samples;
		struct {		/* PD_RECORD_TIME_CONV (user type 79) */
			uint64_t time_shift, time_mult, time_zero;
			uint64_t time_cycles, time_mask;
			bool cap_user_time_zero, cap_user_time_short;
		} time_conv;
		struct pd_trigger trigger;	/* PD_RECORD_PTBPF_TRIGGER */
	};
};

/* The trace bytes of one AUX buffer at one snapshot (a PERF_RECORD_AUXTRACE and its payload). */
struct pd_auxtrace {
	uint64_t size;			/* payload bytes */
	uint64_t offset;		/* offset of the payload in the AUX stream (perf's "offset") */
	uint64_t reference;		/* non-zero (perf ignores TSC otherwise): rdtsc() */
	uint32_t idx;			/* mmap index (CPU index in per-CPU mode) */
	uint32_t tid;			/* thread of a per-thread buffer, -1 (as u32) per CPU */
	uint32_t cpu;			/* CPU of a per-CPU buffer, -1 (as u32) per thread */
	uint8_t *data;			/* size bytes of raw PT, owned by the capture;
					 * read-only when read from a file (mapped) */
	uint64_t file_offset;		/* where the payload was in the file (reader), else 0 */
};

/* Describes the host the capture was made on (feature sections). All optional. */
struct pd_host {
	char *hostname, *osrelease, *arch, *cpudesc;
	char *cpuid;			/* perf style "GenuineIntel,6,85,4" (vendor,family,model,stepping) */
	char *cmdline;			/* the recording command line, space separated */
	uint32_t nr_cpus_online, nr_cpus_avail;
	/* Added by the perf.data module: */
	char *version;			/* HEADER_VERSION: the recording tool's version */
	uint64_t total_mem_kb;		/* HEADER_TOTAL_MEM, 0 if absent */
	uint64_t first_sample_time;	/* HEADER_SAMPLE_TIME (perf clock ns), 0 if absent */
	uint64_t last_sample_time;
};

/*
 * A HEADER_BUILD_ID entry: the build id of a file the capture refers to, as perf record
 * stores it (perf looks the file up in its build-id cache by it, `[vdso]` included).
 */
struct pd_build_id {
	int32_t pid;			/* -1 for the kernel / host, else the process */
	uint16_t misc;			/* PERF_RECORD_MISC_CPUMODE (USER, KERNEL...) */
	uint8_t size;			/* build id bytes used, <= 20 */
	uint8_t id[20];			/* the build id */
	char *filename;			/* path, "[vdso]", "[kernel.kallsyms]" ... */
};

/* A HEADER_PMU_MAPPINGS entry. */
struct pd_pmu {
	uint32_t type;			/* perf_event_attr.type of the PMU */
	char *name;			/* "intel_pt", "cpu", "software" ... */
};

struct capture {
	struct pd_host host;
	struct pd_attr *attrs;		/* attrs[0] is the intel_pt event when there is one */
	uint32_t nr_attrs;
	struct pd_pt_info pt;		/* from AUXTRACE_INFO */
	/*
	 * Sideband and ptbpf records in time order: perf files hold per-CPU rounds, so the
	 * reader sorts them, stably, by sample time (triggers by their time; records
	 * without a time, such as TIME_CONV, first). The writer keeps the given order.
	 */
	struct pd_record *records;
	size_t nr_records;
	struct pd_auxtrace *aux;	/* AUXTRACE buffers, in file order */
	size_t nr_aux;
	uint8_t *vdso;			/* the capturing host's 64-bit vDSO, NULL if none */
	size_t vdso_size;
	char *path;			/* file it was read from, NULL if built in memory */
	char *kcore_dir;		/* directory form: its kcore_dir/, NULL if none */
	void *priv;			/* allocator state of perfdata.c */
	/* Added by the perf.data module: */
	struct pd_build_id *build_ids;	/* HEADER_BUILD_ID entries */
	size_t nr_build_ids;
	struct pd_pmu *pmus;		/* HEADER_PMU_MAPPINGS entries */
	uint32_t nr_pmus;
	/* Reader only: what the file held that is not kept above. */
	uint64_t file_size;		/* bytes of the file (directory form: of its data file) */
	uint64_t nr_samples;		/* PERF_RECORD_SAMPLE records (skipped) */
	uint64_t nr_skipped;		/* records of other types that were skipped */
	uint64_t nr_rounds;		/* PERF_RECORD_FINISHED_ROUND records */
	uint64_t features;		/* bit n: feature section n (< 64) was present */
};

/* Life cycle. capture__free(NULL) is fine. */
struct capture *capture__new(void);
void capture__free(struct capture *cap);

/*
 * Builders used by the backends. Each copies what it is given (strings, bytes) into
 * the capture and returns 0 or -ENOMEM.
 */
int capture__add_attr(struct capture *cap, const struct perf_event_attr *attr,
		      const uint64_t *ids, uint32_t nr_ids, const char *name);
int capture__add_record(struct capture *cap, const struct pd_record *rec);
int capture__add_aux(struct capture *cap, const struct pd_auxtrace *aux, const void *data);
int capture__set_vdso(struct capture *cap, const void *bytes, size_t size);
char *capture__strdup(struct capture *cap, const char *s);
/* Added by the perf.data module; same conventions. */
int capture__add_build_id(struct capture *cap, const struct pd_build_id *bid);
int capture__add_pmu(struct capture *cap, uint32_t type, const char *name);
/* Allocation owned by the capture (freed by capture__free), zeroed; NULL on ENOMEM. */
void *capture__alloc(struct capture *cap, size_t size);
/*
 * Where `size` bytes at `bytes` (an AUX payload, mapped from the file read) are in that
 * file: an fd open as long as the capture, and the offset; -ENOENT if they are not a
 * mapped file's (built in memory, copied). pread() of a few bytes there costs less than
 * the first touch of a mapped page (~15 us each on a VM's shadow page tables).
 */
int capture__file_range(const struct capture *cap, const void *bytes, size_t size, int *fd,
			uint64_t *off);

/* The attr whose ids include `id`, NULL if none. */
const struct pd_attr *capture__attr_by_id(const struct capture *cap, uint64_t id);
/*
 * The attr a record belongs to: by its trailer's id when it has one, else attrs[0]
 * for ITRACE_START and AUX (the PT event emits them) and the last attr otherwise (the
 * sideband event). NULL if the capture has no attrs. The writer follows this rule.
 */
const struct pd_attr *capture__record_attr(const struct capture *cap, const struct pd_record *rec);

/* TSC <-> perf time with the AUXTRACE_INFO conversion (perf's tsc.c arithmetic). */
uint64_t pd_tsc_to_time(const struct pd_pt_info *pt, uint64_t tsc);
uint64_t pd_time_to_tsc(const struct pd_pt_info *pt, uint64_t time);

/* "MMAP2", "COMM", ... "TRIGGER" for a PERF_RECORD_* / PD_RECORD_* type; "unknown" else. */
const char *pd_record_type_name(uint32_t type);

/*
 * A trigger kind (enum trigger_kind, include/trigger_abi.h; struct pd_trigger.kind) as the JSON
 * output, the capture summary and the FXT marker spell it ("uprobe_latency"; "none" for a
 * kind it does not know), and as `ptbpf decode --info` words it ("uprobe latency"; "unknown").
 */
const char *trigger_kind_name(uint32_t kind);
const char *trigger_kind_label(uint32_t kind);

/*
 * Encode `rec` as a raw kernel/perf record (the inverse of pd_record_parse), trailer per
 * `sample_type` when `sample_id_all`. Returns the record size (a multiple of 8), or
 * -ENOSPC if `size` is too small (nothing useful written), -EINVAL for a record that
 * cannot be encoded (type ptbpf cannot write, too long for a 16-bit size).
 */
int pd_record_encode(const struct pd_record *rec, uint64_t sample_type, bool sample_id_all,
		     void *buf, size_t size);

/*
 * Parse one raw kernel record (as found in a perf data ring or file) into `out`. The
 * trailer is read according to `sample_type` when `sample_id_all` is set. Strings in
 * `out` point into `raw`; pass the result to capture__add_record() to keep it.
 * Returns 0, -EINVAL for a malformed record, or -ENOTSUP for a type ptbpf does not
 * keep (the caller skips it).
 */
int pd_record_parse(const void *raw, size_t size, uint64_t sample_type, bool sample_id_all,
		    struct pd_record *out);

/*
 * Read a perf.data file or directory (perf.data/data + kcore_dir/). On failure prints
 * one line naming the file offset and what was wrong, and returns -EINVAL (corrupt),
 * -ENOENT/-EACCES (cannot open) or -ENOMEM.
 */
int perfdata_read(const char *path, struct capture **out);

/*
 * Write `cap` as a perf.data file that perf 6.1 reads without warnings: written to a
 * temporary name in the same directory, mode 0600, renamed when complete; on any
 * failure (ENOSPC...) the temporary file is removed, one error line printed and -errno
 * returned.
 *
 * What the writer adds or fixes so that perf accepts the file:
 * - attrs without ids get one (perf maps every record to its event by id), and a record
 *   without an id in its trailer gets the first id of capture__record_attr();
 * - with several attrs, all must have PERF_SAMPLE_IDENTIFIER or all the same
 *   sample_type and sample_id_all (perf refuses the file otherwise): -EINVAL if not;
 * - PD_RECORD_TIME_CONV is made from the AUXTRACE_INFO conversion when absent;
 * - AUXTRACE payloads are padded with zeros (PT PAD packets) to a multiple of 8 bytes,
 *   so a buffer read back has the padded size;
 * - HEADER_NRCPUS is computed from the CPUs seen when host.nr_cpus_* are 0 (perf sizes
 *   its per-CPU thread table by it);
 * - a `[vdso]` build-id entry is added from the vDSO image's build-id note when the
 *   capture has the vDSO and no such entry;
 * - records go in capture order, then one AUXTRACE per buffer, then FINISHED_ROUND, and
 *   the HEADER_AUXTRACE index lists the buffers.
 */
int perfdata_write(const char *path, const struct capture *cap);

/* Human summary (`ptbpf decode --info`): CPUs, PT config, buffers, mappings, threads, span. */
int perfdata_print_info(const struct capture *cap, FILE *out);

#endif /* PTBPF_PERFDATA_H */
