// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Test helper for the perf.data module:
 *
 *   perfdata_tool synth ELF OUT [--pad BYTES] [--vdso] [--vdso-call] [--per-thread]
 *                     [--timeless] [--aux-flags FLAGS] [--bpf-jit] [--expect]
 *       Writes OUT, a capture of one run of tests/targets/pd_calls (ELF) as the pt
 *       backend would record it on CPU 0: the intel_pt and sideband attrs,
 *       AUXTRACE_INFO, COMM/MMAP2/ITRACE_START/SWITCH_CPU_WIDE/EXIT/AUX, a trigger, and
 *       PT encoded with libipt's encoder for exactly pd_calls' control flow.
 *       --pad appends BYTES of PAD packets to the trace (to fill a disk); --vdso stores
 *       this process's vDSO; --per-thread records one AUX buffer for the thread, as
 *       `perf record --per-thread` or magic-trace do, with no context switch records;
 *       --timeless clears cap_user_time_zero (a kernel without TSC conversion);
 *       --bpf-jit (root) writes OUT as perf's directory form (OUT/data, OUT/kcore_dir)
 *       and makes the thread go on in the kernel after its system call, as a --kernel
 *       capture with the in-kernel freeze ends: a fake kernel function (kcore_dir/kcore)
 *       calls a real BPF program's JIT code (a socket filter loaded here, its image
 *       recorded by kcore_add_bpf_jit() as the pt backend does), which returns, and
 *       the trace ends; the JIT's jumps and calls out of its image land on `ret`s;
 *       --aux-flags adds a PERF_RECORD_AUX with PERF_AUX_FLAG_OVERWRITE | FLAGS
 *       (TRUNCATED 1, PARTIAL 4, COLLISION 8) on CPU 0 in the middle of the run, as the
 *       kernel reports lost or damaged trace;
 *       --vdso-call makes the indirect call go to __vdso_getcpu in the stored vDSO
 *       (mapped at VDSO_BASE) instead of leaf, its branches read from the image;
 *       --expect prints the calls and returns perf must report,
 *       one "call|return FROM TO" (symbols) per line, and writes nothing.
 *   perfdata_tool rewrite IN OUT [--no-vdso]
 *       Reads IN with perfdata_read() and writes it with perfdata_write(); --no-vdso
 *       leaves out the vDSO bytes (keeping its build id), as perf record's captures have
 *       them: only in a build-id cache.
 *   perfdata_tool install-vdso CAPTURE DIR
 *       Installs the capture's vDSO where perf looks for it, a build-id cache in DIR
 *       (`perf --buildid-dir DIR`): DIR/[vdso]/BUILDID/vdso and the link
 *       DIR/.build-id/BU/ILDID -> ../../[vdso]/BUILDID. Prints the build id.
 *
 * Exit status 0, or 1 with one error line.
 */
#include <capstone/capstone.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <intel-pt.h>
#include <libelf.h>
#include <limits.h>
#include <linux/types.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <sys/syscall.h>

#include "array.h"
#include "kcore.h"
#include "perfdata.h"
#include "symtab.h"
#include "trigger_abi.h"
#include "perfdata_int.h"

/* What pd_calls does, branch by branch (see tests/targets/pd_calls.c). */
enum step_kind { CALL, ICALL, RET, SYSCALL };

static const struct step {
	enum step_kind kind;
	const char *from, *to;		/* functions, for CALL/ICALL/RET */
} steps[] = {
	{ CALL, "_start", "a" },  { CALL, "a", "b" },	  { CALL, "b", "leaf" },
	{ RET, "leaf", "b" },	  { RET, "b", "a" },	  { ICALL, "a", "leaf" },
	{ RET, "leaf", "a" },	  { RET, "a", "_start" }, { CALL, "_start", "b" },
	{ CALL, "b", "leaf" },	  { RET, "leaf", "b" },	  { RET, "b", "_start" },
	{ SYSCALL, NULL, NULL },
};

#define NSTEPS (ARRAY_SIZE(steps))

/* Fixed identities of the synthesized run. */
#define PID 4242
#define PMU_TYPE 8
#define T0 1000000000ULL	/* perf time of the first sideband record (ns) */
#define TSC_START (T0 + 5000)	/* TSC of the trace; time_mult 1, shift 0: TSC == ns */
#define VDSO_BASE 0x7fff00000000ULL	/* where the synthesized process has its vDSO */
#define VDSO_FUNC "__vdso_getcpu"	/* called with --vdso-call */

/* The indirect call into the vDSO (--vdso-call). */
struct vdso_call {
	uint64_t addr;			/* VDSO_FUNC at VDSO_BASE */
	unsigned int bits;		/* TNT bits through it: branches (all taken), return */
};

