// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The uploader (see upload.h). A queue of spooled captures, `concurrency` worker threads
 * each with its own S3 client (a curl handle and its connection), one bandwidth limiter
 * shared by all. A failed upload goes back to the queue with a growing delay, so a store
 * that is down for a while gets everything once it is back; permanent errors (wrong key,
 * missing bucket) are logged once per cause, with the fix, and retried slowly, the
 * captures staying in the spool until they are confirmed.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>

#include "array.h"
#include "fleet_layout.h"
#include "log.h"
#include "s3.h"
#include "s3_libs.h"
#include "spool.h"
#include "upload.h"

#define MULTIPART_THRESHOLD (16ULL << 20)
#define PART_SIZE (8ULL << 20)
#define PART_ATTEMPTS 4			/* per part, each itself retried by the client */
#define REQUEUE_MAX_MS 10000		/* a store back up is used again within this */
#define PERMANENT_REQUEUE_MS 60000	/* wrong key, no bucket: try again (fixed?) */
#define CAPTURE_SUFFIX ".perf.data.zst"

enum upload_cause {
	CAUSE_AUTH,			/* 403: wrong key or secret, no access */
	CAUSE_NO_BUCKET,		/* 404 NoSuchBucket */
	CAUSE_NETWORK,			/* no answer: refused, reset, timeout */
	CAUSE_SERVER,			/* 5xx / 429 after the retries */
	CAUSE_CHECKSUM,			/* what the store confirmed is not what the spool holds */
	CAUSE_SPOOL,			/* manifest or capture unreadable or inconsistent */
	CAUSE_OTHER,
	NR_CAUSES,
	CAUSE_GONE = NR_CAUSES,		/* not an error: the spool dropped it meanwhile */
};

static const char *const cause_names[NR_CAUSES] = {
	[CAUSE_AUTH] = "auth", [CAUSE_NO_BUCKET] = "no_bucket", [CAUSE_NETWORK] = "network",
	[CAUSE_SERVER] = "server", [CAUSE_CHECKSUM] = "checksum", [CAUSE_SPOOL] = "spool",
	[CAUSE_OTHER] = "other",
};

static const double seconds_buckets[] = { 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300 };
#define NR_BUCKETS (ARRAY_SIZE(seconds_buckets))

struct upload_item {
	struct upload_item *next;
	char *manifest;			/* path in the spool */
	uint64_t bytes;			/* capture size, for the queue metric */
	int failures;
	uint64_t not_before_ms;		/* monotonic: after a failure */
	bool busy;			/* a worker is sending it */
};

struct uploader {
	struct upload_config cfg;
	char *spool_dir, *host;
	struct s3_credentials creds;
	struct s3_ratelimit *ratelimit;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct upload_item *queue;	/* FIFO: head is the oldest */
	pthread_t *threads;
	int nr_threads;
	volatile bool stop;
	bool cause_logged[NR_CAUSES];	/* logged once until an upload succeeds again */
	/* metrics */
	uint64_t uploads_ok, uploads_failed, bytes_total;
	uint64_t parts_sent, parts_resumed;	/* multipart: sent, or already in the store */
	uint64_t generation;		/* changes with every metric */
	uint64_t errors[NR_CAUSES];
	uint64_t hist[NR_BUCKETS + 1];
	double seconds_sum;
	uint64_t seconds_count;
};

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static char *dup_or_null(const char *s)
{
	return s ? strdup(s) : NULL;
}

int uploader__new(const struct upload_config *cfg, const char *spool_dir, const char *host,
		  struct uploader **out)
{
	struct uploader *u;
	int err;

	*out = NULL;
	if (!cfg->endpoint || !cfg->bucket || !spool_dir || !host)
		return -EINVAL;
	u = calloc(1, sizeof(*u));
	if (!u)
		return -ENOMEM;
	pthread_mutex_init(&u->lock, NULL);
	pthread_cond_init(&u->cond, NULL);
	u->cfg.endpoint = dup_or_null(cfg->endpoint);
	u->cfg.region = dup_or_null(cfg->region ? cfg->region : "us-east-1");
	u->cfg.bucket = dup_or_null(cfg->bucket);
	u->cfg.prefix = dup_or_null(cfg->prefix ? cfg->prefix : "");
	u->cfg.credentials_file = dup_or_null(cfg->credentials_file);
	u->cfg.path_style = cfg->path_style;
	u->cfg.max_bytes_per_second = cfg->max_bytes_per_second;
	u->cfg.concurrency = cfg->concurrency >= 1 ? cfg->concurrency : 1;
	u->spool_dir = strdup(spool_dir);
	u->host = strdup(host);
	if (!u->cfg.endpoint || !u->cfg.region || !u->cfg.bucket || !u->cfg.prefix ||
	    (cfg->credentials_file && !u->cfg.credentials_file) || !u->spool_dir || !u->host) {
		err = -ENOMEM;
		goto fail;
	}
	/* strip slashes around the prefix: keys never start with '/' nor hold "//" */
	while (u->cfg.prefix[0] == '/')
		memmove(u->cfg.prefix, u->cfg.prefix + 1, strlen(u->cfg.prefix));
	for (size_t l = strlen(u->cfg.prefix); l && u->cfg.prefix[l - 1] == '/';)
		u->cfg.prefix[--l] = '\0';
	err = s3_credentials__load(u->cfg.credentials_file, &u->creds);
	if (err) {
		elog("upload: %s\n", u->creds.source);
		goto fail;
	}
	err = s3_ratelimit__new(u->cfg.max_bytes_per_second, &u->ratelimit);
	if (err)
		goto fail;
	*out = u;
	return 0;
fail:
	uploader__free(u);
	return err;
}

