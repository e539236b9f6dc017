// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Configuration loading: libcyaml maps the YAML onto the y_* structs (unknown keys, wrong
 * types and syntax errors come with libcyaml's line numbers), then each value is checked
 * and turned into struct config; errors found there get their line from a libyaml tree
 * of the same file (yamltree.c), which also holds the free-form label maps.
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>


#include "array.h"
#include "cli.h"
#include "config.h"
#include "daemon_libs.h"
#include "log.h"
#include "spool.h"
#include "triggers.h"
#include "yamltree.h"

/* ---- what libcyaml loads ---- */

struct y_match {
	char *binary, *comm, *cgroup, *systemd_unit;
	uint32_t pid;
};

struct y_trigger {
	char *uprobe, *latency_over, *runq_latency_over, *syscall_latency_over, *syscall;
	char *tracepoint, *kprobe;
	uint32_t nth;
};

struct y_capture {
	char *backend, *buffer_size, *timing;
	bool kernel;
};

struct y_budget {
	uint32_t max_per_hour, max_per_day;
	char *cooldown, *max_bytes_per_day;
	double skip_probability;
};

struct y_rule {
	char *name;
	struct y_match *match;
	struct y_trigger *trigger;
	struct y_capture *capture;
	struct y_budget *budget;
	char *decode, *decoder;
};

struct y_spool {
	char *dir, *max_bytes;
	uint32_t max_files;
};

struct y_metrics {
	char *textfile_dir, *listen;
	bool allow_remote;
};

struct y_daemon_budget {
	uint32_t max_captures_per_hour;
	char *max_bytes_per_day;
	double decode_cpu_share;
};

struct y_log {
	char *format;
};

struct y_s3 {
	char *endpoint, *region, *bucket, *prefix, *credentials_file;
	bool path_style;
};

struct y_upload {
	struct y_s3 *s3;
	char *max_bytes_per_second;
	uint32_t concurrency;
};

struct y_config {
	struct y_spool *spool;
	struct y_metrics *metrics;
	struct y_daemon_budget *budget;
	struct y_log *log;
	struct y_upload *upload;
	struct y_rule *rules;
	unsigned rules_count;
};

#define OPT CYAML_FLAG_OPTIONAL
#define STR(key, type, member) \
	CYAML_FIELD_STRING_PTR(key, CYAML_FLAG_POINTER | OPT, type, member, 0, CYAML_UNLIMITED)

static const cyaml_schema_field_t match_fields[] = {
	STR("binary", struct y_match, binary),
	STR("comm", struct y_match, comm),
	STR("cgroup", struct y_match, cgroup),
	STR("systemd_unit", struct y_match, systemd_unit),
	CYAML_FIELD_UINT("pid", OPT, struct y_match, pid),
	CYAML_FIELD_END
};

static const cyaml_schema_field_t trigger_fields[] = {
	STR("uprobe", struct y_trigger, uprobe),
	STR("latency_over", struct y_trigger, latency_over),
	STR("runq_latency_over", struct y_trigger, runq_latency_over),
	STR("syscall_latency_over", struct y_trigger, syscall_latency_over),
	STR("syscall", struct y_trigger, syscall),
	STR("tracepoint", struct y_trigger, tracepoint),
	STR("kprobe", struct y_trigger, kprobe),
	CYAML_FIELD_UINT("nth", OPT, struct y_trigger, nth),
	CYAML_FIELD_END
};

static const cyaml_schema_field_t capture_fields[] = {
	STR("backend", struct y_capture, backend),
	STR("buffer_size", struct y_capture, buffer_size),
	STR("timing", struct y_capture, timing),
	CYAML_FIELD_BOOL("kernel", OPT, struct y_capture, kernel),
	CYAML_FIELD_END
};

static const cyaml_schema_field_t budget_fields[] = {
	CYAML_FIELD_UINT("max_per_hour", OPT, struct y_budget, max_per_hour),
	CYAML_FIELD_UINT("max_per_day", OPT, struct y_budget, max_per_day),
	STR("cooldown", struct y_budget, cooldown),
	CYAML_FIELD_FLOAT("skip_probability", OPT, struct y_budget, skip_probability),
	STR("max_bytes_per_day", struct y_budget, max_bytes_per_day),
	CYAML_FIELD_END
};

static const cyaml_schema_field_t rule_fields[] = {
	CYAML_FIELD_STRING_PTR("name", CYAML_FLAG_POINTER, struct y_rule, name, 1, 64),
	CYAML_FIELD_MAPPING_PTR("match", CYAML_FLAG_POINTER | OPT, struct y_rule, match,
				match_fields),
	CYAML_FIELD_MAPPING_PTR("trigger", CYAML_FLAG_POINTER, struct y_rule, trigger,
				trigger_fields),
	CYAML_FIELD_MAPPING_PTR("capture", CYAML_FLAG_POINTER | OPT, struct y_rule, capture,
				capture_fields),
	CYAML_FIELD_MAPPING_PTR("budget", CYAML_FLAG_POINTER | OPT, struct y_rule, budget,
				budget_fields),
	STR("decode", struct y_rule, decode),
	STR("decoder", struct y_rule, decoder),
	CYAML_FIELD_IGNORE("labels", OPT),	/* free-form: read from the tree */
	CYAML_FIELD_END
};

static const cyaml_schema_value_t rule_schema = {
	CYAML_VALUE_MAPPING(CYAML_FLAG_DEFAULT, struct y_rule, rule_fields),
};

