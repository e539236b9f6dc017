// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* `ptbpf decode`: a capture (perf.data) or raw PT with images -> FXT, text or a call list. */
#include <argp.h>
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "callstack.h"
#include "captures.h"
#include "cli.h"
#include "commands.h"
#include "log.h"
#include "output_plan.h"
#include "open_ui.h"
#include "perfdata.h"
#include "ptdecode.h"
#include "s3.h"

#define MAX_RAW_IMAGES 4096
#define MAX_SELECTED 4096

struct decode_env {
	const char *capture;		/* positional: perf.data file or directory */
	struct decode_opts opts;
	struct raw_decode_opts raw;
	struct raw_image *images;	/* --elf / --raw, in command-line order */
	unsigned nr_images;
	bool have_raw_params;		/* a raw-only option was given */
	bool stats;
	struct s3_cli_opts s3;		/* for an s3:// CAPTURE */
	unsigned open_port;		/* --open: serve the FXT to ui.perfetto.dev, 0: no */
	const char *info;		/* --info FILE */
	int verbose;
	uint32_t pids[MAX_SELECTED], tids[MAX_SELECTED];	/* --pid, --tid */
};

static const char decode_doc[] =
	"Decode a capture into a Fuchsia trace (FXT) that ui.perfetto.dev opens.\n"
	"\n"
	"CAPTURE is a perf.data file (or directory) written by ptbpf --keep-capture or by "
	"`perf record -e intel_pt//`, or either compressed with zstd (.perf.data.zst, as the "
	"daemon spools them), or a fleet capture in object storage, "
	"s3://BUCKET/KEY.perf.data.zst (fetched, its sha256 checked, then decoded). With "
	"--raw-pt, a raw PT dump is decoded against the "
	"images given with --elf and --raw, as libipt's ptxed does."
	"\v"
	"Examples:\n"
	"  ptbpf decode run.data -o run.fxt\n"
	"  ptbpf decode perf.data --sysroot ./symfs -o trace.fxt.gz\n"
	"  ptbpf decode perf.data --format text -o -\n"
	"  ptbpf decode --raw-pt pt.bin --elf ./hello --cpu 6/85/4 --mtc-freq 3 \\\n"
	"      --nom-freq 37 --cpuid-0x15 2,308 -o hello.fxt\n"
	"  ptbpf decode --info perf.data\n"
	"  ptbpf decode s3://captures/fleet/v1/slow/2026/12/01/web-17/NAME.perf.data.zst "
	"--config /etc/ptbpf/ptbpf.yaml -o t.fxt\n"
	"\n"
	"--format text prints, per thread, one line per slice: DEPTH NAME BEGIN_NS END_NS. "
	"--format calls prints one line per control-flow event: PID/TID TIME KIND FROM TO NAME.";

enum {
	OPT_RAW_PT = 0x100,
	OPT_ELF,
	OPT_RAW,
	OPT_CPU,
	OPT_MTC_FREQ,
	OPT_NOM_FREQ,
	OPT_CPUID_15,
	OPT_TSC_HZ,
	OPT_SYSROOT,
	OPT_DEBUG_DIR,
	OPT_FORMAT,
	OPT_STATS,
	OPT_STRICT,
	OPT_KERNEL,
	OPT_INFO,
	OPT_PROGRESS,
	OPT_OPEN,
	OPT_PID,
	OPT_TID,
	OPT_WINDOW,
	OPT_NO_FAST,
	OPT_VERIFY_FAST,
};

