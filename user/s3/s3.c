// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * S3 requests over libcurl. curl signs (CURLOPT_AWS_SIGV4, service "s3"); this file
 * supplies what curl 7.88 leaves to the caller: x-amz-content-sha256 with the body's
 * real hash, and the query in canonical form. Bodies are streamed from a file
 * descriptor through a read callback, which is also where the bandwidth cap applies.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "array.h"
#include "log.h"
#include "s3.h"
#include "s3_libs.h"

#define MAX_URL 4096

struct s3_client {
	CURL *curl;
	char *endpoint, *region, *bucket;
	bool path_style;
	struct s3_credentials creds;
	char sigv4[128];		/* "aws:amz:REGION:s3" */
	int max_attempts;
	unsigned backoff_base_ms, backoff_max_ms;
	struct s3_ratelimit *ratelimit;
	const volatile bool *cancel;
	struct s3_error err;
	unsigned rnd_state;
};

/* A request body: bytes of a file or of memory. */
struct body {
	int fd;				/* -1: mem */
	const uint8_t *mem;
	uint64_t off, len, pos;
	struct s3_ratelimit *rl;
};

/* A response: a growing buffer (XML answers) or a stream (GET). */
struct response {
	char *data;
	size_t len, cap;
	FILE *sink;
	uint64_t sink_bytes;
	char etag[S3_ETAG_MAX];
	uint64_t content_length;
	bool have_length;
};

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;

static void curl_init_once(void)
{
	sym_curl_global_init(CURL_GLOBAL_DEFAULT);
}

int s3_client__new(const struct s3_config *cfg, struct s3_client **out)
{
	struct s3_client *c;
	size_t len;

	*out = NULL;
	if (!cfg->endpoint || !cfg->bucket)
		return -EINVAL;
	if (lazylib_load(&lib_curl) || lazylib_load(&lib_crypto))
		return -ENOENT;
	pthread_once(&curl_once, curl_init_once);
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->endpoint = strdup(cfg->endpoint);
	c->region = strdup(cfg->region ? cfg->region : "us-east-1");
	c->bucket = strdup(cfg->bucket);
	c->curl = sym_curl_easy_init();
	if (!c->endpoint || !c->region || !c->bucket || !c->curl) {
		s3_client__free(c);
		return -ENOMEM;
	}
	len = strlen(c->endpoint);
	while (len && c->endpoint[len - 1] == '/')
		c->endpoint[--len] = '\0';
	c->path_style = cfg->path_style;
	c->creds = cfg->creds;
	snprintf(c->sigv4, sizeof(c->sigv4), "aws:amz:%s:s3", c->region);
	c->max_attempts = cfg->max_attempts > 0 ? cfg->max_attempts : 6;
	c->backoff_base_ms = cfg->backoff_base_ms ? cfg->backoff_base_ms : 200;
	c->backoff_max_ms = cfg->backoff_max_ms ? cfg->backoff_max_ms : 10000;
	c->ratelimit = cfg->ratelimit;
	c->cancel = cfg->cancel;
	c->rnd_state = (unsigned)time(NULL) ^ (unsigned)(uintptr_t)c ^ (unsigned)getpid();
	*out = c;
	return 0;
}

void s3_client__free(struct s3_client *c)
{
	if (!c)
		return;
	if (c->curl)
		sym_curl_easy_cleanup(c->curl);
	free(c->endpoint);
	free(c->region);
	free(c->bucket);
	/* keys do not outlive the client in freed memory */
	explicit_bzero(&c->creds, sizeof(c->creds));
	free(c);
}

const struct s3_error *s3_client__last_error(const struct s3_client *c)
{
	return &c->err;
}

