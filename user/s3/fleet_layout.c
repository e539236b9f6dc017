// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The fleet's key layout (see fleet_layout.h): one function for writer and readers. */
#include <errno.h>
#include <stdio.h>
#include <time.h>

#include "fleet_layout.h"

int fleet_key(const char *prefix, const char *rule, int64_t day_s, const char *host,
	      const char *name, char *buf, size_t size)
{
	time_t t = (time_t)day_s;
	struct tm tm;
	int n;

	if (!prefix)
		prefix = "";
	if (!rule)
		n = snprintf(buf, size, "%s%sv1/", prefix, *prefix ? "/" : "");
	else if (day_s == FLEET_NO_DAY)
		n = snprintf(buf, size, "%s%sv1/%s/", prefix, *prefix ? "/" : "", rule);
	else if (!gmtime_r(&t, &tm))
		return -EINVAL;
	else
		n = snprintf(buf, size, "%s%sv1/%s/%04d/%02d/%02d/%s%s%s", prefix,
			     *prefix ? "/" : "", rule, tm.tm_year + 1900, tm.tm_mon + 1,
			     tm.tm_mday, host ? host : "", host ? "/" : "",
			     host && name ? name : "");
	return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : 0;
}
