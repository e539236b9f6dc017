// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * `ptbpf captures ls|get`: the captures a fleet's daemons uploaded, found through their
 * manifests under PREFIX/v1/<rule>/<yyyy>/<mm>/<dd>/<host>/ (so a day of one rule is one
 * listing, not a scan of the bucket), and fetched with their sha256 checked. The fetch
 * also serves `ptbpf decode s3://...`.
 */
#include <argp.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>

#include "array.h"
#include "captures.h"
#include "cli.h"
#include "commands.h"
#include "log.h"
#include "s3.h"
#include "upload.h"
#include "config.h"
#include "fleet_layout.h"

#define CAPTURE_SUFFIX ".perf.data.zst"

int s3_cli_client(const struct s3_cli_opts *o, const char *bucket, struct s3_client **out,
		  char **prefix_out)
{
	struct upload_config ucfg = {};
	struct s3_config cfg = {};
	const char *env_endpoint = getenv("AWS_ENDPOINT_URL");
	char msg[512];
	int err;

	*out = NULL;
	if (prefix_out)
		*prefix_out = NULL;
	if (o->config) {
		err = config_load_upload(o->config, &ucfg);
		if (err)
			return err;
	}
	cfg.bucket = bucket ? bucket : ucfg.bucket;
	cfg.region = o->region ? o->region : ucfg.region ? ucfg.region : getenv("AWS_REGION");
	if (o->endpoint) {
		cfg.endpoint = o->endpoint;
		cfg.path_style = true;	/* an endpoint of one's own: RGW, MinIO */
	} else if (ucfg.endpoint) {
		cfg.endpoint = ucfg.endpoint;
		cfg.path_style = ucfg.path_style;
	} else if (env_endpoint && *env_endpoint) {
		cfg.endpoint = env_endpoint;
		cfg.path_style = true;
	} else {
		snprintf(msg, sizeof(msg), "https://s3.%s.amazonaws.com",
			 cfg.region ? cfg.region : "us-east-1");
		cfg.endpoint = msg;
	}
	if (!cfg.bucket) {
		elog("no bucket: give s3://BUCKET/... or --config with upload.s3.bucket\n");
		err = -EINVAL;
		goto out;
	}
	err = s3_credentials__load(ucfg.credentials_file, &cfg.creds);
	if (err) {
		elog("%s\n", cfg.creds.source);
		goto out;
	}
	err = s3_client__new(&cfg, out);
	explicit_bzero(&cfg.creds, sizeof(cfg.creds));
	if (!err && prefix_out && ucfg.prefix) {
		*prefix_out = strdup(ucfg.prefix);
		if (!*prefix_out)
			err = -ENOMEM;
	}
out:
	upload_config_clear(&ucfg);
	return err;
}

/* One line: what went wrong with the last request of `c` while doing `what`. */
static int s3_fail(struct s3_client *c, int err, const char *what)
{
	char buf[768];

	if (err == -EBADMSG || err == -EINVAL || err == -ENOMEM)
		elog("%s: %s\n", what, strerror(-err));
	else
		elog("%s: %s\n", what, s3_client__explain(c, buf, sizeof(buf)));
	return err;
}

/* "a/b/NAME.perf.data.zst", "a/b/NAME.json" or "a/b/NAME" -> "a/b/NAME". */
static char *capture_base(const char *key)
{
	size_t len = strlen(key), sl = strlen(CAPTURE_SUFFIX);

	if (len > sl && !strcmp(key + len - sl, CAPTURE_SUFFIX))
		len -= sl;
	else if (len > 5 && !strcmp(key + len - 5, ".json"))
		len -= 5;
	return strndup(key, len);
}

static int get_to_file(struct s3_client *c, const char *key, const char *path)
{
	FILE *f;
	int fd, err;

	/* 0600: a trace holds addresses, names and probe arguments */
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	f = fdopen(fd, "w+");
	if (!f) {
		err = -errno;
		close(fd);
		return err;
	}
	err = s3__get(c, key, f, NULL);
	if (!err && fsync(fileno(f)))
		err = -errno;
	if (fclose(f) && !err)
		err = -EIO;
	return err;
}