/* Queue a manifest unless it is queued already; the lock is held. */
static void enqueue_locked(struct uploader *u, const char *manifest)
{
	struct upload_item *it, **tail = &u->queue;
	char capture[4096];
	struct stat st;
	size_t len = strlen(manifest);

	for (it = u->queue; it; it = it->next) {
		if (!strcmp(it->manifest, manifest))
			return;
		tail = &it->next;
	}
	it = calloc(1, sizeof(*it));
	if (!it || !(it->manifest = strdup(manifest))) {
		free(it);
		elog("upload: out of memory queueing %s\n", manifest);
		return;
	}
	if (len > 5 && len - 5 + sizeof(CAPTURE_SUFFIX) <= sizeof(capture)) {
		snprintf(capture, sizeof(capture), "%.*s" CAPTURE_SUFFIX, (int)(len - 5), manifest);
		if (!stat(capture, &st))
			it->bytes = (uint64_t)st.st_size;
	}
	*tail = it;
	pthread_cond_signal(&u->cond);
}

void uploader__enqueue(struct uploader *u, const char *manifest_path)
{
	if (!u || !manifest_path)
		return;
	pthread_mutex_lock(&u->lock);
	enqueue_locked(u, manifest_path);
	pthread_mutex_unlock(&u->lock);
}

static bool is_manifest_name(const char *name)
{
	size_t len = strlen(name);

	/* in-progress files start with '.'; a manifest renamed into place last means its
	 * capture is complete */
	return name[0] != '.' && len > 5 && !strcmp(name + len - 5, ".json");
}

/* Every SPOOL/<rule>/<name>.json, oldest rule directory entries first by name (the
 * name starts with the capture time). */
static void scan_spool(struct uploader *u)
{
	struct dirent **rules = NULL, **files = NULL;
	int nr_rules, nr_files, i, j;
	char path[4096];

	nr_rules = scandir(u->spool_dir, &rules, NULL, alphasort);
	if (nr_rules < 0) {
		if (errno != ENOENT)
			elog("upload: cannot read spool %s: %s\n", u->spool_dir, strerror(errno));
		return;
	}
	for (i = 0; i < nr_rules; i++) {
		if (rules[i]->d_name[0] == '.')
			goto next_rule;
		snprintf(path, sizeof(path), "%s/%s", u->spool_dir, rules[i]->d_name);
		nr_files = scandir(path, &files, NULL, alphasort);
		if (nr_files < 0)
			goto next_rule;
		pthread_mutex_lock(&u->lock);
		for (j = 0; j < nr_files; j++) {
			if (is_manifest_name(files[j]->d_name)) {
				snprintf(path, sizeof(path), "%s/%s/%s", u->spool_dir,
					 rules[i]->d_name, files[j]->d_name);
				enqueue_locked(u, path);
			}
			free(files[j]);
		}
		pthread_mutex_unlock(&u->lock);
		free(files);
next_rule:
		free(rules[i]);
	}
	free(rules);
}

static enum upload_cause classify(struct s3_client *c, int err)
{
	const struct s3_error *e = s3_client__last_error(c);

	if (err == -EBADMSG)
		return CAUSE_CHECKSUM;
	if (!e->http_status && err != -ENOENT)
		return err == -ENOMEM ? CAUSE_OTHER : CAUSE_NETWORK;
	if (e->http_status == 403)
		return CAUSE_AUTH;
	if (e->http_status == 404 && (!strcmp(e->code, "NoSuchBucket") || !e->code[0]))
		return CAUSE_NO_BUCKET;
	if (e->http_status >= 500 || e->http_status == 429)
		return CAUSE_SERVER;
	return CAUSE_OTHER;
}

struct manifest_info {
	char rule[256], host[256], capture[512], sha256[S3_SHA256_HEX_LEN + 1];
	uint64_t time_ns, bytes;
	char *text;			/* the manifest as spooled, uploaded as is */
	size_t text_len;
};

