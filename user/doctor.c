// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * `ptbpf doctor`: what this host can do for ptbpf, one line per capability, with the
 * evidence and the fix. BPF features are probed by loading and attaching the small
 * programs of bpf/probe.bpf.c with libbpf's log silenced (failures are expected), as
 * retsnoop and bcc do.
 */
#include <argp.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <unistd.h>
#include <linux/capability.h>

#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <json-c/json.h>

#include "array.h"
#include "commands.h"
#include "kconfig.h"
#include "log.h"
#include "privs.h"
#include "skel/probe.skel.h"
#include "pt_pmu.h"
#include "tracefs.h"
#include "triggers.h"

#define EVIDENCE_LEN 512
#define FIX_LEN 256

enum check_id {
	CHK_KERNEL,
	CHK_BTF,
	CHK_INTEL_PT,
	CHK_INTEL_PT_CAPS,
	CHK_INTEL_PT_TIMING,
	CHK_PT_FILTER,
	CHK_AUX_PAUSE,
	CHK_FREEZE_PATH,
	CHK_BPF_PROG_LOAD,
	CHK_BPF_RINGBUF,
	CHK_UPROBE,
	CHK_TRACEFS,
	CHK_TRACEPOINT,
	CHK_TP_BTF,
	CHK_KPROBE,
	CHK_FENTRY,
	CHK_BPF_ATOMICS,
	CHK_TASK_STORAGE,
	CHK_TRIGGER_PROGRAMS,
	CHK_KCORE,
	CHK_KALLSYMS,
	CHK_PARANOID,
	CHK_KPTR_RESTRICT,
	CHK_CAP_BPF,
	CHK_CAP_PERFMON,
	CHK_CAP_SYS_ADMIN,
	CHK_CAP_SYS_PTRACE,
	CHK_MEMLOCK,
	CHK_PTRACE,
	CHK_BACKEND_PT,
	CHK_BACKEND_SINGLESTEP,
	NR_CHECKS,
};

struct check {
	const char *key;	/* JSON key, stable (README "ptbpf doctor") */
	const char *label;	/* text output */
	const char *section;	/* text output: printed before the first check of a section */
	bool present;
	char evidence[EVIDENCE_LEN];
	char fix[FIX_LEN];	/* empty when present or when there is nothing to fix */
};

static struct check checks[NR_CHECKS] = {
	[CHK_KERNEL] = { "kernel", "kernel", "Kernel" },
	[CHK_BTF] = { "btf", "kernel BTF" },
	[CHK_INTEL_PT] = { "intel_pt", "Intel PT PMU", "Intel PT" },
	[CHK_INTEL_PT_CAPS] = { "intel_pt_caps", "PT capabilities" },
	[CHK_INTEL_PT_TIMING] = { "intel_pt_timing", "PT timing ratios" },
	[CHK_PT_FILTER] = { "pt_filter", "--filter" },
	[CHK_AUX_PAUSE] = { "aux_pause", "aux_pause in BTF", "Freezing" },
	[CHK_FREEZE_PATH] = { "freeze_path", "freeze path" },
	[CHK_BPF_PROG_LOAD] = { "bpf_prog_load", "BPF program load", "BPF" },
	[CHK_BPF_RINGBUF] = { "bpf_ringbuf", "BPF ring buffer" },
	[CHK_UPROBE] = { "uprobe_attach", "uprobe attach" },
	[CHK_TRACEFS] = { "tracefs", "tracefs" },
	[CHK_TRACEPOINT] = { "tracepoint_attach", "tracepoint (tp)" },
	[CHK_TP_BTF] = { "tp_btf_attach", "tracepoint (tp_btf)" },
	[CHK_KPROBE] = { "kprobe_attach", "kprobe attach" },
	[CHK_FENTRY] = { "fentry_attach", "fentry attach" },
	[CHK_BPF_ATOMICS] = { "bpf_atomics", "BPF atomics" },
	[CHK_TASK_STORAGE] = { "task_storage", "task storage" },
	[CHK_TRIGGER_PROGRAMS] = { "trigger_programs", "trigger programs" },
	[CHK_KCORE] = { "kcore", "/proc/kcore", "Kernel decode (--kernel)" },
	[CHK_KALLSYMS] = { "kallsyms", "/proc/kallsyms" },
	[CHK_PARANOID] = { "perf_event_paranoid", "perf_event_paranoid", "Privileges" },
	[CHK_KPTR_RESTRICT] = { "kptr_restrict", "kptr_restrict" },
	[CHK_CAP_BPF] = { "cap_bpf", "CAP_BPF" },
	[CHK_CAP_PERFMON] = { "cap_perfmon", "CAP_PERFMON" },
	[CHK_CAP_SYS_ADMIN] = { "cap_sys_admin", "CAP_SYS_ADMIN" },
	[CHK_CAP_SYS_PTRACE] = { "cap_sys_ptrace", "CAP_SYS_PTRACE" },
	[CHK_MEMLOCK] = { "memlock", "RLIMIT_MEMLOCK" },
	[CHK_PTRACE] = { "ptrace", "ptrace single-step" },
	[CHK_BACKEND_PT] = { "backend_pt", "backend pt", "Backends" },
	[CHK_BACKEND_SINGLESTEP] = { "backend_singlestep", "backend singlestep" },
};

/* tracefs was mounted by this run: unmounted before doctor exits */
static bool tracefs_mounted_now;
/* tracefs is mounted but root's only: its fix is a privilege, not a mount */
static bool tracefs_denied;

static struct doctor_env {
	bool json;
	const char *sysfs_root;
	int verbose;
} env;

/* What the JSON output adds beside the checks. */
static struct facts {
	struct utsname uts;
	struct pt_pmu *pmu;
	bool aux_pause;
	bool tracefs;
	bool uprobe_events;
	const char *freeze_path;	/* for the default backend */
	const char *pt_freeze_path;	/* for the pt backend, were it usable */
	const char *default_backend;
	char pt_why[EVIDENCE_LEN];
	char ss_why[EVIDENCE_LEN + 64];
} facts;