static int read_small_file(const char *path, char **text)
{
	struct stat st;
	FILE *f;
	int err = 0;

	*text = NULL;
	f = fopen(path, "re");
	if (!f)
		return -errno;
	if (fstat(fileno(f), &st) || st.st_size > (16 << 20)) {
		err = -EFBIG;
		goto out;
	}
	*text = calloc(1, (size_t)st.st_size + 1);
	if (!*text) {
		err = -ENOMEM;
		goto out;
	}
	if (fread(*text, 1, (size_t)st.st_size, f) != (size_t)st.st_size)
		err = -EIO;
out:
	fclose(f);
	if (err) {
		free(*text);
		*text = NULL;
	}
	return err;
}

int captures_fetch(struct s3_client *c, const char *bucket, const char *key, const char *dir,
		   char *capture_path, size_t size)
{
	char *base = capture_base(key), *name, *text = NULL;
	char mpath[4096], mtmp[4096], ctmp[4096], mkey[4096], ckey[4096], what[4200];
	char sha[S3_SHA256_HEX_LEN + 1];
	struct json_object *root = NULL, *v;
	const char *want = NULL;
	int fd, err;

	if (!base)
		return -ENOMEM;
	name = strrchr(base, '/') ? strrchr(base, '/') + 1 : base;
	snprintf(mkey, sizeof(mkey), "%s.json", base);
	snprintf(ckey, sizeof(ckey), "%s" CAPTURE_SUFFIX, base);
	snprintf(mpath, sizeof(mpath), "%s/%s.json", dir, name);
	snprintf(mtmp, sizeof(mtmp), "%s/.%s.json.tmp", dir, name);
	snprintf(capture_path, size, "%s/%s" CAPTURE_SUFFIX, dir, name);
	snprintf(ctmp, sizeof(ctmp), "%s/.%s" CAPTURE_SUFFIX ".tmp", dir, name);

	err = get_to_file(c, mkey, mtmp);
	if (err) {
		snprintf(what, sizeof(what), "s3://%s/%s", bucket, mkey);
		s3_fail(c, err, what);
		goto out;
	}
	err = read_small_file(mtmp, &text);
	if (!err) {
		root = json_tokener_parse(text);
		if (root && json_object_object_get_ex(root, "sha256", &v))
			want = json_object_get_string(v);
	}
	if (!want) {
		elog("s3://%s/%s: not a capture manifest (no sha256)\n", bucket, mkey);
		err = -EINVAL;
		goto out;
	}
	err = get_to_file(c, ckey, ctmp);
	if (err) {
		snprintf(what, sizeof(what), "s3://%s/%s", bucket, ckey);
		s3_fail(c, err, what);
		goto out;
	}
	fd = open(ctmp, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		err = -errno;
		goto out;
	}
	{
		struct stat st;

		err = fstat(fd, &st) ? -errno : s3_digest_fd(fd, 0, (uint64_t)st.st_size, sha, NULL);
	}
	close(fd);
	if (!err && strcasecmp(sha, want)) {
		elog("s3://%s/%s: sha256 %s, its manifest says %s: the download or the object is "
		     "corrupt\n", bucket, ckey, sha, want);
		err = -EBADMSG;
	}
	if (!err && (rename(ctmp, capture_path) || rename(mtmp, mpath)))
		err = -errno;
out:
	if (err) {
		unlink(ctmp);
		unlink(mtmp);
	}
	json_object_put(root);
	free(text);
	free(base);
	return err;
}

/* ls */

struct listed {
	struct json_object *manifest;	/* with "key" added */
	uint64_t time_ns;
};

/* Manifests fetched at once by `captures ls` (its --help says so). */
#define LS_IN_FLIGHT 8
#define LS_IN_FLIGHT_STR "8"

struct ls_ctx {
	struct s3_client *c;
	const char *bucket;
	const char *prefix;		/* of the layout, without '/' around it */
	const char *host;		/* --host or NULL */
	uint64_t since_ns;		/* wall clock, 0: all */
	char **dirs;			/* common prefixes of the first listing */
	size_t nr_dirs;
	char **keys;			/* the manifests listed, fetched then */
	size_t nr_keys, cap_keys;
	bool reported;			/* an error was told already */
	struct listed *items;
	size_t nr, cap;
	int err;
};

