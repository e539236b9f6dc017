// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * decoder/symtab.c on real ELF files: this test binary itself (PIE, .symtab, lazy PLT),
 * libc (.dynsym only) and a stripped executable.
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "array.h"
#include "symtab.h"

/* Symbols this file defines so the table can be checked against the running code. */
__attribute__((noinline, used)) int symtab_probe_target(int x)
{
	return x * 3 + 1;
}

/* Same address as symtab_probe_target: a strong and a weak alias. */
int symtab_probe_alias(int x) __attribute__((alias("symtab_probe_target")));
int symtab_probe_weak(int x) __attribute__((weak, alias("symtab_probe_target")));

/* A local function and a weak alias with a longer name: non-weak wins first (perf). */
__attribute__((noinline, used)) static int symtab_probe_local(int x)
{
	return x ^ 5;
}
int symtab_probe_local_weak_alias(int x) __attribute__((weak, alias("symtab_probe_local")));

__attribute__((noinline, used)) int symtab_probe_other(int x)
{
	return symtab_probe_target(x) + 2;
}

/* A global label with no type and no size, as hand-written assembly has. */
asm(".text\n"
    ".globl symtab_asm_label\n"
    "symtab_asm_label:\n"
    "\tnop\n\tnop\n\tret\n");
void symtab_asm_label(void);

static struct symtab *self;

static int setup(void **state)
{
	return symtab__load("/proc/self/exe", &self);
}

static int teardown(void **state)
{
	symtab__free(self);
	self = NULL;
	return 0;
}

/* Load bias of this process's executable, from /proc/self/maps. */
static uint64_t self_bias(void)
{
	char line[512], exe[256];
	uint64_t bias = 0;
	ssize_t n;
	FILE *f;

	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	assert_true(n > 0);
	exe[n] = '\0';
	f = fopen("/proc/self/maps", "r");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		unsigned long long start, end, pgoff;
		char perms[8], path[256] = "";

		if (sscanf(line, "%llx-%llx %7s %llx %*s %*s %255s", &start, &end, perms, &pgoff,
			   path) < 4)
			continue;
		if (strcmp(path, exe) || perms[2] != 'x')
			continue;
		assert_int_equal(symtab__load_bias(self, start, end - start, pgoff, true, &bias), 0);
		break;
	}
	fclose(f);
	return bias;
}

static void test_load_errors(void **state)
{
	char path[64];
	struct symtab *st = (void *)1;
	int fd;

	assert_int_equal(symtab__load(NULL, &st), -EINVAL);
	assert_int_equal(symtab__load("/proc/self/exe", NULL), -EINVAL);
	assert_int_equal(symtab__load("/nonexistent/ptbpf-no-such-file", &st), -ENOENT);
	assert_null(st);

	snprintf(path, sizeof(path), "/tmp/ptbpf-test-symtab-%d.txt", getpid());
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "not an ELF file\n", 16), 16);
	close(fd);
	assert_int_equal(symtab__load(path, &st), -ENOEXEC);
	assert_null(st);
	unlink(path);

	/* a directory is not an ELF file either */
	assert_int_equal(symtab__load("/tmp", &st), -ENOEXEC);

	symtab__free(NULL);
}

static void test_stripped(void **state)
{
	struct symtab *st = NULL;

	/* Debian's coreutils are stripped and define no functions in .dynsym. */
	if (access("/bin/true", R_OK)) {
		print_message("SKIP: /bin/true is not readable\n");
		skip();
	}
	assert_int_equal(symtab__load("/bin/true", &st), -ENODATA);
	assert_null(st);
}

