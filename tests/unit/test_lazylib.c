// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Libraries loaded on first use (include/lazylib.h): a missing library or function is
 * one line naming the package, said once; every table ptbpf loads resolves on this host
 * (a wrong soname or function name fails here, not at a user's first `captures ls`).
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <zlib.h>
#include <cmocka.h>

#include "capstone_lazy.h"
#include "daemon_libs.h"
#include "lazylib.h"
#include "log.h"
#include "s3_libs.h"

static char said[4096];
static unsigned nr_said;

static void collect(void *ctx, int level, const char *msg)
{
	strncat(said, msg, sizeof(said) - strlen(said) - 1);
	nr_said++;
}

static void listen_log(void)
{
	said[0] = '\0';
	nr_said = 0;
	log_set_sink(collect, NULL);
}

static __typeof__(zlibVersion) *sym_zlibVersion;
static __typeof__(deflateEnd) *sym_deflateEnd;
static void *sym_no_such;

static void test_missing_library(void **state)
{
	static const struct lazylib_sym syms[] = { { "zlibVersion", (void **)&sym_zlibVersion },
						   {} };
	struct lazylib lib = { "libptbpf-no-such.so.7", "ptbpf-no-such-pkg", "the test", syms };

	listen_log();
	assert_int_equal(lazylib_load(&lib), -ENOENT);
	assert_null(sym_zlibVersion);
	assert_int_equal(nr_said, 1);
	assert_non_null(strstr(said, "the test needs libptbpf-no-such.so.7"));
	assert_non_null(strstr(said, "install ptbpf-no-such-pkg\n"));
	assert_int_equal(strchr(said, '\n') - said + 1, (long)strlen(said));	/* one line */
	/* said once: later calls fail the same, silently */
	assert_int_equal(lazylib_load(&lib), -ENOENT);
	assert_int_equal(nr_said, 1);
	log_set_sink(NULL, NULL);
}

static void test_missing_function(void **state)
{
	static const struct lazylib_sym syms[] = {
		{ "deflateEnd", (void **)&sym_deflateEnd },
		{ "ptbpf_no_such_function", &sym_no_such },
		{}
	};
	struct lazylib lib = { "libz.so.1", "zlib1g", "the test", syms };

	listen_log();
	assert_int_equal(lazylib_load(&lib), -ENOENT);
	/* no function of a half-loaded library is left to call */
	assert_null(sym_deflateEnd);
	assert_int_equal(nr_said, 1);
	assert_non_null(strstr(said, "has no ptbpf_no_such_function: install zlib1g\n"));
	log_set_sink(NULL, NULL);
}

static void *load_zlib(void *lib)
{
	return (void *)(intptr_t)lazylib_load(lib);
}

static void test_loaded_once(void **state)
{
	static const struct lazylib_sym syms[] = { { "zlibVersion", (void **)&sym_zlibVersion },
						   {} };
	struct lazylib lib = { "libz.so.1", "zlib1g", "the test", syms };
	pthread_t t[4];
	void *ret;
	int i;

	for (i = 0; i < 4; i++)
		assert_int_equal(pthread_create(&t[i], NULL, load_zlib, &lib), 0);
	for (i = 0; i < 4; i++) {
		assert_int_equal(pthread_join(t[i], &ret), 0);
		assert_int_equal((intptr_t)ret, 0);
	}
	assert_non_null(sym_zlibVersion);
	assert_string_equal(sym_zlibVersion(), zlibVersion());
	assert_int_equal(lazylib_load(&lib), 0);
}

/* Every library ptbpf loads on first use, with every function of its table. */
static void test_every_table_loads(void **state)
{
	struct lazylib *libs[] = { &lib_curl, &lib_crypto, &lib_cyaml, &lib_yaml, &lib_systemd,
				   &lib_microhttpd };
	unsigned i;

	listen_log();
	for (i = 0; i < sizeof(libs) / sizeof(libs[0]); i++) {
		if (lazylib_load(libs[i]))
			fail_msg("%s", said);
	}
	assert_non_null(capstone_lazy());
	assert_int_equal(nr_said, 0);
	log_set_sink(NULL, NULL);
	/* and they work: SHA-256 of "abc" through libcrypto */
	{
		unsigned char md[32];
		unsigned len = 0;

		assert_int_equal(sym_EVP_Digest("abc", 3, md, &len, sym_EVP_sha256(), NULL), 1);
		assert_int_equal(len, 32);
		assert_int_equal(md[0], 0xba);
		assert_int_equal(md[31], 0xad);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_missing_library),
		cmocka_unit_test(test_missing_function),
		cmocka_unit_test(test_loaded_once),
		cmocka_unit_test(test_every_table_loads),
	};

	return cmocka_run_group_tests_name("lazylib", tests, NULL, NULL);
}
