// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* kcore_copy() on fake /proc files: a kcore with three segments, kallsyms, modules. */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>
#include <bpf/bpf.h>

#include "kcore.h"

#define TEXT 0xffffffff81000000ull
#define TEXT_LEN 0x3000ull
#define DATA 0xffff888000000000ull
#define MODS 0xffffffffc0000000ull
#define MODS_LEN 0x4000ull

static char dir[128], kcore[160], kallsyms[160], modules[160], out[160];

static uint8_t byte_at(uint64_t vaddr)
{
	return (uint8_t)(vaddr * 7 + (vaddr >> 12));
}

/* An ELF64 core: PT_LOADs for text (and a page before it), data, modules. */
static void write_fake_kcore(void)
{
	const struct { uint64_t vaddr, len; } segs[] = {
		{ TEXT - 0x1000, TEXT_LEN + 0x2000 }, { DATA, 0x2000 }, { MODS, MODS_LEN },
	};
	Elf64_Ehdr eh = { .e_type = ET_CORE, .e_machine = EM_X86_64, .e_version = EV_CURRENT,
			  .e_phoff = sizeof(eh), .e_ehsize = sizeof(eh),
			  .e_phentsize = sizeof(Elf64_Phdr), .e_phnum = 3 };
	uint64_t off = 0x1000;
	int fd, i;

	memcpy(eh.e_ident, ELFMAG, SELFMAG);
	eh.e_ident[EI_CLASS] = ELFCLASS64;
	eh.e_ident[EI_DATA] = ELFDATA2LSB;
	eh.e_ident[EI_VERSION] = EV_CURRENT;
	fd = open(kcore, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(pwrite(fd, &eh, sizeof(eh), 0), sizeof(eh));
	for (i = 0; i < 3; i++) {
		Elf64_Phdr ph = { .p_type = PT_LOAD, .p_flags = PF_R | PF_W | PF_X,
				  .p_offset = off, .p_vaddr = segs[i].vaddr,
				  .p_filesz = segs[i].len, .p_memsz = segs[i].len };
		uint8_t *buf = malloc(segs[i].len);
		uint64_t j;

		for (j = 0; j < segs[i].len; j++)
			buf[j] = byte_at(segs[i].vaddr + j);
		assert_int_equal(pwrite(fd, &ph, sizeof(ph), sizeof(eh) + i * sizeof(ph)),
				 sizeof(ph));
		assert_int_equal(pwrite(fd, buf, segs[i].len, off), segs[i].len);
		off += segs[i].len;
		free(buf);
	}
	close(fd);
}

static void write_text(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static int setup(void **state)
{
	char kallsyms_text[512];

	snprintf(dir, sizeof(dir), "/tmp/ptbpf-test-kcore-%d", getpid());
	mkdir(dir, 0700);
	snprintf(kcore, sizeof(kcore), "%s/src-kcore", dir);
	snprintf(kallsyms, sizeof(kallsyms), "%s/src-kallsyms", dir);
	snprintf(modules, sizeof(modules), "%s/src-modules", dir);
	snprintf(out, sizeof(out), "%s/kcore_dir", dir);
	write_fake_kcore();
	snprintf(kallsyms_text, sizeof(kallsyms_text),
		 "%llx T _text\n%llx T _stext\n%llx T do_one_thing\n%llx T _etext\n"
		 "%llx t mod_fn\t[fake]\n", TEXT, TEXT, TEXT + 0x100, TEXT + TEXT_LEN,
		 MODS + 0x10);
	write_text(kallsyms, kallsyms_text);
	snprintf(kallsyms_text, sizeof(kallsyms_text),
		 "fake 8192 0 - Live 0x%llx\nother 8192 1 fake, Live 0x%llx\n", MODS,
		 MODS + 0x2000);
	write_text(modules, kallsyms_text);
	return 0;
}

static int teardown(void **state)
{
	char cmd[200];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	return system(cmd);
}

static void test_copy(void **state)
{
	struct kcore_src src = { kcore, kallsyms, modules };
	char path[256];
	Elf64_Ehdr eh;
	Elf64_Phdr ph[2];
	uint8_t *buf;
	uint64_t j;
	int fd, i;

	assert_int_equal(kcore_copy(&src, out), 0);
	snprintf(path, sizeof(path), "%s/kcore", out);
	fd = open(path, O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(pread(fd, &eh, sizeof(eh), 0), sizeof(eh));
	assert_memory_equal(eh.e_ident, ELFMAG, SELFMAG);
	assert_int_equal(eh.e_type, ET_CORE);
	/* text and the module area; not the data segment nor the page before _stext */
	assert_int_equal(eh.e_phnum, 2);
	assert_int_equal(pread(fd, ph, sizeof(ph), eh.e_phoff), sizeof(ph));
	assert_int_equal(ph[0].p_vaddr, TEXT);
	assert_int_equal(ph[0].p_filesz, TEXT_LEN);
	assert_int_equal(ph[1].p_vaddr, MODS);
	assert_int_equal(ph[1].p_filesz, MODS_LEN);
	for (i = 0; i < 2; i++) {
		assert_int_equal(ph[i].p_type, PT_LOAD);
		assert_int_equal(ph[i].p_offset % 4096, 0);
		buf = malloc(ph[i].p_filesz);
		assert_int_equal(pread(fd, buf, ph[i].p_filesz, ph[i].p_offset), ph[i].p_filesz);
		for (j = 0; j < ph[i].p_filesz; j++)
			if (buf[j] != byte_at(ph[i].p_vaddr + j))
				fail_msg("byte %llu of segment %d differs",
					 (unsigned long long)j, i);
		free(buf);
	}
	close(fd);
	/* kallsyms and modules whole */
	snprintf(path, sizeof(path), "%s/kallsyms", out);
	assert_int_equal(access(path, R_OK), 0);
	snprintf(path, sizeof(path), "%s/modules", out);
	assert_int_equal(access(path, R_OK), 0);
}

static void test_errors(void **state)
{
	struct kcore_src src = { kcore, kallsyms, modules };
	char hidden[200], no_mods[200];

	/* kptr_restrict: every address reads 0 */
	snprintf(hidden, sizeof(hidden), "%s/hidden-kallsyms", dir);
	write_text(hidden, "0000000000000000 T _stext\n0000000000000000 T _etext\n");
	src.kallsyms = hidden;
	assert_int_equal(kcore_copy(&src, out), -EACCES);
	/* no text symbols at all */
	write_text(hidden, "ffffffff81000000 T something\n");
	assert_int_equal(kcore_copy(&src, out), -EINVAL);
	src.kallsyms = kallsyms;
	/* kcore that is not an ELF core: kallsyms is not */
	src.kcore = kallsyms;
	assert_int_equal(kcore_copy(&src, out), -EINVAL);
	src.kcore = "/nonexistent/kcore";
	assert_int_equal(kcore_copy(&src, out), -ENOENT);
	src.kcore = kcore;
	/* no modules loaded: text only */
	snprintf(no_mods, sizeof(no_mods), "%s/empty-modules", dir);
	write_text(no_mods, "");
	src.modules = no_mods;
	assert_int_equal(kcore_copy(&src, out), 0);
	assert_int_equal(kcore_copy(&src, NULL), -EINVAL);
	assert_int_equal(kcore_copy(&src, ""), -EINVAL);
}

/*
 * The JIT image of a real program (a socket filter "r0 = 0; exit" loaded here): bpf_jit
 * holds its bytes at its address, kallsyms names it; what cannot be read is said.
 */
static void test_bpf_jit(void **state)
{
	struct bpf_insn prog[] = {
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = 0 },
		{ .code = BPF_JMP | BPF_EXIT },
	};
	struct bpf_prog_info info = {};
	__u32 len = sizeof(info);
	char dir[64], path[128], line[256], want[128];
	uint8_t insns[256], got[256];
	uint64_t ksym = 0;
	Elf64_Ehdr eh;
	Elf64_Phdr ph;
	bool named = false;
	int fd, kfd, bad = 12345;
	FILE *f;

	assert_int_equal(kcore_add_bpf_jit(NULL, &bad, 1), -EINVAL);
	assert_int_equal(kcore_add_bpf_jit("/nonexistent", NULL, 0), 0);	/* none: nothing */
	if (geteuid()) {
		printf("SKIP: loading a BPF program needs root\n");
		skip();
	}
	fd = bpf_prog_load(BPF_PROG_TYPE_SOCKET_FILTER, "kcore_test", "GPL", prog, 2, NULL);
	assert_true(fd >= 0);
	assert_int_equal(bpf_obj_get_info_by_fd(fd, &info, &len), 0);
	if (!info.jited_prog_len) {
		close(fd);
		printf("SKIP: net.core.bpf_jit_enable=0: no JIT image\n");
		skip();
	}
	assert_true(info.jited_prog_len <= sizeof(insns));
	len = info.jited_prog_len;
	memset(&info, 0, sizeof(info));
	info.jited_prog_len = len;
	info.jited_prog_insns = (uintptr_t)insns;
	info.nr_jited_ksyms = 1;
	info.jited_ksyms = (uintptr_t)&ksym;
	len = sizeof(info);
	assert_int_equal(bpf_obj_get_info_by_fd(fd, &info, &len), 0);

	snprintf(dir, sizeof(dir), "/tmp/ptbpf-test-jit-%d", getpid());
	assert_int_equal(mkdir(dir, 0700), 0);
	assert_int_equal(kcore_add_bpf_jit(dir, &fd, 1), 0);
	snprintf(path, sizeof(path), "%s/bpf_jit", dir);
	kfd = open(path, O_RDONLY);
	assert_true(kfd >= 0);
	assert_int_equal(pread(kfd, &eh, sizeof(eh), 0), sizeof(eh));
	assert_int_equal(eh.e_type, ET_CORE);
	assert_int_equal(eh.e_phnum, 1);
	assert_int_equal(pread(kfd, &ph, sizeof(ph), eh.e_phoff), sizeof(ph));
	assert_int_equal(ph.p_type, PT_LOAD);
	assert_int_equal(ph.p_vaddr, ksym);
	assert_int_equal(ph.p_filesz, info.jited_prog_len);
	assert_int_equal(pread(kfd, got, ph.p_filesz, ph.p_offset), (ssize_t)ph.p_filesz);
	assert_memory_equal(got, insns, ph.p_filesz);
	close(kfd);
	snprintf(path, sizeof(path), "%s/kallsyms", dir);
	f = fopen(path, "r");
	assert_non_null(f);
	snprintf(want, sizeof(want), "%016llx t bpf_prog_", (unsigned long long)ksym);
	while (fgets(line, sizeof(line), f))
		named |= !strncmp(line, want, strlen(want)) && strstr(line, "_kcore_test\t[bpf]");
	fclose(f);
	assert_true(named);
	/* a descriptor that is no program: one line, an error, no image */
	assert_int_equal(unlink(path), 0);
	snprintf(path, sizeof(path), "%s/bpf_jit", dir);
	assert_int_equal(unlink(path), 0);
	assert_true(kcore_add_bpf_jit(dir, &bad, 1) < 0);
	assert_int_not_equal(access(path, F_OK), 0);
	close(fd);
	snprintf(path, sizeof(path), "rm -rf %s", dir);
	assert_int_equal(system(path), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_copy),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_bpf_jit),
	};

	return cmocka_run_group_tests_name("kcore", tests, setup, teardown);
}