struct elf_info {
	uint64_t start;			/* _start */
	uint64_t leaf;			/* leaf, target of the indirect call */
	uint64_t text_vaddr;		/* executable PT_LOAD */
	uint64_t text_offset;
	uint64_t text_memsz;
	uint8_t build_id[20];
	uint8_t build_id_size;
};

static int fail(const char *what, const char *why)
{
	fprintf(stderr, "perfdata_tool: %s: %s\n", what, why);
	return 1;
}

static int read_elf(const char *path, struct elf_info *ei)
{
	Elf_Scn *scn = NULL;
	size_t i, nph;
	Elf *elf;
	int fd, err = -ENOENT;

	memset(ei, 0, sizeof(*ei));
	elf_version(EV_CURRENT);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return -errno;
	elf = elf_begin(fd, ELF_C_READ, NULL);
	if (!elf || elf_getphdrnum(elf, &nph))
		goto out;
	for (i = 0; i < nph; i++) {
		GElf_Phdr ph;

		if (gelf_getphdr(elf, i, &ph) && ph.p_type == PT_LOAD && (ph.p_flags & PF_X)) {
			ei->text_vaddr = ph.p_vaddr;
			ei->text_offset = ph.p_offset;
			ei->text_memsz = ph.p_memsz;
		}
	}
	while ((scn = elf_nextscn(elf, scn)) != NULL) {
		GElf_Shdr sh;
		Elf_Data *d;
		size_t n;

		if (!gelf_getshdr(scn, &sh))
			continue;
		d = elf_getdata(scn, NULL);
		if (!d)
			continue;
		if (sh.sh_type == SHT_NOTE) {
			GElf_Nhdr nh;
			size_t off = 0, no, dof;

			while ((off = gelf_getnote(d, off, &nh, &no, &dof)) > 0)
				if (nh.n_type == NT_GNU_BUILD_ID && nh.n_descsz <= 20) {
					memcpy(ei->build_id, (char *)d->d_buf + dof, nh.n_descsz);
					ei->build_id_size = nh.n_descsz;
				}
		}
		if (sh.sh_type != SHT_SYMTAB)
			continue;
		n = sh.sh_entsize ? sh.sh_size / sh.sh_entsize : 0;
		for (i = 0; i < n; i++) {
			GElf_Sym sym;
			const char *name;

			if (!gelf_getsym(d, i, &sym))
				continue;
			name = elf_strptr(elf, sh.sh_link, sym.st_name);
			if (!name)
				continue;
			if (!strcmp(name, "_start"))
				ei->start = sym.st_value;
			else if (!strcmp(name, "leaf"))
				ei->leaf = sym.st_value;
		}
	}
	err = ei->start && ei->leaf && ei->text_memsz ? 0 : -ENOENT;
out:
	if (elf)
		elf_end(elf);
	close(fd);
	return err;
}

static int enc(struct pt_encoder *e, const struct pt_packet *p)
{
	int err = pt_enc_next(e, p);

	return err < 0 ? -EINVAL : 0;
}

static int flush_tnt(struct pt_encoder *e, unsigned int *bits)
{
	struct pt_packet p = { .type = ppt_tnt_8 };

	if (!*bits)
		return 0;
	/* Every pending bit is a compressed return: taken. */
	p.payload.tnt.bit_size = *bits;
	p.payload.tnt.payload = (1ULL << *bits) - 1;
	*bits = 0;
	return enc(e, &p);
}

/*
 * Where VDSO_FUNC is in the vDSO image and how many TNT bits a run through it takes
 * when every conditional branch is taken: followed with capstone, so it holds for any
 * kernel's vDSO whose VDSO_FUNC has only direct jumps before its return.
 */
