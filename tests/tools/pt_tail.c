// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * How a CPU's trace ends, from its packets alone (no decode, no binaries):
 *
 *   pt_tail CAPTURE [--cpu N]
 *
 * CAPTURE is a perf.data (ptbpf's --keep-capture, or perf record's). The CPU is the
 * trigger's (ptbpf's trigger record) unless --cpu names one; its last AUX buffer is read
 * with libipt's packet decoder, the IP of every TIP/TIP.PGE/TIP.PGD/FUP packet rebuilt
 * from its compression against the last IP (Intel SDM "IP Compression"; reset at each
 * PSB), and printed as key=value lines:
 *
 *   cpu=N                 the CPU read
 *   trigger_kind=K        the trigger record's kind ("none" without one), and its
 *   trigger_ip=0x..       probed address, thread and perf time
 *   trigger_tid=T
 *   trigger_time=NS
 *   last_ip=0x..          the IP of the last IP packet (0 if none carried one)
 *   last_packets=fup,tip.pgd   the control-flow packets from the last one with an IP
 *                         on: IP packets and TNT ("tnt": conditional branches and
 *                         compressed returns that ran after that IP)
 *   last_user_ip=0x..     the last IP below the kernel half (user space)
 *   last_user_map=NAME    the trigger process's mapping holding it (MMAP records),
 *                         "-" if none does
 *   last_tip_ip=0x..      the target of the last TIP (a branch, not an async event)
 *   last_time=NS          perf time of the last TSC packet (0 without TSC)
 *   timing_after_last_ip=N  TSC/MTC/CYC/TMA packets after the last IP packet
 *   timing_after_stop=N   the same after the last TIP.PGD (-1 if there is none)
 *   errors=N              packets that did not decode (each followed by a resync)
 *
 * tests/hw/freeze_physics.sh holds a capture's freeze to these figures. Exit status 0,
 * 1 with one error line (no trace for that CPU, unreadable capture), 2 on usage errors.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <intel-pt.h>

#include "perfdata.h"

#define KERNEL_HALF (1ull << 63)

struct tail {
	uint64_t last_ip, last_user_ip, last_tip_ip, last_tsc;
	char last_packets[128];
	unsigned timing_after;
	int timing_after_stop;		/* -1: no TIP.PGD yet */
	unsigned errors;
};

/* The IP an IP packet stands for, given the last one (SDM Vol. 3C, IP compression). */
static bool rebuild_ip(const struct pt_packet_ip *p, uint64_t *last)
{
	switch (p->ipc) {
	case pt_ipc_suppressed:
		return false;
	case pt_ipc_update_16:
		*last = (*last & ~0xffffull) | (p->ip & 0xffff);
		return true;
	case pt_ipc_update_32:
		*last = (*last & ~0xffffffffull) | (p->ip & 0xffffffff);
		return true;
	case pt_ipc_update_48:
		*last = (*last & ~0xffffffffffffull) | (p->ip & 0xffffffffffff);
		return true;
	case pt_ipc_sext_48:
		*last = (uint64_t)((int64_t)(p->ip << 16) >> 16);
		return true;
	case pt_ipc_full:
		*last = p->ip;
		return true;
	}
	return false;
}

static const char *ip_packet_name(enum pt_packet_type type)
{
	switch (type) {
	case ppt_tip:
		return "tip";
	case ppt_tip_pge:
		return "tip.pge";
	case ppt_tip_pgd:
		return "tip.pgd";
	case ppt_fup:
		return "fup";
	default:
		return NULL;
	}
}

static void append(char *buf, size_t size, const char *word)
{
	size_t n = strlen(buf);

	snprintf(buf + n, size - n, "%s%s", n ? "," : "", word);
}

static void scan(const uint8_t *data, size_t size, struct tail *t)
{
	struct pt_packet_decoder *dec;
	struct pt_config cfg;
	struct pt_packet p;
	uint64_t ip = 0;
	int err;

	pt_config_init(&cfg);
	cfg.begin = (uint8_t *)data;
	cfg.end = (uint8_t *)data + size;
	dec = pt_pkt_alloc_decoder(&cfg);
	if (!dec)
		return;
	err = pt_pkt_sync_forward(dec);
	while (err >= 0) {
		const char *name;

		err = pt_pkt_next(dec, &p, sizeof(p));
		if (err == -pte_eos)
			break;
		if (err < 0) {
			t->errors++;
			ip = 0;
			err = pt_pkt_sync_forward(dec);
			continue;
		}
		if (p.type == ppt_psb)
			ip = 0;
		name = ip_packet_name(p.type);
		if (name) {
			bool has_ip = rebuild_ip(&p.payload.ip, &ip);

			if (has_ip) {
				t->last_ip = ip;
				if (ip < KERNEL_HALF)
					t->last_user_ip = ip;
				if (p.type == ppt_tip)
					t->last_tip_ip = ip;
				t->last_packets[0] = '\0';
				t->timing_after = 0;
			}
			append(t->last_packets, sizeof(t->last_packets), name);
			if (p.type == ppt_tip_pgd)
				t->timing_after_stop = 0;
		} else if (p.type == ppt_tnt_8 || p.type == ppt_tnt_64) {
			append(t->last_packets, sizeof(t->last_packets), "tnt");
		} else if (p.type == ppt_tsc || p.type == ppt_mtc || p.type == ppt_cyc ||
			   p.type == ppt_tma) {
			t->timing_after++;
			if (t->timing_after_stop >= 0)
				t->timing_after_stop++;
		}
		if (p.type == ppt_tsc)
			t->last_tsc = p.payload.tsc.tsc;
	}
	pt_pkt_free_decoder(dec);
}

