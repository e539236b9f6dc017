// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Capture command line: argp with sections, in the retsnoop / libbpf-tools style. */
#include <argp.h>
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "array.h"
#include "cli.h"
#include "log.h"
#include "target.h"

const char *argp_program_version = "ptbpf " PTBPF_VERSION;
const char *argp_program_bug_address = NULL;

static const char capture_doc[] =
	"A flight recorder for a process's control flow. Intel PT (or, where the CPU has "
	"none, a software PT encoder single-stepping the target) records into small per-CPU "
	"rings that overwrite themselves; BPF triggers decide the moment; the rings are "
	"frozen, decoded and written as a Fuchsia trace (FXT) that ui.perfetto.dev opens.\n"
	"\n"
	"Commands:\n"
	"  ptbpf [TRIGGERS] [OPTIONS] (-p PID | -- CMD [ARGS])  capture (default)\n"
	"  ptbpf decode [OPTIONS] CAPTURE -o OUT.fxt            decode (file, s3://)\n"
	"  ptbpf captures ls|get s3://BUCKET/...                fleet captures in S3\n"
	"  ptbpf doctor [--json]                                what this host supports\n"
	"  ptbpf symbols BIN [PATTERN]                          functions to trigger on\n"
	"  ptbpf daemon [--config FILE] | status                fleet agent: rules, spool\n"
	"Each command has its own --help."
	"\v"
	"Durations take ns/us/ms/s suffixes; sizes take K/M/G. With no trigger, the "
	"snapshot is taken on Ctrl-C or when the target exits.\n"
	"\n"
	"Examples:\n"
	"  ptbpf --uprobe ./bin:slow_path -- ./bin\n"
	"      snapshot when slow_path is entered\n"
	"  ptbpf --uprobe slow_path -- ./bin\n"
	"      the same: a function without BIN: is the traced program's\n"
	"  ptbpf --uprobe '?slow' -- ./bin\n"
	"      list ./bin's functions matching 'slow', best first (no capture)\n"
	"  ptbpf --usdt ptbpf:trigger -- ./bin\n"
	"      snapshot where ./bin calls PTBPF_TRIGGER() (include/ptbpf.h)\n"
	"  ptbpf --uprobe ./bin:handle --latency-over 200us -p 1234\n"
	"      snapshot at the return of a handle() call slower than 200us\n"
	"  ptbpf --uprobe './srv:ns::Handler::run' -- ./srv\n"
	"      a C++ or Rust function by its demangled name (or a unique prefix of it);\n"
	"      BIN:SYM splits at the first single ':' after a file that exists\n"
	"  ptbpf --latency-over 2ms -p 1234\n"
	"      snapshot when a thread of 1234 waited more than 2ms to run\n"
	"  ptbpf --syscall-latency-over 5ms --syscall read -p 1234\n"
	"      snapshot when a read() takes more than 5ms\n"
	"  ptbpf --dry-run --uprobe ./bin:slow_path -- ./bin\n"
	"      print each fire as a JSON line, capture nothing\n"
	"  ptbpf -o run.fxt -- ./bin\n"
	"      snapshot on Ctrl-C or when ./bin exits\n"
	"\n"
	"Open the .fxt in https://ui.perfetto.dev (Open trace file).\n"
	"\n"
	"Exit status: 0 when at least one snapshot was written; 1 when none was (the\n"
	"trigger never fired, the target exited first: the reason is printed) or the\n"
	"capture failed; 2 on usage errors and on what the host lacks.";

enum {
	OPT_UPROBE = 0x100,
	OPT_KPROBE,
	OPT_TRACEPOINT,
	OPT_LATENCY_OVER,
	OPT_USDT,
	OPT_SYSCALL_LATENCY_OVER,
	OPT_SYSCALL,
	OPT_NTH,
	OPT_MAX_SNAPSHOTS,
	OPT_COOLDOWN,
	OPT_WARMUP,
	OPT_DURATION,
	OPT_SNAPSHOT_ON_EXIT,
	OPT_DRY_RUN,
	OPT_SYSTEM_WIDE,
	OPT_FOLLOW_FORKS,
	OPT_KEEP_CAPTURE,
	OPT_DECODE,
	OPT_KERNEL,
	OPT_BACKEND,
	OPT_BUFFER_SIZE,
	OPT_CPUS,
	OPT_CLOCK,
	OPT_VERIFY,
	OPT_TIMING,
	OPT_PSB_PERIOD,
	OPT_NORETCOMP,
	OPT_FILTER,
	OPT_NO_FAST,
	OPT_VERIFY_FAST,
};