static int vdso_walk(const uint8_t *image, size_t size, struct vdso_call *vc)
{
	GElf_Shdr sh;
	Elf_Scn *scn = NULL;
	uint64_t off = 0;
	cs_insn *insn = NULL;
	csh cs;
	Elf *elf;
	int steps, err = -ENOENT;

	elf_version(EV_CURRENT);
	elf = elf_memory((char *)image, size);
	while (elf && (scn = elf_nextscn(elf, scn)) != NULL) {
		Elf_Data *d = elf_getdata(scn, NULL);
		size_t i, n;

		if (!d || !gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNSYM || !sh.sh_entsize)
			continue;
		n = sh.sh_size / sh.sh_entsize;
		for (i = 0; i < n; i++) {
			GElf_Sym sym;
			const char *name;

			if (gelf_getsym(d, i, &sym) &&
			    (name = elf_strptr(elf, sh.sh_link, sym.st_name)) &&
			    !strcmp(name, VDSO_FUNC))
				off = sym.st_value;
		}
	}
	if (elf)
		elf_end(elf);
	if (!off || off >= size || cs_open(CS_ARCH_X86, CS_MODE_64, &cs) != CS_ERR_OK)
		return -ENOENT;
	cs_option(cs, CS_OPT_DETAIL, CS_OPT_ON);
	vc->addr = VDSO_BASE + off;
	vc->bits = 0;
	for (steps = 0; steps < 200 && off < size; steps++) {
		const uint8_t *code = image + off;
		size_t left = size - off;
		uint64_t at = off;

		if (!cs_disasm_iter(cs, &code, &left, &at, insn ? insn : (insn = cs_malloc(cs))))
			break;
		if (cs_insn_group(cs, insn, CS_GRP_RET)) {
			vc->bits++;	/* compressed return */
			err = 0;
			break;
		}
		if (cs_insn_group(cs, insn, CS_GRP_CALL) || cs_insn_group(cs, insn, CS_GRP_INT) ||
		    insn->id == X86_INS_SYSCALL)
			break;
		if (cs_insn_group(cs, insn, CS_GRP_JUMP)) {
			const cs_x86_op *op = &insn->detail->x86.operands[0];

			if (op->type != X86_OP_IMM)
				break;	/* indirect: not modelled */
			if (insn->id != X86_INS_JMP)
				vc->bits++;	/* conditional: taken */
			off = op->imm;
			continue;
		}
		off = at;
	}
	if (insn)
		cs_free(insn, 1);
	cs_close(&cs);
	/* One TNT packet holds the function's bits (6 at most). */
	return err || vc->bits > 6 ? -ENOTSUP : 0;
}

/* PT for pd_calls' run, user-only tracing, returns compressed. */
/* PSB+ with a TSC, 64-bit mode, and tracing enabled at `ip`. */
static int enc_enable(struct pt_encoder *e, uint64_t tsc, enum pt_ip_compression ipc, uint64_t ip)
{
	struct pt_packet p = { .type = ppt_psb };
	int err = enc(e, &p);

	p.type = ppt_tsc;
	p.payload.tsc.tsc = tsc;
	err |= enc(e, &p);
	p.type = ppt_psbend;
	err |= enc(e, &p);
	memset(&p, 0, sizeof(p));
	p.type = ppt_mode;
	p.payload.mode.leaf = pt_mol_exec;
	p.payload.mode.bits.exec.csl = 1;
	err |= enc(e, &p);
	memset(&p, 0, sizeof(p));
	p.type = ppt_tip_pge;
	p.payload.ip.ipc = ipc;
	p.payload.ip.ip = ip;
	return err | enc(e, &p);
}

/* --bpf-jit: a fake kernel function at `caller` that calls the JIT image at `jit`. */
struct kernel_jit {
	uint64_t caller;		/* "call jit; ret" (fake_perf_tp_event in kallsyms) */
	uint64_t jit;			/* the program's JITed code */
	uint64_t outside[8];		/* its branch targets out of its image: a `ret` each */
	int nr_outside;
	unsigned int bits, nr_bits;	/* the TNT bits of the walk, oldest first */
};

/*
 * The path through the JIT image from its entry with capstone: conditional branches not
 * taken, direct calls and jumps out of the image land on a `ret` (which returns to the
 * call, or for a jump to our caller), a return ends it. One TNT packet holds it.
 */
static int jit_walk(const uint8_t *code0, size_t size, struct kernel_jit *kj)
{
	cs_insn *insn;
	uint64_t off = 0;
	csh cs;
	int steps, err = -ENOTSUP;

	if (cs_open(CS_ARCH_X86, CS_MODE_64, &cs) != CS_ERR_OK)
		return -ENOTSUP;
	cs_option(cs, CS_OPT_DETAIL, CS_OPT_ON);
	insn = cs_malloc(cs);
	for (steps = 0; insn && steps < 500 && off < size && kj->nr_bits < 6; steps++) {
		const uint8_t *code = code0 + off;
		size_t left = size - off;
		uint64_t at = kj->jit + off;
		const cs_x86_op *op;

		if (!cs_disasm_iter(cs, &code, &left, &at, insn))
			break;
		if (cs_insn_group(cs, insn, CS_GRP_RET)) {
			kj->bits |= 1u << kj->nr_bits++;	/* compressed, to our caller */
			err = 0;
			break;
		}
		if (!cs_insn_group(cs, insn, CS_GRP_JUMP) && !cs_insn_group(cs, insn, CS_GRP_CALL)) {
			off = at - kj->jit;
			continue;
		}
		op = &insn->detail->x86.operands[0];
		if (insn->detail->x86.op_count != 1 || op->type != X86_OP_IMM)
			break;		/* indirect: not modelled */
		if (insn->id != X86_INS_JMP && insn->id != X86_INS_CALL) {
			kj->nr_bits++;	/* conditional: not taken, a 0 bit */
			off = at - kj->jit;
			continue;
		}
		if ((uint64_t)op->imm >= kj->jit && (uint64_t)op->imm < kj->jit + size) {
			if (insn->id == X86_INS_CALL)
				break;	/* a call within the image: not modelled */
			off = op->imm - kj->jit;
			continue;
		}
		if (kj->nr_outside == 8)
			break;
		kj->outside[kj->nr_outside++] = op->imm;
		kj->bits |= 1u << kj->nr_bits++;	/* the `ret` there: compressed */
		if (insn->id == X86_INS_JMP) {
			err = 0;	/* a return thunk: it returns to our caller */
			break;
		}
		off = at - kj->jit;
	}
	if (insn)
		cs_free(insn, 1);
	cs_close(&cs);
	return err;
}

