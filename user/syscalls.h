/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* x86_64 syscall names and numbers (table generated at build time from asm/unistd_64.h). */
#ifndef PTBPF_SYSCALLS_H
#define PTBPF_SYSCALLS_H

/* The number of syscall `name`, or -ENOENT. */
int syscall_nr(const char *name);
/* The name of syscall `nr`, or NULL. */
const char *syscall_name(int nr);
/* Up to `max` known names close to `name` (for "did you mean"); returns how many. */
int syscall_suggest(const char *name, const char **out, int max);

#endif /* PTBPF_SYSCALLS_H */
