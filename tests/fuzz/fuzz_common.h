/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Shared by the libFuzzer harnesses of tests/fuzz/ (see README.md there): the input as
 * a file the code under test opens by path, as the CLI's would be, and the test data
 * the harnesses decode against, found through PTBPF_FUZZ_DATA (tests/fuzz/data).
 */
#ifndef PTBPF_FUZZ_COMMON_H
#define PTBPF_FUZZ_COMMON_H

#include <stddef.h>
#include <stdint.h>

/*
 * Writes `size` bytes to the harness's memfd number `slot` (0..3) and returns its path,
 * /proc/self/fd/N. The same memfd is truncated and rewritten at each call.
 */
const char *fuzz_file(int slot, const void *data, size_t size);

/* tests/fuzz/data/NAME: $PTBPF_FUZZ_DATA/NAME, else tests/fuzz/data/NAME from the top directory. */
const char *fuzz_data(const char *name);

#endif
