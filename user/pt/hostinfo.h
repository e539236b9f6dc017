/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The capturing host, as perf.data's feature sections describe it (struct pd_host). */
#ifndef PTBPF_HOSTINFO_H
#define PTBPF_HOSTINFO_H

#include "perfdata.h"

/*
 * Fill the fields of cap->host that are still unset: hostname, osrelease, arch (uname),
 * cpudesc ("model name"), cpuid in perf's form "GenuineIntel,6,85,4" (vendor, family,
 * model, stepping from /proc/cpuinfo; the decoder picks libipt's errata from it) and the
 * CPU counts. Returns 0 or -ENOMEM / -EINVAL.
 */
int hostinfo_fill(struct capture *cap);

/*
 * perf's cpuid string from /proc/cpuinfo-formatted text (the first processor's block).
 * Returns 0, or -ENOENT if a field is missing.
 */
int hostinfo_cpuid(const char *cpuinfo, char *buf, size_t size, char *model, size_t model_size);

#endif /* PTBPF_HOSTINFO_H */