/* A fake kcore: ELF core, one PT_LOAD per page at its kernel address. */
static int write_fake_kcore(const char *path, const uint64_t *pages, const uint8_t (*bytes)[4096],
			    int n)
{
	Elf64_Ehdr eh = {
		.e_ident = { ELFMAG0, ELFMAG1, ELFMAG2, ELFMAG3, ELFCLASS64, ELFDATA2LSB,
			     EV_CURRENT },
		.e_type = ET_CORE, .e_machine = EM_X86_64, .e_version = EV_CURRENT,
		.e_phoff = sizeof(Elf64_Ehdr), .e_ehsize = sizeof(Elf64_Ehdr),
		.e_phentsize = sizeof(Elf64_Phdr), .e_phnum = n,
	};
	FILE *f = fopen(path, "w");
	int i, ok;

	if (!f)
		return -errno;
	ok = fwrite(&eh, sizeof(eh), 1, f) == 1;
	for (i = 0; i < n && ok; i++) {
		Elf64_Phdr ph = {
			.p_type = PT_LOAD, .p_flags = PF_R | PF_X, .p_vaddr = pages[i],
			.p_offset = 4096 * (i + 1), .p_filesz = 4096, .p_memsz = 4096,
			.p_align = 4096,
		};

		ok = fwrite(&ph, sizeof(ph), 1, f) == 1;
	}
	for (i = 0; i < n && ok; i++)
		ok = !fseek(f, 4096 * (i + 1), SEEK_SET) && fwrite(bytes[i], 4096, 1, f) == 1;
	return fclose(f) || !ok ? -EIO : 0;
}

/*
 * kcore_dir for --bpf-jit: a socket filter "r0 = 0; exit" loaded and its JIT image
 * recorded by kcore_add_bpf_jit(); a fake kcore with the caller and a `ret` at every
 * target the walk leaves the image for; kallsyms naming the caller.
 */
static int make_kernel_jit(const char *kdir, struct kernel_jit *kj)
{
	struct bpf_insn prog[] = {
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = 0 },
		{ .code = BPF_JMP | BPF_EXIT },
	};
	struct bpf_prog_info info = {};
	__u32 len = sizeof(info);
	uint64_t pages[9];
	static uint8_t bytes[9][4096];
	uint8_t *code = NULL;
	char path[PATH_MAX + 16];
	int32_t rel;
	FILE *f;
	int fd, i, err;

	fd = bpf_prog_load(BPF_PROG_TYPE_SOCKET_FILTER, "ptbpf_jit_test", "GPL", prog, 2, NULL);
	if (fd < 0)
		return fail("--bpf-jit", "cannot load a BPF program (run as root)");
	if (mkdir(kdir, 0700) && errno != EEXIST)
		return fail(kdir, strerror(errno));
	snprintf(path, sizeof(path), "%s/modules", kdir);
	f = fopen(path, "w");
	if (!f || fclose(f))
		return fail(path, "cannot write");
	/* the caller goes into kallsyms first; kcore_add_bpf_jit() appends the program */
	if (bpf_obj_get_info_by_fd(fd, &info, &len) || !info.jited_prog_len)
		return fail("--bpf-jit", "the program is not JITed");
	code = malloc(info.jited_prog_len);
	len = info.jited_prog_len;
	memset(&info, 0, sizeof(info));
	info.jited_prog_len = len;
	info.jited_prog_insns = (uintptr_t)code;
	info.nr_jited_ksyms = 1;
	info.jited_ksyms = (uintptr_t)&kj->jit;
	len = sizeof(info);
	if (!code || bpf_obj_get_info_by_fd(fd, &info, &len) || !kj->jit)
		return fail("--bpf-jit", "cannot read the JIT image (kernel.kptr_restrict?)");
	err = jit_walk(code, info.jited_prog_len, kj);
	free(code);
	if (err)
		return fail("--bpf-jit", "the JIT image has a branch this tool does not model");
	kj->caller = (kj->jit & ~0xfffull) - (1ull << 20);
	pages[0] = kj->caller;
	rel = (int32_t)(kj->jit - (kj->caller + 5));
	bytes[0][0] = 0xe8;			/* call jit */
	memcpy(&bytes[0][1], &rel, 4);
	bytes[0][5] = 0xc3;			/* ret */
	for (i = 0; i < kj->nr_outside; i++) {
		pages[i + 1] = kj->outside[i] & ~0xfffull;
		memset(bytes[i + 1], 0xc3, 4096);
	}
	snprintf(path, sizeof(path), "%s/kcore", kdir);
	err = write_fake_kcore(path, pages, (const uint8_t (*)[4096])bytes, kj->nr_outside + 1);
	snprintf(path, sizeof(path), "%s/kallsyms", kdir);
	f = fopen(path, "w");
	if (err || !f)
		return fail(path, "cannot write");
	fprintf(f, "%016llx T fake_perf_tp_event\n", (unsigned long long)kj->caller);
	for (i = 0; i < kj->nr_outside; i++)
		fprintf(f, "%016llx T fake_return_thunk_%d\n",
			(unsigned long long)(kj->outside[i] & ~0xfffull), i);
	if (fclose(f))
		return fail(path, "cannot write");
	err = kcore_add_bpf_jit(kdir, &fd, 1);
	close(fd);
	return err ? fail(kdir, "kcore_add_bpf_jit failed") : 0;
}

