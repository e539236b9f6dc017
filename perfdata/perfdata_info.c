// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Human summary of a capture (`ptbpf decode --info`). */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "array.h"
#include "perfdata.h"
#include "perfdata_int.h"

/* Most mappings and threads listed before "... N more". */
#define INFO_MAX_LINES 64

/* The intel_pt format bits (sysfs format/), as `perf list` names them. */
static void print_pt_config(FILE *out, uint64_t config)
{
	static const struct {
		const char *name;
		unsigned int lo, hi;
	} f[] = {
		{ "pt", 0, 0 },		 { "cyc", 1, 1 },	   { "pwr_evt", 4, 4 },
		{ "fup_on_ptw", 5, 5 },	 { "mtc", 9, 9 },	   { "tsc", 10, 10 },
		{ "noretcomp", 11, 11 }, { "ptw", 12, 12 },	   { "branch", 13, 13 },
		{ "mtc_period", 14, 17 }, { "cyc_thresh", 19, 22 }, { "psb_period", 24, 27 },
		{ "event", 31, 31 },	 { "notnt", 55, 55 },
	};
	uint64_t known = 0;
	size_t i;

	for (i = 0; i < ARRAY_SIZE(f); i++) {
		uint64_t mask = ((2ULL << (f[i].hi - f[i].lo)) - 1) << f[i].lo;
		uint64_t v = (config & mask) >> f[i].lo;

		known |= mask;
		if (!v)
			continue;
		if (f[i].lo == f[i].hi)
			fprintf(out, " %s", f[i].name);
		else
			fprintf(out, " %s=%" PRIu64, f[i].name, v);
	}
	if (config & ~known)
		fprintf(out, " other=%#" PRIx64, config & ~known);
}

static void print_sample_type(FILE *out, uint64_t st)
{
	static const struct {
		uint64_t bit;
		const char *name;
	} b[] = {
		{ PERF_SAMPLE_IP, "IP" },	  { PERF_SAMPLE_TID, "TID" },
		{ PERF_SAMPLE_TIME, "TIME" },	  { PERF_SAMPLE_ADDR, "ADDR" },
		{ PERF_SAMPLE_ID, "ID" },	  { PERF_SAMPLE_CPU, "CPU" },
		{ PERF_SAMPLE_PERIOD, "PERIOD" }, { PERF_SAMPLE_STREAM_ID, "STREAM_ID" },
		{ PERF_SAMPLE_RAW, "RAW" },	  { PERF_SAMPLE_AUX, "AUX" },
		{ PERF_SAMPLE_IDENTIFIER, "IDENTIFIER" },
	};
	const char *sep = "";
	uint64_t rest = st;
	size_t i;

	for (i = 0; i < ARRAY_SIZE(b); i++) {
		if (!(st & b[i].bit))
			continue;
		fprintf(out, "%s%s", sep, b[i].name);
		sep = "|";
		rest &= ~b[i].bit;
	}
	if (rest)
		fprintf(out, "%s%#" PRIx64, sep, rest);
	if (!st)
		fprintf(out, "none");
}

static void print_time(FILE *out, uint64_t ns)
{
	fprintf(out, "%" PRIu64 ".%09" PRIu64, ns / 1000000000, ns % 1000000000);
}

static void print_host(const struct capture *cap, FILE *out)
{
	const struct pd_host *h = &cap->host;

	fprintf(out, "host:       %s, Linux %s, %s\n", h->hostname ? h->hostname : "?",
		h->osrelease ? h->osrelease : "?", h->arch ? h->arch : "?");
	if (h->cpudesc || h->cpuid)
		fprintf(out, "cpu:        %s%s%s%s\n", h->cpudesc ? h->cpudesc : "",
			h->cpudesc && h->cpuid ? " " : "", h->cpuid ? "cpuid " : "",
			h->cpuid ? h->cpuid : "");
	fprintf(out, "cpus:       %u online, %u available\n", h->nr_cpus_online, h->nr_cpus_avail);
	if (h->cmdline)
		fprintf(out, "recorded:   %s\n", h->cmdline);
	if (h->version && *h->version)
		fprintf(out, "by:         %s\n", h->version);
}

