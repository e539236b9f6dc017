/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The running kernel's build configuration, for messages that name what is missing
 * ("CONFIG_KPROBES is not set"): /proc/config.gz, else /boot/config-$(uname -r).
 */
#ifndef PTBPF_KCONFIG_H
#define PTBPF_KCONFIG_H

#include <stddef.h>

/*
 * Look up `name` ("CONFIG_KPROBES"). Returns 1 and copies its value ("y", "m", a string)
 * into `val` when set, 0 when the config says it is not set (or does not list it), and
 * -ENOENT when no configuration of the running kernel is readable. `source` (optional)
 * gets the file that answered.
 */
int kconfig_get(const char *name, char *val, size_t val_size, const char **source);

#endif /* PTBPF_KCONFIG_H */