static void test_null_args(void **state)
{
	const char *names[2];
	const uint8_t *id;
	uint32_t size;
	uint64_t v;

	assert_null(symtab__find_name(NULL, "main"));
	assert_null(symtab__find_name(self, NULL));
	assert_null(symtab__find_addr(NULL, 0x1000));
	assert_int_equal(symtab__suggest(NULL, "main", names, 2), 0);
	assert_int_equal(symtab__suggest(self, NULL, names, 2), 0);
	assert_int_equal(symtab__suggest(self, "main", NULL, 2), 0);
	assert_int_equal(symtab__suggest(self, "main", names, 0), 0);
	assert_int_equal(symtab__addr_to_offset(NULL, 0x1000, &v), -EINVAL);
	assert_int_equal(symtab__addr_to_offset(self, 0x1000, NULL), -EINVAL);
	assert_false(symtab__is_pie(NULL));
	assert_int_equal(symtab__build_id(NULL, &id, &size), -EINVAL);
	assert_int_equal(symtab__build_id(self, NULL, &size), -EINVAL);
	assert_int_equal(symtab__build_id(self, &id, NULL), -EINVAL);
	assert_int_equal(symtab__count(NULL), 0);
	assert_null(symtab__get(NULL, 0));
	assert_null(symtab__get(self, symtab__count(self)));
	assert_null(symtab__path(NULL));
	assert_int_equal(symtab__nr_segments(NULL), 0);
	assert_null(symtab__segment(NULL, 0));
	assert_null(symtab__segment(self, symtab__nr_segments(self)));
	assert_int_equal(symtab__load_bias(NULL, 0, 0, 0, true, &v), -EINVAL);
	assert_int_equal(symtab__load_bias(self, 0, 0, 0, true, NULL), -EINVAL);
}

static void test_find_name(void **state)
{
	const struct sym *a, *b;

	a = symtab__find_name(self, "symtab_probe_target");
	b = symtab__find_name(self, "symtab_probe_other");
	assert_non_null(a);
	assert_non_null(b);
	assert_true(a->size > 0);
	/* link-time distances are run-time distances */
	assert_int_equal(b->addr - a->addr,
			 (uintptr_t)symtab_probe_other - (uintptr_t)symtab_probe_target);
	assert_int_equal(a->addr + self_bias(), (uintptr_t)symtab_probe_target);
	assert_null(symtab__find_name(self, "symtab_probe_nonexistent"));
	assert_null(symtab__find_name(self, ""));
	assert_string_equal(symtab__path(self), "/proc/self/exe");
}

static void test_find_addr(void **state)
{
	const struct sym *a = symtab__find_name(self, "symtab_probe_target");
	const struct sym *s;
	uint64_t i;

	assert_non_null(a);
	for (i = 0; i < a->size; i++) {
		s = symtab__find_addr(self, a->addr + i);
		assert_non_null(s);
		assert_int_equal(s->addr, a->addr);
	}
	/*
	 * Of three aliases, as perf's choose_best_symbol(): sized, non-weak, global, fewest
	 * leading underscores, then the longer name ("symtab_probe_target" over
	 * "symtab_probe_alias").
	 */
	s = symtab__find_addr(self, a->addr);
	assert_string_equal(s->name, "symtab_probe_target");
	/* a local symbol over a weak one, whatever their names */
	a = symtab__find_name(self, "symtab_probe_local_weak_alias");
	assert_non_null(a);
	s = symtab__find_addr(self, a->addr);
	assert_string_equal(s->name, "symtab_probe_local");
	assert_non_null(symtab__find_name(self, "symtab_probe_weak"));
	assert_null(symtab__find_addr(self, 0));
	assert_null(symtab__find_addr(self, ~0ull));
}

static void test_unsized_label(void **state)
{
	const struct sym *l = symtab__find_name(self, "symtab_asm_label");
	const struct sym *s;

	assert_non_null(l);
	assert_int_equal(l->size, 0);
	assert_int_equal(l->addr + self_bias(), (uintptr_t)symtab_asm_label);
	/* an unsized symbol covers its bytes up to the next symbol */
	s = symtab__find_addr(self, l->addr + 2);
	assert_non_null(s);
	assert_string_equal(s->name, "symtab_asm_label");
}

