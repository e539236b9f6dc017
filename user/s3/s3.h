/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * A small S3 client on libcurl: requests signed with AWS Signature V4 by curl
 * (CURLOPT_AWS_SIGV4), the body's real SHA-256 in x-amz-content-sha256 (curl 7.88 does
 * not add it), query strings in canonical form (sorted keys, RFC 3986 encoding, `key=`
 * for an empty value: curl signs the query as given), retries with exponential backoff
 * and jitter on connection errors, 5xx and 429.
 *
 * Functions return 0 or a negative errno; the server's answer to the last request of a
 * client is in s3_client__last_error(). A client is used by one thread at a time; a
 * bandwidth limiter may be shared by several clients.
 */
#ifndef PTBPF_S3_H
#define PTBPF_S3_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define S3_SHA256_HEX_LEN 64
#define S3_MD5_LEN 16
#define S3_ETAG_MAX 80

/* The SHA-256 of nothing: the x-amz-content-sha256 of a request without a body. */
#define S3_EMPTY_SHA256 "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

struct s3_credentials {
	char access_key[128];
	char secret_key[128];
	char source[160];		/* where they came from, for messages (never the keys) */
};

struct s3_config {
	const char *endpoint;		/* "http://127.0.0.1:17480", "https://s3.amazonaws.com" */
	const char *region;		/* "us-east-1" when NULL */
	const char *bucket;
	bool path_style;		/* endpoint/bucket/key instead of bucket.endpoint/key */
	struct s3_credentials creds;
	int max_attempts;		/* per request, 0: 6 */
	unsigned backoff_base_ms;	/* first retry after ~this, doubling; 0: 200 */
	unsigned backoff_max_ms;	/* cap of one wait; 0: 10000 */
	struct s3_ratelimit *ratelimit;	/* shared bandwidth cap of request bodies, or NULL */
	const volatile bool *cancel;	/* when it turns true, transfers and retries stop
					 * (-ECANCELED): a daemon shutting down */
};

/* What the server said about the last request. */
struct s3_error {
	long http_status;		/* 0: no HTTP answer (curl_error says why) */
	char code[64];			/* S3 error code from the XML body: "SignatureDoesNotMatch" */
	char message[256];		/* its <Message>, or curl's error text */
	int curl_code;			/* CURLcode of the transfer */
	int attempts;			/* tries the request took */
};

struct s3_client;

int s3_client__new(const struct s3_config *cfg, struct s3_client **out);
void s3_client__free(struct s3_client *c);
const struct s3_error *s3_client__last_error(const struct s3_client *c);
/* One line saying what went wrong with the last request and how to fix it (no secret). */
const char *s3_client__explain(const struct s3_client *c, char *buf, size_t size);

/* PUT a whole object from bytes [off, off+len) of fd; etag receives the server's ETag
 * (quotes stripped). The body's SHA-256 is computed here (when expect_sha256 is given
 * and differs, nothing is sent: -EBADMSG); its MD5 is checked against the ETag when the
 * server returns an MD5 ETag. */
int s3__put_fd(struct s3_client *c, const char *key, int fd, uint64_t off, uint64_t len,
	       const char *expect_sha256, char etag[S3_ETAG_MAX]);
int s3__put_mem(struct s3_client *c, const char *key, const void *data, size_t len,
		const char *content_type);

/* Multipart upload. */
struct s3_part {
	int number;			/* 1-based */
	char etag[S3_ETAG_MAX];
	uint8_t md5[S3_MD5_LEN];
};
int s3__multipart_create(struct s3_client *c, const char *key, char **upload_id);
int s3__multipart_upload_part(struct s3_client *c, const char *key, const char *upload_id,
			      struct s3_part *part, int fd, uint64_t off, uint64_t len);
/* etag: the whole object's ETag as the server reports it afterwards (HEAD), may be NULL. */
int s3__multipart_complete(struct s3_client *c, const char *key, const char *upload_id,
			   const struct s3_part *parts, int nr_parts);
int s3__multipart_abort(struct s3_client *c, const char *key, const char *upload_id);
/* Abort every unfinished multipart upload of exactly `key` (left by a killed uploader)
 * but `keep` (NULL: all). */
