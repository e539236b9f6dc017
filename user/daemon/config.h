/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The daemon's configuration: one YAML file plus every *.yaml of a drop-in directory
 * (name order), loaded with libcyaml into the structs below and checked whole. Every
 * error names the file and the line. Files not owned by root or writable by group or
 * others are refused (sshd's StrictModes): they would let a non-root user make a root
 * daemon probe any binary.
 */
#ifndef PTBPF_DAEMON_CONFIG_H
#define PTBPF_DAEMON_CONFIG_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "cli.h"

#include "upload.h"

struct label {
	char *key, *value;
};

enum rule_backend {
	RULE_BACKEND_AUTO = 0,
	RULE_BACKEND_PT,
	RULE_BACKEND_SINGLESTEP,
	RULE_BACKEND_EVENTS_ONLY,
};

/* How a `decode: host` rule's captures are decoded: as `ptbpf decode`'s flags. */
enum rule_decoder {
	RULE_DECODER_FAST = 0,		/* the default: the fast path */
	RULE_DECODER_NO_FAST,		/* --no-fast: libipt's block decoder alone */
	RULE_DECODER_VERIFY_FAST,	/* --verify-fast: both ways, failing at a difference */
};

struct rule {
	char *name;
	char *file;			/* where it was defined */
	int line;
	/* match: all given must hold */
	char *binary, *comm, *cgroup, *systemd_unit;
	uint32_t pid;
	/* the capture command line the trigger stands for (dry-run style, parsed) */
	struct capture_opts opts;
	char *trigger_desc;		/* "--uprobe X --latency-over 5ms" as given */
	/* capture */
	enum rule_backend backend;
	uint64_t buffer_size;
	bool kernel;
	const char *timing;		/* --timing tsc|mtc|cyc, a literal; NULL: the default */
	/* budget */
	uint64_t max_per_hour, max_per_day;	/* 0: none */
	uint64_t cooldown_ns;
	double skip_probability;
	uint64_t max_bytes_per_day;		/* 0: none */
	bool decode_host;
	enum rule_decoder decoder;	/* with decode_host */
	struct label *labels;
	unsigned nr_labels;
	char *fingerprint;		/* everything above: a reload re-arms a rule only if it changed */
};

struct config {
	char *path;			/* the main file */
	char *rules_dir;		/* drop-in directory (NULL: none) */
	char **files;			/* every file read, for messages */
	unsigned nr_files;
	struct label *host_labels;
	unsigned nr_host_labels;
	char *spool_dir;
	uint64_t spool_max_bytes, spool_max_files;
	char *textfile_dir;		/* NULL: no textfile */
	char *listen;			/* "127.0.0.1:PORT", NULL: no HTTP */
	bool listen_any;		/* metrics.allow_remote: listen beyond loopback */
	bool log_json;			/* log: json (default) | text */
	uint64_t max_captures_per_hour;	/* daemon-wide budget; 0: none */
	uint64_t max_bytes_per_day;
	double decode_cpu_share;	/* share of one core decoding may use (decode: host) */
	bool have_upload;
	struct upload_config upload;
	struct rule *rules;
	unsigned nr_rules;
};

/*
 * Load `path` and, if it exists, `rules_dir` (NULL: "rules.d" beside the file). Every
 * error is printed (elog) as "FILE:LINE: what is wrong"; returns 0, -EINVAL (the
 * configuration is wrong), -EPERM (StrictModes refused a file) or -errno.
 */
int config_load(const char *path, const char *rules_dir, struct config **out);
void config_free(struct config *c);
/*
 * The upload: section alone of `path` (the same schema and checks, no StrictModes, rules
 * not read): what `ptbpf captures --config` and `decode s3://` need away from the daemon.
 * Errors printed as config_load()'s; returns 0 or -EINVAL/-ENOMEM.
 */
int config_load_upload(const char *path, struct upload_config *out);
/* Free what a rule holds and zero it (config_free() then skips it). */
void rule_clear(struct rule *r);

/* "fast", "no-fast", "verify-fast". */
const char *rule_decoder_name(enum rule_decoder d);
/* "auto", "pt", "singlestep", "events-only". */
const char *rule_backend_name(enum rule_backend b);

#endif /* PTBPF_DAEMON_CONFIG_H */
