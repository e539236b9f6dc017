// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <cmocka.h>

#include <bpf/btf.h>

#include "pt_pmu.h"

/* tests/data/sysfs-NAME, found from $TOP (set by tests/run.sh) or the current directory */
static const char *tree(const char *name)
{
	static char path[PATH_MAX];
	const char *top = getenv("TOP");

	snprintf(path, sizeof(path), "%s/tests/data/sysfs-%s", top && *top ? top : ".", name);
	return path;
}

static struct pt_pmu *open_tree(const char *name)
{
	struct pt_pmu *pmu = NULL;

	assert_int_equal(pt_pmu__new(tree(name), &pmu), 0);
	assert_non_null(pmu);
	return pmu;
}

static void test_format_parse(void **state)
{
	struct pt_format_field f;

	assert_int_equal(pt_format_parse("config:0", &f), 0);
	assert_int_equal(f.word, 0);
	assert_int_equal(f.mask, 1);
	assert_int_equal(pt_format_parse("config:14-17\n", &f), 0);
	assert_int_equal(f.mask, 0xfull << 14);
	assert_int_equal(pt_format_parse("config:55", &f), 0);
	assert_int_equal(f.mask, 1ull << 55);
	assert_int_equal(pt_format_parse("config1:0-3,8", &f), 0);
	assert_int_equal(f.word, 1);
	assert_int_equal(f.mask, 0x10f);
	assert_int_equal(pt_format_parse("config2:63", &f), 0);
	assert_int_equal(f.word, 2);
	assert_int_equal(f.mask, 1ull << 63);

	assert_int_equal(pt_format_parse("config:", &f), -EINVAL);
	assert_int_equal(pt_format_parse("config:64", &f), -EINVAL);
	assert_int_equal(pt_format_parse("config:5-3", &f), -EINVAL);
	assert_int_equal(pt_format_parse("config:1-", &f), -EINVAL);
	assert_int_equal(pt_format_parse("config3:1", &f), -EINVAL);
	assert_int_equal(pt_format_parse("event=0x3c", &f), -EINVAL);
	assert_int_equal(pt_format_parse("config:1x", &f), -EINVAL);
	assert_int_equal(pt_format_parse(NULL, &f), -EINVAL);
	assert_int_equal(pt_format_parse("config:1", NULL), -EINVAL);
}

static void test_format_set_get(void **state)
{
	struct pt_format_field period = { .word = 0, .mask = 0xfull << 14 };
	struct pt_format_field split = { .word = 1, .mask = 0x3 | (0x3 << 8) };
	uint64_t config[3] = { 0xffffffffffffffffull, 0, 0 };

	assert_int_equal(pt_format_set(&period, 3, config), 0);
	assert_int_equal(config[0], ~(0xfull << 14) | (3ull << 14));
	assert_int_equal(pt_format_get(&period, config), 3);
	assert_int_equal(pt_format_set(&period, 16, config), -ERANGE);
	/* value bits go to the mask's bits, lowest first */
	assert_int_equal(pt_format_set(&split, 0xd, config), 0);
	assert_int_equal(config[1], 0x1 | (0x3 << 8));
	assert_int_equal(pt_format_get(&split, config), 0xd);

	assert_int_equal(pt_format_set(NULL, 1, config), -EINVAL);
	assert_int_equal(pt_format_set(&period, 1, NULL), -EINVAL);
	assert_int_equal(pt_format_get(NULL, config), 0);
	assert_int_equal(pt_format_get(&period, NULL), 0);
}

