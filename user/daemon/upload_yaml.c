// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The `upload:` section of the daemon's YAML config, read on its own (libcyaml, every
 * other key ignored) for the commands that talk to the same bucket from anywhere:
 * `ptbpf captures` and `ptbpf decode s3://...`. The daemon reads the section with the
 * rest of its config into the same struct upload_config.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cyaml/cyaml.h>

#include "cli.h"
#include "upload.h"
#include "upload_yaml.h"

struct yaml_s3 {
	char *endpoint, *region, *bucket, *prefix, *credentials_file;
	bool path_style;
};

struct yaml_upload {
	struct yaml_s3 *s3;
	char *max_bytes_per_second;	/* a size: "20M" */
	int concurrency;
};

struct yaml_root {
	struct yaml_upload *upload;
};

static const cyaml_schema_field_t s3_fields[] = {
	CYAML_FIELD_STRING_PTR("endpoint", CYAML_FLAG_POINTER | CYAML_FLAG_OPTIONAL,
			       struct yaml_s3, endpoint, 1, CYAML_UNLIMITED),
	CYAML_FIELD_STRING_PTR("region", CYAML_FLAG_POINTER | CYAML_FLAG_OPTIONAL,
			       struct yaml_s3, region, 1, CYAML_UNLIMITED),
	CYAML_FIELD_STRING_PTR("bucket", CYAML_FLAG_POINTER, struct yaml_s3, bucket, 1,
			       CYAML_UNLIMITED),
	CYAML_FIELD_STRING_PTR("prefix", CYAML_FLAG_POINTER | CYAML_FLAG_OPTIONAL,
			       struct yaml_s3, prefix, 0, CYAML_UNLIMITED),
	CYAML_FIELD_STRING_PTR("credentials_file", CYAML_FLAG_POINTER | CYAML_FLAG_OPTIONAL,
			       struct yaml_s3, credentials_file, 1, CYAML_UNLIMITED),
	CYAML_FIELD_BOOL("path_style", CYAML_FLAG_OPTIONAL, struct yaml_s3, path_style),
	CYAML_FIELD_END
};

static const cyaml_schema_field_t upload_fields[] = {
	CYAML_FIELD_MAPPING_PTR("s3", CYAML_FLAG_POINTER, struct yaml_upload, s3, s3_fields),
	CYAML_FIELD_STRING_PTR("max_bytes_per_second", CYAML_FLAG_POINTER | CYAML_FLAG_OPTIONAL,
			       struct yaml_upload, max_bytes_per_second, 1, CYAML_UNLIMITED),
	CYAML_FIELD_INT("concurrency", CYAML_FLAG_OPTIONAL, struct yaml_upload, concurrency),
	CYAML_FIELD_END
};

static const cyaml_schema_field_t root_fields[] = {
	CYAML_FIELD_MAPPING_PTR("upload", CYAML_FLAG_POINTER | CYAML_FLAG_OPTIONAL,
				struct yaml_root, upload, upload_fields),
	CYAML_FIELD_END
};

static const cyaml_schema_value_t root_schema = {
	CYAML_VALUE_MAPPING(CYAML_FLAG_POINTER, struct yaml_root, root_fields),
};

static char *last_error;

static void yaml_log(cyaml_log_t level, void *ctx, const char *fmt, va_list args)
{
	char buf[512];

	if (level < CYAML_LOG_ERROR)
		return;
	vsnprintf(buf, sizeof(buf), fmt, args);
	buf[strcspn(buf, "\n")] = '\0';
	if (!last_error)
		last_error = strdup(buf);
}

static char *dup_or_null(const char *s)
{
	return s ? strdup(s) : NULL;
}

void upload_config__clear(struct upload_config *cfg)
{
	free(cfg->endpoint);
	free(cfg->region);
	free(cfg->bucket);
	free(cfg->prefix);
	free(cfg->credentials_file);
	memset(cfg, 0, sizeof(*cfg));
}

int upload_config__from_yaml(const char *path, struct upload_config *cfg, char *err_buf,
			     size_t err_size)
{
	const cyaml_config_t config = {
		.log_fn = yaml_log,
		.mem_fn = cyaml_mem,
		.log_level = CYAML_LOG_ERROR,
		.flags = CYAML_CFG_IGNORE_UNKNOWN_KEYS,
	};
	struct yaml_root *root = NULL;
	cyaml_err_t rc;
	int err = 0;

	memset(cfg, 0, sizeof(*cfg));
	free(last_error);
	last_error = NULL;
	rc = cyaml_load_file(path, &config, &root_schema, (cyaml_data_t **)&root, NULL);
	if (rc != CYAML_OK) {
		/* libcyaml's log line says more than its error code ("Load: Missing required
		 * mapping field: bucket") */
		snprintf(err_buf, err_size, "%s: %s", path,
			 last_error ? last_error : cyaml_strerror(rc));
		return rc == CYAML_ERR_FILE_OPEN ? -ENOENT : -EINVAL;
	}
	if (!root->upload) {
		snprintf(err_buf, err_size, "%s has no upload: section (upload: {s3: {endpoint, "
			 "bucket, ...}})", path);
		err = -ENODATA;
		goto out;
	}
	cfg->endpoint = dup_or_null(root->upload->s3->endpoint);
	cfg->region = dup_or_null(root->upload->s3->region);
	cfg->bucket = dup_or_null(root->upload->s3->bucket);
	cfg->prefix = dup_or_null(root->upload->s3->prefix);
	cfg->credentials_file = dup_or_null(root->upload->s3->credentials_file);
	cfg->path_style = root->upload->s3->path_style;
	cfg->concurrency = root->upload->concurrency > 0 ? root->upload->concurrency : 1;
	if (root->upload->max_bytes_per_second &&
	    parse_size(root->upload->max_bytes_per_second, &cfg->max_bytes_per_second)) {
		snprintf(err_buf, err_size, "%s: upload.max_bytes_per_second: '%s' is not a size "
			 "(20M, 512K, 1000000)", path, root->upload->max_bytes_per_second);
		err = -EINVAL;
	}
out:
	cyaml_free(&config, &root_schema, root, 0);
	if (err)
		upload_config__clear(cfg);
	return err;
}