static int read_manifest(const char *path, struct manifest_info *mi)
{
	struct json_object *root = NULL, *v;
	struct stat st;
	ssize_t n;
	int fd, err = 0;

	memset(mi, 0, sizeof(*mi));
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) || st.st_size > (1 << 24)) {
		err = -EFBIG;
		goto out;
	}
	mi->text = malloc((size_t)st.st_size + 1);
	if (!mi->text) {
		err = -ENOMEM;
		goto out;
	}
	n = pread(fd, mi->text, (size_t)st.st_size, 0);
	if (n != st.st_size) {
		err = n < 0 ? -errno : -EIO;
		goto out;
	}
	mi->text[n] = '\0';
	mi->text_len = (size_t)n;
	root = json_tokener_parse(mi->text);
	if (!root || !json_object_is_type(root, json_type_object)) {
		err = -EINVAL;
		goto out;
	}
#define GET_STR(name, field)                                                                       \
	if (json_object_object_get_ex(root, name, &v) && json_object_is_type(v, json_type_string)) \
		snprintf(mi->field, sizeof(mi->field), "%s", json_object_get_string(v));
	GET_STR("rule", rule);
	GET_STR("host", host);
	GET_STR("capture", capture);
	GET_STR("sha256", sha256);
#undef GET_STR
	if (json_object_object_get_ex(root, "time_ns", &v))
		mi->time_ns = (uint64_t)json_object_get_int64(v);
	if (json_object_object_get_ex(root, "bytes", &v))
		mi->bytes = (uint64_t)json_object_get_int64(v);
	if (!mi->capture[0] || strchr(mi->capture, '/') || mi->capture[0] == '.')
		err = -EINVAL;
out:
	json_object_put(root);
	close(fd);
	if (err) {
		free(mi->text);
		mi->text = NULL;
	}
	return err;
}

/* The multipart ETag S3 gives a completed upload: MD5 of the parts' MD5s, "-N". */
static void multipart_etag(const struct s3_part *parts, int n, char *buf, size_t size)
{
	EVP_MD_CTX *ctx = lazylib_load(&lib_crypto) ? NULL : sym_EVP_MD_CTX_new();
	uint8_t md[16];
	unsigned len;
	int i, off;

	if (!ctx) {
		snprintf(buf, size, "?");
		return;
	}
	sym_EVP_DigestInit_ex(ctx, sym_EVP_md5(), NULL);
	for (i = 0; i < n; i++)
		sym_EVP_DigestUpdate(ctx, parts[i].md5, sizeof(parts[i].md5));
	sym_EVP_DigestFinal_ex(ctx, md, &len);
	sym_EVP_MD_CTX_free(ctx);
	for (i = 0, off = 0; i < 16; i++)
		off += snprintf(buf + off, size - off, "%02x", md[i]);
	snprintf(buf + off, size - off, "-%d", n);
}

static void fsync_dir_of(const char *path)
{
	char dir[4096], *slash;
	int fd;

	snprintf(dir, sizeof(dir), "%s", path);
	slash = strrchr(dir, '/');
	if (!slash)
		return;
	*slash = '\0';
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd >= 0) {
		fsync(fd);
		close(fd);
	}
}

/*
 * A multipart upload in progress, kept beside its capture (SPOOL_MULTIPART_EXT) so that a
 * restarted daemon sends only the parts the store has not confirmed:
 *   {"key":K,"upload_id":U,"size":N,"part_size":P,"parts":[{"n":1,"etag":E},...]}
 * rewritten (temporary file, fsync, rename) after each confirmed part.
 */
struct multipart {
	const char *state_path;
	const char *key;
	char *upload_id;
	uint64_t size;
	int nr_parts;
	struct s3_part *parts;
	bool *stored;			/* parts[i] confirmed by the store */
};

static int multipart_save(const struct multipart *mp)
{
	struct json_object *root = json_object_new_object(), *arr = json_object_new_array();
	int err = 0, i;

	if (!root || !arr) {
		json_object_put(arr);
		err = -ENOMEM;
		goto out;
	}
	json_object_object_add(root, "key", json_object_new_string(mp->key));
	json_object_object_add(root, "upload_id", json_object_new_string(mp->upload_id));
	json_object_object_add(root, "size", json_object_new_int64((int64_t)mp->size));
	json_object_object_add(root, "part_size", json_object_new_int64((int64_t)PART_SIZE));
	for (i = 0; i < mp->nr_parts; i++) {
		struct json_object *p;

		if (!mp->stored[i])
			continue;
		p = json_object_new_object();
		json_object_object_add(p, "n", json_object_new_int(mp->parts[i].number));
		json_object_object_add(p, "etag", json_object_new_string(mp->parts[i].etag));
		json_object_array_add(arr, p);
	}
	json_object_object_add(root, "parts", arr);
	err = spool_write_json(mp->state_path, root);
out:
	json_object_put(root);
	if (err)
		elog("upload: cannot write %s: %s (a restart may send its parts again)\n",
		     mp->state_path, strerror(-err));
	return err;
}

