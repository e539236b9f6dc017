// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The singlestep backend's address-space model: executable mappings from /proc, code
 * from the mapped file even where memory holds a breakpoint, anonymous code kept from
 * memory, mappings that come and go, and reads after the process is gone.
 */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "perfdata.h"
#include "ss_insn.h"
#include "ss_mm.h"

static int nr_new_maps;

static int count_map(void *ctx, struct ss_mm *mm, const struct ss_map *m)
{
	nr_new_maps++;
	return 0;
}

__attribute__((noinline)) int probe_me(int x)
{
	return x * 3 + 1;
}

static void test_self_maps(void **state)
{
	const struct ss_map *maps, *m;
	struct ss_mm *mm;
	size_t nr, i;
	bool vdso = false;

	nr_new_maps = 0;
	assert_int_equal(ss_mm__new(getpid(), 7, count_map, NULL, &mm), 0);
	assert_int_equal(ss_mm__id(mm), 7);
	assert_int_equal(ss_mm__pid(mm), getpid());
	maps = ss_mm__maps(mm, &nr);
	assert_int_equal(nr, nr_new_maps);
	for (i = 0; i < nr; i++)
		vdso |= maps[i].kind == SS_MAP_VDSO;
	assert_true(vdso);
	m = ss_mm__find(mm, (uint64_t)(uintptr_t)probe_me);
	assert_non_null(m);
	assert_int_equal(m->kind, SS_MAP_FILE);
	assert_true(m->fd >= 0);
	assert_null(ss_mm__find(mm, 0x1000));
	ss_mm__free(mm);
	ss_mm__free(NULL);
}

/* A forked copy has the same live mappings; each one's MMAP2 record names it. */
static void test_fork_and_records(void **state)
{
	const struct ss_map *maps, *cmaps;
	struct ss_mm *mm, *child;
	struct pd_record r;
	size_t nr, cnr, i;

	assert_int_equal(ss_mm__new(getpid(), 1, NULL, NULL, &mm), 0);
	assert_int_equal(ss_mm__fork(mm, 4242, 2, &child), 0);
	assert_int_equal(ss_mm__pid(child), 4242);
	assert_int_equal(ss_mm__id(child), 2);
	maps = ss_mm__maps(mm, &nr);
	cmaps = ss_mm__maps(child, &cnr);
	assert_true(nr > 0);
	assert_int_equal(cnr, nr);
	for (i = 0; i < nr; i++) {
		assert_int_equal(cmaps[i].start, maps[i].start);
		assert_int_equal(cmaps[i].end, maps[i].end);
		assert_int_equal(cmaps[i].pgoff, maps[i].pgoff);
		assert_int_equal(cmaps[i].prot, maps[i].prot);
		assert_int_equal(cmaps[i].ino, maps[i].ino);
		assert_int_equal(cmaps[i].kind, maps[i].kind);
		assert_string_equal(cmaps[i].name, maps[i].name);
		assert_true(maps[i].kind != SS_MAP_FILE || cmaps[i].fd >= 0);
		assert_true(maps[i].kind != SS_MAP_FILE || cmaps[i].fd != maps[i].fd);

		ss_map__record(&cmaps[i], 4242, &r);
		assert_int_equal(r.type, PERF_RECORD_MMAP2);
		assert_int_equal(r.misc, PERF_RECORD_MISC_USER);
		assert_int_equal(r.mmap.pid, 4242);
		assert_int_equal(r.mmap.tid, 4242);
		assert_int_equal(r.mmap.addr, maps[i].start);
		assert_int_equal(r.mmap.len, maps[i].end - maps[i].start);
		assert_int_equal(r.mmap.pgoff, maps[i].pgoff);
		assert_int_equal(r.mmap.maj, maps[i].maj);
		assert_int_equal(r.mmap.min, maps[i].min);
		assert_int_equal(r.mmap.ino, maps[i].ino);
		assert_int_equal(r.mmap.prot, maps[i].prot);
		assert_int_equal(r.mmap.flags, maps[i].flags);
		assert_ptr_equal(r.mmap.filename, cmaps[i].name);
	}
	ss_mm__free(child);
	ss_mm__free(mm);
}

