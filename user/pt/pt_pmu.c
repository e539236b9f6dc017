// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <ctype.h>
#include <stdarg.h>
#include <dirent.h>
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/perf_event.h>

#include "privs.h"
#include "pt_pmu.h"

#define MAX_ENTRIES 64
#define NAME_LEN 48
/* sysfs paths are short; fixed sizes keep -Wformat-truncation quiet */
#define DIR_LEN 512
#define SUBDIR_LEN (DIR_LEN + 16)
#define FILE_LEN (SUBDIR_LEN + NAME_LEN + 256)

struct pt_cap {
	char name[NAME_LEN];
	uint32_t value;
};

struct pt_fmt {
	char name[NAME_LEN];
	struct pt_format_field f;
};

struct pt_pmu {
	char dir[DIR_LEN];
	uint32_t type;
	struct pt_cap caps[MAX_ENTRIES];
	int nr_caps;
	struct pt_fmt fmts[MAX_ENTRIES];
	int nr_fmts;
	bool have_nonturbo, have_tsc_art;
	uint32_t max_nonturbo_ratio;
	uint32_t tsc_art_num, tsc_art_den;
};

const char *pt_sysfs_root(void)
{
	const char *root = getenv("PTBPF_SYSFS_ROOT");

	return root && *root ? root : "/sys";
}

/* One line of a sysfs file, without its newline. */
static int read_line(const char *dir, const char *name, char *buf, size_t size)
{
	char path[FILE_LEN];
	FILE *f;
	int err = 0;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	if (!fgets(buf, size, f))
		err = ferror(f) ? -EIO : -EINVAL;
	fclose(f);
	buf[strcspn(buf, "\n")] = '\0';
	return err;
}

static int parse_u32(const char *s, int base, uint32_t *out)
{
	unsigned long v;
	char *end;

	if (!isxdigit((unsigned char)*s))
		return -EINVAL;
	errno = 0;
	v = strtoul(s, &end, base);
	if (errno || *end || v > UINT32_MAX)
		return -EINVAL;
	*out = v;
	return 0;
}

int pt_format_parse(const char *text, struct pt_format_field *f)
{
	const char *p;
	uint64_t mask = 0;
	int word;

	if (!text || !f)
		return -EINVAL;
	if (!strncmp(text, "config:", 7)) {
		word = 0;
		p = text + 7;
	} else if (!strncmp(text, "config1:", 8) || !strncmp(text, "config2:", 8)) {
		word = text[6] - '0';
		p = text + 8;
	} else {
		return -EINVAL;
	}
	/* "A", "A-B", and comma-separated lists of those */
	for (;;) {
		unsigned long lo, hi;
		char *end;

		if (!isdigit((unsigned char)*p))
			return -EINVAL;
		lo = strtoul(p, &end, 10);
		hi = lo;
		if (*end == '-') {
			if (!isdigit((unsigned char)end[1]))
				return -EINVAL;
			hi = strtoul(end + 1, &end, 10);
		}
		if (lo > hi || hi > 63)
			return -EINVAL;
		for (; lo <= hi; lo++)
			mask |= 1ull << lo;
		p = end;
		if (*p != ',')
			break;
		p++;
	}
	if (*p && *p != '\n')
		return -EINVAL;
	f->word = word;
	f->mask = mask;
	return 0;
}

int pt_format_set(const struct pt_format_field *f, uint64_t value, uint64_t config[3])
{
	uint64_t bits = 0;
	int i;

	if (!f || !config || f->word < 0 || f->word > 2 || !f->mask)
		return -EINVAL;
	for (i = 0; i < 64 && value; i++) {
		if (!(f->mask & (1ull << i)))
			continue;
		if (value & 1)
			bits |= 1ull << i;
		value >>= 1;
	}
	if (value)
		return -ERANGE;
	config[f->word] = (config[f->word] & ~f->mask) | bits;
	return 0;
}

