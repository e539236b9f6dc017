/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * perf.data on-disk layout, shared by the reader, the writer and the summary.
 *
 * The file (tools/perf/Documentation/perf.data-file-format.txt, perf's util/header.c):
 *
 *   struct pd_file_header                  at 0, 104 bytes
 *   attrs: nr x { perf_event_attr, pd_file_section ids }   each attr_size bytes
 *   ids of each attr: u64 arrays           anywhere, named by the attr entry
 *   data: records                          data.offset, data.size bytes
 *   feature table: one pd_file_section per bit set in adds_features, in bit order,
 *                  right after the data section
 *   feature sections                       anywhere, named by the table
 *
 * Everything is little endian (only x86_64 files are read).
 */
#ifndef PTBPF_PERFDATA_INT_H
#define PTBPF_PERFDATA_INT_H

#include <stdint.h>
#include <string.h>

#include "perfdata.h"

/* "PERFILE2" read as a little-endian u64. */
#define PD_MAGIC2 0x32454c4946524550ULL
/* The same bytes written by a big-endian host. */
#define PD_MAGIC2_SWAPPED 0x50455246494c4532ULL
/* "PERFFILE": perf.data version 1 (before 2009). */
#define PD_MAGIC1 0x454c494646524550ULL

/* A region of the file. */
struct pd_file_section {
	uint64_t offset;	/* from the start of the file */
	uint64_t size;		/* bytes */
};

/* The file header, as perf writes it. */
struct pd_file_header {
	uint64_t magic;			/* PD_MAGIC2 */
	uint64_t size;			/* sizeof(struct pd_file_header) */
	uint64_t attr_size;		/* bytes of one attrs entry: attr + its ids section */
	struct pd_file_section attrs;	/* the attrs entries */
	struct pd_file_section data;	/* the records */
	struct pd_file_section event_types; /* unused since 2013, zero */
	uint64_t adds_features[4];	/* bitmap of feature sections present (HEADER_FEAT_BITS) */
};

/* Pipe mode starts with only these two words. */
struct pd_pipe_header {
	uint64_t magic;			/* PD_MAGIC2 */
	uint64_t size;			/* 16 */
};

/* Feature section numbers (perf's enum in util/header.h). */
enum {
	PD_FEAT_TRACING_DATA = 1,
	PD_FEAT_BUILD_ID = 2,
	PD_FEAT_HOSTNAME = 3,
	PD_FEAT_OSRELEASE = 4,
	PD_FEAT_VERSION = 5,
	PD_FEAT_ARCH = 6,
	PD_FEAT_NRCPUS = 7,
	PD_FEAT_CPUDESC = 8,
	PD_FEAT_CPUID = 9,
	PD_FEAT_TOTAL_MEM = 10,
	PD_FEAT_CMDLINE = 11,
	PD_FEAT_EVENT_DESC = 12,
	PD_FEAT_CPU_TOPOLOGY = 13,
	PD_FEAT_NUMA_TOPOLOGY = 14,
	PD_FEAT_BRANCH_STACK = 15,
	PD_FEAT_PMU_MAPPINGS = 16,
	PD_FEAT_GROUP_DESC = 17,
	PD_FEAT_AUXTRACE = 18,
	PD_FEAT_STAT = 19,
	PD_FEAT_CACHE = 20,
	PD_FEAT_SAMPLE_TIME = 21,
	PD_FEAT_MEM_TOPOLOGY = 22,
	PD_FEAT_CLOCKID = 23,
	PD_FEAT_DIR_FORMAT = 24,
	PD_FEAT_BPF_PROG_INFO = 25,
	PD_FEAT_BPF_BTF = 26,
	PD_FEAT_COMPRESSED = 27,
	PD_FEAT_CPU_PMU_CAPS = 28,
	PD_FEAT_CLOCK_DATA = 29,
	PD_FEAT_HYBRID_TOPOLOGY = 30,
	PD_FEAT_PMU_CAPS = 31,
	PD_FEAT_BITS = 256,
};

/* perf's user record types not in perfdata.h. */
enum {
	PD_RECORD_USER_TYPE_START = 64,
	PD_RECORD_HEADER_ATTR = 64,
	PD_RECORD_HEADER_EVENT_TYPE = 65,
	PD_RECORD_HEADER_TRACING_DATA = 66,
	PD_RECORD_HEADER_BUILD_ID = 67,
	PD_RECORD_ID_INDEX = 69,
	PD_RECORD_AUXTRACE_ERROR = 72,
	PD_RECORD_THREAD_MAP = 73,
	PD_RECORD_CPU_MAP = 74,
	PD_RECORD_STAT_CONFIG = 75,
	PD_RECORD_STAT = 76,
	PD_RECORD_STAT_ROUND = 77,
	PD_RECORD_EVENT_UPDATE = 78,
	PD_RECORD_HEADER_FEATURE = 80,
	PD_RECORD_COMPRESSED = 81,
	PD_RECORD_FINISHED_INIT = 82,
};

/* PERF_AUXTRACE_INTEL_PT in perf's enum auxtrace_type. */
#define PD_AUXTRACE_INTEL_PT 1
/* Private words of the intel_pt AUXTRACE_INFO up to and including FILTER_STR_LEN. */
#define PD_PT_PRIV_WORDS 17
/* perf's smallest intel_pt AUXTRACE_INFO: the words up to PER_CPU_MMAPS. */
#define PD_PT_PRIV_MIN_WORDS 10

/* Bytes of the AUXTRACE record header (without its payload). */
#define PD_AUXTRACE_SIZE 48
/* Bytes of the TIME_CONV record with time_cycles, time_mask and the cap flags. */
#define PD_TIME_CONV_SIZE 56
#define PD_TIME_CONV_OLD_SIZE 32

/* Strings in feature sections are padded to this (perf's NAME_ALIGN). */
#define PD_NAME_ALIGN 64

/*
 * ptbpf's own records on disk. Where perf 6.1 puts up with foreign data (measured):
 * - a record type it does not know: perf script/report stop, "failed to process type";
 * - a PERF_RECORD_HEADER_FEATURE record: perf report fails ("wrong feature ID");
 * - a feature bit above its HEADER_LAST_FEATURE: readers skip it, but perf inject
 *   indexes its feature table with it and crashes (SIGSEGV);
 * - PERF_RECORD_HEADER_EVENT_TYPE (65): "deprecated ... for old pipe-mode files",
 *   skipped without a word by every tool in file mode (script, report, -D, inject,
 *   which drops it). ptbpf records are type 65 with this header after perf's:
 */
#define PD_PTBPF_MAGIC 0x4345524650425450ULL	/* "PTBPFREC" */
#define PD_PTBPF_VERSION 1

struct pd_ptbpf_header {
	uint64_t magic;			/* PD_PTBPF_MAGIC: tells them from real EVENT_TYPEs */
	uint32_t kind;			/* PD_PTBPF_* below */
	uint32_t version;		/* PD_PTBPF_VERSION */
};

enum {
	/* struct pd_trigger_disk, then desc: NUL-terminated, zero padded to 8 */
	PD_PTBPF_TRIGGER = 1,
	/* struct pd_vdso_chunk, then its bytes, zero padded to 8 */
	PD_PTBPF_VDSO = 2,
};

/* Bytes of vDSO per record: records are at most 64 KiB. */
#define PD_VDSO_CHUNK (60 * 1024)

struct pd_vdso_chunk {
	uint64_t total;			/* bytes of the whole image */
	uint64_t offset;		/* where this chunk goes in it */
	uint64_t size;			/* bytes in this chunk */
};

/* A trigger. A newer writer may append fields; readers take the ones they know. */
struct pd_trigger_disk {
	uint32_t kind;			/* enum trigger_kind */
	uint32_t index;			/* position on the command line */
	uint32_t cpu, pid, tid;		/* where it fired */
	uint32_t reserved;		/* zero */
	uint64_t time;			/* perf clock ns, 0 if unknown */
	uint64_t ktime;			/* CLOCK_MONOTONIC ns */
	uint64_t ip;			/* probed address, 0 if none */
	uint64_t latency_ns;		/* latency triggers, else 0 */
	uint64_t arg0, arg1;		/* the probe's first two arguments */
};


/* Sample id trailer fields, as PERF_SAMPLE_* bits. */
#define PD_SAMPLE_ID_BITS                                                                          \
	(PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_ID | PERF_SAMPLE_STREAM_ID |             \
	 PERF_SAMPLE_CPU | PERF_SAMPLE_IDENTIFIER)

/* Unaligned little-endian loads from file bytes. */
static inline uint64_t pd_get64(const void *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return v;
}

static inline uint32_t pd_get32(const void *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return v;
}

/*
 * [off, off + size) of the file `fd`, mapped read-only for the capture's lifetime
 * (unmapped by capture__free); NULL if it cannot be mapped (the caller reads instead).
 */
void *pd_map_file(struct capture *cap, int fd, uint64_t off, size_t size);

/* Bytes of the sample_id_all trailer for `sample_type`. */
size_t pd_sample_id_size(uint64_t sample_type);

/*
 * Position of the id in a trailer, counted in u64 words back from the end of the record
 * (1 = the last word), or 0 when the trailer has no id (perf's is_pos).
 */
unsigned int pd_sample_id_pos(uint64_t sample_type);

/* Feature section name for messages ("hostname", "ptbpf-trigger"...), NULL if unknown. */
const char *pd_feature_name(unsigned int feat);

#endif /* PTBPF_PERFDATA_INT_H */