static void multipart_forget(const struct multipart *mp)
{
	if (unlink(mp->state_path) == 0)
		fsync_dir_of(mp->state_path);
}

static int hex_md5(const char *hex, uint8_t md5[S3_MD5_LEN])
{
	int i;

	if (strlen(hex) != 2 * S3_MD5_LEN)
		return -EINVAL;
	for (i = 0; i < S3_MD5_LEN; i++) {
		unsigned v;

		if (sscanf(hex + 2 * i, "%2x", &v) != 1)
			return -EINVAL;
		md5[i] = (uint8_t)v;
	}
	return 0;
}

/* The upload id and the confirmed parts of a saved state for this key and size; the
 * parts only as `saved` (they count once the store lists them too). 0, or -ENOENT when
 * there is no usable state. */
static int multipart_load(struct multipart *mp, char (*saved)[S3_ETAG_MAX])
{
	struct json_object *root, *v, *arr;
	size_t i;
	int err = -ENOENT;

	root = json_object_from_file(mp->state_path);
	if (!root)
		return -ENOENT;
	if (!json_object_object_get_ex(root, "key", &v) || strcmp(json_object_get_string(v), mp->key) ||
	    !json_object_object_get_ex(root, "size", &v) || (uint64_t)json_object_get_int64(v) != mp->size ||
	    !json_object_object_get_ex(root, "part_size", &v) ||
	    (uint64_t)json_object_get_int64(v) != PART_SIZE ||
	    !json_object_object_get_ex(root, "upload_id", &v) || !json_object_get_string_len(v) ||
	    !json_object_object_get_ex(root, "parts", &arr) ||
	    !json_object_is_type(arr, json_type_array))
		goto out;
	mp->upload_id = strdup(json_object_get_string(v));
	if (!mp->upload_id) {
		err = -ENOMEM;
		goto out;
	}
	for (i = 0; i < json_object_array_length(arr); i++) {
		struct json_object *p = json_object_array_get_idx(arr, i), *n, *e;
		int num;

		if (!json_object_object_get_ex(p, "n", &n) || !json_object_object_get_ex(p, "etag", &e))
			continue;
		num = json_object_get_int(n);
		if (num >= 1 && num <= mp->nr_parts)
			snprintf(saved[num - 1], S3_ETAG_MAX, "%s", json_object_get_string(e));
	}
	err = 0;
out:
	json_object_put(root);
	return err;
}

struct listed_parts {
	struct multipart *mp;
	char (*saved)[S3_ETAG_MAX];
	int resumed;
};

/* A part the store lists: stored when the saved state confirmed it with the same ETag
 * (the MD5 of what was sent) and it has the size that part has. */
static int take_listed_part(int number, const char *etag, uint64_t size, void *arg)
{
	struct listed_parts *lp = arg;
	struct multipart *mp = lp->mp;
	uint64_t off = (uint64_t)(number - 1) * PART_SIZE;
	struct s3_part *part;

	if (number < 1 || number > mp->nr_parts || !lp->saved[number - 1][0] ||
	    strcasecmp(etag, lp->saved[number - 1]) ||
	    size != (mp->size - off < PART_SIZE ? mp->size - off : PART_SIZE))
		return 0;
	part = &mp->parts[number - 1];
	if (hex_md5(etag, part->md5))
		return 0;
	snprintf(part->etag, sizeof(part->etag), "%s", etag);
	if (!mp->stored[number - 1])
		lp->resumed++;
	mp->stored[number - 1] = true;
	return 0;
}

/* Errors after which the upload is kept for a later try to resume: the store is away or
 * refuses for now, or the daemon is stopping. */
static bool resumable_error(int err)
{
	return err == -ECONNREFUSED || err == -ETIMEDOUT || err == -EHOSTUNREACH ||
	       err == -ECOMM || err == -EAGAIN || err == -ECANCELED || err == -EACCES ||
	       err == -EIO;
}