const char *s3_client__explain(const struct s3_client *c, char *buf, size_t size)
{
	const struct s3_error *e = &c->err;

	if (!e->http_status)
		snprintf(buf, size, "cannot reach %s: %s (is the endpoint right and the "
			 "server up?)", c->endpoint, e->message[0] ? e->message : "no answer");
	else if (!strcmp(e->code, "SignatureDoesNotMatch"))
		snprintf(buf, size, "%s refuses the signature (SignatureDoesNotMatch): the "
			 "secret key does not belong to access key %s; fix the credentials (%s)",
			 c->endpoint, c->creds.access_key, c->creds.source);
	else if (!strcmp(e->code, "InvalidAccessKeyId"))
		snprintf(buf, size, "%s does not know access key %s (InvalidAccessKeyId); fix "
			 "the credentials (%s)", c->endpoint, c->creds.access_key, c->creds.source);
	else if (e->http_status == 403)
		snprintf(buf, size, "%s denies access to bucket %s (HTTP 403 %s): grant the key "
			 "%s access or fix the credentials (%s)", c->endpoint, c->bucket,
			 e->code[0] ? e->code : "", c->creds.access_key, c->creds.source);
	else if (!strcmp(e->code, "NoSuchBucket"))
		snprintf(buf, size, "bucket %s does not exist on %s (NoSuchBucket): create it "
			 "or fix the bucket name", c->bucket, c->endpoint);
	else if (e->http_status == 404)
		snprintf(buf, size, "no such object in bucket %s on %s (HTTP 404%s%s)", c->bucket,
			 c->endpoint, e->code[0] ? " " : "", e->code);
	else
		snprintf(buf, size, "%s answered HTTP %ld%s%s%s%s after %d attempt(s)",
			 c->endpoint, e->http_status, e->code[0] ? " " : "", e->code,
			 e->message[0] ? ": " : "", e->message, e->attempts);
	return buf;
}

static size_t read_body(char *buf, size_t size, size_t nmemb, void *ctx)
{
	struct body *b = ctx;
	size_t want = size * nmemb;
	uint64_t left = b->len - b->pos;
	ssize_t n;

	if (want > left)
		want = left;
	if (!want)
		return 0;
	s3_ratelimit__take(b->rl, want);
	if (b->fd < 0) {
		memcpy(buf, b->mem + b->pos, want);
		n = (ssize_t)want;
	} else {
		do
			n = pread(b->fd, buf, want, (off_t)(b->off + b->pos));
		while (n < 0 && errno == EINTR);
		if (n <= 0)
			return CURL_READFUNC_ABORT;
	}
	b->pos += n;
	return (size_t)n;
}

static int seek_body(void *ctx, curl_off_t offset, int origin)
{
	struct body *b = ctx;

	if (origin != SEEK_SET || offset < 0 || (uint64_t)offset > b->len)
		return CURL_SEEKFUNC_CANTSEEK;
	b->pos = (uint64_t)offset;
	return CURL_SEEKFUNC_OK;
}

static int xfer_progress(void *ctx, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
			 curl_off_t ulnow)
{
	const struct s3_client *c = ctx;

	return c->cancel && *c->cancel;
}

static size_t write_response(char *data, size_t size, size_t nmemb, void *ctx)
{
	struct response *r = ctx;
	size_t n = size * nmemb;

	if (r->sink) {
		if (fwrite(data, 1, n, r->sink) != n)
			return 0;
		r->sink_bytes += n;
		return n;
	}
	if (r->len + n + 1 > r->cap) {
		size_t cap = r->cap ? r->cap * 2 : 4096;
		char *p;

		while (cap < r->len + n + 1)
			cap *= 2;
		p = realloc(r->data, cap);
		if (!p)
			return 0;
		r->data = p;
		r->cap = cap;
	}
	memcpy(r->data + r->len, data, n);
	r->len += n;
	r->data[r->len] = '\0';
	return n;
}

static size_t header_response(char *data, size_t size, size_t nmemb, void *ctx)
{
	struct response *r = ctx;
	size_t n = size * nmemb, i, j = 0;

	if (n > 5 && !strncasecmp(data, "ETag:", 5)) {
		for (i = 5; i < n && j + 1 < sizeof(r->etag); i++) {
			if (data[i] == '"' || data[i] == ' ' || data[i] == '\r' || data[i] == '\n')
				continue;
			r->etag[j++] = data[i];
		}
		r->etag[j] = '\0';
	} else if (n > 15 && !strncasecmp(data, "Content-Length:", 15)) {
		r->content_length = strtoull(data + 15, NULL, 10);
		r->have_length = true;
	}
	return n;
}

