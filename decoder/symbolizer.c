// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The symbolizer: address in an address space -> function name and start.
 *
 * Each file (dso) gets its symbol table (decoder/symtab.c) and, when one is found by its
 * build-id (/usr/lib/debug/.build-id, --debug-dir, ~/.debug) or its .gnu_debuglink, the
 * table of its separate debug file, which is looked at first (a stripped binary's debug file has the full
 * .symtab; the binary itself still has the PLT). C++ and Rust names are demangled with
 * libiberty. Addresses with no symbol become "binary+0xVADDR" (the address in the file's
 * own terms, through the PT_LOAD segment that maps it). Every answer
 * is cached by (address space, address), and demangled names by symbol, so the call-
 * stack builder's lookups are one hash probe after the first.
 *
 * Threads: a dso's tables load, and a mapping's load bias is computed, on first use, in
 * whichever thread asks first (under the symbols' lock; symbols__preload() sizes what
 * decoder threads read). symbols__func_range() may run in decoder threads;
 * symbols__lookup() (names, caches) belongs to the merge thread.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "array.h"
#include "log.h"
#include "ptd.h"
#include "symtab.h"

/* Symbol tables of one dso. */
struct sdso {
	struct symtab *st;	/* the file's own table, NULL if none */
	struct symtab *debug;	/* its separate debug file's, NULL if none */
	struct sym_segment *segs;	/* the file's own PT_LOADs (a debug file's have
					 * other offsets), NULL if it could not be read */
	uint32_t nr_segs;
	bool loaded;		/* load attempted; set last, read with acquire (sdso_ready()) */
	bool wanted;		/* mapped executable somewhere: loaded on first use by any thread
				 * (symbols__preload() loaded these up front) */
};

/* Kernel text symbols from a kallsyms copy, sorted by address. */
struct ksym {
	uint64_t addr;		/* run-time address */
	struct sym sym;		/* name, addr, size (to the next symbol) */
};

/* Cached answer for one address. */
struct sym_entry {
	uint64_t key;		/* address, 0: empty slot */
	int32_t as;		/* address space */
	uint64_t start;		/* function start, 0 if unknown */
	const char *name;	/* in the arena */
};

/* Demangled name of one symbol (keyed by its struct sym). */
struct name_entry {
	const struct sym *sym;	/* NULL: empty slot */
	const char *name;	/* in the arena */
};

struct arena_block {
	struct arena_block *next;
	size_t used, size;
	char data[];
};

struct symbols {
	struct ptd_images *im;
	pthread_mutex_t lock;		/* loading a dso's tables, computing a mapping's bias */
	const char *debug_dir;		/* --debug-dir, NULL if not given */
	struct sdso *dsos;		/* indexed like im->dsos */
	uint32_t nr_dsos, cap_dsos;
	struct sym_entry *cache;	/* open addressing, power of two */
	size_t cache_size, cache_used;
	struct name_entry *names;	/* open addressing, power of two */
	size_t names_size, names_used;
	struct arena_block *arena;	/* names live here until symbols__free() */
	struct ksym *ksyms;		/* kallsyms text symbols, sorted, NULL if none */
	size_t nr_ksyms;
};

static char *arena_strdup(struct symbols *sy, const char *s)
{
	size_t len = strlen(s) + 1;
	struct arena_block *b = sy->arena;

	if (!b || b->size - b->used < len) {
		size_t size = len > 65536 ? len : 65536;

		b = malloc(sizeof(*b) + size);
		if (!b)
			return NULL;
		b->next = sy->arena;
		b->used = 0;
		b->size = size;
		sy->arena = b;
	}
	memcpy(b->data + b->used, s, len);
	b->used += len;
	return b->data + b->used - len;
}

struct symbols *symbols__new(struct ptd_images *im, const char *debug_dir)
{
	struct symbols *sy = calloc(1, sizeof(*sy));

	if (!sy)
		return NULL;
	sy->im = im;
	sy->debug_dir = debug_dir;
	pthread_mutex_init(&sy->lock, NULL);
	sy->cache_size = 1024;
	sy->cache = calloc(sy->cache_size, sizeof(*sy->cache));
	sy->names_size = 1024;
	sy->names = calloc(sy->names_size, sizeof(*sy->names));
	if (!sy->cache || !sy->names) {
		symbols__free(sy);
		return NULL;
	}
	return sy;
}