static const cyaml_schema_field_t spool_fields[] = {
	STR("dir", struct y_spool, dir),
	STR("max_bytes", struct y_spool, max_bytes),
	CYAML_FIELD_UINT("max_files", OPT, struct y_spool, max_files),
	CYAML_FIELD_END
};

static const cyaml_schema_field_t metrics_fields[] = {
	STR("textfile_dir", struct y_metrics, textfile_dir),
	STR("listen", struct y_metrics, listen),
	CYAML_FIELD_BOOL("allow_remote", OPT, struct y_metrics, allow_remote),
	CYAML_FIELD_END
};

static const cyaml_schema_field_t daemon_budget_fields[] = {
	CYAML_FIELD_UINT("max_captures_per_hour", OPT, struct y_daemon_budget,
			 max_captures_per_hour),
	STR("max_bytes_per_day", struct y_daemon_budget, max_bytes_per_day),
	CYAML_FIELD_FLOAT("decode_cpu_share", OPT, struct y_daemon_budget, decode_cpu_share),
	CYAML_FIELD_END
};

static const cyaml_schema_field_t log_fields[] = {
	STR("format", struct y_log, format),
	CYAML_FIELD_END
};

static const cyaml_schema_field_t s3_fields[] = {
	STR("endpoint", struct y_s3, endpoint),
	STR("region", struct y_s3, region),
	STR("bucket", struct y_s3, bucket),
	STR("prefix", struct y_s3, prefix),
	CYAML_FIELD_BOOL("path_style", OPT, struct y_s3, path_style),
	STR("credentials_file", struct y_s3, credentials_file),
	CYAML_FIELD_END
};

static const cyaml_schema_field_t upload_fields[] = {
	CYAML_FIELD_MAPPING_PTR("s3", CYAML_FLAG_POINTER, struct y_upload, s3, s3_fields),
	STR("max_bytes_per_second", struct y_upload, max_bytes_per_second),
	CYAML_FIELD_UINT("concurrency", OPT, struct y_upload, concurrency),
	CYAML_FIELD_END
};

#define RULES_FIELD \
	CYAML_FIELD_SEQUENCE("rules", CYAML_FLAG_POINTER | OPT, struct y_config, rules, \
			     &rule_schema, 0, CYAML_UNLIMITED)

static const cyaml_schema_field_t config_fields[] = {
	CYAML_FIELD_IGNORE("host_labels", OPT),
	CYAML_FIELD_MAPPING_PTR("spool", CYAML_FLAG_POINTER | OPT, struct y_config, spool,
				spool_fields),
	CYAML_FIELD_MAPPING_PTR("metrics", CYAML_FLAG_POINTER | OPT, struct y_config, metrics,
				metrics_fields),
	CYAML_FIELD_MAPPING_PTR("budget", CYAML_FLAG_POINTER | OPT, struct y_config, budget,
				daemon_budget_fields),
	CYAML_FIELD_MAPPING_PTR("log", CYAML_FLAG_POINTER | OPT, struct y_config, log, log_fields),
	CYAML_FIELD_MAPPING_PTR("upload", CYAML_FLAG_POINTER | OPT, struct y_config, upload,
				upload_fields),
	RULES_FIELD,
	CYAML_FIELD_END
};

/* A drop-in file holds rules only. */
static const cyaml_schema_field_t dropin_fields[] = {
	RULES_FIELD,
	CYAML_FIELD_END
};

static const cyaml_schema_value_t config_schema = {
	CYAML_VALUE_MAPPING(CYAML_FLAG_POINTER, struct y_config, config_fields),
};

static const cyaml_schema_value_t dropin_schema = {
	CYAML_VALUE_MAPPING(CYAML_FLAG_POINTER, struct y_config, dropin_fields),
};

/* ---- errors with file and line ---- */

struct load_ctx {
	struct config *c;
	const char *file;
	struct ynode *tree;
	int errors;
	/* libcyaml's messages of one load: the first line and the innermost position */
	char cyaml_msg[256];
	int cyaml_line;
};

static void __attribute__((format(printf, 3, 4))) cfg_err(struct load_ctx *lc, int line,
							   const char *fmt, ...)
{
	char msg[768];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (line > 0)
		elog("%s:%d: %s\n", lc->file, line, msg);
	else
		elog("%s: %s\n", lc->file, msg);
	lc->errors++;
}

/* The line of path "a", "b"... in the tree (numbers as "#3" for sequence items). */
static int line_of(const struct load_ctx *lc, int nr, ...)
{
	const struct ynode *n = lc->tree;
	int line = n ? n->line : 0;
	va_list ap;

	va_start(ap, nr);
	while (n && nr-- > 0) {
		const char *k = va_arg(ap, const char *);

		n = k[0] == '#' ? ytree_item(n, atoi(k + 1)) : ytree_get(n, k);
		if (n)
			line = n->line;
	}
	va_end(ap);
	return line;
}

static void config_cyaml_log(cyaml_log_t level, void *ctx, const char *fmt, va_list args)
{
	struct load_ctx *lc = ctx;
	char buf[256], *p;
	int line;

	vsnprintf(buf, sizeof(buf), fmt, args);
	buf[strcspn(buf, "\n")] = '\0';
	p = strstr(buf, "(line: ");
	if (p && sscanf(p, "(line: %d", &line) == 1) {
		if (!lc->cyaml_line)
			lc->cyaml_line = line;
		return;
	}
	if (strstr(buf, "Backtrace"))
		return;
	if (!lc->cyaml_msg[0]) {
		p = buf;
		if (!strncmp(p, "Load: ", 6))
			p += 6;
		snprintf(lc->cyaml_msg, sizeof(lc->cyaml_msg), "%s", p);
	}
}

