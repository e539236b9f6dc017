// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include "commands.h"
#include "log.h"

int cmd_daemon(int argc, char **argv)
{
	elog("daemon: not implemented yet\n");
	return 2;
}
