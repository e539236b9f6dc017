// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * libFuzzer harness: a perf.data file read and decoded to FXT, as `ptbpf decode FILE
 * --sysroot tests/fuzz/data/sysroot -j 1 -o OUT.fxt` does: sideband, address spaces,
 * the vDSO bytes a capture holds, libipt over the AUX data, call stacks, FXT.
 * The seeds' binaries (HASE's static programs) are found under data/sysroot.
 */
#include <stdlib.h>

#include "fuzz_common.h"
#include "perfdata.h"
#include "ptdecode.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	/* no ~/.debug of the machine: what is decoded depends on the input only */
	setenv("HOME", fuzz_data("sysroot"), 1);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct decode_opts opts = {
		.output = "/dev/null",
		.format = DECODE_FXT,
		.sysroot = fuzz_data("sysroot"),
		.debug_dir = fuzz_data("sysroot"),
		.jobs = 1,
	};
	struct decode_stats st;
	struct capture *cap;

	if (perfdata_read(fuzz_file(0, data, size), &cap))
		return 0;
	ptdecode_capture(cap, &opts, &st);
	capture__free(cap);
	return 0;
}