static int upload_multipart(struct uploader *u, struct s3_client *c, const char *key, int fd,
			    uint64_t size, const char *state_path)
{
	struct multipart mp = { .state_path = state_path, .key = key, .size = size };
	char want[64], etag[S3_ETAG_MAX], (*saved)[S3_ETAG_MAX] = NULL;
	uint64_t head_size = 0;
	int i, attempt, err;

	mp.nr_parts = (int)((size + PART_SIZE - 1) / PART_SIZE);
	mp.parts = calloc(mp.nr_parts, sizeof(*mp.parts));
	mp.stored = calloc(mp.nr_parts, sizeof(*mp.stored));
	saved = calloc(mp.nr_parts, sizeof(*saved));
	if (!mp.parts || !mp.stored || !saved) {
		err = -ENOMEM;
		goto out;
	}
	for (i = 0; i < mp.nr_parts; i++)
		mp.parts[i].number = i + 1;
	/* an upload a previous run started: go on with the parts the store confirmed */
	if (!multipart_load(&mp, saved)) {
		struct listed_parts lp = { .mp = &mp, .saved = saved };

		err = s3__multipart_list_parts(c, key, mp.upload_id, take_listed_part, &lp);
		if (err == -ENOENT) {
			elog("upload: %s: the store no longer knows upload %s (NoSuchUpload); "
			     "starting it again\n", key, mp.upload_id);
			multipart_forget(&mp);
			free(mp.upload_id);
			mp.upload_id = NULL;
			memset(mp.stored, 0, mp.nr_parts * sizeof(*mp.stored));
		} else if (err) {
			goto out;
		} else {
			elog("upload: %s: resuming upload %s, %d of %d parts already stored\n",
			     key, mp.upload_id, lp.resumed, mp.nr_parts);
			pthread_mutex_lock(&u->lock);
			u->parts_resumed += lp.resumed;
			u->generation++;
			pthread_mutex_unlock(&u->lock);
		}
	}
	/* other unfinished uploads of this key (a run killed before it saved the id of one):
	 * never completed, so never visible; aborting frees their parts */
	err = s3__multipart_abort_all(c, key, mp.upload_id);
	if (err == -EACCES || err == -ECANCELED)
		goto out;
	if (!mp.upload_id) {
		err = s3__multipart_create(c, key, &mp.upload_id);
		if (err)
			goto out;
		multipart_save(&mp);
	}
	for (i = 0; i < mp.nr_parts; i++) {
		uint64_t off = (uint64_t)i * PART_SIZE;
		uint64_t len = size - off < PART_SIZE ? size - off : PART_SIZE;

		if (mp.stored[i])
			continue;
		/* each part retried on its own: a failure costs a part, not the object */
		for (attempt = 1; attempt <= PART_ATTEMPTS; attempt++) {
			err = s3__multipart_upload_part(c, key, mp.upload_id, &mp.parts[i], fd, off,
							len);
			if (!err || err == -EACCES || err == -ENOENT || err == -ECANCELED)
				break;
			dlog("upload: %s part %d: %s, attempt %d\n", key, i + 1, strerror(-err),
			     attempt);
		}
		if (err)
			goto fail;
		mp.stored[i] = true;
		pthread_mutex_lock(&u->lock);
		u->parts_sent++;
		u->generation++;
		pthread_mutex_unlock(&u->lock);
		multipart_save(&mp);
	}
	err = s3__multipart_complete(c, key, mp.upload_id, mp.parts, mp.nr_parts);
	if (err)
		goto fail;
	multipart_forget(&mp);
	/* confirmed: the store holds this size, and the ETag its parts' MD5s give */
	err = s3__head(c, key, &head_size, etag);
	if (err)
		goto out;
	multipart_etag(mp.parts, mp.nr_parts, want, sizeof(want));
	if (head_size != size || (strchr(etag, '-') && strcasecmp(etag, want)))
		err = -EBADMSG;
	goto out;
fail:
	/* the store away, a wrong key, a daemon stopping: the parts it holds are kept for the
	 * next try; anything else (NoSuchUpload, a refused part list) starts again */
	if (!resumable_error(err)) {
		/* keep the client's error: the abort's own answer is not the cause */
		struct s3_error kept = *s3_client__last_error(c);

		s3__multipart_abort(c, key, mp.upload_id);
		*(struct s3_error *)s3_client__last_error(c) = kept;
		multipart_forget(&mp);
	}
out:
	free(mp.upload_id);
	free(mp.parts);
	free(mp.stored);
	free(saved);
	return err;
}

/* Send one capture and its manifest; 0 when confirmed and removed from the spool. */
static int upload_one(struct uploader *u, struct s3_client *c, const char *manifest,
		      enum upload_cause *cause, uint64_t *sent)
{
	char capture[4096], key[4096], mkey[4096], etag[S3_ETAG_MAX], *slash;
	char state_path[4200];
	char sha[S3_SHA256_HEX_LEN + 1];
	struct manifest_info mi;
	struct stat st;
	size_t dirlen;
	int fd = -1, err;

