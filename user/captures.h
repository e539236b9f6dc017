/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Captures in S3-compatible storage, for `ptbpf captures` and `ptbpf decode s3://`. */
#ifndef PTBPF_CAPTURES_H
#define PTBPF_CAPTURES_H

#include <stddef.h>

struct s3_client;

/* --config, --s3-endpoint, --region: an argp child whose input is a struct s3_cli_opts. */
struct s3_cli_opts {
	const char *config;		/* the daemon's YAML (its upload: section) */
	const char *endpoint;
	const char *region;
};
extern const struct argp s3_cli_argp;

/* A client for `bucket` from the options, the config file and the AWS_* environment;
 * errors are printed. prefix_out (may be NULL): the config's upload prefix. */
int s3_cli_client(const struct s3_cli_opts *o, const char *bucket, struct s3_client **out,
		  char **prefix_out);
/* Download the capture `key` (NAME.perf.data.zst, NAME.json or NAME) and its manifest into
 * dir, checking the capture's sha256 against the manifest; nothing is left on failure.
 * capture_path receives the capture's path. Errors are printed. */
int captures_fetch(struct s3_client *c, const char *bucket, const char *key, const char *dir,
		   char *capture_path, size_t size);

#endif /* PTBPF_CAPTURES_H */
