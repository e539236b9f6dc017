// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Function symbols of one ELF file, read once with libelf into a sorted array.
 *
 * Lookups are binary searches: by address over the entries (sorted by address, best
 * alias first), by name over a second array of indices sorted by name. Names live in
 * one arena owned by the table, so the ELF file is closed as soon as it is read.
 *
 * PLT entries get "func@plt" names. They are found by reading the PLT sections'
 * instructions: every entry that matters jumps through a GOT slot ("jmp *disp(%rip)",
 * ff 25, possibly after endbr64 and a bnd prefix), and the GOT slot is the target of a
 * JUMP_SLOT or GLOB_DAT relocation naming the function. This covers lazy .plt, the
 * IBT split into .plt/.plt.sec, and .plt.got without knowing each linker's layout.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <stdio.h>
#include <libelf.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <libiberty/demangle.h>

#include "array.h"
#include "log.h"
#include "symtab.h"

/* One symbol of the table. `sym` comes first: symtab__get() hands out its address. */
struct symtab_entry {
	struct sym sym;		/* public view: name, link-time address, st_size */
	uint64_t end;		/* first address past the function: addr + size, or for an
				 * unsized symbol the next symbol or its section's end */
	uint8_t global;		/* STB_GLOBAL (find_name prefers it among equal names) */
};

struct symtab {
	struct symtab_entry *entries;	/* sorted by address, the best alias first */
	uint32_t nr;
	uint32_t *by_name;		/* indices of entries, sorted by name, global first;
					 * NULL until a name is looked up (by_name_index()) */
	char *names;			/* arena holding every name */
	size_t names_len, names_cap;	/* bytes used / allocated in the arena */
	struct sym_segment *segs;	/* PT_LOAD program headers, in file order */
	uint32_t nr_segs;
	uint8_t build_id[64];		/* NT_GNU_BUILD_ID descriptor (build_id_size bytes) */
	uint32_t build_id_size;
	uint16_t e_type;		/* ET_EXEC, ET_DYN... */
	uint64_t e_entry;		/* entry point (link time) */
	char *path;			/* as given to symtab__load() */
	char *debuglink;		/* its .gnu_debuglink file name, NULL: none or bad */
	bool has_symtab;		/* it has a .symtab (not only .dynsym) */
};

/* A symbol as collected, before the arena stops moving (names are arena offsets). */
struct raw_sym {
	size_t name_off;	/* offset of the name in st->names */
	uint64_t addr, size;
	uint64_t sec_end;	/* end of the section holding it: bound for unsized symbols */
	uint32_t seq;		/* order of collection: the symbol table's order */
	uint8_t bind;		/* STB_GLOBAL, STB_WEAK, STB_LOCAL */
	bool shaped;		/* shown_* set (name_shape()): an alias's, before sorting */
	uint16_t shown_underscores;	/* of the name as perf shows it (demangled) */
	uint32_t shown_len;
};

struct collect {
	struct raw_sym *v;	/* collected symbols */
	size_t nr, cap;
};

static int arena_add(struct symtab *st, const char *s, const char *suffix, size_t *off)
{
	size_t len = strlen(s), slen = suffix ? strlen(suffix) : 0;
	size_t need = st->names_len + len + slen + 1;

	if (array_grow_sz((void **)&st->names, &st->names_cap, need, 1))
		return -ENOMEM;
	*off = st->names_len;
	memcpy(st->names + st->names_len, s, len);
	if (slen)
		memcpy(st->names + st->names_len + len, suffix, slen);
	st->names[st->names_len + len + slen] = '\0';
	st->names_len = need;
	return 0;
}

static int collect_add(struct symtab *st, struct collect *c, const char *name, const char *suffix,
		       uint64_t addr, uint64_t size, uint64_t sec_end, uint8_t bind)
{
	struct raw_sym *r;
	int err;

	if (array_grow_sz((void **)&c->v, &c->cap, c->nr + 1, sizeof(*c->v)))
		return -ENOMEM;
	r = &c->v[c->nr];
	err = arena_add(st, name, suffix, &r->name_off);
	if (err)
		return err;
	r->addr = addr;
	r->size = size;
	r->sec_end = sec_end;
	r->seq = (uint32_t)c->nr;
	r->bind = bind;
	c->nr++;
	return 0;
}

char *symtab__demangle(const char *name)
{
	const char *at;
	char *head, *dm, *full;

	if (!name || name[0] != '_' || (name[1] != 'Z' && name[1] != 'R'))
		return NULL;
	/* "_ZN3foo3barEv@plt", "_ZNSt...@@GLIBCXX_3.4": demangle the name, keep the suffix */
	at = strchr(name, '@');
	if (!at)
		return cplus_demangle(name, DMGL_PARAMS | DMGL_ANSI);
	head = strndup(name, at - name);
	if (!head)
		return NULL;
	dm = cplus_demangle(head, DMGL_PARAMS | DMGL_ANSI);
	free(head);
	if (!dm)
		return NULL;
	full = malloc(strlen(dm) + strlen(at) + 1);
	if (full)
		sprintf(full, "%s%s", dm, at);
	free(dm);
	return full;
}

static unsigned leading_underscores(const char *name)
{
	unsigned n = 0;

	while (name[n] == '_')
		n++;
	return n;
}

/*
 * Which of two symbols at one address names it, as perf's choose_best_symbol()
 * (tools/perf/util/symbol.c) decides, so that both tools print the same name: a sized
 * symbol over an unsized one, non-weak over weak, global over local, fewer leading
 * underscores, the longer name; on a tie the one the symbol table lists first (perf
 * keeps the first of its rb-tree, where equal addresses stay in insertion order). perf
 * compares the names it prints, demangled (Rust's "<usize as Display>::fmt" over the
 * folded "<u64 as Display>::fmt", whose v0 names are as long). Negative when `a` is the
 * better name.
 */
