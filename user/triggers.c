// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The trigger plane's loader side: resolve, configure, load, attach, read. */
#include <ctype.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <linux/capability.h>

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "array.h"
#include "guardian.h"
#include "log.h"
#include "privs.h"
#include "perfdata.h"
#include "ptdecode.h"
#include "symtab.h"
#include "syscalls.h"
#include "tracefs.h"
#include "triggers.h"
#include "skel/trigger.skel.h"
#include "skel/trigger_noatomics.skel.h"

/*
 * trigger_noatomics.bpf.c is trigger.bpf.c built without the atomics of Linux 5.12, and is
 * opened through trigger.bpf.c's skeleton: its maps, programs and variables must match.
 */
_Static_assert(sizeof(struct trigger_bpf__rodata) == sizeof(struct trigger_noatomics_bpf__rodata) &&
	       sizeof(struct trigger_bpf__bss) == sizeof(struct trigger_noatomics_bpf__bss) &&
	       sizeof(((struct trigger_bpf *)0)->progs) ==
	       sizeof(((struct trigger_noatomics_bpf *)0)->progs) &&
	       sizeof(((struct trigger_bpf *)0)->maps) ==
	       sizeof(((struct trigger_noatomics_bpf *)0)->maps),
	       "trigger_noatomics.bpf.c differs from trigger.bpf.c");

/* Links per trigger at most: entry + return uprobe, or three sched hooks, ... */
#define MAX_LINKS (MAX_TRIGGERS * 3 + 8)

struct trig {
	enum trigger_kind kind;
	char *desc;		/* "uprobe /path/bin:sym" for messages and JSON */
	/* uprobes */
	char *bin;		/* absolute path */
	char *func;		/* symbol, NULL with an address */
	uint64_t off;		/* +OFF within func */
	uint64_t link_addr;	/* link-time address probed (symbol + OFF, or ADDR) */
	uint64_t file_off;	/* its file offset: what uprobes take */
	struct symtab *st;	/* the binary's symbols, NULL if it has none */
	/* kprobe: func; tracepoint: cat/name */
	char *cat, *name;
	int syscall_nr;		/* -1: any */
	/* the plane: this slot's own probes (a latency uprobe has two), its list entry */
	struct bpf_link *links[2];
	int list_pos;		/* run-queue/syscall rules: position in runq_list/sys_list */
};

struct gate {
	int index;
	char name[96];			/* GROUP/NAME */
	__u64 tp_id;
	struct bpf_program *prog;
	bool tracefs_defined;		/* we wrote it to uprobe_events/kprobe_events */
	char probe_events[16];		/* "uprobe_events" or "kprobe_events" */
};

struct triggers {
	struct trigger_bpf *skel;
	enum trigger_attach_mode mode;
	pid_t tgid;			/* 0: system-wide */
	pid_t spawn_tgid;		/* a command ptbpf started, 0 with -p */
	int nr;				/* triggers; the plane: slots up to the highest used */
	int cap;			/* entries of trig[]: MAX_TRIGGERS, or PLANE_MAX_RULES */
	struct trig *trig;
	struct bpf_link *links[MAX_LINKS];
	int nr_links;
	struct gate gates[MAX_TRIGGERS];
	int nr_gates;
	bool tp_btf;			/* tp_btf programs usable (else tp variants) */
	bool runq_btf;			/* ... and task storage, for the run-queue hooks */
	struct trigger_features features;
	struct ring_buffer *rb;
	trigger_cb cb;
	void *cb_ctx;
	const char *tracefs;		/* mount point (tracefs_path()), NULL until needed */
	bool tracefs_mounted;		/* by us: unmounted by triggers__free() */
	char group[32];			/* tracefs group of our probes: ptbpf_<pid> */
	struct symbols *ksyms;		/* /proc/kallsyms, for kprobe fires; NULL if none */
	/* the daemon's plane (triggers__plane_new): slots, and the hooks latency rules share */
	bool plane;
	int next_slot;			/* where the search for a free slot starts */
	int nr_rules;			/* slots in use */
	int runq_users, sys_users;	/* run-queue / syscall rules attached */
	struct bpf_link *runq_links[3], *sys_links[2];
	struct plane_tp {		/* a tracepoint the plane's rules use (group = index) */
		char *cat, *name;
		struct bpf_link *link;
		int users;
	} tp_groups[PLANE_MAX_LATENCY_RULES];
};

static int make_gates(struct triggers *t);
static int ringbuf_sample(void *ctx, void *data, size_t size);