/* After the user part: the thread in the kernel, through the JIT code, to the end. */
static int encode_kernel(struct pt_encoder *e, const struct kernel_jit *kj)
{
	struct pt_packet p;
	int err = 0;

	err |= enc_enable(e, TSC_START + 100, pt_ipc_full, kj->caller);
	memset(&p, 0, sizeof(p));
	p.type = ppt_tnt_8;
	p.payload.tnt.bit_size = (uint8_t)kj->nr_bits;
	/* the oldest bit is the packet's most significant */
	for (unsigned int i = 0; i < kj->nr_bits; i++)
		p.payload.tnt.payload |= (uint64_t)((kj->bits >> i) & 1) << (kj->nr_bits - 1 - i);
	err |= enc(e, &p);
	return err;
}

static int encode_trace(const struct elf_info *ei, const struct vdso_call *vc, uint8_t *buf,
			size_t size, size_t pad, size_t *len, const struct kernel_jit *kj)
{
	struct pt_config cfg;
	struct pt_encoder *e;
	struct pt_packet p;
	unsigned int bits = 0;
	size_t i;
	int err = 0, off;
	uint64_t o;

	pt_config_init(&cfg);
	cfg.begin = buf;
	cfg.end = buf + size;
	e = pt_alloc_encoder(&cfg);
	if (!e)
		return -ENOMEM;
	err |= enc_enable(e, TSC_START, pt_ipc_sext_48, ei->start);
	for (i = 0; i < NSTEPS && !err; i++) {
		switch (steps[i].kind) {
		case CALL:
			break;
		case RET:
			if (bits == 6)
				err |= flush_tnt(e, &bits);
			bits++;
			break;
		case ICALL:
			err |= flush_tnt(e, &bits);
			p.type = ppt_tip;
			p.payload.ip.ipc = pt_ipc_sext_48;
			p.payload.ip.ip = vc ? vc->addr : ei->leaf;
			err |= enc(e, &p);
			/* Through the vDSO function: its branches, then its return (below). */
			if (vc)
				bits = vc->bits - 1;
			break;
		case SYSCALL:
			err |= flush_tnt(e, &bits);
			/* User-only tracing: into the kernel, tracing stops, IP suppressed. */
			p.type = ppt_tip_pgd;
			p.payload.ip.ipc = pt_ipc_suppressed;
			p.payload.ip.ip = 0;
			err |= enc(e, &p);
			break;
		}
	}
	if (kj && !err)
		err |= encode_kernel(e, kj);
	memset(&p, 0, sizeof(p));
	p.type = ppt_pad;
	for (i = 0; i < pad && !err; i++)
		err |= enc(e, &p);
	off = pt_enc_get_offset(e, &o);
	pt_free_encoder(e);
	if (err || off < 0)
		return -ENOSPC;
	*len = o;
	return 0;
}

static void sample(struct pd_record *r, uint32_t cpu, uint64_t id, uint64_t time)
{
	r->sample.pid = PID;
	r->sample.tid = PID;
	r->sample.time = time;
	r->sample.cpu = cpu;
	r->sample.id = id;
	r->sample.valid = PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU |
			  PERF_SAMPLE_IDENTIFIER;
}

static int add_vdso(struct capture *cap)
{
	const uint8_t *base = (const void *)getauxval(AT_SYSINFO_EHDR);
	unsigned long lo, hi;
	char line[256];
	FILE *f;
	int err = -ENOENT;

	if (!base)
		return -ENOENT;
	f = fopen("/proc/self/maps", "r");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f))
		if (strstr(line, "[vdso]") && sscanf(line, "%lx-%lx", &lo, &hi) == 2) {
			err = capture__set_vdso(cap, (const void *)lo, hi - lo);
			break;
		}
	fclose(f);
	return err;
}

