// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <stdio.h>
#include <sys/mount.h>
#include <unistd.h>

#include "tracefs.h"

#define TRACEFS "/sys/kernel/tracing"
#define DEBUGFS_TRACING "/sys/kernel/debug/tracing"

const char *tracefs_path(bool *mounted_now)
{
	if (mounted_now)
		*mounted_now = false;
	/* An empty mount point has no events/ directory. */
	if (!access(TRACEFS "/events", F_OK))
		return TRACEFS;
	if (!access(DEBUGFS_TRACING "/events", F_OK))
		return DEBUGFS_TRACING;
	if (mount("nodev", TRACEFS, "tracefs", 0, NULL))
		return NULL;
	if (access(TRACEFS "/events", F_OK))
		return NULL;
	if (mounted_now)
		*mounted_now = true;
	return TRACEFS;
}

void tracefs_unmount(bool mounted_now)
{
	if (mounted_now)
		umount2(TRACEFS, MNT_DETACH);
}