int triggers__libbpf_print(enum libbpf_print_level level, const char *fmt, va_list args)
{
	/* libbpf warns on expected failures (probing): only show them on request. */
	if (level == LIBBPF_DEBUG && ptbpf_log_level < LOG_DEBUG_EXTRA)
		return 0;
	if (level != LIBBPF_DEBUG && ptbpf_log_level < LOG_DEBUG)
		return 0;
	log_vprintf(LOG_DEBUG, fmt, args);
	return 0;
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

/* ---- resolving what the user named ---- */

/* BIN as libbpf would find it (a path, or a name on $PATH / in the library dirs). */
static int resolve_binary(const char *bin, char **out)
{
	static const char *const lib_dirs[] = { "/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu",
						"/lib64", "/usr/lib64", "/lib", "/usr/lib" };
	char buf[PATH_MAX];
	const char *path, *p, *end;
	size_t i;

	if (strchr(bin, '/')) {
		if (access(bin, R_OK))
			return -errno;
		*out = realpath(bin, NULL);
		return *out ? 0 : -errno;
	}
	path = getenv("PATH");
	for (p = path ? path : ""; *p; p = *end ? end + 1 : end) {
		end = strchrnul(p, ':');
		if (end == p)
			continue;
		snprintf(buf, sizeof(buf), "%.*s/%s", (int)(end - p), p, bin);
		if (!access(buf, X_OK))
			goto found;
	}
	for (i = 0; i < ARRAY_SIZE(lib_dirs); i++) {
		snprintf(buf, sizeof(buf), "%s/%s", lib_dirs[i], bin);
		if (!access(buf, R_OK))
			goto found;
	}
	return -ENOENT;
found:
	*out = realpath(buf, NULL);
	return *out ? 0 : -errno;
}

/*
 * File offset of a link-time address, through the executable PT_LOAD segment that maps
 * it, for BIN:0xADDR on a stripped binary, which symtab__load() refuses (-ENODATA: no
 * symbols).
 */
static int addr_to_file_offset(const char *path, uint64_t addr, uint64_t *offset)
{
	struct sym_segment *segs;
	uint32_t i, nr;
	int err;

	err = symtab__read_segments(path, &segs, &nr, NULL);
	if (err)
		return err;
	err = -ERANGE;
	for (i = 0; i < nr; i++) {
		const struct sym_segment *s = &segs[i];

		if (!(s->flags & PF_X) || addr < s->vaddr || addr >= s->vaddr + s->filesz)
			continue;
		*offset = addr - s->vaddr + s->offset;
		err = 0;
		break;
	}
	free(segs);
	return err;
}

static void no_symbol(const char *arg, struct trig *tr)
{
	const char *close[4];
	char list[1024];
	size_t len = 0;
	int n, i;

	n = symtab__suggest(tr->st, tr->func, close, 4);
	if (!n) {
		elog("--uprobe %s: no function '%s' in %s\n", arg, tr->func, tr->bin);
		return;
	}
	list[0] = '\0';
	for (i = 0; i < n && len < sizeof(list); i++) {
		char *dm = symtab__demangle(close[i]);

		len += snprintf(list + len, sizeof(list) - len, "%s%s", i ? ", " : "",
				dm ? dm : close[i]);
		free(dm);
	}
	elog("--uprobe %s: no function '%s' in %s (did you mean %s?)\n", arg, tr->func, tr->bin,
	     list);
}

/* A name that designates several functions: list them, demangled, so one can be chosen. */
static void ambiguous(const char *arg, const struct trig *tr, const struct sym **matches, int n)
{
	char list[1024];
	size_t len = 0;
	int i, shown = n < SYMTAB_LOOKUP_MAX ? n : SYMTAB_LOOKUP_MAX;

	list[0] = '\0';
	for (i = 0; i < shown && len < sizeof(list); i++) {
		char *dm = symtab__demangle(matches[i]->name);

		len += snprintf(list + len, sizeof(list) - len, "%s'%s'", i ? ", " : "",
				dm ? dm : matches[i]->name);
		free(dm);
	}
	elog("--uprobe %s: '%s' names %d functions in %s (did you mean %s%s?)\n", arg, tr->func,
	     n, tr->bin, list, n > shown ? ", ..." : "");
}

/* SYM[+OFF] or 0xADDR inside tr->bin → link-time address and file offset. */
static int resolve_location(const char *arg, const char *loc, struct trig *tr)
{
	const struct sym *sym, *matches[SYMTAB_LOOKUP_MAX];
	char *plus, *end;
	int err, n;

	err = symtab__load(tr->bin, &tr->st);
	if (err == -ENOEXEC) {
		elog("--uprobe %s: %s is not an ELF file\n", arg, tr->bin);
		return err;
	}
	if (err && err != -ENODATA) {
		elog("--uprobe %s: cannot read %s: %s\n", arg, tr->bin, strerror(-err));
		return err;
	}
	if (!strncmp(loc, "0x", 2) || !strncmp(loc, "0X", 2)) {
		errno = 0;
		tr->link_addr = strtoull(loc, &end, 16);
		if (errno || *end || end == loc + 2) {
			elog("invalid --uprobe '%s': bad address '%s'\n", arg, loc);
			return -EINVAL;
		}
		err = tr->st ? symtab__addr_to_offset(tr->st, tr->link_addr, &tr->file_off)
			     : addr_to_file_offset(tr->bin, tr->link_addr, &tr->file_off);
		if (err) {
			elog("--uprobe %s: 0x%llx is not in a loaded segment of %s\n", arg,
			     (unsigned long long)tr->link_addr, tr->bin);
			return -EINVAL;
		}
		return 0;
	}
	/* +OFF: the last '+' before a letter or digit; C++ names hold '+' ("operator+=") */
	plus = strrchr(loc, '+');
	if (plus && (plus == loc || !isalnum((unsigned char)plus[1])))
		plus = NULL;
	tr->func = plus ? strndup(loc, plus - loc) : strdup(loc);
	if (!tr->func)
		return -ENOMEM;
	if (plus) {
		errno = 0;
		tr->off = strtoull(plus + 1, &end, 0);
		if (errno || *end || !plus[1] || !*tr->func) {
			elog("invalid --uprobe '%s': bad offset '%s'\n", arg, plus);
			return -EINVAL;
		}
	}
	if (!tr->st) {
		elog("--uprobe %s: %s has no symbol table (stripped): give BIN:0xADDR, or use a "
		     "build with symbols\n", arg, tr->bin);
		return -ENODATA;
	}
	n = symtab__lookup(tr->st, tr->func, matches, SYMTAB_LOOKUP_MAX);
	if (n <= 0) {
		no_symbol(arg, tr);
		return -ENOENT;
	}
	if (n > 1) {
		ambiguous(arg, tr, matches, n);
		return -ENOENT;
	}
	sym = matches[0];
	if (sym->size && tr->off >= sym->size) {
		elog("--uprobe %s: offset 0x%llx is past the end of %s (%llu bytes)\n", arg,
		     (unsigned long long)tr->off, tr->func, (unsigned long long)sym->size);
		return -EINVAL;
	}
	tr->link_addr = sym->addr + tr->off;
	err = symtab__addr_to_offset(tr->st, tr->link_addr, &tr->file_off);
	if (err) {
		elog("--uprobe %s: %s is not in a loaded segment of %s\n", arg, tr->func, tr->bin);
		return -EINVAL;
	}
	return 0;
}

/*
 * "BIN:SYM[+OFF]" or "BIN:0xADDR". SYM may be qualified ("ns::Handler::run", Rust
 * "m::total") and BIN may hold colons: the spec splits at the first single colon (not
 * part of a "::") whose left side is a file that exists (a path, or a name found on
 * $PATH or in the library directories).
 */
static int parse_uprobe(const char *arg, struct trig *tr)
{
	char *copy, *colon, *first = NULL;
	int err = -EINVAL, first_err = 0;

	copy = strdup(arg);
	if (!copy)
		return -ENOMEM;
	for (colon = strchr(copy, ':'); colon; colon = strchr(colon + 1, ':')) {
		struct stat sb;

		if (colon[1] == ':') {
			colon++;	/* "::" belongs to a qualified name */
			continue;
		}
		if (colon == copy || !colon[1])
			continue;
		*colon = '\0';
		err = resolve_binary(copy, &tr->bin);
		if (!err && (stat(tr->bin, &sb) || !S_ISREG(sb.st_mode)))
			err = -EISDIR;
		if (!err)
			break;
		free(tr->bin);
		tr->bin = NULL;
		if (!first) {
			first = strdup(copy);
			first_err = err;
		}
		*colon = ':';
	}
	if (!colon) {
		if (first)
			elog("--uprobe %s: cannot open '%s': %s\n", arg, first,
			     first_err == -EISDIR ? "not a regular file" : strerror(-first_err));
		else
			elog("invalid --uprobe '%s': expected BIN:SYM[+OFF] or BIN:0xADDR\n", arg);
		err = first ? first_err : -EINVAL;
		if (err == -EISDIR)
			err = -EINVAL;
		goto cleanup;
	}
	err = resolve_location(arg, colon + 1, tr);
cleanup:
	free(first);
	free(copy);
	return err;
}

/* The tracefs mount point, mounting it where it is missing (we run as root). */
static int find_tracefs(struct triggers *t)
{
	const char *path;
	bool mounted;

	if (t->tracefs)
		return 0;
	path = tracefs_path(&mounted);
	if (!path && errno == EACCES) {
		elog("tracefs: %s\n", privs_attach_denied(-EACCES, false) ?:
		     "/sys/kernel/tracing: only root may read it");
		return -EACCES;
	}
	if (!path) {
		elog("tracefs is not mounted and mounting it on /sys/kernel/tracing failed: %s\n",
		     strerror(errno));
		return -EOPNOTSUPP;
	}
	if (mounted)
		dlog("mounted tracefs on %s\n", path);
	t->tracefs = path;
	t->tracefs_mounted = mounted;
	return 0;
}

static bool tracepoint_exists(struct triggers *t, const char *cat, const char *name)
{
	char path[PATH_MAX];

	if (find_tracefs(t))
		return false;
	snprintf(path, sizeof(path), "%s/events/%s/%s/id", t->tracefs, cat, name);
	return !access(path, R_OK);
}

/* --usdt BIN:PROVIDER:NAME (cli.c put the traced program's path in front of a bare one). */
static int parse_usdt(const char *arg, struct trig *tr)
{
	char *copy = strdup(arg), *name, *provider;
	int err = 0;

	if (!copy)
		return -ENOMEM;
	name = strrchr(copy, ':');
	if (name) {
		*name++ = '\0';
		provider = strrchr(copy, ':');
	}
	if (!name || !provider || !*name || provider == copy || !provider[1]) {
		elog("invalid --usdt '%s': expected [BIN:]PROVIDER:NAME\n", arg);
		err = -EINVAL;
		goto out;
	}
	*provider++ = '\0';
	tr->bin = realpath(copy, NULL);
	if (!tr->bin) {
		err = -errno;
		elog("--usdt %s: cannot open '%s': %s\n", arg, copy, strerror(-err));
		goto out;
	}
	tr->cat = strdup(provider);
	tr->name = strdup(name);
	if (!tr->cat || !tr->name)
		err = -ENOMEM;
out:
	free(copy);
	return err;
}

static int parse_tracepoint(struct triggers *t, const char *arg, struct trig *tr)
{
	const char *colon = strchr(arg, ':');

	if (!colon || colon == arg || !colon[1] || strchr(colon + 1, ':') || strchr(arg, '/')) {
		elog("invalid --tracepoint '%s': expected CAT:NAME, e.g. sched:sched_switch\n", arg);
		return -EINVAL;
	}
	tr->cat = strndup(arg, colon - arg);
	tr->name = strdup(colon + 1);
	if (!tr->cat || !tr->name)
		return -ENOMEM;
	if (!tracepoint_exists(t, tr->cat, tr->name)) {
		elog("no tracepoint '%s' in this kernel (see %s/available_events)\n", arg,
		     t->tracefs ?: "/sys/kernel/tracing");
		return -ENOENT;
	}
	return 0;
}

static int resolve_syscall(const struct trigger_spec *spec, struct trig *tr)
{
	const char *close[4];
	int n, nr;

	tr->syscall_nr = -1;
	if (!spec->syscall_name)
		return 0;
	nr = syscall_nr(spec->syscall_name);
	if (nr >= 0) {
		tr->syscall_nr = nr;
		return 0;
	}
	n = syscall_suggest(spec->syscall_name, close, 4);
	if (n)
		elog("unknown syscall '%s' (did you mean %s%s%s%s%s%s%s?)\n", spec->syscall_name,
		     close[0], n > 1 ? ", " : "", n > 1 ? close[1] : "", n > 2 ? ", " : "",
		     n > 2 ? close[2] : "", n > 3 ? ", " : "", n > 3 ? close[3] : "");
	else
		elog("unknown syscall '%s' (names as in asm/unistd_64.h, e.g. nanosleep)\n",
		     spec->syscall_name);
	return -EINVAL;
}

static int describe(struct trig *tr, const struct trigger_spec *spec)
{
	char lat[32] = "";
	int n;

	if (spec->latency_ns)
		fmt_duration(spec->latency_ns, lat, sizeof(lat));
	switch (tr->kind) {
	case TRIGGER_UPROBE:
	case TRIGGER_UPROBE_LATENCY:
		if (tr->func && tr->off)
			n = asprintf(&tr->desc, "%s %s:%s+0x%llx", trigger_kind_name(tr->kind),
				     tr->bin, tr->func, (unsigned long long)tr->off);
		else if (tr->func)
			n = asprintf(&tr->desc, "%s %s:%s", trigger_kind_name(tr->kind), tr->bin,
				     tr->func);
		else
			n = asprintf(&tr->desc, "%s %s:%s", trigger_kind_name(tr->kind), tr->bin,
				     strrchr(spec->arg, ':') + 1);
		if (n > 0 && tr->kind == TRIGGER_UPROBE_LATENCY) {
			char *d = tr->desc;

			n = asprintf(&tr->desc, "%s > %s", d, lat);
			free(d);
		}
		break;
	case TRIGGER_RUNQ_LATENCY:
		n = asprintf(&tr->desc, "runq_latency > %s", lat);
		break;
	case TRIGGER_SYSCALL_LATENCY:
		n = asprintf(&tr->desc, "syscall_latency %s > %s",
			     spec->syscall_name ? spec->syscall_name : "*", lat);
		break;
	case TRIGGER_KPROBE:
		n = asprintf(&tr->desc, "kprobe %s", spec->arg);
		break;
	case TRIGGER_TRACEPOINT:
		n = asprintf(&tr->desc, "tracepoint %s", spec->arg);
		break;
	case TRIGGER_USDT:
		n = asprintf(&tr->desc, "usdt %s:%s:%s", tr->bin, tr->cat, tr->name);
		break;
	default:
		n = asprintf(&tr->desc, "%s", trigger_kind_name(tr->kind));
		break;
	}
	if (n < 0) {
		tr->desc = NULL;
		return -ENOMEM;
	}
	return 0;
}

static int resolve_trigger(struct triggers *t, const struct trigger_spec *spec, struct trig *tr)
{
	int err;

	tr->kind = spec->kind;
	tr->syscall_nr = -1;
	switch (spec->kind) {
	case TRIGGER_UPROBE:
	case TRIGGER_UPROBE_LATENCY:
		err = parse_uprobe(spec->arg, tr);
		if (!err && spec->kind == TRIGGER_UPROBE_LATENCY && (!tr->func || tr->off)) {
			elog("--latency-over needs a function entry: --uprobe BIN:SYM, not '%s'\n",
			     spec->arg);
			err = -EINVAL;
		}
		break;
	case TRIGGER_KPROBE:
		if (!spec->arg || !*spec->arg || strpbrk(spec->arg, " :/")) {
			elog("invalid --kprobe '%s': expected a kernel function name\n",
			     spec->arg ? spec->arg : "");
			return -EINVAL;
		}
		tr->func = strdup(spec->arg);
		err = tr->func ? 0 : -ENOMEM;
		break;
	case TRIGGER_TRACEPOINT:
		err = parse_tracepoint(t, spec->arg, tr);
		break;
	case TRIGGER_USDT:
		if (t->mode == TRIGGER_ATTACH_GATE) {
			/* a USDT gate would be a uprobe perf event per probe site: not yet */
			elog("--usdt with the pt backend's in-kernel freeze (aux_pause) is not "
			     "supported yet: PTBPF_PT_FREEZE=ioctl freezes from user space\n");
			return -EOPNOTSUPP;
		}
		err = parse_usdt(spec->arg, tr);
		break;
	case TRIGGER_SYSCALL_LATENCY:
		err = resolve_syscall(spec, tr);
		break;
	case TRIGGER_RUNQ_LATENCY:
		err = 0;
		break;
	default:
		elog("trigger kind %d cannot be armed by BPF\n", spec->kind);
		return -EINVAL;
	}
	return err ?: describe(tr, spec);
}

/* ---- configuring and loading ---- */

/*
 * PTBPF_NO_TP_BTF=1, PTBPF_NO_TASK_STORAGE=1, PTBPF_NO_BPF_ATOMICS=1: act as on a kernel
 * without that feature, so that the fallbacks are tested on kernels that have it.
 */
static bool env_flag(const char *name)
{
	const char *v = getenv(name);

	return v && *v && strcmp(v, "0");
}

static bool have_tp_btf(void)
{
	struct btf *btf;
	bool ok;

	if (env_flag("PTBPF_NO_TP_BTF"))
		return false;
	/* tp_btf needs the kernel's BTF, with the tracepoints' btf_trace_* types in it. */
	btf = btf__load_vmlinux_btf();
	if (!btf)
		return false;
	ok = btf__find_by_name_kind(btf, "btf_trace_sched_switch", BTF_KIND_TYPEDEF) > 0 &&
	     btf__find_by_name_kind(btf, "btf_trace_sys_enter", BTF_KIND_TYPEDEF) > 0;
	btf__free(btf);
	return ok;
}

/* A small program using the BPF atomics that return a value (Linux 5.12). */
static bool have_bpf_atomics(void)
{
	const struct bpf_insn insns[] = {
		/* *(u64 *)(r10 - 8) = 0; r1 = 1 */
		{ .code = BPF_ST | BPF_MEM | BPF_DW, .dst_reg = BPF_REG_10, .off = -8 },
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_1, .imm = 1 },
		/* r1 = atomic_fetch_add((u64 *)(r10 - 8), r1) */
		{ .code = BPF_STX | BPF_ATOMIC | BPF_DW, .dst_reg = BPF_REG_10,
		  .src_reg = BPF_REG_1, .off = -8, .imm = BPF_ADD | BPF_FETCH },
		/* r0 = r1; r0 = cmpxchg((u64 *)(r10 - 8), r0, r1) */
		{ .code = BPF_ALU64 | BPF_MOV | BPF_X, .dst_reg = BPF_REG_0, .src_reg = BPF_REG_1 },
		{ .code = BPF_STX | BPF_ATOMIC | BPF_DW, .dst_reg = BPF_REG_10,
		  .src_reg = BPF_REG_1, .off = -8, .imm = BPF_CMPXCHG },
		/* r1 = xchg((u32 *)(r10 - 8), r1) */
		{ .code = BPF_STX | BPF_ATOMIC | BPF_W, .dst_reg = BPF_REG_10,
		  .src_reg = BPF_REG_1, .off = -8, .imm = BPF_XCHG },
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = 0 },
		{ .code = BPF_JMP | BPF_EXIT },
	};
	int fd;

	fd = bpf_prog_load(BPF_PROG_TYPE_SOCKET_FILTER, NULL, "GPL", insns,
			   ARRAY_SIZE(insns), NULL);
	if (fd < 0)
		return false;
	close(fd);
	return true;
}