/* What alias_cmp() compares of a name: that of its demangled form, perf's. */
static void name_shape(const char *name, unsigned *underscores, size_t *len)
{
	char *dm = symtab__demangle(name);

	*underscores = leading_underscores(dm ? dm : name);
	*len = strlen(dm ? dm : name);
	free(dm);
}

/* Sets r's shown_*: demangled once, not at each comparison of a sort. */
static void shape_raw(struct raw_sym *r, const char *names)
{
	unsigned under;
	size_t len;

	name_shape(names + r->name_off, &under, &len);
	r->shown_underscores = under > UINT16_MAX ? UINT16_MAX : (uint16_t)under;
	r->shown_len = len > UINT32_MAX ? UINT32_MAX : (uint32_t)len;
	r->shaped = true;
}

static int alias_cmp(const struct raw_sym *a, const struct raw_sym *b, const char *names)
{
	unsigned ua, ub;
	size_t la, lb;
	int r;

	if (!a->size != !b->size)
		return a->size ? -1 : 1;
	if ((a->bind == STB_WEAK) != (b->bind == STB_WEAK))
		return a->bind == STB_WEAK ? 1 : -1;
	if ((a->bind == STB_GLOBAL) != (b->bind == STB_GLOBAL))
		return a->bind == STB_GLOBAL ? -1 : 1;
	if (a->shaped) {
		ua = a->shown_underscores;
		la = a->shown_len;
	} else {
		name_shape(names + a->name_off, &ua, &la);
	}
	if (b->shaped) {
		ub = b->shown_underscores;
		lb = b->shown_len;
	} else {
		name_shape(names + b->name_off, &ub, &lb);
	}
	if (ua != ub)
		r = ua < ub ? -1 : 1;
	else if (la != lb)
		r = la > lb ? -1 : 1;
	else
		r = a->seq < b->seq ? -1 : a->seq > b->seq;
	return r;
}

/*
 * Adds the symbols perf takes for functions from one symbol table section: FUNC and
 * IFUNC, and labels (NOTYPE, of any binding: hand-written assembly marks its entry
 * points with no type) in a code section whose name says text. Returns how many were
 * added, or -errno.
 */
static int collect_symbols(Elf *elf, Elf_Scn *scn, const GElf_Shdr *sh, struct symtab *st,
			   struct collect *c)
{
	Elf_Data *data = elf_getdata(scn, NULL);
	size_t nsyms, i, shnum, shstrndx;
	int added = 0, err;

	if (!data || !sh->sh_entsize)
		return 0;
	if (elf_getshdrnum(elf, &shnum) || elf_getshdrstrndx(elf, &shstrndx))
		return 0;
	nsyms = sh->sh_size / sh->sh_entsize;
	for (i = 1; i < nsyms; i++) {
		GElf_Shdr tsh;
		Elf_Scn *tscn;
		GElf_Sym s;
		const char *name, *secname;
		int type;

		if (!gelf_getsym(data, (int)i, &s))
			continue;
		type = GELF_ST_TYPE(s.st_info);
		if (s.st_shndx == SHN_UNDEF || s.st_shndx >= shnum || !s.st_value)
			continue;
		tscn = elf_getscn(elf, s.st_shndx);
		if (!tscn || !gelf_getshdr(tscn, &tsh) || !(tsh.sh_flags & SHF_EXECINSTR))
			continue;
		if (type == STT_NOTYPE) {
			secname = elf_strptr(elf, shstrndx, tsh.sh_name);
			if (!secname || !strstr(secname, "text"))
				continue;
		} else if (type != STT_FUNC && type != STT_GNU_IFUNC) {
			continue;
		}
		name = elf_strptr(elf, sh->sh_link, s.st_name);
		if (!name || !*name)
			continue;
		err = collect_add(st, c, name, NULL, s.st_value, s.st_size,
				  tsh.sh_addr + tsh.sh_size, GELF_ST_BIND(s.st_info));
		if (err)
			return err;
		added++;
	}
	return added;
}

/*
 * GOT slot -> symbol name, from the JUMP_SLOT and GLOB_DAT relocations; IRELATIVE ones
 * (static binaries' ifuncs) name no symbol but the resolver, whose symbol names the slot.
 */
struct got_name {
	uint64_t slot;		/* address of the GOT entry */
	const char *name;	/* points into the ELF's string table (valid while it is open),
				 * NULL for IRELATIVE */
	uint64_t resolver;	/* IRELATIVE: address of the ifunc resolver (the addend) */
};

static int cmp_got(const void *a, const void *b)
{
	const struct got_name *x = a, *y = b;

	return x->slot < y->slot ? -1 : x->slot > y->slot;
}

