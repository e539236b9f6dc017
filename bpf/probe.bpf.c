// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Feature probes for `ptbpf doctor`. Each program counts the hits of the doctor process
 * only; doctor loads them one at a time (autoload off for the rest), attaches, makes the
 * event happen and reads the counter, so "attached" also means "it ran".
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

const volatile __u32 targ_tgid = 0;

__u64 uprobe_hits = 0;
__u64 tp_hits = 0;
__u64 tp_btf_hits = 0;
__u64 kprobe_hits = 0;
__u64 fentry_hits = 0;
__u64 rb_dropped = 0;

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4096);
} rb SEC(".maps");

static __always_inline bool is_doctor(void)
{
	return (bpf_get_current_pid_tgid() >> 32) == targ_tgid;
}

/* Attached by doctor to a function of its own binary; also proves the ring buffer. */
SEC("uprobe")
int BPF_KPROBE(probe_uprobe)
{
	__u64 *rec;

	if (!is_doctor())
		return 0;
	__sync_fetch_and_add(&uprobe_hits, 1);
	rec = bpf_ringbuf_reserve(&rb, sizeof(*rec), 0);
	if (!rec) {
		__sync_fetch_and_add(&rb_dropped, 1);
		return 0;
	}
	*rec = targ_tgid;
	bpf_ringbuf_submit(rec, 0);
	return 0;
}

SEC("tp/raw_syscalls/sys_enter")
int probe_tp(void *ctx)
{
	if (is_doctor())
		__sync_fetch_and_add(&tp_hits, 1);
	return 0;
}

SEC("tp_btf/sys_enter")
int BPF_PROG(probe_tp_btf, struct pt_regs *regs, long id)
{
	if (is_doctor())
		__sync_fetch_and_add(&tp_btf_hits, 1);
	return 0;
}

/* Attach point given at attach time (vfs_read), so the object loads on any kernel. */
SEC("kprobe")
int BPF_KPROBE(probe_kprobe)
{
	if (is_doctor())
		__sync_fetch_and_add(&kprobe_hits, 1);
	return 0;
}

SEC("fentry/vfs_read")
int BPF_PROG(probe_fentry)
{
	if (is_doctor())
		__sync_fetch_and_add(&fentry_hits, 1);
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