int triggers__probe_features(struct trigger_features *f)
{
	if (!f)
		return -EINVAL;
	memset(f, 0, sizeof(*f));
	f->ringbuf = libbpf_probe_bpf_map_type(BPF_MAP_TYPE_RINGBUF, NULL) == 1;
	f->tp_btf = have_tp_btf();
	/* the map (5.11, for BPF LSM), then the helper in tracing programs (5.12) */
	f->task_storage = libbpf_probe_bpf_map_type(BPF_MAP_TYPE_TASK_STORAGE, NULL) == 1 &&
			  libbpf_probe_bpf_helper(BPF_PROG_TYPE_KPROBE, BPF_FUNC_task_storage_get,
						  NULL) == 1;
	f->atomics = have_bpf_atomics() && !env_flag("PTBPF_NO_BPF_ATOMICS");
	f->task_storage = f->task_storage && !env_flag("PTBPF_NO_TASK_STORAGE");
	return 0;
}

/* trigger.bpf.c's skeleton, on the object built without BPF atomics where they are missing. */
static struct trigger_bpf *open_skeleton(bool atomics)
{
	struct trigger_bpf *obj;
	int err;

	obj = calloc(1, sizeof(*obj));
	if (!obj)
		return NULL;
	err = trigger_bpf__create_skeleton(obj);
	if (err)
		goto cleanup;
	if (!atomics)
		obj->skeleton->data = trigger_noatomics_bpf__elf_bytes(&obj->skeleton->data_sz);
	err = bpf_object__open_skeleton(obj->skeleton, NULL);
	if (err)
		goto cleanup;
	return obj;

cleanup:
	trigger_bpf__destroy(obj);
	errno = -err;
	return NULL;
}

static void autoload(struct bpf_program *prog, bool on)
{
	bpf_program__set_autoload(prog, on);
}

/* The program HOOK_i: trigger i's own copy of an entry hook (bpf/trigger.bpf.c). */
static struct bpf_program *trigger_prog(const struct trigger_bpf *s, const char *hook, int i)
{
	char name[32];

	snprintf(name, sizeof(name), "%s_%d", hook, i);
	return bpf_object__find_program_by_name(s->obj, name);
}

/*
 * Turn on the programs trigger i of this kind needs, and in gate mode the gates. tp_btf:
 * BTF tracepoints usable; runq_btf: also task storage, for the run-queue hooks.
 */
static int select_trigger(struct trigger_bpf *s, enum trigger_kind kind, int i, bool tp_btf,
			  bool runq_btf, bool gate)
{
	static const char *const hooks[][2] = {
		[TRIGGER_UPROBE] = { "uprobe_hit" },
		[TRIGGER_UPROBE_LATENCY] = { "uprobe_entry", "uretprobe_exit" },
		[TRIGGER_KPROBE] = { "kprobe_hit" },
		[TRIGGER_TRACEPOINT] = { "tracepoint_hit" },
	};
	struct bpf_program *prog;
	int h;

	switch (kind) {
	case TRIGGER_UPROBE:
	case TRIGGER_UPROBE_LATENCY:
	case TRIGGER_KPROBE:
	case TRIGGER_TRACEPOINT:
		for (h = 0; h < 2 && hooks[kind][h]; h++) {
			prog = trigger_prog(s, hooks[kind][h], i);
			if (!prog)
				return -ENOENT;
			autoload(prog, true);
		}
		break;
	case TRIGGER_USDT:
		/* libbpf's USDT support carries the index in its own cookie (no BPF cookie) */
		autoload(s->progs.usdt_hit, true);
		break;
	case TRIGGER_RUNQ_LATENCY:
		autoload(s->progs.sched_wakeup, runq_btf);
		autoload(s->progs.sched_wakeup_new, runq_btf);
		autoload(s->progs.tp_sched_wakeup, !runq_btf);
		autoload(s->progs.tp_sched_wakeup_new, !runq_btf);
		/* Only a tracepoint perf event can gate: the switch is the tp program. */
		autoload(s->progs.sched_switch, runq_btf && !gate);
		autoload(s->progs.tp_sched_switch, !runq_btf || gate);
		/* Only the tp_btf run-queue programs use task storage (5.12). */
		bpf_map__set_autocreate(s->maps.runq_task_start, runq_btf);
		break;
	case TRIGGER_SYSCALL_LATENCY:
		autoload(s->progs.sys_enter, tp_btf);
		autoload(s->progs.tp_sys_enter, !tp_btf);
		autoload(s->progs.sys_exit, tp_btf && !gate);
		autoload(s->progs.tp_sys_exit, !tp_btf || gate);
		break;
	default:
		break;
	}
	return 0;
}

/* Nothing loaded or created but what select_trigger() turns on. */
static void disable_all(struct trigger_bpf *s)
{
	struct bpf_program *prog;

	bpf_object__for_each_program(prog, s->obj)
		bpf_program__set_autoload(prog, false);
	/* an older kernel has no task storage: don't ask it for a map no trigger uses */
	bpf_map__set_autocreate(s->maps.runq_task_start, false);
}

int triggers__check_load(const struct trigger_features *f, char *desc, size_t size)
{
	static const enum trigger_kind kinds[] = {
		TRIGGER_UPROBE, TRIGGER_UPROBE_LATENCY, TRIGGER_KPROBE, TRIGGER_TRACEPOINT,
		TRIGGER_RUNQ_LATENCY, TRIGGER_SYSCALL_LATENCY, TRIGGER_USDT,
	};
	bool runq_btf = f->tp_btf && f->task_storage;
	struct trigger_bpf *s;
	size_t k;
	int err = 0;

	snprintf(desc, size, "%s, run queue %s, %s", f->tp_btf ? "tp_btf" : "tp programs",
		 runq_btf ? "tp_btf with task storage" : "tp programs with a hash",
		 f->atomics ? "BPF atomics" : "plain counters (no BPF atomics)");
	s = open_skeleton(f->atomics);
	if (!s)
		return -errno;
	disable_all(s);
	for (k = 0; k < ARRAY_SIZE(kinds) && !err; k++)
		err = select_trigger(s, kinds[k], 0, f->tp_btf, runq_btf, false);
	if (!err)
		err = trigger_bpf__load(s);
	trigger_bpf__destroy(s);
	return err;
}

static int configure(struct triggers *t, const struct capture_opts *o)
{
	struct trigger_bpf__rodata *ro = t->skel->rodata;
	int i, err;

	ro->targ_tgid = t->tgid;
	ro->self_tgid = getpid();
	ro->guardian_tgid = guardian_pid();
	ro->spawn_tgid = t->spawn_tgid;
	ro->gate_mode = t->mode == TRIGGER_ATTACH_GATE;
	ro->nth = o->nth ? o->nth : 1;
	ro->max_fires = o->max_snapshots;
	ro->cooldown_ns = o->cooldown_ns;
	ro->warmup_ns = o->warmup_ns;
	ro->once_per_arm = o->fire_once_per_arm;
	for (i = 0; i < t->nr; i++) {
		ro->kinds[i] = t->trig[i].kind;
		ro->thresh_ns[i] = o->triggers[i].latency_ns;
		ro->syscall_nrs[i] = t->trig[i].syscall_nr;
		if (t->trig[i].kind == TRIGGER_RUNQ_LATENCY)
			ro->runq_index = i;
	}
	disable_all(t->skel);
	for (i = 0; i < t->nr; i++) {
		err = select_trigger(t->skel, t->trig[i].kind, i, t->tp_btf, t->runq_btf,
				     t->mode == TRIGGER_ATTACH_GATE);
		if (err) {
			elog("the trigger BPF object lacks a program of trigger %d: rebuild "
			     "ptbpf\n", i);
			return err;
		}
	}
	autoload(t->skel->progs.spawn_exec, t->spawn_tgid);
	return 0;
}

/* Loading BPF needs CAP_BPF and CAP_PERFMON, or CAP_SYS_ADMIN. */
static bool lacks_bpf_privilege(void)
{
	return !privs_has_cap(CAP_SYS_ADMIN) &&
	       (!privs_has_cap(CAP_BPF) || !privs_has_cap(CAP_PERFMON));
}

