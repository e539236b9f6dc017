/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Subcommands. Each takes its own argv (argv[0] is "ptbpf <cmd>") and returns the exit
 * status: 0 success, 1 failure of the job, 2 usage error or a capability the host lacks.
 */
#ifndef PTBPF_COMMANDS_H
#define PTBPF_COMMANDS_H

#include "cli.h"

int cmd_capture(struct capture_opts *opts);	/* user/capture_cmd.c */
int cmd_dry_run(struct capture_opts *opts);	/* user/dryrun.c */
int cmd_decode(int argc, char **argv);		/* user/decode_cmd.c */
/* `ptbpf decode --info FILE`: summary of a capture (user/decode_info.c). */
int cmd_decode_info(const char *path);
int cmd_doctor(int argc, char **argv);		/* user/doctor.c */
int cmd_daemon(int argc, char **argv);		/* user/daemon/daemon.c */
int cmd_symbols(int argc, char **argv);		/* user/symbols_cmd.c */
/* The functions of `bin` matching `pattern` (NULL: all), ranked, on stdout. */
int symbols_pick(const char *bin, const char *pattern);
int cmd_captures(int argc, char **argv);	/* user/captures_cmd.c */

#endif /* PTBPF_COMMANDS_H */