static const struct argp_option capture_options[] = {
	{ NULL, 0, NULL, 0, "Triggers (any number; the first that fires freezes the rings):", 1 },
	{ "uprobe", OPT_UPROBE, "[BIN:]SYM[+OFF]", 0,
	  "Fire when the function is entered (also BIN:0xADDR), by any thread of the target; "
	  "without BIN: a function of the traced program; '?PATTERN': list the program's "
	  "functions matching PATTERN, ranked, and exit. SYM: as in the symbol table, or a "
	  "C++/Rust name demangled (ns::f, ns::f(int)) or a unique prefix of one; BIN:SYM "
	  "splits at the first single ':' after a file that exists" },
	{ "usdt", OPT_USDT, "[BIN:]PROVIDER:NAME", 0,
	  "Fire when the program passes its USDT probe (<sys/sdt.h>, PTBPF_TRIGGER() of "
	  "include/ptbpf.h); without BIN: the traced program's" },
	{ "kprobe", OPT_KPROBE, "SYM", 0, "Fire when the kernel function is entered" },
	{ "tracepoint", OPT_TRACEPOINT, "CAT:NAME", 0, "Fire on a tracepoint hit in the target" },
	{ "latency-over", OPT_LATENCY_OVER, "DUR", 0,
	  "With --uprobe: fire at the return of a call slower than DUR (under singlestep, "
	  "its length on the trace's clock). Alone: fire when a thread of the target waited "
	  "runnable longer than DUR (not under singlestep). Once; DUR > 0" },
	{ "syscall-latency-over", OPT_SYSCALL_LATENCY_OVER, "DUR", 0,
	  "Fire when a syscall of the target takes longer than DUR" },
	{ "syscall", OPT_SYSCALL, "NAME", 0, "Only this syscall (with --syscall-latency-over)" },

	{ NULL, 0, NULL, 0, "Conditions (enforced in the kernel):", 2 },
	{ "nth", OPT_NTH, "N", 0, "Fire on the Nth qualifying hit (default 1)" },
	{ "max-snapshots", OPT_MAX_SNAPSHOTS, "N", 0,
	  "Keep capturing up to N snapshots, one output file each (default 1)" },
	{ "cooldown", OPT_COOLDOWN, "DUR", 0, "Ignore hits for DUR after a fire" },
	{ "warmup", OPT_WARMUP, "DUR", 0, "Ignore hits until the rings have run for DUR" },
	{ "duration", OPT_DURATION, "DUR", 0, "Stop after DUR" },
	{ "snapshot-on-exit", OPT_SNAPSHOT_ON_EXIT, NULL, 0,
	  "When the session ends before a trigger fired (--duration, Ctrl-C, the target's "
	  "exit), take a snapshot anyway (always so without triggers)" },
	{ "dry-run", OPT_DRY_RUN, NULL, 0,
	  "Run the triggers only and print each fire as a JSON line (no capture)" },

	{ NULL, 0, NULL, 0, "Scope:", 3 },
	{ "pid", 'p', "PID", 0, "Attach to a running process (all its threads)" },
	{ "system-wide", OPT_SYSTEM_WIDE, NULL, 0, "Triggers fire for any thread on the host" },
	{ "follow-forks", OPT_FOLLOW_FORKS, NULL, 0,
	  "Also trace children the target forks (triggers fire in them only with --system-wide)" },

	{ NULL, 0, NULL, 0, "Output:", 4 },
	{ "output", 'o', "FILE", 0,
	  "Trace file (.fxt, or .fxt.gz to compress); default ptbpf-<comm>-<pid>-<time>.fxt; "
	  "a directory (existing, or ending in /): that default name in it. An existing "
	  "file is kept as FILE.old (.old.2, ...)" },
	{ "keep-capture", OPT_KEEP_CAPTURE, "FILE", OPTION_ARG_OPTIONAL,
	  "Keep the perf.data capture (readable by perf script); default name: the output's "
	  "with .data" },
	{ "decode", OPT_DECODE, "yes|no", 0, "--decode=no keeps only the capture" },
	{ "kernel", OPT_KERNEL, NULL, 0, "Also trace and decode the kernel (needs /proc/kcore)" },
	{ "jobs", 'j', "N", 0, "Decoder threads (default: number of cores)" },
	{ "no-fast", OPT_NO_FAST, NULL, 0,
	  "Decode with libipt's block decoder alone, without the fast path (as ptbpf "
	  "decode --no-fast; a capture with under 128 KiB of PT is decoded so by default)" },
	{ "verify-fast", OPT_VERIFY_FAST, NULL, 0,
	  "Decode every stream both ways first (block decoder, fast path) and fail at the "
	  "first difference, naming it (as ptbpf decode --verify-fast; -v says it ran)" },

	{ NULL, 0, NULL, 0, "Backends:", 5 },
	{ "backend", OPT_BACKEND, "pt|singlestep", 0,
	  "pt: Intel PT hardware (default where present). singlestep: software PT from a "
	  "ptraced target (default elsewhere; 10^4 to 10^5 times slower while the "
	  "program computes: each run states its own figure)" },
	{ "buffer-size", OPT_BUFFER_SIZE, "SIZE", 0,
	  "Per-CPU ring size, a power of two (default 4M)" },
	{ "cpus", OPT_CPUS, "N", 0,
	  "singlestep: virtual CPUs threads are scheduled on (default 2; --clock mixed adds "
	  "up to 6 so that no thread's clock has to wait for a CPU's)" },
	{ "clock", OPT_CLOCK, "mixed|virtual|real", 0,
	  "singlestep: mixed (default): each thread's own clock, 2 ns per instruction plus "
	  "its system calls as the kernel ran them (BPF), threads ordered where they "
	  "synchronise (atomics, every wake of one by another, a load after a store); "
	  "virtual: one clock, instructions "
	  "only, deterministic; real: the clock at each step (shows the stepping overhead)" },
	{ "verify", OPT_VERIFY, NULL, 0,
	  "singlestep: decode the encoded PT and compare with the stepped instructions" },
	{ "timing", OPT_TIMING, "tsc|mtc|cyc", 0, "Timing packets (default mtc)" },
	{ "psb-period", OPT_PSB_PERIOD, "N", 0, "A PSB every 2^(N+11) bytes" },
	{ "noretcomp", OPT_NORETCOMP, NULL, 0, "Disable return compression" },
	{ "filter", OPT_FILTER, "BIN:SYM", 0, "pt: trace only this function (an address range in the target; Linux 5.18+)" },

	{ NULL, 0, NULL, 0, "Other:", 6 },
	{ "verbose", 'v', NULL, 0, "More output; repeat for debug output (-vv, -vvv)" },
	{},
};

int parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
	unsigned long long v;
	char *end;

	if (!s || !*s || *s == '-' || isspace((unsigned char)*s))
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno == ERANGE)
		return -ERANGE;
	if (errno || *end)
		return -EINVAL;
	if (v < min || v > max)
		return -ERANGE;
	*out = v;
	return 0;
}

int parse_duration(const char *s, uint64_t *ns)
{
	static const struct {
		const char *unit;
		uint64_t mult;
	} units[] = { { "ns", 1 }, { "us", 1000 }, { "ms", 1000000 }, { "s", 1000000000 } };
	unsigned long long v;
	char *end;
	size_t i;

	if (!s || !isdigit((unsigned char)*s))
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno)
		return -EINVAL;
	for (i = 0; i < ARRAY_SIZE(units); i++) {
		if (strcmp(end, units[i].unit))
			continue;
		if (v > UINT64_MAX / units[i].mult)
			return -ERANGE;
		*ns = v * units[i].mult;
		return 0;
	}
	return -EINVAL;
}

int parse_size(const char *s, uint64_t *bytes)
{
	unsigned long long v;
	uint64_t mult = 1;
	char *end;

	if (!s || !isdigit((unsigned char)*s))
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno)
		return -EINVAL;
	switch (toupper((unsigned char)*end)) {
	case '\0':
		break;
	case 'K':
		mult = 1ull << 10;
		break;
	case 'M':
		mult = 1ull << 20;
		break;
	case 'G':
		mult = 1ull << 30;
		break;
	default:
		return -EINVAL;
	}
	if (*end && end[1] && strcasecmp(end + 1, "B") && strcasecmp(end + 1, "iB"))
		return -EINVAL;
	if (v > UINT64_MAX / mult)
		return -ERANGE;
	*bytes = v * mult;
	return 0;
}

