// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <elf.h>
#include <errno.h>
#include <sys/auxv.h>
#include <unistd.h>
#include <cmocka.h>

#include "symtab.h"
#include "vdso.h"

static void test_read_matches_auxv(void **state)
{
	uint8_t *bytes = NULL;
	size_t size = 0;

	if (!getauxval(AT_SYSINFO_EHDR))
		skip();
	assert_int_equal(vdso_read(&bytes, &size), 0);
	assert_true(size >= 4096 && size % 4096 == 0);
	assert_memory_equal(bytes, ELFMAG, SELFMAG);
	assert_int_equal(bytes[EI_CLASS], ELFCLASS64);
	assert_memory_equal(bytes, (void *)getauxval(AT_SYSINFO_EHDR), size);
	free(bytes);
}

static void test_find_self_and_child(void **state)
{
	uint64_t s0, e0, s1, e1;

	if (!getauxval(AT_SYSINFO_EHDR))
		skip();
	assert_int_equal(vdso_find(0, &s0, &e0), 0);
	assert_int_equal(s0, getauxval(AT_SYSINFO_EHDR));
	assert_true(e0 > s0);
	assert_int_equal(vdso_find(getpid(), &s1, &e1), 0);
	assert_int_equal(s1, s0);
	assert_int_equal(e1, e0);
}

static void test_find_no_such_process(void **state)
{
	uint64_t s, e;

	/* PID_MAX_LIMIT is 4194304: one above cannot exist. */
	assert_int_equal(vdso_find(4194305, &s, &e), -ESRCH);
}

/* The copy has the build id the decoder's ELF reader finds (perf.data's [vdso] entry). */
static void test_build_id(void **state)
{
	uint8_t *bytes = NULL, id[20], zero[20] = { 0 }, n = 0;
	size_t size = 0;

	if (!getauxval(AT_SYSINFO_EHDR))
		skip();
	assert_int_equal(vdso_read(&bytes, &size), 0);
	assert_int_equal(symtab__image_build_id(bytes, size, id, &n), 0);
	/* Debian kernels build the vDSO with --build-id (sha1, 20 bytes). */
	assert_int_equal(n, 20);
	assert_memory_not_equal(id, zero, sizeof(id));
	free(bytes);
}

static void test_build_id_invalid(void **state)
{
	uint8_t junk[256] = { 0 }, id[20], n;

	assert_int_equal(symtab__image_build_id(NULL, 0, id, &n), -EINVAL);
	assert_int_equal(symtab__image_build_id(junk, sizeof(junk), id, &n), -EINVAL);
	memcpy(junk, ELFMAG, SELFMAG);
	junk[EI_CLASS] = ELFCLASS32;
	assert_int_equal(symtab__image_build_id(junk, sizeof(junk), id, &n), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_read_matches_auxv),
		cmocka_unit_test(test_find_self_and_child),
		cmocka_unit_test(test_find_no_such_process),
		cmocka_unit_test(test_build_id),
		cmocka_unit_test(test_build_id_invalid),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