static __attribute__((format(printf, 3, 4))) void set(enum check_id id, bool present,
							const char *fmt, ...)
{
	va_list ap;

	checks[id].present = present;
	va_start(ap, fmt);
	vsnprintf(checks[id].evidence, EVIDENCE_LEN, fmt, ap);
	va_end(ap);
}

static __attribute__((format(printf, 2, 3))) void set_fix(enum check_id id, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(checks[id].fix, FIX_LEN, fmt, ap);
	va_end(ap);
}

/* A usable()-style "evidence; fix: fix" line, split into the two fields. */
static void set_why(enum check_id id, bool present, const char *why)
{
	const char *fix = strstr(why, "; fix: ");

	if (!fix) {
		set(id, present, "%s", why);
		return;
	}
	set(id, present, "%.*s", (int)(fix - why), why);
	set_fix(id, "%s", fix + 7);
}

/* "CONFIG_X is not set (/proc/config.gz)" or "" when the config cannot be read. */
static const char *kconfig_note(const char *name, char *buf, size_t size)
{
	const char *src;
	char val[64];
	int ret;

	ret = kconfig_get(name, val, sizeof(val), &src);
	if (ret < 0)
		snprintf(buf, size, "%s", "");
	else if (ret == 0)
		snprintf(buf, size, "; %s is not set (%s)", name, src);
	else
		snprintf(buf, size, "; %s=%s (%s)", name, val, src);
	return buf;
}

static int libbpf_quiet(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	/* Expected failures of the probes: only shown at -vv. */
	if (ptbpf_log_level >= LOG_DEBUG)
		log_vprintf(LOG_DEBUG, fmt, ap);
	return 0;
}

static void check_kernel(void)
{
	unsigned int major = 0, minor = 0;

	/* The triggers' ring buffer sets the floor; README lists each feature's minimum. */
	sscanf(facts.uts.release, "%u.%u", &major, &minor);
	if (major < 5 || (major == 5 && minor < 8)) {
		set(CHK_KERNEL, false, "Linux %s %s: older than 5.8", facts.uts.release,
		    facts.uts.machine);
		set_fix(CHK_KERNEL, "Linux 5.8 or newer (the triggers report through a BPF ring "
			"buffer)");
	} else {
		set(CHK_KERNEL, true, "Linux %s %s (5.8 or newer)", facts.uts.release,
		    facts.uts.machine);
	}
	if (access("/sys/kernel/btf/vmlinux", R_OK)) {
		set(CHK_BTF, false, "/sys/kernel/btf/vmlinux: %s", strerror(errno));
		set_fix(CHK_BTF, "a kernel built with CONFIG_DEBUG_INFO_BTF=y (CO-RE BPF needs "
			"it)");
	} else {
		set(CHK_BTF, true, "/sys/kernel/btf/vmlinux");
	}
}

/* Whether `name` is a member of the struct, looking inside anonymous unions and structs. */
static bool btf_has_member(const struct btf *btf, __u32 type_id, const char *name)
{
	const struct btf_type *t = btf__type_by_id(btf, type_id);
	const struct btf_member *m;
	int i;

	if (!t || (!btf_is_struct(t) && !btf_is_union(t)))
		return false;
	m = btf_members(t);
	for (i = 0; i < btf_vlen(t); i++, m++) {
		const char *mname = btf__name_by_offset(btf, m->name_off);

		if (mname && !strcmp(mname, name))
			return true;
		if ((!mname || !*mname) &&
		    btf_has_member(btf, btf__resolve_type(btf, m->type), name))
			return true;
	}
	return false;
}

static void check_aux_pause(void)
{
	struct btf *btf;
	int id;

	btf = btf__load_vmlinux_btf();
	if (!btf) {
		set(CHK_AUX_PAUSE, false, "cannot load the kernel's BTF: %s", strerror(errno));
		set_fix(CHK_AUX_PAUSE, "a kernel with CONFIG_DEBUG_INFO_BTF=y");
		return;
	}
	id = btf__find_by_name_kind(btf, "perf_event_attr", BTF_KIND_STRUCT);
	facts.aux_pause = id > 0 && btf_has_member(btf, id, "aux_pause");
	if (facts.aux_pause) {
		set(CHK_AUX_PAUSE, true, "perf_event_attr.aux_pause is in the running kernel's BTF "
		    "(Linux %s)", facts.uts.release);
	} else {
		set(CHK_AUX_PAUSE, false, "perf_event_attr has no aux_pause in the running "
		    "kernel's BTF (Linux %s; it came in 6.13)", facts.uts.release);
		set_fix(CHK_AUX_PAUSE, "Linux 6.13 or newer for the in-kernel freeze; older "
			"kernels freeze from user space, later");
	}
	btf__free(btf);
}

/*
 * --filter: the pt backend's events are CPU-wide, where the kernel takes no file-based
 * range (perf_event_parse_addr_filter()), so the function's range is given as addresses
 * in the target. Before Linux 5.18 the kernel refused an address range with
 * exclude_kernel, and intel_pt took only kernel addresses (pt_event_addr_filters_validate).
 */
static void check_pt_filter(void)
{
	unsigned int major = 0, minor = 0;
	uint32_t ranges = 0;

	sscanf(facts.uts.release, "%u.%u", &major, &minor);
	if (pt_pmu__cap(facts.pmu, "num_address_ranges", &ranges) || !ranges) {
		set(CHK_PT_FILTER, false, "this CPU has no PT address ranges "
		    "(caps/num_address_ranges=%u)", ranges);
	} else if (major < 5 || (major == 5 && minor < 18)) {
		set(CHK_PT_FILTER, false, "Linux %s: --filter gives the CPU-wide PT events a "
		    "user-space address range, which the kernel takes from 5.18", facts.uts.release);
		set_fix(CHK_PT_FILTER, "Linux 5.18 or newer for --filter");
	} else {
		set(CHK_PT_FILTER, true, "%u address ranges, given as addresses in the target "
		    "(Linux 5.18+)", ranges);
	}
}

