// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * libFuzzer harness: the perf.data reader (perfdata_read) and the capture summary
 * (perfdata_print_info), as `ptbpf decode --info FILE` runs them on a file.
 */
#include <stdio.h>
#include <stdlib.h>

#include "fuzz_common.h"
#include "perfdata.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static FILE *devnull;
	struct capture *cap;

	if (!devnull && !(devnull = fopen("/dev/null", "w")))
		abort();
	if (perfdata_read(fuzz_file(0, data, size), &cap))
		return 0;
	perfdata_print_info(cap, devnull);
	capture__free(cap);
	return 0;
}