/* ---- StrictModes ---- */

static int check_owner(const char *path, const struct stat *st, const char *what)
{
	if (st->st_uid != 0) {
		elog("%s: refused: %s owned by uid %u, not root: a non-root user could make the "
		     "daemon probe any program (fix: chown root %s)\n", path, what,
		     (unsigned)st->st_uid, path);
		return -EPERM;
	}
	if (st->st_mode & (S_IWGRP | S_IWOTH)) {
		elog("%s: refused: %s writable by %s (mode %04o): a non-root user could make the "
		     "daemon probe any program (fix: chmod go-w %s)\n", path, what,
		     st->st_mode & S_IWOTH ? "others" : "its group", st->st_mode & 07777, path);
		return -EPERM;
	}
	return 0;
}

static int strict_modes(const char *path, const char *what)
{
	struct stat st;

	if (stat(path, &st) < 0) {
		int err = -errno;

		elog("%s: cannot read the %s: %s\n", path, what, strerror(errno));
		return err;
	}
	return check_owner(path, &st, what);
}

/*
 * The directories above a root-only file must be root's too, as sshd's secure_filename()
 * checks: whoever can write to one of them can rename the file (or a directory below) away
 * and put their own in its place, whatever the file's own mode. One exception, unlike
 * sshd: a directory with the sticky bit owned by root (/tmp, 1777) is accepted, since
 * in it only an entry's owner (here root) may rename or remove that entry.
 */
static int check_dirs_above(char *p, const char *file, const char *what)
{
	struct stat st;
	char *slash;

	while ((slash = strrchr(p, '/'))) {
		if (slash == p)
			slash[1] = '\0';
		else
			*slash = '\0';
		if (stat(p, &st) < 0) {
			int err = -errno;

			elog("%s: cannot check the directory %s above the %s: %s\n", file, p, what,
			     strerror(errno));
			return err;
		}
		if (st.st_uid != 0) {
			elog("%s: refused: the directory %s above the %s is owned by uid %u, not "
			     "root: a non-root user could put their own in its place (fix: chown root %s)\n",
			     file, p, what, (unsigned)st.st_uid, p);
			return -EPERM;
		}
		if ((st.st_mode & (S_IWGRP | S_IWOTH)) && !(st.st_mode & S_ISVTX)) {
			elog("%s: refused: the directory %s above the %s is writable by %s (mode "
			     "%04o): a non-root user could put their own in its place (fix: chmod go-w %s)\n",
			     file, p, what, st.st_mode & S_IWOTH ? "others" : "its group",
			     st.st_mode & 07777, p);
			return -EPERM;
		}
		if (!strcmp(p, "/"))
			break;
	}
	return 0;
}

/*
 * Every directory above path up to /: those of its real path (symbolic links resolved,
 * as sshd does) and, for an absolute path, those it is named through (a link in a
 * writable directory could be pointed elsewhere).
 */
static int strict_parents(const char *path, const char *what)
{
	char p[PATH_MAX];
	int err;

	if (!realpath(path, p)) {
		err = -errno;
		elog("%s: cannot resolve the %s's path: %s\n", path, what, strerror(errno));
		return err;
	}
	err = check_dirs_above(p, path, what);
	if (err || path[0] != '/')
		return err;
	if (snprintf(p, sizeof(p), "%s", path) >= (int)sizeof(p))
		return -ENAMETOOLONG;
	return check_dirs_above(p, path, what);
}

/* ---- conversions ---- */

static char *xstrdup(const char *s)
{
	return s ? strdup(s) : NULL;
}

static int read_labels(struct load_ctx *lc, const struct ynode *map, const char *what,
		       struct label **out, unsigned *nr)
{
	unsigned i;

	*out = NULL;
	*nr = 0;
	if (!map)
		return 0;
	if (map->type != YNODE_MAP) {
		cfg_err(lc, map->line, "%s: expected a map of key: value", what);
		return 0;
	}
	*out = calloc(map->nr_children ?: 1, sizeof(**out));
	if (!*out)
		return -ENOMEM;
	for (i = 0; i < map->nr_children; i++) {
		const struct ynode *v = &map->children[i];
		const char *k = v->key;
		size_t j;

		if (v->type != YNODE_SCALAR) {
			cfg_err(lc, v->line, "%s.%s: expected a string value", what, k);
			continue;
		}
		/* Prometheus label names and JSON keys: [a-zA-Z_][a-zA-Z0-9_]* */
		for (j = 0; k[j]; j++)
			if (!(k[j] == '_' || (k[j] >= 'a' && k[j] <= 'z') ||
			      (k[j] >= 'A' && k[j] <= 'Z') || (j && k[j] >= '0' && k[j] <= '9')))
				break;
		if (!j || k[j]) {
			cfg_err(lc, v->line, "%s: invalid label name '%s' (letters, digits and _, "
				"not starting with a digit)", what, k);
			continue;
		}
		(*out)[*nr].key = strdup(k);
		(*out)[*nr].value = strdup(v->scalar);
		if (!(*out)[*nr].key || !(*out)[*nr].value)
			return -ENOMEM;
		(*nr)++;
	}
	return 0;
}

