// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "output.h"

static const char *const known_exts[] = { ".fxt.gz", ".fxt", ".data" };

/* Length of `path` without its known extension. */
static size_t stem_len(const char *path, const char **ext)
{
	size_t len = strlen(path), i;

	for (i = 0; i < sizeof(known_exts) / sizeof(known_exts[0]); i++) {
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

static int check_dir_writable(const char *path)
{
	char *copy = strdup(path), *dir;
	int err = 0;

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

int output_plan__init(struct output_plan *p, const char *output, bool keep, const char *keep_path,
		      const char *comm, pid_t pid, time_t start, bool numbered_files)
{
	char stamp[32], name[64];
	struct tm tm;
	size_t i;
	int err;

	*p = (struct output_plan){ .numbered = numbered_files };
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
		if (asprintf(&p->fxt, "ptbpf-%s-%d-%s.fxt", name, (int)pid, stamp) < 0)
			p->fxt = NULL;
	}
	if (!p->fxt)
		return -ENOMEM;
	if (keep) {
		p->data = keep_path ? strdup(keep_path) : output_replace_ext(p->fxt, ".data");
		if (!p->data) {
			err = -ENOMEM;
			goto err_out;
		}
		err = check_dir_writable(p->data);
		if (err)
			goto err_out;
	}
	err = check_dir_writable(p->fxt);
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

int output_move_aside(const char *path)
{
	char old[PATH_MAX];

	if (access(path, F_OK))
		return 0;
	if (snprintf(old, sizeof(old), "%s.old", path) >= (int)sizeof(old)) {
		elog("%s exists and cannot be moved aside: its name with .old is too long\n", path);
		return -ENAMETOOLONG;
	}
	if (rename(path, old)) {
		int err = -errno;

		elog("%s exists and cannot be moved aside to %s: %s\n", path, old, strerror(-err));
		return err;
	}
	elog("%s existed: moved to %s\n", path, old);
	return 0;
}
