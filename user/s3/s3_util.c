// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The pure parts of the S3 client, unit-tested on their own: canonical query strings,
 * percent-encoding, AWS credentials files, backoff, retry classification, s3:// URLs,
 * digests and the bandwidth limiter.
 */
#include <ctype.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>

#include "s3.h"
#include "s3_libs.h"

static bool unreserved(unsigned char ch)
{
	return isalnum(ch) || ch == '-' || ch == '_' || ch == '.' || ch == '~';
}

int s3_uri_encode(const char *in, bool keep_slash, char *buf, size_t size)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t n = 0;

	for (; *in; in++) {
		unsigned char ch = (unsigned char)*in;

		if (unreserved(ch) || (keep_slash && ch == '/')) {
			if (n + 1 >= size)
				return -ENOSPC;
			buf[n++] = (char)ch;
		} else {
			if (n + 3 >= size)
				return -ENOSPC;
			buf[n++] = '%';
			buf[n++] = hex[ch >> 4];
			buf[n++] = hex[ch & 15];
		}
	}
	if (n >= size)
		return -ENOSPC;
	buf[n] = '\0';
	return (int)n;
}

static int param_cmp(const void *a, const void *b)
{
	const struct s3_param *pa = a, *pb = b;

	/* SigV4 sorts by the encoded key; for the keys S3 uses (ASCII letters, '-') that is
	 * the same order as the raw key's bytes. */
	return strcmp(pa->key, pb->key);
}

int s3_canonical_query(struct s3_param *params, size_t n, char *buf, size_t size)
{
	size_t i, len = 0;
	int w;

	if (!size)
		return -ENOSPC;
	buf[0] = '\0';
	qsort(params, n, sizeof(*params), param_cmp);
	for (i = 0; i < n; i++) {
		if (i) {
			if (len + 1 >= size)
				return -ENOSPC;
			buf[len++] = '&';
		}
		w = s3_uri_encode(params[i].key, false, buf + len, size - len);
		if (w < 0)
			return w;
		len += w;
		if (len + 1 >= size)
			return -ENOSPC;
		buf[len++] = '=';
		buf[len] = '\0';
		w = s3_uri_encode(params[i].value ? params[i].value : "", false, buf + len,
				  size - len);
		if (w < 0)
			return w;
		len += w;
	}
	return (int)len;
}

static char *trim(char *s)
{
	char *end;

	while (isspace((unsigned char)*s))
		s++;
	end = s + strlen(s);
	while (end > s && isspace((unsigned char)end[-1]))
		*--end = '\0';
	return s;
}

int s3_credentials__parse_ini(const char *text, const char *profile,
			      struct s3_credentials *creds)
{
	char *copy, *line, *save = NULL, *eq, *key, *val;
	bool in_profile = false;
	int err = -ENOENT;

	copy = strdup(text);
	if (!copy)
		return -ENOMEM;
	creds->access_key[0] = creds->secret_key[0] = '\0';
	for (line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		line = trim(line);
		if (!*line || *line == '#' || *line == ';')
			continue;
		if (*line == '[') {
			char *end = strchr(line, ']');

			if (!end)
				continue;
			*end = '\0';
			key = trim(line + 1);
			/* ~/.aws/config spells other profiles "[profile NAME]" */
			if (!strncmp(key, "profile ", 8))
				key = trim(key + 8);
			in_profile = !strcmp(key, profile);
			continue;
		}
		if (!in_profile || !(eq = strchr(line, '=')))
			continue;
		*eq = '\0';
		key = trim(line);
		val = trim(eq + 1);
		if (!strcmp(key, "aws_access_key_id"))
			snprintf(creds->access_key, sizeof(creds->access_key), "%s", val);
		else if (!strcmp(key, "aws_secret_access_key"))
			snprintf(creds->secret_key, sizeof(creds->secret_key), "%s", val);
	}
	if (creds->access_key[0] && creds->secret_key[0])
		err = 0;
	free(copy);
	return err;
}

static int load_ini_file(const char *path, const char *profile, struct s3_credentials *creds)
{
	char text[16384];
	size_t n;
	FILE *f;
	int err;

	f = fopen(path, "re");
	if (!f)
		return -errno;
	n = fread(text, 1, sizeof(text) - 1, f);
	err = ferror(f) ? -EIO : 0;
	fclose(f);
	if (err)
		return err;
	text[n] = '\0';
	err = s3_credentials__parse_ini(text, profile, creds);
	if (!err)
		snprintf(creds->source, sizeof(creds->source), "%s [%s]", path, profile);
	return err;
}

