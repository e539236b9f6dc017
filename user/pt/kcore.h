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

/*
 * The JIT images of the BPF programs `prog_fds` (ptbpf's trigger programs: with --kernel
 * the trace runs through them, and through perf_tp_event() after them, up to the freeze),
 * which the kcore copy lacks: BPF JIT code lives in its own execmem allocations, outside
 * the kernel text and the module area. Written as `dir`/bpf_jit, an ELF core file laid
 * out as the kcore copy (one PT_LOAD per JITed function at its kernel address), and
 * named in `dir`/kallsyms ("ADDR t bpf_prog_TAG_NAME [bpf]", as /proc/kallsyms names
 * them when net.core.bpf_jit_kallsyms is on). The bytes and addresses come from
 * bpf_obj_get_info_by_fd(): jited_prog_insns, jited_ksyms, jited_func_lens, as perf
 * records them (tools/perf/util/bpf-event.c: perf_event__synthesize_one_bpf_prog(),
 * PERF_RECORD_KSYMBOL and HEADER_BPF_PROG_INFO). Returns 0, -EPERM when the kernel
 * hides JIT code or addresses (bpf_dump_raw_ok(): kptr_restrict, no CAP_SYSLOG),
 * -ENOENT when a program is not JITed, or -errno; prints one line saying what failed.
 */
int kcore_add_bpf_jit(const char *dir, const int *prog_fds, int nr);

#endif /* PTBPF_KCORE_H */