int s3__multipart_abort_all(struct s3_client *c, const char *key, const char *keep);
/* ListParts: each part the store holds of an unfinished upload, in order (ETag without
 * quotes). -ENOENT (NoSuchUpload) when the store does not know the upload (any more).
 * The callback returns 0 to go on, non-zero to stop (then returned as is). */
typedef int (*s3_part_fn)(int number, const char *etag, uint64_t size, void *ctx);
int s3__multipart_list_parts(struct s3_client *c, const char *key, const char *upload_id,
			     s3_part_fn fn, void *ctx);

/* ListObjectsV2 under prefix; with delimiter, common prefixes are reported with
 * size == UINT64_MAX. Pages are followed with the continuation token. The callback
 * returns 0 to go on, non-zero to stop (then returned as is). */
typedef int (*s3_list_fn)(const char *key, uint64_t size, void *ctx);
int s3__list(struct s3_client *c, const char *prefix, const char *delimiter, s3_list_fn fn,
	     void *ctx);

/* GET each of `keys` with up to max_in_flight requests at once (libcurl multi, each
 * retried on its own as request() does); fn gets each body (err 0) or error in the order
 * they complete, c's last error describing a failed one. fn returns 0 to go on, non-zero
 * to stop (then returned as is). */
typedef int (*s3_got_fn)(const char *key, int err, const char *data, size_t len, void *ctx);
int s3__get_many(struct s3_client *c, const char *const *keys, size_t n, int max_in_flight,
		 s3_got_fn fn, void *ctx);

/* GET into a stream; HEAD for size and ETag. -ENOENT when there is no such object. */
int s3__get(struct s3_client *c, const char *key, FILE *out, uint64_t *bytes);
int s3__head(struct s3_client *c, const char *key, uint64_t *size, char etag[S3_ETAG_MAX]);
int s3__create_bucket(struct s3_client *c);

/* Credentials: the AWS ini file `path` ([default] or $AWS_PROFILE) if given, else
 * AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY, else ~/.aws/credentials. */
int s3_credentials__load(const char *path, struct s3_credentials *creds);
/* Parse the text of an AWS credentials ini file; -ENOENT if `profile` has no keys. */
int s3_credentials__parse_ini(const char *text, const char *profile,
			      struct s3_credentials *creds);

/* "s3://bucket/some/prefix" -> bucket, prefix (no leading or trailing '/'). */
int s3_url__parse(const char *url, char **bucket, char **prefix);

/* Canonical query string of `n` key/value pairs (values may be NULL = empty): sorted by
 * key, keys and values percent-encoded per RFC 3986 (only A-Za-z0-9-_.~ left as is),
 * "key=" for an empty value, joined with '&'. Returns the length or -ENOSPC. */
struct s3_param {
	const char *key, *value;
};
int s3_canonical_query(struct s3_param *params, size_t n, char *buf, size_t size);
/* Percent-encode per RFC 3986; keep_slash leaves '/' (object key paths). */
int s3_uri_encode(const char *in, bool keep_slash, char *buf, size_t size);

/* The wait before retry `attempt` (1 for the first retry): exponential from base_ms,
 * capped at max_ms, with "equal jitter" (half fixed, half random from `rnd`). */
unsigned s3_backoff_ms(int attempt, unsigned base_ms, unsigned max_ms, uint32_t rnd);
/* Whether a request that ended with this curl code / HTTP status is worth retrying. */
bool s3_retryable(int curl_code, long http_status);

/* A token bucket shared by transfers: bytes per second, 0 = unlimited. */
struct s3_ratelimit;
int s3_ratelimit__new(uint64_t bytes_per_second, struct s3_ratelimit **out);
void s3_ratelimit__free(struct s3_ratelimit *rl);
/* Block until `bytes` may go out. */
void s3_ratelimit__take(struct s3_ratelimit *rl, uint64_t bytes);

/* SHA-256 and MD5 of bytes [off, off+len) of fd in one pass. */
int s3_digest_fd(int fd, uint64_t off, uint64_t len, char sha256_hex[S3_SHA256_HEX_LEN + 1],
		 uint8_t md5[S3_MD5_LEN]);
int s3_sha256_hex(const void *data, size_t len, char hex[S3_SHA256_HEX_LEN + 1]);

#endif /* PTBPF_S3_H */