/* A missing privilege, said as such: not the verifier's verdict, not a kernel feature. */
static void report_missing_privilege(void)
{
	char self[PATH_MAX] = "ptbpf";
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);

	if (n > 0)
		self[n] = '\0';
	elog("cannot load the trigger BPF programs: %s lacks %s: run as root, or grant "
	     "what a capture needs: sudo setcap " PRIVS_SETCAP_SET "+ep %s\n",
	     getuid() ? "this user" : "this process",
	     !privs_has_cap(CAP_BPF) && !privs_has_cap(CAP_PERFMON) ? "CAP_BPF and CAP_PERFMON" :
	     !privs_has_cap(CAP_BPF) ? "CAP_BPF" : "CAP_PERFMON", self);
}

/*
 * A kprobe's fire is a kernel address: named from /proc/kallsyms, read once here, before
 * the probes run. Hidden addresses (kptr_restrict) or no file leave the fires unnamed.
 */
static int load_kernel_symbols(struct triggers *t)
{
	int i, err;

	for (i = 0; i < t->nr && t->trig[i].kind != TRIGGER_KPROBE; i++)
		;
	if (i == t->nr)
		return 0;
	err = kernel_symbols__load("/proc/kallsyms", &t->ksyms);
	if (err == -ENOMEM)
		return err;
	if (err)
		dlog("triggers: kprobe fires stay unnamed: /proc/kallsyms: %s\n",
		     err == -ENODATA ? "no readable text symbols" : strerror(-err));
	return 0;
}

/* A triggers object with room for `cap` triggers, before anything is loaded. */
static struct triggers *triggers_alloc(int cap)
{
	struct triggers *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	t->trig = calloc(cap, sizeof(*t->trig));
	if (!t->trig) {
		free(t);
		return NULL;
	}
	t->cap = cap;
	snprintf(t->group, sizeof(t->group), "ptbpf_%d", getpid());
	return t;
}

/* The kernel features the programs need, said as the missing privilege or kernel. */
static int check_features(struct triggers *t)
{
	triggers__probe_features(&t->features);
	t->tp_btf = t->features.tp_btf;
	t->runq_btf = t->tp_btf && t->features.task_storage;
	if (!t->features.ringbuf && lacks_bpf_privilege()) {
		/* the feature probe failed on the privilege, not on the kernel */
		report_missing_privilege();
		return -EPERM;
	}
	if (!t->features.ringbuf) {
		elog("the triggers need the BPF ring buffer (Linux 5.8 or newer; this kernel has "
		     "none)\n");
		return -EOPNOTSUPP;
	}
	return 0;
}

/* Load the configured object; one line on failure. */
static int load_skeleton(struct triggers *t)
{
	int err = trigger_bpf__load(t->skel);

	if (err == -EPERM && lacks_bpf_privilege()) {
		report_missing_privilege();
		return err;
	}
	if (err)
		elog("cannot load the trigger BPF programs: %s (run with -vvv for the verifier "
		     "log)\n", strerror(-err));
	return err;
}

static int triggers_new(const struct capture_opts *o, pid_t tgid, enum trigger_attach_mode mode,
			struct triggers **out)
{
	struct triggers *t;
	int i, err, runq = 0;

	if (!o || !out || (mode != TRIGGER_ATTACH_LINKS && mode != TRIGGER_ATTACH_GATE) ||
	    o->nr_triggers < 0 || o->nr_triggers > MAX_TRIGGERS || (!o->system_wide && tgid <= 0))
		return -EINVAL;
	*out = NULL;
	libbpf_set_print(triggers__libbpf_print);

	t = triggers_alloc(MAX_TRIGGERS);
	if (!t)
		return -ENOMEM;
	t->mode = mode;
	t->tgid = o->system_wide ? 0 : tgid;
	t->spawn_tgid = o->cmd ? tgid : 0;
	t->nr = o->nr_triggers;
	err = check_features(t);
	if (err)
		goto cleanup;

	for (i = 0; i < t->nr; i++) {
		if (o->triggers[i].kind == TRIGGER_RUNQ_LATENCY && runq++) {
			elog("only one run-queue latency trigger (--latency-over without --uprobe)\n");
			err = -EINVAL;
			goto cleanup;
		}
		err = resolve_trigger(t, &o->triggers[i], &t->trig[i]);
		if (err)
			goto cleanup;
	}

	err = load_kernel_symbols(t);
	if (err)
		goto cleanup;
	t->skel = open_skeleton(t->features.atomics);
	if (!t->skel) {
		err = -errno;
		elog("cannot open the trigger BPF object: %s\n", strerror(-err));
		goto cleanup;
	}
	err = configure(t, o);
	if (err)
		goto cleanup;
	err = load_skeleton(t);
	if (err)
		goto cleanup;
	t->rb = ring_buffer__new(bpf_map__fd(t->skel->maps.rb), ringbuf_sample, t, NULL);
	if (!t->rb) {
		err = -errno;
		elog("cannot set up the trigger ring buffer: %s\n", strerror(-err));
		goto cleanup;
	}
	if (mode == TRIGGER_ATTACH_GATE) {
		err = make_gates(t);
		if (err)
			goto cleanup;
	}
	vlog("triggers: %d loaded (%s, %s, run queue %s, %s)\n", t->nr,
	     mode == TRIGGER_ATTACH_GATE ? "gate mode" : "links",
	     t->tp_btf ? "tp_btf" : "tp fallback", t->runq_btf ? "tp_btf" : "tp",
	     t->features.atomics ? "BPF atomics" : "plain counters (no BPF atomics: Linux < 5.12)");
	*out = t;
	return 0;

cleanup:
	triggers__free(t);
	return err;
}

int triggers__new(const struct capture_opts *o, pid_t tgid, enum trigger_attach_mode mode,
		  struct triggers **out)
{
	return triggers_new(o, tgid, mode, out);
}

int triggers__set_index_budget(struct triggers *t, int index, __u64 max, __u64 used,
			       __u64 last_fire_ns)
{
	if (!t || !t->skel || index < 0 || index >= t->nr)
		return -EINVAL;
	__atomic_store_n(&t->skel->bss->idx_max[index], max, __ATOMIC_RELAXED);
	__atomic_store_n(&t->skel->bss->idx_slots[index], used, __ATOMIC_RELAXED);
	if (last_fire_ns)
		__atomic_store_n(&t->skel->bss->idx_last_fire_ns[index], last_fire_ns,
				 __ATOMIC_RELEASE);
	return 0;
}

int triggers__check(const struct capture_opts *o)
{
	struct triggers *t;
	int i, err = 0;

	if (!o || o->nr_triggers < 0 || o->nr_triggers > MAX_TRIGGERS)
		return -EINVAL;
	t = triggers_alloc(MAX_TRIGGERS);
	if (!t)
		return -ENOMEM;
	t->nr = o->nr_triggers;
	for (i = 0; i < t->nr && !err; i++)
		err = resolve_trigger(t, &o->triggers[i], &t->trig[i]);
	triggers__free(t);
	return err;
}

/* ---- attaching ---- */

static void detach_all(struct triggers *t)
{
	while (t->nr_links > 0)
		bpf_link__destroy(t->links[--t->nr_links]);
}

static int add_link(struct triggers *t, struct bpf_link *link)
{
	if (!link)
		return -errno ?: -EINVAL;
	if (t->nr_links >= MAX_LINKS) {
		bpf_link__destroy(link);
		return -E2BIG;
	}
	t->links[t->nr_links++] = link;
	return 0;
}

static int attach_uprobe(struct triggers *t, int i, struct bpf_program *prog, bool ret)
{
	struct trig *tr = &t->trig[i];
	LIBBPF_OPTS(bpf_uprobe_opts, opts, .retprobe = ret);
	pid_t pid = t->tgid ? t->tgid : -1;
	int err;

	/*
	 * pid = tgid installs the breakpoint in the target's address space only (all its
	 * threads: the uprobe filter works per mm), which matters for shared libraries.
	 */
	err = add_link(t, bpf_program__attach_uprobe_opts(prog, pid, tr->bin, tr->file_off, &opts));
	if (!err)
		return 0;
	if (err == -ESRCH)
		elog("%s: no process with PID %d\n", tr->desc, pid);
	else if (privs_attach_denied(err, true))
		elog("%s: cannot attach the uprobe: %s\n", tr->desc, privs_attach_denied(err, true));
	else
		elog("%s: cannot attach the uprobe: %s\n", tr->desc, strerror(-err));
	return err;
}

static int attach_usdt(struct triggers *t, int i)
{
	struct trig *tr = &t->trig[i];
	LIBBPF_OPTS(bpf_usdt_opts, opts, .usdt_cookie = i);
	pid_t pid = t->tgid ? t->tgid : -1;
	int err;

	err = add_link(t, bpf_program__attach_usdt(t->skel->progs.usdt_hit, pid, tr->bin,
						   tr->cat, tr->name, &opts));
	if (!err)
		return 0;
	if (err == -ENOENT)
		elog("%s: %s has no USDT probe %s:%s (its probes: readelf -n %s | grep -A2 "
		     "stapsdt)\n", tr->desc, tr->bin, tr->cat, tr->name, tr->bin);
	else if (err == -ESRCH)
		elog("%s: no process with PID %d\n", tr->desc, pid);
	else
		elog("%s: cannot attach the USDT probe: %s\n", tr->desc,
		     privs_attach_denied(err, true) ?: strerror(-err));
	return err;
}

static bool have_kprobes(struct triggers *t)
{
	char path[PATH_MAX];

	if (!access("/sys/bus/event_source/devices/kprobe/type", R_OK))
		return true;
	if (find_tracefs(t))
		return false;
	snprintf(path, sizeof(path), "%s/kprobe_events", t->tracefs);
	return !access(path, W_OK);
}

static int kprobe_unavailable(struct triggers *t, int i)
{
	elog("%s: this kernel has no kprobes (no kprobe PMU in /sys/bus/event_source/devices, "
	     "no kprobe_events in tracefs: built without CONFIG_KPROBES?)\n", t->trig[i].desc);
	return -EOPNOTSUPP;
}

static int attach_kprobe(struct triggers *t, int i)
{
	int err;

	if (!have_kprobes(t))
		return kprobe_unavailable(t, i);
	err = add_link(t, bpf_program__attach_kprobe(trigger_prog(t->skel, "kprobe_hit", i), false,
						     t->trig[i].func));
	if (err)
		elog("%s: cannot attach: %s (is it a traceable kernel function? see "
		     "available_filter_functions)\n", t->trig[i].desc, strerror(-err));
	return err;
}

static int attach_tracepoint(struct triggers *t, int i)
{
	int err;

	err = add_link(t, bpf_program__attach_tracepoint(trigger_prog(t->skel, "tracepoint_hit", i),
							 t->trig[i].cat, t->trig[i].name));
	if (err)
		elog("%s: cannot attach: %s\n", t->trig[i].desc,
		     privs_attach_denied(err, false) ?: strerror(-err));
	return err;
}