/* The decoder's view of our own code equals capstone on the bytes in memory. */
static void test_insn_matches_memory(void **state)
{
	uint64_t ip = (uint64_t)(uintptr_t)probe_me;
	struct ss_insn a, b;
	struct ss_dis *dis;
	struct ss_mm *mm;
	uint8_t buf[16];
	int i;

	assert_int_equal(ss_dis__new(&dis), 0);
	assert_int_equal(ss_mm__new(getpid(), 0, NULL, NULL, &mm), 0);
	for (i = 0; i < 8; i++) {
		assert_int_equal(ss_mm__insn(mm, dis, ip, &a), 0);
		assert_int_equal(ss_dis__decode(dis, (const uint8_t *)(uintptr_t)ip, 15, ip, &b),
				 0);
		assert_int_equal(a.len, b.len);
		assert_int_equal(a.cls, b.cls);
		assert_int_equal(ss_mm__read(mm, ip, buf, sizeof(buf)), sizeof(buf));
		assert_memory_equal(buf, (const void *)(uintptr_t)ip, sizeof(buf));
		/* Cached the second time round: same answer. */
		assert_int_equal(ss_mm__insn(mm, dis, ip, &b), 0);
		assert_int_equal(a.len, b.len);
		ip += a.len;
	}
	ss_mm__free(mm);
	ss_dis__free(dis);
}

/* An executable anonymous mapping appears, is read from memory, and goes. */
static void test_anon_code_refresh(void **state)
{
	static const uint8_t code[] = { 0x48, 0x89, 0xf8, 0xc3 };	/* mov %rdi,%rax; ret */
	struct ss_insn insn;
	struct ss_dis *dis;
	struct ss_mm *mm;
	const struct ss_map *m;
	uint8_t *p, buf[4];

	assert_int_equal(ss_dis__new(&dis), 0);
	nr_new_maps = 0;
	assert_int_equal(ss_mm__new(getpid(), 0, count_map, NULL, &mm), 0);
	nr_new_maps = 0;
	p = mmap(NULL, 4096, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1,
		 0);
	assert_true(p != MAP_FAILED);
	memcpy(p, code, sizeof(code));
	assert_int_equal(ss_mm__refresh(mm), 1);
	assert_int_equal(nr_new_maps, 1);
	m = ss_mm__find(mm, (uint64_t)(uintptr_t)p);
	assert_non_null(m);
	assert_int_equal(m->kind, SS_MAP_ANON);
	assert_int_equal(ss_mm__insn(mm, dis, (uint64_t)(uintptr_t)p, &insn), 0);
	assert_int_equal(insn.cls, SS_INSN_OTHER);
	assert_int_equal(insn.len, 3);
	assert_int_equal(ss_mm__insn(mm, dis, (uint64_t)(uintptr_t)p + 3, &insn), 0);
	assert_int_equal(insn.cls, SS_INSN_RET);
	munmap(p, 4096);
	assert_int_equal(ss_mm__refresh(mm), 1);
	assert_null(ss_mm__find(mm, (uint64_t)(uintptr_t)p));
	/* Gone, but the kept page still answers for trace that ran there. */
	assert_int_equal(ss_mm__read(mm, (uint64_t)(uintptr_t)p, buf, 4), 4);
	assert_memory_equal(buf, code, 4);
	/* Live lookups no longer find it. */
	assert_int_equal(ss_mm__insn(mm, dis, (uint64_t)(uintptr_t)p, &insn), -EFAULT);
	ss_mm__free(mm);
	ss_dis__free(dis);
}

