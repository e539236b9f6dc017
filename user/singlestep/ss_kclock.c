// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The kernel's side of the singlestep clock: loads bpf/ss_clock.bpf.c and reads what it
 * keeps per traced thread (include/ss_kclock_abi.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "ss_kclock.h"
#include "triggers.h"
#include "skel/ss_clock.skel.h"

struct ss_kclock {
	struct ss_clock_bpf *skel;
};

int ss_kclock__open(struct ss_kclock **out, char *why, size_t why_size)
{
	libbpf_print_fn_t old_print;
	struct ss_kclock *k;
	int err;

	k = calloc(1, sizeof(*k));
	if (!k)
		return -ENOMEM;
	/* a kernel that refuses the programs is told in one line, not libbpf's log */
	old_print = libbpf_set_print(triggers__libbpf_print);
	k->skel = ss_clock_bpf__open();
	if (!k->skel) {
		err = -errno;
		snprintf(why, why_size, "opening its BPF object: %s", strerror(-err));
		goto fail;
	}
	err = ss_clock_bpf__load(k->skel);
	if (err) {
		snprintf(why, why_size, "loading its BPF programs: %s", strerror(-err));
		goto fail;
	}
	err = ss_clock_bpf__attach(k->skel);
	if (err) {
		snprintf(why, why_size, "attaching to raw_syscalls and sched_waking: %s",
			 strerror(-err));
		goto fail;
	}
	libbpf_set_print(old_print);
	*out = k;
	return 0;
fail:
	libbpf_set_print(old_print);
	ss_kclock__close(k);
	return err < 0 ? err : -EINVAL;
}

void ss_kclock__close(struct ss_kclock *k)
{
	if (!k)
		return;
	ss_clock_bpf__destroy(k->skel);
	free(k);
}

int ss_kclock__trace(struct ss_kclock *k, pid_t tgid)
{
	__u32 key = (__u32)tgid;
	__u8 one = 1;

	if (bpf_map__update_elem(k->skel->maps.traced, &key, sizeof(key), &one, sizeof(one),
				 BPF_ANY))
		return -errno;
	return 0;
}

int ss_kclock__call(struct ss_kclock *k, pid_t tid, struct ss_kclock_call *out)
{
	__u32 key = (__u32)tid;

	if (bpf_map__lookup_elem(k->skel->maps.calls, &key, sizeof(key), out, sizeof(*out), 0))
		return -errno;
	return 0;
}

void ss_kclock__forget(struct ss_kclock *k, pid_t tid)
{
	__u32 key = (__u32)tid;

	bpf_map__delete_elem(k->skel->maps.calls, &key, sizeof(key), 0);
}