static uint64_t get_size(struct load_ctx *lc, int line, const char *what, const char *s,
			 uint64_t def)
{
	uint64_t v;

	if (!s)
		return def;
	if (parse_size(s, &v)) {
		cfg_err(lc, line, "%s: invalid size '%s' (bytes, or a number with K, M or G)",
			what, s);
		return def;
	}
	return v;
}

static uint64_t get_duration(struct load_ctx *lc, int line, const char *what, const char *s)
{
	uint64_t v;

	if (!s)
		return 0;
	if (parse_duration(s, &v)) {
		cfg_err(lc, line, "%s: invalid duration '%s' (a number with a unit: ns, us, ms, s)",
			what, s);
		return 0;
	}
	return v;
}

/* The messages cli_parse_capture() prints, caught to be given with the rule's line. */
struct caught {
	char msg[512];
};

static void catch_log(void *ctx, int level, const char *msg)
{
	struct caught *c = ctx;

	if (level != LOG_ERROR || c->msg[0])
		return;
	snprintf(c->msg, sizeof(c->msg), "%s", msg);
	c->msg[strcspn(c->msg, "\n")] = '\0';
}

#define MAX_RULE_ARGS 24

/*
 * The rule's trigger as the capture command line it stands for (the same syntax and
 * checks as the CLI's), parsed into r->opts: dry-run style, over the rule's pid or
 * the whole system.
 */
static int parse_trigger(struct load_ctx *lc, struct rule *r, const struct y_trigger *t,
			 int line)
{
	char *argv[MAX_RULE_ARGS], pid[16], nth[24], desc[1024] = "";
	int argc = 0, kinds = 0, i, err, saved_level = ptbpf_log_level;
	struct caught caught = {};
	log_sink_fn saved_sink;
	void *saved_ctx;

#define ARG(s) (argv[argc++] = (char *)(s))
	ARG("ptbpf");
	ARG("--dry-run");
	if (t->uprobe) {
		ARG("--uprobe");
		ARG(t->uprobe);
		kinds++;
		if (t->latency_over) {
			ARG("--latency-over");
			ARG(t->latency_over);
		}
	} else if (t->latency_over) {
		cfg_err(lc, line, "rule %s: trigger.latency_over needs trigger.uprobe (for the "
			"run queue: runq_latency_over)", r->name);
		return -EINVAL;
	}
	if (t->runq_latency_over) {
		ARG("--latency-over");
		ARG(t->runq_latency_over);
		kinds++;
	}
	if (t->syscall_latency_over) {
		ARG("--syscall-latency-over");
		ARG(t->syscall_latency_over);
		kinds++;
		if (t->syscall) {
			ARG("--syscall");
			ARG(t->syscall);
		}
	} else if (t->syscall) {
		cfg_err(lc, line, "rule %s: trigger.syscall needs trigger.syscall_latency_over",
			r->name);
		return -EINVAL;
	}
	if (t->tracepoint) {
		ARG("--tracepoint");
		ARG(t->tracepoint);
		kinds++;
	}
	if (t->kprobe) {
		ARG("--kprobe");
		ARG(t->kprobe);
		kinds++;
	}
	if (kinds != 1) {
		cfg_err(lc, line, "rule %s: trigger: give exactly one of uprobe, runq_latency_over, "
			"syscall_latency_over, tracepoint, kprobe", r->name);
		return -EINVAL;
	}
	if (t->nth > 1) {
		snprintf(nth, sizeof(nth), "%u", t->nth);
		ARG("--nth");
		ARG(nth);
	}
	for (i = 2; i < argc; i++)
		snprintf(desc + strlen(desc), sizeof(desc) - strlen(desc), "%s%s", i > 2 ? " " : "",
			 argv[i]);
	if (r->pid) {
		snprintf(pid, sizeof(pid), "%u", r->pid);
		ARG("-p");
		ARG(pid);
	} else {
		ARG("--system-wide");
	}
	argv[argc] = NULL;
#undef ARG
	r->trigger_desc = strdup(desc);
	if (!r->trigger_desc)
		return -ENOMEM;
	log_get_sink(&saved_sink, &saved_ctx);
	log_set_sink(catch_log, &caught);
	err = cli_parse_capture(argc, argv, &r->opts);
	/* the binary, the symbol, the tracepoint: as triggers__new() would find them */
	if (!err)
		err = triggers__check(&r->opts);
	log_set_sink(saved_sink, saved_ctx);
	ptbpf_log_level = saved_level;
	if (err) {
		char *m = caught.msg;

		if (!strncmp(m, "ptbpf: ", 7))
			m += 7;
		cfg_err(lc, line, "rule %s: trigger: %s", r->name, m[0] ? m : "invalid");
		return -EINVAL;
	}
	return 0;
}

static bool valid_rule_name(const char *s)
{
	size_t i;

	/* it names a spool directory and a metric label */
	for (i = 0; s[i]; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
		      (s[i] >= '0' && s[i] <= '9') || s[i] == '-' || s[i] == '_' ||
		      (s[i] == '.' && i)))
			return false;
	return i > 0;
}

/* enum rule_decoder's values, as a rule names them */
static const char *const decoder_names[] = { "fast", "no-fast", "verify-fast" };

static int convert_rule(struct load_ctx *lc, const struct y_rule *y, unsigned idx,
			struct rule *r)
{
	char ix[16];
	const struct ynode *labels;
	int line, err;
	unsigned i;