const char *fmt_duration(uint64_t ns, char *buf, size_t size)
{
	if (ns >= 1000000000ull)
		snprintf(buf, size, "%.2fs", ns / 1e9);
	else if (ns >= 1000000ull)
		snprintf(buf, size, "%.2fms", ns / 1e6);
	else if (ns >= 1000ull)
		snprintf(buf, size, "%.2fus", ns / 1e3);
	else
		snprintf(buf, size, "%lluns", (unsigned long long)ns);
	return buf;
}

/* Set once a parser has explained an error, so ARGP_KEY_ERROR does not add a second line. */
static bool usage_reported;

int exit_status(int err)
{
	switch (err) {
	case 0:
		return 0;
	case -EINVAL:
	case -ENOENT:
	case -ENOEXEC:
	case -ENODATA:
	case -EOPNOTSUPP:
	case -ESRCH:
	case -EPERM:
	case -EACCES:
	case -ENAMETOOLONG:
	case -ENODEV:
		return 2;
	default:
		return 1;
	}
}

int usage_error(struct argp_state *state, const char *fmt, ...)
{
	log_sink_fn sink;
	char msg[512];
	void *ctx;
	va_list ap;

	usage_reported = true;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	/* the daemon parses a rule's trigger as a command line: the error goes with its line */
	log_get_sink(&sink, &ctx);
	if (sink) {
		sink(ctx, LOG_ERROR, msg);
		return EINVAL;
	}
	fprintf(stderr, "%s: %s (see %s --help)\n", state->name, msg, state->name);
	return EINVAL;
}

enum {
	OPT_STD_HELP = 0x7f00,
	OPT_STD_USAGE,
	OPT_STD_VERSION,
};

static const struct argp_option std_options[] = {
	{ NULL, 0, NULL, 0, "Help:", -1 },
	{ "help", OPT_STD_HELP, NULL, 0, "Give this help list" },
	{ "usage", OPT_STD_USAGE, NULL, 0, "Give a short usage message" },
	{ "version", OPT_STD_VERSION, NULL, 0, "Print the version" },
	{},
};

/* --help, --usage, --version, and argp's own errors as one line each. */
static error_t parse_std_opt(int key, char *arg, struct argp_state *state)
{
	switch (key) {
	case OPT_STD_HELP:
		/* argp_state_help() is silent under ARGP_NO_ERRS; argp_help() is not. */
		argp_help(state->root_argp, stdout, ARGP_HELP_STD_HELP, state->name);
		exit(0);
	case OPT_STD_USAGE:
		argp_help(state->root_argp, stdout, ARGP_HELP_USAGE, state->name);
		exit(0);
	case OPT_STD_VERSION:
		printf("%s\n", argp_program_version);
		exit(0);
	case ARGP_KEY_ERROR:
		/* ARGP_NO_ERRS keeps argp quiet: name the culprit here. */
		if (!usage_reported && state->next > 0 && state->next <= state->argc)
			usage_error(state, "unrecognized option or missing value: '%s'",
				    state->argv[state->next - 1]);
		return 0;
	default:
		return ARGP_ERR_UNKNOWN;
	}
}

static const struct argp std_argp = {
	.options = std_options,
	.parser = parse_std_opt,
};

int cli_parse(const struct argp *argp, int argc, char **argv, unsigned flags, void *input)
{
	struct argp_child children[8] = {};
	const struct argp_child *c;
	struct argp with_std = *argp;
	size_t n = 0;

	/* the command's own children (shared option groups) first: their child_inputs
	 * indexes stay the command's */
	for (c = argp->children; c && c->argp && n < ARRAY_SIZE(children) - 2; c++)
		children[n++] = *c;
	children[n] = (struct argp_child){ &std_argp, 0, NULL, 0 };
	with_std.children = children;
	usage_reported = false;
	return argp_parse(&with_std, argc, argv, flags | ARGP_NO_ERRS | ARGP_NO_HELP, NULL,
			  input) ? 2 : 0;
}

