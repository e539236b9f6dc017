// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The S3 client's pure parts (user/s3/s3_util.c): canonical query strings as SigV4
 * wants them, AWS credentials files, backoff with jitter, retry classification, s3://
 * URLs, object keys of the upload layout, and the bandwidth limiter's rate.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include <curl/curl.h>

#include "s3.h"
#include "fleet_layout.h"
#include "upload.h"

static void test_canonical_query(void **state)
{
	struct s3_param q[] = {
		{ "prefix", "fleet/v1/slow handle/" },
		{ "list-type", "2" },
		{ "continuation-token", "1Ab+/=x~" },
		{ "uploads", NULL },
	};
	char buf[512];
	int n;

	n = s3_canonical_query(q, 4, buf, sizeof(buf));
	assert_int_equal(n, (int)strlen(buf));
	/* sorted by key; '/', ' ', '+', '=' encoded (uppercase hex); '~' kept; "key=" */
	assert_string_equal(buf, "continuation-token=1Ab%2B%2F%3Dx~&list-type=2&"
				 "prefix=fleet%2Fv1%2Fslow%20handle%2F&uploads=");
	assert_int_equal(s3_canonical_query(q, 4, buf, 20), -ENOSPC);
}

static void test_canonical_query_multipart(void **state)
{
	struct s3_param q[] = { { "uploadId", "2~abc.DEF_g-h" }, { "partNumber", "10" } };
	char buf[128];

	assert_true(s3_canonical_query(q, 2, buf, sizeof(buf)) > 0);
	assert_string_equal(buf, "partNumber=10&uploadId=2~abc.DEF_g-h");
}

static void test_uri_encode(void **state)
{
	char buf[128];

	assert_int_equal(s3_uri_encode("a/b c/ü.json", true, buf, sizeof(buf)), 19);
	assert_string_equal(buf, "a/b%20c/%C3%BC.json");
	s3_uri_encode("a/b", false, buf, sizeof(buf));
	assert_string_equal(buf, "a%2Fb");
	assert_int_equal(s3_uri_encode("abcdef", false, buf, 4), -ENOSPC);
}

static void test_ini(void **state)
{
	static const char ini[] =
		"# a comment\n"
		"[other]\n"
		"aws_access_key_id = OTHERAK\n"
		"aws_secret_access_key = OTHERSK\n"
		"\n"
		"[default]\n"
		"  aws_access_key_id=AKIDEXAMPLE  \n"
		"aws_secret_access_key = wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY\r\n"
		"region = eu-west-1\n"
		"[profile named]\n"
		"aws_access_key_id = NAK\n"
		"aws_secret_access_key = NSK\n";
	struct s3_credentials c;

	assert_int_equal(s3_credentials__parse_ini(ini, "default", &c), 0);
	assert_string_equal(c.access_key, "AKIDEXAMPLE");
	assert_string_equal(c.secret_key, "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY");
	assert_int_equal(s3_credentials__parse_ini(ini, "other", &c), 0);
	assert_string_equal(c.access_key, "OTHERAK");
	assert_int_equal(s3_credentials__parse_ini(ini, "named", &c), 0);
	assert_string_equal(c.secret_key, "NSK");
	assert_int_equal(s3_credentials__parse_ini(ini, "missing", &c), -ENOENT);
	/* a profile with only half the keys is no credentials */
	assert_int_equal(s3_credentials__parse_ini("[default]\naws_access_key_id = A\n",
						   "default", &c), -ENOENT);
}

static void test_credentials_env_and_file(void **state)
{
	char path[] = "/tmp/ptbpf-test-s3-ini-XXXXXX";
	struct s3_credentials c;
	FILE *f;
	int fd;

	fd = mkstemp(path);
	assert_true(fd >= 0);
	f = fdopen(fd, "w");
	fputs("[default]\naws_access_key_id = FILEAK\naws_secret_access_key = FILESK\n", f);
	fclose(f);
	setenv("AWS_ACCESS_KEY_ID", "ENVAK", 1);
	setenv("AWS_SECRET_ACCESS_KEY", "ENVSK", 1);
	unsetenv("AWS_PROFILE");
	/* the config's file wins over the environment */
	assert_int_equal(s3_credentials__load(path, &c), 0);
	assert_string_equal(c.access_key, "FILEAK");
	assert_non_null(strstr(c.source, path));
	assert_int_equal(s3_credentials__load(NULL, &c), 0);
	assert_string_equal(c.access_key, "ENVAK");
	/* then ~/.aws/credentials (here through AWS_SHARED_CREDENTIALS_FILE) */
	unsetenv("AWS_ACCESS_KEY_ID");
	setenv("AWS_SHARED_CREDENTIALS_FILE", path, 1);
	assert_int_equal(s3_credentials__load(NULL, &c), 0);
	assert_string_equal(c.secret_key, "FILESK");
	setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent/credentials", 1);
	assert_int_equal(s3_credentials__load(NULL, &c), -ENOKEY);
	/* the message says where to put them, and holds no key */
	assert_non_null(strstr(c.source, "AWS_ACCESS_KEY_ID"));
	assert_int_equal(s3_credentials__load("/nonexistent/s3.ini", &c), -ENOENT);
	unlink(path);
}