static int synth(const char *elf_path, const char *out, size_t pad, bool vdso, bool vdso_call,
		 bool per_thread, bool timeless, uint64_t aux_flags, bool bpf_jit)
{
	struct kernel_jit kjit = { 0 };
	char data_path[PATH_MAX];
	static const uint64_t pt_id = 101, sb_id = 102;
	struct perf_event_attr pt = { .size = sizeof(pt) }, sb = { .size = sizeof(sb) };
	char path[PATH_MAX];
	struct elf_info ei;
	struct pd_record r;
	struct pd_auxtrace aux = { 0 };
	struct vdso_call vcall, *vc = NULL;
	struct capture *cap;
	struct stat st;
	uint8_t *trace;
	size_t size = 4096 + pad * 2, len;
	int err;

	if (!realpath(elf_path, path) || stat(path, &st))
		return fail(elf_path, strerror(errno));
	if (read_elf(path, &ei))
		return fail(path, "no _start/leaf symbols or executable segment");
	cap = capture__new();
	trace = malloc(size);
	if (!cap || !trace)
		return fail("synth", "out of memory");
	if (vdso || vdso_call) {
		err = add_vdso(cap);
		if (err)
			return fail("synth", "cannot copy this process's vDSO");
	}
	if (vdso_call) {
		if (vdso_walk(cap->vdso, cap->vdso_size, &vcall))
			return fail("synth", "no " VDSO_FUNC " with only direct branches in the vDSO");
		vc = &vcall;
	}
	snprintf(data_path, sizeof(data_path), "%s", out);
	if (bpf_jit) {
		char kdir[PATH_MAX];

		/* perf's directory form: OUT/data and OUT/kcore_dir */
		if (mkdir(out, 0700) && errno != EEXIST)
			return fail(out, strerror(errno));
		snprintf(kdir, sizeof(kdir), "%s/kcore_dir", out);
		snprintf(data_path, sizeof(data_path), "%s/data", out);
		if (make_kernel_jit(kdir, &kjit))
			return 1;
	}
	err = encode_trace(&ei, vc, trace, size, pad, &len, bpf_jit ? &kjit : NULL);
	if (err)
		return fail("synth", "libipt encoder failed");

	pt.type = PMU_TYPE;
	pt.config = 1ULL << 0 | 1ULL << 10 | 1ULL << 13;	/* pt, tsc, branch */
	pt.sample_period = 1;
	pt.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU |
			 PERF_SAMPLE_IDENTIFIER;
	pt.exclude_kernel = pt.exclude_hv = 1;
	pt.sample_id_all = 1;
	sb = pt;
	sb.type = PERF_TYPE_SOFTWARE;
	sb.config = PERF_COUNT_SW_DUMMY;
	sb.mmap = sb.mmap2 = sb.comm = sb.comm_exec = sb.task = sb.context_switch = 1;
	err = capture__add_attr(cap, &pt, &pt_id, 1, "intel_pt//u");
	err = err ?: capture__add_attr(cap, &sb, &sb_id, 1, "dummy:u");

	cap->pt = (struct pd_pt_info){
		.pmu_type = PMU_TYPE, .time_shift = 0, .time_mult = 1, .time_zero = 0,
		.cap_user_time_zero = 1, .tsc_bit = 1 << 10, .noretcomp_bit = 1 << 11,
		.have_sched_switch = 3, .snapshot_mode = 1, .per_cpu_mmaps = 1,
		.mtc_bit = 1 << 9, .mtc_freq_bits = 0xf << 14, .cyc_bit = 1 << 1,
		.present = true,
	};
	cap->host.hostname = "pd-synth";
	cap->host.osrelease = "6.18.0";
	cap->host.arch = "x86_64";
	cap->host.cpuid = "GenuineIntel,6,85,4";
	cap->host.cpudesc = "synthesized by perfdata_tool";
	cap->host.cmdline = "perfdata_tool synth";
	cap->host.nr_cpus_avail = cap->host.nr_cpus_online = 2;

	memset(&r, 0, sizeof(r));
	r.type = PERF_RECORD_COMM;
	r.misc = PERF_RECORD_MISC_COMM_EXEC;
	r.comm.pid = r.comm.tid = PID;
	r.comm.comm = "pd_calls";
	sample(&r, 0, sb_id, T0);
	err = err ?: capture__add_record(cap, &r);

	memset(&r, 0, sizeof(r));
	r.type = PERF_RECORD_MMAP2;
	r.misc = PERF_RECORD_MISC_USER;
	r.mmap.pid = r.mmap.tid = PID;
	r.mmap.addr = ei.text_vaddr & ~0xfffULL;
	r.mmap.len = ((ei.text_vaddr + ei.text_memsz + 0xfff) & ~0xfffULL) - r.mmap.addr;
	r.mmap.pgoff = ei.text_offset & ~0xfffULL;
	r.mmap.maj = major(st.st_dev);
	r.mmap.min = minor(st.st_dev);
	r.mmap.ino = st.st_ino;
	r.mmap.prot = PROT_READ | PROT_EXEC;
	r.mmap.flags = MAP_PRIVATE;
	r.mmap.filename = path;
	sample(&r, 0, sb_id, T0 + 1000);
	err = err ?: capture__add_record(cap, &r);

	if (vc) {
		memset(&r, 0, sizeof(r));
		r.type = PERF_RECORD_MMAP2;
		r.misc = PERF_RECORD_MISC_USER;
		r.mmap.pid = r.mmap.tid = PID;
		r.mmap.addr = VDSO_BASE;
		r.mmap.len = (cap->vdso_size + 0xfff) & ~0xfffULL;
		r.mmap.prot = PROT_READ | PROT_EXEC;
		r.mmap.flags = MAP_PRIVATE;
		r.mmap.filename = "[vdso]";
		sample(&r, 0, sb_id, T0 + 1500);
		err = err ?: capture__add_record(cap, &r);
	}

	memset(&r, 0, sizeof(r));
	r.type = PERF_RECORD_ITRACE_START;
	r.itrace_start.pid = r.itrace_start.tid = PID;
	sample(&r, 0, pt_id, T0 + 2000);
	err = err ?: capture__add_record(cap, &r);

	if (!per_thread) {
		memset(&r, 0, sizeof(r));
		r.type = PERF_RECORD_SWITCH_CPU_WIDE;
		r.sw.next_prev_pid = r.sw.next_prev_tid = 0;	/* switched in, after idle */
		sample(&r, 0, sb_id, T0 + 3000);
		err = err ?: capture__add_record(cap, &r);

		memset(&r, 0, sizeof(r));
		r.type = PERF_RECORD_SWITCH_CPU_WIDE;
		r.misc = PERF_RECORD_MISC_SWITCH_OUT;
		sample(&r, 0, sb_id, T0 + 90000);
		/*
		 * Timeless, perf decodes a CPU's buffer at the end, as the thread current on
		 * that CPU then: after a switch-out, the idle thread (measured).
		 */
		if (!timeless)
			err = err ?: capture__add_record(cap, &r);
	}

	if (aux_flags) {
		memset(&r, 0, sizeof(r));
		r.type = PERF_RECORD_AUX;
		r.aux.aux_offset = 0;
		r.aux.aux_size = len;
		r.aux.flags = PERF_AUX_FLAG_OVERWRITE | aux_flags;
		sample(&r, 0, pt_id, T0 + 50000);
		err = err ?: capture__add_record(cap, &r);
	}

	memset(&r, 0, sizeof(r));
	r.type = PERF_RECORD_EXIT;
	r.task.pid = r.task.ppid = r.task.tid = r.task.ptid = PID;
	r.task.time = T0 + 91000;
	sample(&r, 0, sb_id, T0 + 91000);
	err = err ?: capture__add_record(cap, &r);

	memset(&r, 0, sizeof(r));
	r.type = PERF_RECORD_AUX;
	r.aux.aux_offset = 0;
	r.aux.aux_size = len;
	r.aux.flags = PERF_AUX_FLAG_OVERWRITE;
	sample(&r, 0, pt_id, T0 + 92000);
	err = err ?: capture__add_record(cap, &r);

	memset(&r, 0, sizeof(r));
	r.type = PD_RECORD_PTBPF_TRIGGER;
	r.trigger.kind = TRIGGER_UPROBE;
	r.trigger.cpu = 0;
	r.trigger.pid = r.trigger.tid = PID;
	r.trigger.time = T0 + 8000;
	r.trigger.ip = ei.leaf;
	r.trigger.desc = "uprobe:pd_calls:leaf";
	err = err ?: capture__add_record(cap, &r);

	if (ei.build_id_size) {
		struct pd_build_id b = { .pid = PID, .misc = PERF_RECORD_MISC_USER,
					 .size = ei.build_id_size, .filename = path };

		memcpy(b.id, ei.build_id, sizeof(b.id));
		err = err ?: capture__add_build_id(cap, &b);
	}

	aux.size = len;
	aux.reference = 0x1234567890ULL;
	aux.idx = 0;
	aux.cpu = per_thread ? UINT32_MAX : 0;
	aux.tid = per_thread ? PID : UINT32_MAX;
	if (timeless)
		cap->pt.cap_user_time_zero = 0;
	if (per_thread) {
		cap->pt.per_cpu_mmaps = 0;
		cap->pt.have_sched_switch = 0;
		cap->attrs[1].attr.context_switch = 0;
	}
	err = err ?: capture__add_aux(cap, &aux, trace);
	if (err)
		return fail("synth", strerror(-err));
	err = perfdata_write(data_path, cap);
	capture__free(cap);
	free(trace);
	return err ? 1 : 0;
}