static void print_events(const struct capture *cap, FILE *out)
{
	uint32_t i;

	for (i = 0; i < cap->nr_attrs; i++) {
		const struct pd_attr *a = &cap->attrs[i];
		bool is_pt = cap->pt.present && a->attr.type == cap->pt.pmu_type;

		fprintf(out, "%s %u: %s  type %u config %#llx", i ? "           " : "events:    ",
			i, a->name ? a->name : (is_pt ? "intel_pt" : "?"), a->attr.type,
			(unsigned long long)a->attr.config);
		if (is_pt) {
			fprintf(out, " (");
			print_pt_config(out, a->attr.config);
			fprintf(out, " )");
		}
		fprintf(out, "%s%s, sample_type ", a->attr.exclude_kernel ? ", user only" : "",
			a->attr.exclude_user ? ", kernel only" : "");
		print_sample_type(out, a->attr.sample_type);
		fprintf(out, "%s%s, %u id%s\n", a->attr.sample_id_all ? ", sample_id_all" : "",
			a->attr.context_switch ? ", context_switch" : "", a->nr_ids,
			a->nr_ids == 1 ? "" : "s");
	}
}

static void print_pt(const struct capture *cap, FILE *out)
{
	const struct pd_pt_info *pt = &cap->pt;
	static const char *const sw[] = { "none", "sched_switch tracepoint", "SWITCH records",
					  "CPU-wide SWITCH records" };

	if (!pt->present) {
		if (pt->auxtrace_type)
			fprintf(out, "trace:      AUX area type %u (not Intel PT)\n", pt->auxtrace_type);
		else
			fprintf(out, "trace:      no AUXTRACE_INFO: not an Intel PT capture\n");
		return;
	}
	fprintf(out, "PT:         PMU type %llu, %s buffers, %s, context switches: %s\n",
		(unsigned long long)pt->pmu_type, pt->per_cpu_mmaps ? "per-CPU" : "per-thread",
		pt->snapshot_mode ? "snapshot (overwrite) mode" : "full trace",
		pt->have_sched_switch < 4 ? sw[pt->have_sched_switch] : "?");
	fprintf(out, "timing:     ");
	if (pt->cap_user_time_zero)
		fprintf(out, "TSC -> perf time: shift %llu, mult %llu, zero %llu",
			(unsigned long long)pt->time_shift, (unsigned long long)pt->time_mult,
			(unsigned long long)pt->time_zero);
	else
		fprintf(out, "timeless (no TSC conversion)");
	fprintf(out, "; TSC:CTC %llu/%llu, max non-turbo ratio %llu\n",
		(unsigned long long)pt->tsc_ctc_ratio_n, (unsigned long long)pt->tsc_ctc_ratio_d,
		(unsigned long long)pt->max_non_turbo_ratio);
	if (pt->filter)
		fprintf(out, "filter:     %s\n", pt->filter);
}

static void print_buffers(const struct capture *cap, FILE *out)
{
	uint64_t total = 0;
	size_t i, j;

	for (i = 0; i < cap->nr_aux; i++)
		total += cap->aux[i].size;
	fprintf(out, "buffers:    %zu, %" PRIu64 " bytes of trace\n", cap->nr_aux, total);
	/* Group by CPU (per-CPU) or thread (per-thread), in order of first appearance. */
	for (i = 0; i < cap->nr_aux; i++) {
		const struct pd_auxtrace *a = &cap->aux[i];
		bool per_cpu = a->cpu != UINT32_MAX;
		uint64_t bytes = 0, n = 0;

		for (j = 0; j < i; j++)
			if (per_cpu ? cap->aux[j].cpu == a->cpu : cap->aux[j].tid == a->tid)
				break;
		if (j < i)
			continue;
		for (j = i; j < cap->nr_aux; j++) {
			if (per_cpu ? cap->aux[j].cpu == a->cpu : cap->aux[j].tid == a->tid) {
				bytes += cap->aux[j].size;
				n++;
			}
		}
		if (per_cpu)
			fprintf(out, "            cpu %u: ", a->cpu);
		else
			fprintf(out, "            tid %u: ", a->tid);
		fprintf(out, "%" PRIu64 " buffer%s, %" PRIu64 " bytes\n", n, n == 1 ? "" : "s", bytes);
	}
}

