// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * libFuzzer harness: an ELF file as the symbol loader and the image loader take it.
 * Symbols (.symtab/.dynsym, PLT entries, demangling), segments, load bias, build-id
 * notes (of a file and of an in-memory image, as the vDSO), lookups by address and by
 * name; then `ptbpf decode --raw-pt data/elf.pt --elf FILE` (a short trace from
 * 0x401000) and `--elf FILE:0xffffffffff600000` (a base where big segments wrap).
 */
#include <elf.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"
#include "ptdecode.h"
#include "symtab.h"

#define HIGH_BASE 0xffffffffff600000ull

static void symbols(const char *path)
{
	const char *suggest[4];
	struct sym_segment *segs;
	const uint8_t *id;
	struct symtab *st;
	uint8_t buf[64];
	uint32_t nr, size, i;
	bool pie;

	if (!symtab__read_segments(path, &segs, &nr, &pie)) {
		uint64_t bias;

		for (i = 0; i < nr && i < 16; i++)
			symtab__segments_bias(segs, nr, 0x555555554000ull + segs[i].vaddr,
					      segs[i].filesz, segs[i].offset,
					      segs[i].flags & PF_X, &bias);
		free(segs);
	}
	symtab__read_build_id(path, buf, sizeof(buf), &size);
	if (symtab__load(path, &st))
		return;
	symtab__find_name(st, "main");
	symtab__suggest(st, "mian", suggest, 4);
	symtab__build_id(st, &id, &size);
	symtab__is_pie(st);
	for (i = 0; i < symtab__nr_segments(st) && i < 16; i++) {
		const struct sym_segment *s = symtab__segment(st, i);
		uint64_t a, start, end, bias, off;

		for (a = s->vaddr; a < s->vaddr + 64 && a >= s->vaddr; a += 7) {
			symtab__find_addr(st, a);
			symtab__find_range(st, a, &start, &end);
			symtab__addr_to_offset(st, a, &off);
		}
		symtab__load_bias(st, s->vaddr, s->filesz, s->offset, s->flags & PF_X, &bias);
	}
	for (i = 0; symtab__get(st, i) && i < 64; i++) {
		const struct sym *sym = symtab__get(st, i);
		uint64_t start, end;

		symtab__find_addr(st, sym->addr);
		symtab__find_range(st, sym->addr, &start, &end);
		symtab__find_name(st, sym->name);
	}
	symtab__free(st);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct raw_image image = { .elf = true };
	struct raw_decode_opts raw = { .images = &image, .nr_images = 1 };
	struct decode_opts opts = { .output = "/dev/null", .format = DECODE_FXT, .jobs = 1 };
	struct decode_stats st;
	uint8_t id[20], len;

	image.path = fuzz_file(0, data, size);
	raw.pt_path = fuzz_data("elf.pt");
	symbols(image.path);
	symtab__image_build_id(data, size, id, &len);
	ptdecode_raw(&raw, &opts, &st);
	image.vaddr = HIGH_BASE;
	ptdecode_raw(&raw, &opts, &st);
	return 0;
}
