/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The capture command line (default mode), parsed once into struct capture_opts. */
#ifndef PTBPF_CLI_H
#define PTBPF_CLI_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <linux/types.h>

#include "trigger_abi.h"

/* One trigger as the user gave it, in command-line order. */
struct trigger_spec {
	enum trigger_kind kind;		/* UPROBE (may become UPROBE_LATENCY), KPROBE, ... */
	char *arg;			/* "BIN:SYM[+OFF]", "BIN:0xADDR", "SYM", "CAT:NAME", NULL */
	uint64_t latency_ns;		/* latency triggers: threshold */
	int syscall_nr;			/* SYSCALL_LATENCY with --syscall: number, else -1 */
	char *syscall_name;
};

enum backend_kind {
	BACKEND_AUTO = 0,
	BACKEND_PT,
	BACKEND_SINGLESTEP,
};

enum pt_timing {
	TIMING_MTC = 0,			/* perf's default: TSC + MTC */
	TIMING_TSC,
	TIMING_CYC,
};

enum ss_clock {
	SS_CLOCK_VIRTUAL = 0,		/* fixed ns per instruction: deterministic */
	SS_CLOCK_REAL,			/* TSC read at each step */
	SS_CLOCK_MIXED,			/* fixed ns per instruction, plus the real time while
					 * every thread waits in the kernel (the default) */
};

#define MAX_FILTERS 8

struct capture_opts {
	/* triggers */
	struct trigger_spec triggers[MAX_TRIGGERS];
	int nr_triggers;
	uint64_t latency_over_ns;	/* --latency-over, 0 if not given */

	/* conditions, all enforced in the kernel where a BPF trigger is involved */
	uint64_t nth;			/* fire on the Nth qualifying hit (1 = first) */
	uint64_t max_snapshots;		/* 1 by default */
	bool max_snapshots_set;		/* given on the command line (--dry-run: else no limit) */
	uint64_t cooldown_ns;
	uint64_t warmup_ns;
	uint64_t duration_ns;		/* 0: no limit */
	bool snapshot_on_exit;		/* snapshot at the session's end even if no trigger fired */
	bool dry_run;			/* triggers only, JSON lines on stdout */
	bool fire_once_per_arm;		/* set by the capture, not an option: after a fire the
					 * BPF triggers stay quiet until triggers__arm() */

	/* scope */
	pid_t pid;			/* -p PID, 0 if a command is given */
	char **cmd;			/* -- CMD ARGS (NULL-terminated), NULL with -p */
	/* --uprobe '?PATTERN': list the program's matching functions, do not trace */
	char *pick_bin;
	const char *pick_pattern;
	bool system_wide;
	bool follow_forks;

	/* output */
	char *output;			/* -o FILE.fxt[.gz], NULL: ptbpf-<comm>-<pid>-<time>.fxt */
	bool keep_capture;
	char *keep_capture_path;	/* NULL: next to the output, .data instead of .fxt */
	bool decode;			/* --decode=no clears it */
	bool kernel;			/* --kernel: trace and decode the kernel too */
	int jobs;			/* decoder threads (-j), 0: all cores */
	bool no_fast;			/* --no-fast: libipt's block decoder alone */
	bool verify_fast;		/* --verify-fast: decode both ways, fail at a difference */

	/* backends */
	enum backend_kind backend;
	uint64_t buffer_size;		/* per-CPU ring bytes, power of two */
	int cpus;			/* singlestep: virtual CPUs */
	enum ss_clock clock;		/* singlestep */
	bool verify;			/* singlestep: check the encoded PT against the steps */
	enum pt_timing timing;		/* pt */
	bool timing_given;		/* --timing given; else mtc where the CPU has it */
	int psb_period;			/* pt: -1 = default */
	bool noretcomp;
	char *filters[MAX_FILTERS];	/* pt: --filter BIN:SYM */
	int nr_filters;

	int verbose;
};

/*
 * Parse the capture command line (argv[0] is "ptbpf"). Returns 0, or 2 after printing
 * a one-line error (usage error). --help/--version/--usage print and exit(0) in argp.
 */
int cli_parse_capture(int argc, char **argv, struct capture_opts *opts);
void cli_free_capture(struct capture_opts *opts);

struct argp;
struct argp_state;
/*
 * Run argp with ptbpf's conventions: --help/--usage/--version added, every usage error
 * on one line naming the option, exit status 2. Returns 0 or 2. Used by every
 * subcommand's parser.
 */
int cli_parse(const struct argp *argp, int argc, char **argv, unsigned flags, void *input);
/* Print "<cmd>: <message> (see <cmd> --help)" and return EINVAL, for argp parsers. */
int usage_error(struct argp_state *state, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/*
 * The one errno -> exit status rule of every command: 0 for 0; 2 when the user's input
 * or what the host lacks is at fault (an invalid value, a file, symbol or process not
 * found, no permission, a feature or device the host does not have); 1 when the job
 * itself failed (no memory, I/O...).
 */
int exit_status(int err);

/* "10ms", "200us", "5s", "100ns": a unit is required. Returns 0 or -EINVAL. */
int parse_duration(const char *s, uint64_t *ns);
/* "4M", "512K", "1G", "4096": bytes. Returns 0 or -EINVAL. */
int parse_size(const char *s, uint64_t *bytes);
/* A non-negative integer in [min, max]. Returns 0 or -EINVAL / -ERANGE. */
int parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out);
/* Prints a duration with a fitting unit ("1.50ms") into buf. */
const char *fmt_duration(uint64_t ns, char *buf, size_t size);

#endif /* PTBPF_CLI_H */
