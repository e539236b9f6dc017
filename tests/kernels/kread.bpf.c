// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * kcore_check's reader of live kernel memory: when the checking process makes a system
 * call with `addr` set, copy KREAD_LEN bytes from there with bpf_probe_read_kernel(), as
 * the kernel itself reads them.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

#define KREAD_LEN 64

char LICENSE[] SEC("license") = "Dual BSD/GPL";

const volatile __u32 targ_tgid = 0;

__u64 addr = 0;		/* set by the checker; cleared once read */
__s64 read_err = 0;
__u64 reads = 0;
__u8 bytes[KREAD_LEN] = {};

SEC("tp/raw_syscalls/sys_enter")
int read_kernel(void *ctx)
{
	if ((bpf_get_current_pid_tgid() >> 32) != targ_tgid || !addr)
		return 0;
	read_err = bpf_probe_read_kernel(bytes, sizeof(bytes), (void *)addr);
	addr = 0;
	reads++;
	return 0;
}