static int collect_dir(const char *key, uint64_t size, void *arg)
{
	struct ls_ctx *ls = arg;
	char **p;

	if (size != UINT64_MAX)
		return 0;
	p = realloc(ls->dirs, (ls->nr_dirs + 1) * sizeof(*p));
	if (!p)
		return -ENOMEM;
	ls->dirs = p;
	ls->dirs[ls->nr_dirs] = strdup(key);
	if (!ls->dirs[ls->nr_dirs])
		return -ENOMEM;
	ls->nr_dirs++;
	return 0;
}

static int collect_manifest(const char *key, uint64_t size, void *arg)
{
	struct ls_ctx *ls = arg;
	size_t len = strlen(key);

	if (size == UINT64_MAX || len < 5 || strcmp(key + len - 5, ".json"))
		return 0;
	if (array_grow_sz((void **)&ls->keys, &ls->cap_keys, ls->nr_keys + 1, sizeof(*ls->keys)))
		return -ENOMEM;
	ls->keys[ls->nr_keys] = strdup(key);
	if (!ls->keys[ls->nr_keys])
		return -ENOMEM;
	ls->nr_keys++;
	return 0;
}

/* One fetched manifest: kept when it passes --since and --host. */
static int take_manifest(const char *key, int err, const char *text, size_t text_len,
			 void *arg)
{
	struct ls_ctx *ls = arg;
	size_t len = strlen(key);
	struct json_object *root, *v;
	char ckey[4096];
	const char *slash;
	uint64_t time_ns = 0;

	if (err == -ENOENT)
		return 0;	/* deleted meanwhile */
	if (err) {
		ls->reported = true;
		return s3_fail(ls->c, err, key);
	}
	root = json_tokener_parse(text);
	if (!root || !json_object_is_type(root, json_type_object)) {
		json_object_put(root);
		elog("warning: s3://%s/%s is not a JSON manifest; skipped\n", ls->bucket, key);
		return 0;
	}
	if (json_object_object_get_ex(root, "time_ns", &v))
		time_ns = (uint64_t)json_object_get_int64(v);
	if ((ls->since_ns && time_ns < ls->since_ns) ||
	    (ls->host && (!json_object_object_get_ex(root, "host", &v) ||
			  strcmp(json_object_get_string(v), ls->host)))) {
		json_object_put(root);
		return 0;
	}
	slash = strrchr(key, '/');
	if (json_object_object_get_ex(root, "capture", &v))
		snprintf(ckey, sizeof(ckey), "%.*s%s", slash ? (int)(slash - key + 1) : 0, key,
			 json_object_get_string(v));
	else
		snprintf(ckey, sizeof(ckey), "%.*s" CAPTURE_SUFFIX, (int)(len - 5), key);
	json_object_object_add(root, "key", json_object_new_string(ckey));
	if (ls->nr == ls->cap) {
		size_t cap = ls->cap ? ls->cap * 2 : 64;
		struct listed *p = realloc(ls->items, cap * sizeof(*p));

		if (!p) {
			json_object_put(root);
			return -ENOMEM;
		}
		ls->items = p;
		ls->cap = cap;
	}
	ls->items[ls->nr++] = (struct listed){ root, time_ns };
	return 0;
}

/* Newest first; the same time by key, so that the order does not depend on which
 * manifest arrived first. */
static int newest_first(const void *a, const void *b)
{
	const struct listed *x = a, *y = b;
	struct json_object *kx, *ky;

	if (x->time_ns != y->time_ns)
		return x->time_ns < y->time_ns ? 1 : -1;
	json_object_object_get_ex(x->manifest, "key", &kx);
	json_object_object_get_ex(y->manifest, "key", &ky);
	return strcmp(json_object_get_string(kx), json_object_get_string(ky));
}

static const char *jstr(struct json_object *o, const char *k1, const char *k2)
{
	struct json_object *v;

	if (!json_object_object_get_ex(o, k1, &v))
		return "-";
	if (k2 && !json_object_object_get_ex(v, k2, &v))
		return "-";
	return json_object_get_string(v);
}