static int collect_got_names(Elf *elf, struct got_name **out, size_t *nr_out)
{
	struct got_name *v = NULL;
	size_t nr = 0, cap = 0;
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(elf, scn))) {
		Elf_Data *data, *symdata;
		GElf_Shdr sh, symsh;
		Elf_Scn *symscn;
		size_t i, n;

		if (!gelf_getshdr(scn, &sh) || (sh.sh_type != SHT_RELA && sh.sh_type != SHT_REL))
			continue;
		symscn = elf_getscn(elf, sh.sh_link);
		symdata = NULL;
		if (symscn && gelf_getshdr(symscn, &symsh) && symsh.sh_type == SHT_DYNSYM)
			symdata = elf_getdata(symscn, NULL);
		data = elf_getdata(scn, NULL);
		if (!data || !sh.sh_entsize)
			continue;
		n = sh.sh_size / sh.sh_entsize;
		for (i = 0; i < n; i++) {
			uint64_t info, offset, addend = 0;
			const char *name = NULL;
			GElf_Sym s;

			if (sh.sh_type == SHT_RELA) {
				GElf_Rela r;

				if (!gelf_getrela(data, (int)i, &r))
					continue;
				info = r.r_info;
				offset = r.r_offset;
				addend = (uint64_t)r.r_addend;
			} else {
				GElf_Rel r;

				if (!gelf_getrel(data, (int)i, &r))
					continue;
				info = r.r_info;
				offset = r.r_offset;
			}
			if (GELF_R_TYPE(info) == R_X86_64_IRELATIVE) {
				if (!addend)
					continue;
			} else if (GELF_R_TYPE(info) == R_X86_64_JUMP_SLOT ||
				   GELF_R_TYPE(info) == R_X86_64_GLOB_DAT) {
				if (!symdata || !GELF_R_SYM(info) ||
				    !gelf_getsym(symdata, (int)GELF_R_SYM(info), &s))
					continue;
				name = elf_strptr(elf, symsh.sh_link, s.st_name);
				if (!name || !*name)
					continue;
				addend = 0;
			} else {
				continue;
			}
			if (array_grow_sz((void **)&v, &cap, nr + 1, sizeof(*v))) {
				free(v);
				return -ENOMEM;
			}
			v[nr].slot = offset;
			v[nr].name = name;
			v[nr].resolver = addend;
			nr++;
		}
	}
	if (nr)
		qsort(v, nr, sizeof(*v), cmp_got);
	*out = v;
	*nr_out = nr;
	return 0;
}

static const struct got_name *got_lookup(const struct got_name *v, size_t nr, uint64_t slot)
{
	size_t lo = 0, hi = nr;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (v[mid].slot < slot)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < nr && v[lo].slot == slot ? &v[lo] : NULL;
}

/* The name of the symbol collected at `addr` (an ifunc resolver), copied to buf. */
static const char *collected_name(const struct symtab *st, const struct collect *c,
				  uint64_t addr, char *buf, size_t size)
{
	const struct raw_sym *best = NULL;
	size_t i;

	/* "strlen" (the global ifunc) rather than its local "strlen_ifunc" alias */
	for (i = 0; i < c->nr; i++)
		if (c->v[i].addr == addr && (!best || alias_cmp(&c->v[i], best, st->names) < 0))
			best = &c->v[i];
	if (!best)
		return NULL;
	snprintf(buf, size, "%s", st->names + best->name_off);
	return buf;
}

/*
 * The GOT slot an x86-64 PLT entry jumps through, or 0: "jmp *disp32(%rip)" (ff 25),
 * optionally after endbr64 (f3 0f 1e fa) and/or a bnd prefix (f2).
 */
static uint64_t plt_entry_slot(const uint8_t *p, size_t len, uint64_t addr)
{
	size_t off = 0;
	int32_t disp;

	if (len >= 4 && p[0] == 0xf3 && p[1] == 0x0f && p[2] == 0x1e && p[3] == 0xfa)
		off = 4;
	if (off < len && p[off] == 0xf2)
		off++;
	if (off + 6 > len || p[off] != 0xff || p[off + 1] != 0x25)
		return 0;
	memcpy(&disp, p + off + 2, sizeof(disp));
	return addr + off + 6 + (int64_t)disp;
}

static int collect_plt(Elf *elf, struct symtab *st, struct collect *c)
{
	struct got_name *got = NULL;
	size_t nr_got = 0, shstrndx;
	Elf_Scn *scn = NULL;
	int err;

	if (elf_getshdrstrndx(elf, &shstrndx))
		return 0;
	err = collect_got_names(elf, &got, &nr_got);
	if (err || !nr_got)
		return err;
	while ((scn = elf_nextscn(elf, scn))) {
		const char *secname;
		Elf_Data *data;
		GElf_Shdr sh;
		uint64_t ent, off;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_PROGBITS ||
		    !(sh.sh_flags & SHF_EXECINSTR))
			continue;
		secname = elf_strptr(elf, shstrndx, sh.sh_name);
		if (!secname || strncmp(secname, ".plt", 4))
			continue;
		data = elf_getdata(scn, NULL);
		if (!data || !data->d_buf)
			continue;
		/* .plt.got of non-IBT links has 8-byte entries; everything else 16. */
		ent = sh.sh_entsize >= 8 && sh.sh_entsize <= 32 ? sh.sh_entsize : 16;
		for (off = 0; off + ent <= data->d_size; off += ent) {
			uint64_t slot = plt_entry_slot((const uint8_t *)data->d_buf + off, ent,
						       sh.sh_addr + off);
			const struct got_name *g = slot ? got_lookup(got, nr_got, slot) : NULL;
			const char *name = g ? g->name : NULL;
			char buf[256];

			if (g && !name)
				name = collected_name(st, c, g->resolver, buf, sizeof(buf));
			if (!name)
				continue;
			/* sized and global, as perf synthesizes its PLT symbols */
			err = collect_add(st, c, name, "@plt", sh.sh_addr + off, ent,
					  sh.sh_addr + sh.sh_size, STB_GLOBAL);
			if (err)
				goto out;
		}
	}
out:
	free(got);
	return err;
}