/* The text of <tag>...</tag> in xml from *pos on (entities decoded); NULL if absent. */
static char *xml_next(const char *xml, const char *tag, const char **pos)
{
	char open[80], close[80], *out, *o;
	const char *p, *end, *start = pos && *pos ? *pos : xml;

	snprintf(open, sizeof(open), "<%s>", tag);
	snprintf(close, sizeof(close), "</%s>", tag);
	p = strstr(start, open);
	if (!p)
		return NULL;
	p += strlen(open);
	end = strstr(p, close);
	if (!end)
		return NULL;
	if (pos)
		*pos = end + strlen(close);
	out = o = malloc(end - p + 1);
	if (!out)
		return NULL;
	while (p < end) {
		static const struct { const char *ent; char ch; } ents[] = {
			{ "&amp;", '&' }, { "&lt;", '<' }, { "&gt;", '>' },
			{ "&quot;", '"' }, { "&apos;", '\'' },
		};
		size_t i;

		if (*p == '&') {
			for (i = 0; i < ARRAY_SIZE(ents); i++) {
				size_t l = strlen(ents[i].ent);

				if (p + l <= end && !strncmp(p, ents[i].ent, l)) {
					*o++ = ents[i].ch;
					p += l;
					goto next;
				}
			}
		}
		*o++ = *p++;
next:;
	}
	*o = '\0';
	return out;
}

static void xml_copy(const char *xml, const char *tag, char *buf, size_t size)
{
	char *v = xml ? xml_next(xml, tag, NULL) : NULL;

	snprintf(buf, size, "%s", v ? v : "");
	free(v);
}

static int build_url(struct s3_client *c, const char *key, struct s3_param *query,
		     size_t nr_query, char *url, size_t size)
{
	char path[2048], qs[2048] = "";
	const char *scheme_end = strstr(c->endpoint, "://");
	int n;

	if (s3_uri_encode(key ? key : "", true, path, sizeof(path)) < 0)
		return -ENAMETOOLONG;
	if (nr_query && s3_canonical_query(query, nr_query, qs, sizeof(qs)) < 0)
		return -ENAMETOOLONG;
	if (c->path_style || !scheme_end)
		n = snprintf(url, size, "%s/%s/%s%s%s", c->endpoint, c->bucket, path,
			     qs[0] ? "?" : "", qs);
	else
		n = snprintf(url, size, "%.*s%s.%s/%s%s%s", (int)(scheme_end + 3 - c->endpoint),
			     c->endpoint, c->bucket, scheme_end + 3, path, qs[0] ? "?" : "", qs);
	return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : 0;
}

static int status_errno(long status, const char *code)
{
	if (status == 403)
		return -EACCES;
	if (status == 404)
		return -ENOENT;
	if (status == 409)
		return -EEXIST;
	if (status == 429 || status >= 500)
		return -EAGAIN;
	if (!strcmp(code, "XAmzContentSHA256Mismatch") || !strcmp(code, "BadDigest"))
		return -EBADMSG;
	return -EPROTO;
}

static int curl_errno(CURLcode rc)
{
	switch (rc) {
	case CURLE_COULDNT_CONNECT:
		return -ECONNREFUSED;
	case CURLE_COULDNT_RESOLVE_HOST:
	case CURLE_COULDNT_RESOLVE_PROXY:
		return -EHOSTUNREACH;
	case CURLE_OPERATION_TIMEDOUT:
		return -ETIMEDOUT;
	case CURLE_OUT_OF_MEMORY:
		return -ENOMEM;
	case CURLE_WRITE_ERROR:
		return -EIO;
	default:
		return -ECOMM;
	}
}

/* Every option of one attempt of a request on handle h (reset first: the connection
 * cache stays, so later requests reuse the connection). */
