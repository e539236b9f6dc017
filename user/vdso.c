// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <elf.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>

#include "log.h"
#include "vdso.h"

int vdso_find(pid_t pid, uint64_t *start, uint64_t *end)
{
	char path[64], line[512];
	uint64_t lo, hi;
	int err = -ENOENT;
	FILE *f;

	if (pid)
		snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	else
		snprintf(path, sizeof(path), "/proc/self/maps");
	f = fopen(path, "re");
	if (!f)
		return errno == ENOENT ? -ESRCH : -errno;
	while (fgets(line, sizeof(line), f)) {
		size_t n = strcspn(line, "\n");

		line[n] = '\0';
		if (n < 6 || strcmp(line + n - 6, "[vdso]"))
			continue;
		if (sscanf(line, "%" SCNx64 "-%" SCNx64, &lo, &hi) != 2)
			continue;
		*start = lo;
		*end = hi;
		err = 0;
		break;
	}
	fclose(f);
	return err;
}

int vdso_read(uint8_t **bytes, size_t *size)
{
	uint64_t start, end;
	unsigned long ehdr;
	uint8_t *copy;
	int err;

	err = vdso_find(0, &start, &end);
	if (err)
		return err;
	/* The auxiliary vector names the same image; a mismatch means maps lied to us. */
	ehdr = getauxval(AT_SYSINFO_EHDR);
	if (ehdr && ehdr != start) {
		elog("vDSO: AT_SYSINFO_EHDR %#lx is not the [vdso] mapping at %#" PRIx64 "\n",
		     ehdr, start);
		return -EINVAL;
	}
	copy = malloc(end - start);
	if (!copy)
		return -ENOMEM;
	memcpy(copy, (const void *)(uintptr_t)start, end - start);
	*bytes = copy;
	*size = end - start;
	return 0;
}

static int note_build_id(const uint8_t *p, size_t len, uint8_t *id, size_t size)
{
	size_t off = 0;

	while (off + sizeof(Elf64_Nhdr) <= len) {
		const Elf64_Nhdr *nh = (const void *)(p + off);
		size_t name = (nh->n_namesz + 3) & ~3u, desc = (nh->n_descsz + 3) & ~3u;
		size_t body = off + sizeof(*nh);

		if (name > len - body || desc > len - body - name)
			return -EINVAL;
		if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 &&
		    !memcmp(p + body, "GNU", 4)) {
			size_t n = nh->n_descsz < size ? nh->n_descsz : size;

			memcpy(id, p + body + name, n);
			return (int)n;
		}
		off = body + name + desc;
	}
	return -ENOENT;
}

int vdso_build_id(const uint8_t *image, size_t image_size, uint8_t *id, size_t size)
{
	const Elf64_Ehdr *eh = (const void *)image;
	int i, n;

	if (!image || image_size < sizeof(*eh) || memcmp(eh->e_ident, ELFMAG, SELFMAG) ||
	    eh->e_ident[EI_CLASS] != ELFCLASS64 || eh->e_phentsize != sizeof(Elf64_Phdr) ||
	    eh->e_phoff > image_size ||
	    (size_t)eh->e_phnum * sizeof(Elf64_Phdr) > image_size - eh->e_phoff)
		return -EINVAL;
	for (i = 0; i < eh->e_phnum; i++) {
		const Elf64_Phdr *ph = (const void *)(image + eh->e_phoff) + i * sizeof(*ph);

		if (ph->p_type != PT_NOTE)
			continue;
		if (ph->p_offset > image_size || ph->p_filesz > image_size - ph->p_offset)
			return -EINVAL;
		n = note_build_id(image + ph->p_offset, ph->p_filesz, id, size);
		if (n != -ENOENT)
			return n;
	}
	return -ENOENT;
}
