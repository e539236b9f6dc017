/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The fleet's object layout in a bucket, written by the daemon's uploader and read by
 * `ptbpf captures ls|get`:
 *   PREFIX/v1/<rule>/<yyyy>/<mm>/<dd>/<host>/<name>
 * The date is the fire's UTC day, so one day of one rule is one listing prefix.
 */
#ifndef PTBPF_FLEET_LAYOUT_H
#define PTBPF_FLEET_LAYOUT_H

#include <stddef.h>
#include <stdint.h>

/* No day in the key: stop before the date (a listing prefix). */
#define FLEET_NO_DAY INT64_MIN

/*
 * The key of `name`, or, when a part is NULL (or day_s is FLEET_NO_DAY), the listing
 * prefix that ends with '/' just before it: fleet_key(p, NULL, ...) is "p/v1/",
 * fleet_key(p, "r", day, NULL, NULL) is "p/v1/r/2026/12/01/". `prefix` may be empty;
 * `day_s` is any second of the UTC day (wall clock). 0, or -ENAMETOOLONG / -EINVAL.
 */
int fleet_key(const char *prefix, const char *rule, int64_t day_s, const char *host,
	      const char *name, char *buf, size_t size);

#endif /* PTBPF_FLEET_LAYOUT_H */
