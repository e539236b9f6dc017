/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Unit-test helpers: run the FXT validator (tests/tools/fxtcheck.c), name temp files. */
#ifndef PTBPF_TEST_FXTCHECK_RUN_H
#define PTBPF_TEST_FXTCHECK_RUN_H

#include <stddef.h>

/* The validator (env FXTCHECK, else build/tests/fxtcheck beside the test), or NULL. */
const char *fxtcheck_path(void);
/*
 * Runs `fxtcheck FLAGS FILE` (FLAGS: --strict, --stacks); returns its exit status (-1 if
 * it could not run) and, when out is not NULL, its stdout in a malloc'd string.
 */
int fxtcheck_run(const char *file, const char *flags, char **out);
/* A path in $TMPDIR (or /tmp) unique to this process and call: ptbpf-TAG-PID-N.EXT */
void test_tmp_path(char *buf, size_t size, const char *tag, const char *ext);
/* Whole file in a malloc'd buffer (NUL-terminated); size in *len. NULL on error. */
char *test_read_file(const char *path, size_t *len);

/* Event records of an FXT trace with an argument named `arg` (a minimal reader). */
int test_fxt_count_arg(const void *data, size_t len, const char *arg);
/* Whether /dev/full (writes fail with ENOSPC) can be opened; prints a SKIP line if not. */
int test_have_dev_full(void);

/* In a cmocka test: the validator is built with the tests (make), so its absence fails. */
#define NEED_FXTCHECK()                                                                            \
	do {                                                                                       \
		if (!fxtcheck_path())                                                              \
			fail_msg("build/tests/fxtcheck not found (make builds it; or set FXTCHECK)"); \
	} while (0)

#endif