static int add_trigger(struct argp_state *state, struct capture_opts *o, enum trigger_kind kind,
		       const char *arg)
{
	struct trigger_spec *t;

	if (o->nr_triggers >= MAX_TRIGGERS)
		return usage_error(state, "too many triggers (at most %d)", MAX_TRIGGERS);
	t = &o->triggers[o->nr_triggers++];
	t->kind = kind;
	t->syscall_nr = -1;
	if (arg) {
		t->arg = strdup(arg);
		if (!t->arg)
			return ENOMEM;
	}
	return 0;
}

static int duration_arg(struct argp_state *state, const char *opt, const char *arg,
			uint64_t *ns)
{
	if (parse_duration(arg, ns))
		return usage_error(state, "invalid duration for %s: '%s' (a number with a unit: "
				   "ns, us, ms or s, e.g. 200us)", opt, arg);
	return 0;
}

static int count_arg(struct argp_state *state, const char *opt, const char *arg, uint64_t min,
		     uint64_t max, uint64_t *out)
{
	if (parse_u64(arg, min, max, out))
		return usage_error(state, "invalid value for %s: '%s' (an integer from %llu to %llu)",
				   opt, arg, (unsigned long long)min, (unsigned long long)max);
	return 0;
}

/* A latency threshold: a duration above 0 (0 would fire on every call). */
static int threshold_arg(struct argp_state *state, const char *opt, const char *arg,
			 uint64_t *ns)
{
	int err = duration_arg(state, opt, arg, ns);

	if (!err && !*ns)
		return usage_error(state, "invalid %s '%s': a latency threshold must be more "
				   "than 0 (e.g. 200us)", opt, arg);
	return err;
}

/* One of a fixed set of words: --backend pt|singlestep and the like. */
struct choice {
	const char *word;
	int value;
};

static int choice_arg(struct argp_state *state, const char *opt, const char *arg,
		      const struct choice *choices, size_t n, int *out)
{
	char words[128];
	size_t i, len = 0;

	for (i = 0; i < n; i++) {
		if (!strcmp(arg, choices[i].word)) {
			*out = choices[i].value;
			return 0;
		}
		len += snprintf(words + len, sizeof(words) - len, "%s%s",
				i ? (i + 1 == n ? " or " : ", ") : "", choices[i].word);
		if (len >= sizeof(words))
			len = sizeof(words) - 1;
	}
	return usage_error(state, "invalid %s '%s': %s", opt, arg, words);
}

#define CHOICE(state, opt, arg, choices, out)                                                      \
	choice_arg(state, opt, arg, choices, ARRAY_SIZE(choices), (int *)(out))

static const struct choice yes_no[] = { { "yes", 1 }, { "no", 0 } };
static const struct choice backends[] = { { "pt", BACKEND_PT },
					   { "singlestep", BACKEND_SINGLESTEP } };
static const struct choice clocks[] = { { "mixed", SS_CLOCK_MIXED },
					 { "virtual", SS_CLOCK_VIRTUAL },
					 { "real", SS_CLOCK_REAL } };
static const struct choice timings[] = { { "tsc", TIMING_TSC }, { "mtc", TIMING_MTC },
					  { "cyc", TIMING_CYC } };