int s3_credentials__load(const char *path, struct s3_credentials *creds)
{
	const char *profile = getenv("AWS_PROFILE");
	const char *ak = getenv("AWS_ACCESS_KEY_ID"), *sk = getenv("AWS_SECRET_ACCESS_KEY");
	const char *home = getenv("HOME"), *file = getenv("AWS_SHARED_CREDENTIALS_FILE");
	char buf[4096];
	int err;

	memset(creds, 0, sizeof(*creds));
	if (!profile || !*profile)
		profile = "default";
	if (path) {
		err = load_ini_file(path, profile, creds);
		if (err == -ENOENT && !access(path, R_OK))
			snprintf(creds->source, sizeof(creds->source),
				 "%s has no aws_access_key_id and aws_secret_access_key in [%s]",
				 path, profile);
		else if (err)
			snprintf(creds->source, sizeof(creds->source), "cannot read %s: %s", path,
				 strerror(-err));
		return err;
	}
	if (ak && *ak && sk && *sk) {
		snprintf(creds->access_key, sizeof(creds->access_key), "%s", ak);
		snprintf(creds->secret_key, sizeof(creds->secret_key), "%s", sk);
		snprintf(creds->source, sizeof(creds->source),
			 "AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY");
		return 0;
	}
	if (file && *file)
		snprintf(buf, sizeof(buf), "%s", file);
	else if (home)
		snprintf(buf, sizeof(buf), "%s/.aws/credentials", home);
	else
		buf[0] = '\0';
	err = buf[0] ? load_ini_file(buf, profile, creds) : -ENOENT;
	if (err)
		snprintf(creds->source, sizeof(creds->source),
			 "no credentials: set credentials_file, AWS_ACCESS_KEY_ID and "
			 "AWS_SECRET_ACCESS_KEY, or write ~/.aws/credentials [%s]", profile);
	return err ? -ENOKEY : 0;
}

int s3_url__parse(const char *url, char **bucket, char **prefix)
{
	const char *p, *slash;
	size_t len;

	*bucket = *prefix = NULL;
	if (strncmp(url, "s3://", 5))
		return -EINVAL;
	p = url + 5;
	slash = strchr(p, '/');
	len = slash ? (size_t)(slash - p) : strlen(p);
	if (!len)
		return -EINVAL;
	*bucket = strndup(p, len);
	p = slash ? slash + 1 : p + len;
	while (*p == '/')
		p++;
	*prefix = strdup(p);
	if (!*bucket || !*prefix) {
		free(*bucket);
		free(*prefix);
		*bucket = *prefix = NULL;
		return -ENOMEM;
	}
	len = strlen(*prefix);
	while (len && (*prefix)[len - 1] == '/')
		(*prefix)[--len] = '\0';
	return 0;
}

unsigned s3_backoff_ms(int attempt, unsigned base_ms, unsigned max_ms, uint32_t rnd)
{
	uint64_t d = base_ms;
	int i;

	if (attempt < 1)
		attempt = 1;
	for (i = 1; i < attempt && d < max_ms; i++)
		d *= 2;
	if (d > max_ms)
		d = max_ms;
	/* equal jitter: never less than half the exponential step, so waits still grow,
	 * and uploaders that failed together do not retry together */
	return (unsigned)(d / 2 + (d - d / 2 ? rnd % (d - d / 2 + 1) : 0));
}

bool s3_retryable(int curl_code, long http_status)
{
	switch (curl_code) {
	case CURLE_OK:
		return http_status >= 500 || http_status == 429 || http_status == 408;
	case CURLE_URL_MALFORMAT:
	case CURLE_UNSUPPORTED_PROTOCOL:
	case CURLE_NOT_BUILT_IN:
	case CURLE_OUT_OF_MEMORY:
	case CURLE_ABORTED_BY_CALLBACK:
	case CURLE_WRITE_ERROR:
	case CURLE_READ_ERROR:
	case CURLE_FUNCTION_NOT_FOUND:
	case CURLE_BAD_FUNCTION_ARGUMENT:
		return false;
	default:
		/* resolving, connecting, sending, receiving, timeouts, TLS handshakes */
		return true;
	}
}

struct s3_ratelimit {
	pthread_mutex_t lock;
	uint64_t rate;			/* bytes per second */
	double tokens;			/* may go negative: a debt later takes wait out */
	struct timespec last;
};