uint64_t pt_format_get(const struct pt_format_field *f, const uint64_t config[3])
{
	uint64_t v = 0, bit = 1;
	int i;

	if (!f || !config || f->word < 0 || f->word > 2)
		return 0;
	for (i = 0; i < 64; i++) {
		if (!(f->mask & (1ull << i)))
			continue;
		if (config[f->word] & (1ull << i))
			v |= bit;
		bit <<= 1;
	}
	return v;
}

/* Each file of caps/ or format/; directories that are missing are empty. */
static int read_dir(struct pt_pmu *pmu, const char *sub, bool caps)
{
	char dir[SUBDIR_LEN], line[128];
	struct dirent *de;
	DIR *d;
	int err = 0;

	snprintf(dir, sizeof(dir), "%s/%s", pmu->dir, sub);
	d = opendir(dir);
	if (!d)
		return errno == ENOENT ? 0 : -errno;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.' || strlen(de->d_name) >= NAME_LEN)
			continue;
		if (caps ? pmu->nr_caps >= MAX_ENTRIES : pmu->nr_fmts >= MAX_ENTRIES)
			break;
		err = read_line(dir, de->d_name, line, sizeof(line));
		if (err)
			break;
		if (caps) {
			struct pt_cap *c = &pmu->caps[pmu->nr_caps];

			err = parse_u32(line, 16, &c->value);
			if (err)
				break;
			strcpy(c->name, de->d_name);
			pmu->nr_caps++;
		} else {
			struct pt_fmt *f = &pmu->fmts[pmu->nr_fmts];

			err = pt_format_parse(line, &f->f);
			if (err)
				break;
			strcpy(f->name, de->d_name);
			pmu->nr_fmts++;
		}
	}
	closedir(d);
	return err;
}

int pt_pmu__new(const char *sysfs_root, struct pt_pmu **out)
{
	struct pt_pmu *pmu;
	char line[128], *colon;
	int err;

	if (!out)
		return -EINVAL;
	*out = NULL;
	if (!sysfs_root)
		sysfs_root = pt_sysfs_root();
	pmu = calloc(1, sizeof(*pmu));
	if (!pmu)
		return -ENOMEM;
	if (snprintf(pmu->dir, sizeof(pmu->dir), "%s/" PT_PMU_SUBDIR, sysfs_root) >=
	    (int)sizeof(pmu->dir)) {
		err = -ENAMETOOLONG;
		goto cleanup;
	}
	err = read_line(pmu->dir, "type", line, sizeof(line));
	if (err)
		goto cleanup;
	err = parse_u32(line, 10, &pmu->type);
	if (err)
		goto cleanup;
	err = read_dir(pmu, "caps", true);
	if (err)
		goto cleanup;
	err = read_dir(pmu, "format", false);
	if (err)
		goto cleanup;
	if (!read_line(pmu->dir, "max_nonturbo_ratio", line, sizeof(line)) &&
	    !parse_u32(line, 10, &pmu->max_nonturbo_ratio))
		pmu->have_nonturbo = true;
	if (!read_line(pmu->dir, "tsc_art_ratio", line, sizeof(line)) &&
	    (colon = strchr(line, ':'))) {
		*colon = '\0';
		if (!parse_u32(line, 10, &pmu->tsc_art_num) &&
		    !parse_u32(colon + 1, 10, &pmu->tsc_art_den))
			pmu->have_tsc_art = true;
	}
	*out = pmu;
	return 0;

cleanup:
	free(pmu);
	return err;
}

void pt_pmu__free(struct pt_pmu *pmu)
{
	free(pmu);
}

const char *pt_pmu__dir(const struct pt_pmu *pmu)
{
	return pmu ? pmu->dir : NULL;
}

uint32_t pt_pmu__type(const struct pt_pmu *pmu)
{
	return pmu ? pmu->type : 0;
}