static void check_intel_pt(void)
{
	static const char *const shown[] = { "psb_cyc", "mtc", "ip_filtering",
					     "num_address_ranges", "ptwrite", "mtc_periods",
					     "cycle_thresholds", "psb_periods" };
	char why[EVIDENCE_LEN], caps[EVIDENCE_LEN];
	uint32_t v, num, den;
	size_t i, len = 0;
	int err;

	err = pt_pmu__new(env.sysfs_root, &facts.pmu);
	if (err) {
		pt_pmu_usable(env.sysfs_root, why, sizeof(why));
		set_why(CHK_INTEL_PT, false, why);
		set(CHK_INTEL_PT_CAPS, false, "no Intel PT PMU");
		set(CHK_INTEL_PT_TIMING, false, "no Intel PT PMU");
		set(CHK_PT_FILTER, false, "no Intel PT PMU");
		return;
	}
	set(CHK_INTEL_PT, true, "%s (type %u)", pt_pmu__dir(facts.pmu), pt_pmu__type(facts.pmu));

	caps[0] = '\0';
	for (i = 0; i < ARRAY_SIZE(shown) && len < sizeof(caps); i++) {
		bool bitmap = i >= 5;	/* mtc_periods and after: bitmaps of allowed values */

		if (pt_pmu__cap(facts.pmu, shown[i], &v))
			len += snprintf(caps + len, sizeof(caps) - len, "%s%s=missing",
					i ? " " : "", shown[i]);
		else
			len += snprintf(caps + len, sizeof(caps) - len, bitmap ? "%s%s=0x%x" :
					"%s%s=%u", i ? " " : "", shown[i], v);
	}
	set(CHK_INTEL_PT_CAPS, true, "%s", caps);

	if (pt_pmu__max_nonturbo_ratio(facts.pmu, &v) || pt_pmu__tsc_art_ratio(facts.pmu, &num,
										&den)) {
		set(CHK_INTEL_PT_TIMING, false, "max_nonturbo_ratio or tsc_art_ratio missing in %s",
		    pt_pmu__dir(facts.pmu));
		set_fix(CHK_INTEL_PT_TIMING, "a newer kernel; without them MTC and CYC packets "
			"cannot be turned into time (TSC still can)");
	} else if (!num || !den) {
		set(CHK_INTEL_PT_TIMING, true, "max_nonturbo_ratio=%u, tsc_art_ratio=%u:%u (CPUID "
		    "0x15 not enumerated: time comes from TSC packets only)", v, num, den);
	} else {
		set(CHK_INTEL_PT_TIMING, true, "max_nonturbo_ratio=%u, tsc_art_ratio=%u:%u", v, num,
		    den);
	}
	check_pt_filter();
}

enum probe_kind {
	PROBE_TP,
	PROBE_UPROBE,
	PROBE_TP_BTF,
	PROBE_KPROBE,
	PROBE_FENTRY,
};

struct probe_result {
	int load_err;		/* 0 or -errno of probe_bpf__load() */
	int attach_err;		/* 0 or -errno of the attach */
	uint64_t hits;		/* the program's counter after the event was made to happen */
	int records;		/* ring-buffer records received (uprobe only) */
};

/* What doctor's uprobe attaches to: a real function of this binary, called once. */
__attribute__((noinline)) void ptbpf_doctor_uprobe_target(void)
{
	__asm__ volatile("" ::: "memory");
}

static int count_record(void *ctx, void *data, size_t size)
{
	(*(int *)ctx)++;
	return 0;
}

static struct bpf_program *probe_prog(struct probe_bpf *skel, enum probe_kind kind)
{
	switch (kind) {
	case PROBE_TP:
		return skel->progs.probe_tp;
	case PROBE_UPROBE:
		return skel->progs.probe_uprobe;
	case PROBE_TP_BTF:
		return skel->progs.probe_tp_btf;
	case PROBE_KPROBE:
		return skel->progs.probe_kprobe;
	case PROBE_FENTRY:
		return skel->progs.probe_fentry;
	}
	return NULL;
}

static void make_event(enum probe_kind kind)
{
	char c;
	int fd;

	switch (kind) {
	case PROBE_UPROBE:
		ptbpf_doctor_uprobe_target();
		break;
	case PROBE_TP:
	case PROBE_TP_BTF:
		syscall(SYS_getppid);
		break;
	case PROBE_KPROBE:
	case PROBE_FENTRY:
		/* read() of /dev/zero goes through vfs_read */
		fd = open("/dev/zero", O_RDONLY | O_CLOEXEC);
		if (fd >= 0) {
			if (read(fd, &c, 1) < 0)
				dlog("doctor: read /dev/zero: %s\n", strerror(errno));
			close(fd);
		}
		break;
	}
}

static uint64_t probe_hits(struct probe_bpf *skel, enum probe_kind kind)
{
	switch (kind) {
	case PROBE_TP:
		return skel->bss->tp_hits;
	case PROBE_UPROBE:
		return skel->bss->uprobe_hits;
	case PROBE_TP_BTF:
		return skel->bss->tp_btf_hits;
	case PROBE_KPROBE:
		return skel->bss->kprobe_hits;
	case PROBE_FENTRY:
		return skel->bss->fentry_hits;
	}
	return 0;
}

/* Load only this kind's program, attach it, make its event happen once, count. */
static void run_probe(enum probe_kind kind, struct probe_result *res)
{
	LIBBPF_OPTS(bpf_uprobe_opts, uopts, .func_name = "ptbpf_doctor_uprobe_target");
	struct ring_buffer *rb = NULL;
	struct probe_bpf *skel;
	struct bpf_program *prog, *p;
	struct bpf_link *link = NULL;
	int err;

	memset(res, 0, sizeof(*res));
	skel = probe_bpf__open();
	if (!skel) {
		res->load_err = -errno;
		return;
	}
	prog = probe_prog(skel, kind);
	bpf_object__for_each_program(p, skel->obj)
		bpf_program__set_autoload(p, p == prog);
	skel->rodata->targ_tgid = getpid();
	err = probe_bpf__load(skel);
	if (err) {
		res->load_err = err;
		goto cleanup;
	}
	switch (kind) {
	case PROBE_UPROBE:
		/* /proc/self/exe: the kernel resolves it to this binary's inode */
		link = bpf_program__attach_uprobe_opts(prog, getpid(), "/proc/self/exe", 0, &uopts);
		break;
	case PROBE_KPROBE:
		link = bpf_program__attach_kprobe(prog, false, "vfs_read");
		break;
	default:
		link = bpf_program__attach(prog);
		break;
	}
	if (!link) {
		res->attach_err = -errno;
		goto cleanup;
	}
	make_event(kind);
	res->hits = probe_hits(skel, kind);
	if (kind == PROBE_UPROBE) {
		rb = ring_buffer__new(bpf_map__fd(skel->maps.rb), count_record, &res->records,
				      NULL);
		if (rb)
			ring_buffer__consume(rb);
	}

cleanup:
	ring_buffer__free(rb);
	bpf_link__destroy(link);
	probe_bpf__destroy(skel);
}

