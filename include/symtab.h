/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Function symbols of one ELF file (decoder/symtab.c), read with libelf: used by the
 * triggers (name -> address -> file offset for uprobes) and by the decoder
 * (address -> name). Names are raw (mangled); demangling is the decoder's symbolizer's job.
 */
#ifndef PTBPF_SYMTAB_H
#define PTBPF_SYMTAB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct symtab;

struct sym {
	const char *name;	/* as in the ELF file; PLT entries are "func@plt" */
	uint64_t addr;		/* link-time virtual address (st_value) */
	uint64_t size;		/* bytes, 0 if the symbol has no size */
};

/*
 * Load FUNC symbols from .symtab, else .dynsym, plus PLT entries. Returns 0, -ENOENT,
 * -EACCES, -ENOEXEC (not an ELF file), or -ENODATA (no function symbols: stripped).
 */
int symtab__load(const char *path, struct symtab **out);
void symtab__free(struct symtab *st);

/*
 * The demangled form of a C++ or Rust (legacy and v0) name, as ptbpf prints it (libiberty,
 * with parameters), a "@plt" or "@@VERSION" suffix kept; malloc'd. NULL when the name is
 * not mangled (or not demangled).
 */
char *symtab__demangle(const char *name);

/*
 * The functions a user's name designates (a trigger's SYM): the symbol of exactly that
 * name; else, among C++ and Rust symbols, those whose demangled name is `name` in full
 * ("ns::f(int)"), else without parameters ("ns::f", Rust "m::total" without its hash),
 * else those it is a prefix of ("ns::Handler::ru", "m::sum" of "m::sum::<T>"). Aliases
 * of one address count once. Returns how many functions match at the best of those
 * levels (up to `max`, at most SYMTAB_LOOKUP_MAX, stored in out[]): 1 is the answer,
 * more an ambiguity to list. -EINVAL on bad arguments.
 */
#define SYMTAB_LOOKUP_MAX 16
int symtab__lookup(struct symtab *st, const char *name, const struct sym **out, int max);

/*
 * Exact name match (the first of equal names, preferring global binding). The lookups
 * by name (this, symtab__lookup(), symtab__suggest()) sort the table's name index on
 * their first call: one thread at a time.
 */
const struct sym *symtab__find_name(struct symtab *st, const char *name);
/* The function containing `addr` (link-time address), or NULL. */
const struct sym *symtab__find_addr(const struct symtab *st, uint64_t addr);
/*
 * The function holding `addr`: 0 and its [start, end) (an unsized symbol ends at the next
 * one); or 1 and the gap between functions that holds it. -EINVAL on bad arguments.
 */
int symtab__find_range(const struct symtab *st, uint64_t addr, uint64_t *start, uint64_t *end);
/*
 * Up to `max` names close to `name` (for "did you mean"), C++ and Rust ones compared
 * demangled; out[] holds the symbols' own names (symtab__demangle() them to show them).
 * Returns how many.
 */
int symtab__suggest(struct symtab *st, const char *name, const char **out, int max);
/* File offset of a link-time address, through the PT_LOAD that maps it (uprobe offsets). */
int symtab__addr_to_offset(const struct symtab *st, uint64_t addr, uint64_t *offset);

/* ELF facts the decoder needs. */
bool symtab__is_pie(const struct symtab *st);		/* ET_DYN */
int symtab__build_id(const struct symtab *st, const uint8_t **id, uint32_t *size);
uint32_t symtab__count(const struct symtab *st);
const struct sym *symtab__get(const struct symtab *st, uint32_t i);	/* sorted by addr */
const char *symtab__path(const struct symtab *st);	/* as given to symtab__load() */
/* What symtab__read_debuglink() and ptd_elf_has_symtab() tell of the loaded file. */
const char *symtab__debuglink(const struct symtab *st);	/* NULL: none */
bool symtab__has_symtab(const struct symtab *st);

/* A PT_LOAD program header: what the decoder loads into libipt images. */
struct sym_segment {
	uint64_t vaddr;		/* p_vaddr, link time */
	uint64_t memsz;		/* p_memsz */
	uint64_t offset;	/* p_offset */
	uint64_t filesz;	/* p_filesz */
	uint32_t flags;		/* PF_X, PF_W, PF_R */
};
uint32_t symtab__nr_segments(const struct symtab *st);
const struct sym_segment *symtab__segment(const struct symtab *st, uint32_t i);
/*
 * Load bias of a mapping (MMAP2: `map_len` bytes of file offset `pgoff` mapped at
 * `map_start`, executable or not): run-time address = link-time address + bias, through
 * the PT_LOAD segment the mapping maps (p_vaddr <-> p_offset of that segment: lld's and
 * mold's code segments have p_vaddr != p_offset). 0 for non-PIE executables linked as
 * mapped. Returns 0, or -ENOENT when no PT_LOAD holds the mapped bytes.
 */
int symtab__load_bias(const struct symtab *st, uint64_t map_start, uint64_t map_len,
		      uint64_t pgoff, bool exec, uint64_t *bias);
/* The same, over program headers read with symtab__read_segments(). */
int symtab__segments_bias(const struct sym_segment *segs, uint32_t nr, uint64_t map_start,
			  uint64_t map_len, uint64_t pgoff, bool exec, uint64_t *bias);

/*
 * Without loading symbols: the PT_LOAD segments of an ELF file (caller frees *segs) and
 * whether it is ET_DYN; its GNU build-id (-ENOENT if none). Same errors as symtab__load(),
 * and -EBADMSG for a segment whose bytes are not all in the file or whose addresses wrap
 * past 2^64 (a damaged file: no segment of it is used).
 */
int symtab__read_segments(const char *path, struct sym_segment **segs, uint32_t *nr, bool *pie);
int symtab__read_build_id(const char *path, uint8_t *id, uint32_t cap, uint32_t *size);
/*
 * The DT_SONAME of an ELF file's dynamic section: shared libraries have one, executables
 * (PIE or not) normally do not. Returns 0, -ENOENT if there is none, -EINVAL if malformed.
 */
int symtab__read_soname(const char *path, char *name, size_t size);
/*
 * The file name a .gnu_debuglink section gives for the separate debug file (no
 * directory). Returns 0, -ENOENT if there is none, -EINVAL if it is malformed.
 */
int symtab__read_debuglink(const char *path, char *name, size_t size);
/* The size of name[] the symbolizer passes it, and symtab__debuglink()'s limit. */
#define SYMTAB_DEBUGLINK_MAX 256
/*
 * The GNU build-id of an ELF image in memory (the vDSO), as perf.data holds one: at most 20
 * bytes (a longer one is cut), the rest of id[] zeroed, its length in *len. Returns 0,
 * -ENOENT if the image has no build-id note, or -EINVAL if it is not a 64-bit ELF image.
 */
int symtab__image_build_id(const void *image, size_t size, uint8_t id[20], uint8_t *len);

#endif /* PTBPF_SYMTAB_H */