static void test_skylake(void **state)
{
	struct pt_pmu *pmu = open_tree("skylake");
	struct pt_format_field f;
	uint32_t v, num, den;

	assert_int_equal(pt_pmu__type(pmu), 8);
	assert_non_null(strstr(pt_pmu__dir(pmu), "bus/event_source/devices/intel_pt"));
	assert_int_equal(pt_pmu__cap(pmu, "mtc_periods", &v), 0);
	assert_int_equal(v, 0x249);
	assert_int_equal(pt_pmu__cap(pmu, "cycle_thresholds", &v), 0);
	assert_int_equal(v, 0x3fff);
	assert_int_equal(pt_pmu__cap(pmu, "num_address_ranges", &v), 0);
	assert_int_equal(v, 2);
	assert_int_equal(pt_pmu__cap(pmu, "no_such_cap", &v), -ENOENT);
	assert_int_equal(pt_pmu__format(pmu, "psb_period", &f), 0);
	assert_int_equal(f.mask, 0xfull << 24);
	assert_int_equal(pt_pmu__format(pmu, "notnt", &f), 0);
	assert_int_equal(f.mask, 1ull << 55);
	assert_int_equal(pt_pmu__max_nonturbo_ratio(pmu, &v), 0);
	assert_int_equal(v, 40);
	assert_int_equal(pt_pmu__tsc_art_ratio(pmu, &num, &den), 0);
	assert_int_equal(num, 334);
	assert_int_equal(den, 2);
	pt_pmu__free(pmu);
}

static void test_broadwell_old_kernel(void **state)
{
	struct pt_pmu *pmu = open_tree("broadwell");
	struct pt_format_field f;
	uint32_t v, num, den;

	assert_int_equal(pt_pmu__type(pmu), 7);
	assert_int_equal(pt_pmu__cap(pmu, "psb_cyc", &v), 0);
	assert_int_equal(v, 0);
	/* an older kernel: no ptwrite cap, no ptw/notnt/event fields */
	assert_int_equal(pt_pmu__cap(pmu, "ptwrite", &v), -ENOENT);
	assert_int_equal(pt_pmu__format(pmu, "ptw", &f), -ENOENT);
	assert_int_equal(pt_pmu__format(pmu, "notnt", &f), -ENOENT);
	assert_int_equal(pt_pmu__format(pmu, "mtc_period", &f), 0);
	assert_int_equal(pt_pmu__tsc_art_ratio(pmu, &num, &den), 0);
	assert_int_equal(num, 0);
	assert_int_equal(den, 0);
	pt_pmu__free(pmu);
}

static void test_missing(void **state)
{
	struct pt_pmu *pmu = (struct pt_pmu *)1;
	uint32_t v, num, den;
	char why[512];

	assert_int_equal(pt_pmu__new(tree("nopt"), &pmu), -ENOENT);
	assert_null(pmu);
	assert_int_equal(pt_pmu__new(tree("does-not-exist"), &pmu), -ENOENT);

	pmu = open_tree("missing-cap");
	assert_int_equal(pt_pmu__cap(pmu, "mtc_periods", &v), -ENOENT);
	assert_int_equal(pt_pmu__max_nonturbo_ratio(pmu, &v), -ENOENT);
	assert_int_equal(pt_pmu__tsc_art_ratio(pmu, &num, &den), -ENOENT);
	pt_pmu__free(pmu);

	assert_false(pt_pmu_usable(tree("nopt"), why, sizeof(why)));
	assert_non_null(strstr(why, "no Intel PT PMU: "));
	assert_non_null(strstr(why, "sysfs-nopt/bus/event_source/devices/intel_pt does not exist"));
	assert_non_null(strstr(why, "; fix: "));
	assert_non_null(strstr(why, "--backend singlestep"));
	/* no buffer: still answers */
	assert_false(pt_pmu_usable(tree("nopt"), NULL, 0));
}

static void test_sysfs_root_env(void **state)
{
	unsetenv("PTBPF_SYSFS_ROOT");
	assert_string_equal(pt_sysfs_root(), "/sys");
	setenv("PTBPF_SYSFS_ROOT", "", 1);
	assert_string_equal(pt_sysfs_root(), "/sys");
	setenv("PTBPF_SYSFS_ROOT", tree("skylake"), 1);
	assert_string_equal(pt_sysfs_root(), tree("skylake"));
	unsetenv("PTBPF_SYSFS_ROOT");
}