/* "attached, ran N times" / "load: ..." / "attach: ..." */
static bool probe_evidence(const struct probe_result *r, const char *what, char *buf, size_t size)
{
	if (r->load_err == -EPERM && privs_has_cap(CAP_BPF) && privs_has_cap(CAP_PERFMON))
		snprintf(buf, size, "%s: loading the program was refused (EPERM) although "
			 "CAP_BPF and CAP_PERFMON are effective: kernel lockdown or an LSM "
			 "forbids it", what);
	else if (r->load_err)
		snprintf(buf, size, "%s: loading the program failed: %s", what,
			 strerror(-r->load_err));
	else if (r->attach_err)
		snprintf(buf, size, "%s: the program loaded, attaching failed: %s", what,
			 strerror(-r->attach_err));
	else if (!r->hits)
		snprintf(buf, size, "%s: attached, but the program did not run when the event "
			 "happened", what);
	else
		snprintf(buf, size, "%s: attached and ran", what);
	return !r->load_err && !r->attach_err && r->hits;
}

/*
 * Without the privileges to load BPF programs (CAP_BPF and CAP_PERFMON, or
 * CAP_SYS_ADMIN), the BPF checks fail on the privilege before they reach the feature:
 * their fix is the privilege, and whether the kernel has the feature stays unknown.
 * (As root the same checks tell a missing kernel feature.)
 */
static void privilege_not_feature(void)
{
	static const enum check_id bpf_checks[] = {
		CHK_BPF_PROG_LOAD, CHK_BPF_RINGBUF, CHK_UPROBE, CHK_TRACEPOINT, CHK_TP_BTF,
		CHK_KPROBE, CHK_FENTRY, CHK_BPF_ATOMICS, CHK_TASK_STORAGE,
		CHK_TRIGGER_PROGRAMS,
	};
	size_t i;

	if (privs_has_cap(CAP_SYS_ADMIN) || (privs_has_cap(CAP_BPF) && privs_has_cap(CAP_PERFMON)))
		return;
	for (i = 0; i < ARRAY_SIZE(bpf_checks); i++)
		if (!checks[bpf_checks[i]].present)
			set_fix(bpf_checks[i], "a missing privilege, not (as far as can be told) a "
				"missing kernel feature: run as root, or grant CAP_BPF and CAP_PERFMON "
				"and what attaching needs (setcap " PRIVS_SETCAP_SET "+ep on the ptbpf "
				"binary), then check again");
	if (!checks[CHK_TRACEFS].present && !tracefs_denied && !privs_has_cap(CAP_SYS_ADMIN))
		set_fix(CHK_TRACEFS, "a missing privilege: mounting tracefs needs CAP_SYS_ADMIN: "
			"run as root, or mount -t tracefs nodev /sys/kernel/tracing as root");
}

/* What the trigger programs use beyond the checks above, and whether they load. */
static void check_trigger_programs(void)
{
	struct trigger_features f;
	char desc[160];
	int err;

	triggers__probe_features(&f);
	if (f.atomics) {
		set(CHK_BPF_ATOMICS, true, "a program with atomic fetch-add, compare-and-swap "
		    "and exchange loaded");
	} else {
		set(CHK_BPF_ATOMICS, false, "the verifier refused a program with atomic "
		    "fetch-add, compare-and-swap and exchange (Linux %s; they came in 5.12)",
		    facts.uts.release);
		set_fix(CHK_BPF_ATOMICS, "Linux 5.12 or newer; until then the triggers count with "
			"plain adds, and two CPUs that qualify at once may both fire");
	}
	if (f.task_storage) {
		set(CHK_TASK_STORAGE, true, "BPF_MAP_TYPE_TASK_STORAGE created; "
		    "bpf_task_storage_get() allowed in tracing programs");
	} else {
		set(CHK_TASK_STORAGE, false, "no task storage for tracing programs (Linux %s; "
		    "the map came in 5.11, its use in tracing programs in 5.12)",
		    facts.uts.release);
		set_fix(CHK_TASK_STORAGE, "Linux 5.12 or newer; until then the run-queue trigger "
			"keeps wakeup times in a hash map (tp programs), which costs more per "
			"context switch");
	}
	if (!f.ringbuf) {
		set(CHK_TRIGGER_PROGRAMS, false, "no BPF ring buffer: the triggers cannot report");
		set_fix(CHK_TRIGGER_PROGRAMS, "Linux 5.8 or newer");
		return;
	}
	err = triggers__check_load(&f, desc, sizeof(desc));
	if (err) {
		set(CHK_TRIGGER_PROGRAMS, false, "loading the programs of every trigger kind "
		    "(%s): %s", desc, strerror(-err));
		set_fix(CHK_TRIGGER_PROGRAMS, "run ptbpf --dry-run -vvv with a trigger for the "
			"verifier's log, and report it");
		return;
	}
	set(CHK_TRIGGER_PROGRAMS, true, "the programs of every trigger kind loaded (%s)", desc);
}