static const struct argp_option decode_options[] = {
	{ NULL, 0, NULL, 0, "Output:", 1 },
	{ "output", 'o', "FILE", 0,
	  "Output file: .fxt, .fxt.gz (compressed), or - for stdout (text and calls formats)" },
	{ "format", OPT_FORMAT, "fxt|text|calls", 0, "Output format (default fxt)" },
	{ "stats", OPT_STATS, NULL, 0,
	  "Print instructions, blocks, calls, errors, syncs, bytes, time and cache hit rates on "
	  "stderr" },
	{ "info", OPT_INFO, "FILE", 0, "Summarise a capture (CPUs, PT config, buffers, threads)" },
	{ "open", OPT_OPEN, "PORT", OPTION_ARG_OPTIONAL,
	  "Then open the trace in the Perfetto UI (ui.perfetto.dev): served once on "
	  "127.0.0.1:PORT (default 9001, the port the UI accepts)" },

	{ NULL, 0, NULL, 0, "What to decode (of a capture):", 2 },
	{ "pid", OPT_PID, "PID[,PID...]", 0,
	  "Only these processes; the stretches of trace where none ran are skipped "
	  "(repeatable)" },
	{ "tid", OPT_TID, "TID[,TID...]", 0, "Only these threads (repeatable; with --pid: either)" },
	{ "window", OPT_WINDOW, "DUR", 0,
	  "Only the last DUR before the trigger (the capture's end without one), from the "
	  "PSB before it" },

	{ NULL, 0, NULL, 0, "Finding the code:", 3 },
	{ "sysroot", OPT_SYSROOT, "DIR", 0,
	  "Look for the capture's binaries under DIR (as perf's --symfs)" },
	{ "debug-dir", OPT_DEBUG_DIR, "DIR", 0,
	  "Build-id cache holding binaries and debug files (default ~/.debug)" },
	{ "kernel", OPT_KERNEL, NULL, 0,
	  "Decode kernel code too, from the capture's kcore copy and kallsyms" },
	{ "strict", OPT_STRICT, NULL, 0,
	  "Fail on a missing binary or a decode error instead of marking it in the trace" },
	{ "no-fast", OPT_NO_FAST, NULL, 0,
	  "Decode with libipt's block decoder alone, without the fast path (run cache; a "
	  "capture with under 128 KiB of PT to decode is decoded so by default)" },
	{ "verify-fast", OPT_VERIFY_FAST, NULL, 0,
	  "First decode every stream both ways (block decoder, fast path) and fail at the "
	  "first difference, naming it" },

	{ NULL, 0, NULL, 0, "Raw PT (ptxed style):", 4 },
	{ "raw-pt", OPT_RAW_PT, "FILE", 0, "Decode raw PT from FILE instead of a capture" },
	{ "elf", OPT_ELF, "FILE[:BASE]", 0,
	  "Load the executable segments of an ELF file; BASE: where its lowest segment goes "
	  "(repeatable)" },
	{ "raw", OPT_RAW, "FILE[:FROM[-TO]]:VADDR", 0,
	  "Load bytes FROM..TO (default: all) of FILE at VADDR (repeatable)" },
	{ "cpu", OPT_CPU, "F/M/S", 0,
	  "CPU family/model/stepping of the recording CPU (enables its errata workarounds)" },
	{ "mtc-freq", OPT_MTC_FREQ, "N", 0, "MTC frequency (IA32_RTIT_CTL.MTCFreq)" },
	{ "nom-freq", OPT_NOM_FREQ, "N", 0, "Nominal frequency ratio (max non-turbo)" },
	{ "cpuid-0x15", OPT_CPUID_15, "EAX,EBX", 0, "CPUID leaf 0x15: TSC/CTC ratio EBX/EAX" },
	{ "tsc-hz", OPT_TSC_HZ, "HZ", 0, "TSC frequency, for times in ns (default: ticks)" },

	{ NULL, 0, NULL, 0, "Other:", 5 },
	{ "jobs", 'j', "N", 0,
	  "Decoder threads (default: number of cores); more threads than CPUs split a CPU's "
	  "trace at PSBs, with the same output; -j 1 decodes in sequence" },
	{ "progress", OPT_PROGRESS, NULL, 0,
	  "Show progress on stderr when decoding takes more than a second (default on a tty)" },
	{ "verbose", 'v', NULL, 0, "More output; repeat for debug output" },
	{},
};

