// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * kcore_check DIR SYM...: the kcore copy a --kernel capture keeps, against the live kernel.
 * Copies /proc/kcore into DIR with kcore_copy() (user/kcore.c), then for each kernel
 * function SYM of the copy's kallsyms:
 *  - the copy's first KREAD_LEN bytes at SYM must equal what the kernel itself reads
 *    there (bpf_probe_read_kernel() in kread.bpf.c);
 *  - libipt, given the copy as the decoder's image (each PT_LOAD at its p_vaddr, as the
 *    decoder loads it) and a trace that enables tracing at SYM, must decode instructions
 *    from SYM's first byte, each the length capstone finds in the same bytes, up to the
 *    first branch whose outcome only a trace could tell.
 * Prints one line per function and a summary; exit 0 when every function passed, 1 when
 * one failed, 2 on a usage error or when the kernel cannot be read.
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <bpf/libbpf.h>
#include <capstone/capstone.h>
#include <intel-pt.h>

#include "kcore.h"
#include "kread.skel.h"

#define KREAD_LEN 64
#define MAX_INSNS 200

struct segment {
	uint64_t vaddr, offset, size;
};

struct kcore {
	char path[4096];
	int fd;
	struct segment seg[64];
	int nr_seg;
};

static int open_kcore(const char *dir, struct kcore *k)
{
	GElf_Phdr ph;
	size_t i, n;
	Elf *elf;
	int err = 0;

	snprintf(k->path, sizeof(k->path), "%s/kcore", dir);
	k->fd = open(k->path, O_RDONLY | O_CLOEXEC);
	if (k->fd < 0)
		return -errno;
	elf_version(EV_CURRENT);
	elf = elf_begin(k->fd, ELF_C_READ, NULL);
	if (!elf || elf_getphdrnum(elf, &n)) {
		err = -EINVAL;
		goto cleanup;
	}
	for (i = 0; i < n && k->nr_seg < 64; i++) {
		if (!gelf_getphdr(elf, i, &ph) || ph.p_type != PT_LOAD)
			continue;
		k->seg[k->nr_seg++] = (struct segment){ ph.p_vaddr, ph.p_offset, ph.p_filesz };
	}
	if (!k->nr_seg)
		err = -EINVAL;
cleanup:
	elf_end(elf);
	return err;
}

static int read_copy(const struct kcore *k, uint64_t addr, uint8_t *buf, size_t len)
{
	int i;

	for (i = 0; i < k->nr_seg; i++) {
		const struct segment *s = &k->seg[i];

		if (addr < s->vaddr || addr + len > s->vaddr + s->size)
			continue;
		if (pread(k->fd, buf, len, s->offset + (addr - s->vaddr)) != (ssize_t)len)
			return -EIO;
		return 0;
	}
	return -ERANGE;
}

/* SYM's address in the copy's kallsyms (a text symbol of the kernel itself). */
static int lookup(const char *dir, const char *sym, uint64_t *addr)
{
	char path[4096], line[512], name[256], type;
	unsigned long long a;
	FILE *f;
	int err = -ENOENT;

	snprintf(path, sizeof(path), "%s/kallsyms", dir);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%llx %c %255s", &a, &type, name) != 3 || strchr(line, '['))
			continue;
		if ((type == 't' || type == 'T') && !strcmp(name, sym)) {
			*addr = a;
			err = 0;
			break;
		}
	}
	fclose(f);
	return err;
}

/* The kernel's own view of KREAD_LEN bytes at addr. */
static int read_live(struct kread_bpf *skel, uint64_t addr, uint8_t *buf)
{
	uint64_t before = skel->bss->reads;

	skel->bss->addr = addr;
	syscall(SYS_getppid);
	if (skel->bss->reads == before)
		return -EIO;
	if (skel->bss->read_err)
		return (int)skel->bss->read_err;
	memcpy(buf, (const void *)skel->bss->bytes, KREAD_LEN);
	return 0;
}

