// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <string.h>

#include "commands.h"
#include "log.h"

int cmd_decode(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "--info"))
		return cmd_decode_info(argv[2]);
	elog("decode: not implemented yet\n");
	return 2;
}