void symbols__free(struct symbols *sy)
{
	struct arena_block *b;
	uint32_t i;

	if (!sy)
		return;
	for (i = 0; i < sy->nr_dsos; i++) {
		symtab__free(sy->dsos[i].st);
		symtab__free(sy->dsos[i].debug);
		free(sy->dsos[i].segs);
	}
	while ((b = sy->arena)) {
		sy->arena = b->next;
		free(b);
	}
	free(sy->dsos);
	free(sy->ksyms);
	free(sy->cache);
	free(sy->names);
	pthread_mutex_destroy(&sy->lock);
	free(sy);
}

static int cmp_ksym(const void *a, const void *b)
{
	const struct ksym *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

int symbols__load_kallsyms(struct symbols *sy, const char *path)
{
	char line[512], name[256], type;
	unsigned long long addr;
	size_t cap = 0, i;
	FILE *f;

	if (!sy || !path)
		return -EINVAL;
	f = fopen(path, "r");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		struct ksym *k;
		char *n;

		if (sscanf(line, "%llx %c %255s", &addr, &type, name) != 3 || !addr)
			continue;
		/* text symbols: t/T, and weak W/w (kallsyms marks some functions weak) */
		if (type != 't' && type != 'T' && type != 'w' && type != 'W')
			continue;
		if (array_grow_sz((void **)&sy->ksyms, &cap, sy->nr_ksyms + 1, sizeof(*sy->ksyms))) {
			fclose(f);
			return -ENOMEM;
		}
		n = arena_strdup(sy, name);
		if (!n) {
			fclose(f);
			return -ENOMEM;
		}
		k = &sy->ksyms[sy->nr_ksyms++];
		k->addr = addr;
		k->sym = (struct sym){ .name = n, .addr = addr };
	}
	fclose(f);
	if (!sy->nr_ksyms)
		return -ENODATA;	/* and no table to sort: qsort(NULL) is undefined */
	qsort(sy->ksyms, sy->nr_ksyms, sizeof(*sy->ksyms), cmp_ksym);
	for (i = 0; i + 1 < sy->nr_ksyms; i++)
		sy->ksyms[i].sym.size = sy->ksyms[i + 1].addr - sy->ksyms[i].addr;
	return 0;
}