static void test_plt(void **state)
{
	const struct sym *p = symtab__find_name(self, "free@plt");
	const struct sym *s;

	/* free() is called by this binary through the PLT (cmocka, symtab__free) */
	assert_non_null(p);
	assert_true(p->size == 16 || p->size == 8);
	s = symtab__find_addr(self, p->addr + 3);
	assert_non_null(s);
	assert_string_equal(s->name, "free@plt");
}

static void test_find_range(void **state)
{
	const struct sym *a = symtab__find_name(self, "symtab_probe_target");
	const struct sym *l = symtab__find_name(self, "symtab_asm_label");
	uint64_t start, end;

	assert_int_equal(symtab__find_range(NULL, a->addr, &start, &end), -EINVAL);
	assert_int_equal(symtab__find_range(self, a->addr, NULL, &end), -EINVAL);
	assert_int_equal(symtab__find_range(self, a->addr, &start, NULL), -EINVAL);
	assert_int_equal(symtab__find_range(self, a->addr + 1, &start, &end), 0);
	assert_int_equal(start, a->addr);
	assert_int_equal(end, a->addr + a->size);
	/* an unsized label runs to the next symbol */
	assert_int_equal(symtab__find_range(self, l->addr, &start, &end), 0);
	assert_int_equal(start, l->addr);
	assert_true(end > l->addr);
	/* below every symbol: a gap up to the first one */
	assert_int_equal(symtab__find_range(self, 0, &start, &end), 1);
	assert_int_equal(start, 0);
	assert_int_equal(end, symtab__get(self, 0)->addr);
}

static void test_sorted(void **state)
{
	uint32_t i, n = symtab__count(self);

	assert_true(n > 10);
	for (i = 1; i < n; i++)
		assert_true(symtab__get(self, i - 1)->addr <= symtab__get(self, i)->addr);
}

static void test_suggest(void **state)
{
	const char *names[4];
	int n, i, found = 0;

	n = symtab__suggest(self, "symtab_probe_targt", names, 4);
	assert_true(n >= 1);
	assert_string_equal(names[0], "symtab_probe_target");
	/* substring matches count too */
	n = symtab__suggest(self, "probe_oth", names, 4);
	for (i = 0; i < n; i++)
		found |= !strcmp(names[i], "symtab_probe_other");
	assert_true(found);
	assert_int_equal(symtab__suggest(self, "zzzzqqqqxxxxwwww", names, 4), 0);
}

static void test_offsets_and_facts(void **state)
{
	const struct sym *a = symtab__find_name(self, "symtab_probe_target");
	const struct sym_segment *seg = NULL;
	const uint8_t *id;
	uint32_t size, i;
	uint64_t off;

	assert_true(symtab__is_pie(self));
	assert_int_equal(symtab__build_id(self, &id, &size), 0);
	assert_int_equal(size, 20);
	assert_true(symtab__nr_segments(self) >= 2);
	for (i = 0; i < symtab__nr_segments(self); i++) {
		const struct sym_segment *s = symtab__segment(self, i);

		if (a->addr >= s->vaddr && a->addr < s->vaddr + s->filesz)
			seg = s;
	}
	assert_non_null(seg);
	assert_int_equal(symtab__addr_to_offset(self, a->addr, &off), 0);
	assert_int_equal(off, a->addr - seg->vaddr + seg->offset);
	assert_int_equal(symtab__addr_to_offset(self, ~0ull - 5, &off), -ENOENT);
	assert_int_equal(symtab__load_bias(self, 0x400000, 0x1000, 1ull << 40, true, &off), -ENOENT);
}