static void check_bpf(void)
{
	libbpf_print_fn_t old_print = libbpf_set_print(libbpf_quiet);
	struct probe_result r;
	char buf[EVIDENCE_LEN], note[160];
	bool ok, have_pmu;
	const char *tfs;
	int err;

	/* program load: the simplest program type, nothing attached */
	run_probe(PROBE_TP, &r);
	if (r.load_err) {
		set(CHK_BPF_PROG_LOAD, false, "loading a tracepoint program: %s",
		    strerror(-r.load_err));
		set_fix(CHK_BPF_PROG_LOAD, "run as root, or grant CAP_BPF and CAP_PERFMON");
	} else {
		set(CHK_BPF_PROG_LOAD, true, "a tracepoint program passed the verifier");
	}

	/* tracefs first: libbpf reads tracepoint ids from it (unmounted at the end) */
	{
		bool mounted_now;

		tfs = tracefs_path(&mounted_now);
		tracefs_mounted_now = mounted_now;
		facts.tracefs = tfs != NULL;
		if (!tfs && errno == EACCES) {
			tracefs_denied = true;
			set(CHK_TRACEFS, false, "mounted at /sys/kernel/tracing, but only root may "
			    "read it (mode 0700)");
			set_fix(CHK_TRACEFS, "%s", privs_attach_denied(-EACCES, false) ?:
				"run as root");
		} else if (!tfs) {
			set(CHK_TRACEFS, false, "not mounted and mounting it failed: %s",
			    strerror(errno));
			set_fix(CHK_TRACEFS, "mount -t tracefs nodev /sys/kernel/tracing");
		} else {
			snprintf(buf, sizeof(buf), "%s/uprobe_events", tfs);
			facts.uprobe_events = !access(buf, W_OK);
			set(CHK_TRACEFS, true, "%s%s; uprobe_events %s", tfs,
			    mounted_now ? " (mounted by ptbpf for these checks, as perf does, and unmounted after)" : "",
			    facts.uprobe_events ? "writable" : "missing (CONFIG_UPROBE_EVENTS)");
		}
	}
	if (!r.load_err) {
		/* run again now that tracefs is there: the first run may have failed on it */
		run_probe(PROBE_TP, &r);
		ok = probe_evidence(&r, "raw_syscalls:sys_enter", buf, sizeof(buf));
		set(CHK_TRACEPOINT, ok, "%s", buf);
		if (!ok && privs_attach_denied(r.attach_err, false))
			set_fix(CHK_TRACEPOINT, "%s", privs_attach_denied(r.attach_err, false));
		else if (!ok)
			set_fix(CHK_TRACEPOINT, "%s", facts.tracefs ? "a kernel with "
				"CONFIG_TRACEPOINTS=y and CONFIG_BPF_EVENTS=y" :
				"mount -t tracefs nodev /sys/kernel/tracing");
	} else {
		set(CHK_TRACEPOINT, false, "BPF programs cannot be loaded");
	}

	run_probe(PROBE_UPROBE, &r);
	ok = probe_evidence(&r, "ptbpf_doctor_uprobe_target in /proc/self/exe", buf, sizeof(buf));
	set(CHK_UPROBE, ok, "%s", buf);
	if (!ok) {
		have_pmu = !access("/sys/bus/event_source/devices/uprobe", F_OK);
		set(CHK_UPROBE, false, "%s; uprobe PMU %s%s", buf, have_pmu ? "present" : "absent",
		    kconfig_note("CONFIG_UPROBE_EVENTS", note, sizeof(note)));
		if (privs_attach_denied(r.attach_err, true))
			set_fix(CHK_UPROBE, "%s", privs_attach_denied(r.attach_err, true));
		else
			set_fix(CHK_UPROBE, "a kernel with CONFIG_UPROBES=y and "
				"CONFIG_UPROBE_EVENTS=y (--uprobe triggers need it)");
	}

	err = libbpf_probe_bpf_map_type(BPF_MAP_TYPE_RINGBUF, NULL);
	if (err <= 0) {
		set(CHK_BPF_RINGBUF, false, "BPF_MAP_TYPE_RINGBUF: %s",
		    err ? strerror(-err) : !privs_has_cap(CAP_BPF) && !privs_has_cap(CAP_SYS_ADMIN) ?
		    "could not be created without CAP_BPF" : "not supported by this kernel");
		set_fix(CHK_BPF_RINGBUF, "Linux 5.8 or newer");
	} else if (r.records > 0) {
		set(CHK_BPF_RINGBUF, true, "BPF_MAP_TYPE_RINGBUF created; the uprobe's record "
		    "arrived");
	} else {
		set(CHK_BPF_RINGBUF, true, "BPF_MAP_TYPE_RINGBUF created (no uprobe record to "
		    "read through it)");
	}

	run_probe(PROBE_TP_BTF, &r);
	ok = probe_evidence(&r, "tp_btf/sys_enter", buf, sizeof(buf));
	set(CHK_TP_BTF, ok, "%s", buf);
	if (!ok)
		set_fix(CHK_TP_BTF, "Linux 5.5 or newer with BTF; ptbpf falls back to tp programs");

	run_probe(PROBE_KPROBE, &r);
	ok = probe_evidence(&r, "kprobe on vfs_read", buf, sizeof(buf));
	if (!ok) {
		char events[300];

		have_pmu = !access("/sys/bus/event_source/devices/kprobe", F_OK);
		snprintf(events, sizeof(events), "%s/kprobe_events", tfs ? tfs : "tracefs");
		set(CHK_KPROBE, false, "%s; kprobe PMU (/sys/bus/event_source/devices/kprobe) "
		    "%s, %s %s%s", buf, have_pmu ? "present" : "absent", events,
		    access(events, F_OK) ? "absent" : "present",
		    kconfig_note("CONFIG_KPROBES", note, sizeof(note)));
		set_fix(CHK_KPROBE, "a kernel with CONFIG_KPROBES=y and CONFIG_KPROBE_EVENTS=y "
			"(only --kprobe triggers need it)");
	} else {
		set(CHK_KPROBE, true, "%s", buf);
	}

	run_probe(PROBE_FENTRY, &r);
	ok = probe_evidence(&r, "fentry/vfs_read", buf, sizeof(buf));
	set(CHK_FENTRY, ok, "%s", buf);
	if (!ok)
		set_fix(CHK_FENTRY, "%s (ptbpf does not need fentry)", r.load_err == -EPERM ?
			"a kernel without lockdown of tracing programs" : "a kernel with "
			"CONFIG_FUNCTION_TRACER=y and CONFIG_DYNAMIC_FTRACE_WITH_DIRECT_CALLS=y");

	check_trigger_programs();
	libbpf_set_print(old_print);
	privilege_not_feature();
}