static void print_item(const struct listed *it, bool json)
{
	struct json_object *v;
	char when[32], lat[32], sz[32];
	time_t t = (time_t)(it->time_ns / 1000000000ULL);
	struct tm tm;
	uint64_t bytes = 0;

	if (json) {
		printf("%s\n", json_object_to_json_string_ext(it->manifest,
							      JSON_C_TO_STRING_PLAIN |
							      JSON_C_TO_STRING_NOSLASHESCAPE));
		return;
	}
	gmtime_r(&t, &tm);
	strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
	lat[0] = '-';
	lat[1] = '\0';
	if (json_object_object_get_ex(it->manifest, "trigger", &v) &&
	    json_object_object_get_ex(v, "latency_ns", &v) && json_object_get_int64(v) > 0)
		fmt_duration((uint64_t)json_object_get_int64(v), lat, sizeof(lat));
	if (json_object_object_get_ex(it->manifest, "bytes", &v))
		bytes = (uint64_t)json_object_get_int64(v);
	if (bytes >= 1 << 20)
		snprintf(sz, sizeof(sz), "%.1fM", bytes / 1048576.0);
	else
		snprintf(sz, sizeof(sz), "%.1fK", bytes / 1024.0);
	printf("%-20s  %-16s  %-16s  %-14s  %9s  %7s  %s\n", when, jstr(it->manifest, "host", NULL),
	       jstr(it->manifest, "rule", NULL), jstr(it->manifest, "trigger", "kind"), lat, sz,
	       jstr(it->manifest, "key", NULL));
}

/* The manifests of one rule: one listing per UTC day since `since_ns`, or all of it. */
static int list_rule(struct ls_ctx *ls, const char *rule)
{
	char prefix[4096];
	time_t day, now = time(NULL);
	int err;

	if (!ls->since_ns) {
		err = fleet_key(ls->prefix, rule, FLEET_NO_DAY, NULL, NULL, prefix, sizeof(prefix));
		return err ? err : s3__list(ls->c, prefix, NULL, collect_manifest, ls);
	}
	for (day = (time_t)(ls->since_ns / 1000000000ULL); ; day += 86400) {
		err = fleet_key(ls->prefix, rule, (int64_t)day, ls->host, NULL, prefix,
				sizeof(prefix));
		if (!err)
			err = s3__list(ls->c, prefix, NULL, collect_manifest, ls);
		if (err)
			return err;
		if (day / 86400 >= now / 86400)
			break;
	}
	return 0;
}

struct captures_env {
	struct s3_cli_opts s3;
	const char *cmd;		/* ls | get */
	const char *url;
	const char *rule, *host, *out_dir;
	uint64_t since_ns;		/* a duration */
	bool json;
};

enum {
	OPT_CONFIG = 0x100,
	OPT_ENDPOINT,
	OPT_REGION,
	OPT_RULE,
	OPT_HOST,
	OPT_SINCE,
	OPT_JSON,
};

static const struct argp_option captures_options[] = {
	{ "rule", OPT_RULE, "RULE", 0, "ls: only captures of this rule" },
	{ "host", OPT_HOST, "HOST", 0, "ls: only captures from this host" },
	{ "since", OPT_SINCE, "DURATION", 0, "ls: only captures of the last DURATION (2h, 1d)" },
	{ "json", OPT_JSON, NULL, 0, "ls: one manifest per line, with its object's key" },
	{ "output", 'o', "DIR", 0, "get: where the capture and its manifest go" },
	{},
};

static error_t parse_s3_cli_opt(int key, char *arg, struct argp_state *state)
{
	struct s3_cli_opts *o = state->input;

	switch (key) {
	case OPT_CONFIG:
		o->config = arg;
		return 0;
	case OPT_ENDPOINT:
		o->endpoint = arg;
		return 0;
	case OPT_REGION:
		o->region = arg;
		return 0;
	default:
		return ARGP_ERR_UNKNOWN;
	}
}

static const struct argp_option s3_cli_options[] = {
	{ NULL, 0, NULL, 0, "Object storage (s3:// URLs):", 10 },
	{ "config", OPT_CONFIG, "FILE", 0,
	  "The daemon's YAML: endpoint, region and credentials from its upload: section" },
	{ "s3-endpoint", OPT_ENDPOINT, "URL", 0,
	  "S3 endpoint (path-style), e.g. http://127.0.0.1:17480 (default: $AWS_ENDPOINT_URL, "
	  "else AWS)" },
	{ "region", OPT_REGION, "REGION", 0, "Signing region (default $AWS_REGION or us-east-1)" },
	{},
};

