/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The singlestep backend's view of one traced address space: its executable mappings
 * (from /proc/PID/maps), the bytes of their code, and the class of each instruction
 * executed there (cached by address).
 *
 * Code comes from the mapped file, not from process memory: a uprobe shows as 0xcc in
 * memory (notes/uprobes-and-singlestep.md), the file has the instruction the decoder
 * will see. Anonymous code and the vDSO are read from memory, page by page, and kept;
 * the unreadable `[uprobes]` page is rebuilt from what stepping through it showed.
 * Mappings and kept pages outlive the process, so a trace can be checked after exit.
 */
#ifndef PTBPF_SS_MM_H
#define PTBPF_SS_MM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "ss_insn.h"

enum ss_map_kind {
	SS_MAP_FILE = 0,	/* backed by a file we hold open */
	SS_MAP_ANON,		/* anonymous or unreadable file: read from memory */
	SS_MAP_VDSO,		/* [vdso] */
	SS_MAP_UPROBES,		/* [uprobes]: unreadable, rebuilt from the steps */
	SS_MAP_SPECIAL,		/* [vsyscall] and other [names] */
};

struct ss_map {
	uint64_t start, end;	/* [start, end) */
	uint64_t pgoff;		/* file offset of start */
	uint32_t prot;		/* PROT_* */
	uint32_t flags;		/* MAP_PRIVATE / MAP_SHARED */
	uint32_t maj, min;	/* device of the file */
	uint64_t ino;		/* inode of the file, 0 if none */
	char *name;		/* as /proc/PID/maps names it ("//anon" when nameless) */
	enum ss_map_kind kind;
	int fd;			/* SS_MAP_FILE: the mapped file, else -1 */
	bool gone;		/* unmapped since (kept for reading old trace) */
};

struct ss_mm;

/* Called for every executable mapping that appears (the caller writes MMAP2). */
typedef int (*ss_mm_map_cb)(void *ctx, struct ss_mm *mm, const struct ss_map *map);

/*
 * Read the executable mappings of `pid` (cb is called for each). `id` names the
 * address space in the caller's logs. Returns 0, -ESRCH or -errno.
 */
int ss_mm__new(pid_t pid, int id, ss_mm_map_cb cb, void *ctx, struct ss_mm **out);
void ss_mm__free(struct ss_mm *mm);

pid_t ss_mm__pid(const struct ss_mm *mm);
int ss_mm__id(const struct ss_mm *mm);
/* A copy for a forked child (same mappings, files shared by dup). */
int ss_mm__fork(const struct ss_mm *parent, pid_t child, int id, struct ss_mm **out);

/*
 * Re-read the maps (after mmap, mprotect, munmap...); cb for each new executable
 * mapping. Returns how many mappings appeared or went, or -errno.
 */
int ss_mm__refresh(struct ss_mm *mm);

/* The live mapping holding `ip`, NULL if none (refresh first if unsure). */
const struct ss_map *ss_mm__find(const struct ss_mm *mm, uint64_t ip);

/*
 * Decode the instruction at `ip`. Returns 0; -EFAULT if no executable mapping holds
 * it (after one refresh) or its bytes cannot be read; -EINVAL if they are no
 * instruction; -EAGAIN for [uprobes] code (see ss_mm__learn_uprobes()).
 */
int ss_mm__insn(struct ss_mm *mm, struct ss_dis *dis, uint64_t ip, struct ss_insn *out);

/*
 * Record what a step through the [uprobes] page showed: the instruction at `ip` is
 * insn->len bytes long and of class insn->cls: SS_INSN_OTHER (no branch), SS_INSN_SYSCALL
 * (the uretprobe system call) or SS_INSN_RET (the trampoline's final ret: the step left
 * the page without a system call). Its bytes are rebuilt (a NOP of that length, 0f 05,
 * c3) so the trace decodes. -EINVAL for anything else.
 */
int ss_mm__learn_uprobes(struct ss_mm *mm, uint64_t ip, const struct ss_insn *insn);

/* Remember the class of the instruction at `ip`, found by other means than decoding. */
int ss_mm__learn(struct ss_mm *mm, uint64_t ip, const struct ss_insn *insn);

/*
 * Copy up to `size` code bytes at `ip`, as the decoder should see them (also from
 * mappings that are gone). Returns the number of bytes, or -EFAULT if none.
 */
int ss_mm__read(struct ss_mm *mm, uint64_t ip, uint8_t *buf, size_t size);

/* The byte at `ip` in process memory (PTRACE_PEEKTEXT), -errno if unreadable. */
int ss_mm__mem_byte(struct ss_mm *mm, pid_t tid, uint64_t ip);

/* Whether a live [uprobes] mapping is known. */
bool ss_mm__has_uprobes(const struct ss_mm *mm);

/* Executable mappings, including gone ones, in the order they appeared. */
const struct ss_map *ss_mm__maps(const struct ss_mm *mm, size_t *nr);

struct pd_record;

/* The MMAP2 record of mapping `m` of process `pid` (its filename points to m->name). */
void ss_map__record(const struct ss_map *m, pid_t pid, struct pd_record *r);

#endif /* PTBPF_SS_MM_H */