static void check_kernel_decode(void)
{
	char line[256], note[160];
	unsigned long long addr = 0;
	int fd, kptr = -1;
	FILE *f;

	fd = open("/proc/kcore", O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		set(CHK_KCORE, false, "/proc/kcore: %s%s", strerror(errno),
		    errno == ENOENT ? kconfig_note("CONFIG_PROC_KCORE", note, sizeof(note)) : "");
		set_fix(CHK_KCORE, errno == ENOENT ? "a kernel with CONFIG_PROC_KCORE=y (only "
			"--kernel needs it)" : "run as root (only --kernel needs it)");
	} else {
		set(CHK_KCORE, true, "/proc/kcore is readable");
		close(fd);
	}

	privs_read_sysctl("/proc/sys/kernel/kptr_restrict", &kptr);
	f = fopen("/proc/kallsyms", "re");
	if (!f) {
		set(CHK_KALLSYMS, false, "/proc/kallsyms: %s", strerror(errno));
		set_fix(CHK_KALLSYMS, "a kernel with CONFIG_KALLSYMS=y (only --kernel needs it)");
	} else {
		while (fgets(line, sizeof(line), f)) {
			char sym[128];

			if (sscanf(line, "%llx %*c %127s", &addr, sym) == 2 &&
			    (!strcmp(sym, "_stext") || !strcmp(sym, "_text")))
				break;
			addr = 0;
		}
		fclose(f);
		if (addr) {
			set(CHK_KALLSYMS, true, "readable, addresses visible (_stext at %llx)",
			    addr);
		} else {
			set(CHK_KALLSYMS, false, "readable, but _stext shows no address "
			    "(kernel.kptr_restrict=%d)", kptr);
			/* kallsyms_show_value(): 0 shows them to perf users or CAP_SYSLOG */
			if (kptr == 0 && !privs_has_cap(CAP_SYSLOG))
				set_fix(CHK_KALLSYMS, "a missing privilege: run as root, grant CAP_SYSLOG, "
					"or sysctl kernel.perf_event_paranoid=1 (only --kernel needs it)");
			else
				set_fix(CHK_KALLSYMS, "run as root, or sysctl kernel.kptr_restrict=0 "
					"(only --kernel needs it)");
		}
	}
	if (kptr < 0) {
		set(CHK_KPTR_RESTRICT, false, "cannot read /proc/sys/kernel/kptr_restrict");
	} else {
		/* the sysctl's own verdict; a missing privilege is kallsyms' line */
		set(CHK_KPTR_RESTRICT, kptr == 0 || (kptr == 1 && privs_has_cap(CAP_SYSLOG)),
		    "kernel.kptr_restrict=%d%s", kptr, kptr == 0 ? "" : kptr == 1 ?
		    " (addresses need CAP_SYSLOG)" : " (addresses hidden from everyone)");
		if (!checks[CHK_KPTR_RESTRICT].present)
			set_fix(CHK_KPTR_RESTRICT, "sysctl kernel.kptr_restrict=%d (only --kernel "
				"needs it)", kptr == 2 ? 1 : 0);
	}
}

static void check_privileges(void)
{
	static const struct {
		enum check_id id;
		int cap;
		const char *name, *what;
	} caps[] = {
		{ CHK_CAP_BPF, CAP_BPF, "cap_bpf", "load BPF programs (or CAP_SYS_ADMIN)" },
		{ CHK_CAP_PERFMON, CAP_PERFMON, "cap_perfmon",
		  "per-CPU PT events and tracing BPF programs (or CAP_SYS_ADMIN)" },
		{ CHK_CAP_SYS_ADMIN, CAP_SYS_ADMIN, "cap_sys_admin",
		  "attach uprobes (--uprobe, --usdt), mount tracefs; stands in for CAP_BPF and "
		  "CAP_PERFMON" },
		{ CHK_CAP_SYS_PTRACE, CAP_SYS_PTRACE, "cap_sys_ptrace",
		  "singlestep on -p PID of another user, /proc/PID/mem of targets" },
	};
	char why[EVIDENCE_LEN];
	struct rlimit rl;
	int paranoid;
	size_t i;

	if (privs_read_sysctl("/proc/sys/kernel/perf_event_paranoid", &paranoid)) {
		set(CHK_PARANOID, false, "cannot read /proc/sys/kernel/perf_event_paranoid");
	} else if (privs_cpu_wide_perf(why, sizeof(why))) {
		set(CHK_PARANOID, true, "kernel.perf_event_paranoid=%d%s", paranoid,
		    privs_has_cap(CAP_PERFMON) || privs_has_cap(CAP_SYS_ADMIN) ?
		    "; CAP_PERFMON effective, so per-CPU and kernel tracing are allowed" : "");
	} else {
		set_why(CHK_PARANOID, false, why);
	}

	for (i = 0; i < ARRAY_SIZE(caps); i++) {
		bool has = privs_has_cap(caps[i].cap);

		set(caps[i].id, has, "%s effective: %s", has ? "is" : "not", caps[i].what);
		if (!has)
			set_fix(caps[i].id, "run as root, or setcap %s+ep on the ptbpf binary",
				caps[i].name);
	}

	if (getrlimit(RLIMIT_MEMLOCK, &rl)) {
		set(CHK_MEMLOCK, false, "getrlimit: %s", strerror(errno));
	} else if (rl.rlim_cur == RLIM_INFINITY) {
		set(CHK_MEMLOCK, true, "unlimited");
	} else if (privs_has_cap(CAP_IPC_LOCK)) {
		set(CHK_MEMLOCK, true, "%llu KiB, but CAP_IPC_LOCK lifts it for perf rings (and "
		    "BPF memory is charged to the memory cgroup since 5.11)",
		    (unsigned long long)rl.rlim_cur >> 10);
	} else {
		/* 4 MiB AUX + data ring per CPU, beyond kernel.perf_event_mlock_kb */
		set(CHK_MEMLOCK, rl.rlim_cur >= (uint64_t)(5 << 20) * sysconf(_SC_NPROCESSORS_ONLN),
		    "%llu KiB without CAP_IPC_LOCK (pt rings: ~5 MiB per CPU beyond "
		    "kernel.perf_event_mlock_kb)", (unsigned long long)rl.rlim_cur >> 10);
		if (!checks[CHK_MEMLOCK].present)
			set_fix(CHK_MEMLOCK, "ulimit -l unlimited, or a smaller --buffer-size");
	}

	if (privs_ptrace_probe(why, sizeof(why)))
		set_why(CHK_PTRACE, false, why);
	else
		set(CHK_PTRACE, true, "%s", why);
}

