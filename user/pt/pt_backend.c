// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The pt backend: one Intel PT event per online CPU (pid -1), its AUX area mapped
 * read-only so the kernel overwrites it (snapshot mode), sideband on the same event's
 * data ring (notes/kernel-pt-abi.md §1, §2, §4).
 *
 * Freezing. With aux_pause (Linux 6.13+, probed at open), each trigger is also a
 * tracepoint perf event in every CPU's PT group with aux_pause=1: when the trigger's BPF
 * program returns 1, PT on that CPU stops inside the probe. The program's ring-buffer
 * record then wakes the loader, which disables every CPU's PT event (that publishes
 * aux_head, which a pause does not). Without aux_pause the loader's disable is the freeze.
 *
 * Resuming. PERF_EVENT_IOC_ENABLE after the snapshot's DISABLE restarts PT where it
 * stopped: pt_event_start() -> perf_aux_output_begin() hands the driver the published
 * aux_head, and pt_buffer_reset_offsets() continues the ToPA output there (arch/x86/events/
 * intel/pt.c). So resume() keeps every CPU's ring and re-enables it, and the next snapshot
 * copies what was written since by the reference bytes before the old head
 * (aux_ring_copy_since(), as perf's intel_pt_find_snapshot()), not by the zero test of a
 * fresh ring. The exception is a CPU a gate paused: hw.aux_paused is sticky through
 * DISABLE/ENABLE (pt_config_start() returns early while it is set) until an aux_resume
 * event fires there, and an idle CPU may have none. Those CPUs are found by their gate
 * members' counts: a tracepoint event counts a hit only when its BPF program returned
 * non-zero (perf_trace_run_bpf_submit(), trace_uprobe.c __uprobe_perf_func(): a zero
 * return skips perf_tp_event()), and that is exactly when it paused PT. Only their groups
 * are closed and reopened (a fresh, zeroed ring).
 */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <linux/perf_event.h>

#include "array.h"
#include "aux_ring.h"
#include "backend.h"
#include "data_ring.h"
#include "hostinfo.h"
#include "kcore.h"
#include "log.h"
#include "privs.h"
#include "proc_synth.h"
#include "pt_pmu.h"
#include "symtab.h"
#include "target.h"
#include "vdso.h"

/* Sideband ring per CPU: enough for a few thousand records between drains. */
#define DATA_PAGES 256
/* Sideband history per CPU: the newest records, whatever the length of the run. */
#define HISTORY_BYTES (8u << 20)
#define MAX_CPUS 1024
#define FILTER_LEN 4096
/* Reference bytes per CPU for a kept ring (perf's max_size in intel_pt_snapshot_ref_buf_size()) */
#define REF_MAX (256u << 10)
/* How long a started command may take to map the binaries --filter names. */
#define FILTER_WAIT_MS 1000

enum ev_tag {
	TAG_CPU = 1,
	TAG_HOOK,
	TAG_TARGET,
};

struct pt_cpu {
	int cpu;			/* CPU number */
	int fd;				/* PT event, the group leader; -1 when closed */
	int *gate_fds;			/* aux_pause members, one per gate; -1 when closed */
	struct perf_event_mmap_page *pc; /* user page, then the data ring; NULL */
	void *aux;			/* the AUX area, read-only; NULL */
	uint64_t id;			/* PERF_EVENT_IOC_ID of the PT event */
	uint64_t aux_stream;		/* AUX bytes of this CPU in earlier snapshots */
	uint64_t *gate_counts;		/* each gate member's count when last looked at */
	bool kept;			/* the ring was re-enabled, not reopened, since the
					 * last snapshot: prev_head and ref say what is new */
	uint64_t prev_head;		/* aux_head at the last snapshot */
	uint8_t *ref;			/* ref_len bytes before prev_head then; NULL */
	struct record_fifo *hist;	/* sideband drained so far */
};

/* One --filter function, as a range of its file. */
struct filter_range {
	const char *spec;		/* the --filter argument, for messages */
	dev_t dev;			/* the file, as /proc/PID/maps names it */
	ino_t ino;
	uint64_t file_off, size;	/* the function's bytes in the file */
};

struct backend {
	const struct capture_opts *opts;
	struct target *target;
	struct pt_pmu *pmu;
	uint64_t config[3];
	struct perf_event_attr attr;	/* of every CPU's PT event */
	char *filter;			/* PERF_EVENT_IOC_SET_FILTER string, NULL if none (yet) */
	struct filter_range *ranges;	/* --filter, resolved in the files */
	int nr_ranges;
	bool filter_pending;		/* a started command: set once it has exec'd */
	size_t page, data_size, aux_size;
	size_t ref_len;			/* reference bytes kept per CPU (aux_ring_copy_since) */
	int nr_cpus;
	struct pt_cpu *cpus;
	bool aux_pause;			/* the kernel accepts aux_pause members (probed) */
	bool gated;			/* gate events are open: the in-kernel freeze is armed */
	int nr_gates;
	uint64_t *gate_tp;		/* tracepoint id of each gate */
	int *anchor_fds;		/* one event per gate holding its program, until its BPF
					 * link owns it (then -1) */
	int *prog_fds;			/* the trigger programs (owned by the triggers), whose
					 * JIT images a --kernel snapshot records */
	int nr_prog_fds;
	int epfd;
	bool hooks_added;
	bool enabled;
	unsigned int snapshots;
	pid_t focus_pid;		/* system-wide: the process the next snapshot is about */
	uint64_t lost;			/* records the kernel reported lost */
	char desc[320];
};

static void describe(struct backend *b);

static int perf_event_open(struct perf_event_attr *attr, pid_t pid, int cpu, int group)
{
	return pt_sys_perf_event_open(attr, pid, cpu, group);
}

static bool pt_usable(char *why, size_t why_size)
{
	return pt_pmu_usable(pt_sysfs_root(), why, why_size);
}

/*
 * "0-3,5,7-8" -> CPU numbers, from the sysfs tree the PMU is read from (a test's tree
 * may describe its CPUs too; if it does not, the host's).
 */
static int online_cpus(int *cpus, int max)
{
	char buf[4096], *p, *end;
	int n = 0;
	FILE *f;

	snprintf(buf, sizeof(buf), "%s/devices/system/cpu/online", pt_sysfs_root());
	f = fopen(buf, "re");
	if (!f && errno == ENOENT)
		f = fopen("/sys/devices/system/cpu/online", "re");
	if (!f)
		return -errno;
	if (!fgets(buf, sizeof(buf), f)) {
		fclose(f);
		return -EINVAL;
	}
	fclose(f);
	for (p = buf; *p && *p != '\n';) {
		long lo = strtol(p, &end, 10), hi = lo;

		if (end == p)
			return -EINVAL;
		if (*end == '-')
			hi = strtol(end + 1, &end, 10);
		for (; lo <= hi && n < max; lo++)
			cpus[n++] = lo;
		p = *end == ',' ? end + 1 : end;
	}
	return n;
}

/*
 * --filter BIN:SYM -> the function's file range. The kernel takes a file-based filter
 * ("filter 0xOFF/0xSIZE@/bin") only on a per-task event: perf_event_parse_addr_filter()
 * in kernel/events/core.c returns -EOPNOTSUPP for one on a CPU-wide event ("only per-task
 * events"), and every PT event here is CPU-wide. So the range is placed in the target's
 * address space (filter_string()) and given as an address range ("filter 0xVADDR/0xSIZE").
 */
static int resolve_filters(const struct capture_opts *opts, struct filter_range **out)
{
	struct filter_range *fr;
	struct stat st;
	int i, err = 0;

	*out = NULL;
	if (!opts->nr_filters)
		return 0;
	fr = calloc(opts->nr_filters, sizeof(*fr));
	if (!fr)
		return -ENOMEM;
	for (i = 0; i < opts->nr_filters && !err; i++) {
		char *bin = strdup(opts->filters[i]), *sym = bin ? strchr(bin, ':') : NULL;
		struct symtab *symtab = NULL;
		const struct sym *fn;
		int nr_fn;

		if (!sym) {
			err = bin ? -EINVAL : -ENOMEM;
			free(bin);
			break;
		}
		*sym++ = '\0';
		fr[i].spec = opts->filters[i];
		err = symtab__load(bin, &symtab);
		nr_fn = err ? 0 : symtab__lookup(symtab, sym, &fn, 1);
		if (err) {
			elog("--filter %s: cannot read symbols of %s: %s\n", opts->filters[i], bin,
			     strerror(-err));
		} else if (nr_fn > 1) {
			elog("--filter %s: '%s' names %d functions in %s: give the full name, "
			     "with its parameters\n", opts->filters[i], sym, nr_fn, bin);
			err = -EINVAL;
		} else if (nr_fn != 1) {
			const char *near[3];
			int n = symtab__suggest(symtab, sym, near, 3);

			elog("--filter %s: no function '%s' in %s%s%s%s\n", opts->filters[i], sym,
			     bin, n > 0 ? " (did you mean " : "", n > 0 ? near[0] : "",
			     n > 0 ? "?)" : "");
			err = -EINVAL;
		} else if (!fn->size) {
			elog("--filter %s: '%s' has no size in the symbol table\n",
			     opts->filters[i], sym);
			err = -EINVAL;
		} else if ((err = symtab__addr_to_offset(symtab, fn->addr, &fr[i].file_off))) {
			elog("--filter %s: '%s' is in no loadable segment of %s\n",
			     opts->filters[i], sym, bin);
		} else if (stat(bin, &st)) {
			err = -errno;
		} else {
			fr[i].dev = st.st_dev;
			fr[i].ino = st.st_ino;
			fr[i].size = fn->size;
		}
		symtab__free(symtab);
		free(bin);
	}
	if (err) {
		free(fr);
		return err;
	}
	*out = fr;
	return 0;
}

/*
 * The filter string for process `pid`: each range at the address where the target maps
 * that part of its file (/proc/PID/maps, matched by device and inode). -ENOENT, with
 * `missing` naming the first --filter not mapped (yet), when one is not.
 */
static int filter_string(const struct backend *b, pid_t pid, char **out, const char **missing)
{
	char path[64], line[PATH_MAX + 128];
	uint64_t *vaddr;
	struct pd_record m;
	size_t len = 0;
	int i, err = 0;
	FILE *f;
	char *s;

	*out = NULL;
	vaddr = calloc(b->nr_ranges, sizeof(*vaddr));
	if (!vaddr)
		return -ENOMEM;
	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	f = fopen(path, "re");
	if (!f) {
		err = -errno;
		goto out;
	}
	while (fgets(line, sizeof(line), f)) {
		if (proc_synth_maps_line(line, pid, &m) != 1)
			continue;
		for (i = 0; i < b->nr_ranges; i++) {
			const struct filter_range *r = &b->ranges[i];

			if (!vaddr[i] && m.mmap.ino == (uint64_t)r->ino &&
			    makedev(m.mmap.maj, m.mmap.min) == r->dev && r->file_off >= m.mmap.pgoff &&
			    r->file_off + r->size <= m.mmap.pgoff + m.mmap.len)
				vaddr[i] = m.mmap.addr + (r->file_off - m.mmap.pgoff);
		}
	}
	fclose(f);
	s = calloc(1, FILTER_LEN);
	if (!s) {
		err = -ENOMEM;
		goto out;
	}
	for (i = 0; i < b->nr_ranges && !err; i++) {
		if (!vaddr[i]) {
			*missing = b->ranges[i].spec;
			err = -ENOENT;
			break;
		}
		len += snprintf(s + len, FILTER_LEN - len, "%sfilter 0x%llx/0x%llx", len ? "," : "",
				(unsigned long long)vaddr[i], (unsigned long long)b->ranges[i].size);
		if (len >= FILTER_LEN)
			err = -E2BIG;
	}
	if (err)
		free(s);
	else
		*out = s;
out:
	free(vaddr);
	return err;
}

/* Why the kernel refused filter `f` on a CPU's PT event, and what it needs. */
static void filter_error(const char *f, int cpu, int err)
{
	elog("--backend pt: the kernel refused the address filter '%s' on CPU %d: %s%s\n", f, cpu,
	     strerror(-err), err == -EINVAL ? " (--filter needs Linux 5.18: it gives the CPU-wide "
	     "PT events a user-space address range, which perf_event_parse_addr_filter() "
	     "refused with exclude_kernel before, and intel_pt took only kernel addresses)" : "");
}

/* Whether process `pid` has exited (a child of ours is not reaped here). */
static bool target_ended(pid_t pid)
{
	siginfo_t si = {};

	if (kill(pid, 0) && errno == ESRCH)
		return true;
	return !waitid(P_PID, pid, &si, WEXITED | WNOHANG | WNOWAIT) && si.si_pid == pid;
}

/*
 * --filter on this kernel, before the target runs: a PT probe event takes a user-space
 * address range or says why not. A probe event that cannot be opened is left to the
 * real events, which say why.
 */
static int probe_filter(const struct backend *b, int cpu)
{
	int fd, err;

	if (!b->nr_ranges)
		return 0;
	fd = pt_open_probe_event(pt_pmu__type(b->pmu), cpu);
	if (fd < 0)
		return 0;
	err = pt_probe_address_filter(fd);
	close(fd);
	if (!err)
		return 0;
	filter_error("filter 0xADDR/0xSIZE", cpu, err);
	return err == -EINVAL ? -EOPNOTSUPP : err;
}

/*
 * Put the --filter ranges on every CPU's PT event, at the addresses of the target's
 * mappings. A command ptbpf started has just been let exec (target__release() returns
 * once the exec began): its program and the loader's libraries are mapped within
 * milliseconds, so this waits for them, up to FILTER_WAIT_MS. -ESRCH: the target ended
 * first.
 */
static int apply_filter(struct backend *b)
{
	const char *missing = NULL;
	int i, waited, err;

	for (waited = 0;; waited++) {
		err = filter_string(b, b->target->pid, &b->filter, &missing);
		if (err != -ENOENT || waited >= FILTER_WAIT_MS)
			break;
		if (target_ended(b->target->pid))
			return -ESRCH;	/* a short command: traced whole, unfiltered */
		usleep(1000);
	}
	if (err == -ENOENT && missing) {
		elog("--filter %s: the binary is not mapped in the target (pid %d)%s\n", missing,
		     b->target->pid, b->target->spawned ? " within 1 s of its start (a library it "
		     "loads later: use -p PID once it is loaded)" : " (fix: name a binary it has "
		     "loaded)");
		return -ENOENT;
	}
	if (err) {
		elog("--filter: cannot read the target's mappings: %s\n", strerror(-err));
		return err;
	}
	vlog("pt: address filter '%s'\n", b->filter);
	for (i = 0; i < b->nr_cpus; i++) {
		if (pt_sys_ioctl(b->cpus[i].fd, PERF_EVENT_IOC_SET_FILTER, (unsigned long)b->filter)) {
			err = -errno;
			filter_error(b->filter, b->cpus[i].cpu, err);
			return err;
		}
	}
	b->filter_pending = false;
	describe(b);
	return 0;
}

/* One line saying why a PT event could not be opened on this CPU, and the fix. */
static void open_error(const struct backend *b, int cpu, int err)
{
	char why[512];

	switch (-err) {
	case EACCES:
	case EPERM:
		if (!privs_cpu_wide_perf(why, sizeof(why)) ||
		    (b->opts->kernel && !privs_kernel_perf(why, sizeof(why))))
			elog("--backend pt: cannot open intel_pt on CPU %d: %s\n", cpu, why);
		else
			elog("--backend pt: cannot open intel_pt on CPU %d: %s (fix: run as "
			     "root)\n", cpu, strerror(-err));
		break;
	case EBUSY:
		elog("--backend pt: intel_pt on CPU %d is in use by another tracer (fix: stop "
		     "the other Intel PT user, e.g. perf record -e intel_pt//)\n", cpu);
		break;
	case EINVAL:
		elog("--backend pt: the kernel refused intel_pt config 0x%llx on CPU %d: %s\n",
		     (unsigned long long)b->config[0], cpu, strerror(-err));
		break;
	default:
		elog("--backend pt: cannot open intel_pt on CPU %d: %s\n", cpu, strerror(-err));
		break;
	}
}

static void cpu_close(struct backend *b, struct pt_cpu *c)
{
	int i;

	for (i = 0; c->gate_fds && i < b->nr_gates; i++) {
		if (c->gate_fds[i] >= 0)
			close(c->gate_fds[i]);
		c->gate_fds[i] = -1;
	}
	if (c->aux)
		munmap(c->aux, b->aux_size);
	if (c->pc)
		munmap(c->pc, b->page + b->data_size);
	if (c->fd >= 0)
		close(c->fd);
	c->aux = NULL;
	c->pc = NULL;
	c->fd = -1;
	c->kept = false;
}

static int cpu_open(struct backend *b, struct pt_cpu *c, int index)
{
	struct epoll_event ev = { .events = EPOLLIN };
	void *p;
	int err;

	c->fd = perf_event_open(&b->attr, -1, c->cpu, -1);
	if (c->fd < 0) {
		err = -errno;
		open_error(b, c->cpu, err);
		return err;
	}
	p = pt_sys_mmap(b->page + b->data_size, PROT_READ | PROT_WRITE, c->fd, 0);
	if (p == MAP_FAILED) {
		err = -errno;
		elog("--backend pt: cannot map the data ring of CPU %d: %s%s\n", c->cpu,
		     strerror(-err), err == -EPERM ? " (fix: ulimit -l unlimited, or run as "
		     "root)" : "");
		return err;
	}
	c->pc = p;
	c->pc->aux_offset = b->page + b->data_size;
	c->pc->aux_size = b->aux_size;
	/* no PROT_WRITE: the kernel makes it an overwrite (snapshot) ring */
	p = pt_sys_mmap(b->aux_size, PROT_READ, c->fd, c->pc->aux_offset);
	if (p == MAP_FAILED) {
		err = -errno;
		elog("--backend pt: cannot map a %zu KiB AUX area on CPU %d: %s (fix: a smaller "
		     "--buffer-size%s)\n", b->aux_size >> 10, c->cpu, strerror(-err),
		     err == -EPERM ? ", ulimit -l unlimited, or run as root" : "");
		return err;
	}
	c->aux = p;
	if (pt_sys_ioctl(c->fd, PERF_EVENT_IOC_ID, (unsigned long)&c->id)) {
		err = -errno;
		elog("--backend pt: PERF_EVENT_IOC_ID on CPU %d: %s\n", c->cpu, strerror(-err));
		return err;
	}
	if (b->filter && pt_sys_ioctl(c->fd, PERF_EVENT_IOC_SET_FILTER, (unsigned long)b->filter)) {
		err = -errno;
		filter_error(b->filter, c->cpu, err);
		return err;
	}
	ev.data.u64 = (uint64_t)TAG_CPU << 32 | (uint32_t)index;
	if (epoll_ctl(b->epfd, EPOLL_CTL_ADD, c->fd, &ev)) {
		err = -errno;
		elog("--backend pt: epoll: %s\n", strerror(-err));
		return err;
	}
	return 0;
}

static bool probe_aux_pause(int leader, int cpu)
{
	int err = pt_probe_aux_pause(leader, cpu);

	if (err)
		vlog("pt: no aux_pause members (%s): the loader will freeze PT\n", strerror(-err));
	return !err;
}

/* This CPU's aux_pause members, one per gate. */
static int cpu_open_gates(struct backend *b, struct pt_cpu *c)
{
	struct perf_event_attr a;
	int i, err;

	for (i = 0; i < b->nr_gates; i++) {
		pt_attr_trigger(&a, b->gate_tp[i]);
		c->gate_counts[i] = 0;
		c->gate_fds[i] = perf_event_open(&a, -1, c->cpu, c->fd);
		if (c->gate_fds[i] < 0) {
			err = -errno;
			elog("--backend pt: cannot add the trigger to CPU %d's PT group: %s\n",
			     c->cpu, strerror(-err));
			return err;
		}
	}
	return 0;
}

static int open_all(struct backend *b)
{
	int i, err;

	for (i = 0; i < b->nr_cpus; i++) {
		err = cpu_open(b, &b->cpus[i], i);
		if (err)
			return err;
		if (b->gated) {
			err = cpu_open_gates(b, &b->cpus[i]);
			if (err)
				return err;
		}
	}
	return 0;
}

static void describe(struct backend *b)
{
	snprintf(b->desc, sizeof(b->desc), "pt: %d CPUs, %zu KiB AUX ring each, config 0x%llx%s, "
		 "freeze %s", b->nr_cpus, b->aux_size >> 10, (unsigned long long)b->config[0],
		 b->filter ? ", address filter" : b->filter_pending ? ", address filter at "
		 "the target's exec" : "", b->gated ? "in the kernel (aux_pause at the "
		 "trigger, then PERF_EVENT_IOC_DISABLE)" : "from user space "
		 "(PERF_EVENT_IOC_DISABLE when the trigger's record arrives)");
}

static void pt_close(struct backend *b)
{
	int i;

	if (!b)
		return;
	for (i = 0; b->cpus && i < b->nr_cpus; i++) {
		cpu_close(b, &b->cpus[i]);
		free(b->cpus[i].gate_fds);
		free(b->cpus[i].gate_counts);
		free(b->cpus[i].ref);
		record_fifo__free(b->cpus[i].hist);
	}
	for (i = 0; b->anchor_fds && i < b->nr_gates; i++)
		if (b->anchor_fds[i] >= 0)
			close(b->anchor_fds[i]);
	if (b->epfd >= 0)
		close(b->epfd);
	free(b->anchor_fds);
	free(b->prog_fds);
	free(b->gate_tp);
	free(b->cpus);
	free(b->filter);
	free(b->ranges);
	pt_pmu__free(b->pmu);
	free(b);
}

static int pt_open(const struct capture_opts *opts, struct target *t, struct backend **out)
{
	struct pt_request req;
	struct backend *b;
	int cpus[MAX_CPUS];
	char err_line[512];
	int i, n, err;

	if (!opts || !out)
		return -EINVAL;
	*out = NULL;
	if (!pt_usable(err_line, sizeof(err_line))) {
		elog("--backend pt: %s\n", err_line);
		return -ENODEV;
	}
	if (opts->kernel && !privs_kernel_perf(err_line, sizeof(err_line))) {
		elog("--kernel: %s\n", err_line);
		return -ENODEV;
	}
	if (opts->kernel && access("/proc/kcore", R_OK)) {
		elog("--kernel: /proc/kcore: %s (kernel decoding needs a kernel with "
		     "CONFIG_PROC_KCORE=y, read as root; see ptbpf doctor)\n", strerror(errno));
		return -ENODEV;
	}
	b = calloc(1, sizeof(*b));
	if (!b)
		return -ENOMEM;
	b->opts = opts;
	b->target = t;
	b->epfd = -1;
	b->page = sysconf(_SC_PAGESIZE);
	b->data_size = DATA_PAGES * b->page;
	b->aux_size = opts->buffer_size ? opts->buffer_size : 4u << 20;
	if (b->aux_size < b->page || (b->aux_size & (b->aux_size - 1))) {
		elog("--buffer-size %zu: a power of two of at least %zu bytes\n", b->aux_size,
		     b->page);
		err = -EINVAL;
		goto cleanup;
	}
	/*
	 * The reference that tells a kept ring's new bytes from old ones: as perf's
	 * intel_pt_snapshot_ref_buf_size(), at most 256 KiB, and less than half the ring
	 * (a quarter here, so that a small ring still has one).
	 */
	b->ref_len = b->aux_size / 4 < REF_MAX ? b->aux_size / 4 : REF_MAX;

	err = pt_pmu__new(pt_sysfs_root(), &b->pmu);
	if (err)
		goto cleanup;
	pt_request_from_opts(opts, &req);
	err = pt_pmu__config(b->pmu, &req, b->config, err_line, sizeof(err_line));
	if (err) {
		elog("%s\n", err_line);
		goto cleanup;
	}
	err = resolve_filters(opts, &b->ranges);
	if (err)
		goto cleanup;
	b->nr_ranges = opts->nr_filters;
	if (b->nr_ranges && (opts->system_wide || !t || t->pid <= 0)) {
		elog("--filter with --backend pt needs a target process (a command or -p PID): "
		     "the PT events are CPU-wide, where the kernel takes no file-based filter "
		     "(perf_event_parse_addr_filter), so the range is set at the function's address "
		     "in the target\n");
		err = -EINVAL;
		goto cleanup;
	}
	pt_attr_pt(&b->attr, pt_pmu__type(b->pmu), b->config, opts->kernel);
	/* wake the loader when the sideband ring is half full, not at every record */
	b->attr.watermark = 1;
	b->attr.wakeup_watermark = b->data_size / 2;

	n = online_cpus(cpus, MAX_CPUS);
	if (n <= 0) {
		err = n ? n : -ENOENT;
		elog("--backend pt: cannot read /sys/devices/system/cpu/online: %s\n",
		     strerror(-err));
		goto cleanup;
	}
	err = probe_filter(b, cpus[0]);
	if (err)
		goto cleanup;
	b->cpus = calloc(n, sizeof(*b->cpus));
	b->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (!b->cpus || b->epfd < 0) {
		err = b->cpus ? -errno : -ENOMEM;
		goto cleanup;
	}
	b->nr_cpus = n;
	for (i = 0; i < n; i++) {
		b->cpus[i].cpu = cpus[i];
		b->cpus[i].fd = -1;
		b->cpus[i].hist = record_fifo__new(HISTORY_BYTES);
		if (!b->cpus[i].hist) {
			err = -ENOMEM;
			goto cleanup;
		}
	}
	err = open_all(b);
	if (err)
		goto cleanup;
	/* a running target has its binaries mapped; a command ptbpf starts, after exec */
	b->filter_pending = b->nr_ranges > 0;
	if (b->filter_pending && !t->spawned) {
		err = apply_filter(b);
		if (err)
			goto cleanup;
	}
	b->aux_pause = probe_aux_pause(b->cpus[0].fd, b->cpus[0].cpu);
	/* tests/hw/run.sh runs both freeze paths on a kernel that has aux_pause */
	if (b->aux_pause && !strcmp(getenv("PTBPF_PT_FREEZE") ?: "", "ioctl")) {
		vlog("pt: PTBPF_PT_FREEZE=ioctl: freezing from user space\n");
		b->aux_pause = false;
	}
	describe(b);
	vlog("%s\n", b->desc);
	*out = b;
	return 0;

cleanup:
	pt_close(b);
	return err;
}

static enum trigger_attach_mode pt_trigger_mode(struct backend *b)
{
	char why[256];

	if (!b || !b->aux_pause || !b->opts->nr_triggers)
		return TRIGGER_ATTACH_LINKS;
	if (triggers__gate_mode_check(b->opts, why, sizeof(why))) {
		elog("pt: the loader will freeze PT, not the kernel at the trigger: %s\n", why);
		return TRIGGER_ATTACH_LINKS;
	}
	return TRIGGER_ATTACH_GATE;
}

static int pt_attach_gates(struct backend *b, struct triggers *t)
{
	struct perf_event_attr a;
	struct trigger_gate g;
	int i, n, err;

	if (!b || !t)
		return -EINVAL;
	n = triggers__nr_gates(t);
	if (n <= 0)
		return n;
	b->gate_tp = calloc(n, sizeof(*b->gate_tp));
	b->anchor_fds = malloc(n * sizeof(*b->anchor_fds));
	if (!b->gate_tp || !b->anchor_fds)
		return -ENOMEM;
	b->nr_gates = n;
	for (i = 0; i < n; i++)
		b->anchor_fds[i] = -1;
	for (i = 0; i < b->nr_cpus; i++) {
		int j;

		b->cpus[i].gate_fds = malloc(n * sizeof(int));
		b->cpus[i].gate_counts = calloc(n, sizeof(uint64_t));
		if (!b->cpus[i].gate_fds || !b->cpus[i].gate_counts)
			return -ENOMEM;
		for (j = 0; j < n; j++)
			b->cpus[i].gate_fds[j] = -1;
	}
	for (i = 0; i < n; i++) {
		err = triggers__gate(t, i, &g);
		if (err)
			return err;
		b->gate_tp[i] = g.tp_id;
		/*
		 * The program belongs to the tracepoint, not to one perf event (§3.5): attach
		 * it once, through an event outside the PT groups, so that the groups can be
		 * closed and reopened at each resume without detaching it.
		 */
		pt_attr_trigger(&a, g.tp_id);
		pt_attr_set_aux_action(&a, 0);
		b->anchor_fds[i] = perf_event_open(&a, -1, b->cpus[0].cpu, -1);
		if (b->anchor_fds[i] < 0) {
			err = -errno;
			elog("--backend pt: cannot open %s as a perf event: %s\n", g.name,
			     strerror(-err));
			return err;
		}
		err = triggers__attach_gate(t, i, b->anchor_fds[i]);
		if (err)
			return err;
		/*
		 * The link owns the anchor now: libbpf's bpf_link_perf_detach() closes the
		 * perf fd it was given, so closing it here too would close whatever file got
		 * its number in between.
		 */
		b->anchor_fds[i] = -1;
	}
	for (i = 0; i < b->nr_cpus; i++) {
		err = cpu_open_gates(b, &b->cpus[i]);
		if (err)
			return err;
	}
	/*
	 * With the in-kernel freeze a --kernel trace runs through these programs' JIT code
	 * up to the pause (the gate's, then perf_tp_event()), and the entry programs run in
	 * the middle of it: their images go with each kcore copy.
	 */
	if (b->opts->kernel) {
		n = triggers__prog_fds(t, NULL, 0);
		b->prog_fds = n > 0 ? calloc(n, sizeof(int)) : NULL;
		if (n > 0 && !b->prog_fds)
			return -ENOMEM;
		b->nr_prog_fds = n > 0 ? triggers__prog_fds(t, b->prog_fds, n) : 0;
	}
	b->gated = true;
	describe(b);
	vlog("%s\n", b->desc);
	return 0;
}

static int pt_start(struct backend *b)
{
	int i, err;

	if (!b)
		return -EINVAL;
	for (i = 0; i < b->nr_cpus; i++) {
		if (pt_sys_ioctl(b->cpus[i].fd, PERF_EVENT_IOC_ENABLE, 0)) {
			err = -errno;
			elog("--backend pt: cannot enable intel_pt on CPU %d: %s\n",
			     b->cpus[i].cpu, strerror(-err));
			return err;
		}
	}
	b->enabled = true;
	return 0;
}

static int drain_cpu(struct backend *b, struct pt_cpu *c)
{
	int n;

	if (!c->pc)
		return 0;
	n = data_ring_drain(c->pc, (uint8_t *)c->pc + b->page, b->data_size,
			    record_fifo__push_cb, c->hist);
	if (n == -EINVAL)
		elog("pt: the sideband ring of CPU %d held a malformed record; skipped\n", c->cpu);
	return n < 0 ? n : 0;
}

static int add_hook_fds(struct backend *b, const struct run_hooks *hooks)
{
	struct epoll_event ev = { .events = EPOLLIN };
	int i;

	if (b->hooks_added)
		return 0;
	for (i = 0; hooks && i < hooks->nr_fds; i++) {
		ev.data.u64 = (uint64_t)TAG_HOOK << 32 | (uint32_t)hooks->fds[i];
		if (epoll_ctl(b->epfd, EPOLL_CTL_ADD, hooks->fds[i], &ev) && errno != EEXIST)
			return -errno;
	}
	if (b->target && b->target->pidfd >= 0) {
		ev.data.u64 = (uint64_t)TAG_TARGET << 32;
		/* EEXIST: the hooks watch it already; check() gets it below */
		if (epoll_ctl(b->epfd, EPOLL_CTL_ADD, b->target->pidfd, &ev) && errno != EEXIST)
			return -errno;
	}
	b->hooks_added = true;
	return 0;
}

static bool target_gone(const struct backend *b)
{
	return b->target && b->target->pid > 0 && kill(b->target->pid, 0) && errno == ESRCH;
}

static int pt_run(struct backend *b, const struct run_hooks *hooks)
{
	struct epoll_event evs[16];
	bool has_pidfd;
	int i, n, ret, err;

	if (!b || !hooks)
		return -EINVAL;
	err = add_hook_fds(b, hooks);
	if (err)
		return err;
	if (b->filter_pending) {
		err = apply_filter(b);
		if (err == -ESRCH)
			return RUN_TARGET_EXITED;
		if (err)
			return err;
	}
	has_pidfd = b->target && b->target->pidfd >= 0;
	for (;;) {
		n = epoll_wait(b->epfd, evs, 16, has_pidfd ? -1 : 200);
		if (n < 0 && errno != EINTR)
			return -errno;
		if (n <= 0) {
			/* a signal, or the poll for a target without a pidfd */
			ret = hooks->check ? hooks->check(hooks->ctx) : 0;
			if (ret)
				return ret > 0 ? RUN_STOPPED : ret;
			if (!has_pidfd && target_gone(b))
				return RUN_TARGET_EXITED;
			continue;
		}
		for (i = 0; i < n; i++) {
			uint32_t tag = evs[i].data.u64 >> 32, idx = (uint32_t)evs[i].data.u64;

			switch (tag) {
			case TAG_CPU:
				err = drain_cpu(b, &b->cpus[idx]);
				if (err && err != -EINVAL)
					return err;
				break;
			case TAG_HOOK:
				ret = hooks->check ? hooks->check(hooks->ctx) : 0;
				if (ret)
					return ret > 0 ? RUN_STOPPED : ret;
				/* the target's pidfd among the hooks, and check() let it pass */
				if (b->target && (int)idx == b->target->pidfd)
					return RUN_TARGET_EXITED;
				break;
			case TAG_TARGET:
				return RUN_TARGET_EXITED;
			}
		}
	}
}

static int pt_freeze(struct backend *b)
{
	int i, err = 0;

	if (!b)
		return -EINVAL;
	/*
	 * Disabling the leader stops PT with an update: aux_head is published and an AUX
	 * record goes to the data ring. The CPU a gate paused has written nothing since.
	 */
	for (i = 0; i < b->nr_cpus; i++) {
		if (b->cpus[i].fd >= 0 && pt_sys_ioctl(b->cpus[i].fd, PERF_EVENT_IOC_DISABLE, 0) &&
		    !err)
			err = -errno;
	}
	b->enabled = false;
	for (i = 0; i < b->nr_cpus; i++)
		drain_cpu(b, &b->cpus[i]);
	if (err)
		elog("--backend pt: cannot disable intel_pt: %s\n", strerror(-err));
	return err;
}

/* Sideband of every CPU, merged in time order for the capture. */
struct sb_item {
	uint64_t time;
	uint32_t seq;
	const struct perf_event_header *raw;
};

struct sb_list {
	struct sb_item *items;
	size_t n, cap;
};

static int collect(void *ctx, const struct perf_event_header *h)
{
	struct sb_list *l = ctx;
	struct pd_record r;

	if (pd_record_parse(h, h->size, PT_SAMPLE_TYPE, true, &r))
		return 0;	/* samples and types ptbpf does not keep */
	if (array_grow_sz((void **)&l->items, &l->cap, l->n + 1, sizeof(*l->items)))
		return -ENOMEM;
	l->items[l->n] = (struct sb_item){ .time = r.sample.time, .seq = l->n, .raw = h };
	l->n++;
	return 0;
}

static int by_time(const void *a, const void *b)
{
	const struct sb_item *x = a, *y = b;

	if (x->time != y->time)
		return x->time < y->time ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static int add_sideband(struct backend *b, struct capture *cap)
{
	struct sb_list l = {};
	struct pd_record r;
	size_t i;
	int c, err = 0;

	for (c = 0; c < b->nr_cpus && !err; c++) {
		uint64_t dropped = record_fifo__dropped(b->cpus[c].hist);
		int n = record_fifo__for_each(b->cpus[c].hist, collect, &l);

		if (n < 0)
			err = n;
		if (dropped)
			vlog("pt: CPU %d: %llu old sideband records dropped from the history\n",
			     b->cpus[c].cpu, (unsigned long long)dropped);
	}
	if (!err)
		qsort(l.items, l.n, sizeof(*l.items), by_time);
	for (i = 0; i < l.n && !err; i++) {
		pd_record_parse(l.items[i].raw, l.items[i].raw->size, PT_SAMPLE_TYPE, true, &r);
		if (r.type == PERF_RECORD_LOST)
			b->lost += r.lost.lost;
		err = capture__add_record(cap, &r);
	}
	free(l.items);
	if (b->lost)
		elog("pt: the kernel lost %llu sideband records (rings full); threads or mappings "
		     "may be missing from the decode\n", (unsigned long long)b->lost);
	return err;
}

static int add_aux(struct backend *b, struct capture *cap)
{
	uint8_t *buf;
	int i, err = 0;

	buf = malloc(b->aux_size);
	if (!buf)
		return -ENOMEM;
	for (i = 0; i < b->nr_cpus && !err; i++) {
		struct pt_cpu *c = &b->cpus[i];
		struct pd_auxtrace a = {
			.idx = i,
			.tid = (uint32_t)-1,
			.cpu = c->cpu,
			/* perf stores a TSC value; it must not be 0 */
			.reference = __builtin_ia32_rdtsc() | 1,
		};
		bool wrapped;
		uint64_t head;

		if (c->kept) {
			head = __atomic_load_n(&c->pc->aux_head, __ATOMIC_ACQUIRE);
			a.size = aux_ring_copy_since(c->aux, b->aux_size, head, c->prev_head,
						     c->ref, b->ref_len, buf, &wrapped);
		} else {
			a.size = aux_ring_snapshot(c->pc, c->aux, false, buf, &wrapped, &head);
		}
		/* what the next snapshot of this ring, if it is kept, compares with */
		c->prev_head = head;
		if (!c->ref)
			c->ref = malloc(b->ref_len);
		if (c->ref)
			aux_ring_tail(c->aux, b->aux_size, head, b->ref_len, c->ref);
		a.offset = c->aux_stream;
		dlog("pt: CPU %d: head %llu, %s, %llu bytes\n", c->cpu, (unsigned long long)head,
		     wrapped ? "wrapped" : "not wrapped", (unsigned long long)a.size);
		if (!a.size)
			continue;
		err = capture__add_aux(cap, &a, buf);
		c->aux_stream += a.size;
	}
	free(buf);
	return err;
}

/*
 * --kernel: the kernel text as it is now, copied into a directory of its own
 * ($TMPDIR/ptbpf-kcore-PID-N) named by cap->kcore_dir. Whoever writes the capture puts
 * it beside the perf.data as perf's kcore_dir/ (or removes it).
 */
static int add_kcore(struct backend *b, struct capture *cap)
{
	const char *tmp = getenv("TMPDIR");
	char dir[PATH_MAX];
	int err;

	snprintf(dir, sizeof(dir), "%s/ptbpf-kcore-%d-%u", tmp && *tmp ? tmp : "/tmp", getpid(),
		 b->snapshots);
	err = kcore_copy(NULL, dir);
	if (err)
		return err;
	/* without them (said on one line) the kernel decode stops with an error at BPF code */
	kcore_add_bpf_jit(dir, b->prog_fds, b->nr_prog_fds);
	cap->kcore_dir = capture__strdup(cap, dir);
	return cap->kcore_dir ? 0 : -ENOMEM;
}

static int pt_snapshot(struct backend *b, struct capture *cap)
{
	struct pd_sample_id tmpl = {};
	struct pd_record tc;
	uint64_t *ids;
	uint8_t *vdso = NULL;
	size_t vdso_size = 0;
	pid_t focus;
	int i, err;

	if (!b || !cap)
		return -EINVAL;
	if (b->enabled) {
		err = pt_freeze(b);
		if (err)
			return err;
	}
	err = hostinfo_fill(cap);
	if (err)
		return err;
	ids = calloc(b->nr_cpus, sizeof(*ids));
	if (!ids)
		return -ENOMEM;
	for (i = 0; i < b->nr_cpus; i++)
		ids[i] = b->cpus[i].id;
	err = capture__add_attr(cap, &b->attr, ids, b->nr_cpus,
				b->opts->kernel ? "intel_pt//" : "intel_pt//u");
	free(ids);
	if (!err)
		err = capture__add_pmu(cap, pt_pmu__type(b->pmu), "intel_pt");
	if (err)
		return err;

	pt_pmu__fill_info(b->pmu, &cap->pt);
	if (!data_ring_time_conv(b->cpus[0].pc, &tc)) {
		cap->pt.time_shift = tc.time_conv.time_shift;
		cap->pt.time_mult = tc.time_conv.time_mult;
		cap->pt.time_zero = tc.time_conv.time_zero;
		cap->pt.cap_user_time_zero = 1;
		err = capture__add_record(cap, &tc);
		if (err)
			return err;
	} else {
		elog("pt: this kernel gives no TSC conversion (cap_user_time_zero): the trace "
		     "will have no time\n");
	}
	if (b->filter) {
		cap->pt.filter = capture__strdup(cap, b->filter);
		if (!cap->pt.filter)
			return -ENOMEM;
	}

	/*
	 * what the target (system-wide: the process focus() named) had mapped before the
	 * rings were opened, at time 0
	 */
	focus = b->target && b->target->pid > 0 ? b->target->pid : b->focus_pid;
	if (focus > 0) {
		tmpl.cpu = b->cpus[0].cpu;
		tmpl.id = b->cpus[0].id;
		tmpl.valid = PT_SAMPLE_TYPE;
		err = proc_synth_process(cap, focus, &tmpl);
		if (err < 0 && err != -ESRCH)
			return err;
	}
	err = add_sideband(b, cap);
	if (err)
		return err;
	err = add_aux(b, cap);
	if (err)
		return err;
	if (!vdso_read(&vdso, &vdso_size)) {
		err = capture__set_vdso(cap, vdso, vdso_size);
		free(vdso);
		if (err)
			return err;
	}
	if (b->opts->kernel) {
		err = add_kcore(b, cap);
		if (err)
			return err;
	}
	for (i = 0; i < b->nr_cpus; i++)
		record_fifo__clear(b->cpus[i].hist);
	b->snapshots++;
	return 0;
}

/*
 * Whether a gate paused this CPU's PT since its counts were last read: a member counts
 * only the hits its program let through (see the top of this file). A count that cannot
 * be read is taken as a pause: reopening is always safe.
 */
static bool gate_fired(struct backend *b, struct pt_cpu *c)
{
	bool fired = false;
	uint64_t count;
	int i;

	for (i = 0; i < b->nr_gates; i++) {
		if (c->gate_fds[i] < 0 ||
		    pt_sys_read(c->gate_fds[i], &count, sizeof(count)) != sizeof(count)) {
			fired = true;
			continue;
		}
		if (count != c->gate_counts[i])
			fired = true;
		c->gate_counts[i] = count;
	}
	return fired;
}

static int pt_resume(struct backend *b)
{
	int i, err;

	if (!b)
		return -EINVAL;
	for (i = 0; i < b->nr_cpus; i++) {
		struct pt_cpu *c = &b->cpus[i];

		if (c->fd >= 0 && c->ref && !(b->gated && gate_fired(b, c))) {
			c->kept = true;	/* re-enabled below, from its head */
			continue;
		}
		/* paused by a gate (or never copied): a fresh group, its ring zeroed */
		cpu_close(b, c);
		err = cpu_open(b, c, i);
		if (!err && b->gated)
			err = cpu_open_gates(b, c);
		if (err)
			return err;
	}
	return pt_start(b);
}

/* TSC -> perf time through the user page's conversion (notes/kernel-pt-abi.md §4.3). */
static uint64_t tsc_to_perf(const struct pd_record *tc, uint64_t cyc)
{
	const typeof(tc->time_conv) *c = &tc->time_conv;
	uint64_t quot, rem;

	if (c->cap_user_time_short)
		cyc = c->time_cycles + ((cyc - c->time_cycles) & c->time_mask);
	quot = cyc >> c->time_shift;
	rem = cyc & ((1ull << c->time_shift) - 1);
	return c->time_zero + quot * c->time_mult + ((rem * c->time_mult) >> c->time_shift);
}

/*
 * The fire's time on the trace's axis. The BPF record holds bpf_ktime_get_ns()
 * (CLOCK_MONOTONIC) and the trace runs on the perf clock (TSC through the user page):
 * the two are read side by side now, and the fire placed the same distance back. Both
 * advance at the TSC's rate, up to NTP's slew of CLOCK_MONOTONIC (at most 500 ppm of the
 * few milliseconds between fire and snapshot). Without this the decoder could only put
 * the trigger at the last sideband record, after the loader's wake-up.
 */
static int pt_locate(struct backend *b, uint32_t tid, uint64_t ktime, uint32_t *cpu,
		     uint64_t *time)
{
	struct pd_record tc;
	struct timespec ts;
	uint64_t t0, t1, mono;

	if (!b || !b->nr_cpus || !b->cpus[0].pc || !ktime || !time)
		return -ENOENT;
	if (data_ring_time_conv(b->cpus[0].pc, &tc) || tc.time_conv.time_shift >= 64)
		return -ENOENT;
	t0 = __builtin_ia32_rdtsc();
	clock_gettime(CLOCK_MONOTONIC, &ts);
	t1 = __builtin_ia32_rdtsc();
	mono = (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
	*time = tsc_to_perf(&tc, t0 + (t1 - t0) / 2) - (mono - ktime);
	return 0;
}

static int pt_sideband_fd(struct backend *b)
{
	return b ? b->epfd : -EINVAL;
}

/* The sideband of every CPU whose ring has some, into its history (what run() does). */
static int pt_drain(struct backend *b)
{
	int i, err;

	if (!b)
		return -EINVAL;
	for (i = 0; i < b->nr_cpus; i++) {
		err = drain_cpu(b, &b->cpus[i]);
		if (err && err != -EINVAL)
			return err;
	}
	return 0;
}

static int pt_focus(struct backend *b, pid_t pid)
{
	if (!b || pid < 0)
		return -EINVAL;
	b->focus_pid = pid;
	return 0;
}

static const char *pt_describe(struct backend *b)
{
	return b ? b->desc : "pt";
}

const struct backend_ops pt_backend_ops = {
	.name = "pt",
	.poll_every = 1,	/* check() runs when an fd is readable */
	.usable = pt_usable,
	.open = pt_open,
	.trigger_mode = pt_trigger_mode,
	.attach_gates = pt_attach_gates,
	.start = pt_start,
	.run = pt_run,
	.freeze = pt_freeze,
	.snapshot = pt_snapshot,
	.resume = pt_resume,
	.describe = pt_describe,
	.close = pt_close,
	.locate = pt_locate,
	.sideband_fd = pt_sideband_fd,
	.drain = pt_drain,
	.focus = pt_focus,
};