/*
 * A classic tracepoint program (SEC("tp/...")) is attached by the id libbpf reads under
 * tracefs: mount it first where nothing has (a host whose init does not, as systemd's
 * sys-kernel-tracing.mount does), or the attach fails with a bare ENOENT.
 */
static int tracefs_for(struct triggers *t, const struct bpf_program *prog)
{
	if (bpf_program__type(prog) != BPF_PROG_TYPE_TRACEPOINT)
		return 0;
	return find_tracefs(t);
}

/* A program several triggers share (sys_enter serves every syscall trigger): once. */
static int attach_shared(struct triggers *t, struct bpf_program *prog)
{
	int err;

	if (!bpf_program__autoload(prog))
		return 0;
	err = tracefs_for(t, prog);
	if (err)
		return err;
	err = add_link(t, bpf_program__attach(prog));
	if (err)
		elog("cannot attach %s: %s\n", bpf_program__section_name(prog),
		     privs_attach_denied(err, false) ?: strerror(-err));
	return err;
}

int triggers__arm(struct triggers *t)
{
	if (!t)
		return -EINVAL;
	t->skel->bss->armed_ns = mono_ns();
	__atomic_store_n(&t->skel->bss->disarmed, 0, __ATOMIC_RELEASE);
	return 0;
}

int triggers__attach(struct triggers *t)
{
	struct trigger_bpf *s;
	bool gate;
	int i, err = 0;

	if (!t || !t->skel || t->nr_links)
		return -EINVAL;
	s = t->skel;
	gate = t->mode == TRIGGER_ATTACH_GATE;
	for (i = 0; i < t->nr && !err; i++) {
		switch (t->trig[i].kind) {
		case TRIGGER_UPROBE:
			if (!gate)
				err = attach_uprobe(t, i, trigger_prog(t->skel, "uprobe_hit", i), false);
			break;
		case TRIGGER_UPROBE_LATENCY:
			err = attach_uprobe(t, i, trigger_prog(t->skel, "uprobe_entry", i), false);
			if (!err && !gate)
				err = attach_uprobe(t, i, trigger_prog(t->skel, "uretprobe_exit", i), true);
			break;
		case TRIGGER_KPROBE:
			if (!gate)
				err = attach_kprobe(t, i);
			break;
		case TRIGGER_TRACEPOINT:
			if (!gate)
				err = attach_tracepoint(t, i);
			break;
		case TRIGGER_USDT:
			err = attach_usdt(t, i);
			break;
		default:
			break;
		}
	}
	if (!err)
		err = attach_shared(t, s->progs.spawn_exec);
	if (!err)
		err = attach_shared(t, s->progs.sched_wakeup);
	if (!err)
		err = attach_shared(t, s->progs.sched_wakeup_new);
	if (!err)
		err = attach_shared(t, s->progs.tp_sched_wakeup);
	if (!err)
		err = attach_shared(t, s->progs.tp_sched_wakeup_new);
	if (!err)
		err = attach_shared(t, s->progs.sched_switch);
	if (!err && !gate)
		err = attach_shared(t, s->progs.tp_sched_switch);
	if (!err)
		err = attach_shared(t, s->progs.sys_enter);
	if (!err)
		err = attach_shared(t, s->progs.tp_sys_enter);
	if (!err)
		err = attach_shared(t, s->progs.sys_exit);
	if (!err && !gate)
		err = attach_shared(t, s->progs.tp_sys_exit);
	if (err) {
		detach_all(t);
		return err;
	}
	vlog("triggers: attached (%d links%s)\n", t->nr_links,
	     gate ? ", gates left to the caller" : "");
	return triggers__arm(t);
}

/* ---- the daemon's plane: one object, a slot per rule ---- */

static void trig_clear(struct trig *tr)
{
	free(tr->desc);
	free(tr->bin);
	free(tr->func);
	free(tr->cat);
	free(tr->name);
	symtab__free(tr->st);
	memset(tr, 0, sizeof(*tr));
}

static void detach_slot(struct trig *tr)
{
	size_t k;

	for (k = 0; k < ARRAY_SIZE(tr->links); k++) {
		bpf_link__destroy(tr->links[k]);
		tr->links[k] = NULL;
	}
}

static void detach_plane_shared(struct bpf_link **links, size_t n)
{
	size_t k;

	for (k = 0; k < n; k++) {
		bpf_link__destroy(links[k]);
		links[k] = NULL;
	}
}

/* BPF cookies (bpf_get_attach_cookie) in kprobe-type programs: Linux 5.15. */
static bool have_attach_cookie(void)
{
	return libbpf_probe_bpf_helper(BPF_PROG_TYPE_KPROBE, BPF_FUNC_get_attach_cookie, NULL) == 1;
}

int triggers__plane_new(struct triggers **out)
{
	struct trigger_bpf *s;
	struct triggers *t;
	int err;

	if (!out)
		return -EINVAL;
	*out = NULL;
	libbpf_set_print(triggers__libbpf_print);
	t = triggers_alloc(PLANE_MAX_RULES);
	if (!t)
		return -ENOMEM;
	t->mode = TRIGGER_ATTACH_LINKS;
	t->plane = true;
	err = check_features(t);
	if (err)
		goto cleanup;
	if (!have_attach_cookie()) {
		elog("the trigger plane needs BPF cookies (bpf_get_attach_cookie, Linux 5.15 or "
		     "newer): this kernel has none\n");
		err = -EOPNOTSUPP;
		goto cleanup;
	}
	t->skel = s = open_skeleton(t->features.atomics);
	if (!s) {
		err = -errno;
		elog("cannot open the trigger BPF object: %s\n", strerror(-err));
		goto cleanup;
	}
	s->rodata->self_tgid = getpid();
	s->rodata->guardian_tgid = guardian_pid();
	s->rodata->nth = 1;
	s->rodata->per_index = true;
	/*
	 * Every program a rule of any kind may need, loaded now: a rule added later only
	 * attaches its probes, and no other rule's probe is touched.
	 */
	disable_all(s);
	autoload(s->progs.plane_uprobe_hit, true);
	autoload(s->progs.plane_uprobe_entry, true);
	autoload(s->progs.plane_uretprobe_exit, true);
	autoload(s->progs.plane_kprobe_hit, true);
	autoload(s->progs.plane_tracepoint_hit, true);
	select_trigger(s, TRIGGER_USDT, 0, t->tp_btf, t->runq_btf, false);
	select_trigger(s, TRIGGER_RUNQ_LATENCY, 0, t->tp_btf, t->runq_btf, false);
	select_trigger(s, TRIGGER_SYSCALL_LATENCY, 0, t->tp_btf, t->runq_btf, false);
	err = load_skeleton(t);
	if (err)
		goto cleanup;
	t->rb = ring_buffer__new(bpf_map__fd(s->maps.rb), ringbuf_sample, t, NULL);
	if (!t->rb) {
		err = -errno;
		elog("cannot set up the trigger ring buffer: %s\n", strerror(-err));
		goto cleanup;
	}
	vlog("triggers: plane loaded (%s, run queue %s, %s)\n", t->tp_btf ? "tp_btf" : "tp fallback",
	     t->runq_btf ? "tp_btf" : "tp", t->features.atomics ? "BPF atomics" : "plain counters");
	*out = t;
	return 0;

cleanup:
	triggers__free(t);
	return err;
}

/* A free slot, searched from after the last one taken: a slot just freed is reused last. */
static int plane_free_slot(struct triggers *t)
{
	int k, i;

	for (k = 0; k < t->cap; k++) {
		i = (t->next_slot + k) % t->cap;
		if (!t->trig[i].kind) {
			t->next_slot = (i + 1) % t->cap;
			return i;
		}
	}
	return -ENOSPC;
}

/*
 * The list of slots a rule of this kind is entered in (its hook serves them all), or
 * false for a kind whose rules have probes of their own.
 */
static bool plane_list(struct triggers *t, enum trigger_kind kind, __u32 **list, __u32 **nr)
{
	struct trigger_bpf__bss *b = t->skel->bss;

	switch (kind) {
	case TRIGGER_RUNQ_LATENCY:
		*list = b->runq_list;
		*nr = &b->nr_runq_list;
		return true;
	case TRIGGER_SYSCALL_LATENCY:
		*list = b->sys_list;
		*nr = &b->nr_sys_list;
		return true;
	case TRIGGER_TRACEPOINT:
		*list = b->tp_list;
		*nr = &b->nr_tp_list;
		return true;
	default:
		return false;
	}
}

/* A free entry of a list of slots, or -ENOSPC. */
static int plane_list_pos(const __u32 *list, __u32 nr)
{
	__u32 k;

	for (k = 0; k < nr; k++)
		if (!list[k])
			return k;
	return nr < PLANE_MAX_LATENCY_RULES ? (int)nr : -ENOSPC;
}

/* Tracepoint CAT:NAME's group: its link attached with the first rule on it. */
static int plane_tp_group(struct triggers *t, const struct trig *tr)
{
	LIBBPF_OPTS(bpf_tracepoint_opts, opts);
	struct plane_tp *g;
	int k, free_k = -1, err;

	for (k = 0; k < (int)ARRAY_SIZE(t->tp_groups); k++) {
		g = &t->tp_groups[k];
		if (g->users && !strcmp(g->cat, tr->cat) && !strcmp(g->name, tr->name))
			return k;
		if (!g->users && free_k < 0)
			free_k = k;
	}
	if (free_k < 0)
		return -ENOSPC;	/* as many tracepoints as list entries: the list is full first */
	g = &t->tp_groups[free_k];
	g->cat = strdup(tr->cat);
	g->name = strdup(tr->name);
	if (!g->cat || !g->name) {
		err = -ENOMEM;
		goto fail;
	}
	err = find_tracefs(t);
	if (err)
		goto fail;
	opts.bpf_cookie = free_k;
	g->link = bpf_program__attach_tracepoint_opts(t->skel->progs.plane_tracepoint_hit, g->cat,
						      g->name, &opts);
	if (!g->link) {
		err = -errno ?: -EINVAL;
		elog("%s: cannot attach: %s\n", tr->desc, strerror(-err));
		goto fail;
	}
	return free_k;

fail:
	free(g->cat);
	free(g->name);
	memset(g, 0, sizeof(*g));
	return err;
}

static void plane_tp_group_put(struct triggers *t, int k)
{
	struct plane_tp *g = &t->tp_groups[k];

	if (--g->users)
		return;
	bpf_link__destroy(g->link);
	free(g->cat);
	free(g->name);
	memset(g, 0, sizeof(*g));
}