static void test_dynsym_only(void **state)
{
	const char *libc = "/lib/x86_64-linux-gnu/libc.so.6";
	struct symtab *st = NULL;
	const struct sym *m, *s;

	if (access(libc, R_OK)) {
		print_message("SKIP: %s is not readable\n", libc);
		skip();
	}
	assert_int_equal(symtab__load(libc, &st), 0);
	assert_true(symtab__is_pie(st));
	m = symtab__find_name(st, "malloc");
	assert_non_null(m);
	s = symtab__find_addr(st, m->addr + 1);
	assert_non_null(s);
	assert_int_equal(s->addr, m->addr);
	/* "malloc" is preferred over its alias "__libc_malloc" */
	assert_string_equal(symtab__find_addr(st, m->addr)->name, "malloc");
	symtab__free(st);
}

static void test_read_without_symbols(void **state)
{
	struct sym_segment *segs = NULL;
	const uint8_t *id;
	uint8_t buf[64];
	uint32_t nr = 0, size = 0, isize;
	bool pie = false;

	assert_int_equal(symtab__read_segments(NULL, &segs, &nr, &pie), -EINVAL);
	assert_int_equal(symtab__read_segments("/proc/self/exe", NULL, &nr, &pie), -EINVAL);
	assert_int_equal(symtab__read_segments("/proc/self/exe", &segs, NULL, &pie), -EINVAL);
	assert_int_equal(symtab__read_segments("/nonexistent/x", &segs, &nr, &pie), -ENOENT);
	assert_int_equal(symtab__read_segments("/proc/self/exe", &segs, &nr, &pie), 0);
	assert_int_equal(nr, symtab__nr_segments(self));
	assert_memory_equal(segs, symtab__segment(self, 0), sizeof(*segs));
	assert_true(pie);
	free(segs);

	assert_int_equal(symtab__read_build_id(NULL, buf, sizeof(buf), &size), -EINVAL);
	assert_int_equal(symtab__read_build_id("/proc/self/exe", NULL, 8, &size), -EINVAL);
	assert_int_equal(symtab__read_build_id("/proc/self/exe", buf, 8, NULL), -EINVAL);
	assert_int_equal(symtab__read_build_id("/proc/self/exe", buf, sizeof(buf), &size), 0);
	assert_int_equal(symtab__build_id(self, &id, &isize), 0);
	assert_int_equal(size, isize);
	assert_memory_equal(buf, id, size);
	/* a buffer too small for the note finds none */
	assert_int_equal(symtab__read_build_id("/proc/self/exe", buf, 4, &size), -ENOENT);
}

/* The whole of `path` in a malloc'ed buffer. */
static char *slurp(const char *path, size_t *size)
{
	char chunk[65536], *buf = NULL;
	FILE *in, *out;
	size_t n;

	in = fopen(path, "rb");
	assert_non_null(in);
	out = open_memstream(&buf, size);
	assert_non_null(out);
	while ((n = fread(chunk, 1, sizeof(chunk), in)) > 0)
		assert_int_equal(fwrite(chunk, 1, n, out), n);
	fclose(in);
	assert_int_equal(fclose(out), 0);
	return buf;
}

/* The in-memory reader finds the build id the file reader finds, in the same bytes. */
static void test_image_build_id(void **state)
{
	uint8_t file_id[64], id[20], len = 0, zero[20] = { 0 };
	uint32_t file_size = 0;
	size_t size = 0;
	char *image;

	assert_int_equal(symtab__image_build_id(NULL, 8, id, &len), -EINVAL);
	assert_int_equal(symtab__image_build_id(zero, sizeof(zero), NULL, &len), -EINVAL);
	assert_int_equal(symtab__image_build_id(zero, sizeof(zero), id, NULL), -EINVAL);
	assert_int_equal(symtab__image_build_id(zero, 0, id, &len), -EINVAL);
	assert_int_equal(symtab__image_build_id(zero, sizeof(zero), id, &len), -EINVAL);

	image = slurp("/proc/self/exe", &size);
	assert_int_equal(symtab__read_build_id("/proc/self/exe", file_id, sizeof(file_id),
						&file_size), 0);
	assert_int_equal(symtab__image_build_id(image, size, id, &len), 0);
	assert_int_equal(len, file_size);
	assert_memory_equal(id, file_id, len);
	free(image);
}

