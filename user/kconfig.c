// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/utsname.h>
#include <zlib.h>

#include "kconfig.h"

static char boot_config[300];

/* gzopen() reads plain files too, so one loop serves both places. */
static gzFile open_config(const char **source)
{
	struct utsname u;
	gzFile f;

	f = gzopen("/proc/config.gz", "rb");
	if (f) {
		*source = "/proc/config.gz";
		return f;
	}
	if (uname(&u))
		return NULL;
	snprintf(boot_config, sizeof(boot_config), "/boot/config-%s", u.release);
	f = gzopen(boot_config, "rb");
	if (f)
		*source = boot_config;
	return f;
}

int kconfig_get(const char *name, char *val, size_t val_size, const char **source)
{
	const char *src = NULL;
	char line[512];
	size_t len;
	gzFile f;
	int ret = 0;

	if (!name || !*name || (val && !val_size))
		return -EINVAL;
	f = open_config(&src);
	if (!f)
		return -ENOENT;
	if (source)
		*source = src;
	len = strlen(name);
	while (gzgets(f, line, sizeof(line))) {
		if (strncmp(line, name, len) || line[len] != '=')
			continue;
		line[strcspn(line, "\n")] = '\0';
		if (val)
			snprintf(val, val_size, "%s", line + len + 1);
		ret = 1;
		break;
	}
	gzclose(f);
	return ret;
}
