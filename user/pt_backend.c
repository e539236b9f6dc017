// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The pt backend: per-CPU Intel PT events in overwrite mode (notes/kernel-pt-abi.md).
 * Detection is shared with `ptbpf doctor` through user/pt_pmu.c, so the message a
 * capture prints when PT is missing is the line doctor prints.
 */
#include <errno.h>

#include "backend.h"
#include "log.h"
#include "pt_pmu.h"

static bool pt_usable(char *why, size_t why_size)
{
	return pt_pmu_usable(pt_sysfs_root(), why, why_size);
}

static int pt_open(const struct capture_opts *opts, struct target *t, struct backend **out)
{
	char why[512];

	if (!pt_usable(why, sizeof(why))) {
		elog("--backend pt: %s\n", why);
		return -ENODEV;
	}
	elog("--backend pt: capturing is not implemented yet\n");
	return -EOPNOTSUPP;
}

static int pt_not_open(struct backend *b)
{
	return -EINVAL;
}

static int pt_run(struct backend *b, const struct run_hooks *hooks)
{
	return -EINVAL;
}

static int pt_snapshot(struct backend *b, struct capture *cap)
{
	return -EINVAL;
}

static const char *pt_describe(struct backend *b)
{
	return "pt";
}

static void pt_close(struct backend *b)
{
}

const struct backend_ops pt_backend_ops = {
	.name = "pt",
	.usable = pt_usable,
	.open = pt_open,
	.start = pt_not_open,
	.run = pt_run,
	.freeze = pt_not_open,
	.snapshot = pt_snapshot,
	.resume = pt_not_open,
	.describe = pt_describe,
	.close = pt_close,
};
