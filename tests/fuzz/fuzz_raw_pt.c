// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * libFuzzer harness: raw PT decoded as `ptbpf decode --raw-pt` does, against two images
 * (DynamoRIO's static hello, data/hello, as linked; data/code.bin, small code with calls,
 * a system call and `jmp .`, at 0x10000000). The first input byte chooses one of the
 * CPU and timing configurations below (errata, MTC/CTC ratios, TSC frequency); the rest
 * is the trace. tests/integration/fuzz_regressions.sh replays an input with the same
 * options on the command line: keep the two tables equal.
 */
#include <stdlib.h>

#include "fuzz_common.h"
#include "ptdecode.h"

#define CODE_BIN_VADDR 0x10000000ull

static const struct raw_config {
	uint32_t family, model, stepping;
	uint32_t mtc_freq, nom_freq, eax, ebx;
	uint64_t tsc_hz;
} configs[] = {
	{ 0 },							/* no CPU, ticks */
	{ 6, 85, 4, 3, 37, 2, 308, 2000000000 },		/* Skylake-SP, DynamoRIO's */
	{ 6, 61, 4, 0, 0, 0, 0, 0 },				/* Broadwell: BDM errata */
	{ 6, 126, 5, 0, 0, 0, 0, 0 },				/* Ice Lake */
	{ 6, 94, 3, 9, 24, 2, 200, 2400000000 },		/* Skylake client, MTC 9 */
	{ 6, 142, 10, 0, 40, 2, 216, 0 },			/* Kaby Lake, no MTC */
	{ 6, 151, 2, 15, 255, 1, 4294967295u, 1 },		/* extremes */
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct raw_image images[2] = {
		{ .path = fuzz_data("hello"), .elf = true },
		{ .path = fuzz_data("code.bin"), .vaddr = CODE_BIN_VADDR },
	};
	struct decode_opts opts = { .output = "/dev/null", .format = DECODE_FXT, .jobs = 1 };
	const struct raw_config *c;
	struct raw_decode_opts raw;
	struct decode_stats st;

	if (size < 2)
		return 0;
	c = &configs[data[0] % (sizeof(configs) / sizeof(configs[0]))];
	raw = (struct raw_decode_opts){
		.pt_path = fuzz_file(0, data + 1, size - 1),
		.images = images,
		.nr_images = 2,
		.cpu_family = c->family,
		.cpu_model = c->model,
		.cpu_stepping = c->stepping,
		.mtc_freq = c->mtc_freq,
		.nom_freq = c->nom_freq,
		.cpuid_0x15_eax = c->eax,
		.cpuid_0x15_ebx = c->ebx,
		.tsc_hz = c->tsc_hz,
	};
	ptdecode_raw(&raw, &opts, &st);
	return 0;
}