int s3_ratelimit__new(uint64_t bytes_per_second, struct s3_ratelimit **out)
{
	struct s3_ratelimit *rl;

	*out = NULL;
	rl = calloc(1, sizeof(*rl));
	if (!rl)
		return -ENOMEM;
	pthread_mutex_init(&rl->lock, NULL);
	rl->rate = bytes_per_second;
	clock_gettime(CLOCK_MONOTONIC, &rl->last);
	*out = rl;
	return 0;
}

void s3_ratelimit__free(struct s3_ratelimit *rl)
{
	if (!rl)
		return;
	pthread_mutex_destroy(&rl->lock);
	free(rl);
}

void s3_ratelimit__take(struct s3_ratelimit *rl, uint64_t bytes)
{
	struct timespec now;
	double wait_s, burst;

	if (!rl || !rl->rate)
		return;
	pthread_mutex_lock(&rl->lock);
	clock_gettime(CLOCK_MONOTONIC, &now);
	rl->tokens += ((now.tv_sec - rl->last.tv_sec) +
		       (now.tv_nsec - rl->last.tv_nsec) / 1e9) * (double)rl->rate;
	rl->last = now;
	/* a burst of at most 1/20 s keeps every one-second window within a few % of the
	 * rate, while chunks of curl's upload buffer still go out whole */
	burst = rl->rate / 20.0;
	if (burst < 16384)
		burst = 16384;
	if (rl->tokens > burst)
		rl->tokens = burst;
	rl->tokens -= (double)bytes;
	wait_s = rl->tokens < 0 ? -rl->tokens / (double)rl->rate : 0;
	pthread_mutex_unlock(&rl->lock);
	if (wait_s > 0) {
		struct timespec ts = { .tv_sec = (time_t)wait_s,
				       .tv_nsec = (long)((wait_s - (time_t)wait_s) * 1e9) };

		while (nanosleep(&ts, &ts) && errno == EINTR)
			;
	}
}

static void to_hex(const uint8_t *in, size_t n, char *out)
{
	static const char hex[] = "0123456789abcdef";
	size_t i;

	for (i = 0; i < n; i++) {
		out[2 * i] = hex[in[i] >> 4];
		out[2 * i + 1] = hex[in[i] & 15];
	}
	out[2 * n] = '\0';
}

int s3_sha256_hex(const void *data, size_t len, char hex[S3_SHA256_HEX_LEN + 1])
{
	uint8_t md[32];
	unsigned mdlen = 0;
	int err = lazylib_load(&lib_crypto);

	if (err)
		return err;
	sym_EVP_Digest(data, len, md, &mdlen, sym_EVP_sha256(), NULL);
	to_hex(md, 32, hex);
	return 0;
}

int s3_digest_fd(int fd, uint64_t off, uint64_t len, char sha256_hex[S3_SHA256_HEX_LEN + 1],
		 uint8_t md5[S3_MD5_LEN])
{
	EVP_MD_CTX *sha = NULL, *m5 = NULL;
	size_t bufsize = 1 << 20;
	uint8_t *buf = NULL, md[32];
	unsigned mdlen;
	int err = lazylib_load(&lib_crypto);

	if (err)
		return err;
	sha = sym_EVP_MD_CTX_new();
	m5 = sym_EVP_MD_CTX_new();
	buf = malloc(bufsize);
	if (!sha || !m5 || !buf) {
		err = -ENOMEM;
		goto out;
	}
	if (!sym_EVP_DigestInit_ex(sha, sym_EVP_sha256(), NULL) ||
	    !sym_EVP_DigestInit_ex(m5, sym_EVP_md5(), NULL)) {
		err = -EIO;
		goto out;
	}
	while (len) {
		ssize_t n = pread(fd, buf, len < bufsize ? len : bufsize, (off_t)off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			err = -errno;
			goto out;
		}
		if (!n) {
			err = -ENODATA;	/* the file shrank under us */
			goto out;
		}
		sym_EVP_DigestUpdate(sha, buf, n);
		sym_EVP_DigestUpdate(m5, buf, n);
		off += n;
		len -= n;
	}
	sym_EVP_DigestFinal_ex(sha, md, &mdlen);
	to_hex(md, 32, sha256_hex);
	sym_EVP_DigestFinal_ex(m5, md, &mdlen);
	if (md5)
		memcpy(md5, md, S3_MD5_LEN);
out:
	free(buf);
	sym_EVP_MD_CTX_free(sha);
	sym_EVP_MD_CTX_free(m5);
	return err;
}