	*cause = CAUSE_SPOOL;
	*sent = 0;
	err = read_manifest(manifest, &mi);
	if (err == -ENOENT) {
		*cause = CAUSE_GONE;	/* evicted by the spool quota meanwhile */
		return err;
	}
	if (err) {
		elog("upload: %s: unreadable manifest (%s); left in the spool\n", manifest,
		     strerror(-err));
		return err;
	}
	slash = strrchr(manifest, '/');
	dirlen = slash ? (size_t)(slash - manifest) : 0;
	if (!mi.rule[0]) {
		/* the rule is the spool's directory */
		const char *r = manifest;

		for (const char *p = manifest; p < manifest + dirlen; p++)
			if (*p == '/')
				r = p + 1;
		snprintf(mi.rule, sizeof(mi.rule), "%.*s", (int)(manifest + dirlen - r), r);
	}
	snprintf(capture, sizeof(capture), "%.*s/%s", (int)dirlen, manifest, mi.capture);
	snprintf(state_path, sizeof(state_path), "%s" SPOOL_MULTIPART_EXT, capture);
	fd = open(capture, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st)) {
		err = -errno;
		elog("upload: %s: %s; left in the spool\n", capture, strerror(-err));
		goto out;
	}
	if (!mi.time_ns)
		mi.time_ns = (uint64_t)st.st_mtim.tv_sec * 1000000000ULL;
	if (mi.bytes && mi.bytes != (uint64_t)st.st_size) {
		elog("upload: %s holds %" PRIu64 " bytes, its manifest says %" PRIu64
		     "; left in the spool\n", capture, (uint64_t)st.st_size, mi.bytes);
		err = -EBADMSG;
		goto out;
	}
	/* a single PUT checks the manifest's sha256 in the pass that hashes the body; a
	 * multipart upload hashes part by part, so the whole file is checked first */
	if (mi.sha256[0] && (uint64_t)st.st_size > MULTIPART_THRESHOLD) {
		err = s3_digest_fd(fd, 0, (uint64_t)st.st_size, sha, NULL);
		if (!err && strcasecmp(sha, mi.sha256))
			err = -EBADMSG;
		if (err)
			goto bad_sha;
	}
	err = fleet_key(u->cfg.prefix, mi.rule, (int64_t)(mi.time_ns / 1000000000ULL),
			mi.host[0] ? mi.host : u->host, mi.capture, key, sizeof(key));
	if (!err)
		err = fleet_key(u->cfg.prefix, mi.rule, (int64_t)(mi.time_ns / 1000000000ULL),
				mi.host[0] ? mi.host : u->host, slash ? slash + 1 : manifest,
				mkey, sizeof(mkey));
	if (err)
		goto out;

	/* the capture first: a manifest in the store always points at a whole object */
	if ((uint64_t)st.st_size > MULTIPART_THRESHOLD)
		err = upload_multipart(u, c, key, fd, (uint64_t)st.st_size, state_path);
	else
		err = s3__put_fd(c, key, fd, 0, (uint64_t)st.st_size,
				 mi.sha256[0] ? mi.sha256 : NULL, etag);
	if (err == -EBADMSG && !s3_client__last_error(c)->http_status)
		goto bad_sha;
	if (!err)
		err = s3__put_mem(c, mkey, mi.text, mi.text_len, "application/json");
	if (err) {
		*cause = classify(c, err);
		goto out;
	}
	*sent = (uint64_t)st.st_size + mi.text_len;
	/* confirmed: out of the spool, the manifest first so that no manifest is ever left
	 * without its capture */
	if (unlink(manifest) && errno != ENOENT)
		elog("upload: cannot remove %s: %s\n", manifest, strerror(errno));
	if (unlink(capture) && errno != ENOENT)
		elog("upload: cannot remove %s: %s\n", capture, strerror(errno));
	fsync_dir_of(manifest);
	vlog("upload: %s -> s3://%s/%s\n", mi.capture, u->cfg.bucket, key);
	goto out;
bad_sha:
	elog("upload: %s does not match the sha256 of its manifest; left in the spool\n",
	     capture);
	*cause = CAUSE_SPOOL;
	err = -EBADMSG;
out:
	if (fd >= 0)
		close(fd);
	free(mi.text);
	return err;
}

static void observe_seconds(struct uploader *u, double s)
{
	size_t i;

	for (i = 0; i < NR_BUCKETS && s > seconds_buckets[i]; i++)
		;
	u->hist[i]++;
	u->seconds_sum += s;
	u->seconds_count++;
}

/* The next item due, marked busy; NULL when stopping. Waits as long as needed. */
static struct upload_item *next_item(struct uploader *u)
{
	struct upload_item *it;
	struct timespec ts;
	uint64_t now, soonest;