/* The hooks every rule of a latency kind shares: attached with the first such rule. */
static int plane_attach_shared(struct triggers *t, enum trigger_kind kind)
{
	struct trigger_bpf *s = t->skel;
	struct bpf_program *progs[3];
	struct bpf_link **links;
	int k, n, err;

	if (kind == TRIGGER_RUNQ_LATENCY) {
		progs[0] = t->runq_btf ? s->progs.sched_wakeup : s->progs.tp_sched_wakeup;
		progs[1] = t->runq_btf ? s->progs.sched_wakeup_new : s->progs.tp_sched_wakeup_new;
		progs[2] = t->runq_btf ? s->progs.sched_switch : s->progs.tp_sched_switch;
		n = 3;
		links = t->runq_links;
	} else {
		progs[0] = t->tp_btf ? s->progs.sys_enter : s->progs.tp_sys_enter;
		progs[1] = t->tp_btf ? s->progs.sys_exit : s->progs.tp_sys_exit;
		n = 2;
		links = t->sys_links;
	}
	for (k = 0; k < n; k++) {
		err = tracefs_for(t, progs[k]);
		if (err) {
			detach_plane_shared(links, n);
			return err;
		}
		links[k] = bpf_program__attach(progs[k]);
		if (!links[k]) {
			err = -errno ?: -EINVAL;
			elog("cannot attach %s: %s\n", bpf_program__section_name(progs[k]),
			     strerror(-err));
			detach_plane_shared(links, n);
			return err;
		}
	}
	return 0;
}

/* Calls of a latency uprobe in flight under `slot`, left by the rule that had it before. */
static void plane_forget_calls(struct triggers *t, int slot)
{
	struct { __u32 tid, index; } key, next;
	int fd = bpf_map__fd(t->skel->maps.calls);
	void *prev = NULL;

	while (!bpf_map_get_next_key(fd, prev, &next)) {
		key = next;
		if (key.index == (__u32)slot && !bpf_map_delete_elem(fd, &key))
			continue;	/* deleted: the walk goes on from the previous key */
		prev = &key;
	}
}

/* Zero slot i's state in the kernel: counters, budget, cooldown, handover. */
static void plane_reset_slot(struct triggers *t, int i)
{
	struct trigger_bpf__bss *b = t->skel->bss;

	b->idx_kind[i] = 0;
	b->idx_thresh_ns[i] = 0;
	b->idx_syscall_nr[i] = -1;
	b->idx_tgid[i] = 0;
	b->idx_nth[i] = 1;
	b->idx_cooldown_ns[i] = 0;
	b->idx_max[i] = 0;
	b->idx_slots[i] = 0;
	b->idx_seq[i] = 0;
	b->idx_last_fire_ns[i] = 0;
	b->idx_pred[i] = 0;
	b->idx_retired[i] = 0;
	b->hits[i] = 0;
	b->qualifying[i] = 0;
	b->fired[i] = 0;
	b->suppressed[i] = 0;
}

static struct bpf_link *plane_attach_probe(struct triggers *t, struct trig *tr, int slot,
					   struct bpf_program *prog, bool ret)
{
	LIBBPF_OPTS(bpf_uprobe_opts, uopts, .retprobe = ret, .bpf_cookie = slot);
	LIBBPF_OPTS(bpf_kprobe_opts, kopts, .bpf_cookie = slot);
	LIBBPF_OPTS(bpf_usdt_opts, usdt, .usdt_cookie = slot);

	switch (tr->kind) {
	case TRIGGER_UPROBE:
	case TRIGGER_UPROBE_LATENCY:
		/* every process that maps the file: the rule's process is filtered in BPF */
		return bpf_program__attach_uprobe_opts(prog, -1, tr->bin, tr->file_off, &uopts);
	case TRIGGER_KPROBE:
		return bpf_program__attach_kprobe_opts(prog, tr->func, &kopts);
	case TRIGGER_USDT:
		return bpf_program__attach_usdt(prog, -1, tr->bin, tr->cat, tr->name, &usdt);
	default:
		errno = EINVAL;
		return NULL;
	}
}

/* Attach slot i's own probes (or enter it in its latency list). */
static int plane_attach_slot(struct triggers *t, int i)
{
	struct trigger_bpf__bss *b = t->skel->bss;
	struct trigger_bpf *s = t->skel;
	struct trig *tr = &t->trig[i];
	struct bpf_program *progs[2] = {};
	bool ret[2] = { false, true };
	__u32 *list, *nr;
	int *users, k, pos, err;

	switch (tr->kind) {
	case TRIGGER_UPROBE:
		progs[0] = s->progs.plane_uprobe_hit;
		break;
	case TRIGGER_UPROBE_LATENCY:
		progs[0] = s->progs.plane_uprobe_entry;
		progs[1] = s->progs.plane_uretprobe_exit;
		break;
	case TRIGGER_KPROBE:
		if (!have_kprobes(t))
			return kprobe_unavailable(t, i);
		progs[0] = s->progs.plane_kprobe_hit;
		break;
	case TRIGGER_USDT:
		progs[0] = s->progs.usdt_hit;
		break;
	case TRIGGER_RUNQ_LATENCY:
	case TRIGGER_SYSCALL_LATENCY:
	case TRIGGER_TRACEPOINT:
		plane_list(t, tr->kind, &list, &nr);
		pos = plane_list_pos(list, *nr);
		if (pos < 0) {
			elog("%s: the trigger plane holds at most %d rules of each of the kinds "
			     "run-queue latency, syscall latency and tracepoint "
			     "(PLANE_MAX_LATENCY_RULES: their hook walks them at each hit)\n",
			     tr->desc, PLANE_MAX_LATENCY_RULES);
			return -ENOSPC;
		}
		if (tr->kind == TRIGGER_TRACEPOINT) {
			err = plane_tp_group(t, tr);
			if (err < 0)
				return err;
			t->tp_groups[err].users++;
			b->idx_tp_group[i] = err;
		} else {
			users = tr->kind == TRIGGER_RUNQ_LATENCY ? &t->runq_users : &t->sys_users;
			if (!*users) {
				err = plane_attach_shared(t, tr->kind);
				if (err)
					return err;
			}
			++*users;
		}
		/* the entry, then the high-water mark past it: the hook never sees half of it */
		__atomic_store_n(&list[pos], i + 1, __ATOMIC_RELEASE);
		if ((__u32)pos == *nr)
			__atomic_store_n(nr, pos + 1, __ATOMIC_RELEASE);
		tr->list_pos = pos;
		return 0;
	default:
		elog("trigger kind %d cannot be armed by BPF\n", tr->kind);
		return -EINVAL;
	}
	for (k = 0; k < 2 && progs[k]; k++) {
		tr->links[k] = plane_attach_probe(t, tr, i, progs[k], ret[k]);
		if (!tr->links[k]) {
			err = -errno ?: -EINVAL;
			if (tr->kind == TRIGGER_USDT && err == -ENOENT)
				elog("%s: %s has no USDT probe %s:%s (its probes: readelf -n %s | "
				     "grep -A2 stapsdt)\n", tr->desc, tr->bin, tr->cat, tr->name,
				     tr->bin);
			else if (tr->kind == TRIGGER_KPROBE)
				elog("%s: cannot attach: %s (is it a traceable kernel function? see "
				     "available_filter_functions)\n", tr->desc, strerror(-err));
			else
				elog("%s: cannot attach: %s\n", tr->desc, strerror(-err));
			detach_slot(tr);
			return err;
		}
	}
	return 0;
}

/* Take slot i out of its list; the hook goes with the last rule it serves. */
static void plane_unlist_slot(struct triggers *t, int i)
{
	struct trig *tr = &t->trig[i];
	__u32 *list, *nr;
	int *users;

	if (!plane_list(t, tr->kind, &list, &nr))
		return;
	if ((__u32)tr->list_pos >= *nr || list[tr->list_pos] != (__u32)i + 1)
		return;		/* never entered (attaching it failed) */
	/* one store: the other rules' entries stay where they are */
	__atomic_store_n(&list[tr->list_pos], 0, __ATOMIC_RELEASE);
	if (tr->kind == TRIGGER_TRACEPOINT) {
		plane_tp_group_put(t, t->skel->bss->idx_tp_group[i]);
	} else {
		users = tr->kind == TRIGGER_RUNQ_LATENCY ? &t->runq_users : &t->sys_users;
		if (--*users)
			return;
		if (tr->kind == TRIGGER_RUNQ_LATENCY)
			detach_plane_shared(t->runq_links, ARRAY_SIZE(t->runq_links));
		else
			detach_plane_shared(t->sys_links, ARRAY_SIZE(t->sys_links));
	}
}

/* A slot of the plane that holds a rule. */
static bool plane_slot_used(const struct triggers *t, int slot)
{
	return t && t->plane && slot >= 0 && slot < t->nr && t->trig[slot].kind;
}

int triggers__plane_add(struct triggers *t, const struct trigger_spec *spec,
			const struct trigger_scope *scope, int replaces, int *slot)
{
	struct trigger_bpf__bss *b;
	struct trig *tr;
	int i, err;

	if (!t || !t->plane || !spec || !scope || !slot ||
	    (replaces >= 0 && !plane_slot_used(t, replaces)))
		return -EINVAL;
	b = t->skel->bss;
	i = plane_free_slot(t);
	if (i < 0) {
		elog("the trigger plane is full: it holds at most %d rules (PLANE_MAX_RULES)\n",
		     PLANE_MAX_RULES);
		return i;
	}
	tr = &t->trig[i];
	err = resolve_trigger(t, spec, tr);
	if (!err && tr->kind == TRIGGER_KPROBE && !t->ksyms)
		err = load_kernel_symbols(t);
	if (err)
		goto fail;
	/* the slot's settings before its probes: the first hit already sees them */
	plane_reset_slot(t, i);
	b->idx_thresh_ns[i] = spec->latency_ns;
	b->idx_syscall_nr[i] = tr->syscall_nr;
	b->idx_tgid[i] = scope->tgid > 0 ? scope->tgid : 0;
	b->idx_nth[i] = scope->nth ? scope->nth : 1;
	b->idx_cooldown_ns[i] = scope->cooldown_ns;
	b->idx_max[i] = scope->max;
	b->idx_pred[i] = replaces >= 0 ? replaces + 1 : 0;
	__atomic_store_n(&b->idx_kind[i], tr->kind, __ATOMIC_RELEASE);
	if (i >= t->nr)
		t->nr = i + 1;
	if (tr->kind == TRIGGER_UPROBE_LATENCY)
		plane_forget_calls(t, i);
	err = plane_attach_slot(t, i);
	if (err) {
		plane_reset_slot(t, i);
		goto fail;
	}
	t->nr_rules++;
	*slot = i;
	return 0;

fail:
	trig_clear(tr);
	return err;
}

int triggers__plane_activate(struct triggers *t, int slot)
{
	struct trigger_bpf__bss *b;
	__u32 pred;

	if (!plane_slot_used(t, slot))
		return -EINVAL;
	b = t->skel->bss;
	pred = b->idx_pred[slot];
	/* the handover: from this store on the old slot is quiet and this one fires */
	if (pred)
		__atomic_store_n(&b->idx_retired[pred - 1], 1, __ATOMIC_RELEASE);
	return 0;
}