static void print_records(const struct capture *cap, FILE *out)
{
	uint64_t counts[PD_RECORD_FINISHED_INIT + 1] = { 0 };
	uint64_t first = UINT64_MAX, last = 0, triggers = 0;
	size_t i;

	for (i = 0; i < cap->nr_records; i++) {
		const struct pd_record *r = &cap->records[i];

		if (r->type < ARRAY_SIZE(counts))
			counts[r->type]++;
		if (r->type == PD_RECORD_PTBPF_TRIGGER)
			triggers++;
		if ((r->sample.valid & PERF_SAMPLE_TIME) && r->sample.time) {
			if (r->sample.time < first)
				first = r->sample.time;
			if (r->sample.time > last)
				last = r->sample.time;
		}
	}
	fprintf(out, "records:   ");
	for (i = 0; i < ARRAY_SIZE(counts); i++)
		if (counts[i])
			fprintf(out, " %" PRIu64 " %s", counts[i], pd_record_type_name(i));
	if (triggers)
		fprintf(out, " %" PRIu64 " TRIGGER", triggers);
	if (cap->nr_rounds)
		fprintf(out, " %" PRIu64 " FINISHED_ROUND", cap->nr_rounds);
	if (cap->nr_samples)
		fprintf(out, "; %" PRIu64 " samples skipped", cap->nr_samples);
	if (cap->nr_skipped)
		fprintf(out, "; %" PRIu64 " other records skipped", cap->nr_skipped);
	fprintf(out, "\n");
	if (first <= last) {
		fprintf(out, "time span:  ");
		print_time(out, first);
		fprintf(out, " .. ");
		print_time(out, last);
		fprintf(out, " (%.6f s, perf clock)\n", (double)(last - first) / 1e9);
	}
}

static void print_threads(const struct capture *cap, FILE *out)
{
	size_t i, shown = 0, total = 0;

	for (i = 0; i < cap->nr_records; i++) {
		const struct pd_record *r = &cap->records[i];

		if (r->type != PERF_RECORD_COMM)
			continue;
		if (shown < INFO_MAX_LINES) {
			fprintf(out, "%s %u/%u %s%s\n", total ? "           " : "threads:   ",
				r->comm.pid, r->comm.tid, r->comm.comm,
				(r->misc & PERF_RECORD_MISC_COMM_EXEC) ? " (exec)" : "");
			shown++;
		}
		total++;
	}
	if (!total)
		fprintf(out, "threads:    none named (no COMM records)\n");
	else if (total > shown)
		fprintf(out, "            ... and %zu more\n", total - shown);
}