	pthread_mutex_lock(&u->lock);
	while (!u->stop) {
		now = now_ms();
		soonest = UINT64_MAX;
		for (it = u->queue; it; it = it->next) {
			if (it->busy)
				continue;
			if (it->not_before_ms <= now) {
				it->busy = true;
				pthread_mutex_unlock(&u->lock);
				return it;
			}
			if (it->not_before_ms < soonest)
				soonest = it->not_before_ms;
		}
		clock_gettime(CLOCK_REALTIME, &ts);
		/* at most 10 s asleep: then the spool is scanned again (a manifest the daemon
		 * did not announce, or one renamed into place by hand) */
		if (soonest == UINT64_MAX || soonest - now > 10000)
			soonest = now + 10000;
		ts.tv_sec += (soonest - now) / 1000;
		ts.tv_nsec += (long)((soonest - now) % 1000) * 1000000;
		if (ts.tv_nsec >= 1000000000) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000;
		}
		if (pthread_cond_timedwait(&u->cond, &u->lock, &ts) == ETIMEDOUT) {
			pthread_mutex_unlock(&u->lock);
			scan_spool(u);
			pthread_mutex_lock(&u->lock);
		}
	}
	pthread_mutex_unlock(&u->lock);
	return NULL;
}

static void finish_item(struct uploader *u, struct upload_item *done, int err,
			enum upload_cause cause, struct s3_client *c, uint64_t sent, double secs)
{
	struct upload_item **pp;
	char why[768];
	unsigned delay;

	pthread_mutex_lock(&u->lock);
	u->generation++;
	if (!err || cause == CAUSE_GONE) {
		for (pp = &u->queue; *pp; pp = &(*pp)->next) {
			if (*pp == done) {
				*pp = done->next;
				break;
			}
		}
		if (!err) {
			u->uploads_ok++;
			u->bytes_total += sent;
			observe_seconds(u, secs);
			/* the store works again: a later failure is news, log it again */
			memset(u->cause_logged, 0, sizeof(u->cause_logged));
		}
		pthread_mutex_unlock(&u->lock);
		free(done->manifest);
		free(done);
		return;
	}
	if (err == -ECANCELED) {
		done->busy = false;
		pthread_mutex_unlock(&u->lock);
		return;
	}
	u->uploads_failed++;
	u->errors[cause]++;
	done->failures++;
	if (cause == CAUSE_AUTH || cause == CAUSE_NO_BUCKET || cause == CAUSE_CHECKSUM ||
	    cause == CAUSE_SPOOL)
		delay = PERMANENT_REQUEUE_MS;
	else
		delay = s3_backoff_ms(done->failures, 1000, REQUEUE_MAX_MS, (uint32_t)rand());
	done->not_before_ms = now_ms() + delay;
	done->busy = false;
	if (!u->cause_logged[cause] && cause != CAUSE_SPOOL) {
		u->cause_logged[cause] = true;
		pthread_mutex_unlock(&u->lock);
		elog("upload: %s; captures stay in the spool and are retried\n",
		     s3_client__explain(c, why, sizeof(why)));
		return;
	}
	pthread_mutex_unlock(&u->lock);
}

