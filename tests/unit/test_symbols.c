// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * decoder/symbolizer.c: names for addresses of a process's mappings, on this test binary
 * mapped where it runs: plain and C++ names (demangled), PLT entries, the function
 * start used for jump detection, "binary+0xVADDR" for code without symbols, a stripped
 * copy whose names come from its separate debug file found by build-id, kallsyms, and
 * the kernel names of kprobe fires (kernel_symbols__*, include/ptdecode.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "ptd.h"
#include "ptdecode.h"
#include "symtab.h"

__attribute__((noinline, used)) int symbols_probe(int x)
{
	return x + 11;
}

/* A C++ name, as g++ would mangle foo::bar(int). */
int cxx_probe(int x) __asm__("_ZN3foo3barEi");
__attribute__((noinline, used)) int cxx_probe(int x)
{
	return x * 7;
}

static char exe[256], tmpdir[64];

/* The executable mappings of this binary: start, end, file offset. */
static int self_maps(uint64_t *start, uint64_t *end, uint64_t *pgoff, int max)
{
	char line[512];
	int n = 0;
	FILE *f = fopen("/proc/self/maps", "r");

	assert_non_null(f);
	while (fgets(line, sizeof(line), f) && n < max) {
		unsigned long long s, e, o;
		char perms[8], path[256] = "";

		if (sscanf(line, "%llx-%llx %7s %llx %*s %*s %255s", &s, &e, perms, &o, path) < 4)
			continue;
		if (strcmp(path, exe) || perms[2] != 'x')
			continue;
		start[n] = s;
		end[n] = e;
		pgoff[n++] = o;
	}
	fclose(f);
	return n;
}

/* Images of one address space holding `file` where this binary's code runs. */
static int map_self(struct ptd_images *im, const char *file)
{
	uint64_t start[4], end[4], pgoff[4];
	int as, i, n = self_maps(start, end, pgoff, 4);

	assert_true(n > 0);
	as = ptd_aspace_new(im, 42, 0);
	assert_true(as >= 0);
	for (i = 0; i < n; i++)
		assert_int_equal(ptd_aspace_map_file(im, as, file, start[i], end[i] - start[i],
						     pgoff[i], true, NULL, 0), 0);
	return as;
}

static int setup(void **state)
{
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

	if (n <= 0)
		return -1;
	exe[n] = '\0';
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/ptbpf-test-symbols-%d", getpid());
	return mkdir(tmpdir, 0700);
}

static int teardown(void **state)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", tmpdir);
	return system(cmd) ? -1 : 0;
}

/* A file of four bytes of code that is no ELF file, at `path`. */
static void write_blob(const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, "\x90\x90\x90\xc3", 4), 4);
	close(fd);
}

static void test_names(void **state)
{
	struct ptd_images im;
	struct symbols *sy;
	struct cs_symbol s, again;
	uint64_t start, end;
	int as;

	assert_int_equal(ptd_images_init(&im, NULL, NULL, false), 0);
	as = map_self(&im, exe);
	sy = symbols__new(&im, NULL);
	assert_non_null(sy);
	assert_int_equal(symbols__preload(sy), 0);

	assert_int_equal(symbols__lookup(sy, as, (uintptr_t)symbols_probe + 2, &s), 0);
	assert_string_equal(s.name, "symbols_probe");
	assert_int_equal(s.start, (uintptr_t)symbols_probe);
	/* cached: the same string */
	assert_int_equal(symbols__lookup(sy, as, (uintptr_t)symbols_probe + 2, &again), 0);
	assert_ptr_equal(s.name, again.name);

	assert_int_equal(symbols__lookup(sy, as, (uintptr_t)cxx_probe, &s), 0);
	assert_string_equal(s.name, "foo::bar(int)");

	assert_int_equal(symbols__func_range(sy, as, (uintptr_t)cxx_probe + 3, &start, &end), 0);
	assert_int_equal(start, (uintptr_t)cxx_probe);
	assert_true(end > (uintptr_t)cxx_probe + 3);
	assert_int_equal(symbols__func_range(sy, as, 0x10, &start, &end), -ENOENT);

	/* nothing mapped there, no address space, address 0 */
	assert_int_equal(symbols__lookup(sy, as, 0x10, &s), -ENOENT);
	assert_int_equal(symbols__lookup(sy, -1, (uintptr_t)symbols_probe, &s), -ENOENT);
	assert_int_equal(symbols__lookup(sy, as, 0, &s), -ENOENT);

	symbols__free(sy);
	symbols__free(NULL);
	ptd_images_fini(&im);
}