static error_t parse_capture_opt(int key, char *arg, struct argp_state *state)
{
	struct capture_opts *o = state->input;
	uint64_t v;
	int err;

	switch (key) {
	case OPT_UPROBE:
		/* FUNC without BIN: the traced program's (program_uprobe()) */
		if (!*arg || *arg == ':')
			return usage_error(state, "invalid --uprobe '%s': expected [BIN:]SYM[+OFF], "
					   "BIN:0xADDR or '?PATTERN'", arg);
		return add_trigger(state, o, TRIGGER_UPROBE, arg);
	case OPT_KPROBE:
		return add_trigger(state, o, TRIGGER_KPROBE, arg);
	case OPT_USDT:
		return add_trigger(state, o, TRIGGER_USDT, arg);
	case OPT_TRACEPOINT:
		if (!strchr(arg, ':'))
			return usage_error(state, "invalid --tracepoint '%s': expected CAT:NAME, "
					   "e.g. sched:sched_switch", arg);
		return add_trigger(state, o, TRIGGER_TRACEPOINT, arg);
	case OPT_LATENCY_OVER:
		/* one threshold serves every --uprobe: a second one would silently win */
		if (o->latency_over_ns)
			return usage_error(state, "--latency-over given twice (second: '%s'): it "
					   "applies to every --uprobe, give it once", arg);
		return threshold_arg(state, "--latency-over", arg, &o->latency_over_ns);
	case OPT_SYSCALL_LATENCY_OVER:
		err = add_trigger(state, o, TRIGGER_SYSCALL_LATENCY, NULL);
		if (err)
			return err;
		return threshold_arg(state, "--syscall-latency-over", arg,
				     &o->triggers[o->nr_triggers - 1].latency_ns);
	case OPT_SYSCALL: {
		int i;

		for (i = o->nr_triggers - 1; i >= 0; i--)
			if (o->triggers[i].kind == TRIGGER_SYSCALL_LATENCY)
				break;
		if (i < 0)
			return usage_error(state, "--syscall %s needs a --syscall-latency-over "
					   "before it", arg);
		free(o->triggers[i].syscall_name);
		o->triggers[i].syscall_name = strdup(arg);
		return o->triggers[i].syscall_name ? 0 : ENOMEM;
	}
	case OPT_NTH:
		return count_arg(state, "--nth", arg, 1, UINT32_MAX, &o->nth);
	case OPT_MAX_SNAPSHOTS:
		o->max_snapshots_set = true;
		return count_arg(state, "--max-snapshots", arg, 1, 100000, &o->max_snapshots);
	case OPT_COOLDOWN:
		return duration_arg(state, "--cooldown", arg, &o->cooldown_ns);
	case OPT_WARMUP:
		return duration_arg(state, "--warmup", arg, &o->warmup_ns);
	case OPT_DURATION:
		if (duration_arg(state, "--duration", arg, &o->duration_ns))
			return EINVAL;
		/* 0 is how "no --duration" is kept: taken, it would run until Ctrl-C */
		if (!o->duration_ns)
			return usage_error(state, "invalid --duration '%s': it must be more than 0 "
					   "(without --duration the session lasts until a trigger, "
					   "Ctrl-C or the target's exit)", arg);
		return 0;
	case OPT_SNAPSHOT_ON_EXIT:
		o->snapshot_on_exit = true;
		return 0;
	case OPT_DRY_RUN:
		o->dry_run = true;
		return 0;
	case 'p':
		if (count_arg(state, "-p", arg, 1, INT32_MAX, &v))
			return EINVAL;
		o->pid = (pid_t)v;
		return 0;
	case OPT_SYSTEM_WIDE:
		o->system_wide = true;
		return 0;
	case OPT_FOLLOW_FORKS:
		o->follow_forks = true;
		return 0;
	case 'o':
		free(o->output);
		o->output = strdup(arg);
		return o->output ? 0 : ENOMEM;
	case OPT_KEEP_CAPTURE:
		/*
		 * The argument is optional, so getopt only takes "--keep-capture=FILE"; take
		 * the DESIGN's "--keep-capture FILE.data" too (a command never ends in .data).
		 */
		if (!arg && state->next < state->argc) {
			const char *next = state->argv[state->next];
			size_t len = strlen(next);

			if (len > 5 && !strcmp(next + len - 5, ".data"))
				arg = state->argv[state->next++];
		}
		o->keep_capture = true;
		free(o->keep_capture_path);
		o->keep_capture_path = arg ? strdup(arg) : NULL;
		return arg && !o->keep_capture_path ? ENOMEM : 0;
	case OPT_DECODE: {
		int yes = 1;

		if (CHOICE(state, "--decode", arg, yes_no, &yes))
			return EINVAL;
		o->decode = yes;
		return 0;
	}
	case OPT_KERNEL:
		o->kernel = true;
		return 0;
	case 'j':
		if (count_arg(state, "-j", arg, 1, 1024, &v))
			return EINVAL;
		o->jobs = (int)v;
		return 0;
	case OPT_NO_FAST:
		o->no_fast = true;
		return 0;
	case OPT_VERIFY_FAST:
		o->verify_fast = true;
		return 0;
	case OPT_BACKEND:
		return CHOICE(state, "--backend", arg, backends, &o->backend);
	case OPT_BUFFER_SIZE:
		if (parse_size(arg, &v) || v < 4096 || (v & (v - 1)))
			return usage_error(state, "invalid --buffer-size '%s': a power of two of at "
					   "least 4K, e.g. 4M", arg);
		o->buffer_size = v;
		return 0;
	case OPT_CPUS:
		if (count_arg(state, "--cpus", arg, 1, 64, &v))
			return EINVAL;
		o->cpus = (int)v;
		return 0;
	case OPT_CLOCK:
		return CHOICE(state, "--clock", arg, clocks, &o->clock);
	case OPT_VERIFY:
		o->verify = true;
		return 0;
	case OPT_TIMING:
		o->timing_given = true;
		return CHOICE(state, "--timing", arg, timings, &o->timing);
	case OPT_PSB_PERIOD:
		if (count_arg(state, "--psb-period", arg, 0, 15, &v))
			return EINVAL;
		o->psb_period = (int)v;
		return 0;
	case OPT_NORETCOMP:
		o->noretcomp = true;
		return 0;
	case OPT_FILTER:
		if (o->nr_filters >= MAX_FILTERS)
			return usage_error(state, "too many --filter (at most %d)", MAX_FILTERS);
		if (!strchr(arg, ':'))
			return usage_error(state, "invalid --filter '%s': expected BIN:SYM", arg);
		o->filters[o->nr_filters] = strdup(arg);
		if (!o->filters[o->nr_filters])
			return ENOMEM;
		o->nr_filters++;
		return 0;
	case 'v':
		o->verbose++;
		return 0;
	case ARGP_KEY_ARG:
		/* The first non-option starts the command: take it and everything after. */
		o->cmd = &state->argv[state->next - 1];
		state->next = state->argc;
		return 0;
	case ARGP_KEY_END:
		if (o->pid && o->cmd)
			return usage_error(state, "give either -p PID or -- CMD, not both");
		if (!o->pid && !o->cmd && !(o->dry_run && o->system_wide))
			return usage_error(state, "nothing to trace: give -p PID or -- CMD [ARGS]");
		if (o->output && !strcmp(o->output, "-") && !o->dry_run)
			return usage_error(state, "-o -: a capture would write binary FXT into the "
					   "standard output the traced program shares; give a file "
					   "name (ptbpf decode writes to -)");
		return 0;
	default:
		return ARGP_ERR_UNKNOWN;
	}
}