const struct argp s3_cli_argp = {
	.options = s3_cli_options,
	.parser = parse_s3_cli_opt,
};

/* "1d" is common for listings: days on top of parse_duration's units. */
static int parse_since(const char *arg, uint64_t *ns)
{
	size_t len = strlen(arg);
	uint64_t v;

	if (len > 1 && (arg[len - 1] == 'd' || arg[len - 1] == 'h' || arg[len - 1] == 'm') &&
	    !(len > 2 && arg[len - 2] == 'm')) {
		char num[32];

		snprintf(num, sizeof(num), "%.*s", (int)(len - 1), arg);
		if (parse_u64(num, 1, 100000, &v))
			return -EINVAL;
		*ns = v * (arg[len - 1] == 'd' ? 86400 : arg[len - 1] == 'h' ? 3600 : 60) *
		      1000000000ULL;
		return 0;
	}
	return parse_duration(arg, ns);
}

static error_t parse_captures_opt(int key, char *arg, struct argp_state *state)
{
	struct captures_env *env = state->input;

	switch (key) {
	case OPT_RULE:
		env->rule = arg;
		return 0;
	case OPT_HOST:
		env->host = arg;
		return 0;
	case OPT_SINCE:
		if (parse_since(arg, &env->since_ns) || !env->since_ns)
			return usage_error(state, "invalid --since '%s': a duration such as 30m, "
					   "2h or 1d", arg);
		return 0;
	case OPT_JSON:
		env->json = true;
		return 0;
	case 'o':
		env->out_dir = arg;
		return 0;
	case ARGP_KEY_INIT:
		state->child_inputs[0] = &env->s3;
		return 0;
	case ARGP_KEY_ARG:
		if (!env->cmd) {
			if (strcmp(arg, "ls") && strcmp(arg, "get"))
				return usage_error(state, "unknown command '%s': ls or get", arg);
			env->cmd = arg;
		} else if (!env->url) {
			env->url = arg;
		} else {
			return usage_error(state, "unexpected argument '%s'", arg);
		}
		return 0;
	case ARGP_KEY_END:
		if (!env->cmd)
			return usage_error(state, "give a command: ls s3://BUCKET/PREFIX or get "
					   "s3://BUCKET/KEY -o DIR");
		if (!env->url || strncmp(env->url, "s3://", 5))
			return usage_error(state, "%s needs an s3://BUCKET/%s URL", env->cmd,
					   strcmp(env->cmd, "ls") ? "KEY" : "PREFIX");
		if (!strcmp(env->cmd, "get") && !env->out_dir)
			return usage_error(state, "get needs -o DIR");
		if (!strcmp(env->cmd, "get") && (env->rule || env->host || env->since_ns || env->json))
			return usage_error(state, "--rule, --host, --since and --json go with ls");
		if (!strcmp(env->cmd, "ls") && env->out_dir)
			return usage_error(state, "-o goes with get");
		return 0;
	default:
		return ARGP_ERR_UNKNOWN;
	}
}