static void test_plt_name(void **state)
{
	const struct sym *p;
	struct symtab *st;
	struct ptd_images im;
	struct symbols *sy;
	struct cs_symbol s;
	uint64_t start[4], end[4], pgoff[4], bias;
	int as;

	/* free@plt at its run-time address */
	assert_int_equal(symtab__load(exe, &st), 0);
	p = symtab__find_name(st, "free@plt");
	assert_non_null(p);
	assert_true(self_maps(start, end, pgoff, 4) > 0);
	assert_int_equal(symtab__load_bias(st, start[0], end[0] - start[0], pgoff[0], true, &bias), 0);

	assert_int_equal(ptd_images_init(&im, NULL, NULL, false), 0);
	as = map_self(&im, exe);
	sy = symbols__new(&im, NULL);
	symbols__preload(sy);
	assert_int_equal(symbols__lookup(sy, as, p->addr + bias, &s), 0);
	assert_string_equal(s.name, "free@plt");
	symbols__free(sy);
	ptd_images_fini(&im);
	symtab__free(st);
}

static void test_unknown(void **state)
{
	struct ptd_images im;
	struct symbols *sy;
	struct cs_symbol s;
	uint64_t start, end;
	char path[128];
	int as;

	/* not an ELF file (no program headers to place it): "name+0xoff", the file offset */
	snprintf(path, sizeof(path), "%s/blob.bin", tmpdir);
	write_blob(path);
	assert_int_equal(ptd_images_init(&im, NULL, NULL, false), 0);
	as = ptd_aspace_new(&im, 7, 0);
	assert_int_equal(ptd_aspace_map_file(&im, as, path, 0x10000, 0x1000, 0x2000, true, NULL, 0),
			 0);
	/* a file that does not exist: its name still shows */
	assert_int_equal(ptd_aspace_map_file(&im, as, "/nonexistent/lib.so", 0x20000, 0x1000, 0,
					     true, NULL, 0), 0);
	sy = symbols__new(&im, NULL);
	symbols__preload(sy);
	assert_int_equal(symbols__lookup(sy, as, 0x10003, &s), 0);
	assert_string_equal(s.name, "blob.bin+0x2003");
	assert_int_equal(s.start, 0);
	/* no symbols: the whole mapping is one unknown range */
	assert_int_equal(symbols__func_range(sy, as, 0x10003, &start, &end), 1);
	assert_int_equal(start, 0x10000);
	assert_int_equal(end, 0x11000);
	assert_int_equal(symbols__lookup(sy, as, 0x20010, &s), 0);
	assert_string_equal(s.name, "lib.so+0x10");
	symbols__free(sy);
	ptd_images_fini(&im);
}

/*
 * symbols__func_range_cached(): the same answers as symbols__func_range() (functions,
 * ranges between them, nothing mapped), per address space, a second time from the cache.
 */