static void *worker(void *arg)
{
	struct uploader *u = arg;
	struct s3_config sc = {
		.endpoint = u->cfg.endpoint, .region = u->cfg.region, .bucket = u->cfg.bucket,
		.path_style = u->cfg.path_style, .creds = u->creds, .ratelimit = u->ratelimit,
		.cancel = &u->stop, .max_attempts = 4, .backoff_max_ms = 4000,
	};
	struct s3_client *c = NULL;
	struct upload_item *it;
	struct timespec t0, t1;
	enum upload_cause cause;
	uint64_t sent;
	int err;

	err = s3_client__new(&sc, &c);
	explicit_bzero(&sc.creds, sizeof(sc.creds));
	if (err) {
		elog("upload: cannot set up an S3 client: %s\n", strerror(-err));
		return NULL;
	}
	while ((it = next_item(u))) {
		clock_gettime(CLOCK_MONOTONIC, &t0);
		err = upload_one(u, c, it->manifest, &cause, &sent);
		clock_gettime(CLOCK_MONOTONIC, &t1);
		finish_item(u, it, err, cause, c, sent,
			    (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9);
	}
	s3_client__free(c);
	return NULL;
}

int uploader__start(struct uploader *u)
{
	int i, err;

	if (u->threads)
		return -EALREADY;
	scan_spool(u);
	u->threads = calloc(u->cfg.concurrency, sizeof(*u->threads));
	if (!u->threads)
		return -ENOMEM;
	for (i = 0; i < u->cfg.concurrency; i++) {
		err = -pthread_create(&u->threads[i], NULL, worker, u);
		if (err)
			return err;
		u->nr_threads++;
	}
	return 0;
}

int uploader__pending(struct uploader *u, uint64_t *files, uint64_t *bytes)
{
	struct upload_item *it;

	*files = *bytes = 0;
	pthread_mutex_lock(&u->lock);
	for (it = u->queue; it; it = it->next) {
		(*files)++;
		*bytes += it->bytes;
	}
	pthread_mutex_unlock(&u->lock);
	return 0;
}

uint64_t uploader__generation(struct uploader *u)
{
	uint64_t g;

	pthread_mutex_lock(&u->lock);
	g = u->generation;
	pthread_mutex_unlock(&u->lock);
	return g;
}

int uploader__write_metrics(struct uploader *u, FILE *out)
{
	uint64_t files = 0, bytes = 0, cum = 0;
	size_t i;

	uploader__pending(u, &files, &bytes);
	pthread_mutex_lock(&u->lock);
	fprintf(out,
		"# HELP ptbpf_uploads_total Captures confirmed by the store (ok) and failed upload "
		"attempts (failed).\n"
		"# TYPE ptbpf_uploads_total counter\n"
		"ptbpf_uploads_total{result=\"ok\"} %" PRIu64 "\n"
		"ptbpf_uploads_total{result=\"failed\"} %" PRIu64 "\n"
		"# HELP ptbpf_upload_bytes_total Bytes of captures and manifests confirmed by the store.\n"
		"# TYPE ptbpf_upload_bytes_total counter\n"
		"ptbpf_upload_bytes_total %" PRIu64 "\n"
		"# HELP ptbpf_upload_multipart_parts_total Parts of multipart uploads sent (sent), "
		"or found in the store when an upload a previous run began was resumed (resumed).\n"
		"# TYPE ptbpf_upload_multipart_parts_total counter\n"
		"ptbpf_upload_multipart_parts_total{result=\"sent\"} %" PRIu64 "\n"
		"ptbpf_upload_multipart_parts_total{result=\"resumed\"} %" PRIu64 "\n"
		"# HELP ptbpf_upload_seconds Time to upload one capture and its manifest.\n"
		"# TYPE ptbpf_upload_seconds histogram\n",
		u->uploads_ok, u->uploads_failed, u->bytes_total, u->parts_sent, u->parts_resumed);
	for (i = 0; i < NR_BUCKETS; i++) {
		cum += u->hist[i];
		fprintf(out, "ptbpf_upload_seconds_bucket{le=\"%g\"} %" PRIu64 "\n",
			seconds_buckets[i], cum);
	}
	fprintf(out,
		"ptbpf_upload_seconds_bucket{le=\"+Inf\"} %" PRIu64 "\n"
		"ptbpf_upload_seconds_sum %.6f\n"
		"ptbpf_upload_seconds_count %" PRIu64 "\n"
		"# HELP ptbpf_upload_queue_files Captures waiting for upload (or being sent).\n"
		"# TYPE ptbpf_upload_queue_files gauge\n"
		"ptbpf_upload_queue_files %" PRIu64 "\n"
		"# HELP ptbpf_upload_queue_bytes Bytes of the captures waiting for upload.\n"
		"# TYPE ptbpf_upload_queue_bytes gauge\n"
		"ptbpf_upload_queue_bytes %" PRIu64 "\n"
		"# HELP ptbpf_upload_errors_total Failed upload attempts, by cause.\n"
		"# TYPE ptbpf_upload_errors_total counter\n",
		u->seconds_count, u->seconds_sum, u->seconds_count, files, bytes);
	for (i = 0; i < NR_CAUSES; i++)
		fprintf(out, "ptbpf_upload_errors_total{cause=\"%s\"} %" PRIu64 "\n",
			cause_names[i], u->errors[i]);
	pthread_mutex_unlock(&u->lock);
	return ferror(out) ? -EIO : 0;
}

void upload_config_clear(struct upload_config *cfg)
{
	free(cfg->endpoint);
	free(cfg->region);
	free(cfg->bucket);
	free(cfg->prefix);
	free(cfg->credentials_file);
	memset(cfg, 0, sizeof(*cfg));
}

void uploader__free(struct uploader *u)
{
	struct upload_item *it, *next;
	int i;

	if (!u)
		return;
	pthread_mutex_lock(&u->lock);
	u->stop = true;
	pthread_cond_broadcast(&u->cond);
	pthread_mutex_unlock(&u->lock);
	for (i = 0; i < u->nr_threads; i++)
		pthread_join(u->threads[i], NULL);
	free(u->threads);
	for (it = u->queue; it; it = next) {
		next = it->next;
		free(it->manifest);
		free(it);
	}
	s3_ratelimit__free(u->ratelimit);
	explicit_bzero(&u->creds, sizeof(u->creds));
	upload_config_clear(&u->cfg);
	free(u->spool_dir);
	free(u->host);
	pthread_cond_destroy(&u->cond);
	pthread_mutex_destroy(&u->lock);
	free(u);
}
