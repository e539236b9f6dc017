// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include "commands.h"
#include "log.h"

int cmd_capture(struct capture_opts *opts)
{
	elog("capture: not implemented yet\n");
	return 2;
}