static void test_range_cache(void **state)
{
	struct ptd_images im;
	struct symbols *sy;
	struct symbols_range_cache *c;
	uint64_t start, end, s0, e0, lookups, hits, addr, from, to;
	char path[128];
	int as, other, r, pass, n = 0;

	(void)state;
	snprintf(path, sizeof(path), "%s/cache.bin", tmpdir);
	write_blob(path);
	assert_int_equal(ptd_images_init(&im, NULL, NULL, false), 0);
	as = map_self(&im, exe);
	/* another process with other code at the same address */
	other = ptd_aspace_new(&im, 43, 0);
	assert_true(other >= 0);
	from = (uintptr_t)symbols_probe & ~0xfffull;
	assert_int_equal(ptd_aspace_map_file(&im, other, path, from, 0x1000, 0, true, NULL, 0),
			 0);
	sy = symbols__new(&im, NULL);
	assert_non_null(sy);
	assert_int_equal(symbols__preload(sy), 0);
	c = symbols__range_cache_new();
	assert_non_null(c);

	/* 64 KiB around the probe, every 8 bytes, twice: every answer as the uncached one */
	to = from + 0x10000;
	for (pass = 0; pass < 2; pass++) {
		for (addr = from - 0x8000; addr < to; addr += 8) {
			r = symbols__func_range_cached(sy, c, as, addr, &start, &end);
			assert_int_equal(r, symbols__func_range(sy, as, addr, &s0, &e0));
			assert_int_equal(start, s0);
			assert_int_equal(end, e0);
			r = symbols__func_range_cached(sy, c, other, addr, &start, &end);
			assert_int_equal(r, symbols__func_range(sy, other, addr, &s0, &e0));
			assert_int_equal(start, s0);
			assert_int_equal(end, e0);
			n += 2;
		}
	}
	/* the same address, two address spaces, two answers */
	assert_int_equal(symbols__func_range_cached(sy, c, as, (uintptr_t)symbols_probe + 1,
						    &start, &end), 0);
	assert_int_equal(start, (uintptr_t)symbols_probe);
	assert_int_equal(symbols__func_range_cached(sy, c, other, (uintptr_t)symbols_probe + 1,
						    &start, &end), 1);
	assert_int_equal(start, from);
	assert_int_equal(end, from + 0x1000);
	assert_int_equal(symbols__func_range_cached(sy, c, other, 0x10, &start, &end), -ENOENT);
	symbols__range_cache_stats(c, &lookups, &hits);
	assert_int_equal(lookups, (uint64_t)n + 3);
	symbols__range_cache_free(c);
	c = symbols__range_cache_new();
	assert_non_null(c);
	/* an answer is kept: the same target again is answered by the cache */
	for (addr = from; addr < from + 64 * 16; addr += 16) {
		symbols__func_range_cached(sy, c, as, addr, &start, &end);
		symbols__func_range_cached(sy, c, as, addr, &s0, &e0);
		assert_int_equal(s0, start);
		assert_int_equal(e0, end);
	}
	symbols__range_cache_stats(c, &lookups, &hits);
	assert_int_equal(lookups, 128);
	assert_int_equal(hits, 64);
	symbols__range_cache_free(c);

	/* no cache: asked each time */
	assert_int_equal(symbols__func_range_cached(sy, NULL, as, (uintptr_t)symbols_probe,
						    &start, &end), 0);
	assert_int_equal(start, (uintptr_t)symbols_probe);
	symbols__range_cache_stats(NULL, &lookups, &hits);
	assert_int_equal(lookups, 0);
	symbols__range_cache_free(NULL);
	symbols__free(sy);
	ptd_images_fini(&im);
}

static void test_debug_file(void **state)
{
	char stripped[128], dbg[256], cmd[1024], hex[41];
	const uint8_t *id;
	uint32_t size, i;
	struct symtab *st;
	struct ptd_images im;
	struct symbols *sy;
	struct cs_symbol s;
	int as;

	snprintf(stripped, sizeof(stripped), "%s/stripped", tmpdir);
	snprintf(cmd, sizeof(cmd), "strip -o %s %s 2>/dev/null", stripped, exe);
	if (system(cmd)) {
		print_message("SKIP: strip (binutils) is not available\n");
		skip();
	}
	/* the stripped copy has no .symtab: only .dynsym and the PLT */
	assert_int_equal(symtab__load(stripped, &st), -ENODATA);
	/* this binary itself stands for the debug file: same build-id, full .symtab */
	assert_int_equal(symtab__load(exe, &st), 0);
	assert_int_equal(symtab__build_id(st, &id, &size), 0);
	for (i = 0; i < size; i++)
		sprintf(hex + 2 * i, "%02x", id[i]);
	symtab__free(st);
	snprintf(dbg, sizeof(dbg), "%s/debug/.build-id/%.2s", tmpdir, hex);
	snprintf(cmd, sizeof(cmd), "mkdir -p %s && cp %s %s/%s.debug", dbg, exe, dbg, hex + 2);
	assert_int_equal(system(cmd), 0);

	snprintf(dbg, sizeof(dbg), "%s/debug", tmpdir);
	assert_int_equal(ptd_images_init(&im, NULL, dbg, false), 0);
	as = map_self(&im, stripped);
	sy = symbols__new(&im, dbg);
	symbols__preload(sy);
	assert_int_equal(symbols__lookup(sy, as, (uintptr_t)symbols_probe + 1, &s), 0);
	assert_string_equal(s.name, "symbols_probe");
	symbols__free(sy);
	ptd_images_fini(&im);

	/* without the debug directory: the stripped file's offsets */
	assert_int_equal(ptd_images_init(&im, NULL, NULL, false), 0);
	as = map_self(&im, stripped);
	sy = symbols__new(&im, NULL);
	symbols__preload(sy);
	assert_int_equal(symbols__lookup(sy, as, (uintptr_t)symbols_probe + 1, &s), 0);
	assert_non_null(strstr(s.name, "stripped+0x"));
	symbols__free(sy);
	ptd_images_fini(&im);
}

