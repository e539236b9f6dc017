/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The spool: SPOOL/<rule>/<name>.perf.data.zst plus SPOOL/<rule>/<name>.json (the
 * manifest), each written as .<file>.tmp in the same directory, fsynced, renamed, and the
 * directory fsynced; the manifest last, so a .json present means its capture is complete
 * (the uploader, issue 14, relies on it). Directories 0700, files 0600. Anything
 * starting with '.' is in progress; spool__open() removes it, and captures without a
 * manifest, which only a crash leaves.
 *
 * The uploader keeps the state of a multipart upload beside its capture, as
 * <name>.perf.data.zst.multipart (SPOOL_MULTIPART_EXT): it goes with the capture (quota
 * eviction) and one whose capture is gone is removed at open.
 */
#ifndef PTBPF_DAEMON_SPOOL_H
#define PTBPF_DAEMON_SPOOL_H

#include <stddef.h>
#include <stdint.h>

#define SPOOL_MULTIPART_EXT ".multipart"

struct json_object;
struct spool;

struct spool_usage {
	uint64_t bytes;		/* of complete captures (capture, manifest, decoded trace) */
	uint64_t files;		/* complete captures */
};

/*
 * snprintf for paths, for the daemon's room: -ENAMETOOLONG instead of a silently cut
 * path (and no -Wformat-truncation guesswork at each call).
 */
int pathf(char *buf, size_t size, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Write `obj` to `path` (in a spool directory) as the spool writes its own files: a
 * temporary .NAME.tmp beside it (spool__open() removes one a crash left), fsync, rename,
 * the directory fsynced. 0 or -errno. */
int spool_write_json(const char *path, struct json_object *obj);

/* Create (0700) or check the spool, remove what a crash left. */
int spool__open(const char *dir, uint64_t max_bytes, uint64_t max_files, struct spool **out);
void spool__free(struct spool *s);
void spool__set_quota(struct spool *s, uint64_t max_bytes, uint64_t max_files);

/*
 * Compress the perf.data `perfdata` into SPOOL/<rule>/<name>.perf.data.zst, copy `fxt`
 * (a decoded trace, or NULL) beside it as <name>.fxt, add "capture", "bytes" and
 * "sha256" to `manifest` and write it as <name>.json. Then evict the oldest captures
 * over the quota (their number added to *evicted). On failure nothing of this capture is
 * left and -errno is returned (-ENOSPC, -EROFS, -EACCES...). The manifest's path is
 * copied to `manifest_path` (for the uploader).
 */
int spool__add(struct spool *s, const char *rule, const char *name, const char *perfdata,
	       const char *fxt, struct json_object *manifest, char *manifest_path,
	       size_t manifest_path_size, uint64_t *stored_bytes, uint64_t *evicted);

/* Scan the spool: complete captures and their bytes. */
int spool__usage(struct spool *s, struct spool_usage *u);
const char *spool__dir(const struct spool *s);

#endif /* PTBPF_DAEMON_SPOOL_H */