static void test_null_args(void **state)
{
	struct pt_pmu *pmu = open_tree("skylake");
	struct pt_format_field f;
	uint32_t v, num, den;

	assert_int_equal(pt_pmu__new(tree("skylake"), NULL), -EINVAL);
	pt_pmu__free(NULL);
	assert_null(pt_pmu__dir(NULL));
	assert_int_equal(pt_pmu__type(NULL), 0);
	assert_int_equal(pt_pmu__cap(NULL, "mtc", &v), -EINVAL);
	assert_int_equal(pt_pmu__cap(pmu, NULL, &v), -EINVAL);
	assert_int_equal(pt_pmu__cap(pmu, "mtc", NULL), -EINVAL);
	assert_int_equal(pt_pmu__format(NULL, "pt", &f), -EINVAL);
	assert_int_equal(pt_pmu__format(pmu, "pt", NULL), -EINVAL);
	assert_int_equal(pt_pmu__max_nonturbo_ratio(NULL, &v), -EINVAL);
	assert_int_equal(pt_pmu__max_nonturbo_ratio(pmu, NULL), -EINVAL);
	assert_int_equal(pt_pmu__tsc_art_ratio(NULL, &num, &den), -EINVAL);
	assert_int_equal(pt_pmu__tsc_art_ratio(pmu, &num, NULL), -EINVAL);
	pt_pmu__free(pmu);
}


/* --- configuration --- */

static struct pt_request req_default(void)
{
	return (struct pt_request){ .timing = TIMING_MTC, .psb_period = -1 };
}

static int config_of(const char *name, const struct pt_request *req, uint64_t config[3],
		     char *err, size_t size)
{
	struct pt_pmu *pmu = open_tree(name);
	int ret = pt_pmu__config(pmu, req, config, err, size);

	pt_pmu__free(pmu);
	return ret;
}

static void test_config_defaults(void **state)
{
	struct pt_request req = req_default();
	uint64_t config[3];
	char err[256];

	/*
	 * perf's default on Skylake: tsc,mtc,mtc_period=3,psb_period=3,pt,branch, which
	 * `perf record -e intel_pt// -vv` prints as config 0x300e601.
	 */
	assert_int_equal(config_of("skylake", &req, config, err, sizeof(err)), 0);
	assert_int_equal(config[0], 0x300e601);
	assert_int_equal(config[1], 0);
	assert_int_equal(config[2], 0);
	/* Broadwell: no MTC, fixed PSB period: tsc,pt,branch */
	assert_int_equal(config_of("broadwell", &req, config, err, sizeof(err)), 0);
	assert_int_equal(config[0], 0x2401);
	/* a missing caps file only drops the default MTC */
	assert_int_equal(config_of("missing-cap", &req, config, err, sizeof(err)), 0);
	assert_int_equal(config[0], 0x3002401);

	req.timing = TIMING_TSC;
	req.timing_given = true;
	assert_int_equal(config_of("skylake", &req, config, err, sizeof(err)), 0);
	assert_int_equal(config[0], 0x3002401);
	req.timing = TIMING_CYC;
	assert_int_equal(config_of("skylake", &req, config, err, sizeof(err)), 0);
	assert_int_equal(config[0], 0x300e603);
	req = req_default();
	req.noretcomp = true;
	req.psb_period = 5;
	assert_int_equal(config_of("skylake", &req, config, err, sizeof(err)), 0);
	assert_int_equal(config[0], 0x500ee01);
	/* 0 is always accepted by the kernel */
	req.psb_period = 0;
	assert_int_equal(config_of("skylake", &req, config, err, sizeof(err)), 0);
	assert_int_equal(config[0] & (0xfull << 24), 0);
	req = req_default();
	req.nr_filters = 2;
	assert_int_equal(config_of("skylake", &req, config, err, sizeof(err)), 0);
}

