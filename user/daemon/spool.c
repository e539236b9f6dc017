// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <json-c/json.h>
#include <zstd.h>

#include "log.h"
#include "s3_libs.h"
#include "spool.h"

#define ZST_EXT ".perf.data.zst"
#define JSON_EXT ".json"
#define FXT_EXT ".fxt"
/* Fast enough not to delay the next capture; ~4x on PT and sideband. */
#define ZSTD_LEVEL 3

struct spool {
	char *dir;
	uint64_t max_bytes, max_files;
};

int pathf(char *buf, size_t size, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, size, fmt, ap);
	va_end(ap);
	return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : 0;
}

const char *spool__dir(const struct spool *s)
{
	return s->dir;
}

static int fsync_dir(const char *dir)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC), err = 0;

	if (fd < 0)
		return -errno;
	if (fsync(fd) < 0)
		err = -errno;
	close(fd);
	return err;
}

static bool has_suffix(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);

	return n >= m && !strcmp(s + n - m, suffix);
}

/* Remove in-progress files and captures without a manifest from one rule's directory. */
static void clean_rule_dir(const char *rdir)
{
	char p[PATH_MAX], m[PATH_MAX];
	struct dirent *d;
	DIR *dir = opendir(rdir);

	if (!dir)
		return;
	while ((d = readdir(dir))) {
		if (!strcmp(d->d_name, ".") || !strcmp(d->d_name, ".."))
			continue;
		pathf(p, sizeof(p), "%s/%s", rdir, d->d_name);
		if (d->d_name[0] == '.') {
			if (!unlink(p))
				elog("spool: removed %s, left in progress by a previous instance\n", p);
			continue;
		}
		if (has_suffix(d->d_name, ZST_EXT SPOOL_MULTIPART_EXT)) {
			/* an upload's state: kept while its capture is */
			pathf(m, sizeof(m), "%s/%.*s", rdir,
			      (int)(strlen(d->d_name) - strlen(SPOOL_MULTIPART_EXT)), d->d_name);
			if (access(m, F_OK) && !unlink(p))
				elog("spool: removed %s: its capture is gone\n", p);
			continue;
		}
		if (has_suffix(d->d_name, ZST_EXT) || has_suffix(d->d_name, FXT_EXT)) {
			size_t base = strlen(d->d_name) - strlen(has_suffix(d->d_name, ZST_EXT) ?
								 ZST_EXT : FXT_EXT);

			pathf(m, sizeof(m), "%s/%.*s" JSON_EXT, rdir, (int)base, d->d_name);
			if (access(m, F_OK) && !unlink(p))
				elog("spool: removed %s: its manifest was never written (a previous "
				     "instance stopped while spooling it)\n", p);
		}
	}
	closedir(dir);
	fsync_dir(rdir);
}

int spool__open(const char *dir, uint64_t max_bytes, uint64_t max_files, struct spool **out)
{
	struct spool *s;
	struct dirent *d;
	struct stat st;
	DIR *top;
	int err;

	*out = NULL;
	if (mkdir(dir, 0700) < 0 && errno != EEXIST) {
		err = -errno;
		elog("spool %s: cannot create: %s\n", dir, strerror(errno));
		return err;
	}
	if (stat(dir, &st) < 0 || !S_ISDIR(st.st_mode)) {
		elog("spool %s: not a directory\n", dir);
		return -ENOTDIR;
	}
	/* captures hold addresses, names and probe arguments: root's alone */
	if ((st.st_mode & 077) && chmod(dir, 0700) < 0) {
		err = -errno;
		elog("spool %s: cannot make it 0700: %s\n", dir, strerror(errno));
		return err;
	}
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->dir = strdup(dir);
	if (!s->dir) {
		free(s);
		return -ENOMEM;
	}
	spool__set_quota(s, max_bytes, max_files);
	top = opendir(dir);
	if (top) {
		while ((d = readdir(top))) {
			char p[PATH_MAX];

			if (!strcmp(d->d_name, ".") || !strcmp(d->d_name, ".."))
				continue;
			snprintf(p, sizeof(p), "%s/%s", dir, d->d_name);
			if (d->d_name[0] == '.') {
				if (!unlink(p))
					elog("spool: removed %s, left in progress by a previous "
					     "instance\n", p);
				continue;
			}
			if (!stat(p, &st) && S_ISDIR(st.st_mode))
				clean_rule_dir(p);
		}
		closedir(top);
	}
	*out = s;
	return 0;
}