/*
 * The first NT_GNU_BUILD_ID note of `elf` whose descriptor has 1 to `max` bytes: a pointer to
 * the descriptor (in libelf's data of `elf`) and its size in *size, or NULL if there is none.
 */
static const void *find_build_id(Elf *elf, uint32_t max, uint32_t *size)
{
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(elf, scn))) {
		size_t off = 0, name_off, desc_off;
		GElf_Nhdr nh;
		Elf_Data *data;
		GElf_Shdr sh;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE)
			continue;
		data = elf_getdata(scn, NULL);
		if (!data || !data->d_buf)
			continue;
		while ((off = gelf_getnote(data, off, &nh, &name_off, &desc_off)) > 0) {
			if (nh.n_type != NT_GNU_BUILD_ID || nh.n_namesz != 4 ||
			    memcmp((char *)data->d_buf + name_off, "GNU", 4) ||
			    !nh.n_descsz || nh.n_descsz > max)
				continue;
			*size = nh.n_descsz;
			return (char *)data->d_buf + desc_off;
		}
	}
	return NULL;
}

/* The NT_GNU_BUILD_ID note of `elf` into id[cap]; returns its size, 0 if none. */
static uint32_t read_build_id(Elf *elf, uint8_t *id, uint32_t cap)
{
	const void *desc;
	uint32_t size;

	desc = find_build_id(elf, cap, &size);
	if (!desc)
		return 0;
	memcpy(id, desc, size);
	return size;
}

/*
 * The PT_LOAD segments, as the file describes them. A segment whose addresses (p_vaddr +
 * p_memsz or p_filesz) or whose bytes (p_offset + p_filesz) wrap past 2^64 cannot be in
 * any file or address space: the file is damaged or crafted, and refused (-EBADMSG)
 * here, where it enters, rather than splitting address-space maps later. With
 * `file_bytes`, the bytes must also lie within the file (a separate debug file keeps the
 * program headers of segments it does not hold: no such check for symbols).
 */
static int read_segments(Elf *elf, bool file_bytes, struct sym_segment **out, uint32_t *nr)
{
	struct sym_segment *segs;
	size_t phnum, i, file_size = 0;
	uint64_t end;

	*out = NULL;
	*nr = 0;
	if (elf_getphdrnum(elf, &phnum) || !phnum)
		return 0;
	if (file_bytes && !elf_rawfile(elf, &file_size))
		return -ENOEXEC;
	segs = calloc(phnum, sizeof(*segs));
	if (!segs)
		return -ENOMEM;
	for (i = 0; i < phnum; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD)
			continue;
		if (__builtin_add_overflow(ph.p_vaddr, ph.p_memsz, &end) ||
		    __builtin_add_overflow(ph.p_vaddr, ph.p_filesz, &end) ||
		    __builtin_add_overflow(ph.p_offset, ph.p_filesz, &end) ||
		    (file_bytes && end > file_size)) {
			free(segs);
			*nr = 0;
			return -EBADMSG;
		}
		segs[(*nr)++] = (struct sym_segment){
			.vaddr = ph.p_vaddr,
			.memsz = ph.p_memsz,
			.offset = ph.p_offset,
			.filesz = ph.p_filesz,
			.flags = ph.p_flags,
		};
	}
	*out = segs;
	return 0;
}