static void check_backends(void)
{
	bool pt, ss;

	pt = pt_pmu_usable(env.sysfs_root, facts.pt_why, sizeof(facts.pt_why));
	if (pt)
		set(CHK_BACKEND_PT, true, "usable: %s (type %u)%s", facts.pmu ?
		    pt_pmu__dir(facts.pmu) : "intel_pt", pt_pmu__type(facts.pmu),
		    strcmp(env.sysfs_root, "/sys") ? " [fake sysfs root]" : "");
	else
		set_why(CHK_BACKEND_PT, false, facts.pt_why);

	ss = checks[CHK_PTRACE].present;
	if (ss) {
		facts.ss_why[0] = '\0';
		set(CHK_BACKEND_SINGLESTEP, true, "usable: ptrace single-stepping works (software "
		    "PT, ~100 us per instruction on VMs)");
	} else {
		snprintf(facts.ss_why, sizeof(facts.ss_why), "ptrace does not work here: %s",
			 checks[CHK_PTRACE].evidence);
		set(CHK_BACKEND_SINGLESTEP, false, "%s", facts.ss_why);
		set_fix(CHK_BACKEND_SINGLESTEP, "%s", checks[CHK_PTRACE].fix);
	}
	facts.default_backend = pt ? "pt" : ss ? "singlestep" : NULL;

	/* with a real PMU, try a real group: BTF says the field exists, not that PT takes it */
	if (pt && facts.aux_pause && !strcmp(env.sysfs_root, "/sys")) {
		int cpu = sched_getcpu() < 0 ? 0 : sched_getcpu();
		int fd = pt_open_probe_event(pt_pmu__type(facts.pmu), cpu);
		int err = fd < 0 ? fd : pt_probe_aux_pause(fd, cpu);

		if (fd >= 0)
			close(fd);
		if (err) {
			facts.aux_pause = false;
			set(CHK_AUX_PAUSE, false, "perf_event_attr.aux_pause is in the kernel's "
			    "BTF, but a PT group refused an aux_pause member: %s",
			    strerror(-err));
			set_fix(CHK_AUX_PAUSE, "a kernel whose intel_pt driver supports "
				"pause/resume (6.13+)");
		} else {
			set(CHK_AUX_PAUSE, true, "perf_event_attr.aux_pause is in the kernel's "
			    "BTF, and a PT group took an aux_pause member");
		}
	}

	/* which freeze a capture would get, and what pt would get were it usable */
	facts.pt_freeze_path = facts.aux_pause && facts.uprobe_events ? "aux_pause" :
			       "disable_ioctl";
	if (pt && facts.aux_pause && facts.uprobe_events) {
		facts.freeze_path = "aux_pause";
		set(CHK_FREEZE_PATH, true, "in the kernel: aux_pause trigger events in each CPU's "
		    "PT group stop PT at the probe; the loader then disables every CPU's PT "
		    "event");
	} else if (pt) {
		facts.freeze_path = "disable_ioctl";
		set(CHK_FREEZE_PATH, true, "from user space: the loader disables every CPU's PT "
		    "event when the trigger's ring-buffer record arrives (skid: wake-up + IPI)%s",
		    facts.aux_pause ? "; tracefs uprobe_events is missing for the in-kernel path" :
		    "");
		set_fix(CHK_FREEZE_PATH, "%s", facts.aux_pause ? "a kernel with "
			"CONFIG_UPROBE_EVENTS=y, tracefs mounted" : "Linux 6.13 or newer for the "
			"in-kernel freeze");
	} else if (ss) {
		facts.freeze_path = "singlestep";
		set(CHK_FREEZE_PATH, true, "singlestep: stepping stops at the trigger; with Intel "
		    "PT this host would freeze %s", facts.aux_pause && facts.uprobe_events ?
		    "in the kernel (aux_pause)" : "from user space (PERF_EVENT_IOC_DISABLE)");
	} else {
		facts.freeze_path = "none";
		set(CHK_FREEZE_PATH, false, "no backend can capture on this host");
	}
}

static json_object *json_str(const char *s)
{
	return s && *s ? json_object_new_string(s) : NULL;
}