/* A probed instruction: 0xcc in memory, the original instruction from the file. */
static void test_breakpoint_reads_file(void **state)
{
	uint64_t ip = (uint64_t)(uintptr_t)probe_me;
	struct ss_insn mem_view, file_view;
	struct ss_dis *dis;
	struct ss_mm *mm;
	long word;
	int status;
	pid_t pid;

	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		/* Dies with the test, should an assertion leave it behind. */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		for (;;)
			pause();
	}
	assert_int_equal(ptrace(PTRACE_SEIZE, pid, 0, 0), 0);
	assert_int_equal(ptrace(PTRACE_INTERRUPT, pid, 0, 0), 0);
	assert_int_equal(waitpid(pid, &status, __WALL), pid);
	assert_int_equal(ss_dis__new(&dis), 0);
	assert_int_equal(ss_mm__new(pid, 0, NULL, NULL, &mm), 0);
	assert_int_equal(ss_mm__insn(mm, dis, ip, &file_view), 0);
	errno = 0;
	word = ptrace(PTRACE_PEEKTEXT, pid, (void *)(uintptr_t)ip, 0);
	assert_int_equal(errno, 0);
	assert_int_equal(ptrace(PTRACE_POKETEXT, pid, (void *)(uintptr_t)ip,
				(void *)((word & ~0xffL) | 0xcc)), 0);
	assert_int_equal(ss_mm__mem_byte(mm, pid, ip), 0xcc);
	/* A fresh model: nothing cached, the bytes still come from the file. */
	ss_mm__free(mm);
	assert_int_equal(ss_mm__new(pid, 0, NULL, NULL, &mm), 0);
	assert_int_equal(ss_mm__insn(mm, dis, ip, &mem_view), 0);
	assert_int_equal(mem_view.len, file_view.len);
	assert_int_equal(mem_view.cls, file_view.cls);
	kill(pid, SIGKILL);
	waitpid(pid, &status, __WALL);
	/* The process is gone; its file is still open. */
	assert_int_equal(ss_mm__read(mm, ip, (uint8_t *)&word, 1), 1);
	assert_int_equal(*(uint8_t *)&word, *(const uint8_t *)(uintptr_t)ip);
	assert_true(ss_mm__mem_byte(mm, pid, ip) < 0);
	ss_mm__free(mm);
	ss_dis__free(dis);
}

static void test_learn_and_errors(void **state)
{
	struct ss_insn insn = { .len = 6, .cls = SS_INSN_OTHER }, got;
	uint64_t ip = (uint64_t)(uintptr_t)probe_me;
	struct ss_dis *dis;
	struct ss_mm *mm;

	assert_int_equal(ss_dis__new(&dis), 0);
	assert_int_equal(ss_mm__new(4194305, 0, NULL, NULL, &mm), -ESRCH);
	assert_int_equal(ss_mm__new(getpid(), 0, NULL, NULL, &mm), 0);
	/* What a step showed overrides decoding at that address. */
	assert_int_equal(ss_mm__learn(mm, ip, &insn), 0);
	assert_int_equal(ss_mm__insn(mm, dis, ip, &got), 0);
	assert_int_equal(got.len, 6);
	/* [uprobes] lengths only make sense within a [uprobes] page. */
	insn = (struct ss_insn){ .len = 4, .cls = SS_INSN_OTHER };
	assert_int_equal(ss_mm__learn_uprobes(mm, 0xfff, &insn), -EINVAL);
	insn.len = 0;
	assert_int_equal(ss_mm__learn_uprobes(mm, 0x1000, &insn), -EINVAL);
	insn = (struct ss_insn){ .len = 3, .cls = SS_INSN_RET };
	assert_int_equal(ss_mm__learn_uprobes(mm, 0x1000, &insn), -EINVAL);
	insn = (struct ss_insn){ .len = 2, .cls = SS_INSN_JCC };
	assert_int_equal(ss_mm__learn_uprobes(mm, 0x1000, &insn), -EINVAL);
	assert_int_equal(ss_mm__insn(mm, dis, 0x1000, &got), -EFAULT);
	ss_mm__free(mm);
	ss_dis__free(dis);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_self_maps),
		cmocka_unit_test(test_fork_and_records),
		cmocka_unit_test(test_insn_matches_memory),
		cmocka_unit_test(test_anon_code_refresh),
		cmocka_unit_test(test_breakpoint_reads_file),
		cmocka_unit_test(test_learn_and_errors),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