/* "PATH:NUMBER" -> number; the path keeps anything that is not a number after ':'. */
static bool split_number(char *arg, uint64_t *v)
{
	char *colon = strrchr(arg, ':');

	if (!colon || parse_u64(colon + 1, 0, UINT64_MAX, v))
		return false;
	*colon = '\0';
	return true;
}

static int add_image(struct argp_state *state, struct decode_env *env, const char *opt,
		     const char *arg)
{
	struct raw_image *im;
	char *copy;

	if (env->nr_images >= MAX_RAW_IMAGES)
		return usage_error(state, "too many images (at most %d)", MAX_RAW_IMAGES);
	if (!env->images) {
		env->images = calloc(MAX_RAW_IMAGES, sizeof(*env->images));
		if (!env->images)
			return ENOMEM;
	}
	copy = strdup(arg);
	if (!copy)
		return ENOMEM;
	im = &env->images[env->nr_images];
	im->path = copy;
	if (!strcmp(opt, "--elf")) {
		im->elf = true;
		split_number(copy, &im->vaddr);
	} else {
		char *colon, *dash;

		if (!split_number(copy, &im->vaddr))
			return usage_error(state, "invalid --raw '%s': expected "
					   "FILE[:FROM[-TO]]:VADDR", arg);
		/* an optional FROM[-TO] before the address */
		colon = strrchr(copy, ':');
		if (colon) {
			dash = strchr(colon + 1, '-');
			if (dash)
				*dash = '\0';
			if (!parse_u64(colon + 1, 0, UINT64_MAX, &im->from) &&
			    (!dash || !parse_u64(dash + 1, 0, UINT64_MAX, &im->to))) {
				*colon = '\0';
				if (dash && im->to <= im->from)
					return usage_error(state, "invalid --raw '%s': TO must be "
							   "greater than FROM", arg);
			} else {
				if (dash)
					*dash = '-';
				im->from = im->to = 0;
			}
		}
	}
	env->nr_images++;
	env->have_raw_params = true;
	return 0;
}

static int u32_arg(struct argp_state *state, const char *opt, const char *arg, uint32_t max,
		   uint32_t *out)
{
	uint64_t v;

	if (parse_u64(arg, 0, max, &v))
		return usage_error(state, "invalid value for %s: '%s' (an integer from 0 to %u)",
				   opt, arg, max);
	*out = (uint32_t)v;
	return 0;
}

/* "1,2,3" appended to list[*nr]. */
static int id_list(struct argp_state *state, const char *opt, const char *arg, uint32_t *list,
		   size_t *nr)
{
	const char *p = arg;

	do {
		char num[16];
		size_t len = strcspn(p, ",");
		uint64_t v;

		if (!len || len >= sizeof(num))
			return usage_error(state, "invalid %s '%s': expected numbers separated by "
					   "commas, e.g. 1234,1240", opt, arg);
		memcpy(num, p, len);
		num[len] = '\0';
		if (parse_u64(num, 0, UINT32_MAX - 1, &v))
			return usage_error(state, "invalid %s '%s': expected numbers separated by "
					   "commas, e.g. 1234,1240", opt, arg);
		if (*nr >= MAX_SELECTED)
			return usage_error(state, "too many %s values (at most %d)", opt,
					   MAX_SELECTED);
		list[(*nr)++] = (uint32_t)v;
		p += len;
	} while (*p++ == ',');
	return 0;
}

