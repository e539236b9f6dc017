/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Where a capture session writes: the trace (-o, default ptbpf-<comm>-<pid>-<time>.fxt),
 * the kept perf.data (--keep-capture), one numbered pair per snapshot when
 * --max-snapshots > 1. Nothing existing is overwritten silently: an existing file is
 * moved to FILE.old with a notice, as perf record does with perf.data.
 */
#ifndef PTBPF_OUTPUT_PLAN_H
#define PTBPF_OUTPUT_PLAN_H

#include <stdbool.h>
#include <time.h>
#include <sys/types.h>

struct output_plan {
	char *fxt;		/* trace path of snapshot 1 (or the only one) */
	char *data;		/* perf.data path, NULL unless --keep-capture */
	bool numbered;		/* more than one snapshot: insert ".N" before the extension */
};

/*
 * Work out the names. `output` and `keep_path` are the user's (NULL: defaults from comm,
 * pid and `start`); `keep` asks for the perf.data. Checks now that the directories are
 * writable, so a capture never runs only to fail at the end. Returns 0, or -errno after
 * one line saying what is wrong.
 */
int output_plan__init(struct output_plan *p, const char *output, bool keep, const char *keep_path,
		      const char *comm, pid_t pid, time_t start, bool numbered);
void output_plan__free(struct output_plan *p);

/* The paths of snapshot `n` (from 1); caller frees. NULL `data` when not kept. */
int output_plan__paths(const struct output_plan *p, unsigned n, char **fxt, char **data);

/*
 * Whether a file can be written at `path`: its directory exists and is writable, and it
 * is not a directory; an existing device or FIFO (-o /dev/null) is written in place when
 * the writer `streamed` its output, and refused otherwise (a perf.data is renamed into
 * place). Prints the one-line reason with the fix. Returns 0 or -errno.
 */
int output_check_path(const char *path, bool streamed);

/*
 * If `path` is an existing regular file, rename it to `path`.old (`path`.old.2, .3...
 * when that is taken: no backup is overwritten) and say so; anything else (nothing, a
 * device, a FIFO) is left as it is. Returns 0 or -errno, said on stderr.
 */
int output_move_aside(const char *path);

/* `path` with its extension (".fxt", ".fxt.gz", ".data") replaced by `ext`; caller frees. */
char *output_replace_ext(const char *path, const char *ext);

#endif /* PTBPF_OUTPUT_PLAN_H */