/* By address, then in the symbol table's order. */
static int cmp_raw(const void *a, const void *b, void *ctx)
{
	const struct raw_sym *x = a, *y = b;

	(void)ctx;
	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* The best alias first (alias_cmp()), among symbols of one address. */
static int cmp_alias(const void *a, const void *b, void *ctx)
{
	return alias_cmp(a, b, ctx);
}

/* What alias_cmp() compares before the names: sized, weak, global. */
static unsigned alias_class(const struct raw_sym *r)
{
	return !!r->size << 2 | (r->bind == STB_WEAK) << 1 | (r->bind == STB_GLOBAL);
}

/*
 * By address, the best alias of each address first: sorted by address, then each run of
 * aliases by alias_cmp(), the names it compares (aliases of one class) demangled once
 * beforehand. alias_cmp() is a total order (the table's order breaks ties), so this is
 * the order of one sort by both, which demangled two names at each comparison of aliases.
 */
static void sort_raw(struct collect *c, const char *names)
{
	size_t i, j, k;

	qsort_r(c->v, c->nr, sizeof(*c->v), cmp_raw, NULL);
	for (i = 0; i < c->nr; i = j) {
		unsigned in_class[8] = { 0 };

		for (j = i + 1; j < c->nr && c->v[j].addr == c->v[i].addr; j++)
			;
		if (j - i < 2)
			continue;
		for (k = i; k < j; k++)
			in_class[alias_class(&c->v[k])]++;
		for (k = i; k < j; k++)
			if (in_class[alias_class(&c->v[k])] > 1)
				shape_raw(&c->v[k], names);
		qsort_r(c->v + i, j - i, sizeof(*c->v), cmp_alias, (void *)names);
	}
}

static int cmp_by_name(const void *a, const void *b, void *ctx)
{
	const struct symtab *st = ctx;
	const struct symtab_entry *x = &st->entries[*(const uint32_t *)a];
	const struct symtab_entry *y = &st->entries[*(const uint32_t *)b];
	int c = strcmp(x->sym.name, y->sym.name);

	if (c)
		return c;
	if (x->global != y->global)
		return x->global ? -1 : 1;
	return x->sym.addr < y->sym.addr ? -1 : x->sym.addr > y->sym.addr;
}

/* Turns the collected symbols into the sorted table, dropping exact duplicates. */
static int finish_table(struct symtab *st, struct collect *c)
{
	uint32_t i, n = 0;

	st->entries = calloc(c->nr ? c->nr : 1, sizeof(*st->entries));
	if (!st->entries)
		return -ENOMEM;
	sort_raw(c, st->names);
	for (i = 0; i < c->nr; i++) {
		const struct raw_sym *r = &c->v[i];
		struct symtab_entry *e = &st->entries[n];

		if (n && r->addr == st->entries[n - 1].sym.addr &&
		    !strcmp(st->names + r->name_off, st->entries[n - 1].sym.name))
			continue;
		e->sym.name = st->names + r->name_off;
		e->sym.addr = r->addr;
		e->sym.size = r->size;
		e->end = r->size ? r->addr + r->size : r->sec_end;
		e->global = r->bind == STB_GLOBAL;
		n++;
	}
	st->nr = n;
	/* An unsized symbol runs to the next symbol at a higher address. */
	for (i = 0; i < n; i++) {
		struct symtab_entry *e = &st->entries[i];
		uint32_t j;

		if (e->sym.size)
			continue;
		for (j = i + 1; j < n && st->entries[j].sym.addr == e->sym.addr; j++)
			;
		if (j < n && st->entries[j].sym.addr < e->end)
			e->end = st->entries[j].sym.addr;
		if (e->end <= e->sym.addr)
			e->end = e->sym.addr + 1;
	}
	return 0;
}

/*
 * The entries sorted by name, sorted on the first lookup by name: a decode looks up
 * addresses only, and the sort was 40 % of loading a table (1 of 2.6 ms for
 * libstdc++, 11 of 28 ms for libLLVM). NULL without memory.
 */
static const uint32_t *by_name_index(struct symtab *st)
{
	uint32_t i;

	if (st->by_name)
		return st->by_name;
	st->by_name = malloc((st->nr ? st->nr : 1) * sizeof(*st->by_name));
	if (!st->by_name)
		return NULL;
	for (i = 0; i < st->nr; i++)
		st->by_name[i] = i;
	qsort_r(st->by_name, st->nr, sizeof(*st->by_name), cmp_by_name, st);
	return st->by_name;
}

static int read_debuglink(Elf *elf, char *name, size_t size);

static int load_elf(Elf *elf, struct symtab *st)
{
	struct collect c = {};
	Elf_Scn *scn = NULL, *symtab = NULL, *dynsym = NULL;
	GElf_Shdr sh;
	GElf_Ehdr eh;
	int err = 0, funcs = 0;

	if (!gelf_getehdr(elf, &eh))
		return -ENOEXEC;
	st->e_type = eh.e_type;
	st->e_entry = eh.e_entry;
	err = read_segments(elf, false, &st->segs, &st->nr_segs);
	if (err)
		return err;
	st->build_id_size = read_build_id(elf, st->build_id, sizeof(st->build_id));
	/* kept: the symbolizer looks for the debug file it names, without opening it again */
	{
		char link[SYMTAB_DEBUGLINK_MAX];

		if (!read_debuglink(elf, link, sizeof(link))) {
			st->debuglink = strdup(link);
			if (!st->debuglink)
				return -ENOMEM;
		}
	}

	while ((scn = elf_nextscn(elf, scn))) {
		if (!gelf_getshdr(scn, &sh))
			continue;
		if (sh.sh_type == SHT_SYMTAB)
			symtab = scn;
		else if (sh.sh_type == SHT_DYNSYM)
			dynsym = scn;
	}
	st->has_symtab = symtab;
	/* .symtab holds .dynsym's definitions too; .dynsym alone is what stripping leaves. */
	if (symtab && gelf_getshdr(symtab, &sh)) {
		funcs = collect_symbols(elf, symtab, &sh, st, &c);
		if (funcs < 0) {
			err = funcs;
			goto out;
		}
	}
	if (!funcs && dynsym && gelf_getshdr(dynsym, &sh)) {
		funcs = collect_symbols(elf, dynsym, &sh, st, &c);
		if (funcs < 0) {
			err = funcs;
			goto out;
		}
	}
	if (!funcs) {
		err = -ENODATA;
		goto out;
	}
	err = collect_plt(elf, st, &c);
	if (err)
		goto out;
	err = finish_table(st, &c);
out:
	free(c.v);
	return err;
}

/* Opens `path` as an ELF file: 0, or -ENOENT/-EACCES/-ENOEXEC... */
static int elf_open(const char *path, int *fd, Elf **elf)
{
	*elf = NULL;
	if (elf_version(EV_CURRENT) == EV_NONE)
		return -ENOTSUP;
	*fd = open(path, O_RDONLY | O_CLOEXEC);
	if (*fd < 0)
		return -errno;
	*elf = elf_begin(*fd, ELF_C_READ_MMAP, NULL);
	if (!*elf || elf_kind(*elf) != ELF_K_ELF) {
		if (*elf)
			elf_end(*elf);
		*elf = NULL;
		close(*fd);
		*fd = -1;
		return -ENOEXEC;
	}
	return 0;
}

static void elf_close(int fd, Elf *elf)
{
	if (elf)
		elf_end(elf);
	if (fd >= 0)
		close(fd);
}

int symtab__load(const char *path, struct symtab **out)
{
	struct symtab *st = NULL;
	Elf *elf = NULL;
	int fd = -1, err;

	if (!path || !out)
		return -EINVAL;
	*out = NULL;
	err = elf_open(path, &fd, &elf);
	if (err)
		return err;
	st = calloc(1, sizeof(*st));
	if (!st) {
		err = -ENOMEM;
		goto cleanup;
	}
	st->path = strdup(path);
	if (!st->path) {
		err = -ENOMEM;
		goto cleanup;
	}
	err = load_elf(elf, st);
	if (err)
		goto cleanup;
	*out = st;
	st = NULL;
cleanup:
	symtab__free(st);
	elf_close(fd, elf);
	return err;
}

int symtab__read_segments(const char *path, struct sym_segment **segs, uint32_t *nr, bool *pie)
{
	GElf_Ehdr eh;
	Elf *elf;
	int fd, err;

	if (!path || !segs || !nr)
		return -EINVAL;
	*segs = NULL;
	*nr = 0;
	err = elf_open(path, &fd, &elf);
	if (err)
		return err;
	if (!gelf_getehdr(elf, &eh))
		err = -ENOEXEC;
	else
		err = read_segments(elf, true, segs, nr);
	if (!err && pie)
		*pie = eh.e_type == ET_DYN;
	elf_close(fd, elf);
	return err;
}

int symtab__read_build_id(const char *path, uint8_t *id, uint32_t cap, uint32_t *size)
{
	Elf *elf;
	int fd, err;

	if (!path || !id || !size)
		return -EINVAL;
	err = elf_open(path, &fd, &elf);
	if (err)
		return err;
	*size = read_build_id(elf, id, cap);
	elf_close(fd, elf);
	return *size ? 0 : -ENOENT;
}

/* The next section of `type` after `scn` (NULL: from the start), its header in `sh`. */
static Elf_Scn *next_section(Elf *elf, Elf_Scn *scn, Elf64_Word type, GElf_Shdr *sh)
{
	while ((scn = elf_nextscn(elf, scn)))
		if (gelf_getshdr(scn, sh) && sh->sh_type == type)
			return scn;
	return NULL;
}

/* Open `path` and run `read` on it, for a string of the file into name[size]. */
static int read_elf_string(const char *path, char *name, size_t size,
			   int (*read)(Elf *elf, char *name, size_t size))
{
	Elf *elf;
	int fd, err;

	if (!path || !name || !size)
		return -EINVAL;
	err = elf_open(path, &fd, &elf);
	if (err)
		return err;
	err = read(elf, name, size);
	elf_close(fd, elf);
	return err;
}

static int read_soname(Elf *elf, char *name, size_t size)
{
	Elf_Scn *scn = NULL;
	Elf_Data *data;
	GElf_Shdr sh;
	GElf_Dyn dyn;
	size_t i;

	while ((scn = next_section(elf, scn, SHT_DYNAMIC, &sh))) {
		data = elf_getdata(scn, NULL);
		for (i = 0; data && sh.sh_entsize && i < sh.sh_size / sh.sh_entsize; i++) {
			const char *soname;

			if (!gelf_getdyn(data, i, &dyn) || dyn.d_tag != DT_SONAME)
				continue;
			soname = elf_strptr(elf, sh.sh_link, dyn.d_un.d_val);
			if (!soname)
				return -EINVAL;
			snprintf(name, size, "%s", soname);
			return 0;
		}
	}
	return -ENOENT;
}

int symtab__read_soname(const char *path, char *name, size_t size)
{
	return read_elf_string(path, name, size, read_soname);
}

static int read_debuglink(Elf *elf, char *name, size_t size)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	size_t shstrndx;

	if (elf_getshdrstrndx(elf, &shstrndx))
		return -ENOENT;
	while ((scn = next_section(elf, scn, SHT_PROGBITS, &sh))) {
		const char *secname = elf_strptr(elf, shstrndx, sh.sh_name);
		Elf_Data *data;
		size_t len;

		if (!secname || strcmp(secname, ".gnu_debuglink"))
			continue;
		/* a NUL-terminated file name, padded, then a CRC32 */
		data = elf_getdata(scn, NULL);
		if (!data || !data->d_buf || !data->d_size)
			return -ENOENT;
		len = strnlen(data->d_buf, data->d_size);
		if (!len || len == data->d_size || len >= size || strchr(data->d_buf, '/'))
			return -EINVAL;
		memcpy(name, data->d_buf, len + 1);
		return 0;
	}
	return -ENOENT;
}