static void test_backoff(void **state)
{
	unsigned prev_max = 0;
	int attempt;

	for (attempt = 1; attempt <= 12; attempt++) {
		unsigned step = 200u << (attempt - 1), lo, hi;

		if (attempt > 6 || step > 5000)
			step = 5000;
		lo = s3_backoff_ms(attempt, 200, 5000, 0);
		hi = s3_backoff_ms(attempt, 200, 5000, UINT32_MAX - 1);
		/* equal jitter: between half the step and the step */
		assert_true(lo >= step / 2);
		assert_true(hi <= step);
		assert_true(hi >= prev_max / 2);
		prev_max = hi;
	}
	assert_true(s3_backoff_ms(1, 200, 5000, 12345) >= 100);
	assert_true(s3_backoff_ms(40, 200, 5000, 777) <= 5000);
	/* different random numbers spread the retries of uploaders that failed together */
	assert_int_not_equal(s3_backoff_ms(4, 200, 5000, 1), s3_backoff_ms(4, 200, 5000, 500));
}

static void test_retryable(void **state)
{
	assert_true(s3_retryable(CURLE_COULDNT_CONNECT, 0));
	assert_true(s3_retryable(CURLE_OPERATION_TIMEDOUT, 0));
	assert_true(s3_retryable(CURLE_GOT_NOTHING, 0));
	assert_true(s3_retryable(CURLE_OK, 500));
	assert_true(s3_retryable(CURLE_OK, 503));
	assert_true(s3_retryable(CURLE_OK, 429));
	assert_false(s3_retryable(CURLE_OK, 403));
	assert_false(s3_retryable(CURLE_OK, 404));
	assert_false(s3_retryable(CURLE_OK, 400));
	assert_false(s3_retryable(CURLE_URL_MALFORMAT, 0));
}

static void test_url_and_keys(void **state)
{
	char *bucket, *prefix, key[256];

	assert_int_equal(s3_url__parse("s3://captures/fleet/eu/", &bucket, &prefix), 0);
	assert_string_equal(bucket, "captures");
	assert_string_equal(prefix, "fleet/eu");
	free(bucket);
	free(prefix);
	assert_int_equal(s3_url__parse("s3://captures", &bucket, &prefix), 0);
	assert_string_equal(prefix, "");
	free(bucket);
	free(prefix);
	assert_int_equal(s3_url__parse("http://x/y", &bucket, &prefix), -EINVAL);
	assert_int_equal(s3_url__parse("s3:///y", &bucket, &prefix), -EINVAL);

	/* 2026-12-01T23:59:59Z: the day of the fire, in UTC */
	assert_int_equal(fleet_key("fleet", "slow", 1796169599, "web-1", "x.perf.data.zst", key,
				   sizeof(key)), 0);
	assert_string_equal(key, "fleet/v1/slow/2026/12/01/web-1/x.perf.data.zst");
	assert_int_equal(fleet_key("", "r", 0, "h", "n.json", key, sizeof(key)), 0);
	assert_string_equal(key, "v1/r/1970/01/01/h/n.json");
	assert_int_equal(fleet_key("p", "r", 0, "h", "n.json", key, 8), -ENAMETOOLONG);
	/* the listing prefixes `captures ls` uses: the same layout, cut before a part */
	assert_int_equal(fleet_key("fleet", NULL, FLEET_NO_DAY, NULL, NULL, key, sizeof(key)), 0);
	assert_string_equal(key, "fleet/v1/");
	assert_int_equal(fleet_key("fleet", "slow", FLEET_NO_DAY, "web-1", NULL, key,
				   sizeof(key)), 0);
	assert_string_equal(key, "fleet/v1/slow/");
	assert_int_equal(fleet_key("fleet", "slow", 1796169599, NULL, NULL, key, sizeof(key)), 0);
	assert_string_equal(key, "fleet/v1/slow/2026/12/01/");
	assert_int_equal(fleet_key("fleet", "slow", 1796169599, "web-1", NULL, key, sizeof(key)), 0);
	assert_string_equal(key, "fleet/v1/slow/2026/12/01/web-1/");
}

static void test_ratelimit(void **state)
{
	struct s3_ratelimit *rl;
	struct timespec t0, t1;
	double secs;
	int i;

	assert_int_equal(s3_ratelimit__new(4 << 20, &rl), 0);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (i = 0; i < 64; i++)
		s3_ratelimit__take(rl, 16384);	/* 1 MiB in curl-sized chunks */
	clock_gettime(CLOCK_MONOTONIC, &t1);
	secs = (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
	/* 1 MiB at 4 MiB/s: 0.25 s less the initial burst (1/20 s); never faster */
	assert_true(secs >= 0.25 - 0.05 - 0.01);
	s3_ratelimit__free(rl);
	/* 0 = unlimited */
	assert_int_equal(s3_ratelimit__new(0, &rl), 0);
	s3_ratelimit__take(rl, 1ULL << 40);
	s3_ratelimit__free(rl);
}

static void test_sha256(void **state)
{
	char hex[S3_SHA256_HEX_LEN + 1];

	s3_sha256_hex("", 0, hex);
	assert_string_equal(hex, S3_EMPTY_SHA256);
	s3_sha256_hex("abc", 3, hex);
	assert_string_equal(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_canonical_query),
		cmocka_unit_test(test_canonical_query_multipart),
		cmocka_unit_test(test_uri_encode),
		cmocka_unit_test(test_ini),
		cmocka_unit_test(test_credentials_env_and_file),
		cmocka_unit_test(test_backoff),
		cmocka_unit_test(test_retryable),
		cmocka_unit_test(test_url_and_keys),
		cmocka_unit_test(test_ratelimit),
		cmocka_unit_test(test_sha256),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