/* The traced program's executable: the command's file, or the -p process's. */
static int program_path(const struct capture_opts *o, char **out)
{
	char link[64], buf[PATH_MAX];
	ssize_t n;
	int err;

	if (o->cmd) {
		err = target_resolve_command(o->cmd[0], out);
		if (err)
			elog("cannot run '%s': %s\n", o->cmd[0], strerror(-err));
		return err;
	}
	if (!o->pid) {
		elog("--uprobe FUNC without BIN: names a function of the traced program; with "
		     "--system-wide give BIN:FUNC\n");
		return -EINVAL;
	}
	snprintf(link, sizeof(link), "/proc/%d/exe", o->pid);
	n = readlink(link, buf, sizeof(buf) - 1);
	if (n < 0) {
		err = -errno;
		elog("cannot find the executable of PID %d (%s): %s\n", o->pid, link,
		     strerror(-err));
		return err;
	}
	buf[n] = '\0';
	*out = strdup(buf);
	return *out ? 0 : -ENOMEM;
}

/*
 * --uprobe FUNC (no BIN:) means the traced program's function, as magic-trace's
 * -trigger FUNC does; --uprobe '?PATTERN' (or BIN:?PATTERN) asks for the picker.
 * A spec with a colon keeps its BIN, unless it is a C++ name ("ns::f") and no file
 * "ns" exists.
 */