	snprintf(ix, sizeof(ix), "#%u", idx);
	line = line_of(lc, 2, "rules", ix);
	r->file = strdup(lc->file);
	r->line = line;
	r->name = strdup(y->name);
	if (!r->name || !r->file)
		return -ENOMEM;
	if (!valid_rule_name(y->name))
		cfg_err(lc, line_of(lc, 3, "rules", ix, "name"), "rule name '%s': use letters, "
			"digits, '-', '_' and '.' (it names the rule's spool directory)", y->name);
	for (i = 0; i < lc->c->nr_rules; i++)
		if (!strcmp(lc->c->rules[i].name, y->name) && &lc->c->rules[i] != r)
			cfg_err(lc, line_of(lc, 3, "rules", ix, "name"), "rule %s: a rule of that "
				"name is already defined at %s:%d", y->name, lc->c->rules[i].file,
				lc->c->rules[i].line);
	if (y->match) {
		r->binary = xstrdup(y->match->binary);
		r->comm = xstrdup(y->match->comm);
		r->cgroup = xstrdup(y->match->cgroup);
		r->systemd_unit = xstrdup(y->match->systemd_unit);
		r->pid = y->match->pid;
		if (r->binary && r->binary[0] != '/')
			cfg_err(lc, line_of(lc, 4, "rules", ix, "match", "binary"), "rule %s: "
				"match.binary '%s' must be an absolute path", r->name, r->binary);
		if (r->comm && strlen(r->comm) > 15)
			cfg_err(lc, line_of(lc, 4, "rules", ix, "match", "comm"), "rule %s: "
				"match.comm '%s' is longer than a thread name (15 bytes)", r->name,
				r->comm);
	}
	r->backend = RULE_BACKEND_AUTO;
	r->buffer_size = 4ull << 20;
	if (y->capture) {
		const char *b = y->capture->backend;

		if (!b || !strcmp(b, "auto"))
			r->backend = RULE_BACKEND_AUTO;
		else if (!strcmp(b, "pt"))
			r->backend = RULE_BACKEND_PT;
		else if (!strcmp(b, "singlestep"))
			r->backend = RULE_BACKEND_SINGLESTEP;
		else if (!strcmp(b, "events-only"))
			r->backend = RULE_BACKEND_EVENTS_ONLY;
		else
			cfg_err(lc, line_of(lc, 4, "rules", ix, "capture", "backend"), "rule %s: "
				"capture.backend '%s': expected auto, pt, singlestep or events-only",
				r->name, b);
		r->buffer_size = get_size(lc, line_of(lc, 4, "rules", ix, "capture", "buffer_size"),
					  "capture.buffer_size", y->capture->buffer_size, r->buffer_size);
		if (r->buffer_size < 4096 || (r->buffer_size & (r->buffer_size - 1)))
			cfg_err(lc, line_of(lc, 4, "rules", ix, "capture", "buffer_size"), "rule %s: "
				"capture.buffer_size must be a power of two of at least 4K", r->name);
		r->kernel = y->capture->kernel;
		if (y->capture->timing) {
			static const char *const timings[] = { "tsc", "mtc", "cyc" };
			unsigned t;

			for (t = 0; t < ARRAY_SIZE(timings); t++)
				if (!strcmp(y->capture->timing, timings[t]))
					r->timing = timings[t];
			if (!r->timing)
				cfg_err(lc, line_of(lc, 4, "rules", ix, "capture", "timing"),
					"rule %s: capture.timing '%s': expected tsc, mtc or cyc",
					r->name, y->capture->timing);
		}
	}
	if (r->backend == RULE_BACKEND_SINGLESTEP && !r->pid)
		cfg_err(lc, line_of(lc, 4, "rules", ix, "capture", "backend"), "rule %s: the "
			"singlestep backend needs match.pid (it slows its target 10^4-10^5x: one "
			"process, named, never a whole binary)", r->name);
	if (y->budget) {
		r->max_per_hour = y->budget->max_per_hour;
		r->max_per_day = y->budget->max_per_day;
		r->cooldown_ns = get_duration(lc, line_of(lc, 4, "rules", ix, "budget", "cooldown"),
					      "budget.cooldown", y->budget->cooldown);
		r->skip_probability = y->budget->skip_probability;
		if (r->skip_probability < 0 || r->skip_probability >= 1)
			cfg_err(lc, line_of(lc, 4, "rules", ix, "budget", "skip_probability"),
				"rule %s: budget.skip_probability must be in [0, 1)", r->name);
		r->max_bytes_per_day = get_size(lc, line_of(lc, 4, "rules", ix, "budget",
							    "max_bytes_per_day"),
						"budget.max_bytes_per_day",
						y->budget->max_bytes_per_day, 0);
	}
	if (y->decode && strcmp(y->decode, "none") && strcmp(y->decode, "host"))
		cfg_err(lc, line_of(lc, 3, "rules", ix, "decode"), "rule %s: decode '%s': expected "
			"none or host", r->name, y->decode);
	r->decode_host = y->decode && !strcmp(y->decode, "host");
	if (y->decoder) {
		line = line_of(lc, 3, "rules", ix, "decoder");
		for (i = 0; i < ARRAY_SIZE(decoder_names); i++)
			if (!strcmp(y->decoder, decoder_names[i]))
				break;
		if (i == ARRAY_SIZE(decoder_names))
			cfg_err(lc, line, "rule %s: decoder '%s': expected fast, no-fast or "
				"verify-fast", r->name, y->decoder);
		else if (!r->decode_host)
			cfg_err(lc, line, "rule %s: decoder '%s' needs decode: host (the daemon "
				"decodes no other rule's captures)", r->name, y->decoder);
		else
			r->decoder = i;
	}
	labels = ytree_get(ytree_item(ytree_get(lc->tree, "rules"), idx), "labels");
	err = read_labels(lc, labels, "labels", &r->labels, &r->nr_labels);
	if (err)
		return err;
	err = parse_trigger(lc, r, y->trigger, line_of(lc, 3, "rules", ix, "trigger"));
	if (err && err != -EINVAL)
		return err;
	if (r->backend == RULE_BACKEND_SINGLESTEP && r->opts.nr_triggers &&
	    r->opts.triggers[0].kind == TRIGGER_KPROBE)
		cfg_err(lc, line_of(lc, 3, "rules", ix, "trigger"), "rule %s: the singlestep "
			"backend traces user code only: a kprobe trigger needs backend pt or "
			"events-only", r->name);
	return 0;
}