void spool__free(struct spool *s)
{
	if (!s)
		return;
	free(s->dir);
	free(s);
}

void spool__set_quota(struct spool *s, uint64_t max_bytes, uint64_t max_files)
{
	s->max_bytes = max_bytes;
	s->max_files = max_files;
}

static void hex(const unsigned char *b, unsigned n, char *out)
{
	unsigned i;

	for (i = 0; i < n; i++)
		sprintf(out + 2 * i, "%02x", b[i]);
}

static int write_all(int fd, const void *buf, size_t n)
{
	const char *p = buf;

	while (n) {
		ssize_t w = write(fd, p, n);

		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += w;
		n -= w;
	}
	return 0;
}

/* Finish a temp file: fsync, close, rename into place; the directory is synced later. */
static int commit_tmp(int fd, const char *tmp, const char *final)
{
	int err = 0;

	if (fsync(fd) < 0)
		err = -errno;
	if (close(fd) < 0 && !err)
		err = -errno;
	if (!err && rename(tmp, final) < 0)
		err = -errno;
	return err;
}

/* `src` to read, and `tmp` created 0600 to write; both or neither. */
static int open_pair(const char *src, const char *tmp, int *in, int *out)
{
	int err;

	*in = open(src, O_RDONLY | O_CLOEXEC);
	if (*in < 0)
		return -errno;
	*out = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (*out < 0) {
		err = -errno;
		close(*in);
		return err;
	}
	return 0;
}

/* perf.data -> .tmp compressed, sha256 of what is stored. */
static int compress_file(const char *src, const char *tmp, char sha_hex[65], uint64_t *bytes)
{
	size_t in_cap = ZSTD_CStreamInSize(), out_cap = ZSTD_CStreamOutSize();
	unsigned char md[EVP_MAX_MD_SIZE];
	void *in_buf = NULL, *out_buf = NULL;
	EVP_MD_CTX *sha = NULL;
	ZSTD_CCtx *cc = NULL;
	int in = -1, out = -1, err = 0;
	unsigned md_len;
	bool last = false;

	*bytes = 0;
	err = lazylib_load(&lib_crypto) ?: open_pair(src, tmp, &in, &out);
	if (err)
		return err;
	cc = ZSTD_createCCtx();
	sha = sym_EVP_MD_CTX_new();
	in_buf = malloc(in_cap);
	out_buf = malloc(out_cap);
	if (!cc || !sha || !in_buf || !out_buf || !sym_EVP_DigestInit_ex(sha, sym_EVP_sha256(), NULL)) {
		err = -ENOMEM;
		goto out;
	}
	ZSTD_CCtx_setParameter(cc, ZSTD_c_compressionLevel, ZSTD_LEVEL);
	ZSTD_CCtx_setParameter(cc, ZSTD_c_checksumFlag, 1);
	while (!last) {
		ssize_t n = read(in, in_buf, in_cap);
		ZSTD_inBuffer ib = { in_buf, n > 0 ? (size_t)n : 0, 0 };
		size_t left;

		if (n < 0) {
			err = -errno;
			goto out;
		}
		last = n == 0;
		do {
			ZSTD_outBuffer ob = { out_buf, out_cap, 0 };

			left = ZSTD_compressStream2(cc, &ob, &ib, last ? ZSTD_e_end : ZSTD_e_continue);
			if (ZSTD_isError(left)) {
				err = -EIO;
				goto out;
			}
			err = write_all(out, out_buf, ob.pos);
			if (err)
				goto out;
			sym_EVP_DigestUpdate(sha, out_buf, ob.pos);
			*bytes += ob.pos;
		} while (last ? left != 0 : ib.pos < ib.size);
	}
	sym_EVP_DigestFinal_ex(sha, md, &md_len);
	hex(md, md_len, sha_hex);
	err = commit_tmp(out, tmp, tmp);	/* renamed by the caller */
	out = -1;
out:
	if (in >= 0)
		close(in);
	if (out >= 0)
		close(out);
	ZSTD_freeCCtx(cc);
	sym_EVP_MD_CTX_free(sha);
	free(in_buf);
	free(out_buf);
	return err;
}

