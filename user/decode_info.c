// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* `ptbpf decode --info FILE`: what a capture holds, without decoding it. */
#include <stdio.h>

#include "commands.h"
#include "log.h"
#include "perfdata.h"

int cmd_decode_info(const char *path)
{
	struct capture *cap = NULL;
	int err;

	if (!path) {
		elog("decode --info: no capture file given\n");
		return 2;
	}
	/* perfdata_read() printed the reason. */
	err = perfdata_read(path, &cap);
	if (err)
		return 1;
	err = perfdata_print_info(cap, stdout);
	capture__free(cap);
	if (fflush(stdout) || err) {
		elog("decode --info: cannot write the summary\n");
		return 1;
	}
	return 0;
}