static error_t parse_decode_opt(int key, char *arg, struct argp_state *state)
{
	struct decode_env *env = state->input;
	struct raw_decode_opts *raw = &env->raw;
	unsigned f, m, s;
	uint64_t v;
	char tail;

	switch (key) {
	case 'o':
		env->opts.output = arg;
		return 0;
	case OPT_FORMAT:
		if (!strcmp(arg, "fxt"))
			env->opts.format = DECODE_FXT;
		else if (!strcmp(arg, "text"))
			env->opts.format = DECODE_TEXT;
		else if (!strcmp(arg, "calls"))
			env->opts.format = DECODE_CALLS;
		else
			return usage_error(state, "invalid --format '%s': fxt, text or calls", arg);
		return 0;
	case OPT_STATS:
		env->stats = true;
		return 0;
	case OPT_INFO:
		env->info = arg;
		return 0;
	case OPT_OPEN:
		env->open_port = PERFETTO_UI_PORT;
		if (arg && (parse_u64(arg, 1, 65535, &v) || !v))
			return usage_error(state, "invalid --open port '%s' (1 to 65535)", arg);
		if (arg)
			env->open_port = (unsigned)v;
		return 0;
	case OPT_SYSROOT:
		env->opts.sysroot = arg;
		return 0;
	case OPT_DEBUG_DIR:
		env->opts.debug_dir = arg;
		return 0;
	case OPT_KERNEL:
		env->opts.kernel = true;
		return 0;
	case OPT_STRICT:
		env->opts.strict = true;
		return 0;
	case OPT_RAW_PT:
		raw->pt_path = arg;
		return 0;
	case OPT_ELF:
		return add_image(state, env, "--elf", arg);
	case OPT_RAW:
		return add_image(state, env, "--raw", arg);
	case OPT_CPU:
		if (sscanf(arg, "%u/%u/%u%c", &f, &m, &s, &tail) != 3 || !f || f > 0xffff ||
		    m > 0xff || s > 0xff)
			return usage_error(state, "invalid --cpu '%s': expected "
					   "FAMILY/MODEL/STEPPING, e.g. 6/85/4", arg);
		raw->cpu_family = f;
		raw->cpu_model = m;
		raw->cpu_stepping = s;
		env->have_raw_params = true;
		return 0;
	case OPT_MTC_FREQ:
		env->have_raw_params = true;
		return u32_arg(state, "--mtc-freq", arg, 15, &raw->mtc_freq);
	case OPT_NOM_FREQ:
		env->have_raw_params = true;
		return u32_arg(state, "--nom-freq", arg, 255, &raw->nom_freq);
	case OPT_CPUID_15:
		if (sscanf(arg, "%u,%u%c", &f, &m, &tail) != 2)
			return usage_error(state, "invalid --cpuid-0x15 '%s': expected EAX,EBX, "
					   "e.g. 2,308", arg);
		raw->cpuid_0x15_eax = f;
		raw->cpuid_0x15_ebx = m;
		env->have_raw_params = true;
		return 0;
	case OPT_TSC_HZ:
		if (parse_u64(arg, 1, UINT64_MAX, &v))
			return usage_error(state, "invalid --tsc-hz '%s': a positive integer", arg);
		raw->tsc_hz = v;
		env->have_raw_params = true;
		return 0;
	case 'j':
		if (parse_u64(arg, 1, 1024, &v))
			return usage_error(state, "invalid value for -j: '%s' (an integer "
					   "from 1 to 1024)", arg);
		env->opts.jobs = (int)v;
		return 0;
	case OPT_PROGRESS:
		env->opts.progress = true;
		return 0;
	case OPT_PID:
		return id_list(state, "--pid", arg, env->pids, &env->opts.nr_pids);
	case OPT_TID:
		return id_list(state, "--tid", arg, env->tids, &env->opts.nr_tids);
	case OPT_NO_FAST:
		env->opts.no_fast = true;
		return 0;
	case OPT_VERIFY_FAST:
		env->opts.verify_fast = true;
		return 0;
	case OPT_WINDOW:
		if (parse_duration(arg, &v) || !v)
			return usage_error(state, "invalid --window '%s': a duration with a unit, "
					   "e.g. 50ms", arg);
		env->opts.window_ns = v;
		return 0;
	case 'v':
		env->verbose++;
		return 0;
	case ARGP_KEY_INIT:
		state->child_inputs[0] = &env->s3;
		return 0;
	case ARGP_KEY_ARG:
		if (env->capture)
			return usage_error(state, "more than one capture: '%s' and '%s'",
					   env->capture, arg);
		env->capture = arg;
		return 0;
	case ARGP_KEY_END:
		if (env->info)
			return 0;
		if (env->raw.pt_path && env->capture)
			return usage_error(state, "give a CAPTURE or --raw-pt FILE, not both");
		if (!env->raw.pt_path && !env->capture)
			return usage_error(state, "nothing to decode: give a CAPTURE or "
					   "--raw-pt FILE");
		if (env->raw.pt_path && (env->opts.nr_pids || env->opts.nr_tids ||
					 env->opts.window_ns))
			return usage_error(state, "--pid, --tid and --window go with a CAPTURE "
					   "(raw PT has no threads or trigger)");
		if (!env->raw.pt_path && env->have_raw_params)
			return usage_error(state, "--elf, --raw, --cpu, --mtc-freq, --nom-freq, "
					   "--cpuid-0x15 and --tsc-hz go with --raw-pt");
		if (env->raw.pt_path && !env->nr_images)
			return usage_error(state, "--raw-pt needs the code: give --elf FILE "
					   "or --raw FILE:VADDR");
		if (!env->opts.output && env->opts.format == DECODE_FXT)
			return usage_error(state, "missing -o OUT.fxt (or --format text -o -)");
		if (env->open_port && (env->opts.format != DECODE_FXT ||
				       !strcmp(env->opts.output, "-")))
			return usage_error(state, "--open needs an FXT file: -o OUT.fxt");
		return 0;
	default:
		return ARGP_ERR_UNKNOWN;
	}
}