static void setup_handle(struct s3_client *c, CURL *h, const char *method, const char *url,
			 struct curl_slist *hdrs, struct body *body, struct response *resp)
{
	sym_curl_easy_reset(h);
	sym_curl_easy_setopt(h, CURLOPT_URL, url);
	sym_curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	sym_curl_easy_setopt(h, CURLOPT_AWS_SIGV4, c->sigv4);
	sym_curl_easy_setopt(h, CURLOPT_USERNAME, c->creds.access_key);
	sym_curl_easy_setopt(h, CURLOPT_PASSWORD, c->creds.secret_key);
	sym_curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
	sym_curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT, 10L);
	/* a stalled transfer (server gone mid-body) is an error after 30 s */
	sym_curl_easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, 1L);
	sym_curl_easy_setopt(h, CURLOPT_LOW_SPEED_TIME, 30L);
	sym_curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, write_response);
	sym_curl_easy_setopt(h, CURLOPT_WRITEDATA, resp);
	sym_curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, header_response);
	sym_curl_easy_setopt(h, CURLOPT_HEADERDATA, resp);
	sym_curl_easy_setopt(h, CURLOPT_PRIVATE, resp);
	if (c->cancel) {
		sym_curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, xfer_progress);
		sym_curl_easy_setopt(h, CURLOPT_XFERINFODATA, c);
		sym_curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
	}
	if (!strcmp(method, "PUT")) {
		sym_curl_easy_setopt(h, CURLOPT_UPLOAD, 1L);
		sym_curl_easy_setopt(h, CURLOPT_INFILESIZE_LARGE, (curl_off_t)(body ? body->len : 0));
	} else if (!strcmp(method, "POST")) {
		sym_curl_easy_setopt(h, CURLOPT_POST, 1L);
		sym_curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)(body ? body->len : 0));
		if (!body)
			sym_curl_easy_setopt(h, CURLOPT_POSTFIELDS, "");
	} else if (!strcmp(method, "HEAD")) {
		sym_curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
	} else if (strcmp(method, "GET")) {
		sym_curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
	}
	if (body) {
		body->pos = 0;
		body->rl = c->ratelimit;
		sym_curl_easy_setopt(h, CURLOPT_READFUNCTION, read_body);
		sym_curl_easy_setopt(h, CURLOPT_READDATA, body);
		sym_curl_easy_setopt(h, CURLOPT_SEEKFUNCTION, seek_body);
		sym_curl_easy_setopt(h, CURLOPT_SEEKDATA, body);
	}
	resp->len = 0;
	if (resp->data)
		resp->data[0] = '\0';
	resp->etag[0] = '\0';
	resp->have_length = false;
}

/*
 * What attempt `attempt` of a request on h, ended with rc, came to: 0 (2xx) or an error;
 * *retry_ms is the wait before the next try, 0 when there is none to make; c->err says
 * what the server answered.
 */
static int attempt_result(struct s3_client *c, CURL *h, CURLcode rc, struct response *resp,
			  int attempt, unsigned *retry_ms)
{
	long status = 0;

	*retry_ms = 0;
	if (rc == CURLE_OK)
		sym_curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
	c->err.attempts = attempt;
	c->err.curl_code = rc;
	c->err.http_status = status;
	c->err.code[0] = c->err.message[0] = '\0';
	if (rc != CURLE_OK)
		snprintf(c->err.message, sizeof(c->err.message), "%s", sym_curl_easy_strerror(rc));
	if (rc == CURLE_OK && status >= 200 && status < 300)
		return 0;
	if (rc == CURLE_OK && !resp->sink) {
		xml_copy(resp->data, "Code", c->err.code, sizeof(c->err.code));
		xml_copy(resp->data, "Message", c->err.message, sizeof(c->err.message));
	}
	if (c->cancel && *c->cancel)
		return -ECANCELED;
	if (attempt < c->max_attempts && s3_retryable(rc, status))
		*retry_ms = 1 + s3_backoff_ms(attempt, c->backoff_base_ms, c->backoff_max_ms,
					      (uint32_t)rand_r(&c->rnd_state));
	if (rc != CURLE_OK)
		return curl_errno(rc);
	return status_errno(status, c->err.code);
}

/*
 * One S3 request with retries. `sha256` is the body's (S3_EMPTY_SHA256 without body);
 * the response goes to `resp` (its sink, if set, is rewound between attempts).
 */
static int request(struct s3_client *c, const char *method, const char *key,
		   struct s3_param *query, size_t nr_query, struct body *body,
		   const char *sha256, const char *content_type, struct response *resp)
{
	char url[MAX_URL], hdr_sha[128], hdr_ct[160];
	struct curl_slist *hdrs = NULL, *tmp;
	CURLcode rc = CURLE_OK;
	unsigned ms;
	int attempt, err;

	memset(&c->err, 0, sizeof(c->err));
	err = build_url(c, key, query, nr_query, url, sizeof(url));
	if (err)
		return err;
	snprintf(hdr_sha, sizeof(hdr_sha), "x-amz-content-sha256: %s",
		 sha256 ? sha256 : S3_EMPTY_SHA256);
	tmp = sym_curl_slist_append(hdrs, hdr_sha);
	if (!tmp)
		return -ENOMEM;
	hdrs = tmp;
	if (content_type) {
		snprintf(hdr_ct, sizeof(hdr_ct), "Content-Type: %s", content_type);
		tmp = sym_curl_slist_append(hdrs, hdr_ct);
		if (!tmp) {
			sym_curl_slist_free_all(hdrs);
			return -ENOMEM;
		}
		hdrs = tmp;
	}

	for (attempt = 1;; attempt++) {
		CURL *h = c->curl;

		setup_handle(c, h, method, url, hdrs, body, resp);
		if (resp->sink) {
			/* a file from its start again; a pipe cannot be rewound, and a
			 * retry after bytes went into it would repeat them: no retry */
			rewind(resp->sink);
			if (ftruncate(fileno(resp->sink), 0) && resp->sink_bytes) {
				err = -EIO;
				break;
			}
			resp->sink_bytes = 0;
		}

		rc = sym_curl_easy_perform(h);
		err = attempt_result(c, h, rc, resp, attempt, &ms);
		if (!err || !ms)
			break;
		{
			struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000 };

			dlog("s3: %s %s: %s; retry %d in %u ms\n", method, key ? key : "",
			     rc ? sym_curl_easy_strerror(rc) : "server error", attempt, ms);
			while (nanosleep(&ts, &ts) && errno == EINTR)
				;
		}
	}
	sym_curl_slist_free_all(hdrs);
	return err;
}