/* The mapping of process `pid` that holds `ip`, from the capture's MMAP records. */
static const char *map_of(const struct capture *cap, uint32_t pid, uint64_t ip)
{
	const char *name = "-";
	size_t i;

	for (i = 0; i < cap->nr_records; i++) {
		const struct pd_record *r = &cap->records[i];

		if ((r->type != PERF_RECORD_MMAP && r->type != PERF_RECORD_MMAP2) ||
		    r->mmap.pid != pid || ip < r->mmap.addr || ip - r->mmap.addr >= r->mmap.len)
			continue;
		name = r->mmap.filename ? r->mmap.filename : "-";	/* the newest wins */
	}
	return name;
}

int main(int argc, char **argv)
{
	const struct pd_trigger *trig = NULL;
	const struct pd_auxtrace *buf = NULL;
	struct tail t = { .timing_after_stop = -1 };
	struct capture *cap;
	long cpu = -1;
	size_t i;
	int err;

	if (argc == 4 && !strcmp(argv[2], "--cpu")) {
		char *end;

		cpu = strtol(argv[3], &end, 10);
		if (*end || cpu < 0) {
			fprintf(stderr, "pt_tail: --cpu %s: a CPU number\n", argv[3]);
			return 2;
		}
	} else if (argc != 2) {
		fprintf(stderr, "usage: pt_tail CAPTURE [--cpu N]\n");
		return 2;
	}
	err = perfdata_read(argv[1], &cap);
	if (err)
		return 1;	/* perfdata_read() said why */
	for (i = 0; i < cap->nr_records && !trig; i++)
		if (cap->records[i].type == PD_RECORD_PTBPF_TRIGGER)
			trig = &cap->records[i].trigger;
	if (cpu < 0 && !trig) {
		fprintf(stderr, "pt_tail: %s: no trigger record to name the CPU: give --cpu N\n",
			argv[1]);
		capture__free(cap);
		return 1;
	}
	if (cpu < 0)
		cpu = trig->cpu;
	for (i = 0; i < cap->nr_aux; i++)
		if (cap->aux[i].cpu == (uint32_t)cpu && (!buf || cap->aux[i].offset >= buf->offset))
			buf = &cap->aux[i];
	if (!buf) {
		fprintf(stderr, "pt_tail: %s: no trace of CPU %ld\n", argv[1], cpu);
		capture__free(cap);
		return 1;
	}
	scan(buf->data, buf->size, &t);
	printf("cpu=%ld\n", cpu);
	printf("trigger_kind=%s\n", trig ? trigger_kind_name(trig->kind) : "none");
	printf("trigger_ip=%#" PRIx64 "\n", trig ? trig->ip : 0);
	printf("trigger_tid=%u\n", trig ? trig->tid : 0);
	printf("trigger_time=%" PRIu64 "\n", trig ? trig->time : 0);
	printf("last_ip=%#" PRIx64 "\n", t.last_ip);
	printf("last_packets=%s\n", t.last_packets[0] ? t.last_packets : "-");
	printf("last_user_ip=%#" PRIx64 "\n", t.last_user_ip);
	printf("last_user_map=%s\n", trig && t.last_user_ip ?
	       map_of(cap, trig->pid, t.last_user_ip) : "-");
	printf("last_tip_ip=%#" PRIx64 "\n", t.last_tip_ip);
	printf("last_time=%" PRIu64 "\n",
	       t.last_tsc && cap->pt.cap_user_time_zero ? pd_tsc_to_time(&cap->pt, t.last_tsc) : 0);
	printf("timing_after_last_ip=%u\n", t.timing_after);
	printf("timing_after_stop=%d\n", t.timing_after_stop);
	printf("errors=%u\n", t.errors);
	capture__free(cap);
	return 0;
}