static void print_stats(const struct decode_stats *st)
{
	double mb = st->bytes / 1e6;

	fprintf(stderr,
		"instructions  %" PRIu64 "\n"
		"blocks        %" PRIu64 "\n"
		"calls         %" PRIu64 "\n"
		"returns       %" PRIu64 "\n"
		"errors        %" PRIu64 "\n"
		"overflows     %" PRIu64 "\n"
		"gaps          %" PRIu64 " (kernel AUX flags: %" PRIu64 " truncated, %" PRIu64
		" partial, %" PRIu64 " collision)\n"
		"syncs         %" PRIu64 "\n"
		"bytes         %" PRIu64 "\n"
		"skipped       %" PRIu64 " bytes\n"
		"threads       %" PRIu64 "\n"
		"span          %.6f s\n"
		"time          %.3f s (%.1f MB/s of PT)\n",
		st->insns, st->blocks, st->calls, st->returns, st->errors, st->overflows,
		st->gaps, st->aux_truncated, st->aux_partial, st->aux_collision, st->syncs, st->bytes, st->skipped, st->threads,
		st->last_time > st->first_time ? (st->last_time - st->first_time) / 1e9 : 0.0,
		st->seconds, st->seconds > 0 ? mb / st->seconds : 0.0);
	if (st->fast_lookups || st->fast_fallbacks)
		fprintf(stderr, "fast path     %" PRIu64 " of %" PRIu64 " blocks (%.1f %%; %.1f %% "
			"in stretches), run cache hits %.1f %% of %" PRIu64 " lookups (%" PRIu64
			" runs decoded, %" PRIu64 " copied from another stream's), %" PRIu64
			" flushes; stretches through %" PRIu64 " calls and returns; block decoder "
			"took over %" PRIu64 " times, replaying %" PRIu64
			" blocks\n",
			st->fast_blocks, st->blocks,
			st->blocks ? 100.0 * (double)st->fast_blocks / (double)st->blocks : 0.0,
			st->blocks ? 100.0 * (double)st->fast_stretched / (double)st->blocks : 0.0,
			st->fast_lookups ? 100.0 * (double)st->fast_hits / (double)st->fast_lookups
					 : 0.0,
			st->fast_lookups, st->fast_lookups - st->fast_hits - st->fast_stored,
			st->fast_stored, st->fast_flushes, st->fast_edges, st->fast_fallbacks,
			st->fast_replayed);
	else if (st->fast_off_small)
		fprintf(stderr, "fast path     off: %" PRIu64 " bytes of PT, too few for it to pay "
			"(PTBPF_FAST_MIN_PT)\n", st->bytes);
	/* a line of its own: the "fast path" line is the same whatever the query engine */
	if (st->fast_tl_lookups)
		fprintf(stderr, "tracelets     hits %.1f %% of %" PRIu64 " lookups, walking %.1f %% "
			"of blocks; %" PRIu64 " evicted\n",
			100.0 * (double)st->fast_tl_hits / (double)st->fast_tl_lookups,
			st->fast_tl_lookups,
			st->blocks ? 100.0 * (double)st->fast_tl_blocks / (double)st->blocks : 0.0,
			st->fast_tl_evictions);
	if (st->split_pieces)
		fprintf(stderr, "split         %" PRIu64 " pieces, %" PRIu64 " bytes decoded again "
			"(%.1f %% of the bytes)\n", st->split_pieces, st->split_redecoded,
			st->bytes ? 100.0 * (double)st->split_redecoded / (double)st->bytes : 0.0);
	if (st->sym_lookups)
		fprintf(stderr, "symbol cache  hits %.2f %% of %" PRIu64 " lookups, %" PRIu64 " misses "
			"(call-stack builder, %u entries)\n",
			100.0 * (double)st->sym_hits / (double)st->sym_lookups, st->sym_lookups,
			st->sym_lookups - st->sym_hits, CS_SYM_CACHE_ENTRIES);
	if (st->output_cpu > 0)
		fprintf(stderr, "output side   %.3f s CPU, %.1f ns per call or return (PTBPF_OUTPUT_CPU)\n",
			st->output_cpu, st->calls + st->returns ?
			1e9 * st->output_cpu / (double)(st->calls + st->returns) : 0.0);
	if (st->slowest_ns) {
		char buf[32];

		fprintf(stderr, "slowest call  %s in %u/%u: %s\n",
			fmt_duration(st->slowest_ns, buf, sizeof(buf)), st->slowest_pid,
			st->slowest_tid, st->slowest_path);
	}
}