int pt_pmu__cap(const struct pt_pmu *pmu, const char *name, uint32_t *val)
{
	int i;

	if (!pmu || !name || !val)
		return -EINVAL;
	for (i = 0; i < pmu->nr_caps; i++) {
		if (!strcmp(pmu->caps[i].name, name)) {
			*val = pmu->caps[i].value;
			return 0;
		}
	}
	return -ENOENT;
}

int pt_pmu__format(const struct pt_pmu *pmu, const char *name, struct pt_format_field *f)
{
	int i;

	if (!pmu || !name || !f)
		return -EINVAL;
	for (i = 0; i < pmu->nr_fmts; i++) {
		if (!strcmp(pmu->fmts[i].name, name)) {
			*f = pmu->fmts[i].f;
			return 0;
		}
	}
	return -ENOENT;
}

int pt_pmu__max_nonturbo_ratio(const struct pt_pmu *pmu, uint32_t *ratio)
{
	if (!pmu || !ratio)
		return -EINVAL;
	if (!pmu->have_nonturbo)
		return -ENOENT;
	*ratio = pmu->max_nonturbo_ratio;
	return 0;
}

int pt_pmu__tsc_art_ratio(const struct pt_pmu *pmu, uint32_t *num, uint32_t *den)
{
	if (!pmu || !num || !den)
		return -EINVAL;
	if (!pmu->have_tsc_art)
		return -ENOENT;
	*num = pmu->tsc_art_num;
	*den = pmu->tsc_art_den;
	return 0;
}

/* Why the PMU is missing, from what the CPU says about itself. */
static void cpu_hint(char *buf, size_t size)
{
	char line[4096], model[128] = "", vendor[32] = "";
	bool pt = false, hv = false, flags_seen = false;
	FILE *f;

	buf[0] = '\0';
	f = fopen("/proc/cpuinfo", "re");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		if (!vendor[0] && sscanf(line, "vendor_id : %31s", vendor) == 1)
			continue;
		if (!model[0] && !strncmp(line, "model name", 10) && strchr(line, ':')) {
			snprintf(model, sizeof(model), "%s", strchr(line, ':') + 2);
			model[strcspn(model, "\n")] = '\0';
			continue;
		}
		if (!flags_seen && !strncmp(line, "flags", 5)) {
			flags_seen = true;
			pt = strstr(line, " intel_pt") != NULL;
			hv = strstr(line, " hypervisor") != NULL;
		}
	}
	fclose(f);
	if (!flags_seen)
		return;
	if (pt)
		snprintf(buf, size, "; the CPU (%s) has the intel_pt flag, so the kernel did not "
			 "register the PMU", model);
	else
		snprintf(buf, size, "; the CPU (%s%s%s) has no intel_pt flag%s", vendor,
			 model[0] ? ", " : "", model, hv ? ", and this is a virtual machine" : "");
}

__attribute__((weak)) int pt_sys_perf_event_open(struct perf_event_attr *attr, int pid, int cpu,
						  int group_fd)
{
	return syscall(SYS_perf_event_open, attr, pid, cpu, group_fd, PERF_FLAG_FD_CLOEXEC);
}

__attribute__((weak)) int pt_sys_ioctl(int fd, unsigned long request, unsigned long arg)
{
	return ioctl(fd, request, arg);
}

__attribute__((weak)) void *pt_sys_mmap(size_t len, int prot, int fd, long offset)
{
	return mmap(NULL, len, prot, MAP_SHARED, fd, offset);
}

__attribute__((weak)) ssize_t pt_sys_read(int fd, void *buf, size_t len)
{
	return read(fd, buf, len);
}

int pt_open_probe_event(uint32_t type, int cpu)
{
	struct perf_event_attr attr = {
		.size = sizeof(attr),
		.type = type,
		.disabled = 1,
		.exclude_kernel = 1,
		.exclude_hv = 1,
	};
	int fd;

	fd = pt_sys_perf_event_open(&attr, -1, cpu, -1);
	return fd < 0 ? -errno : fd;
}