/* A trace that enables tracing at ip in 64-bit mode, and nothing more. */
static size_t encode_enable(uint8_t *buf, size_t size, uint64_t ip)
{
	struct pt_packet p[] = {
		{ .type = ppt_psb },
		{ .type = ppt_mode, .payload.mode = { .leaf = pt_mol_exec,
						      .bits.exec = { .csl = 1 } } },
		{ .type = ppt_psbend },
		{ .type = ppt_tip_pge, .payload.ip = { .ipc = pt_ipc_full, .ip = ip } },
	};
	struct pt_encoder *e;
	struct pt_config cfg;
	uint64_t off = 0;
	size_t i;

	pt_config_init(&cfg);
	cfg.begin = buf;
	cfg.end = buf + size;
	e = pt_alloc_encoder(&cfg);
	if (!e)
		return 0;
	for (i = 0; i < sizeof(p) / sizeof(p[0]); i++)
		if (pt_enc_next(e, &p[i]) < 0)
			break;
	if (i < sizeof(p) / sizeof(p[0]) || pt_enc_get_offset(e, &off) < 0)
		off = 0;
	pt_free_encoder(e);
	return off;
}

/*
 * Decode from ip with libipt over the copy; compare each instruction of the straight-line
 * run from ip with capstone's reading of `bytes`. *nr: instructions libipt decoded;
 * *checked: bytes of the straight-line run compared.
 */
static int decode(struct pt_image *image, csh cs, uint64_t ip, const uint8_t *bytes,
		  int *nr, size_t *checked, char *why, size_t why_size)
{
	uint8_t trace[256];
	struct pt_insn_decoder *d;
	struct pt_config cfg;
	struct pt_event ev;
	struct pt_insn insn;
	uint64_t next = ip;
	cs_insn *ci = NULL;
	size_t n_cs, k = 0;
	int status, err = 0;

	*nr = 0;
	*checked = 0;
	pt_config_init(&cfg);
	cfg.begin = trace;
	cfg.end = trace + encode_enable(trace, sizeof(trace), ip);
	if (cfg.end == cfg.begin) {
		snprintf(why, why_size, "cannot encode the trace");
		return -EINVAL;
	}
	d = pt_insn_alloc_decoder(&cfg);
	if (!d)
		return -ENOMEM;
	pt_insn_set_image(d, image);
	n_cs = cs_disasm(cs, bytes, KREAD_LEN, ip, 0, &ci);
	status = pt_insn_sync_forward(d);
	while (status >= 0 && *nr < MAX_INSNS) {
		while (status & pts_event_pending) {
			status = pt_insn_event(d, &ev, sizeof(ev));
			if (status < 0)
				break;
		}
		if (status < 0)
			break;
		status = pt_insn_next(d, &insn, sizeof(insn));
		if (status < 0)
			break;
		(*nr)++;
		if (insn.ip != next)
			continue;	/* followed a jump or call: past the bytes compared */
		if (k >= n_cs || ci[k].address != insn.ip) {
			if (insn.ip + insn.size <= ip + KREAD_LEN) {
				snprintf(why, why_size, "libipt decoded an instruction at 0x%" PRIx64
					 " where capstone has none", insn.ip);
				err = -EINVAL;
				break;
			}
			continue;
		}
		if (ci[k].size != insn.size || memcmp(insn.raw, bytes + (insn.ip - ip), insn.size)) {
			snprintf(why, why_size, "at 0x%" PRIx64 ": libipt reads %u bytes, capstone %u "
				 "(%s %s)", insn.ip, insn.size, ci[k].size, ci[k].mnemonic,
				 ci[k].op_str);
			err = -EINVAL;
			break;
		}
		*checked = insn.ip + insn.size - ip;
		next = insn.ip + insn.size;
		k++;
	}
	/* The trace ends at the first branch it would have to tell: that is expected. */
	if (!err && status < 0 && status != -pte_eos) {
		snprintf(why, why_size, "libipt: %s after %d instructions", pt_errstr(pt_errcode(status)),
			 *nr);
		err = -EINVAL;
	}
	if (!err && !*nr) {
		snprintf(why, why_size, "libipt decoded no instruction");
		err = -EINVAL;
	}
	cs_free(ci, n_cs);
	pt_insn_free_decoder(d);
	return err;
}