/* Remove the files of a flat temporary directory, then the directory. */
static void remove_tree(const char *dir)
{
	struct dirent *de;
	char path[4096];
	DIR *d = opendir(dir);

	while (d && (de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		unlink(path);
	}
	if (d)
		closedir(d);
	rmdir(dir);
}

/*
 * s3://BUCKET/KEY: capture and manifest into a private temporary directory (sha256
 * checked); `local` is the capture there, .perf.data.zst as uploaded (perfdata_read()
 * inflates it).
 */
static int fetch_s3_capture(struct decode_env *env, char *tmp_dir, size_t tmp_size,
			    char *local, size_t local_size)
{
	const char *tmp = getenv("TMPDIR");
	char *bucket = NULL, *key = NULL;
	struct s3_client *c = NULL;
	int err;

	if (s3_url__parse(env->capture, &bucket, &key) || !*key) {
		elog("invalid capture URL '%s': expected s3://BUCKET/KEY.perf.data.zst\n",
		     env->capture);
		err = -EINVAL;
		goto out;
	}
	snprintf(tmp_dir, tmp_size, "%s/ptbpf-s3-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(tmp_dir)) {
		err = -errno;
		elog("cannot create a temporary directory %s: %s\n", tmp_dir, strerror(errno));
		tmp_dir[0] = '\0';
		goto out;
	}
	err = s3_cli_client(&env->s3, bucket, &c, NULL);
	if (!err)
		err = captures_fetch(c, bucket, key, tmp_dir, local, local_size);
out:
	s3_client__free(c);
	free(bucket);
	free(key);
	return err;
}

int cmd_decode(int argc, char **argv)
{
	static const struct argp_child children[] = { { &s3_cli_argp, 0, NULL, 0 }, {} };
	static const struct argp argp = {
		.children = children,
		.options = decode_options,
		.parser = parse_decode_opt,
		.args_doc = "CAPTURE",
		.doc = decode_doc,
	};
	static struct decode_env env;
	struct decode_stats stats = {};
	struct capture *cap = NULL;
	char tmp_dir[4096] = "", local[4096];
	unsigned i;
	int err;

	memset(&env, 0, sizeof(env));
	env.opts.format = DECODE_FXT;
	env.opts.progress = isatty(STDERR_FILENO);
	env.opts.pids = env.pids;
	env.opts.tids = env.tids;
	err = cli_parse(&argp, argc, argv, 0, &env);
	if (err)
		goto cleanup;
	ptbpf_log_level = env.verbose;
	if (env.info) {
		err = cmd_decode_info(env.info);
		goto cleanup;
	}
	if (env.opts.output && !strcmp(env.opts.output, "-"))
		env.opts.output = NULL;
	/* before decoding, not after: a bad -o must not cost the decode */
	if (env.opts.output && output_check_path(env.opts.output, true)) {
		err = 2;
		goto cleanup;
	}
	if (!env.opts.jobs) {
		long n = sysconf(_SC_NPROCESSORS_ONLN);

		env.opts.jobs = n > 0 ? (int)n : 1;
	}

	if (env.raw.pt_path) {
		env.raw.images = env.images;
		env.raw.nr_images = env.nr_images;
		err = ptdecode_raw(&env.raw, &env.opts, &stats);
	} else if (!strncmp(env.capture, "s3://", 5)) {
		err = fetch_s3_capture(&env, tmp_dir, sizeof(tmp_dir), local, sizeof(local));
		if (!err)
			err = perfdata_read(local, &cap);
		if (!err)
			err = ptdecode_capture(cap, &env.opts, &stats);
	} else {
		err = perfdata_read(env.capture, &cap);
		if (!err)
			err = ptdecode_capture(cap, &env.opts, &stats);
	}
	if (env.stats && (!err || stats.bytes))
		print_stats(&stats);
	/* Damage is said even without --stats: one line; the output marks each place. */
	if (!env.stats && (stats.errors || stats.overflows || stats.gaps) &&
	    (!err || err == -EIO))
		elog("%" PRIu64 " decode error(s), %" PRIu64 " overflow(s), %" PRIu64 " gap(s) the "
		     "kernel reported (gaps in the trace): each is marked in %s; --stats for more\n",
		     stats.errors, stats.overflows, stats.gaps,
		     env.opts.output ? env.opts.output : "the output");
	if (!err && env.open_port) {
		/* the trace is written; Ctrl-C before the UI fetched it is the user's choice,
		 * a port in use a failure (said by perfetto_open) */
		if (perfetto_open(env.opts.output, env.open_port) == -EADDRINUSE)
			err = 1;
		goto cleanup;
	}
	if (err) {
		/* the decoder leaves naming the output to its caller: capture says it its way */
		if (stats.write_err)
			elog("cannot write %s: %s\n", env.opts.output ? env.opts.output : "stdout",
			     strerror(-stats.write_err));
		else if (err == -EIO && env.opts.strict && stats.errors)
			elog("%" PRIu64 " decode error(s) (--strict)\n", stats.errors);
		err = 1;
	}

cleanup:
	capture__free(cap);
	if (tmp_dir[0])
		remove_tree(tmp_dir);
	for (i = 0; i < env.nr_images; i++)
		free((char *)env.images[i].path);
	free(env.images);
	return err;
}