static void test_kallsyms(void **state)
{
	struct ptd_images im;
	struct symbols *sy;
	char path[128];
	int fd;

	assert_int_equal(ptd_images_init(&im, NULL, NULL, false), 0);
	sy = symbols__new(&im, NULL);
	assert_int_equal(symbols__load_kallsyms(NULL, "/proc/kallsyms"), -EINVAL);
	assert_int_equal(symbols__load_kallsyms(sy, NULL), -EINVAL);
	assert_int_equal(symbols__load_kallsyms(sy, "/nonexistent/kallsyms"), -ENOENT);
	/* zeroed addresses (kptr_restrict) and data symbols only: nothing usable */
	snprintf(path, sizeof(path), "%s/kallsyms", tmpdir);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	assert_true(fd >= 0);
	dprintf(fd, "0000000000000000 T _text\nffffffff82000000 D jiffies\n");
	close(fd);
	assert_int_equal(symbols__load_kallsyms(sy, path), -ENODATA);
	symbols__free(sy);
	ptd_images_fini(&im);
}

/* A kprobe's fire names its kernel address: "func", "func+0xoff", nothing outside text. */
static void test_kernel_names(void **state)
{
	struct symbols *sy;
	char path[128], name[128], line[512];
	unsigned long long addr = 0;
	FILE *f;
	int fd;

	(void)state;
	assert_int_equal(kernel_symbols__load(NULL, &sy), -EINVAL);
	assert_int_equal(kernel_symbols__load("/nonexistent/kallsyms", &sy), -ENOENT);
	assert_null(sy);
	snprintf(path, sizeof(path), "%s/kallsyms-fire", tmpdir);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	assert_true(fd >= 0);
	dprintf(fd, "ffffffff81000000 T _stext\nffffffff81200000 t do_nanosleep\n"
		    "ffffffff81200100 T hrtimer_nanosleep\nffffffff82000000 D jiffies\n");
	close(fd);
	assert_int_equal(kernel_symbols__load(path, &sy), 0);
	assert_int_equal(kernel_symbols__name(sy, 0xffffffff81200000ull, name, sizeof(name)), 0);
	assert_string_equal(name, "do_nanosleep");
	/* where a kprobe's PT_REGS_IP lands: past the probed instruction */
	assert_int_equal(kernel_symbols__name(sy, 0xffffffff81200005ull, name, sizeof(name)), 0);
	assert_string_equal(name, "do_nanosleep+0x5");
	assert_int_equal(kernel_symbols__name(sy, 0xffffffff81200104ull, name, sizeof(name)), 0);
	assert_string_equal(name, "hrtimer_nanosleep+0x4");
	assert_int_equal(kernel_symbols__name(sy, 0xffffffff80000000ull, name, sizeof(name)),
			 -ENOENT);
	assert_int_equal(kernel_symbols__name(NULL, 0xffffffff81200000ull, name, sizeof(name)),
			 -EINVAL);
	symbols__free(sy);

	/* This kernel's own: a text symbol of /proc/kallsyms names its address, plus 4. */
	f = fopen("/proc/kallsyms", "r");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		char type, sym[256];

		if (sscanf(line, "%llx %c %255s", &addr, &type, sym) == 3 && addr &&
		    (type == 'T' || type == 't') && !strcmp(sym, "do_nanosleep"))
			break;
		addr = 0;
	}
	fclose(f);
	if (!addr) {
		print_message("/proc/kallsyms shows no do_nanosleep address (kptr_restrict)\n");
		return;
	}
	assert_int_equal(kernel_symbols__load("/proc/kallsyms", &sy), 0);
	assert_int_equal(kernel_symbols__name(sy, addr + 4, name, sizeof(name)), 0);
	assert_string_equal(name, "do_nanosleep+0x4");
	symbols__free(sy);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_plt_name),
		cmocka_unit_test(test_unknown),
		cmocka_unit_test(test_range_cache),
		cmocka_unit_test(test_debug_file),
		cmocka_unit_test(test_kallsyms),
		cmocka_unit_test(test_kernel_names),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