int symtab__read_debuglink(const char *path, char *name, size_t size)
{
	return read_elf_string(path, name, size, read_debuglink);
}

int symtab__image_build_id(const void *image, size_t size, uint8_t id[20], uint8_t *len)
{
	const void *desc;
	uint32_t n;
	int err = 0;
	Elf *elf;

	if (!image || !size || !id || !len)
		return -EINVAL;
	if (elf_version(EV_CURRENT) == EV_NONE)
		return -ENOTSUP;
	/* libelf only reads through this pointer (ELF_C_READ_MMAP semantics for memory). */
	elf = elf_memory((char *)image, size);
	if (!elf)
		return -EINVAL;
	if (elf_kind(elf) != ELF_K_ELF || gelf_getclass(elf) != ELFCLASS64) {
		err = -EINVAL;
		goto out;
	}
	desc = find_build_id(elf, UINT32_MAX, &n);
	if (!desc) {
		err = -ENOENT;
		goto out;
	}
	/* perf.data holds 20 bytes of build id (perf's BUILD_ID_SIZE): a longer one is cut. */
	*len = n > 20 ? 20 : n;
	memset(id, 0, 20);
	memcpy(id, desc, *len);
out:
	elf_end(elf);
	return err;
}

void symtab__free(struct symtab *st)
{
	if (!st)
		return;
	free(st->entries);
	free(st->by_name);
	free(st->names);
	free(st->segs);
	free(st->path);
	free(st->debuglink);
	free(st);
}