static int rule_fingerprint(struct rule *r)
{
	char buf[4096];
	int n;
	unsigned i;

	n = snprintf(buf, sizeof(buf), "%s|%s|%s|%s|%s|%u|%s|%d|%llu|%d|%s|%llu|%llu|%llu|%g|%llu|%d|%d",
		     r->name, r->binary ?: "", r->comm ?: "", r->cgroup ?: "",
		     r->systemd_unit ?: "", r->pid, r->trigger_desc ?: "", r->backend,
		     (unsigned long long)r->buffer_size, r->kernel, r->timing ?: "",
		     (unsigned long long)r->max_per_hour, (unsigned long long)r->max_per_day,
		     (unsigned long long)r->cooldown_ns, r->skip_probability,
		     (unsigned long long)r->max_bytes_per_day, r->decode_host, r->decoder);
	for (i = 0; i < r->nr_labels && n < (int)sizeof(buf); i++)
		n += snprintf(buf + n, sizeof(buf) - n, "|%s=%s", r->labels[i].key,
			      r->labels[i].value);
	r->fingerprint = strdup(buf);
	return r->fingerprint ? 0 : -ENOMEM;
}

/* The line of the map key `key` nearest to `near` (0 if there is none). */
static int key_line(const struct ynode *n, const char *key, int near)
{
	int best = 0, l;
	unsigned i;

	if (!n)
		return 0;
	for (i = 0; i < n->nr_children; i++) {
		const struct ynode *c = &n->children[i];

		l = c->key && !strcmp(c->key, key) ? c->line : key_line(c, key, near);
		if (l && (!best || abs(l - near) < abs(best - near)))
			best = l;
	}
	return best;
}

/* Load one file (main or drop-in) into c. */
/*
 * What a file is: the daemon's main file, a drop-in (rules only), or a user's copy read by
 * `ptbpf captures --config` / `decode s3://` for its upload: section alone (the same
 * schema; the user's own file, so no StrictModes, and rules are not checked away from
 * the host they probe).
 */
enum config_file_kind {
	CONFIG_MAIN,
	CONFIG_DROPIN,
	CONFIG_UPLOAD_ONLY,
};