static void test_config_errors(void **state)
{
	struct pt_request req = req_default();
	uint64_t config[3];
	char err[256];

	req.psb_period = 7;
	assert_int_equal(config_of("skylake", &req, config, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "--psb-period 7 is not allowed on this CPU: "
			    "caps/psb_periods=0x3f allows 0-5");
	assert_int_equal(config_of("broadwell", &req, config, err, sizeof(err)), -EOPNOTSUPP);
	assert_string_equal(err, "--psb-period 7: this CPU has a fixed PSB period "
			    "(caps/psb_cyc=0); leave --psb-period out");

	req = req_default();
	req.timing_given = true;
	assert_int_equal(config_of("broadwell", &req, config, err, sizeof(err)), -EOPNOTSUPP);
	assert_string_equal(err, "--timing mtc: this CPU has no MTC packets (caps/mtc=0); use "
			    "--timing tsc");
	assert_int_equal(config_of("missing-cap", &req, config, err, sizeof(err)), -ENOENT);
	assert_non_null(strstr(err, "--timing mtc: "));
	assert_non_null(strstr(err, "sysfs-missing-cap/bus/event_source/devices/intel_pt/caps/"
				    "mtc_periods is missing: cannot check what this CPU allows"));

	req.timing = TIMING_CYC;
	assert_int_equal(config_of("broadwell", &req, config, err, sizeof(err)), -EOPNOTSUPP);
	assert_string_equal(err, "--timing cyc: this CPU has no cycle-accurate mode "
			    "(caps/psb_cyc=0); use --timing tsc");

	req = req_default();
	req.nr_filters = 3;
	assert_int_equal(config_of("skylake", &req, config, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "--filter given 3 times, but this CPU has 2 address ranges "
			    "(caps/num_address_ranges=2)");
	req.nr_filters = 1;
	assert_int_equal(config_of("broadwell", &req, config, err, sizeof(err)), -EOPNOTSUPP);
	assert_string_equal(err, "--filter: this CPU has no IP filtering (caps/ip_filtering=0)");

	assert_int_equal(pt_pmu__config(NULL, &req, config, err, sizeof(err)), -EINVAL);
	assert_int_equal(config_of("skylake", NULL, config, err, sizeof(err)), -EINVAL);
	assert_int_equal(config_of("skylake", &req, NULL, err, sizeof(err)), -EINVAL);
	/* no error buffer: still fails the same way */
	req.nr_filters = 3;
	assert_int_equal(config_of("skylake", &req, config, NULL, 0), -EINVAL);
}

static void test_allowed_and_pick(void **state)
{
	char buf[64];

	assert_string_equal(pt_allowed_str(0x249, false, buf, sizeof(buf)), "0,3,6,9");
	assert_string_equal(pt_allowed_str(0x3f, false, buf, sizeof(buf)), "0-5");
	assert_string_equal(pt_allowed_str(0x3fff, false, buf, sizeof(buf)), "0-13");
	assert_string_equal(pt_allowed_str(0x3, false, buf, sizeof(buf)), "0,1");
	assert_string_equal(pt_allowed_str(0xb, false, buf, sizeof(buf)), "0,1,3");
	assert_string_equal(pt_allowed_str(0x3c, true, buf, sizeof(buf)), "0,2-5");
	assert_string_equal(pt_allowed_str(0, false, buf, sizeof(buf)), "none");
	assert_string_equal(pt_allowed_str(0, true, buf, sizeof(buf)), "0");
	assert_string_equal(pt_allowed_str(0x80000000u, false, buf, sizeof(buf)), "31");
	assert_null(pt_allowed_str(1, false, NULL, 10));

	assert_int_equal(pt_pick_value(0x249, 3), 3);
	assert_int_equal(pt_pick_value(0x3f, 3), 3);
	assert_int_equal(pt_pick_value(0x241, 3), 0);	/* the highest below */
	assert_int_equal(pt_pick_value(0x240, 3), 6);	/* else the lowest above */
	assert_int_equal(pt_pick_value(0, 3), -1);
}

/* perf_event_attr as notes/kernel-pt-abi.md §1.7 and §9 describe it, field by field. */
static void test_attr_pt(void **state)
{
	const uint64_t config[3] = { 0x300e601, 0, 0 };
	struct perf_event_attr a;

	memset(&a, 0xff, sizeof(a));
	pt_attr_pt(&a, 8, config, false);
	assert_int_equal(a.size, sizeof(a));
	assert_int_equal(a.type, 8);
	assert_int_equal(a.config, 0x300e601);
	assert_int_equal(a.config1, 0);
	assert_int_equal(a.config2, 0);
	assert_int_equal(a.disabled, 1);		/* enabled after the AUX mmap */
	assert_int_equal(a.freq, 0);
	assert_int_equal(a.sample_period, 1);		/* as perf and magic-trace */
	assert_int_equal(a.sample_type, PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU |
			 PERF_SAMPLE_IDENTIFIER);
	assert_int_equal(a.sample_id_all, 1);
	assert_int_equal(a.mmap, 1);
	assert_int_equal(a.mmap2, 1);
	assert_int_equal(a.comm, 1);
	assert_int_equal(a.comm_exec, 1);
	assert_int_equal(a.task, 1);
	assert_int_equal(a.context_switch, 1);		/* SWITCH_CPU_WIDE on a CPU event */
	assert_int_equal(a.exclude_kernel, 1);		/* user only by default */
	assert_int_equal(a.exclude_user, 0);
	assert_int_equal(a.exclude_hv, 1);
	assert_int_equal(a.text_poke, 0);
	assert_int_equal(a.use_clockid, 0);		/* TSC conversion needs the perf clock */
	assert_int_equal(a.inherit, 0);
	assert_int_equal(a.aux_watermark, 0);		/* overwrite mode: no wakeups */
	assert_int_equal(a.watermark, 0);
	assert_int_equal(a.read_format, 0);
	assert_int_equal(pt_attr_aux_action(&a), 0);

	pt_attr_pt(&a, 8, config, true);
	assert_int_equal(a.exclude_kernel, 0);
	assert_int_equal(a.text_poke, 1);
}

static void test_attr_trigger(void **state)
{
	struct perf_event_attr a;
	uint32_t word;

	memset(&a, 0xff, sizeof(a));
	pt_attr_trigger(&a, 1234);
	assert_int_equal(a.size, sizeof(a));
	assert_int_equal(a.type, PERF_TYPE_TRACEPOINT);
	assert_int_equal(a.config, 1234);
	assert_int_equal(a.sample_period, 1);		/* must be a sampling event to pause */
	assert_int_equal(a.freq, 0);
	assert_int_equal(a.exclude_kernel, 0);		/* or perf_tp_event_match() drops it */
	assert_int_equal(a.disabled, 0);		/* follows its group leader */
	assert_int_equal(a.sample_type, PERF_SAMPLE_TIME | PERF_SAMPLE_IDENTIFIER);
	assert_int_equal(pt_attr_aux_action(&a), PT_AUX_PAUSE);
	/* bit 1 of the u32 at bytes 116..119: aux_pause (aux_start_paused is bit 0) */
	memcpy(&word, (char *)&a + 116, 4);
	assert_int_equal(word, 2);
	assert_int_equal(a.aux_sample_size, 0);
	assert_int_equal(a.sig_data, 0);
}

/* Bit offset of `name` in `type_id`, looking into anonymous members; -1 if absent. */
static long member_bits(const struct btf *btf, __u32 type_id, const char *name)
{
	const struct btf_type *t = btf__type_by_id(btf, type_id);
	const struct btf_member *m;
	int i;

	if (!t || (!btf_is_struct(t) && !btf_is_union(t)))
		return -1;
	m = btf_members(t);
	for (i = 0; i < btf_vlen(t); i++, m++) {
		const char *n = btf__name_by_offset(btf, m->name_off);
		long off;

		if (n && !strcmp(n, name))
			return btf_member_bit_offset(t, i);
		if ((!n || !*n) &&
		    (off = member_bits(btf, btf__resolve_type(btf, m->type), name)) >= 0)
			return btf_member_bit_offset(t, i) + off;
	}
	return -1;
}

/* The aux_action word and aux_pause bit where the running kernel has them. */
static void test_aux_action_offset(void **state)
{
	struct btf *btf = btf__load_vmlinux_btf();
	long action, pause;
	int id;

	if (!btf) {
		printf("SKIP: no kernel BTF to check perf_event_attr's layout against\n");
		skip();
	}
	id = btf__find_by_name_kind(btf, "perf_event_attr", BTF_KIND_STRUCT);
	action = id > 0 ? member_bits(btf, id, "aux_action") : -1;
	pause = id > 0 ? member_bits(btf, id, "aux_pause") : -1;
	btf__free(btf);
	if (action < 0) {
		printf("SKIP: this kernel's perf_event_attr has no aux_action (before 6.13)\n");
		skip();
	}
	assert_int_equal(action, PT_ATTR_AUX_ACTION_OFFSET * 8);
	assert_int_equal(pause, PT_ATTR_AUX_ACTION_OFFSET * 8 + 1);
}

static void test_fill_info(void **state)
{
	struct pt_pmu *pmu = open_tree("skylake");
	struct pd_pt_info info = {};

	pt_pmu__fill_info(pmu, &info);
	/* perf's intel_pt_info_fill(): config masks of the terms, not bit numbers */
	assert_int_equal(info.pmu_type, 8);
	assert_int_equal(info.tsc_bit, 0x400);
	assert_int_equal(info.noretcomp_bit, 0x800);
	assert_int_equal(info.mtc_bit, 0x200);
	assert_int_equal(info.cyc_bit, 0x2);
	assert_int_equal(info.mtc_freq_bits, 0x3c000);
	assert_int_equal(info.tsc_ctc_ratio_n, 334);
	assert_int_equal(info.tsc_ctc_ratio_d, 2);
	assert_int_equal(info.max_non_turbo_ratio, 40);
	assert_int_equal(info.have_sched_switch, 3);
	assert_int_equal(info.snapshot_mode, 1);
	assert_int_equal(info.per_cpu_mmaps, 1);
	assert_true(info.present);
	pt_pmu__free(pmu);
}

static void test_request_from_opts(void **state)
{
	struct capture_opts o = { .timing = TIMING_CYC, .timing_given = true, .psb_period = 4,
				  .noretcomp = true, .kernel = true, .nr_filters = 2 };
	struct pt_request r;

	pt_request_from_opts(&o, &r);
	assert_int_equal(r.timing, TIMING_CYC);
	assert_true(r.timing_given);
	assert_int_equal(r.psb_period, 4);
	assert_true(r.noretcomp);
	assert_true(r.kernel);
	assert_int_equal(r.nr_filters, 2);
}


/* On this kernel, with no PT: the probes fail the way they should, without leaking. */
static void test_probes_without_pt(void **state)
{
	struct perf_event_attr a = { .size = sizeof(a), .type = PERF_TYPE_SOFTWARE,
				     .config = PERF_COUNT_SW_DUMMY, .disabled = 1 };
	int fd, err;

	assert_int_equal(pt_probe_aux_pause(-1, 0), -EINVAL);
	/* a PMU type nobody registered */
	assert_true(pt_open_probe_event(0x7ffffff0, 0) < 0);
	/* a leader without PERF_PMU_CAP_AUX_PAUSE refuses the member */
	fd = syscall(SYS_perf_event_open, &a, -1, 0, -1, 0);
	if (fd < 0) {
		printf("SKIP: cannot open a CPU-wide perf event here: %s\n", strerror(errno));
		skip();
	}
	err = pt_probe_aux_pause(fd, 0);
	assert_true(err < 0);
	close(fd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_format_parse),
		cmocka_unit_test(test_format_set_get),
		cmocka_unit_test(test_skylake),
		cmocka_unit_test(test_broadwell_old_kernel),
		cmocka_unit_test(test_missing),
		cmocka_unit_test(test_sysfs_root_env),
		cmocka_unit_test(test_null_args),
		cmocka_unit_test(test_config_defaults),
		cmocka_unit_test(test_config_errors),
		cmocka_unit_test(test_allowed_and_pick),
		cmocka_unit_test(test_attr_pt),
		cmocka_unit_test(test_attr_trigger),
		cmocka_unit_test(test_aux_action_offset),
		cmocka_unit_test(test_fill_info),
		cmocka_unit_test(test_request_from_opts),
		cmocka_unit_test(test_probes_without_pt),
	};

	return cmocka_run_group_tests_name("pt_pmu", tests, NULL, NULL);
}