static void print_mappings(const struct capture *cap, FILE *out)
{
	size_t i, j, shown = 0, total = 0, kernel = 0;

	for (i = 0; i < cap->nr_records; i++) {
		const struct pd_record *r = &cap->records[i];
		bool exec;

		if (r->type != PERF_RECORD_MMAP && r->type != PERF_RECORD_MMAP2)
			continue;
		exec = r->type == PERF_RECORD_MMAP2 ? !!(r->mmap.prot & PROT_EXEC)
						    : !(r->misc & PERF_RECORD_MISC_MMAP_DATA);
		if (!exec)
			continue;
		/* The kernel and its modules: one line for all of them. */
		if ((r->misc & PERF_RECORD_MISC_CPUMODE_MASK) == PERF_RECORD_MISC_KERNEL ||
		    (int32_t)r->mmap.pid == -1) {
			kernel++;
			continue;
		}
		if (shown < INFO_MAX_LINES) {
			fprintf(out, "%s %d %#" PRIx64 "-%#" PRIx64 " pgoff %#" PRIx64 " %s",
				total ? "           " : "mappings:  ", (int)r->mmap.pid, r->mmap.addr,
				r->mmap.addr + r->mmap.len, r->mmap.pgoff, r->mmap.filename);
			if (r->misc & PERF_RECORD_MISC_MMAP_BUILD_ID) {
				fprintf(out, " build-id ");
				for (j = 0; j < r->mmap.build_id_size; j++)
					fprintf(out, "%02x", r->mmap.build_id[j]);
			}
			fprintf(out, "\n");
			shown++;
		}
		total++;
	}
	if (!total)
		fprintf(out, "mappings:   no executable user mappings\n");
	else if (total > shown)
		fprintf(out, "            ... and %zu more\n", total - shown);
	if (kernel)
		fprintf(out, "            kernel: %zu mapping%s (kernel text and modules)\n", kernel,
			kernel == 1 ? "" : "s");
}

static void print_triggers(const struct capture *cap, FILE *out)
{
	size_t i, n = 0;

	for (i = 0; i < cap->nr_records; i++) {
		const struct pd_trigger *t = &cap->records[i].trigger;

		if (cap->records[i].type != PD_RECORD_PTBPF_TRIGGER)
			continue;
		fprintf(out, "%s %s", n ? "           " : "trigger:   ", trigger_kind_label(t->kind));
		if (t->desc)
			fprintf(out, " \"%s\"", t->desc);
		fprintf(out, " (#%u) cpu %d pid %d tid %d at ", t->index, (int)t->cpu, (int)t->pid,
			(int)t->tid);
		print_time(out, t->time);
		if (t->ip)
			fprintf(out, " ip %#" PRIx64, t->ip);
		if (t->latency_ns)
			fprintf(out, " latency %" PRIu64 " ns", t->latency_ns);
		fprintf(out, " args %#" PRIx64 " %#" PRIx64 "\n", t->arg0, t->arg1);
		n++;
	}
	if (!n)
		fprintf(out, "trigger:    none recorded\n");
}

/* User-space build ids one per line; the kernel's and its modules' as a count. */
static void print_build_ids(const struct capture *cap, FILE *out)
{
	size_t i, j, shown = 0, kernel = 0;

	for (i = 0; i < cap->nr_build_ids; i++) {
		const struct pd_build_id *b = &cap->build_ids[i];

		if ((b->misc & PERF_RECORD_MISC_CPUMODE_MASK) == PERF_RECORD_MISC_KERNEL ||
		    (b->misc & PERF_RECORD_MISC_CPUMODE_MASK) == PERF_RECORD_MISC_GUEST_KERNEL) {
			kernel++;
			continue;
		}
		if (shown == INFO_MAX_LINES)
			continue;
		fprintf(out, "%s ", shown ? "           " : "build ids: ");
		for (j = 0; j < b->size; j++)
			fprintf(out, "%02x", b->id[j]);
		fprintf(out, " %s\n", b->filename);
		shown++;
	}
	if (kernel)
		fprintf(out, "%s kernel and modules: %zu\n", shown ? "           " : "build ids: ",
			kernel);
}

int perfdata_print_info(const struct capture *cap, FILE *out)
{
	if (!cap || !out)
		return -EINVAL;
	if (cap->path)
		fprintf(out, "capture:    %s (%" PRIu64 " bytes)\n", cap->path, cap->file_size);
	print_host(cap, out);
	print_events(cap, out);
	print_pt(cap, out);
	print_buffers(cap, out);
	print_records(cap, out);
	print_threads(cap, out);
	print_mappings(cap, out);
	print_triggers(cap, out);
	if (cap->vdso)
		fprintf(out, "vdso:       %zu bytes stored\n", cap->vdso_size);
	print_build_ids(cap, out);
	if (cap->kcore_dir)
		fprintf(out, "kcore:      %s\n", cap->kcore_dir);
	return ferror(out) ? -EIO : 0;
}