const struct sym *symtab__find_name(struct symtab *st, const char *name)
{
	const uint32_t *by_name;
	uint32_t lo = 0, hi;

	if (!st || !name)
		return NULL;
	by_name = by_name_index(st);
	if (!by_name)
		return NULL;
	hi = st->nr;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (strcmp(st->entries[by_name[mid]].sym.name, name) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < st->nr && !strcmp(st->entries[by_name[lo]].sym.name, name))
		return &st->entries[by_name[lo]].sym;
	return NULL;
}

/* Name without parameters, return type or hash ("ns::f", "m::total"), malloc'd or NULL. */
static char *demangle_base(const char *name)
{
	if (name[0] != '_' || (name[1] != 'Z' && name[1] != 'R') || strchr(name, '@'))
		return NULL;
	return cplus_demangle(name, DMGL_NO_OPTS);
}

/* Adds s to out[] unless a function at its address is there; returns the new count. */
static int add_match(const struct sym **out, int n, int max, int *found, const struct sym *s)
{
	int i;

	for (i = 0; i < n; i++)
		if (out[i]->addr == s->addr)
			return n;
	(*found)++;
	if (n < max)
		out[n++] = s;
	return n;
}

int symtab__lookup(struct symtab *st, const char *name, const struct sym **out, int max)
{
	/* match levels, best first: full demangled name, without parameters, prefix */
	enum { FULL, BASE, PREFIX, NR_LEVELS };
	const struct sym *level[NR_LEVELS][SYMTAB_LOOKUP_MAX];
	int n[NR_LEVELS] = { 0 }, found[NR_LEVELS] = { 0 };
	size_t len;
	uint32_t i;
	int l;

	if (!st || !name || !*name || !out || max <= 0)
		return -EINVAL;
	if (max > SYMTAB_LOOKUP_MAX)
		max = SYMTAB_LOOKUP_MAX;
	out[0] = symtab__find_name(st, name);
	if (out[0])
		return 1;
	len = strlen(name);
	for (i = 0; i < st->nr; i++) {
		const struct sym *s = &st->entries[i].sym;
		char *full, *base;

		full = symtab__demangle(s->name);
		if (!full)
			continue;
		base = demangle_base(s->name);
		if (!strcmp(full, name))
			n[FULL] = add_match(level[FULL], n[FULL], max, &found[FULL], s);
		else if (base && !strcmp(base, name))
			n[BASE] = add_match(level[BASE], n[BASE], max, &found[BASE], s);
		else if (!strncmp(base ? base : full, name, len) || !strncmp(full, name, len))
			n[PREFIX] = add_match(level[PREFIX], n[PREFIX], max, &found[PREFIX], s);
		free(full);
		free(base);
	}
	for (l = 0; l < NR_LEVELS; l++) {
		if (!found[l])
			continue;
		memcpy(out, level[l], n[l] * sizeof(*out));
		return found[l];
	}
	return 0;
}