static void response_free(struct response *r)
{
	free(r->data);
	r->data = NULL;
}

static void md5_hex(const uint8_t md5[S3_MD5_LEN], char *hex)
{
	static const char digits[] = "0123456789abcdef";
	int i;

	for (i = 0; i < S3_MD5_LEN; i++) {
		hex[2 * i] = digits[md5[i] >> 4];
		hex[2 * i + 1] = digits[md5[i] & 15];
	}
	hex[2 * S3_MD5_LEN] = '\0';
}

/* An ETag that is a plain MD5 (single PUT, no SSE-KMS) must be the body's. */
static int check_etag_md5(struct s3_client *c, const char *etag, const uint8_t md5[S3_MD5_LEN])
{
	char hex[2 * S3_MD5_LEN + 1];

	if (strlen(etag) != 2 * S3_MD5_LEN)
		return 0;
	md5_hex(md5, hex);
	if (strcasecmp(etag, hex)) {
		snprintf(c->err.message, sizeof(c->err.message),
			 "ETag %s is not the MD5 of what was sent (%s)", etag, hex);
		return -EBADMSG;
	}
	return 0;
}

int s3__put_fd(struct s3_client *c, const char *key, int fd, uint64_t off, uint64_t len,
	       const char *expect_sha256, char etag[S3_ETAG_MAX])
{
	char sha[S3_SHA256_HEX_LEN + 1];
	uint8_t md5[S3_MD5_LEN];
	struct body b = { .fd = fd, .off = off, .len = len };
	struct response r = {};
	int err;

	err = s3_digest_fd(fd, off, len, sha, md5);
	if (err)
		return err;
	if (expect_sha256 && strcasecmp(sha, expect_sha256)) {
		memset(&c->err, 0, sizeof(c->err));
		snprintf(c->err.message, sizeof(c->err.message), "SHA-256 %s, expected %s", sha,
			 expect_sha256);
		return -EBADMSG;
	}
	err = request(c, "PUT", key, NULL, 0, &b, sha, NULL, &r);
	if (!err)
		err = check_etag_md5(c, r.etag, md5);
	if (!err && etag)
		snprintf(etag, S3_ETAG_MAX, "%s", r.etag);
	response_free(&r);
	return err;
}

int s3__put_mem(struct s3_client *c, const char *key, const void *data, size_t len,
		const char *content_type)
{
	char sha[S3_SHA256_HEX_LEN + 1];
	struct body b = { .fd = -1, .mem = data, .len = len };
	struct response r = {};
	int err;

	err = s3_sha256_hex(data, len, sha) ?:
	      request(c, "PUT", key, NULL, 0, &b, sha, content_type, &r);
	response_free(&r);
	return err;
}

int s3__multipart_create(struct s3_client *c, const char *key, char **upload_id)
{
	struct s3_param q[] = { { "uploads", NULL } };
	struct response r = {};
	int err;

	*upload_id = NULL;
	err = request(c, "POST", key, q, 1, NULL, S3_EMPTY_SHA256, NULL, &r);
	if (!err) {
		*upload_id = r.data ? xml_next(r.data, "UploadId", NULL) : NULL;
		if (!*upload_id || !**upload_id) {
			free(*upload_id);
			*upload_id = NULL;
			snprintf(c->err.message, sizeof(c->err.message),
				 "no UploadId in the answer to CreateMultipartUpload");
			err = -EPROTO;
		}
	}
	response_free(&r);
	return err;
}

