// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include "commands.h"
#include "log.h"

int cmd_doctor(int argc, char **argv)
{
	elog("doctor: not implemented yet\n");
	return 2;
}