int triggers__plane_remove(struct triggers *t, int slot)
{
	struct trigger_bpf__bss *b;
	int k;

	if (!plane_slot_used(t, slot))
		return -EINVAL;
	b = t->skel->bss;
	detach_slot(&t->trig[slot]);
	plane_unlist_slot(t, slot);
	/* a successor waiting for this slot runs on its own from now */
	for (k = 0; k < t->nr; k++)
		if (b->idx_pred[k] == (__u32)slot + 1)
			__atomic_store_n(&b->idx_pred[k], 0, __ATOMIC_RELEASE);
	plane_reset_slot(t, slot);
	trig_clear(&t->trig[slot]);
	t->nr_rules--;
	return 0;
}

int triggers__plane_rules(const struct triggers *t)
{
	return t && t->plane ? t->nr_rules : -EINVAL;
}

/* ---- gate mode: tracefs probes and tracepoint perf events ---- */

static int tracefs_write(struct triggers *t, const char *file, const char *line)
{
	char path[PATH_MAX];
	ssize_t n;
	int fd, err = 0;

	snprintf(path, sizeof(path), "%s/%s", t->tracefs, file);
	fd = open(path, O_WRONLY | O_APPEND | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = write(fd, line, strlen(line));
	if (n < 0)
		err = -errno;
	else if ((size_t)n != strlen(line))
		err = -EIO;
	close(fd);
	return err;
}

static int read_tp_id(struct triggers *t, const char *group_name, __u64 *id)
{
	char path[PATH_MAX];
	unsigned long long v;
	FILE *f;
	int n;

	snprintf(path, sizeof(path), "%s/events/%s/id", t->tracefs, group_name);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	n = fscanf(f, "%llu", &v);
	fclose(f);
	if (n != 1)
		return -EIO;
	*id = v;
	return 0;
}

/* Define "p:"/"r:" GROUP/NAME TARGET in uprobe_events or kprobe_events. */
static int define_probe(struct triggers *t, struct gate *g, const char *file, char type,
			const char *name, const char *target)
{
	char line[PATH_MAX + 128];
	int err;

	snprintf(g->name, sizeof(g->name), "%s/%s", t->group, name);
	snprintf(line, sizeof(line), "%c:%s %s\n", type, g->name, target);
	err = tracefs_write(t, file, line);
	if (err)
		return err;
	g->tracefs_defined = true;
	snprintf(g->probe_events, sizeof(g->probe_events), "%s", file);
	return read_tp_id(t, g->name, &g->tp_id);
}

static int add_gate(struct triggers *t, int i, struct bpf_program *prog, struct gate **out)
{
	struct gate *g = &t->gates[t->nr_gates++];

	g->index = i;
	g->prog = prog;
	*out = g;
	return 0;
}

static int add_tp_gate(struct triggers *t, int i, struct bpf_program *prog, const char *cat,
		       const char *name)
{
	struct gate *g;
	int err;

	int j;

	add_gate(t, i, prog, &g);
	snprintf(g->name, sizeof(g->name), "%s/%s", cat, name);
	err = read_tp_id(t, g->name, &g->tp_id);
	if (err) {
		elog("%s: cannot read the id of tracepoint %s: %s\n", t->trig[i].desc, g->name,
		     strerror(-err));
		return err;
	}
	/* see triggers__gate_mode_check(): the kernel ANDs the programs of a tracepoint */
	for (j = 0; j < t->nr_gates - 1; j++) {
		if (t->gates[j].tp_id != g->tp_id)
			continue;
		elog("%s: %s already gates on tracepoint %s, and the kernel fires its perf events "
		     "only when every program on it returns 1: use links mode\n", t->trig[i].desc,
		     t->trig[t->gates[j].index].desc, g->name);
		return -EOPNOTSUPP;
	}
	return 0;
}

static int add_uprobe_gate(struct triggers *t, int i, bool ret)
{
	struct trig *tr = &t->trig[i];
	char target[PATH_MAX + 32], name[32], soname[128];
	struct gate *g;
	int err;

	add_gate(t, i, trigger_prog(t->skel, ret ? "uretprobe_exit" : "uprobe_hit", i), &g);
	/*
	 * The gate's perf events are CPU-wide (members of CPU-wide PT groups, which cannot
	 * take a per-task member), and one CPU-wide event makes a uprobe system-wide:
	 * uprobe_perf_open() in kernel/trace/trace_uprobe.c counts it in nr_systemwide,
	 * and uprobe_perf_filter() then arms the breakpoint in every process that maps
	 * the file. A uprobe PMU event (perf_event_open type "uprobe") is filtered the
	 * same way, so it would not help. For a program's own code that is mostly its
	 * own processes; a shared library is mapped by much of the host.
	 */
	if (!symtab__read_soname(tr->bin, soname, sizeof(soname)))
		elog("%s: %s is a shared library (%s): with the in-kernel freeze its uprobe is "
		     "armed in every process on the host that maps it (a CPU-wide uprobe is "
		     "system-wide), each call a trap and a BPF run; PTBPF_PT_FREEZE=ioctl "
		     "probes the target alone\n", tr->desc, tr->bin, soname);
	snprintf(name, sizeof(name), "%c%d", ret ? 'r' : 'u', i);
	snprintf(target, sizeof(target), "%s:0x%llx", tr->bin, (unsigned long long)tr->file_off);
	err = define_probe(t, g, "uprobe_events", ret ? 'r' : 'p', name, target);
	if (err)
		elog("%s: cannot define the tracefs uprobe %s: %s\n", tr->desc, g->name,
		     strerror(-err));
	return err;
}

static int add_kprobe_gate(struct triggers *t, int i)
{
	char name[32];
	struct gate *g;
	int err;

	if (!have_kprobes(t))
		return kprobe_unavailable(t, i);
	add_gate(t, i, trigger_prog(t->skel, "kprobe_hit", i), &g);
	snprintf(name, sizeof(name), "k%d", i);
	err = define_probe(t, g, "kprobe_events", 'p', name, t->trig[i].func);
	if (err)
		elog("%s: cannot define the tracefs kprobe %s: %s\n", t->trig[i].desc, g->name,
		     strerror(-err));
	return err;
}

/*
 * Probes of a ptbpf that was killed (SIGKILL cannot be cleaned up after) stay in tracefs:
 * remove those of groups ptbpf_<pid> whose process is gone, if no perf event holds them.
 */
static void remove_stale_probes(struct triggers *t, const char *file)
{
	char path[64], line[512], del[160];
	FILE *f;
	int pid;

	snprintf(path, sizeof(path), "%s/%s", t->tracefs, file);
	f = fopen(path, "re");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		char name[128];

		if (sscanf(line, "%*c:ptbpf_%d/%127s", &pid, name) != 2 || pid <= 0 ||
		    !kill(pid, 0) || errno != ESRCH)
			continue;
		snprintf(del, sizeof(del), "-:ptbpf_%d/%s\n", pid, name);
		if (!tracefs_write(t, file, del))
			dlog("removed stale tracefs probe ptbpf_%d/%s\n", pid, name);
	}
	fclose(f);
}

static int make_gates(struct triggers *t)
{
	bool syscall_gate = false, runq_gate = false;
	int i, err = 0;

	err = find_tracefs(t);
	if (!err) {
		remove_stale_probes(t, "uprobe_events");
		remove_stale_probes(t, "kprobe_events");
	}
	for (i = 0; i < t->nr && !err; i++) {
		switch (t->trig[i].kind) {
		case TRIGGER_UPROBE:
			err = add_uprobe_gate(t, i, false);
			break;
		case TRIGGER_UPROBE_LATENCY:
			err = add_uprobe_gate(t, i, true);
			break;
		case TRIGGER_KPROBE:
			err = add_kprobe_gate(t, i);
			break;
		case TRIGGER_TRACEPOINT:
			err = add_tp_gate(t, i, trigger_prog(t->skel, "tracepoint_hit", i),
					  t->trig[i].cat, t->trig[i].name);
			break;
		case TRIGGER_RUNQ_LATENCY:
			/* One program decides for every run-queue trigger. */
			if (!runq_gate)
				err = add_tp_gate(t, i, t->skel->progs.tp_sched_switch, "sched",
						  "sched_switch");
			runq_gate = true;
			break;
		case TRIGGER_SYSCALL_LATENCY:
			/* One program decides for every syscall trigger. */
			if (!syscall_gate)
				err = add_tp_gate(t, i, t->skel->progs.tp_sys_exit, "raw_syscalls",
						  "sys_exit");
			syscall_gate = true;
			break;
		default:
			break;
		}
	}
	return err;
}

/*
 * The tracepoint ("cat/name") whose perf events trigger `s` would gate on, in `buf`;
 * NULL for a probe ptbpf defines for it alone (uprobe, kprobe) or a kind without a gate.
 */
static const char *gate_tracepoint(const struct trigger_spec *s, char *buf, size_t size)
{
	const char *colon;

	switch (s->kind) {
	case TRIGGER_TRACEPOINT:
		colon = s->arg ? strchr(s->arg, ':') : NULL;
		if (!colon)
			return NULL;
		snprintf(buf, size, "%.*s/%s", (int)(colon - s->arg), s->arg, colon + 1);
		return buf;
	case TRIGGER_RUNQ_LATENCY:
		return "sched/sched_switch";
	case TRIGGER_SYSCALL_LATENCY:
		return "raw_syscalls/sys_exit";
	default:
		return NULL;
	}
}

/* Whether tracefs (mounted for the look, and left as found) has a writable `file`. */
static bool tracefs_has_file(const char *file)
{
	char path[PATH_MAX];
	const char *tracefs;
	bool mounted, ok;

	tracefs = tracefs_path(&mounted);
	if (!tracefs)
		return false;
	snprintf(path, sizeof(path), "%s/%s", tracefs, file);
	ok = !access(path, W_OK);
	tracefs_unmount(mounted);
	return ok;
}

