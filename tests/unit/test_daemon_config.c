// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The daemon's configuration (user/daemon/config.c), loaded from files written here:
 * a rule's `decoder:` (how its `decode: host` captures are decoded, as ptbpf decode's
 * --no-fast / --verify-fast) is read, defaults to the fast path, and is refused with a
 * value it does not know or without `decode: host`. The files must pass the daemon's
 * ownership check (root's, as sshd's StrictModes): not run as root, the test skips.
 */
#include <errno.h>
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

#include "config.h"

static char dir[] = "/tmp/ptbpf-test-config-XXXXXX";
static char path[sizeof(dir) + 32];

/* Load a configuration whose one rule ends with `rule_tail` (YAML lines, indented 4). */
static int load_rule(const char *rule_tail, struct config **out)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	fprintf(f, "spool: {dir: %s/spool}\n"
		   "rules:\n"
		   "  - name: r\n"
		   "    trigger: {runq_latency_over: 50ms}\n"
		   "%s", dir, rule_tail);
	assert_int_equal(fclose(f), 0);
	assert_int_equal(chmod(path, 0644), 0);
	*out = NULL;
	return config_load(path, NULL, out);
}

static void decoder_of(const char *tail, enum rule_decoder want)
{
	struct config *c;

	assert_int_equal(load_rule(tail, &c), 0);
	assert_int_equal(c->nr_rules, 1);
	assert_int_equal(c->rules[0].decoder, want);
	config_free(c);
}

static void refused(const char *tail)
{
	struct config *c;

	assert_int_equal(load_rule(tail, &c), -EINVAL);
	config_free(c);
}

static void test_decoder_values(void **state)
{
	(void)state;
	decoder_of("    decode: host\n", RULE_DECODER_FAST);
	decoder_of("    decode: host\n    decoder: fast\n", RULE_DECODER_FAST);
	decoder_of("    decode: host\n    decoder: no-fast\n", RULE_DECODER_NO_FAST);
	decoder_of("    decode: host\n    decoder: verify-fast\n", RULE_DECODER_VERIFY_FAST);
	decoder_of("", RULE_DECODER_FAST);
	assert_string_equal(rule_decoder_name(RULE_DECODER_NO_FAST), "no-fast");
	assert_string_equal(rule_decoder_name(RULE_DECODER_VERIFY_FAST), "verify-fast");
	assert_string_equal(rule_decoder_name(RULE_DECODER_FAST), "fast");
}

static void test_decoder_refused(void **state)
{
	(void)state;
	refused("    decode: host\n    decoder: turbo\n");
	refused("    decoder: no-fast\n");
	refused("    decode: none\n    decoder: verify-fast\n");
}

/* A changed decoder is a changed rule (a reload takes it). */
static void test_decoder_fingerprint(void **state)
{
	struct config *a, *b;

	(void)state;
	assert_int_equal(load_rule("    decode: host\n", &a), 0);
	assert_int_equal(load_rule("    decode: host\n    decoder: no-fast\n", &b), 0);
	assert_string_not_equal(a->rules[0].fingerprint, b->rules[0].fingerprint);
	config_free(a);
	config_free(b);
}

static int setup(void **state)
{
	(void)state;
	if (geteuid() != 0)
		return 0;
	if (!mkdtemp(dir))
		return -1;
	snprintf(path, sizeof(path), "%s/ptbpf.yaml", dir);
	return 0;
}

static int teardown(void **state)
{
	char sp[sizeof(dir) + 16];

	(void)state;
	if (geteuid() != 0)
		return 0;
	snprintf(sp, sizeof(sp), "%s/spool", dir);
	unlink(path);
	rmdir(sp);
	rmdir(dir);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_decoder_values),
		cmocka_unit_test(test_decoder_refused),
		cmocka_unit_test(test_decoder_fingerprint),
	};

	if (geteuid() != 0) {
		printf("SKIP: the configuration's ownership check wants root's files\n");
		return 77;
	}
	return cmocka_run_group_tests(tests, setup, teardown);
}