int pt_probe_aux_pause(int leader_fd, int cpu)
{
	struct perf_event_attr a = {
		.size = sizeof(a),
		.type = PERF_TYPE_SOFTWARE,
		.config = PERF_COUNT_SW_DUMMY,
		.sample_period = 1,
	};
	int fd;

	if (leader_fd < 0)
		return -EINVAL;
	pt_attr_set_aux_action(&a, PT_AUX_PAUSE);
	fd = pt_sys_perf_event_open(&a, -1, cpu, leader_fd);
	if (fd < 0)
		return -errno;
	close(fd);
	return 0;
}

int pt_probe_address_filter(int probe_fd)
{
	char filter[64];

	/* a user-space address (this function's), as --filter gives them */
	snprintf(filter, sizeof(filter), "filter 0x%lx/0x10",
		 (unsigned long)(uintptr_t)pt_probe_address_filter);
	return pt_sys_ioctl(probe_fd, PERF_EVENT_IOC_SET_FILTER, (unsigned long)filter) ? -errno : 0;
}

/*
 * Open (disabled) and close one PT event on this CPU, to catch what sysfs cannot show:
 * another PT user (the PMU is exclusive), a PMU the hypervisor does not back.
 */
static int try_open(uint32_t type, char *why, size_t size)
{
	int cpu = sched_getcpu(), fd, err;

	if (cpu < 0)
		cpu = 0;
	fd = pt_open_probe_event(type, cpu);
	if (fd >= 0) {
		close(fd);
		return 0;
	}
	err = fd;
	if (why && size)
		snprintf(why, size, "opening an intel_pt event (type %u) on CPU %d failed: %s%s",
			 type, cpu, strerror(-err), err == -EBUSY ? "; fix: stop the other Intel "
			 "PT user (perf record -e intel_pt//, another ptbpf)" : err == -EACCES ||
			 err == -EPERM ? "; fix: run as root or grant CAP_PERFMON" : "");
	return err;
}

bool pt_pmu_usable(const char *sysfs_root, char *why, size_t size)
{
	struct pt_pmu *pmu = NULL;
	char hint[256];
	uint32_t type;
	int err;

	if (!sysfs_root)
		sysfs_root = pt_sysfs_root();
	err = pt_pmu__new(sysfs_root, &pmu);
	if (err == -ENOENT) {
		if (why && size) {
			cpu_hint(hint, sizeof(hint));
			snprintf(why, size, "no Intel PT PMU: %s/" PT_PMU_SUBDIR " does not "
				 "exist%s; fix: run on bare metal with an Intel CPU that has Intel "
				 "PT (Broadwell or newer), or use --backend singlestep", sysfs_root,
				 hint);
		}
		return false;
	}
	if (err) {
		if (why && size)
			snprintf(why, size, "cannot read the Intel PT PMU at %s/" PT_PMU_SUBDIR
				 ": %s", sysfs_root, strerror(-err));
		return false;
	}
	type = pmu->type;
	pt_pmu__free(pmu);
	if (!privs_cpu_wide_perf(why, size))
		return false;
	/* a fake tree's type means nothing to this kernel */
	if (strcmp(sysfs_root, "/sys"))
		return true;
	return try_open(type, why, size) == 0;
}

/* ---- configuration ---- */

void pt_request_from_opts(const struct capture_opts *opts, struct pt_request *req)
{
	*req = (struct pt_request){
		.timing = opts->timing,
		.timing_given = opts->timing_given,
		.psb_period = opts->psb_period,
		.noretcomp = opts->noretcomp,
		.kernel = opts->kernel,
		.nr_filters = opts->nr_filters,
	};
}

int pt_pick_value(uint32_t bitmap, int target)
{
	int pos, pick = -1;

	for (pos = 0; pos < 32; pos++) {
		if (!(bitmap & (1u << pos)))
			continue;
		if (pos <= target || pick < 0)
			pick = pos;
		if (pos >= target)
			break;
	}
	return pick;
}

