// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "array.h"
#include "log.h"
#include "output_plan.h"

static const char *const known_exts[] = { ".fxt.gz", ".fxt", ".data" };

/* Length of `path` without its known extension. */
static size_t stem_len(const char *path, const char **ext)
{
	size_t len = strlen(path), i;

	for (i = 0; i < ARRAY_SIZE(known_exts); i++) {
		size_t el = strlen(known_exts[i]);

		if (len > el && !strcmp(path + len - el, known_exts[i])) {
			if (ext)
				*ext = path + len - el;
			return len - el;
		}
	}
	if (ext)
		*ext = path + len;
	return len;
}

char *output_replace_ext(const char *path, const char *ext)
{
	char *out;

	if (asprintf(&out, "%.*s%s", (int)stem_len(path, NULL), path, ext) < 0)
		return NULL;
	return out;
}

static char *numbered(const char *path, unsigned n)
{
	const char *ext;
	size_t stem = stem_len(path, &ext);
	char *out;

	if (asprintf(&out, "%.*s.%u%s", (int)stem, path, n, ext) < 0)
		return NULL;
	return out;
}

int output_check_path(const char *path, bool streamed)
{
	char *copy, *dir;
	int err = 0;
	struct stat st;

	if (!stat(path, &st) && S_ISDIR(st.st_mode)) {
		elog("cannot write to %s: it is a directory (give a file name)\n", path);
		return -EISDIR;
	}
	if (!stat(path, &st) && !S_ISREG(st.st_mode)) {
		/* /dev/null, a FIFO: written in place, never moved aside or renamed over */
		if (!streamed) {
			elog("cannot write to %s: not a regular file (a perf.data is written whole "
			     "and renamed into place: give a file name)\n", path);
			return -EINVAL;
		}
		if (access(path, W_OK)) {
			err = -errno;
			elog("cannot write to %s: %s\n", path, strerror(-err));
		}
		return err;
	}
	copy = strdup(path);
	if (!copy)
		return -ENOMEM;
	dir = dirname(copy);
	if (access(dir, W_OK | X_OK)) {
		err = -errno;
		elog("cannot write to %s: %s%s\n", *dir ? dir : ".", strerror(-err),
		     err == -ENOENT ? " (create the directory first)" : "");
	}
	free(copy);
	return err;
}

/*
 * A path that names a directory: one that exists, or ends in '/'. -o DIR means "the
 * default-named file in DIR" (never: move DIR aside and write a file in its place).
 */
static bool names_dir(const char *path)
{
	size_t len = strlen(path);
	struct stat st;

	return (len && path[len - 1] == '/') || (!stat(path, &st) && S_ISDIR(st.st_mode));
}

int output_plan__init(struct output_plan *p, const char *output, bool keep, const char *keep_path,
		      const char *comm, pid_t pid, time_t start, bool numbered_files)
{
	char stamp[32], name[64];
	const char *dir = NULL;
	struct tm tm;
	size_t i;
	int err;

	*p = (struct output_plan){ .numbered = numbered_files };
	if (output && names_dir(output)) {
		dir = output;
		output = NULL;
	}
	if (output) {
		p->fxt = strdup(output);
	} else {
		/* comm may hold anything a process names itself: keep the name a plain file name. */
		snprintf(name, sizeof(name), "%s", comm && *comm ? comm : "target");
		for (i = 0; name[i]; i++)
			if (name[i] == '/' || name[i] == ' ' || (unsigned char)name[i] < 0x20)
				name[i] = '_';
		localtime_r(&start, &tm);
		strftime(stamp, sizeof(stamp), "%Y%m%d-%H%M%S", &tm);
		if (asprintf(&p->fxt, "%s%sptbpf-%s-%d-%s.fxt", dir ? dir : "",
			     dir && dir[strlen(dir) - 1] != '/' ? "/" : "", name, (int)pid, stamp) < 0)
			p->fxt = NULL;
	}
	if (!p->fxt)
		return -ENOMEM;
	if (keep) {
		char *base = keep_path && names_dir(keep_path) ? strrchr(p->fxt, '/') : NULL;

		if (keep_path && names_dir(keep_path)) {
			/* the FXT's default name, with .data, in that directory */
			if (asprintf(&p->data, "%s%s%.*s.data", keep_path,
				     keep_path[strlen(keep_path) - 1] != '/' ? "/" : "",
				     (int)stem_len(base ? base + 1 : p->fxt, NULL),
				     base ? base + 1 : p->fxt) < 0)
				p->data = NULL;
		} else {
			p->data = keep_path ? strdup(keep_path) : output_replace_ext(p->fxt, ".data");
		}
		if (!p->data) {
			err = -ENOMEM;
			goto err_out;
		}
		err = output_check_path(p->data, false);
		if (err)
			goto err_out;
	}
	err = output_check_path(p->fxt, true);
	if (err)
		goto err_out;
	return 0;

err_out:
	output_plan__free(p);
	return err;
}

void output_plan__free(struct output_plan *p)
{
	free(p->fxt);
	free(p->data);
	p->fxt = p->data = NULL;
}

int output_plan__paths(const struct output_plan *p, unsigned n, char **fxt, char **data)
{
	*fxt = p->numbered ? numbered(p->fxt, n) : strdup(p->fxt);
	*data = NULL;
	if (!*fxt)
		return -ENOMEM;
	if (p->data) {
		*data = p->numbered ? numbered(p->data, n) : strdup(p->data);
		if (!*data) {
			free(*fxt);
			*fxt = NULL;
			return -ENOMEM;
		}
	}
	return 0;
}

/* Backups are numbered: FILE.old, FILE.old.2, FILE.old.3... none is ever overwritten. */
#define MAX_BACKUPS 1000

int output_move_aside(const char *path)
{
	char old[PATH_MAX];
	struct stat st;
	unsigned n;

	/* Only a file is kept: a device (-o /dev/null) or a FIFO is written into as it is. */
	if (stat(path, &st) || !S_ISREG(st.st_mode))
		return 0;
	for (n = 1; n <= MAX_BACKUPS; n++) {
		int len = n == 1 ? snprintf(old, sizeof(old), "%s.old", path)
				 : snprintf(old, sizeof(old), "%s.old.%u", path, n);

		if (len >= (int)sizeof(old)) {
			elog("%s exists and cannot be moved aside: its name with .old is too "
			     "long\n", path);
			return -ENAMETOOLONG;
		}
		if (access(old, F_OK) && errno == ENOENT)
			break;
	}
	if (n > MAX_BACKUPS) {
		elog("%s exists and %s.old to .old.%u too: remove old backups\n", path, path,
		     MAX_BACKUPS);
		return -EEXIST;
	}
	if (rename(path, old)) {
		int err = -errno;

		elog("%s exists and cannot be moved aside to %s: %s\n", path, old, strerror(-err));
		return err;
	}
	elog("%s existed: moved to %s\n", path, old);
	return 0;
}