/* Index of the first entry that starts above addr (nr if none). */
static uint32_t first_above(const struct symtab *st, uint64_t addr)
{
	uint32_t lo = 0, hi = st->nr;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (st->entries[mid].sym.addr <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

const struct sym *symtab__find_addr(const struct symtab *st, uint64_t addr)
{
	uint32_t lo, i, steps;

	if (!st || !st->nr)
		return NULL;
	/* The first entry above addr... */
	lo = first_above(st, addr);
	if (!lo)
		return NULL;
	/*
	 * ...then back to the start of the alias group below it (best alias first), and a
	 * few groups further for a sized function with a label inside it.
	 */
	for (i = lo, steps = 0; i-- > 0 && steps < 16; steps++) {
		const struct symtab_entry *e = &st->entries[i];

		while (i > 0 && st->entries[i - 1].sym.addr == e->sym.addr)
			e = &st->entries[--i];
		if (addr < e->end)
			return &e->sym;
	}
	return NULL;
}

int symtab__find_range(const struct symtab *st, uint64_t addr, uint64_t *start, uint64_t *end)
{
	const struct sym *s;
	uint32_t lo;

	if (!st || !start || !end)
		return -EINVAL;
	s = symtab__find_addr(st, addr);
	if (s) {
		const struct symtab_entry *e = (const struct symtab_entry *)s;

		*start = s->addr;
		*end = e->end;
		return 0;
	}
	/* between functions: from the end of the one below to the start of the next */
	lo = first_above(st, addr);
	*end = lo < st->nr ? st->entries[lo].sym.addr : UINT64_MAX;
	*start = 0;
	if (lo) {
		uint32_t i;

		/* the furthest end of the symbols below (sized ones may overlap) */
		for (i = lo; i-- > 0 && lo - i <= 16;)
			if (st->entries[i].end <= addr && st->entries[i].end > *start)
				*start = st->entries[i].end;
	}
	return 1;
}

/* Edit distance, case-insensitive, with an early exit above `limit`. */
static unsigned edit_distance(const char *a, const char *b, unsigned limit)
{
	size_t la = strlen(a), lb = strlen(b), i, j;
	unsigned row[128], best;

	if (lb >= ARRAY_SIZE(row) || la >= 1024)
		return limit + 1;
	if ((la > lb ? la - lb : lb - la) > limit)
		return limit + 1;
	for (j = 0; j <= lb; j++)
		row[j] = (unsigned)j;
	for (i = 1; i <= la; i++) {
		unsigned diag = row[0];

		row[0] = (unsigned)i;
		best = row[0];
		for (j = 1; j <= lb; j++) {
			unsigned up = row[j];
			unsigned cost = tolower((unsigned char)a[i - 1]) !=
					tolower((unsigned char)b[j - 1]);
			unsigned v = diag + cost;

			if (up + 1 < v)
				v = up + 1;
			if (row[j - 1] + 1 < v)
				v = row[j - 1] + 1;
			row[j] = v;
			diag = up;
			if (v < best)
				best = v;
		}
		if (best > limit)
			return limit + 1;
	}
	return row[lb];
}

int symtab__suggest(struct symtab *st, const char *name, const char **out, int max)
{
	const uint32_t *by_name;
	unsigned scores[32];
	size_t nlen;
	int n = 0;
	uint32_t i;

	if (!st || !name || !out || max <= 0)
		return 0;
	by_name = by_name_index(st);
	if (!by_name)
		return 0;
	if (max > 32)
		max = 32;
	nlen = strlen(name);
	for (i = 0; i < st->nr; i++) {
		const char *cand = st->entries[by_name[i]].sym.name, *shown;
		unsigned limit = nlen < 6 ? 2 : (unsigned)nlen / 3, score;
		char *base;
		int k, pos;

		/* names are sorted: skip the repeats of one name */
		if (i && !strcmp(cand, st->entries[by_name[i - 1]].sym.name))
			continue;
		/* a C++ or Rust name is compared as users write it: "ns::f", "m::total" */
		base = demangle_base(cand);
		shown = base ? base : cand;
		score = edit_distance(name, shown, limit);
		if (score > limit) {
			/* "slow" for "slow_path", "path" for "slow_path@plt" */
			if (nlen < 3 || !strcasestr(shown, name)) {
				free(base);
				continue;
			}
			score = limit + 1 + (unsigned)(strlen(shown) - nlen);
		}
		free(base);
		/* insertion into the best `max`, kept sorted by score */
		for (pos = n; pos > 0 && scores[pos - 1] > score; pos--)
			;
		if (pos >= max)
			continue;
		for (k = (n < max ? n : max - 1); k > pos; k--) {
			out[k] = out[k - 1];
			scores[k] = scores[k - 1];
		}
		out[pos] = cand;
		scores[pos] = score;
		if (n < max)
			n++;
	}
	return n;
}

int symtab__addr_to_offset(const struct symtab *st, uint64_t addr, uint64_t *offset)
{
	uint32_t i;

	if (!st || !offset)
		return -EINVAL;
	for (i = 0; i < st->nr_segs; i++) {
		const struct sym_segment *s = &st->segs[i];

		if (addr >= s->vaddr && addr < s->vaddr + s->filesz) {
			*offset = addr - s->vaddr + s->offset;
			return 0;
		}
	}
	return -ENOENT;
}

bool symtab__is_pie(const struct symtab *st)
{
	return st && st->e_type == ET_DYN;
}

int symtab__build_id(const struct symtab *st, const uint8_t **id, uint32_t *size)
{
	if (!st || !id || !size)
		return -EINVAL;
	if (!st->build_id_size)
		return -ENOENT;
	*id = st->build_id;
	*size = st->build_id_size;
	return 0;
}

uint32_t symtab__count(const struct symtab *st)
{
	return st ? st->nr : 0;
}

const struct sym *symtab__get(const struct symtab *st, uint32_t i)
{
	return st && i < st->nr ? &st->entries[i].sym : NULL;
}

uint32_t symtab__nr_segments(const struct symtab *st)
{
	return st ? st->nr_segs : 0;
}

const struct sym_segment *symtab__segment(const struct symtab *st, uint32_t i)
{
	return st && i < st->nr_segs ? &st->segs[i] : NULL;
}

int symtab__segments_bias(const struct sym_segment *segs, uint32_t nr, uint64_t map_start,
			  uint64_t map_len, uint64_t pgoff, bool exec, uint64_t *bias)
{
	const struct sym_segment *best = NULL;
	uint64_t map_end = pgoff + (map_len ? map_len : 1);
	uint32_t i;

	if (!segs || !bias)
		return -EINVAL;
	/*
	 * The mapping holds file bytes [pgoff, pgoff + map_len); the PT_LOAD it maps is the
	 * one whose file bytes [p_offset, p_offset + p_filesz) it overlaps. Several segments
	 * can share a file page (lld and mold pack the read-only and the code segment into
	 * one page at different p_vaddr - p_offset); the kernel and ld.so map each with its
	 * own protection, so the one whose PF_X matches the mapping's is the one mapped.
	 */
	for (i = 0; i < nr; i++) {
		const struct sym_segment *s = &segs[i];
		uint64_t end = s->offset + (s->filesz ? s->filesz : 1);

		if (s->offset >= map_end || end <= pgoff)
			continue;
		if (!best || (!!(s->flags & PF_X) == exec && !!(best->flags & PF_X) != exec))
			best = s;
	}
	if (!best)
		return -ENOENT;
	/* file offset o is at map_start + (o - pgoff) and links at p_vaddr + (o - p_offset) */
	*bias = map_start - pgoff + best->offset - best->vaddr;
	return 0;
}

int symtab__load_bias(const struct symtab *st, uint64_t map_start, uint64_t map_len,
		      uint64_t pgoff, bool exec, uint64_t *bias)
{
	if (!st || !bias)
		return -EINVAL;
	return symtab__segments_bias(st->segs, st->nr_segs, map_start, map_len, pgoff, exec,
				     bias);
}

const char *symtab__path(const struct symtab *st)
{
	return st ? st->path : NULL;
}

const char *symtab__debuglink(const struct symtab *st)
{
	return st ? st->debuglink : NULL;
}

bool symtab__has_symtab(const struct symtab *st)
{
	return st && st->has_symtab;
}