static int captures_ls(struct captures_env *env, struct s3_client *c, const char *bucket,
		       const char *prefix)
{
	struct ls_ctx ls = { .c = c, .bucket = bucket, .prefix = prefix, .host = env->host };
	char base[4096];
	size_t i;
	int err;

	if (env->since_ns) {
		struct timespec now;

		clock_gettime(CLOCK_REALTIME, &now);
		ls.since_ns = (uint64_t)now.tv_sec * 1000000000ULL + now.tv_nsec - env->since_ns;
	}
	if (env->rule) {
		err = list_rule(&ls, env->rule);
	} else {
		/* the rules are the first level under v1/ */
		err = fleet_key(prefix, NULL, FLEET_NO_DAY, NULL, NULL, base, sizeof(base));
		if (!err)
			err = s3__list(c, base, "/", collect_dir, &ls);
		for (i = 0; !err && i < ls.nr_dirs; i++) {
			char *rule = ls.dirs[i] + strlen(base);
			size_t len = strlen(rule);

			if (strncmp(ls.dirs[i], base, strlen(base)) || len < 2)
				continue;
			rule[len - 1] = '\0';	/* the '/' that ends a common prefix */
			err = list_rule(&ls, rule);
		}
	}
	/* the manifests, LS_IN_FLIGHT at a time: a day of a busy rule is many objects */
	if (!err)
		err = s3__get_many(c, (const char *const *)ls.keys, ls.nr_keys, LS_IN_FLIGHT,
				   take_manifest, &ls);
	if (err && err != -ENOMEM && err != -EBADMSG && !ls.reported)
		s3_fail(c, err, env->url);
	if (!err) {
		qsort(ls.items, ls.nr, sizeof(*ls.items), newest_first);
		if (!env->json)
			printf("%-20s  %-16s  %-16s  %-14s  %9s  %7s  %s\n", "TIME", "HOST", "RULE",
			       "TRIGGER", "LATENCY", "SIZE", "KEY");
		for (i = 0; i < ls.nr; i++)
			print_item(&ls.items[i], env->json);
	}
	for (i = 0; i < ls.nr; i++)
		json_object_put(ls.items[i].manifest);
	for (i = 0; i < ls.nr_dirs; i++)
		free(ls.dirs[i]);
	free(ls.dirs);
	for (i = 0; i < ls.nr_keys; i++)
		free(ls.keys[i]);
	free(ls.keys);
	free(ls.items);
	return err;
}

int cmd_captures(int argc, char **argv)
{
	static const char doc[] =
		"List and fetch the captures a fleet's daemons uploaded to S3-compatible "
		"storage (PREFIX/v1/<rule>/<yyyy>/<mm>/<dd>/<host>/<name>.perf.data.zst, each "
		"with its .json manifest)."
		"\v"
		"Examples:\n"
		"  ptbpf captures ls s3://captures/fleet --rule slow-handle --since 1d\n"
		"  ptbpf captures ls s3://captures/fleet --host web-17 --json\n"
		"  ptbpf captures get s3://captures/fleet/v1/slow-handle/2026/12/01/web-17/"
		"NAME.perf.data.zst -o ./caps\n"
		"\n"
		"Credentials: the credentials_file of --config's upload: section, else "
		"AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, else ~/.aws/credentials "
		"($AWS_PROFILE or [default]). ls prints newest first: time (UTC), host, rule, "
		"trigger, latency, size and the capture's key. ls lists the date/rule layout "
		"(one listing per rule and day with --since) and fetches the manifests it "
		"finds concurrently, up to " LS_IN_FLIGHT_STR " at a time.";
	static const struct argp_child children[] = { { &s3_cli_argp, 0, NULL, 0 }, {} };
	static const struct argp argp = {
		.children = children,
		.options = captures_options,
		.parser = parse_captures_opt,
		.args_doc = "ls s3://BUCKET/PREFIX | get s3://BUCKET/KEY -o DIR",
		.doc = doc,
	};
	struct captures_env env = {};
	struct s3_client *c = NULL;
	char *bucket = NULL, *prefix = NULL, path[4096];
	int err;

	err = cli_parse(&argp, argc, argv, 0, &env);
	if (err)
		return err;
	if (s3_url__parse(env.url, &bucket, &prefix)) {
		elog("invalid URL '%s': expected s3://BUCKET/PREFIX\n", env.url);
		return 2;
	}
	err = s3_cli_client(&env.s3, bucket, &c, NULL);
	if (err)
		goto out;
	if (!strcmp(env.cmd, "ls")) {
		err = captures_ls(&env, c, bucket, prefix);
	} else {
		if (mkdir(env.out_dir, 0700) && errno != EEXIST) {
			err = -errno;
			elog("cannot create %s: %s\n", env.out_dir, strerror(errno));
			goto out;
		}
		err = captures_fetch(c, bucket, prefix, env.out_dir, path, sizeof(path));
		if (!err)
			printf("%s\n", path);
	}
out:
	s3_client__free(c);
	free(bucket);
	free(prefix);
	return err ? 1 : 0;
}
