/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Sideband for a process that was already running when tracing started: the COMM and
 * MMAP2 records the kernel would have written, made from /proc as perf does when it
 * synthesizes events (notes/kernel-pt-abi.md §4.1). Both backends put them at the start
 * of a capture, so the decoder knows the threads and where each executable file is mapped.
 * Also the /proc readers the rest of user/ shares (a thread's name, a status field).
 */
#ifndef PTBPF_PROC_SYNTH_H
#define PTBPF_PROC_SYNTH_H

#include <sys/types.h>

#include "perfdata.h"

/*
 * Parse one line of /proc/PID/maps into a MMAP2 record for process `pid` (filename
 * points into `line`, which is modified). Returns 1 for an executable mapping, 0 for one
 * that is not (rec still filled), -EINVAL for a line that is not a maps line.
 */
int proc_synth_maps_line(char *line, pid_t pid, struct pd_record *rec);

/*
 * Add to `cap`, for process `pid`: one COMM per thread (/proc/PID/task/TID/comm), then one
 * MMAP2 per executable mapping of /proc/PID/maps ([vdso] included, named so). Each
 * record gets the trailer `tmpl` (time, cpu, id: the caller's), with pid and tid set to
 * the record's own. Returns the number of records added, -ESRCH if the process is gone,
 * or -errno.
 */
int proc_synth_process(struct capture *cap, pid_t pid, const struct pd_sample_id *tmpl);

/*
 * The name of thread `tid` of process `pid` (/proc/PID/task/TID/comm) into buf, without its
 * newline; "" when it cannot be read. Returns 0, -EINVAL without a buffer, or -errno when the
 * file cannot be opened (the thread is gone).
 */
int proc_read_comm(pid_t pid, pid_t tid, char *buf, size_t size);

/*
 * A numeric field of /proc/PID/status ("Tgid", "TracerPid"...). Returns 0 and *val, -ENOENT
 * when the file has no such field, -EINVAL without key or val, or -errno when it cannot be
 * opened (*val is then untouched).
 */
int proc_status_field(pid_t pid, const char *key, long *val);

#endif /* PTBPF_PROC_SYNTH_H */