static int load_file(struct config *c, const char *path, enum config_file_kind kind)
{
	bool main_file = kind != CONFIG_DROPIN, daemon_file = kind != CONFIG_UPLOAD_ONLY;
	bool global_key = false;

	struct load_ctx lc = { .c = c, .file = path };
	cyaml_config_t cfg = {
		.log_fn = config_cyaml_log,
		.log_ctx = &lc,
		.mem_fn = NULL,		/* sym_cyaml_mem, once loaded */
		.log_level = CYAML_LOG_ERROR,
		.flags = CYAML_CFG_DEFAULT,
	};
	struct y_config *y = NULL;
	const cyaml_schema_value_t *schema = main_file ? &config_schema : &dropin_schema;
	char **files;
	cyaml_err_t ce;
	unsigned i;
	int err;

	if (lazylib_load(&lib_cyaml) || lazylib_load(&lib_yaml))
		return -ENOENT;
	cfg.mem_fn = sym_cyaml_mem;
	if (daemon_file) {
		err = strict_modes(path, main_file ? "configuration file" : "drop-in rule file");
		/* a drop-in's directories are the drop-in directory's, checked once */
		if (!err && main_file)
			err = strict_parents(path, "configuration file");
		if (err)
			return err;
	}
	files = realloc(c->files, (c->nr_files + 1) * sizeof(*files));
	if (!files)
		return -ENOMEM;
	c->files = files;
	lc.file = files[c->nr_files] = strdup(path);
	if (!lc.file)
		return -ENOMEM;
	c->nr_files++;
	ce = sym_cyaml_load_file(path, &cfg, schema, (cyaml_data_t **)&y, NULL);
	if (ce != CYAML_OK && !strncmp(lc.cyaml_msg, "Unexpected key: ", 16)) {
		/* libcyaml's line is where the mapping stood: the key's own is in the tree */
		struct ynode *tree = ytree_load(path);
		int line = key_line(tree, lc.cyaml_msg + 16, lc.cyaml_line);

		if (line)
			lc.cyaml_line = line;
		/* the drop-in's hint is for a global key (spool:), not a typo inside a rule */
		global_key = tree && ytree_get(tree, lc.cyaml_msg + 16);
		ytree_free(tree);
	}
	if (ce != CYAML_OK) {
		if (ce == CYAML_ERR_FILE_OPEN)
			cfg_err(&lc, 0, "cannot open: %s", strerror(errno));
		else if (!main_file && global_key)
			cfg_err(&lc, lc.cyaml_line, "%s (a drop-in file holds rules: only)",
				lc.cyaml_msg[0] ? lc.cyaml_msg : sym_cyaml_strerror(ce));
		else
			cfg_err(&lc, lc.cyaml_line, "%s",
				lc.cyaml_msg[0] ? lc.cyaml_msg : sym_cyaml_strerror(ce));
		return -EINVAL;
	}
	lc.tree = ytree_load(path);
	if (!lc.tree) {
		cfg_err(&lc, 0, "cannot parse");
		err = -EINVAL;
		goto out;
	}
	if (!y || (!daemon_file && !y->upload)) {
		if (!daemon_file)
			cfg_err(&lc, 0, "no upload: section (upload: {s3: {endpoint: ..., bucket: "
				"...}})");
		goto out;	/* an empty file */
	}
	if (kind == CONFIG_MAIN) {
		const struct ynode *n;

		err = read_labels(&lc, ytree_get(lc.tree, "host_labels"), "host_labels",
				  &c->host_labels, &c->nr_host_labels);
		if (err)
			goto out;
		if (y->spool) {
			c->spool_dir = xstrdup(y->spool->dir);
			c->spool_max_bytes = get_size(&lc, line_of(&lc, 2, "spool", "max_bytes"),
						      "spool.max_bytes", y->spool->max_bytes,
						      c->spool_max_bytes);
			if (y->spool->max_files)
				c->spool_max_files = y->spool->max_files;
			if (c->spool_dir && c->spool_dir[0] != '/')
				cfg_err(&lc, line_of(&lc, 2, "spool", "dir"), "spool.dir '%s' must be "
					"an absolute path", c->spool_dir);
		}
		if (y->metrics) {
			c->textfile_dir = xstrdup(y->metrics->textfile_dir);
			c->listen = xstrdup(y->metrics->listen);
			c->listen_any = y->metrics->allow_remote;
			if (c->listen) {
				char host[64];
				unsigned port;

				if (sscanf(c->listen, "%63[^:]:%u", host, &port) != 2 || !port ||
				    port > 65535)
					cfg_err(&lc, line_of(&lc, 2, "metrics", "listen"), "metrics.listen "
						"'%s': expected ADDRESS:PORT (127.0.0.1:9432)", c->listen);
				else if (strcmp(host, "127.0.0.1") && strcmp(host, "localhost") &&
					 !c->listen_any)
					cfg_err(&lc, line_of(&lc, 2, "metrics", "listen"), "metrics.listen "
						"'%s': not loopback; the metrics name rules and binaries "
						"(set metrics.allow_remote: true to serve them beyond this "
						"host)", c->listen);
			}
		}
		if (y->budget) {
			c->max_captures_per_hour = y->budget->max_captures_per_hour;
			c->max_bytes_per_day = get_size(&lc, line_of(&lc, 2, "budget",
								     "max_bytes_per_day"),
							"budget.max_bytes_per_day",
							y->budget->max_bytes_per_day, 0);
			if (y->budget->decode_cpu_share)
				c->decode_cpu_share = y->budget->decode_cpu_share;
			if (c->decode_cpu_share <= 0 || c->decode_cpu_share > 1)
				cfg_err(&lc, line_of(&lc, 2, "budget", "decode_cpu_share"),
					"budget.decode_cpu_share must be in (0, 1]");
		}
		if (y->log && y->log->format) {
			if (!strcmp(y->log->format, "json"))
				c->log_json = true;
			else if (!strcmp(y->log->format, "text"))
				c->log_json = false;
			else
				cfg_err(&lc, line_of(&lc, 2, "log", "format"), "log.format '%s': "
					"expected json or text", y->log->format);
		}
		n = ytree_get(lc.tree, "rules");
		(void)n;
	}
	if (y->upload) {
		struct upload_config *u = &c->upload;
		const struct y_s3 *s3 = y->upload->s3;

		c->have_upload = true;
		u->endpoint = xstrdup(s3->endpoint);
		u->region = xstrdup(s3->region ?: "us-east-1");
		u->bucket = xstrdup(s3->bucket);
		u->prefix = xstrdup(s3->prefix ?: "");
		u->path_style = s3->path_style;
		u->credentials_file = xstrdup(s3->credentials_file);
		u->max_bytes_per_second = get_size(&lc, line_of(&lc, 2, "upload",
								"max_bytes_per_second"),
						   "upload.max_bytes_per_second",
						   y->upload->max_bytes_per_second, 0);
		u->concurrency = y->upload->concurrency ?: 2;
		if (!u->endpoint || !u->bucket)
			cfg_err(&lc, line_of(&lc, 2, "upload", "s3"), "upload.s3 needs endpoint "
				"and bucket");
		if (u->credentials_file && daemon_file) {
			/* it holds secrets: the same rule as the configuration */
			if (strict_modes(u->credentials_file, "credentials file"))
				lc.errors++;
		}
	}
	if (!daemon_file)
		goto out;	/* the rules are the daemon's business */
	if (y->rules_count) {
		struct rule *rules = realloc(c->rules, (c->nr_rules + y->rules_count) *
					     sizeof(*rules));

		if (!rules) {
			err = -ENOMEM;
			goto out;
		}
		c->rules = rules;
		for (i = 0; i < y->rules_count; i++) {
			struct rule *r = &c->rules[c->nr_rules];

			memset(r, 0, sizeof(*r));
			c->nr_rules++;
			err = convert_rule(&lc, &y->rules[i], i, r);
			if (!err)
				err = rule_fingerprint(r);
			if (err)
				goto out;
		}
	}
out:
	sym_cyaml_free(&cfg, schema, y, 0);
	ytree_free(lc.tree);
	if (!err && lc.errors)
		err = -EINVAL;
	return err;
}

