/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Unit-test helpers: run the shared FXT validator, name temp files. */
#ifndef PTBPF_TEST_FXTCHECK_RUN_H
#define PTBPF_TEST_FXTCHECK_RUN_H

#include <stddef.h>

/* The validator (env FXTCHECK, else ../shared or /work/shared), or NULL if not found. */
const char *fxtcheck_path(void);
/*
 * Checks FILE as `python3 fxtcheck.py FLAGS FILE` would (FLAGS: --strict, --stacks);
 * returns its exit status (-1 if it could not run) and, when out is not NULL, its stdout
 * in a malloc'd string. fxtcheck_run() asks one python process kept for the whole test
 * binary; fxtcheck_cli() runs the command itself.
 */
int fxtcheck_run(const char *file, const char *flags, char **out);
int fxtcheck_cli(const char *file, const char *flags, char **out);
/* A path in $TMPDIR (or /tmp) unique to this process and call: ptbpf-TAG-PID-N.EXT */
void test_tmp_path(char *buf, size_t size, const char *tag, const char *ext);
/* Whole file in a malloc'd buffer (NUL-terminated); size in *len. NULL on error. */
char *test_read_file(const char *path, size_t *len);

/* Event records of an FXT trace with an argument named `arg` (a minimal reader). */
int test_fxt_count_arg(const void *data, size_t len, const char *arg);
/* Whether /dev/full (writes fail with ENOSPC) can be opened; prints a SKIP line if not. */
int test_have_dev_full(void);

/* In a cmocka test: skip it, saying why, when the validator is missing. */
#define NEED_FXTCHECK()                                                                            \
	do {                                                                                       \
		if (!fxtcheck_path()) {                                                            \
			printf("SKIP: fxtcheck.py not found (set FXTCHECK)\n");                    \
			skip();                                                                    \
		}                                                                                  \
	} while (0)

#endif