static int copy_file(const char *src, const char *tmp)
{
	char buf[65536];
	int in, out, err = 0;
	ssize_t n;

	err = open_pair(src, tmp, &in, &out);
	if (err)
		return err;
	while ((n = read(in, buf, sizeof(buf))) > 0 && !err)
		err = write_all(out, buf, n);
	if (n < 0 && !err)
		err = -errno;
	close(in);
	if (err) {
		close(out);
		return err;
	}
	return commit_tmp(out, tmp, tmp);
}

static int write_manifest(const char *tmp, struct json_object *m)
{
	const char *text = json_object_to_json_string_ext(m, JSON_C_TO_STRING_PRETTY |
							  JSON_C_TO_STRING_NOSLASHESCAPE);
	int fd, err;

	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	err = write_all(fd, text, strlen(text));
	err = err ?: write_all(fd, "\n", 1);
	if (err) {
		close(fd);
		return err;
	}
	return commit_tmp(fd, tmp, tmp);
}

int spool_write_json(const char *path, struct json_object *obj)
{
	const char *text = json_object_to_json_string_ext(obj, JSON_C_TO_STRING_PLAIN |
							  JSON_C_TO_STRING_NOSLASHESCAPE);
	const char *slash = strrchr(path, '/');
	char tmp[PATH_MAX], dir[PATH_MAX];
	int fd, err;

	if (!slash)
		return -EINVAL;
	err = pathf(tmp, sizeof(tmp), "%.*s.%s.tmp", (int)(slash - path + 1), path, slash + 1);
	err = err ?: pathf(dir, sizeof(dir), "%.*s", (int)(slash - path), path);
	if (err)
		return err;
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	err = write_all(fd, text, strlen(text));
	if (err) {
		close(fd);
		unlink(tmp);
		return err;
	}
	err = commit_tmp(fd, tmp, path);
	if (err)
		unlink(tmp);
	return err ?: fsync_dir(dir);
}

struct entry {
	char base[PATH_MAX];	/* dir/name without extension */
	char name[256];		/* name, which starts with the time: sorts oldest first */
	uint64_t bytes;
};

static uint64_t file_size(const char *p)
{
	struct stat st;

	return stat(p, &st) ? 0 : (uint64_t)st.st_size;
}

/* Every complete capture (a manifest present), with its bytes. */
static int scan(struct spool *s, struct entry **out, size_t *nr)
{
	struct entry *e = NULL;
	size_t n = 0, cap = 0;
	struct dirent *d, *f;
	DIR *top, *rd;

	*out = NULL;
	*nr = 0;
	top = opendir(s->dir);
	if (!top)
		return -errno;
	while ((d = readdir(top))) {
		char rdir[PATH_MAX];

		if (d->d_name[0] == '.')
			continue;
		snprintf(rdir, sizeof(rdir), "%s/%s", s->dir, d->d_name);
		rd = opendir(rdir);
		if (!rd)
			continue;
		while ((f = readdir(rd))) {
			char p[PATH_MAX + 300];
			size_t len;

			if (f->d_name[0] == '.' || !has_suffix(f->d_name, JSON_EXT))
				continue;
			if (n == cap) {
				struct entry *ne = realloc(e, (cap = cap ? 2 * cap : 64) * sizeof(*e));

				if (!ne) {
					closedir(rd);
					closedir(top);
					free(e);
					return -ENOMEM;
				}
				e = ne;
			}
			len = strlen(f->d_name) - strlen(JSON_EXT);
			snprintf(e[n].name, sizeof(e[n].name), "%.*s", (int)len, f->d_name);
			pathf(e[n].base, sizeof(e[n].base), "%s/%s", rdir, e[n].name);
			snprintf(p, sizeof(p), "%s" JSON_EXT, e[n].base);
			e[n].bytes = file_size(p);
			snprintf(p, sizeof(p), "%s" ZST_EXT, e[n].base);
			e[n].bytes += file_size(p);
			snprintf(p, sizeof(p), "%s" FXT_EXT, e[n].base);
			e[n].bytes += file_size(p);
			n++;
		}
		closedir(rd);
	}
	closedir(top);
	*out = e;
	*nr = n;
	return 0;
}

int spool__usage(struct spool *s, struct spool_usage *u)
{
	struct entry *e;
	size_t n, i;
	int err;

	u->bytes = u->files = 0;
	err = scan(s, &e, &n);
	if (err)
		return err;
	for (i = 0; i < n; i++)
		u->bytes += e[i].bytes;
	u->files = n;
	free(e);
	return 0;
}

