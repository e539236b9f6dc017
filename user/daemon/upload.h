/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The daemon's uploader: captures the daemon spooled (SPOOL/<rule>/<name>.perf.data.zst
 * and the <name>.json manifest, renamed into place last) go to S3-compatible storage as
 *   PREFIX/v1/<rule>/<yyyy>/<mm>/<dd>/<host>/<name>.perf.data.zst  (then <name>.json)
 * (fleet_key() of user/s3/fleet_layout.h)
 * and leave the spool once the store confirmed them (ETag = MD5 of what was sent, the
 * body's SHA-256 checked by the server). Over 16 MiB, multipart with parts retried on
 * their own; the upload id and the confirmed parts are kept beside the capture
 * (SPOOL_MULTIPART_EXT), so an upload a killed daemon or a store outage interrupted
 * resumes with the parts the store does not hold yet; an object under its final name is
 * always complete.
 */
#ifndef PTBPF_UPLOAD_H
#define PTBPF_UPLOAD_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

struct upload_config {            /* the YAML `upload:` section, parsed by the daemon */
	char *endpoint, *region, *bucket, *prefix;  /* s3: {...} */
	bool path_style;
	char *credentials_file;      /* NULL: AWS_* env, then ~/.aws/credentials */
	uint64_t max_bytes_per_second; /* 0 = unlimited */
	int concurrency;             /* >= 1 */
};

/* Free the strings of `cfg` and zero it. */
void upload_config_clear(struct upload_config *cfg);

struct uploader;

int  uploader__new(const struct upload_config *cfg, const char *spool_dir, const char *host,
		   struct uploader **out);
/* threads; scans the spool for manifests not yet uploaded (resumes after restart) */
int  uploader__start(struct uploader *u);
/* a capture just spooled */
void uploader__enqueue(struct uploader *u, const char *manifest_path);
/* Prometheus text: ptbpf_upload* families */
int  uploader__write_metrics(struct uploader *u, FILE *out);
/* A number that changes whenever a metric does (the daemon then publishes them). */
uint64_t uploader__generation(struct uploader *u);
/* stops threads; safe on NULL */
void uploader__free(struct uploader *u);

/* Files the uploader has queued or is sending (0 once the spool is drained). */
int uploader__pending(struct uploader *u, uint64_t *files, uint64_t *bytes);

#endif /* PTBPF_UPLOAD_H */
