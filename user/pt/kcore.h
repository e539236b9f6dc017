/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The kernel's code for decoding --kernel traces, copied as perf record --kcore does
 * (notes/kernel-pt-abi.md §6): a directory holding kallsyms and modules whole, and a
 * kcore with only the kernel text (_stext.._etext) and the module area, as an ELF core
 * file with one PT_LOAD per piece at its kernel address. libipt loads each PT_LOAD at
 * its p_vaddr; kallsyms and the copy come from the same moment.
 */
#ifndef PTBPF_KCORE_H
#define PTBPF_KCORE_H

/* Where to read from; NULL members mean /proc/kcore, /proc/kallsyms, /proc/modules. */
struct kcore_src {
	const char *kcore;
	const char *kallsyms;
	const char *modules;
};

/*
 * Fill `dir` (created if missing) with kcore, kallsyms and modules. Returns 0, or
 * -ENOENT / -EACCES when a source cannot be read, -EACCES when kallsyms shows no
 * addresses (kptr_restrict), -EINVAL when kcore is not an ELF64 core or has none of the
 * text, -EAGAIN when kallsyms kept changing during the copy (modules loading). Prints
 * one line saying what failed.
 */
int kcore_copy(const struct kcore_src *src, const char *dir);

#endif /* PTBPF_KCORE_H */