static int expect(bool vdso_call)
{
	size_t i;

	for (i = 0; i < NSTEPS; i++) {
		const char *from = steps[i].from, *to = steps[i].to;

		if (steps[i].kind == SYSCALL)
			continue;
		/* The indirect call and the return after it go through the vDSO. */
		if (vdso_call && steps[i].kind == ICALL)
			to = VDSO_FUNC;
		if (vdso_call && i && steps[i - 1].kind == ICALL)
			from = VDSO_FUNC;
		printf("%s %s %s\n", steps[i].kind == RET ? "return" : "call", from, to);
	}
	return 0;
}

static int install_vdso(const char *in, const char *dir)
{
	char hex[41], path[PATH_MAX], link[PATH_MAX], target[PATH_MAX];
	struct capture *cap;
	uint8_t id[20], len, i;
	FILE *f;
	int err;

	if (perfdata_read(in, &cap))
		return 1;
	if (!cap->vdso)
		return fail(in, "the capture holds no vDSO");
	err = symtab__image_build_id(cap->vdso, cap->vdso_size, id, &len);
	if (err)
		return fail(in, "the capture's vDSO has no build id");
	for (i = 0; i < len; i++)
		sprintf(hex + 2 * i, "%02x", id[i]);
	snprintf(path, sizeof(path), "mkdir -p '%s/[vdso]/%s' '%s/.build-id/%.2s'", dir, hex, dir,
		 hex);
	if (system(path))
		return fail(dir, "cannot create the build-id cache directories");
	snprintf(path, sizeof(path), "%s/[vdso]/%s/vdso", dir, hex);
	f = fopen(path, "w");
	if (!f || fwrite(cap->vdso, 1, cap->vdso_size, f) != cap->vdso_size || fclose(f))
		return fail(path, strerror(errno));
	snprintf(link, sizeof(link), "%s/.build-id/%.2s/%s", dir, hex, hex + 2);
	snprintf(target, sizeof(target), "../../[vdso]/%s", hex);
	unlink(link);
	if (symlink(target, link))
		return fail(link, strerror(errno));
	printf("%s\n", hex);
	capture__free(cap);
	return 0;
}