int main(int argc, char **argv)
{
	struct kcore_src src = { 0 };
	struct kread_bpf *skel = NULL;
	struct pt_image *image = NULL;
	struct kcore k = { .fd = -1 };
	uint8_t copy[KREAD_LEN], live[KREAD_LEN];
	int i, j, err, bad = 0, status = 2;
	csh cs = 0;

	if (argc < 3) {
		fprintf(stderr, "usage: kcore_check DIR SYM...\n");
		return 2;
	}
	err = kcore_copy(&src, argv[1]);
	if (err)
		return 2;	/* kcore_copy() said why */
	err = open_kcore(argv[1], &k);
	if (err) {
		fprintf(stderr, "kcore_check: %s/kcore: not an ELF core with PT_LOADs: %s\n",
			argv[1], strerror(-err));
		goto cleanup;
	}
	image = pt_image_alloc("kcore");
	for (i = 0; image && i < k.nr_seg; i++) {
		err = pt_image_add_file(image, k.path, k.seg[i].offset, k.seg[i].size, NULL,
					k.seg[i].vaddr);
		if (err < 0) {
			fprintf(stderr, "kcore_check: libipt cannot map %s at 0x%" PRIx64 ": %s\n",
				k.path, k.seg[i].vaddr, pt_errstr(pt_errcode(err)));
			goto cleanup;
		}
	}
	if (!image || cs_open(CS_ARCH_X86, CS_MODE_64, &cs) != CS_ERR_OK) {
		fprintf(stderr, "kcore_check: cannot set up libipt or capstone\n");
		goto cleanup;
	}
	skel = kread_bpf__open();
	if (!skel)
		goto bpf_failed;
	skel->rodata->targ_tgid = getpid();
	if (kread_bpf__load(skel) || kread_bpf__attach(skel))
		goto bpf_failed;

	for (i = 2; i < argc; i++) {
		const char *sym = argv[i];
		uint64_t addr = 0;
		size_t checked;
		char why[256] = "";
		int nr;

		err = lookup(argv[1], sym, &addr);
		if (!err)
			err = read_copy(&k, addr, copy, KREAD_LEN);
		if (err) {
			printf("%s: not in the copy (%s)\n", sym, strerror(-err));
			bad++;
			continue;
		}
		err = read_live(skel, addr, live);
		if (err) {
			printf("%s 0x%" PRIx64 ": the kernel cannot read it: %s\n", sym, addr,
			       strerror(-err));
			bad++;
			continue;
		}
		for (j = 0; j < KREAD_LEN && copy[j] == live[j]; j++)
			;
		if (j < KREAD_LEN) {
			printf("%s 0x%" PRIx64 ": byte %d differs: copy 0x%02x, live kernel 0x%02x\n",
			       sym, addr, j, copy[j], live[j]);
			bad++;
			continue;
		}
		err = decode(image, cs, addr, copy, &nr, &checked, why, sizeof(why));
		if (err) {
			printf("%s 0x%" PRIx64 ": %s\n", sym, addr, why);
			bad++;
			continue;
		}
		printf("%s 0x%" PRIx64 ": %d bytes equal to the live kernel's; libipt decoded %d "
		       "instructions from the start, the first %zu bytes as capstone reads them\n",
		       sym, addr, KREAD_LEN, nr, checked);
	}
	printf("%d of %d functions: copy equal to the live kernel and decoded by libipt\n",
	       argc - 2 - bad, argc - 2);
	status = bad ? 1 : 0;
	goto cleanup;

bpf_failed:
	fprintf(stderr, "kcore_check: cannot load the BPF reader of kernel memory: %s\n",
		strerror(errno));
cleanup:
	kread_bpf__destroy(skel);
	if (cs)
		cs_close(&cs);
	pt_image_free(image);
	if (k.fd >= 0)
		close(k.fd);
	return status;
}
