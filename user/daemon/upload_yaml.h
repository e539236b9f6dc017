/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The `upload:` section of the daemon's YAML config, for commands run away from it. */
#ifndef PTBPF_UPLOAD_YAML_H
#define PTBPF_UPLOAD_YAML_H

#include <stddef.h>

struct upload_config;

/* Fill cfg (strings allocated) from `path`; on error a one-line message in err_buf. */
int upload_config__from_yaml(const char *path, struct upload_config *cfg, char *err_buf,
			     size_t err_size);
void upload_config__clear(struct upload_config *cfg);

#endif /* PTBPF_UPLOAD_YAML_H */
