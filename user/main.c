// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* ptbpf entry point: subcommand dispatch; capture is the default mode. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"
#include "cli.h"
#include "commands.h"
#include "log.h"
#include "privs.h"

static const struct {
	const char *name;
	int (*fn)(int argc, char **argv);
} subcommands[] = {
	{ "decode", cmd_decode },
	{ "doctor", cmd_doctor },
	{ "daemon", cmd_daemon },
	{ "symbols", cmd_symbols },
	{ "captures", cmd_captures },
};

int main(int argc, char **argv)
{
	struct capture_opts opts;
	char name[64];
	size_t i;
	int err;

	setvbuf(stdout, NULL, _IOLBF, BUFSIZ);
	/* before anything is opened; a refusal leaves the limit as it was */
	privs_raise_nofile();
	if (argc > 1) {
		for (i = 0; i < ARRAY_SIZE(subcommands); i++) {
			if (strcmp(argv[1], subcommands[i].name))
				continue;
			/* argp names itself after argv[0]: "ptbpf doctor". */
			snprintf(name, sizeof(name), "ptbpf %s", subcommands[i].name);
			argv[1] = name;
			return subcommands[i].fn(argc - 1, argv + 1);
		}
	}

	err = cli_parse_capture(argc, argv, &opts);
	if (err) {
		cli_free_capture(&opts);
		return err;
	}
	if (opts.pick_bin)
		err = symbols_pick(opts.pick_bin, opts.pick_pattern);
	else
		err = opts.dry_run ? cmd_dry_run(&opts) : cmd_capture(&opts);
	cli_free_capture(&opts);
	return err;
}