static int program_uprobe(struct capture_opts *o, struct trigger_spec *t)
{
	char *colon = strchr(t->arg, ':'), *bin = NULL, *spec;
	int err;

	if (colon && colon[1] == '?') {
		*colon = '\0';
		o->pick_bin = strdup(t->arg);
		o->pick_pattern = colon + 2;
		return o->pick_bin ? 0 : -ENOMEM;
	}
	if (colon && t->arg[0] != '?') {
		bool qualified;

		/* "ns::f" alone is a C++ name of the program, unless a file "ns" exists */
		*colon = '\0';
		qualified = colon[1] == ':' && access(t->arg, F_OK);
		*colon = ':';
		if (!qualified)
			return 0;
	}
	err = program_path(o, &bin);
	if (err)
		return err;
	if (t->arg[0] == '?') {
		o->pick_bin = bin;
		o->pick_pattern = t->arg + 1;
		return 0;
	}
	if (asprintf(&spec, "%s:%s", bin, t->arg) < 0) {
		free(bin);
		return -ENOMEM;
	}
	free(bin);
	free(t->arg);
	t->arg = spec;
	return 0;
}

/* --usdt PROVIDER:NAME (one colon): a probe of the traced program. */
static int program_usdt(struct capture_opts *o, struct trigger_spec *t)
{
	char *colon = strchr(t->arg, ':'), *bin = NULL, *spec;
	int err;

	if (!colon || strchr(colon + 1, ':'))
		return 0;
	err = program_path(o, &bin);
	if (err)
		return err;
	err = asprintf(&spec, "%s:%s", bin, t->arg) < 0 ? -ENOMEM : 0;
	free(bin);
	if (err)
		return err;
	free(t->arg);
	t->arg = spec;
	return 0;
}

/* Turn --latency-over into the trigger it means, once every option is known. */
static int resolve_triggers(struct capture_opts *o)
{
	bool have_uprobe = false;
	int i;

	for (i = 0; i < o->nr_triggers; i++) {
		if (o->triggers[i].kind == TRIGGER_USDT && program_usdt(o, &o->triggers[i]))
			return 2;
		if (o->triggers[i].kind != TRIGGER_UPROBE)
			continue;
		if (program_uprobe(o, &o->triggers[i]))
			return 2;
		have_uprobe = true;
		if (o->latency_over_ns) {
			o->triggers[i].kind = TRIGGER_UPROBE_LATENCY;
			o->triggers[i].latency_ns = o->latency_over_ns;
		}
	}
	if (o->latency_over_ns && !have_uprobe) {
		struct trigger_spec *t;

		if (o->nr_triggers >= MAX_TRIGGERS) {
			elog("too many triggers (at most %d)\n", MAX_TRIGGERS);
			return 2;
		}
		t = &o->triggers[o->nr_triggers++];
		t->kind = TRIGGER_RUNQ_LATENCY;
		t->latency_ns = o->latency_over_ns;
		t->syscall_nr = -1;
	}
	return 0;
}

int cli_parse_capture(int argc, char **argv, struct capture_opts *o)
{
	static const struct argp argp = {
		.options = capture_options,
		.parser = parse_capture_opt,
		.args_doc = "(-p PID | -- CMD [ARGS...])",
		.doc = capture_doc,
	};
	int err;

	*o = (struct capture_opts){
		.nth = 1,
		.max_snapshots = 1,
		.decode = true,
		.buffer_size = 4ull << 20,
		.cpus = 2,
		.clock = SS_CLOCK_MIXED,
		.psb_period = -1,
	};
	err = cli_parse(&argp, argc, argv, ARGP_IN_ORDER, o);
	if (err)
		return err;
	ptbpf_log_level = o->verbose;
	return resolve_triggers(o);
}

void cli_free_capture(struct capture_opts *o)
{
	int i;

	for (i = 0; i < o->nr_triggers; i++) {
		free(o->triggers[i].arg);
		free(o->triggers[i].syscall_name);
	}
	for (i = 0; i < o->nr_filters; i++)
		free(o->filters[i]);
	free(o->output);
	free(o->keep_capture_path);
	free(o->pick_bin);
	o->pick_bin = NULL;
	o->nr_triggers = 0;
	o->nr_filters = 0;
}