static int rewrite(const char *in, const char *out, bool no_vdso)
{
	struct capture *cap;
	int err;

	if (perfdata_read(in, &cap))
		return 1;
	if (no_vdso) {
		/* the bytes belong to the capture's arena: forgetting them is enough */
		cap->vdso = NULL;
		cap->vdso_size = 0;
	}
	err = perfdata_write(out, cap);
	capture__free(cap);
	return err ? 1 : 0;
}

int main(int argc, char **argv)
{
	size_t pad = 0;
	bool vdso = false, vdso_call = false, want_expect = false, per_thread = false;
	bool timeless = false;
	uint64_t aux_flags = 0;
	bool bpf_jit = false;
	int i;

	if (argc >= 4 && !strcmp(argv[1], "rewrite"))
		return rewrite(argv[2], argv[3], argc >= 5 && !strcmp(argv[4], "--no-vdso"));
	if (argc >= 4 && !strcmp(argv[1], "install-vdso"))
		return install_vdso(argv[2], argv[3]);
	if (argc >= 3 && !strcmp(argv[1], "synth")) {
		for (i = 2; i < argc; i++) {
			if (!strcmp(argv[i], "--pad") && i + 1 < argc)
				pad = strtoul(argv[++i], NULL, 0);
			else if (!strcmp(argv[i], "--vdso"))
				vdso = true;
			else if (!strcmp(argv[i], "--vdso-call"))
				vdso_call = true;
			else if (!strcmp(argv[i], "--per-thread"))
				per_thread = true;
			else if (!strcmp(argv[i], "--timeless"))
				timeless = true;
			else if (!strcmp(argv[i], "--bpf-jit"))
				bpf_jit = true;
			else if (!strcmp(argv[i], "--aux-flags") && i + 1 < argc)
				aux_flags = strtoull(argv[++i], NULL, 0);
			else if (!strcmp(argv[i], "--expect"))
				want_expect = true;
		}
		if (want_expect)
			return expect(vdso_call);
		if (argc >= 4)
			return synth(argv[2], argv[3], pad, vdso, vdso_call, per_thread, timeless,
				     aux_flags, bpf_jit);
	}
	fprintf(stderr, "usage: perfdata_tool synth ELF OUT [--pad BYTES] [--vdso] [--vdso-call] "
			"[--per-thread] [--timeless] [--aux-flags FLAGS] [--bpf-jit] [--expect]\n"
			"       perfdata_tool install-vdso CAPTURE DIR\n"
			"       perfdata_tool rewrite IN OUT [--no-vdso]\n");
	return 2;
}