int s3__multipart_upload_part(struct s3_client *c, const char *key, const char *upload_id,
			      struct s3_part *part, int fd, uint64_t off, uint64_t len)
{
	char sha[S3_SHA256_HEX_LEN + 1], num[16];
	struct s3_param q[] = { { "partNumber", num }, { "uploadId", upload_id } };
	struct body b = { .fd = fd, .off = off, .len = len };
	struct response r = {};
	int err;

	snprintf(num, sizeof(num), "%d", part->number);
	err = s3_digest_fd(fd, off, len, sha, part->md5);
	if (err)
		return err;
	err = request(c, "PUT", key, q, 2, &b, sha, NULL, &r);
	if (!err)
		err = check_etag_md5(c, r.etag, part->md5);
	if (!err)
		snprintf(part->etag, sizeof(part->etag), "%s", r.etag);
	response_free(&r);
	return err;
}

int s3__multipart_complete(struct s3_client *c, const char *key, const char *upload_id,
			   const struct s3_part *parts, int nr_parts)
{
	struct s3_param q[] = { { "uploadId", upload_id } };
	char sha[S3_SHA256_HEX_LEN + 1];
	size_t cap = 64 + (size_t)nr_parts * (64 + S3_ETAG_MAX), len = 0;
	struct response r = {};
	struct body b = { .fd = -1 };
	char *xml;
	int i, err;

	xml = malloc(cap);
	if (!xml)
		return -ENOMEM;
	len += snprintf(xml + len, cap - len, "<CompleteMultipartUpload>");
	for (i = 0; i < nr_parts; i++)
		len += snprintf(xml + len, cap - len,
				"<Part><PartNumber>%d</PartNumber><ETag>\"%s\"</ETag></Part>",
				parts[i].number, parts[i].etag);
	len += snprintf(xml + len, cap - len, "</CompleteMultipartUpload>");
	b.mem = (const uint8_t *)xml;
	b.len = len;
	err = s3_sha256_hex(xml, len, sha) ?:
	      request(c, "POST", key, q, 1, &b, sha, "application/xml", &r);
	/* S3 may answer 200 and put the error in the body */
	if (!err && r.data && strstr(r.data, "<Error>")) {
		xml_copy(r.data, "Code", c->err.code, sizeof(c->err.code));
		xml_copy(r.data, "Message", c->err.message, sizeof(c->err.message));
		err = -EPROTO;
	}
	response_free(&r);
	free(xml);
	return err;
}

int s3__multipart_abort(struct s3_client *c, const char *key, const char *upload_id)
{
	struct s3_param q[] = { { "uploadId", upload_id } };
	struct response r = {};
	int err;

	err = request(c, "DELETE", key, q, 1, NULL, S3_EMPTY_SHA256, NULL, &r);
	response_free(&r);
	return err == -ENOENT ? 0 : err;
}

int s3__multipart_abort_all(struct s3_client *c, const char *key, const char *keep)
{
	struct s3_param q[] = { { "uploads", NULL }, { "prefix", key } };
	struct response r = {};
	const char *pos = NULL;
	char *upload, *k, *id;
	int err;

	err = request(c, "GET", NULL, q, 2, NULL, S3_EMPTY_SHA256, NULL, &r);
	if (err || !r.data)
		goto out;
	while ((upload = xml_next(r.data, "Upload", &pos))) {
		k = xml_next(upload, "Key", NULL);
		id = xml_next(upload, "UploadId", NULL);
		if (k && id && !strcmp(k, key) && (!keep || strcmp(id, keep))) {
			int e = s3__multipart_abort(c, key, id);

			if (e && !err)
				err = e;
		}
		free(k);
		free(id);
		free(upload);
	}
out:
	response_free(&r);
	return err;
}

/* Where the next page of a truncated listing starts (the value of `tag`), or NULL. */
static char *next_page(const char *xml, const char *tag)
{
	char *truncated = xml_next(xml, "IsTruncated", NULL), *next = NULL;

	if (truncated && !strcmp(truncated, "true"))
		next = xml_next(xml, tag, NULL);
	free(truncated);
	return next;
}

