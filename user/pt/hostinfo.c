// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "array.h"
#include "hostinfo.h"

/* The value of "key : value" in the first processor block, or NULL. */
static const char *field(const char *text, const char *key, char *buf, size_t size)
{
	size_t len = strlen(key);
	const char *p = text;

	while (p && *p) {
		const char *eol = strchr(p, '\n');

		if (p[0] == '\n' || !eol)	/* end of the first block */
			break;
		if (!strncmp(p, key, len) && (p[len] == ' ' || p[len] == '\t' || p[len] == ':')) {
			const char *v = strchr(p, ':');

			if (v && v < eol) {
				v++;
				while (*v == ' ' || *v == '\t')
					v++;
				snprintf(buf, size, "%.*s", (int)(eol - v), v);
				return buf;
			}
		}
		p = eol + 1;
	}
	return NULL;
}

int hostinfo_cpuid(const char *cpuinfo, char *buf, size_t size, char *model, size_t model_size)
{
	char vendor[32], family[16], mod[16], stepping[16];

	if (!cpuinfo || !buf || !size)
		return -EINVAL;
	if (!field(cpuinfo, "vendor_id", vendor, sizeof(vendor)) ||
	    !field(cpuinfo, "cpu family", family, sizeof(family)) ||
	    !field(cpuinfo, "model", mod, sizeof(mod)) ||
	    !field(cpuinfo, "stepping", stepping, sizeof(stepping)))
		return -ENOENT;
	snprintf(buf, size, "%s,%s,%s,%s", vendor, family, mod, stepping);
	if (model && model_size && !field(cpuinfo, "model name", model, model_size))
		model[0] = '\0';
	return 0;
}

static char *read_cpuinfo(void)
{
	size_t len = 0, cap = 0;
	char *text = NULL;
	FILE *f;

	f = fopen("/proc/cpuinfo", "re");
	if (!f)
		return NULL;
	/* the first processor's block is enough */
	while (len < 64 * 1024) {
		/* room for a line of 4 KiB */
		if (array_grow_sz((void **)&text, &cap, len + 4096, 1))
			break;
		if (!fgets(text + len, cap - len, f))
			break;
		if (text[len] == '\n' && len)
			break;
		len += strlen(text + len);
	}
	fclose(f);
	if (text)
		text[len] = '\0';
	return text;
}

static int set_str(struct capture *cap, char **field_ptr, const char *value)
{
	if (*field_ptr || !value || !*value)
		return 0;
	*field_ptr = capture__strdup(cap, value);
	return *field_ptr ? 0 : -ENOMEM;
}

int hostinfo_fill(struct capture *cap)
{
	char cpuid[128], model[128];
	struct utsname u;
	char *text;
	int err = 0;

	if (!cap)
		return -EINVAL;
	if (!uname(&u)) {
		err = set_str(cap, &cap->host.hostname, u.nodename);
		if (!err)
			err = set_str(cap, &cap->host.osrelease, u.release);
		if (!err)
			err = set_str(cap, &cap->host.arch, u.machine);
		if (err)
			return err;
	}
	text = read_cpuinfo();
	if (text && !hostinfo_cpuid(text, cpuid, sizeof(cpuid), model, sizeof(model))) {
		err = set_str(cap, &cap->host.cpuid, cpuid);
		if (!err)
			err = set_str(cap, &cap->host.cpudesc, model);
	}
	free(text);
	if (!cap->host.nr_cpus_online)
		cap->host.nr_cpus_online = sysconf(_SC_NPROCESSORS_ONLN);
	if (!cap->host.nr_cpus_avail)
		cap->host.nr_cpus_avail = sysconf(_SC_NPROCESSORS_CONF);
	return err;
}