static const struct sym *find_ksym(const struct symbols *sy, uint64_t addr)
{
	size_t lo = 0, hi = sy->nr_ksyms;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (sy->ksyms[mid].addr <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return NULL;
	lo--;
	/* the last symbol has no size: keep it within a page */
	if (sy->ksyms[lo].sym.size ? addr - sy->ksyms[lo].addr >= sy->ksyms[lo].sym.size :
				     addr - sy->ksyms[lo].addr >= 4096)
		return NULL;
	return &sy->ksyms[lo].sym;
}

int kernel_symbols__load(const char *kallsyms, struct symbols **out)
{
	struct symbols *sy;
	int err;

	if (!kallsyms || !out)
		return -EINVAL;
	*out = NULL;
	sy = symbols__new(NULL, NULL);
	if (!sy)
		return -ENOMEM;
	err = symbols__load_kallsyms(sy, kallsyms);
	if (err) {
		symbols__free(sy);
		return err;
	}
	*out = sy;
	return 0;
}

int kernel_symbols__name(const struct symbols *sy, uint64_t addr, char *buf, size_t size)
{
	const struct sym *s;

	if (!sy || !buf || !size)
		return -EINVAL;
	s = find_ksym(sy, addr);
	if (!s)
		return -ENOENT;
	if (addr == s->addr)
		snprintf(buf, size, "%s", s->name);
	else
		snprintf(buf, size, "%s+0x%" PRIx64, s->name, addr - s->addr);
	return 0;
}

static bool regular_file(const char *path)
{
	struct stat sb;

	return !stat(path, &sb) && S_ISREG(sb.st_mode);
}

/* The separate debug file of a build-id, from the debuginfod servers (DEBUGINFOD_URLS). */
static struct symtab *load_debuginfod(const uint8_t *id, uint32_t size)
{
	struct symtab *st = NULL;
	char *found;

	if (!size || size > 64 || ptd_debuginfod_find(true, id, size, &found))
		return NULL;
	if (symtab__load(found, &st))
		st = NULL;
	free(found);
	return st;
}

/* The separate debug file of a build-id, in the usual places. */
static struct symtab *load_debug_file(struct symbols *sy, const uint8_t *id, uint32_t size)
{
	static const char *const suffixes[] = { ".debug", "/debug", "/elf", "" };
	char hex[2 * 64 + 1], path[PATH_MAX], home_dir[PATH_MAX];
	const char *dirs[3];
	const char *home = getenv("HOME");
	unsigned i, j, nr_dirs = 0;

	if (!size || size > 64)
		return NULL;
	for (i = 0; i < size; i++)
		sprintf(hex + 2 * i, "%02x", id[i]);
	if (sy->debug_dir)
		dirs[nr_dirs++] = sy->debug_dir;
	if (home) {
		snprintf(home_dir, sizeof(home_dir), "%s/.debug", home);
		dirs[nr_dirs++] = home_dir;
	}
	dirs[nr_dirs++] = "/usr/lib/debug";
	for (i = 0; i < nr_dirs; i++) {
		for (j = 0; j < ARRAY_SIZE(suffixes); j++) {
			struct symtab *st;

			snprintf(path, sizeof(path), "%s/.build-id/%.2s/%s%s", dirs[i], hex,
				 hex + 2, suffixes[j]);
			if (!regular_file(path) || symtab__load(path, &st))
				continue;
			dlog("symbols: debug file %s\n", path);
			return st;
		}
	}
	return NULL;
}

/*
 * The separate debug file a .gnu_debuglink names, where gdb and perf look for it: beside
 * the binary, in its .debug/ directory, and under the debug directories (--debug-dir,
 * /usr/lib/debug) followed by the binary's directory. `own`: the binary's table, which
 * holds the link (NULL: read it from the file).
 */
static struct symtab *load_debuglink(struct symbols *sy, const char *path,
				     const struct symtab *own)
{
	char name[SYMTAB_DEBUGLINK_MAX], dir[PATH_MAX], cand[PATH_MAX], real_bin[PATH_MAX];
	char real_cand[PATH_MAX];
	const char *roots[2] = { sy->debug_dir, "/usr/lib/debug" };
	struct symtab *st;
	char *slash;
	unsigned i;

	if (own) {
		if (!symtab__debuglink(own))
			return NULL;
		snprintf(name, sizeof(name), "%s", symtab__debuglink(own));
	} else if (symtab__read_debuglink(path, name, sizeof(name))) {
		return NULL;
	}
	if (!realpath(path, real_bin))
		return NULL;
	snprintf(dir, sizeof(dir), "%s", real_bin);
	slash = strrchr(dir, '/');
	if (!slash)
		return NULL;
	*slash = '\0';
	for (i = 0; i < 2 + 2; i++) {
		int n;

		if (i == 0)
			n = snprintf(cand, sizeof(cand), "%s/%s", dir, name);
		else if (i == 1)
			n = snprintf(cand, sizeof(cand), "%s/.debug/%s", dir, name);
		else if (roots[i - 2])
			n = snprintf(cand, sizeof(cand), "%s%s/%s", roots[i - 2], dir, name);
		else
			continue;
		if (n < 0 || (size_t)n >= sizeof(cand))
			continue;
		/* the link may name the binary itself (same file name, same directory) */
		if (!regular_file(cand) || !realpath(cand, real_cand) ||
		    !strcmp(real_cand, real_bin) || symtab__load(cand, &st))
			continue;
		dlog("symbols: debug file %s (debuglink)\n", cand);
		return st;
	}
	return NULL;
}

/* Loads the tables of `dso` into sd (the symbols' lock held). */
static void sdso_load(struct symbols *sy, uint32_t dso, struct sdso *sd)
{
	const char *path;

	if (sy->im->dsos[dso].kernel)
		return;	/* kallsyms, not the kcore file's (absent) symbols */
	path = ptd_dso_path(sy->im, dso);
	if (path) {
		int err = symtab__load(path, &sd->st);

		if (err && err != -ENODATA)
			dlog("symbols: %s: %s\n", path, strerror(-err));
		/* a stripped file (-ENODATA) still has the program headers that place it */
		if (!sd->st && symtab__read_segments(path, &sd->segs, &sd->nr_segs, NULL))
			sd->nr_segs = 0;
	}
	{
		const struct ptd_dso *d = &sy->im->dsos[dso];
		const uint8_t *id = d->build_id;
		uint32_t size = d->build_id_size;
		uint8_t buf[64];

		/* the capture's build-id, else the file's (stripped files have one too) */
		if (!size && sd->st)
			symtab__build_id(sd->st, &id, &size);
		if (!size && path && !symtab__read_build_id(path, buf, sizeof(buf), &size))
			id = buf;
		/* local debug files by build-id, then by .gnu_debuglink; debuginfod last and
		 * only for a stripped file: an unstripped one has its symbols */
		sd->debug = load_debug_file(sy, id, size);
		if (!sd->debug && path)
			sd->debug = load_debuglink(sy, path, sd->st);
		/* sd->st is the file's: what it knows, the file need not be opened again for */
		if (!sd->debug && (!path || !(sd->st ? symtab__has_symtab(sd->st) :
						       ptd_elf_has_symtab(path))))
			sd->debug = load_debuginfod(id, size);
	}
}

/* The tables of `dso` (< sy->nr_dsos), loaded by the first thread to ask. */
static struct sdso *sdso_ready(struct symbols *sy, uint32_t dso)
{
	struct sdso *sd = &sy->dsos[dso];

	if (!__atomic_load_n(&sd->loaded, __ATOMIC_ACQUIRE)) {
		pthread_mutex_lock(&sy->lock);
		if (!sd->loaded) {
			sdso_load(sy, dso, sd);
			__atomic_store_n(&sd->loaded, true, __ATOMIC_RELEASE);
		}
		pthread_mutex_unlock(&sy->lock);
	}
	return sd;
}

static struct sdso *sdso_get(struct symbols *sy, uint32_t dso)
{
	if (dso == UINT32_MAX || dso >= sy->im->nr_dsos)
		return NULL;
	if (dso >= sy->nr_dsos) {
		/* new entries are zeroed: not loaded */
		if (array_grow((void **)&sy->dsos, &sy->cap_dsos, sy->im->nr_dsos, sizeof(*sy->dsos)))
			return NULL;
		sy->nr_dsos = sy->im->nr_dsos;
	}
	return sdso_ready(sy, dso);
}

/*
 * Load bias of a mapping, from the program headers of its own file (0 if unknown): the
 * separate debug file has the same p_vaddr but not the same p_offset.
 */
static uint64_t map_bias(struct symbols *sy, struct ptd_map *m, struct sdso *sd)
{
	const struct sym_segment *segs = sd->segs;
	uint32_t nr = sd->nr_segs;
	uint64_t bias = 0;

	if (__atomic_load_n(&m->bias_valid, __ATOMIC_ACQUIRE))
		return m->bias;
	pthread_mutex_lock(&sy->lock);
	if (!m->bias_valid) {
		if (sd->st) {
			segs = symtab__segment(sd->st, 0);
			nr = symtab__nr_segments(sd->st);
		}
		m->bias_known = segs && !symtab__segments_bias(segs, nr, m->start,
								m->end - m->start, m->pgoff,
								m->exec, &bias);
		m->bias = m->bias_known ? bias : 0;
		__atomic_store_n(&m->bias_valid, true, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&sy->lock);
	return m->bias;
}

/*
 * Marks the dsos mapped executable, whose tables symbols__func_range() loads on first use
 * (this loaded them all up front: every dso of every address space, the ones the trace
 * never runs in too, 1.6 ms for a libstdc++, 17 for a libLLVM); sizes the dsos once, so
 * that decoder threads read them in place.
 */
int symbols__preload(struct symbols *sy)
{
	uint32_t i, j;

	if (sy->im->nr_dsos > sy->nr_dsos) {
		if (array_grow((void **)&sy->dsos, &sy->cap_dsos, sy->im->nr_dsos, sizeof(*sy->dsos)))
			return -ENOMEM;
		sy->nr_dsos = sy->im->nr_dsos;
	}
	for (i = 0; i < sy->im->nr_as; i++) {
		const struct ptd_aspace *as = &sy->im->as[i];

		for (j = 0; j < as->nr_maps; j++)
			if (as->maps[j].exec && as->maps[j].dso < sy->nr_dsos)
				sy->dsos[as->maps[j].dso].wanted = true;
	}
	return 0;
}

static const struct sym *find_sym(const struct symbols *sy, const struct ptd_map *m,
				  const struct sdso *sd, uint64_t link)
{
	const struct sym *s = NULL;

	if (sy->im->dsos[m->dso].kernel)
		return find_ksym(sy, link);
	if (sd->debug)
		s = symtab__find_addr(sd->debug, link);
	if (!s && sd->st)
		s = symtab__find_addr(sd->st, link);
	return s;
}

int symbols__func_range(struct symbols *sy, int as, uint64_t addr, uint64_t *start,
			uint64_t *end)
{
	static const struct sdso not_loaded;
	const struct ptd_map *m = ptd_aspace_lookup(sy->im, as, addr);
	uint64_t s0 = 0, e0 = UINT64_MAX, s1, e1, link, bias;
	const struct sdso *sd;
	const struct sym *k;
	int i, r;

	*start = *end = 0;
	if (!m)
		return -ENOENT;
	if (m->dso == UINT32_MAX || m->dso >= sy->nr_dsos) {
		*start = m->start;
		*end = m->end;
		return 1;
	}
	/*
	 * A dso mapped executable has its tables and its executable mappings their biases,
	 * as they had when symbols__preload() made them up front; another dso what the
	 * merge thread's lookups loaded, a mapping not executable the bias they set.
	 */
	if (sy->dsos[m->dso].wanted) {
		struct sdso *w = sdso_ready(sy, m->dso);

		sd = w;
		bias = m->exec ? map_bias(sy, (struct ptd_map *)m, w) : m->bias;
	} else {
		sd = __atomic_load_n(&sy->dsos[m->dso].loaded, __ATOMIC_ACQUIRE) ?
			     &sy->dsos[m->dso] : &not_loaded;
		bias = m->bias;
	}
	link = addr - bias;
	if (sy->im->dsos[m->dso].kernel) {
		k = find_ksym(sy, link);
		if (!k) {
			*start = addr;
			*end = addr + 1;
			return 1;
		}
		*start = k->addr + bias;
		*end = k->addr + (k->size ? k->size : 1) + bias;
		return 0;
	}
	/* the debug file's table first, the file's own (PLT) second; gaps intersect */
	for (i = 0; i < 2; i++) {
		const struct symtab *st = i ? sd->st : sd->debug;

		if (!st)
			continue;
		r = symtab__find_range(st, link, &s1, &e1);
		if (r == 0) {
			*start = s1 + bias;
			*end = e1 + bias;
			return 0;
		}
		if (s1 > s0)
			s0 = s1;
		if (e1 < e0)
			e0 = e1;
	}
	/* between functions, within the mapping */
	*start = s0 + bias > m->start && s0 + bias > s0 ? s0 + bias : m->start;
	*end = e0 != UINT64_MAX && e0 + bias < m->end ? e0 + bias : m->end;
	return 1;
}

/*
 * symbols__func_range() answers by address, for one decoder thread: the jumps of a
 * trace go to the same few thousand targets millions of times, and each miss costs a
 * mapping lookup and two binary searches. Direct-mapped (ptd.h: the hit in line), so its
 * memory is fixed; the answers never go stale, as an address space's mappings do not
 * change during a decode.
 */
struct symbols_range_cache *symbols__range_cache_new(void)
{
	return calloc(1, sizeof(struct symbols_range_cache));
}

void symbols__range_cache_free(struct symbols_range_cache *c)
{
	free(c);
}

void symbols__range_cache_stats(const struct symbols_range_cache *c, uint64_t *lookups,
				uint64_t *hits)
{
	*lookups = c ? c->lookups : 0;
	*hits = c ? c->hits : 0;
}

int symbols__func_range_fill(struct symbols *sy, struct symbols_range_cache *c, int as,
			     uint64_t addr, uint64_t *start, uint64_t *end)
{
	struct symbols_range_slot *e = symbols__range_slot(c, as, addr);

	e->result = symbols__func_range(sy, as, addr, start, end);
	e->addr = addr;
	e->as_plus1 = as + 1;
	e->start = *start;
	e->end = *end;
	return e->result;
}

static int grow_cache(struct symbols *sy)
{
	size_t size = sy->cache_size * 2, i;
	struct sym_entry *v = calloc(size, sizeof(*v));

	if (!v)
		return -ENOMEM;
	for (i = 0; i < sy->cache_size; i++) {
		const struct sym_entry *e = &sy->cache[i];
		size_t h;

		if (!e->key)
			continue;
		h = (e->key * 0x9e3779b97f4a7c15ull + (uint64_t)e->as) & (size - 1);
		while (v[h].key)
			h = (h + 1) & (size - 1);
		v[h] = *e;
	}
	free(sy->cache);
	sy->cache = v;
	sy->cache_size = size;
	return 0;
}

static const char *demangled(struct symbols *sy, const struct sym *s)
{
	size_t h = ((uintptr_t)s * 0x9e3779b97f4a7c15ull) & (sy->names_size - 1);
	const char *name = s->name;
	char *dm;

	while (sy->names[h].sym) {
		if (sy->names[h].sym == s)
			return sy->names[h].name;
		h = (h + 1) & (sy->names_size - 1);
	}
	if (sy->names_used * 2 >= sy->names_size) {
		size_t size = sy->names_size * 2, i;
		struct name_entry *v = calloc(size, sizeof(*v));

		if (!v)
			return s->name;
		for (i = 0; i < sy->names_size; i++) {
			size_t k;

			if (!sy->names[i].sym)
				continue;
			k = ((uintptr_t)sy->names[i].sym * 0x9e3779b97f4a7c15ull) & (size - 1);
			while (v[k].sym)
				k = (k + 1) & (size - 1);
			v[k] = sy->names[i];
		}
		free(sy->names);
		sy->names = v;
		sy->names_size = size;
		h = ((uintptr_t)s * 0x9e3779b97f4a7c15ull) & (size - 1);
		while (sy->names[h].sym)
			h = (h + 1) & (size - 1);
	}
	dm = symtab__demangle(name);
	name = arena_strdup(sy, dm ? dm : name);
	free(dm);
	if (!name)
		return s->name;
	sy->names[h].sym = s;
	sy->names[h].name = name;
	sy->names_used++;
	return name;
}

int symbols__lookup(struct symbols *sy, int as, uint64_t addr, struct cs_symbol *out)
{
	const struct ptd_map *m;
	struct sym_entry *e;
	const struct sym *s = NULL;
	struct sdso *sd = NULL;
	const char *name;
	char buf[PATH_MAX + 32];
	uint64_t start = 0;
	size_t h;

	if (!addr || as < 0)
		return -ENOENT;
	h = (addr * 0x9e3779b97f4a7c15ull + (uint64_t)as) & (sy->cache_size - 1);
	while (sy->cache[h].key) {
		e = &sy->cache[h];
		if (e->key == addr && e->as == as) {
			out->name = e->name;
			out->start = e->start;
			return 0;
		}
		h = (h + 1) & (sy->cache_size - 1);
	}

	m = ptd_aspace_lookup(sy->im, as, addr);
	if (!m)
		return -ENOENT;
	if (m->dso != UINT32_MAX)
		sd = sdso_get(sy, m->dso);
	if (sd) {
		uint64_t bias = map_bias(sy, (struct ptd_map *)m, sd);

		s = find_sym(sy, m, sd, addr - bias);
		if (s)
			start = s->addr + bias;
	}
	if (s) {
		name = demangled(sy, s);
	} else {
		const char *file = m->dso != UINT32_MAX ? sy->im->dsos[m->dso].name : "[anon]";
		const char *base = strrchr(file, '/');

		/*
		 * The address in the ELF file's own terms (what nm, addr2line and perf show),
		 * or, when the file could not be read, the offset in it.
		 */
		snprintf(buf, sizeof(buf), "%s+0x%llx", base ? base + 1 : file,
			 (unsigned long long)(m->bias_known ? addr - m->bias :
							      addr - m->start + m->pgoff));
		name = arena_strdup(sy, buf);
		if (!name)
			return -ENOMEM;
	}

	if (sy->cache_used * 2 >= sy->cache_size) {
		if (grow_cache(sy))
			goto out;
		h = (addr * 0x9e3779b97f4a7c15ull + (uint64_t)as) & (sy->cache_size - 1);
		while (sy->cache[h].key)
			h = (h + 1) & (sy->cache_size - 1);
	}
	e = &sy->cache[h];
	e->key = addr;
	e->as = as;
	e->start = start;
	e->name = name;
	sy->cache_used++;
out:
	out->name = name;
	out->start = start;
	return 0;
}