int triggers__gate_mode_check(const struct capture_opts *o, char *why, size_t size)
{
	char tp_i[160], tp_j[160];
	const char *a, *b;
	int i, j;

	if (!o)
		return -EINVAL;
	for (i = 0; i < o->nr_triggers; i++) {
		const struct trigger_spec *s = &o->triggers[i];

		switch (s->kind) {
		case TRIGGER_USDT:
			snprintf(why, size, "--usdt has no in-kernel gate yet");
			return -EOPNOTSUPP;
		case TRIGGER_UPROBE:
		case TRIGGER_UPROBE_LATENCY:
		case TRIGGER_KPROBE:
			a = s->kind == TRIGGER_KPROBE ? "kprobe" : "uprobe";
			snprintf(tp_i, sizeof(tp_i), "%s_events", a);
			if (!tracefs_has_file(tp_i)) {
				snprintf(why, size, "tracefs has no %s (a kernel without CONFIG_%s_"
					 "EVENTS) to define the gate's %s in", tp_i,
					 s->kind == TRIGGER_KPROBE ? "KPROBE" : "UPROBE", a);
				return -EOPNOTSUPP;
			}
			break;
		default:
			break;
		}
		/*
		 * Every BPF program on one tracepoint runs for each of its perf events, and
		 * the event fires only if all of them return 1 (bpf_prog_run_array() in
		 * include/linux/bpf.h ANDs them, through trace_call_bpf()): two gates on one
		 * tracepoint would each silence the other's fires. The syscall triggers share
		 * one program, and so do the run-queue triggers: one gate each.
		 */
		a = gate_tracepoint(s, tp_i, sizeof(tp_i));
		for (j = 0; a && j < i; j++) {
			b = gate_tracepoint(&o->triggers[j], tp_j, sizeof(tp_j));
			if (!b || strcmp(a, b) || (s->kind == o->triggers[j].kind &&
						  s->kind != TRIGGER_TRACEPOINT))
				continue;
			snprintf(why, size, "two triggers gate on tracepoint %s (triggers %d and "
				 "%d), and the kernel fires its perf events only when every program "
				 "on it returns 1 (bpf_prog_run_array)", a, j + 1, i + 1);
			return -EOPNOTSUPP;
		}
	}
	return 0;
}

int triggers__nr_gates(const struct triggers *t)
{
	return t ? t->nr_gates : -EINVAL;
}

int triggers__gate(const struct triggers *t, int i, struct trigger_gate *g)
{
	if (!t || !g || i < 0 || i >= t->nr_gates)
		return -EINVAL;
	g->index = t->gates[i].index;
	g->name = t->gates[i].name;
	g->tp_id = t->gates[i].tp_id;
	g->prog_fd = bpf_program__fd(t->gates[i].prog);
	return 0;
}

int triggers__attach_gate(struct triggers *t, int i, int perf_fd)
{
	int err;

	if (!t || i < 0 || i >= t->nr_gates || perf_fd < 0)
		return -EINVAL;
	/* before the link exists: add_link()'s refusal would destroy it, closing perf_fd */
	if (t->nr_links >= MAX_LINKS)
		return -E2BIG;
	err = add_link(t, bpf_program__attach_perf_event(t->gates[i].prog, perf_fd));
	if (err)
		elog("%s: cannot attach the program to %s: %s\n", t->trig[t->gates[i].index].desc,
		     t->gates[i].name, strerror(-err));
	return err;
}

static void remove_gates(struct triggers *t)
{
	char line[160];
	int i, err, tries;

	for (i = t->nr_gates - 1; i >= 0; i--) {
		struct gate *g = &t->gates[i];

		if (!g->tracefs_defined)
			continue;
		snprintf(line, sizeof(line), "-:%s\n", g->name);
		/* A perf event just closed may still be released asynchronously: retry a bit. */
		for (tries = 0; tries < 50; tries++) {
			err = tracefs_write(t, g->probe_events, line);
			if (err != -EBUSY)
				break;
			usleep(10000);
		}
		if (err && err != -ENOENT)
			elog("cannot remove tracefs probe %s: %s (remove it with: echo '-:%s' >> "
			     "%s/%s)\n", g->name, strerror(-err), g->name, t->tracefs,
			     g->probe_events);
		g->tracefs_defined = false;
	}
}

/* ---- reading fires ---- */

static int ringbuf_sample(void *ctx, void *data, size_t size)
{
	struct triggers *t = ctx;

	if (size < sizeof(struct trigger_rec))
		return 0;
	return t->cb ? t->cb(t->cb_ctx, data) : 0;
}

int triggers__ringbuf_fd(const struct triggers *t)
{
	if (!t || !t->skel)
		return -EINVAL;
	return bpf_map__fd(t->skel->maps.rb);
}

struct trace_clock *triggers__trace_clock(struct triggers *t)
{
	return t && t->skel ? &t->skel->bss->trace_clock : NULL;
}

int triggers__consume(struct triggers *t, trigger_cb cb, void *ctx)
{
	int n;

	if (!t || !t->rb || !cb)
		return -EINVAL;
	t->cb = cb;
	t->cb_ctx = ctx;
	n = ring_buffer__consume(t->rb);
	t->cb = NULL;
	t->cb_ctx = NULL;
	return n;
}

__u64 triggers__fire_count(const struct triggers *t)
{
	__u64 n = 0;
	int i;

	if (!t || !t->skel)
		return 0;
	for (i = 0; i < (int)ARRAY_SIZE(t->skel->bss->fired); i++)
		n += __atomic_load_n(&t->skel->bss->fired[i], __ATOMIC_RELAXED);
	return n;
}

int triggers__symbolize(const struct triggers *t, const struct trigger_rec *rec, __u64 addr,
			char *buf, size_t size)
{
	const struct trig *tr;
	const struct sym *sym;
	char *dm;
	__u64 link;

	if (!t || !rec || !buf || !size || rec->index >= (__u32)t->nr)
		return -EINVAL;
	tr = &t->trig[rec->index];
	if (tr->kind == TRIGGER_KPROBE)
		return t->ksyms ? kernel_symbols__name(t->ksyms, addr, buf, size) : -ENOENT;
	if ((tr->kind != TRIGGER_UPROBE && tr->kind != TRIGGER_UPROBE_LATENCY) || !tr->st ||
	    !rec->func_ip)
		return -ENOENT;
	/* run-time = link-time + bias, and func_ip is where link_addr was mapped */
	link = addr - (rec->func_ip - tr->link_addr);
	sym = symtab__find_addr(tr->st, link);
	if (!sym)
		return -ENOENT;
	dm = symtab__demangle(sym->name);
	if (link == sym->addr)
		snprintf(buf, size, "%s", dm ? dm : sym->name);
	else
		snprintf(buf, size, "%s+0x%llx", dm ? dm : sym->name,
			 (unsigned long long)(link - sym->addr));
	free(dm);
	return 0;
}

int triggers__count(const struct triggers *t)
{
	return t ? t->nr : -EINVAL;
}

const char *triggers__describe(const struct triggers *t, int index)
{
	if (!t || index < 0 || index >= t->nr)
		return NULL;
	return t->trig[index].desc;
}

enum trigger_kind triggers__kind(const struct triggers *t, int index)
{
	if (!t || index < 0 || index >= t->nr)
		return TRIGGER_NONE;
	return t->trig[index].kind;
}

int triggers__stats(const struct triggers *t, int index, struct trigger_stats *st)
{
	const struct trigger_bpf__bss *b;

	if (!t || !t->skel || !st || index < 0 || index >= t->nr || !t->trig[index].kind)
		return -EINVAL;
	b = t->skel->bss;
	st->hits = __atomic_load_n(&b->hits[index], __ATOMIC_RELAXED);
	st->qualifying = __atomic_load_n(&b->qualifying[index], __ATOMIC_RELAXED);
	st->fired = __atomic_load_n(&b->fired[index], __ATOMIC_RELAXED);
	st->suppressed = __atomic_load_n(&b->suppressed[index], __ATOMIC_RELAXED);
	return 0;
}

__u64 triggers__dropped(const struct triggers *t)
{
	if (!t || !t->skel)
		return 0;
	return __atomic_load_n(&t->skel->bss->dropped, __ATOMIC_RELAXED);
}

int triggers__prog_stats(const struct triggers *t, triggers_prog_cb cb, void *ctx)
{
	struct bpf_program *prog;
	int err;

	if (!t || !t->skel)
		return 0;
	bpf_object__for_each_program(prog, t->skel->obj) {
		struct bpf_prog_info info = {};
		__u32 len = sizeof(info);
		int fd = bpf_program__fd(prog);

		if (fd < 0 || !bpf_program__autoload(prog))
			continue;
		if (bpf_obj_get_info_by_fd(fd, &info, &len))
			continue;
		err = cb(ctx, bpf_program__name(prog), info.run_time_ns, info.run_cnt);
		if (err)
			return err;
	}
	return 0;
}

int triggers__prog_fds(const struct triggers *t, int *fds, int max)
{
	struct bpf_program *prog;
	int n = 0;

	if (!t || (max && !fds))
		return -EINVAL;
	if (!t->skel)
		return 0;
	bpf_object__for_each_program(prog, t->skel->obj) {
		int fd = bpf_program__fd(prog);

		if (fd < 0 || !bpf_program__autoload(prog))
			continue;
		if (n < max)
			fds[n] = fd;
		n++;
	}
	return n;
}

void triggers__print_stats(const struct triggers *t)
{
	struct trigger_stats st;
	int i;

	if (!t || !t->skel)
		return;
	for (i = 0; i < t->nr; i++) {
		if (triggers__stats(t, i, &st))
			continue;
		vlog("trigger %d (%s): %llu hits, %llu qualifying, %llu fired, %llu suppressed\n",
		     i, t->trig[i].desc, (unsigned long long)st.hits,
		     (unsigned long long)st.qualifying, (unsigned long long)st.fired,
		     (unsigned long long)st.suppressed);
	}
	if (t->skel->bss->dropped)
		vlog("triggers: %llu fires lost: ring buffer full\n",
		     (unsigned long long)t->skel->bss->dropped);
	if (t->skel->bss->depth_overflow)
		vlog("triggers: %llu calls nested deeper than %d were not timed\n",
		     (unsigned long long)t->skel->bss->depth_overflow, TRIGGER_MAX_DEPTH);
}

void triggers__free(struct triggers *t)
{
	int i;

	if (!t)
		return;
	for (i = 0; i < t->cap; i++)
		detach_slot(&t->trig[i]);
	detach_plane_shared(t->runq_links, ARRAY_SIZE(t->runq_links));
	detach_plane_shared(t->sys_links, ARRAY_SIZE(t->sys_links));
	for (i = 0; i < (int)ARRAY_SIZE(t->tp_groups); i++) {
		bpf_link__destroy(t->tp_groups[i].link);
		free(t->tp_groups[i].cat);
		free(t->tp_groups[i].name);
	}
	detach_all(t);
	ring_buffer__free(t->rb);
	trigger_bpf__destroy(t->skel);
	remove_gates(t);
	/* after the gates: their probes live in tracefs */
	tracefs_unmount(t->tracefs_mounted);
	for (i = 0; i < t->cap; i++)
		trig_clear(&t->trig[i]);
	free(t->trig);
	symbols__free(t->ksyms);
	free(t);
}

void trigger_rec_to_pd(const struct trigger_rec *rec, struct pd_trigger *tr)
{
	tr->kind = rec->kind;
	tr->index = rec->index;
	tr->cpu = rec->cpu;
	tr->pid = rec->pid;
	tr->tid = rec->tid;
	tr->ktime = rec->ktime_ns;
	tr->ip = rec->ip;
	tr->latency_ns = rec->latency_ns;
	tr->arg0 = rec->arg0;
	tr->arg1 = rec->arg1;
}