int s3__list(struct s3_client *c, const char *prefix, const char *delimiter, s3_list_fn fn,
	     void *ctx)
{
	char *token = NULL;
	struct response r = {};
	int err = 0;

	do {
		struct s3_param q[5];
		size_t n = 0;
		const char *pos;
		char *item;

		q[n++] = (struct s3_param){ "list-type", "2" };
		q[n++] = (struct s3_param){ "prefix", prefix ? prefix : "" };
		if (delimiter)
			q[n++] = (struct s3_param){ "delimiter", delimiter };
		if (token)
			q[n++] = (struct s3_param){ "continuation-token", token };
		err = request(c, "GET", NULL, q, n, NULL, S3_EMPTY_SHA256, NULL, &r);
		free(token);
		token = NULL;
		if (err || !r.data)
			break;
		pos = NULL;
		while (!err && (item = xml_next(r.data, "Contents", &pos))) {
			char *key = xml_next(item, "Key", NULL), *size = xml_next(item, "Size", NULL);

			if (key)
				err = fn(key, size ? strtoull(size, NULL, 10) : 0, ctx);
			free(key);
			free(size);
			free(item);
		}
		pos = NULL;
		while (!err && (item = xml_next(r.data, "CommonPrefixes", &pos))) {
			char *p = xml_next(item, "Prefix", NULL);

			if (p)
				err = fn(p, UINT64_MAX, ctx);
			free(p);
			free(item);
		}
		if (err)
			break;
		token = next_page(r.data, "NextContinuationToken");
	} while (token);
	free(token);
	response_free(&r);
	return err;
}

int s3__get(struct s3_client *c, const char *key, FILE *out, uint64_t *bytes)
{
	struct response r = { .sink = out };
	int err;

	err = request(c, "GET", key, NULL, 0, NULL, S3_EMPTY_SHA256, NULL, &r);
	if (err == -ENOENT || err == -EACCES) {
		/* the error body went to the sink: the code is what the message needs */
		c->err.code[0] = '\0';
		if (err == -ENOENT)
			snprintf(c->err.code, sizeof(c->err.code), "NoSuchKey");
	}
	if (!err && fflush(out))
		err = -errno;
	if (bytes)
		*bytes = r.sink_bytes;
	return err;
}

int s3__head(struct s3_client *c, const char *key, uint64_t *size, char etag[S3_ETAG_MAX])
{
	struct response r = {};
	int err;

	err = request(c, "HEAD", key, NULL, 0, NULL, S3_EMPTY_SHA256, NULL, &r);
	if (!err) {
		if (size)
			*size = r.content_length;
		if (etag)
			snprintf(etag, S3_ETAG_MAX, "%s", r.etag);
	}
	response_free(&r);
	return err;
}

int s3__create_bucket(struct s3_client *c)
{
	struct response r = {};
	int err;

	err = request(c, "PUT", NULL, NULL, 0, NULL, S3_EMPTY_SHA256, NULL, &r);
	response_free(&r);
	return err;
}

/* One GET of s3__get_many: a slot of the pool, its handle kept for its connection. */
struct get_slot {
	CURL *h;
	size_t idx;			/* into keys; SIZE_MAX: free */
	int attempt;
	uint64_t not_before_ms;		/* a retry waits until then (monotonic) */
	bool in_multi;
	struct response resp;
	char url[MAX_URL];
};