/*
 * lld's and mold's layout: the read-only segment and the code segment share the first
 * file page at different p_vaddr - p_offset. The code mapping (pgoff 0, executable) is
 * placed through the code segment, the read-only one through its own.
 */
static void test_segments_bias(void **state)
{
	static const struct sym_segment lld[] = {
		{ .vaddr = 0, .memsz = 0x6ac, .offset = 0, .filesz = 0x6ac, .flags = PF_R },
		{ .vaddr = 0x16b0, .memsz = 0x190, .offset = 0x6b0, .filesz = 0x190,
		  .flags = PF_R | PF_X },
		{ .vaddr = 0x2840, .memsz = 0x1e8, .offset = 0x840, .filesz = 0x1e8,
		  .flags = PF_R | PF_W },
	};
	uint64_t base = 0x555555554000, bias;

	/* r-xp at base + 0x1000, file offset 0: main at 0x17d0 runs at base + 0x17d0 */
	assert_int_equal(symtab__segments_bias(lld, 3, base + 0x1000, 0x1000, 0, true, &bias), 0);
	assert_int_equal(bias, base);
	/* r--p at base, the same file page: the read-only segment */
	assert_int_equal(symtab__segments_bias(lld, 3, base, 0x1000, 0, false, &bias), 0);
	assert_int_equal(bias, base);
	/* a copy of the code mapped elsewhere: its bias follows the mapping */
	assert_int_equal(symtab__segments_bias(lld, 3, 0x7f0000001000, 0x1000, 0, true, &bias), 0);
	assert_int_equal(bias + 0x17d0, 0x7f00000017d0);
	/* nothing of the file there */
	assert_int_equal(symtab__segments_bias(lld, 3, base, 0x1000, 0x10000, true, &bias),
			 -ENOENT);
	assert_int_equal(symtab__segments_bias(NULL, 0, base, 0x1000, 0, true, &bias), -EINVAL);
}

/* C++ and Rust names as ptbpf prints them; other names are not touched. */
static void test_demangle(void **state)
{
	static const struct {
		const char *mangled, *shown;
	} cases[] = {
		{ "_ZN6shapes4Area5totalEi", "shapes::Area::total(int)" },
		{ "_ZNK6shapes3BoxIdE4areaEv", "shapes::Box<double>::area() const" },
		{ "_ZN6shapes5scaleEd@plt", "shapes::scale(double)@plt" },
		/* Rust legacy (the hash is dropped) and v0 */
		{ "_ZN6corpus1m5total17hcb597566d351507bE", "corpus::m::total" },
		{ "_RNvNtCskqp9ekApGI1_6corpus1m5total", "corpus::m::total" },
	};
	size_t i;

	for (i = 0; i < ARRAY_SIZE(cases); i++) {
		char *dm = symtab__demangle(cases[i].mangled);

		assert_non_null(dm);
		assert_string_equal(dm, cases[i].shown);
		free(dm);
	}
	assert_null(symtab__demangle("main"));
	assert_null(symtab__demangle("_Znot_mangled"));
	assert_null(symtab__demangle(NULL));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_load_errors),
		cmocka_unit_test(test_stripped),
		cmocka_unit_test(test_null_args),
		cmocka_unit_test(test_find_name),
		cmocka_unit_test(test_find_addr),
		cmocka_unit_test(test_unsized_label),
		cmocka_unit_test(test_plt),
		cmocka_unit_test(test_find_range),
		cmocka_unit_test(test_sorted),
		cmocka_unit_test(test_suggest),
		cmocka_unit_test(test_offsets_and_facts),
		cmocka_unit_test(test_dynsym_only),
		cmocka_unit_test(test_read_without_symbols),
		cmocka_unit_test(test_image_build_id),
		cmocka_unit_test(test_segments_bias),
		cmocka_unit_test(test_demangle),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