static int print_json(int status)
{
	json_object *root, *obj, *sub, *caps;
	static const char *const cap_names[] = {
		"max_subleaf", "cr3_filtering", "psb_cyc", "ip_filtering", "mtc", "ptwrite",
		"power_event_trace", "event_trace", "tnt_disable", "topa_output",
		"topa_multiple_entries", "single_range_output", "output_subsys", "payloads_lip",
		"num_address_ranges", "mtc_periods", "cycle_thresholds", "psb_periods",
	};
	uint32_t v, num, den;
	size_t i;

	root = json_object_new_object();
	json_object_object_add(root, "version", json_object_new_string(PTBPF_VERSION));
	sub = json_object_new_object();
	json_object_object_add(sub, "release", json_object_new_string(facts.uts.release));
	json_object_object_add(sub, "machine", json_object_new_string(facts.uts.machine));
	json_object_object_add(root, "kernel", sub);
	json_object_object_add(root, "sysfs_root", json_object_new_string(env.sysfs_root));

	obj = json_object_new_object();
	for (i = 0; i < NR_CHECKS; i++) {
		sub = json_object_new_object();
		json_object_object_add(sub, "present", json_object_new_boolean(checks[i].present));
		json_object_object_add(sub, "evidence", json_str(checks[i].evidence));
		json_object_object_add(sub, "fix", json_str(checks[i].fix));
		json_object_object_add(obj, checks[i].key, sub);
	}
	json_object_object_add(root, "checks", obj);

	obj = json_object_new_object();
	json_object_object_add(obj, "present", json_object_new_boolean(facts.pmu != NULL));
	json_object_object_add(obj, "type", facts.pmu ?
			       json_object_new_int64(pt_pmu__type(facts.pmu)) : NULL);
	caps = NULL;
	if (facts.pmu) {
		caps = json_object_new_object();
		for (i = 0; i < ARRAY_SIZE(cap_names); i++)
			json_object_object_add(caps, cap_names[i],
					       pt_pmu__cap(facts.pmu, cap_names[i], &v) ? NULL :
					       json_object_new_int64(v));
	}
	json_object_object_add(obj, "caps", caps);
	json_object_object_add(obj, "max_nonturbo_ratio",
			       facts.pmu && !pt_pmu__max_nonturbo_ratio(facts.pmu, &v) ?
			       json_object_new_int64(v) : NULL);
	sub = NULL;
	if (facts.pmu && !pt_pmu__tsc_art_ratio(facts.pmu, &num, &den)) {
		sub = json_object_new_object();
		json_object_object_add(sub, "num", json_object_new_int64(num));
		json_object_object_add(sub, "den", json_object_new_int64(den));
	}
	json_object_object_add(obj, "tsc_art_ratio", sub);
	json_object_object_add(root, "intel_pt", obj);

	obj = json_object_new_object();
	json_object_object_add(obj, "path", json_object_new_string(facts.freeze_path));
	json_object_object_add(obj, "pt_path", json_object_new_string(facts.pt_freeze_path));
	json_object_object_add(root, "freeze", obj);

	obj = json_object_new_object();
	sub = json_object_new_object();
	json_object_object_add(sub, "usable",
			       json_object_new_boolean(checks[CHK_BACKEND_PT].present));
	json_object_object_add(sub, "why", checks[CHK_BACKEND_PT].present ? NULL :
			       json_str(facts.pt_why));
	json_object_object_add(obj, "pt", sub);
	sub = json_object_new_object();
	json_object_object_add(sub, "usable",
			       json_object_new_boolean(checks[CHK_BACKEND_SINGLESTEP].present));
	json_object_object_add(sub, "why", json_str(facts.ss_why));
	json_object_object_add(obj, "singlestep", sub);
	json_object_object_add(root, "backends", obj);
	json_object_object_add(root, "default_backend", json_str(facts.default_backend));
	json_object_object_add(root, "exit_status", json_object_new_int(status));

	printf("%s\n", json_object_to_json_string_ext(root, JSON_C_TO_STRING_PRETTY |
						      JSON_C_TO_STRING_SPACED |
						      JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(root);
	return 0;
}

static void print_text(int status)
{
	size_t i;

	for (i = 0; i < NR_CHECKS; i++) {
		const struct check *c = &checks[i];

		if (c->section)
			printf("%s%s\n", i ? "\n" : "", c->section);
		printf("  %-7s %-20s %s%s%s\n", c->present ? "present" : "absent", c->label,
		       c->evidence, c->fix[0] ? "; fix: " : "", c->fix);
	}
	printf("\n");
	if (facts.default_backend)
		printf("Captures on this host use --backend %s (freeze: %s).\n",
		       facts.default_backend, facts.freeze_path);
	else
		printf("No backend can capture on this host (exit status %d).\n", status);
}

enum {
	OPT_JSON = 0x100,
	OPT_SYSFS_ROOT,
};

static const struct argp_option doctor_options[] = {
	{ NULL, 0, NULL, 0, "Output:", 1 },
	{ "json", OPT_JSON, NULL, 0, "Print one JSON object (keys documented in README)" },
	{ "verbose", 'v', NULL, 0, "Show libbpf's messages for the probes (-vv)" },
	/* tests point this at fake trees; PTBPF_SYSFS_ROOT does the same */
	{ "sysfs-root", OPT_SYSFS_ROOT, "DIR", OPTION_HIDDEN, "Read the PT PMU below DIR" },
	{},
};

static const char doctor_doc[] =
	"Say what this host supports for ptbpf, and how to fix what it does not: the Intel PT "
	"PMU and its capabilities, the in-kernel freeze (aux_pause), BPF program types, "
	"attach points and features (atomics, task storage), whether the trigger programs "
	"load, kernel decoding (/proc/kcore, kallsyms), privileges, and which "
	"capture backends are usable. Each line: present/absent, the evidence, the fix.\n"
	"\n"
	"Exit status: 0 if at least one backend can capture, 1 if none can, 2 on a usage "
	"error."
	"\v"
	"Examples:\n"
	"  ptbpf doctor            one line per capability\n"
	"  ptbpf doctor --json     the same as one JSON object\n"
	"  sudo ptbpf doctor       what root would get";

static error_t parse_doctor_opt(int key, char *arg, struct argp_state *state)
{
	switch (key) {
	case OPT_JSON:
		env.json = true;
		return 0;
	case 'v':
		env.verbose++;
		return 0;
	case OPT_SYSFS_ROOT:
		env.sysfs_root = arg;
		return 0;
	case ARGP_KEY_ARG:
		return usage_error(state, "unexpected argument '%s'", arg);
	default:
		return ARGP_ERR_UNKNOWN;
	}
}

int cmd_doctor(int argc, char **argv)
{
	static const struct argp argp = {
		.options = doctor_options,
		.parser = parse_doctor_opt,
		.doc = doctor_doc,
	};
	int err, status;

	env = (struct doctor_env){ .sysfs_root = pt_sysfs_root() };
	err = cli_parse(&argp, argc, argv, 0, NULL);
	if (err)
		return err;
	ptbpf_log_level = env.verbose;
	if (uname(&facts.uts))
		memset(&facts.uts, 0, sizeof(facts.uts));

	check_kernel();
	check_intel_pt();
	check_aux_pause();
	check_bpf();
	check_kernel_decode();
	check_privileges();
	check_backends();

	tracefs_unmount(tracefs_mounted_now);
	status = facts.default_backend ? 0 : 1;
	if (env.json)
		print_json(status);
	else
		print_text(status);
	pt_pmu__free(facts.pmu);
	facts.pmu = NULL;
	return status;
}
