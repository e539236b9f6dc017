// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <fcntl.h>
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
	bool denied;

	/*
	 * An empty mount point has no events/ directory. With the effective ids and
	 * capabilities (AT_EACCESS): access() would drop CAP_DAC_READ_SEARCH of a non-root user.
	 */
	if (!faccessat(AT_FDCWD, TRACEFS "/events", F_OK, AT_EACCESS))
		return TRACEFS;
	denied = errno == EACCES;
	if (!faccessat(AT_FDCWD, DEBUGFS_TRACING "/events", F_OK, AT_EACCESS))
		return DEBUGFS_TRACING;
	if (denied) {
		/* mounted, but root's only (0700): mounting it again would not help */
		errno = EACCES;
		return NULL;
	}
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
