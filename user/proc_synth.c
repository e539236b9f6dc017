// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "proc_synth.h"

int proc_synth_maps_line(char *line, pid_t pid, struct pd_record *rec)
{
	uint64_t start, end, pgoff, ino;
	unsigned int maj, min;
	char perms[8];
	int name_at = 0;

	if (!line || !rec)
		return -EINVAL;
	if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %7s %" SCNx64 " %x:%x %" SCNu64 " %n", &start,
		   &end, perms, &pgoff, &maj, &min, &ino, &name_at) < 7 || !name_at ||
	    strlen(perms) != 4 || end <= start)
		return -EINVAL;
	memset(rec, 0, sizeof(*rec));
	rec->type = PERF_RECORD_MMAP2;
	rec->misc = PERF_RECORD_MISC_USER;
	rec->mmap.pid = pid;
	rec->mmap.tid = pid;
	rec->mmap.addr = start;
	rec->mmap.len = end - start;
	rec->mmap.pgoff = pgoff;
	rec->mmap.maj = maj;
	rec->mmap.min = min;
	rec->mmap.ino = ino;
	rec->mmap.prot = (perms[0] == 'r' ? PROT_READ : 0) | (perms[1] == 'w' ? PROT_WRITE : 0) |
			 (perms[2] == 'x' ? PROT_EXEC : 0);
	rec->mmap.flags = perms[3] == 's' ? MAP_SHARED : MAP_PRIVATE;
	line[strcspn(line, "\n")] = '\0';
	/* anonymous mappings have no name; perf calls them //anon */
	rec->mmap.filename = line[name_at] ? line + name_at : "//anon";
	if (!(rec->mmap.prot & PROT_EXEC))
		rec->misc |= PERF_RECORD_MISC_MMAP_DATA;
	return !!(rec->mmap.prot & PROT_EXEC);
}

static int add(struct capture *cap, struct pd_record *rec, const struct pd_sample_id *tmpl,
	       uint32_t pid, uint32_t tid)
{
	rec->sample = *tmpl;
	rec->sample.pid = pid;
	rec->sample.tid = tid;
	return capture__add_record(cap, rec);
}

int proc_read_comm(pid_t pid, pid_t tid, char *buf, size_t size)
{
	char path[64];
	FILE *f;

	if (!buf || !size)
		return -EINVAL;
	buf[0] = '\0';
	snprintf(path, sizeof(path), "/proc/%d/task/%d/comm", pid, tid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	if (!fgets(buf, size, f))
		buf[0] = '\0';
	fclose(f);
	buf[strcspn(buf, "\n")] = '\0';
	return 0;
}

int proc_status_field(pid_t pid, const char *key, long *val)
{
	char path[64], line[256];
	int err = -ENOENT;
	size_t klen;
	FILE *f;

	if (!key || !val)
		return -EINVAL;
	klen = strlen(key);
	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, key, klen) || line[klen] != ':')
			continue;
		if (sscanf(line + klen + 1, "%ld", val) == 1)
			err = 0;
		break;
	}
	fclose(f);
	return err;
}

static int synth_comms(struct capture *cap, pid_t pid, const struct pd_sample_id *tmpl)
{
	char path[64], comm[32];
	struct dirent *de;
	struct pd_record rec;
	int n = 0, err = 0;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/task", pid);
	d = opendir(path);
	if (!d)
		return errno == ENOENT ? -ESRCH : -errno;
	while ((de = readdir(d))) {
		long tid = strtol(de->d_name, NULL, 10);

		if (tid <= 0)
			continue;
		if (proc_read_comm(pid, tid, comm, sizeof(comm)))
			continue;	/* the thread exited meanwhile */
		memset(&rec, 0, sizeof(rec));
		rec.type = PERF_RECORD_COMM;
		rec.comm.pid = pid;
		rec.comm.tid = tid;
		rec.comm.comm = comm;
		err = add(cap, &rec, tmpl, pid, tid);
		if (err)
			break;
		n++;
	}
	closedir(d);
	return err ? err : n;
}

int proc_synth_process(struct capture *cap, pid_t pid, const struct pd_sample_id *tmpl)
{
	struct pd_record rec;
	char path[64], *line = NULL;
	size_t cap_line = 0;
	int n, err = 0;
	FILE *f;

	if (!cap || pid <= 0 || !tmpl)
		return -EINVAL;
	n = synth_comms(cap, pid, tmpl);
	if (n < 0)
		return n;
	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	f = fopen(path, "re");
	if (!f)
		return errno == ENOENT ? -ESRCH : -errno;
	while (getline(&line, &cap_line, f) > 0) {
		if (proc_synth_maps_line(line, pid, &rec) != 1)
			continue;
		err = add(cap, &rec, tmpl, pid, pid);
		if (err)
			break;
		n++;
	}
	free(line);
	fclose(f);
	return err ? err : n;
}