static uint64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int s3__get_many(struct s3_client *c, const char *const *keys, size_t n, int max_in_flight,
		 s3_got_fn fn, void *ctx)
{
	struct curl_slist *hdrs = NULL;
	struct get_slot *slots;
	CURLM *m;
	size_t next = 0, done = 0;
	int i, nr_slots, err = 0;

	if (!n)
		return 0;
	nr_slots = max_in_flight < 1 ? 1 : (size_t)max_in_flight > n ? (int)n : max_in_flight;
	slots = calloc(nr_slots, sizeof(*slots));
	m = sym_curl_multi_init();
	hdrs = sym_curl_slist_append(NULL, "x-amz-content-sha256: " S3_EMPTY_SHA256);
	if (!slots || !m || !hdrs) {
		err = -ENOMEM;
		goto out;
	}
	/* the connections are kept between requests: one per slot, no more */
	sym_curl_multi_setopt(m, CURLMOPT_MAX_TOTAL_CONNECTIONS, (long)nr_slots);
	for (i = 0; i < nr_slots; i++) {
		slots[i].idx = SIZE_MAX;
		slots[i].h = sym_curl_easy_init();
		if (!slots[i].h) {
			err = -ENOMEM;
			goto out;
		}
	}
	while (done < n && !err) {
		uint64_t now = mono_ms(), wait_ms = 1000;
		struct CURLMsg *msg;
		int running, left;

		/* fill the free slots: retries that are due, then the next keys */
		for (i = 0; i < nr_slots && !err; i++) {
			struct get_slot *sl = &slots[i];

			if (sl->in_multi)
				continue;
			if (sl->idx == SIZE_MAX) {
				if (next >= n)
					continue;
				sl->idx = next++;
				sl->attempt = 0;
				sl->not_before_ms = 0;
				err = build_url(c, keys[sl->idx], NULL, 0, sl->url, sizeof(sl->url));
				if (err)
					break;
			}
			if (sl->not_before_ms > now) {
				if (sl->not_before_ms - now < wait_ms)
					wait_ms = sl->not_before_ms - now;
				continue;
			}
			sl->attempt++;
			setup_handle(c, sl->h, "GET", sl->url, hdrs, NULL, &sl->resp);
			if (sym_curl_multi_add_handle(m, sl->h) != CURLM_OK) {
				err = -ENOMEM;
				break;
			}
			sl->in_multi = true;
		}
		if (err)
			break;
		if (sym_curl_multi_perform(m, &running) != CURLM_OK) {
			err = -EIO;
			break;
		}
		while (!err && (msg = sym_curl_multi_info_read(m, &left))) {
			struct get_slot *sl = NULL;
			unsigned retry_ms;
			int e;

			if (msg->msg != CURLMSG_DONE)
				continue;
			for (i = 0; i < nr_slots; i++)
				if (slots[i].h == msg->easy_handle)
					sl = &slots[i];
			if (!sl)
				continue;
			sym_curl_multi_remove_handle(m, sl->h);
			sl->in_multi = false;
			e = attempt_result(c, sl->h, msg->data.result, &sl->resp, sl->attempt,
					   &retry_ms);
			if (e && retry_ms) {
				dlog("s3: GET %s: %s; retry %d in %u ms\n", keys[sl->idx],
				     msg->data.result ? sym_curl_easy_strerror(msg->data.result) :
				     "server error", sl->attempt, retry_ms);
				sl->not_before_ms = mono_ms() + retry_ms;
				wait_ms = 0;
				continue;
			}
			err = fn(keys[sl->idx], e, e ? NULL : sl->resp.data ? sl->resp.data : "",
				 e ? 0 : sl->resp.len, ctx);
			sl->idx = SIZE_MAX;
			done++;
			wait_ms = 0;
		}
		if (err || done >= n)
			break;
		if (c->cancel && *c->cancel) {
			err = -ECANCELED;
			break;
		}
		if (wait_ms && sym_curl_multi_poll(m, NULL, 0, (int)wait_ms, NULL) != CURLM_OK)
			err = -EIO;
	}
out:
	for (i = 0; slots && i < nr_slots; i++) {
		if (slots[i].in_multi)
			sym_curl_multi_remove_handle(m, slots[i].h);
		if (slots[i].h)
			sym_curl_easy_cleanup(slots[i].h);
		response_free(&slots[i].resp);
	}
	free(slots);
	if (m)
		sym_curl_multi_cleanup(m);
	sym_curl_slist_free_all(hdrs);
	return err;
}

int s3__multipart_list_parts(struct s3_client *c, const char *key, const char *upload_id,
			     s3_part_fn fn, void *ctx)
{
	char *marker = NULL;
	struct response r = {};
	int err = 0;

	do {
		struct s3_param q[3];
		size_t nq = 0;
		const char *pos = NULL;
		char *item;

		q[nq++] = (struct s3_param){ "uploadId", upload_id };
		if (marker)
			q[nq++] = (struct s3_param){ "part-number-marker", marker };
		err = request(c, "GET", key, q, nq, NULL, S3_EMPTY_SHA256, NULL, &r);
		free(marker);
		marker = NULL;
		if (err || !r.data)
			break;
		while (!err && (item = xml_next(r.data, "Part", &pos))) {
			char *num = xml_next(item, "PartNumber", NULL);
			char *etag = xml_next(item, "ETag", NULL);
			char *size = xml_next(item, "Size", NULL);
			char clean[S3_ETAG_MAX];
			size_t j = 0;

			for (const char *p = etag ? etag : ""; *p && j + 1 < sizeof(clean); p++)
				if (*p != '"')
					clean[j++] = *p;
			clean[j] = '\0';
			if (num && size)
				err = fn(atoi(num), clean, strtoull(size, NULL, 10), ctx);
			free(num);
			free(etag);
			free(size);
			free(item);
		}
		if (err)
			break;
		marker = next_page(r.data, "NextPartNumberMarker");
	} while (marker);
	free(marker);
	response_free(&r);
	return err;
}