const char *pt_allowed_str(uint32_t bitmap, bool always0, char *buf, size_t size)
{
	size_t len = 0;
	int v = 0;

	if (!buf || !size)
		return NULL;
	if (always0)
		bitmap |= 1;
	buf[0] = '\0';
	while (v < 32) {
		int end = v;

		if (!(bitmap & (1u << v))) {
			v++;
			continue;
		}
		while (end + 1 < 32 && (bitmap & (1u << (end + 1))))
			end++;
		if (len < size)
			len += snprintf(buf + len, size - len, "%s%d", len ? "," : "", v);
		/* runs of three or more as a range, two as a pair */
		if (end > v + 1 && len < size)
			len += snprintf(buf + len, size - len, "-%d", end);
		else if (end == v + 1 && len < size)
			len += snprintf(buf + len, size - len, ",%d", end);
		v = end + 1;
	}
	if (!buf[0])
		snprintf(buf, size, "none");
	return buf;
}

/* Error reporting of pt_pmu__config(): one line, the return value. */
static int cfg_error(int err, char *buf, size_t size, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static int cfg_error(int err, char *buf, size_t size, const char *fmt, ...)
{
	va_list ap;

	if (buf && size) {
		va_start(ap, fmt);
		vsnprintf(buf, size, fmt, ap);
		va_end(ap);
	}
	return err;
}

/* A caps/ value that must exist. */
static int need_cap(const struct pt_pmu *pmu, const char *name, const char *why, uint32_t *v,
		    char *err, size_t size)
{
	if (!pt_pmu__cap(pmu, name, v))
		return 0;
	return cfg_error(-ENOENT, err, size, "%s: %s/caps/%s is missing: cannot check what this "
			 "CPU allows", why, pmu->dir, name);
}

/* Set format field `name` to `value`; the field must exist. */
static int set_field(const struct pt_pmu *pmu, const char *name, uint64_t value,
		     uint64_t config[3], const char *why, char *err, size_t size)
{
	struct pt_format_field f;

	if (pt_pmu__format(pmu, name, &f))
		return cfg_error(-ENOENT, err, size, "%s: %s/format/%s is missing: this kernel "
				 "cannot set it", why, pmu->dir, name);
	if (pt_format_set(&f, value, config))
		return cfg_error(-EINVAL, err, size, "%s: %llu does not fit in format/%s", why,
				 (unsigned long long)value, name);
	return 0;
}

static bool has_field(const struct pt_pmu *pmu, const char *name)
{
	struct pt_format_field f;

	return !pt_pmu__format(pmu, name, &f);
}

static int config_mtc(const struct pt_pmu *pmu, const struct pt_request *req, uint64_t config[3],
		      char *err, size_t size)
{
	/* explicit --timing mtc must work; by default (and under cyc) MTC is a bonus */
	bool must = req->timing == TIMING_MTC && req->timing_given;
	const char *why = "--timing mtc";
	uint32_t mtc, periods;
	int ret;

	ret = need_cap(pmu, "mtc", why, &mtc, err, size);
	if (ret)
		return must ? ret : 0;
	if (!mtc)
		return must ? cfg_error(-EOPNOTSUPP, err, size, "--timing mtc: this CPU has no MTC "
					"packets (caps/mtc=0); use --timing tsc") : 0;
	ret = need_cap(pmu, "mtc_periods", why, &periods, err, size);
	if (ret)
		return must ? ret : 0;
	if (!periods)
		return must ? cfg_error(-EOPNOTSUPP, err, size, "--timing mtc: this CPU allows no "
					"MTC period (caps/mtc_periods=0); use --timing tsc") : 0;
	if (!has_field(pmu, "mtc") || !has_field(pmu, "mtc_period")) {
		if (!must)
			return 0;
		return set_field(pmu, has_field(pmu, "mtc") ? "mtc_period" : "mtc", 1, config, why,
				 err, size);
	}
	ret = set_field(pmu, "mtc", 1, config, why, err, size);
	if (!ret)
		ret = set_field(pmu, "mtc_period", pt_pick_value(periods, 3), config, why, err,
				size);
	return ret;
}

static int config_psb(const struct pt_pmu *pmu, const struct pt_request *req, uint64_t config[3],
		      char *err, size_t size)
{
	const char *why = "--psb-period";
	uint32_t psb_cyc, periods;
	char allowed[128];
	int ret;

	if (req->psb_period < 0) {
		/* perf's default: PSB every 2^(3+11) = 16 KiB, or the nearest period allowed */
		if (pt_pmu__cap(pmu, "psb_cyc", &psb_cyc) || !psb_cyc ||
		    pt_pmu__cap(pmu, "psb_periods", &periods) || !periods ||
		    !has_field(pmu, "psb_period"))
			return 0;
		return set_field(pmu, "psb_period", pt_pick_value(periods, 3), config, why, err,
				 size);
	}
	ret = need_cap(pmu, "psb_cyc", why, &psb_cyc, err, size);
	if (ret)
		return ret;
	if (!psb_cyc)
		return cfg_error(-EOPNOTSUPP, err, size, "--psb-period %d: this CPU has a fixed "
				 "PSB period (caps/psb_cyc=0); leave --psb-period out",
				 req->psb_period);
	ret = need_cap(pmu, "psb_periods", why, &periods, err, size);
	if (ret)
		return ret;
	/* 0 is always accepted (pt_event_valid() checks non-zero values only) */
	if (req->psb_period > 31 ||
	    (req->psb_period && !(periods & (1u << req->psb_period))))
		return cfg_error(-EINVAL, err, size, "--psb-period %d is not allowed on this CPU: "
				 "caps/psb_periods=0x%x allows %s", req->psb_period, periods,
				 pt_allowed_str(periods, true, allowed, sizeof(allowed)));
	return set_field(pmu, "psb_period", req->psb_period, config, why, err, size);
}

int pt_pmu__config(const struct pt_pmu *pmu, const struct pt_request *req, uint64_t config[3],
		   char *err, size_t size)
{
	uint32_t v, ranges;
	int ret;

	if (!pmu || !req || !config)
		return cfg_error(-EINVAL, err, size, "pt_pmu__config: invalid argument");
	config[0] = config[1] = config[2] = 0;
	if (err && size)
		err[0] = '\0';

	/*
	 * pt=1 passes `branch` through instead of the driver forcing BranchEn on; kernels
	 * without format/pt always trace branches.
	 */
	if (has_field(pmu, "pt") && has_field(pmu, "branch")) {
		set_field(pmu, "pt", 1, config, "pt", err, size);
		set_field(pmu, "branch", 1, config, "branch", err, size);
	}
	ret = set_field(pmu, "tsc", 1, config, "TSC packets", err, size);
	if (ret)
		return ret;

	if (req->timing == TIMING_MTC || req->timing == TIMING_CYC) {
		ret = config_mtc(pmu, req, config, err, size);
		if (ret)
			return ret;
	}
	if (req->timing == TIMING_CYC) {
		ret = need_cap(pmu, "psb_cyc", "--timing cyc", &v, err, size);
		if (ret)
			return ret;
		if (!v) {
			uint32_t mtc = 0;

			pt_pmu__cap(pmu, "mtc", &mtc);
			return cfg_error(-EOPNOTSUPP, err, size, "--timing cyc: this CPU has no "
					 "cycle-accurate mode (caps/psb_cyc=0); use --timing %s",
					 mtc ? "mtc or tsc" : "tsc");
		}
		ret = set_field(pmu, "cyc", 1, config, "--timing cyc", err, size);
		if (ret)
			return ret;
	}
	ret = config_psb(pmu, req, config, err, size);
	if (ret)
		return ret;
	if (req->noretcomp) {
		ret = set_field(pmu, "noretcomp", 1, config, "--noretcomp", err, size);
		if (ret)
			return ret;
	}
	if (req->nr_filters > 0) {
		ret = need_cap(pmu, "ip_filtering", "--filter", &v, err, size);
		if (ret)
			return ret;
		if (!v)
			return cfg_error(-EOPNOTSUPP, err, size, "--filter: this CPU has no IP "
					 "filtering (caps/ip_filtering=0)");
		ret = need_cap(pmu, "num_address_ranges", "--filter", &ranges, err, size);
		if (ret)
			return ret;
		if ((uint32_t)req->nr_filters > ranges)
			return cfg_error(-EINVAL, err, size, "--filter given %d times, but this "
					 "CPU has %u address range%s (caps/num_address_ranges=%u)",
					 req->nr_filters, ranges, ranges == 1 ? "" : "s", ranges);
	}
	return 0;
}

void pt_attr_pt(struct perf_event_attr *attr, uint32_t type, const uint64_t config[3], bool kernel)
{
	memset(attr, 0, sizeof(*attr));
	attr->size = sizeof(*attr);
	attr->type = type;
	attr->config = config[0];
	attr->config1 = config[1];
	attr->config2 = config[2];
	attr->disabled = 1;
	attr->sample_period = 1;
	attr->sample_type = PT_SAMPLE_TYPE;
	attr->sample_id_all = 1;
	attr->exclude_kernel = !kernel;
	attr->exclude_hv = 1;
	attr->mmap = 1;
	attr->mmap2 = 1;
	attr->comm = 1;
	attr->comm_exec = 1;
	attr->task = 1;
	attr->context_switch = 1;
	/* code the kernel patches at run time, replayed by the decoder (§6) */
	attr->text_poke = kernel;
}

void pt_attr_trigger(struct perf_event_attr *attr, uint64_t tp_id)
{
	memset(attr, 0, sizeof(*attr));
	attr->size = sizeof(*attr);
	attr->type = PERF_TYPE_TRACEPOINT;
	attr->config = tp_id;
	attr->sample_period = 1;
	attr->sample_type = PERF_SAMPLE_TIME | PERF_SAMPLE_IDENTIFIER;
	pt_attr_set_aux_action(attr, PT_AUX_PAUSE);
}

/* perf's intel_pt_parse_terms(pmu, "tsc", &bit): the config with that one term set. */
static uint64_t term_mask(const struct pt_pmu *pmu, const char *name)
{
	struct pt_format_field f;

	return pt_pmu__format(pmu, name, &f) || f.word ? 0 : f.mask & -f.mask;
}

void pt_pmu__fill_info(const struct pt_pmu *pmu, struct pd_pt_info *info)
{
	struct pt_format_field f;
	uint32_t v, num = 0, den = 0;

	info->pmu_type = pmu->type;
	info->tsc_bit = term_mask(pmu, "tsc");
	info->noretcomp_bit = term_mask(pmu, "noretcomp");
	info->mtc_bit = term_mask(pmu, "mtc");
	info->cyc_bit = term_mask(pmu, "cyc");
	info->mtc_freq_bits = !pt_pmu__format(pmu, "mtc_period", &f) && !f.word ? f.mask : 0;
	if (!pt_pmu__tsc_art_ratio(pmu, &num, &den)) {
		info->tsc_ctc_ratio_n = num;
		info->tsc_ctc_ratio_d = den;
	}
	info->max_non_turbo_ratio = pt_pmu__max_nonturbo_ratio(pmu, &v) ? 0 : v;
	info->cap_event_trace = pt_pmu__cap(pmu, "event_trace", &v) ? 0 : v;
	/* per-CPU overwrite rings with context switches on CPU-wide events */
	info->have_sched_switch = 3;
	info->snapshot_mode = 1;
	info->per_cpu_mmaps = 1;
	info->present = true;
	info->auxtrace_type = 1;
}