int config_load_upload(const char *path, struct upload_config *out)
{
	struct config *c = calloc(1, sizeof(*c));
	int err;

	memset(out, 0, sizeof(*out));
	if (!c)
		return -ENOMEM;
	err = load_file(c, path, CONFIG_UPLOAD_ONLY);
	if (!err) {
		*out = c->upload;
		memset(&c->upload, 0, sizeof(c->upload));
	}
	config_free(c);
	return err;
}

static int name_order(const struct dirent **a, const struct dirent **b)
{
	return strcmp((*a)->d_name, (*b)->d_name);
}

static int yaml_file(const struct dirent *d)
{
	size_t n = strlen(d->d_name);

	return d->d_name[0] != '.' && n > 5 && !strcmp(d->d_name + n - 5, ".yaml");
}

int config_load(const char *path, const char *rules_dir, struct config **out)
{
	struct dirent **ents = NULL;
	struct config *c;
	char dir[PATH_MAX];
	struct stat st;
	int n = 0, i, err, ret = 0;

	*out = NULL;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->path = strdup(path);
	c->spool_dir = NULL;
	c->spool_max_bytes = 2ull << 30;
	c->spool_max_files = 500;
	c->log_json = true;
	c->decode_cpu_share = 0.5;
	if (!c->path) {
		config_free(c);
		return -ENOMEM;
	}
	if (rules_dir) {
		snprintf(dir, sizeof(dir), "%s", rules_dir);
	} else {
		const char *slash = strrchr(path, '/');

		snprintf(dir, sizeof(dir), "%.*srules.d", slash ? (int)(slash - path + 1) : 0, path);
	}
	ret = load_file(c, path, CONFIG_MAIN);
	if (ret == -ENOMEM || ret == -ENOENT)
		goto out;
	if (!stat(dir, &st) && S_ISDIR(st.st_mode)) {
		c->rules_dir = strdup(dir);
		if (!c->rules_dir) {
			ret = -ENOMEM;
			goto out;
		}
		err = check_owner(dir, &st, "drop-in directory");
		if (!err)
			err = strict_parents(dir, "drop-in directory");
		if (err) {
			ret = ret ?: err;
			goto out;
		}
		n = scandir(dir, &ents, yaml_file, name_order);
		for (i = 0; i < n; i++) {
			char p[PATH_MAX];

			if (pathf(p, sizeof(p), "%s/%s", dir, ents[i]->d_name))
				continue;
			err = load_file(c, p, CONFIG_DROPIN);
			if (err == -ENOMEM) {
				ret = err;
				goto out;
			}
			ret = ret ?: err;
		}
	} else if (rules_dir) {
		elog("%s: cannot read the drop-in directory: %s\n", dir,
		     stat(dir, &st) ? strerror(errno) : "not a directory");
		ret = ret ?: -ENOENT;
	}
	if (!ret && !c->spool_dir) {
		c->spool_dir = strdup("/var/spool/ptbpf");
		if (!c->spool_dir)
			ret = -ENOMEM;
	}
out:
	for (i = 0; i < n; i++)
		free(ents[i]);
	free(ents);
	if (ret) {
		config_free(c);
		return ret;
	}
	*out = c;
	return 0;
}

static void free_labels(struct label *l, unsigned n)
{
	unsigned i;

	for (i = 0; i < n; i++) {
		free(l[i].key);
		free(l[i].value);
	}
	free(l);
}

void rule_clear(struct rule *r)
{
	free(r->file);
	free(r->name);
	free(r->binary);
	free(r->comm);
	free(r->cgroup);
	free(r->systemd_unit);
	cli_free_capture(&r->opts);
	free(r->trigger_desc);
	free_labels(r->labels, r->nr_labels);
	free(r->fingerprint);
	memset(r, 0, sizeof(*r));
}

void config_free(struct config *c)
{
	unsigned i;

	if (!c)
		return;
	for (i = 0; i < c->nr_rules; i++)
		rule_clear(&c->rules[i]);
	free(c->rules);
	for (i = 0; i < c->nr_files; i++)
		free(c->files[i]);
	free(c->files);
	free_labels(c->host_labels, c->nr_host_labels);
	free(c->spool_dir);
	free(c->textfile_dir);
	free(c->listen);
	upload_config_clear(&c->upload);
	free(c->path);
	free(c->rules_dir);
	free(c);
}

const char *rule_backend_name(enum rule_backend b)
{
	switch (b) {
	case RULE_BACKEND_PT:
		return "pt";
	case RULE_BACKEND_SINGLESTEP:
		return "singlestep";
	case RULE_BACKEND_EVENTS_ONLY:
		return "events-only";
	default:
		return "auto";
	}
}

const char *rule_decoder_name(enum rule_decoder d)
{
	return (unsigned)d < ARRAY_SIZE(decoder_names) ? decoder_names[d] : "fast";
}