static int by_age(const void *a, const void *b)
{
	return strcmp(((const struct entry *)a)->name, ((const struct entry *)b)->name);
}

/* Remove the oldest captures until the spool is within its quota. */
static int enforce_quota(struct spool *s, uint64_t *evicted)
{
	uint64_t bytes = 0;
	struct entry *e;
	size_t n, i;
	int err;

	err = scan(s, &e, &n);
	if (err)
		return err;
	for (i = 0; i < n; i++)
		bytes += e[i].bytes;
	qsort(e, n, sizeof(*e), by_age);
	for (i = 0; i < n && ((s->max_bytes && bytes > s->max_bytes) ||
			      (s->max_files && n - i > s->max_files)); i++) {
		char p[PATH_MAX + 32];

		/* the manifest first: a capture without one is never taken as complete */
		snprintf(p, sizeof(p), "%s" JSON_EXT, e[i].base);
		unlink(p);
		snprintf(p, sizeof(p), "%s" ZST_EXT, e[i].base);
		unlink(p);
		snprintf(p, sizeof(p), "%s" ZST_EXT SPOOL_MULTIPART_EXT, e[i].base);
		unlink(p);
		snprintf(p, sizeof(p), "%s" FXT_EXT, e[i].base);
		unlink(p);
		bytes -= e[i].bytes;
		(*evicted)++;
		elog("spool: evicted %s (over the spool's quota)\n", e[i].base);
	}
	free(e);
	return 0;
}

int spool__add(struct spool *s, const char *rule, const char *name, const char *perfdata,
	       const char *fxt, struct json_object *manifest, char *manifest_path,
	       size_t manifest_path_size, uint64_t *stored_bytes, uint64_t *evicted)
{
	char rdir[PATH_MAX], tmp_zst[PATH_MAX], zst[PATH_MAX], tmp_fxt[PATH_MAX], fxt_path[PATH_MAX];
	char tmp_json[PATH_MAX], json[PATH_MAX], sha[65] = "";
	uint64_t bytes = 0;
	int err;

	snprintf(rdir, sizeof(rdir), "%s/%s", s->dir, rule);
	if (mkdir(rdir, 0700) < 0 && errno != EEXIST)
		return -errno;
	pathf(tmp_zst, sizeof(tmp_zst), "%s/.%s" ZST_EXT ".tmp", rdir, name);
	pathf(zst, sizeof(zst), "%s/%s" ZST_EXT, rdir, name);
	pathf(tmp_fxt, sizeof(tmp_fxt), "%s/.%s" FXT_EXT ".tmp", rdir, name);
	pathf(fxt_path, sizeof(fxt_path), "%s/%s" FXT_EXT, rdir, name);
	pathf(tmp_json, sizeof(tmp_json), "%s/.%s" JSON_EXT ".tmp", rdir, name);
	pathf(json, sizeof(json), "%s/%s" JSON_EXT, rdir, name);

	err = compress_file(perfdata, tmp_zst, sha, &bytes);
	if (err)
		goto fail;
	if (rename(tmp_zst, zst) < 0) {
		err = -errno;
		goto fail;
	}
	if (fxt) {
		err = copy_file(fxt, tmp_fxt);
		if (!err && rename(tmp_fxt, fxt_path) < 0)
			err = -errno;
		if (err)
			goto fail;
	}
	json_object_object_add(manifest, "capture", json_object_new_string(strrchr(zst, '/') + 1));
	json_object_object_add(manifest, "bytes", json_object_new_uint64(bytes));
	json_object_object_add(manifest, "sha256", json_object_new_string(sha));
	/* the capture is on disk before its manifest names it */
	err = fsync_dir(rdir);
	err = err ?: write_manifest(tmp_json, manifest);
	if (!err && rename(tmp_json, json) < 0)
		err = -errno;
	err = err ?: fsync_dir(rdir);
	if (err)
		goto fail;
	if (manifest_path)
		snprintf(manifest_path, manifest_path_size, "%s", json);
	*stored_bytes = bytes + file_size(json) + (fxt ? file_size(fxt_path) : 0);
	return enforce_quota(s, evicted);
fail:
	unlink(json);
	unlink(tmp_json);
	unlink(zst);
	unlink(tmp_zst);
	unlink(fxt_path);
	unlink(tmp_fxt);
	return err;
}
