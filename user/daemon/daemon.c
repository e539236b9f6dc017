// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * `ptbpf daemon`: the fleet agent. Loads the rules (config.c), arms them, and captures
 * only when a rule fires, within its budgets, into the spool (spool.c). One loop (epoll)
 * serves the fires of the events-only and pt rules (the trigger plane's ring buffer),
 * the system-wide PT rings' sideband, the captures the capture children write and the
 * decode worker decodes, signals (SIGHUP
 * reload, SIGTERM/SIGINT stop, SIGCHLD), changes in the configuration directory
 * (inotify), the status socket, and a 1 s tick for budgets, the metrics and the
 * systemd watchdog.
 *
 * Backends: events-only and pt rules are one trigger plane in this process (one BPF
 * object, a rule = a slot, its probes' BPF cookie; a reload attaches and detaches only
 * the slots of the rules it adds, removes or changes), each rule's cooldown and hourly
 * budget enforced in the kernel where its match lets the kernel filter (pid, or a uprobe
 * on the matched binary). A pt rule's fire snapshots the daemon's system-wide PT rings
 * (pt_capture.c) for the fired process. The singlestep rules run the capture command
 * (user/capture_cmd.c) as a child on the rule's pid (the stepping tracer must own its
 * target), which writes perf.data files into a work directory the daemon watches. Both
 * kinds of capture are compressed and spooled with a manifest the same way
 * (process_capture). A rule this host cannot run (pt without Intel PT, singlestep
 * without a pid) is reported unavailable; its trigger is still armed, and every fire is
 * counted as suppressed (backend_unavailable).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/inotify.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <json-c/json.h>

#include "array.h"
#include "backend.h"
#include "commands.h"
#include "config.h"
#include "daemon.h"
#include "daemon_libs.h"
#include "decode_worker.h"
#include "log.h"
#include "metrics.h"
#include "perfdata.h"
#include "pt_capture.h"
#include "ptdecode.h"
#include "spool.h"
#include "status_sock.h"
#include "symtab.h"
#include "triggers.h"

#define DEFAULT_CONFIG "/etc/ptbpf/ptbpf.yaml"
#define DEFAULT_STATE_DIR "/run/ptbpf"
#define WORK_DIR "work"		/* in the state dir: capture children's perf.data files */
#define TICK_MS 1000
#define PUBLISH_EVERY 5			/* ticks between textfile/state writes when idle */
#define RELOAD_DEBOUNCE_MS 300
#define CHILD_STOP_TIMEOUT_S 20

const char *const suppress_reason_names[NR_SUPPRESS] = {
	"budget", "cooldown", "skip", "spool_full", "backend_unavailable", "snapshot",
};
const double latency_buckets[NR_LATENCY_BUCKETS] = {
	0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60,
};

enum rule_state {
	RULE_ARMED = 0,
	RULE_UNAVAILABLE,
	RULE_FAILED,
	NR_RULE_STATES,
};
static const char *const rule_state_names[] = { "armed", "unavailable", "failed" };

struct rule_rt {
	struct rule r;			/* moved out of the config that defined it */
	enum rule_state state;
	char why[1024];		/* unavailable / failed: the reason and fix */
	bool capture;			/* a capture child's rule (singlestep) */
	bool pt;			/* a pt capture rule: its fires snapshot d->pt */
	bool kernel_budget;		/* cooldown and hourly budget are enforced in BPF */
	bool in_plane;			/* events-only, pt or unavailable: its trigger is in d->plane */
	int plane_index;		/* its slot there (rec->index), -1 if none; a capture rule
					 * has one while its budget is spent (spent_arm()) */
	struct rule_rt *successor;	/* a reload changed it: the rule that replaced it (same
					 * name), which takes its counters when it is disarmed */
	pid_t child;			/* capture child, 0 if none */
	bool child_stopping;
	char workdir[PATH_MAX];
	int wd;				/* inotify watch of workdir, -1 if none */
	bool target_gone;
	/* counters (carried over a reload while the rule is unchanged) */
	uint64_t fires, events, captures_ok, captures_failed, bytes;
	uint64_t suppressed[NR_SUPPRESS];
	uint64_t k_suppressed[NR_SUPPRESS];	/* the kernel's share, recomputed each tick */
	uint64_t k_fires;
	uint64_t lat_count, lat_bucket[NR_LATENCY_BUCKETS];
	double lat_sum;
	/* budget windows (CLOCK_MONOTONIC s) */
	uint64_t hour_start, hour_count, day_start, day_count, day_bytes;
	uint64_t seq;
	char last_fire[256];		/* one line: when, what, where */
	uint64_t last_cooldown_ns;	/* daemon-side cooldown: last fire (CLOCK_MONOTONIC) */
};

struct pending_capture;

struct daemon {
	char *config_path, *rules_dir, *state_dir;
	struct config *cfg;
	struct rule_rt **rules;
	unsigned nr_rules;
	struct spool *spool;
	struct metrics_server *http;
	char *http_listen;
	int epfd, sfd, tfd, rfd, ifd;	/* epoll, signalfd, tick, reload debounce, inotify */
	int cfg_wd, rules_wd;
	int stats_fd;			/* BPF_ENABLE_STATS, held while running */
	int status_fd;			/* listening status socket (status_sock.h) */
	struct decode_worker *decoder;	/* `decode: host` captures, within decode_cpu_share */
	struct pending_capture *decoding;	/* captures the decoder has */
	/*
	 * The trigger plane: one BPF object for every rule not run by a capture child, loaded
	 * with the first such rule; slot i is rule plane_rules[i] (NULL: free). A reload adds
	 * and removes the slots of the rules it changes, and touches no other.
	 */
	struct triggers *plane;
	/*
	 * The system-wide PT rings of the pt capture rules (pt_capture.h): open while one
	 * is armed, user only unless one asks for the kernel, the largest ring one asks for.
	 */
	struct pt_capture *pt;
	struct rule_rt *plane_rules[PLANE_MAX_RULES];
	unsigned plane_added, plane_removed;	/* by the configuration being applied */
	char host[256], boot_id[64], kernel[256], cpu[256];
	uint64_t reloads_ok, reloads_failed, spool_evicted;
	uint64_t hour_start, hour_captures, day_start, day_bytes;
	bool ready, stopping, dirty;
	unsigned ticks;
	uint64_t watchdog_usec;
	double start_cpu;
	struct uploader *uploader;	/* NULL: no upload: section */
	uint64_t upload_generation;	/* of the metrics published last */
	struct upload_config upload;	/* its settings, moved out of the first config: they
					 * outlive reloads (a change needs a restart) */
};

static struct daemon *the_daemon;	/* for the log sink */
static bool log_json = true;

/* ---- logging ---- */

void dlog_set_json(bool json)
{
	log_json = json;
}

static void iso_time(char *buf, size_t size)
{
	struct timespec ts;
	struct tm tm;

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	strftime(buf, size, "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf + strlen(buf), size - strlen(buf), ".%03ldZ", ts.tv_nsec / 1000000);
}

static void emit(const char *level, const char *rule, const char *event,
		 struct json_object *extra, const char *msg)
{
	char t[40];

	if (!log_json) {
		fprintf(stderr, "ptbpf: %s%s%s%s\n", rule ? "[" : "", rule ?: "", rule ? "] " : "",
			msg);
		json_object_put(extra);
		return;
	}
	if (!extra)
		extra = json_object_new_object();
	iso_time(t, sizeof(t));
	json_object_object_add(extra, "time", json_object_new_string(t));
	json_object_object_add(extra, "level", json_object_new_string(level));
	if (rule)
		json_object_object_add(extra, "rule", json_object_new_string(rule));
	json_object_object_add(extra, "event", json_object_new_string(event));
	json_object_object_add(extra, "msg", json_object_new_string(msg));
	fprintf(stderr, "%s\n", json_object_to_json_string_ext(extra, JSON_C_TO_STRING_PLAIN |
							       JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(extra);
}

void dlog_event(const char *level, const char *rule, const char *event,
		struct json_object *extra, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	emit(level, rule, event, extra, msg);
}

/* Every elog/vlog of the modules the daemon calls becomes a log line. */
static void log_sink(void *ctx, int level, const char *msg)
{
	char buf[1024];

	snprintf(buf, sizeof(buf), "%s", msg);
	buf[strcspn(buf, "\n")] = '\0';
	if (!buf[0])
		return;
	emit(level == LOG_ERROR ? "error" : "debug", NULL, "message", NULL, buf);
}

/* ---- small helpers ---- */

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static uint64_t real_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static void read_line(const char *path, char *buf, size_t size)
{
	FILE *f = fopen(path, "r");

	buf[0] = '\0';
	if (!f)
		return;
	if (fgets(buf, size, f))
		buf[strcspn(buf, "\n")] = '\0';
	fclose(f);
}

static void host_info(struct daemon *d)
{
	struct utsname u;
	char line[512];
	FILE *f;

	gethostname(d->host, sizeof(d->host) - 1);
	read_line("/proc/sys/kernel/random/boot_id", d->boot_id, sizeof(d->boot_id));
	if (!uname(&u))
		snprintf(d->kernel, sizeof(d->kernel), "%s", u.release);
	f = fopen("/proc/cpuinfo", "r");
	while (f && fgets(line, sizeof(line), f)) {
		char *c = strchr(line, ':');

		if (!strncmp(line, "model name", 10) && c) {
			snprintf(d->cpu, sizeof(d->cpu), "%s", c + 2);
			d->cpu[strcspn(d->cpu, "\n")] = '\0';
			break;
		}
	}
	if (f)
		fclose(f);
}

static double self_cpu_seconds(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_utime.tv_sec + ru.ru_stime.tv_sec +
	       (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	remove(path);
	return 0;
}

void rm_tree(const char *path)
{
	nftw(path, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

static bool pid_alive(pid_t pid)
{
	return pid > 0 && (kill(pid, 0) == 0 || errno == EPERM);
}

/*
 * Probes a dead ptbpf left in tracefs (gate mode defines them as group ptbpf_<pid>):
 * removed before arming, as the kernel keeps them after their owner is gone.
 */
static void remove_stale_probes(void)
{
	static const char *const files[] = {
		"/sys/kernel/tracing/uprobe_events", "/sys/kernel/tracing/kprobe_events",
	};
	unsigned i;

	for (i = 0; i < 2; i++) {
		char line[1024], group[128];
		FILE *f = fopen(files[i], "r");

		while (f && fgets(line, sizeof(line), f)) {
			char *ev = strchr(line, ':'), *sp;
			int pid;

			if (!ev)
				continue;
			ev++;
			sp = strchr(ev, ' ');
			if (sp)
				*sp = '\0';
			if (sscanf(ev, "ptbpf_%d/", &pid) != 1 || pid_alive(pid))
				continue;
			snprintf(group, sizeof(group), "-:%s", ev);
			{
				int fd = open(files[i], O_WRONLY | O_APPEND | O_CLOEXEC);

				if (fd >= 0) {
					if (write(fd, group, strlen(group)) > 0)
						dlog_event("info", NULL, "cleanup", NULL, "removed probe %s "
							   "left by pid %d, which is gone", ev, pid);
					close(fd);
				}
			}
		}
		if (f)
			fclose(f);
	}
}

/* ---- rules: matching and budgets ---- */

static bool cgroup_of(pid_t pid, char *buf, size_t size)
{
	char path[64], line[PATH_MAX];
	FILE *f;
	bool found = false;

	snprintf(path, sizeof(path), "/proc/%d/cgroup", pid);
	f = fopen(path, "r");
	while (f && fgets(line, sizeof(line), f)) {
		if (!strncmp(line, "0::", 3)) {
			snprintf(buf, size, "%s", line + 3);
			buf[strcspn(buf, "\n")] = '\0';
			found = true;
			break;
		}
	}
	if (f)
		fclose(f);
	return found;
}

/* The uprobe trigger's binary is the matched one: the kernel's attach already matches. */
static bool uprobe_on_binary(const struct rule *r)
{
	const struct trigger_spec *t = &r->opts.triggers[0];
	size_t n;

	if (!r->binary || !r->opts.nr_triggers || !t->arg ||
	    (t->kind != TRIGGER_UPROBE && t->kind != TRIGGER_UPROBE_LATENCY))
		return false;
	n = strlen(r->binary);
	return !strncmp(t->arg, r->binary, n) && t->arg[n] == ':';
}

static bool needs_user_filter(const struct rule *r)
{
	return r->comm || r->cgroup || r->systemd_unit || (r->binary && !uprobe_on_binary(r));
}

static bool rule_matches(const struct rule *r, const struct trigger_rec *rec)
{
	char buf[PATH_MAX], path[64];

	if (r->pid && rec->pid != r->pid)
		return false;
	if (r->comm && strncmp(rec->comm, r->comm, sizeof(rec->comm)))
		return false;
	if (r->binary && !uprobe_on_binary(r)) {
		ssize_t n;

		snprintf(path, sizeof(path), "/proc/%u/exe", rec->pid);
		n = readlink(path, buf, sizeof(buf) - 1);
		if (n < 0)
			return false;
		buf[n] = '\0';
		if (strcmp(buf, r->binary))
			return false;
	}
	if (r->cgroup || r->systemd_unit) {
		if (!cgroup_of(rec->pid, buf, sizeof(buf)))
			return false;
		if (r->cgroup) {
			size_t n = strlen(r->cgroup);

			/* the cgroup or one below it */
			if (strncmp(buf, r->cgroup, n) || (buf[n] && buf[n] != '/' &&
							   r->cgroup[n - 1] != '/'))
				return false;
		}
		if (r->systemd_unit) {
			char *last = strrchr(buf, '/');
			char want[300];

			snprintf(want, sizeof(want), "/%s/", r->systemd_unit);
			if (!(last && !strcmp(last + 1, r->systemd_unit)) && !strstr(buf, want))
				return false;
		}
	}
	return true;
}

/* The hourly budget the kernel enforces for a plane rule (0: none, the daemon does). */
static uint64_t kernel_max(const struct rule_rt *rt)
{
	uint64_t max = rt->r.max_per_hour ?: rt->r.max_per_day;

	/*
	 * An unavailable rule's fires are counted from the kernel's counters (fired and
	 * suppressed alike): one record an hour is enough, and the shared ring buffer stays
	 * for the rules that run.
	 */
	if (rt->kernel_budget && rt->state == RULE_UNAVAILABLE)
		return 1;
	if (!rt->kernel_budget || rt->state != RULE_ARMED)
		return 0;
	if (rt->r.max_per_day && rt->r.max_per_day < max)
		max = rt->r.max_per_day;
	return max;
}

static void roll_windows(struct daemon *d, struct rule_rt *rt, uint64_t now_s)
{
	if (!rt->hour_start || now_s - rt->hour_start >= 3600) {
		rt->hour_start = now_s;
		rt->hour_count = 0;
		if (d->plane && rt->plane_index >= 0 && kernel_max(rt))
			triggers__set_index_budget(d->plane, rt->plane_index, kernel_max(rt), 0, 0);
	}
	if (!rt->day_start || now_s - rt->day_start >= 86400) {
		rt->day_start = now_s;
		rt->day_count = 0;
		rt->day_bytes = 0;
	}
}

/*
 * The daemon's share of a rule's budget, for a fire the kernel let through. Returns
 * NR_SUPPRESS when the fire may go on, else the reason.
 */
static enum suppress_reason budget_check(struct daemon *d, struct rule_rt *rt, uint64_t ktime)
{
	const struct rule *r = &rt->r;
	uint64_t now_s = mono_ns() / 1000000000ull;

	roll_windows(d, rt, now_s);
	if (!rt->kernel_budget && r->cooldown_ns && rt->last_cooldown_ns &&
	    ktime - rt->last_cooldown_ns < r->cooldown_ns)
		return SUPPRESS_COOLDOWN;
	if ((r->max_per_hour && rt->hour_count >= r->max_per_hour) ||
	    (r->max_per_day && rt->day_count >= r->max_per_day) ||
	    (r->max_bytes_per_day && rt->day_bytes >= r->max_bytes_per_day))
		return SUPPRESS_BUDGET;
	if (rt->capture || rt->pt) {
		if (!d->hour_start || now_s - d->hour_start >= 3600) {
			d->hour_start = now_s;
			d->hour_captures = 0;
		}
		if (!d->day_start || now_s - d->day_start >= 86400) {
			d->day_start = now_s;
			d->day_bytes = 0;
		}
		if ((d->cfg->max_captures_per_hour && d->hour_captures >= d->cfg->max_captures_per_hour) ||
		    (d->cfg->max_bytes_per_day && d->day_bytes >= d->cfg->max_bytes_per_day))
			return SUPPRESS_BUDGET;
	}
	if (r->skip_probability > 0 && drand48() < r->skip_probability)
		return SUPPRESS_SKIP;
	rt->last_cooldown_ns = ktime;
	return NR_SUPPRESS;
}

static void suppress(struct rule_rt *rt, enum suppress_reason why)
{
	rt->suppressed[why]++;
	rt->fires++;
}

/* ---- events-only fires ---- */

static void add_u64(struct json_object *o, const char *k, uint64_t v)
{
	json_object_object_add(o, k, json_object_new_uint64(v));
}

static void add_str(struct json_object *o, const char *k, const char *v)
{
	json_object_object_add(o, k, json_object_new_string(v ?: ""));
}

static void add_hex(struct json_object *o, const char *k, uint64_t v)
{
	char buf[24];

	snprintf(buf, sizeof(buf), "0x%" PRIx64, v);
	add_str(o, k, buf);
}

static void describe_fire(struct rule_rt *rt, const struct trigger_rec *rec, const char *what)
{
	char lat[32] = "";
	time_t now = time(NULL);
	struct tm tm;
	char t[32];

	gmtime_r(&now, &tm);
	strftime(t, sizeof(t), "%Y-%m-%dT%H:%M:%SZ", &tm);
	if (rec->latency_ns)
		snprintf(lat, sizeof(lat), ", latency %s",
			 fmt_duration(rec->latency_ns, lat + 16, sizeof(lat) - 16));
	snprintf(rt->last_fire, sizeof(rt->last_fire), "%s %s %s pid %u tid %u (%.16s)%s", t,
		 what, trigger_kind_name(rec->kind), rec->pid, rec->tid, rec->comm, lat);
}

static void pt_fire(struct daemon *d, struct rule_rt *rt, const struct trigger_rec *rec);

/* A fire of the plane: rec->index names the rule. */
static int on_event(void *ctx, const struct trigger_rec *rec)
{
	struct daemon *d = ctx;
	struct rule_rt *rt = rec->index < PLANE_MAX_RULES ? d->plane_rules[rec->index] : NULL;
	enum suppress_reason why;
	struct json_object *o;
	char sym[256];

	if (!rt)
		return 0;	/* disarmed by the reload under way */
	if (!rule_matches(&rt->r, rec))
		return 0;
	if (rt->state == RULE_UNAVAILABLE) {
		/* counted from the kernel's counters when the kernel filters; else here */
		if (!rt->kernel_budget)
			suppress(rt, SUPPRESS_BACKEND_UNAVAILABLE);
		return 0;
	}
	if (rt->pt) {
		pt_fire(d, rt, rec);
		return 0;
	}
	if (rt->capture) {
		/* its budget is spent (spent_arm()): the child has ended, the fire is counted */
		suppress(rt, SUPPRESS_BUDGET);
		d->dirty = true;
		return 0;
	}
	why = budget_check(d, rt, rec->ktime_ns);
	if (why != NR_SUPPRESS) {
		suppress(rt, why);
		return 0;
	}
	rt->fires++;
	rt->events++;
	rt->hour_count++;
	rt->day_count++;
	rt->seq++;
	describe_fire(rt, rec, "event");
	o = json_object_new_object();
	add_str(o, "kind", trigger_kind_name(rec->kind));
	add_u64(o, "time_ns", real_ns() - (mono_ns() - rec->ktime_ns));
	add_u64(o, "pid", rec->pid);
	add_u64(o, "tid", rec->tid);
	add_u64(o, "cpu", rec->cpu);
	add_str(o, "comm", rec->comm);
	if (rec->latency_ns)
		add_u64(o, "latency_ns", rec->latency_ns);
	if (rec->ip) {
		add_hex(o, "ip", rec->ip);
		if (!triggers__symbolize(d->plane, rec, rec->func_ip ?: rec->ip, sym, sizeof(sym)))
			add_str(o, "sym", sym);
	}
	if (rec->kind == TRIGGER_RUNQ_LATENCY)
		add_u64(o, "prev_tid", rec->aux);
	add_u64(o, "seq", rt->seq);
	dlog_event("info", rt->r.name, "fire", o, "%s", rt->last_fire);
	d->dirty = true;	/* published at the next tick */
	return 0;
}

/*
 * The kernel's suppressions of a rule whose budget it enforces: before `qualifying`
 * (cooldown) and between qualifying and fired (the hourly budget, nth).
 */
static void read_kernel_counters(struct daemon *d, struct rule_rt *rt)
{
	struct trigger_stats st = {};
	uint64_t budget, cooldown, nth_skips;

	if (!rt->in_plane || !rt->kernel_budget)
		return;
	if (d->plane && rt->plane_index >= 0 && triggers__stats(d->plane, rt->plane_index, &st))
		return;
	nth_skips = rt->r.opts.nth > 1 ? rt->r.opts.nth - 1 : 0;
	budget = st.qualifying - st.fired;
	budget = budget > nth_skips ? budget - nth_skips : 0;
	cooldown = st.suppressed > st.qualifying - st.fired ?
		   st.suppressed - (st.qualifying - st.fired) : 0;
	if (rt->state == RULE_UNAVAILABLE) {
		rt->k_suppressed[SUPPRESS_BACKEND_UNAVAILABLE] = st.fired + st.suppressed;
		rt->k_fires = st.fired + st.suppressed;
		return;
	}
	rt->k_suppressed[SUPPRESS_BUDGET] = budget;
	rt->k_suppressed[SUPPRESS_COOLDOWN] = cooldown;
	rt->k_fires = budget + cooldown;
}

/* ---- capture children ---- */

static const char *self_exe(void)
{
	return "/proc/self/exe";
}

/* The captures a capture rule may still take in its windows (the child's --max-snapshots). */
static uint64_t capture_budget_left(const struct rule_rt *rt)
{
	const struct rule *r = &rt->r;
	uint64_t max = 100000;	/* the CLI's --max-snapshots limit: no budget */

	if (r->max_per_hour)
		max = r->max_per_hour - (rt->hour_count < r->max_per_hour ? rt->hour_count : r->max_per_hour);
	if (r->max_per_day && r->max_per_day - rt->day_count < max)
		max = rt->day_count < r->max_per_day ? r->max_per_day - rt->day_count : 0;
	return max;
}

/* The capture command line of a rule: its trigger, on its pid, perf.data only. */
static int spawn_capture(struct daemon *d, struct rule_rt *rt, const char *backend)
{
	const struct rule *r = &rt->r;
	char *argv[64], pid[16], keep[PATH_MAX + 32], out[PATH_MAX + 16], maxs[24], cool[32];
	char bufsz[32], logp[PATH_MAX + 16];
	uint64_t max = capture_budget_left(rt);
	int argc = 0, i, fd;
	pid_t child;

	if (!max)
		return 0;	/* the budget is spent: the tick spawns it again in the next window */
	snprintf(pid, sizeof(pid), "%u", r->pid);
	snprintf(keep, sizeof(keep), "--keep-capture=%s/cap.data", rt->workdir);
	snprintf(out, sizeof(out), "%s/cap.fxt", rt->workdir);
	snprintf(maxs, sizeof(maxs), "%" PRIu64, max);
	snprintf(bufsz, sizeof(bufsz), "%" PRIu64, r->buffer_size);
	snprintf(logp, sizeof(logp), "%s/capture.log", rt->workdir);
#define ARG(s) (argv[argc++] = (char *)(s))
	ARG("ptbpf");
	ARG("--backend");
	ARG(backend);
	ARG("-p");
	ARG(pid);
	/* the trigger as config.c parsed it: the same flags again */
	{
		static char words[32][256];
		char *desc, *p, *save = NULL;
		int n = 0;

		desc = strdup(r->trigger_desc ?: "");
		if (!desc)
			return -ENOMEM;
		for (p = strtok_r(desc, " ", &save); p && n < 32; p = strtok_r(NULL, " ", &save))
			snprintf(words[n++], sizeof(words[0]), "%s", p);
		free(desc);
		for (i = 0; i < n; i++)
			ARG(words[i]);
	}
	ARG("--max-snapshots");
	ARG(maxs);
	if (r->cooldown_ns) {
		snprintf(cool, sizeof(cool), "%" PRIu64 "ns", r->cooldown_ns);
		ARG("--cooldown");
		ARG(cool);
	}
	ARG("--buffer-size");
	ARG(bufsz);
	if (r->kernel)
		ARG("--kernel");
	if (r->timing) {
		ARG("--timing");
		ARG(r->timing);
	}
	ARG("--decode=no");
	ARG(keep);
	ARG("-o");
	ARG(out);
	argv[argc] = NULL;
#undef ARG
	child = fork();
	if (child < 0)
		return -errno;
	if (child == 0) {
		sigset_t all;

		/* the capture ends (and lets the target go) when the daemon dies */
		prctl(PR_SET_PDEATHSIG, SIGTERM);
		sigemptyset(&all);
		sigprocmask(SIG_SETMASK, &all, NULL);
		fd = open(logp, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
		}
		execv(self_exe(), argv);
		_exit(127);
	}
	rt->child = child;
	rt->child_stopping = false;
	dlog_event("info", r->name, "capture_started", NULL, "capturing pid %u with the %s "
		   "backend (capture pid %d), up to %s snapshots", r->pid, backend, child, maxs);
	return 0;
}

static void last_log_line(const char *workdir, char *buf, size_t size)
{
	char p[PATH_MAX + 16], line[512];
	FILE *f;

	buf[0] = '\0';
	snprintf(p, sizeof(p), "%s/capture.log", workdir);
	f = fopen(p, "r");
	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, "ptbpf: ", 7)) {
			snprintf(buf, size, "%s", line + 7);
			buf[strcspn(buf, "\n")] = '\0';
		}
	if (f)
		fclose(f);
}

static struct json_object *labels_json(const struct label *l, unsigned n)
{
	struct json_object *o = json_object_new_object();
	unsigned i;

	for (i = 0; i < n; i++)
		add_str(o, l[i].key, l[i].value);
	return o;
}

static void build_id_hex(const uint8_t *id, unsigned size, char *out)
{
	unsigned i;

	for (i = 0; i < size; i++)
		sprintf(out + 2 * i, "%02x", id[i]);
	out[2 * size] = '\0';
}

/* The manifest of a capture (the spool adds capture, bytes, sha256). */
static struct json_object *manifest_new(struct daemon *d, struct rule_rt *rt,
					const struct capture *cap, const struct pd_trigger *tr,
					uint64_t fire_wall_ns)
{
	struct json_object *m = json_object_new_object(), *t, *w, *bins, *labels;
	const char *comm = "";
	uint64_t begin = 0, end = 0;
	size_t i, j;
	char sym[64] = "";

	add_u64(m, "version", 1);
	add_str(m, "host", d->host);
	add_str(m, "boot_id", d->boot_id);
	add_str(m, "kernel", d->kernel);
	add_str(m, "cpu", d->cpu);
	add_str(m, "ptbpf_version", PTBPF_VERSION);
	add_str(m, "rule", rt->r.name);
	labels = labels_json(d->cfg->host_labels, d->cfg->nr_host_labels);
	for (i = 0; i < rt->r.nr_labels; i++)
		add_str(labels, rt->r.labels[i].key, rt->r.labels[i].value);
	json_object_object_add(m, "labels", labels);
	add_u64(m, "time_ns", fire_wall_ns);
	t = json_object_new_object();
	for (i = 0; i < cap->nr_records; i++) {
		const struct pd_record *rec = &cap->records[i];

		if (rec->type == PERF_RECORD_COMM && tr && rec->comm.tid == tr->tid)
			comm = rec->comm.comm;
	}
	add_str(t, "kind", tr ? trigger_kind_name(tr->kind) : "none");
	add_u64(t, "latency_ns", tr ? tr->latency_ns : 0);
	add_u64(t, "pid", tr ? tr->pid : 0);
	add_u64(t, "tid", tr ? tr->tid : 0);
	add_str(t, "comm", comm);
	add_hex(t, "ip", tr ? tr->ip : 0);
	if (tr && tr->desc) {
		/* "uprobe_latency BIN:SYM > 5ms": the probed symbol */
		const char *c = strrchr(tr->desc, ':');

		if (c)
			snprintf(sym, sizeof(sym), "%s", c + 1);
		sym[strcspn(sym, " ")] = '\0';
	}
	add_str(t, "sym", sym);
	add_str(t, "desc", tr && tr->desc ? tr->desc : "");
	json_object_object_add(m, "trigger", t);
	/*
	 * The capture's window: from the first time in the trace to the fire (the trigger's
	 * time), not the sideband's few records around the snapshot. Without time in the
	 * trace (events-only, a timeless trace), the records' span.
	 */
	if (ptdecode_first_time(cap, &begin))
		begin = 0;
	if (tr && tr->time && tr->time >= begin)
		end = tr->time;
	if (!begin && cap->host.first_sample_time)
		begin = cap->host.first_sample_time;
	if (!end && cap->host.last_sample_time)
		end = cap->host.last_sample_time;
	for (i = 0; i < cap->nr_records && !begin; i++)
		if (cap->records[i].sample.valid && cap->records[i].sample.time)
			begin = cap->records[i].sample.time;
	for (i = cap->nr_records; i-- > 0 && !end;)
		if (cap->records[i].sample.valid && cap->records[i].sample.time)
			end = cap->records[i].sample.time;
	w = json_object_new_object();
	add_u64(w, "begin", begin);
	add_u64(w, "end", end);
	json_object_object_add(m, "window_ns", w);
	bins = json_object_new_array();
	for (i = 0; i < cap->nr_records; i++) {
		const struct pd_record *rec = &cap->records[i];
		const char *path = NULL, *seen = NULL;
		char bid[41] = "";

		if (rec->type != PERF_RECORD_MMAP2 && rec->type != PERF_RECORD_MMAP)
			continue;
		path = rec->mmap.filename;
		if (!path || path[0] != '/' || !(rec->mmap.prot & 4 /* PROT_EXEC */))
			continue;
		for (j = 0; j < json_object_array_length(bins) && !seen; j++) {
			const char *p = json_object_get_string(json_object_object_get(
				json_object_array_get_idx(bins, j), "path"));

			if (!strcmp(p, path))
				seen = p;
		}
		if (seen)
			continue;
		if (rec->mmap.build_id_size)
			build_id_hex(rec->mmap.build_id, rec->mmap.build_id_size, bid);
		for (j = 0; j < cap->nr_build_ids && !bid[0]; j++)
			if (cap->build_ids[j].filename && !strcmp(cap->build_ids[j].filename, path))
				build_id_hex(cap->build_ids[j].id, cap->build_ids[j].size, bid);
		if (!bid[0]) {
			/* the file as it is on this host now: what a decoder elsewhere needs */
			uint8_t id[20];
			uint32_t size;

			if (!symtab__read_build_id(path, id, sizeof(id), &size))
				build_id_hex(id, size, bid);
		}
		{
			struct json_object *b = json_object_new_object();

			add_str(b, "path", path);
			add_str(b, "build_id", bid);
			json_object_array_add(bins, b);
		}
	}
	json_object_object_add(m, "binaries", bins);
	return m;
}

static void observe_latency(struct rule_rt *rt, double s)
{
	unsigned i;

	rt->lat_count++;
	rt->lat_sum += s;
	for (i = 0; i < NR_LATENCY_BUCKETS; i++)
		if (s <= latency_buckets[i])
			rt->lat_bucket[i]++;
}

/*
 * A capture on its way to the spool: read and within budget, its manifest made; with
 * `decode: host`, first through the decode worker (its FXT is spooled beside it).
 */
struct pending_capture {
	struct decode_job job;		/* job.ctx: this */
	struct pending_capture *next;	/* the daemon's list of captures being decoded */
	struct rule_rt *rt;		/* NULL once the rule is disarmed (reload): spooled all
					 * the same, under its name, without its counters */
	char rule[NAME_MAX + 1];
	char name[NAME_MAX];
	char path[PATH_MAX];
	char fxt[PATH_MAX + 8];
	struct capture *cap;
	struct json_object *manifest;
	uint64_t ktime, latency_ns;
	char stamp[32];
};

static void pending_free(struct pending_capture *pc)
{
	if (!pc)
		return;
	json_object_put(pc->manifest);
	capture__free(pc->cap);
	unlink(pc->path);
	if (pc->fxt[0])
		unlink(pc->fxt);
	free(pc);
}

/* Spool a capture (and its FXT when `fxt_ok`), count it, forget it. */
static void spool_capture(struct daemon *d, struct pending_capture *pc, bool fxt_ok)
{
	struct rule_rt *rt = pc->rt;
	char manifest[PATH_MAX];
	uint64_t bytes = 0, evicted = 0;
	int err;

	err = spool__add(d->spool, pc->rule, pc->name, pc->path, fxt_ok ? pc->fxt : NULL,
			 pc->manifest, manifest, sizeof(manifest), &bytes, &evicted);
	d->spool_evicted += evicted;
	if (err) {
		/* not spooled: it does not use up the budgets it was counted against */
		if (d->hour_captures)
			d->hour_captures--;
		if (rt) {
			rt->hour_count -= !!rt->hour_count;
			rt->day_count -= !!rt->day_count;
			rt->captures_failed++;
			if (err == -ENOSPC || err == -EROFS || err == -EACCES || err == -EDQUOT ||
			    err == -EPERM)
				rt->suppressed[SUPPRESS_SPOOL_FULL]++;
		}
		dlog_event("error", pc->rule, "capture_dropped", NULL, "cannot spool the capture "
			   "in %s: %s (dropped; fix the spool and the next fire is kept)",
			   spool__dir(d->spool), strerror(-err));
		goto out;
	}
	if (rt) {
		rt->captures_ok++;
		rt->bytes += bytes;
		rt->day_bytes += bytes;
		observe_latency(rt, (mono_ns() - pc->ktime) / 1e9);
		pathf(rt->last_fire, sizeof(rt->last_fire), "%s capture %s (%" PRIu64 " bytes)",
		      pc->stamp, pc->name, bytes);
	}
	d->day_bytes += bytes;
	{
		struct json_object *o = json_object_new_object();

		add_str(o, "manifest", manifest);
		add_u64(o, "bytes", bytes);
		if (pc->latency_ns)
			add_u64(o, "latency_ns", pc->latency_ns);
		add_u64(o, "fire_to_spooled_ns", mono_ns() - pc->ktime);
		dlog_event("info", pc->rule, "captured", o, "spooled %s", pc->name);
	}
	if (d->uploader)
		uploader__enqueue(d->uploader, manifest);
	d->dirty = true;
out:
	pending_free(pc);
}

/* The decode worker finished some captures: spool them. */
static void decodes_done(struct daemon *d)
{
	struct decode_job *job;

	while ((job = decode_worker__take_done(d->decoder))) {
		struct pending_capture *pc = job->ctx, **pp;

		for (pp = &d->decoding; *pp && *pp != pc; pp = &(*pp)->next)
			;
		if (*pp)
			*pp = pc->next;
		if (job->err) {
			dlog_event("error", pc->rule, "decode_failed", NULL, "decoding %s failed "
				   "(%s); spooling the capture alone", pc->name,
				   job->err == -ECANCELED ? "the daemon stops" :
				   job->err == -EDOM ? "decoder: verify-fast: the fast path differs "
				   "from libipt's block decoder, the first difference logged above" :
				   strerror(-job->err));
		} else {
			struct json_object *o = json_object_new_object();

			add_u64(o, "cpu_ns", job->cpu_ns);
			add_u64(o, "wall_ns", job->wall_ns);
			add_u64(o, "paused_ns", job->paused_ns);
			json_object_object_add(o, "cpu_share", json_object_new_double(job->share));
			dlog_event("info", pc->rule, "decoded", o, "decoded %s: %.1f ms of CPU in "
				   "%.1f ms (share %.2f of a core)", pc->name, job->cpu_ns / 1e6,
				   job->wall_ns / 1e6, job->share);
		}
		spool_capture(d, pc, !job->err);
	}
}

/*
 * A perf.data a capture child or a pt snapshot wrote: check the budgets (unless the fire
 * was `admitted` already, as a pt fire is before its snapshot), spool it (decoded first),
 * forget it.
 */
static void process_capture(struct daemon *d, struct rule_rt *rt, const char *path,
			    bool admitted)
{
	const struct pd_trigger *tr = NULL;
	struct pending_capture *pc;
	enum suppress_reason why;
	uint64_t wall;
	struct tm tm;
	time_t secs;
	size_t i;
	int err;

	pc = calloc(1, sizeof(*pc));
	if (!pc) {
		rt->captures_failed++;
		unlink(path);
		return;
	}
	pc->rt = rt;
	pc->job.ctx = pc;
	snprintf(pc->rule, sizeof(pc->rule), "%s", rt->r.name);
	snprintf(pc->path, sizeof(pc->path), "%s", path);
	err = perfdata_read(path, &pc->cap);
	if (err) {
		rt->captures_failed++;
		dlog_event("error", rt->r.name, "capture_failed", NULL, "%s: unreadable capture "
			   "(%s)", path, strerror(-err));
		goto drop;
	}
	for (i = 0; i < pc->cap->nr_records && !tr; i++)
		if (pc->cap->records[i].type == PD_RECORD_PTBPF_TRIGGER)
			tr = &pc->cap->records[i].trigger;
	pc->ktime = tr && tr->ktime ? tr->ktime : mono_ns();
	pc->latency_ns = tr ? tr->latency_ns : 0;
	why = admitted ? NR_SUPPRESS : budget_check(d, rt, pc->ktime);
	if (why != NR_SUPPRESS) {
		suppress(rt, why);
		dlog_event("info", rt->r.name, "suppressed", NULL, "capture dropped: %s",
			   suppress_reason_names[why]);
		goto drop;
	}
	rt->fires++;
	/* the budgets count the capture now: the next fire must not pass while it decodes */
	rt->hour_count++;
	rt->day_count++;
	d->hour_captures++;
	wall = real_ns() - (mono_ns() - pc->ktime);
	secs = wall / 1000000000ull;
	gmtime_r(&secs, &tm);
	strftime(pc->stamp, sizeof(pc->stamp), "%Y%m%dT%H%M%S", &tm);
	rt->seq++;
	pathf(pc->name, sizeof(pc->name), "%s.%03lluZ-%s-%u-%" PRIu64, pc->stamp,
	      (unsigned long long)(wall / 1000000 % 1000), d->host, tr ? tr->pid : rt->r.pid,
	      rt->seq);
	pc->manifest = manifest_new(d, rt, pc->cap, tr, wall);
	if (rt->r.decode_host) {
		char moved[PATH_MAX];

		/*
		 * Out of the rule's work directory while it decodes: a reload that re-arms
		 * the rule empties that directory, and a rescan must not take it twice.
		 */
		pathf(moved, sizeof(moved), "%s/" WORK_DIR "/.decode-%s-%" PRIu64 ".data",
		      d->state_dir, rt->r.name, rt->seq);
		if (!rename(pc->path, moved))
			snprintf(pc->path, sizeof(pc->path), "%s", moved);
		snprintf(pc->fxt, sizeof(pc->fxt), "%s.fxt", pc->path);
		pc->job.cap = pc->cap;
		pc->job.output = pc->fxt;
		/* a system-wide snapshot holds every process: the fired one's threads only */
		pc->job.pid = rt->pt && tr ? tr->pid : 0;
		pc->job.no_fast = rt->r.decoder == RULE_DECODER_NO_FAST;
		pc->job.verify_fast = rt->r.decoder == RULE_DECODER_VERIFY_FAST;
		if (d->decoder && !decode_worker__submit(d->decoder, &pc->job)) {
			pc->next = d->decoding;
			d->decoding = pc;
			return;
		}
		dlog_event("error", rt->r.name, "decode_failed", NULL, "no decode worker (the "
			   "daemon stops); spooling the capture alone");
		spool_capture(d, pc, false);
		return;
	}
	spool_capture(d, pc, false);
	return;
drop:
	pending_free(pc);
}

static void scan_workdir(struct daemon *d, struct rule_rt *rt)
{
	struct dirent **ents = NULL;
	int n, i;

	n = scandir(rt->workdir, &ents, NULL, alphasort);
	for (i = 0; i < n; i++) {
		const char *nm = ents[i]->d_name;
		size_t len = strlen(nm);
		char p[PATH_MAX + 300];

		if (nm[0] != '.' && len > 5 && !strcmp(nm + len - 5, ".data")) {
			snprintf(p, sizeof(p), "%s/%s", rt->workdir, nm);
			process_capture(d, rt, p, false);
		}
		free(ents[i]);
	}
	free(ents);
}

/* ---- pt capture rules: the system-wide rings ---- */

/*
 * A fire the daemon suppressed after the kernel let it through: the kernel's count of
 * this hour's fires goes back to the captures taken, its cooldown to the last one.
 */
static void give_back_kernel_budget(struct daemon *d, struct rule_rt *rt)
{
	if (d->plane && rt->plane_index >= 0 && kernel_max(rt))
		triggers__set_index_budget(d->plane, rt->plane_index, kernel_max(rt),
					   rt->hour_count, rt->last_cooldown_ns);
}

/*
 * A pt rule's fire (matched): within budget and not while a snapshot is taken, freeze
 * the rings, snapshot them for the fired process, resume, and spool it as any capture.
 */
static void pt_fire(struct daemon *d, struct rule_rt *rt, const struct trigger_rec *rec)
{
	enum suppress_reason why = NR_SUPPRESS;
	char path[PATH_MAX];
	int err;

	if (!d->pt)
		why = SUPPRESS_BACKEND_UNAVAILABLE;
	else if (pt_capture__busy(d->pt, rec->ktime_ns))
		why = SUPPRESS_SNAPSHOT;
	else
		why = budget_check(d, rt, rec->ktime_ns);
	if (why != NR_SUPPRESS) {
		suppress(rt, why);
		/*
		 * Not a capture, but not the rule's choice either: the hour's budget is given
		 * back. (A fire over the daemon's own budgets, or skipped, spends it, as for
		 * an events-only rule: giving it back would let every later fire wake us.)
		 */
		if (why == SUPPRESS_SNAPSHOT)
			give_back_kernel_budget(d, rt);
		d->dirty = true;
		return;
	}
	describe_fire(rt, rec, "capture");
	pathf(path, sizeof(path), "%s/" WORK_DIR "/.pt-%s-%" PRIu64 ".data", d->state_dir,
	      rt->r.name, rt->seq + 1);
	err = pt_capture__take(d->pt, rec, rt->r.trigger_desc, path);
	if (err) {
		rt->captures_failed++;
		rt->fires++;
		unlink(path);
		give_back_kernel_budget(d, rt);
		dlog_event("error", rt->r.name, "capture_failed", NULL, "the PT snapshot for pid "
			   "%u failed: %s", rec->pid, strerror(-err));
		d->dirty = true;
		return;
	}
	dlog_event("debug", rt->r.name, "snapshot", NULL, "PT snapshot %u for pid %u tid %u: "
		   "%.2f ms from freeze to resume", pt_capture__snapshots(d->pt), rec->pid,
		   rec->tid, pt_capture__last_ns(d->pt) / 1e6);
	process_capture(d, rt, path, true);
}

static bool pt_rule_wants_kernel(const struct daemon *d, const struct rule_rt *also)
{
	unsigned i;

	if (also && also->r.kernel)
		return true;
	for (i = 0; i < d->nr_rules; i++)
		if (d->rules[i] && d->rules[i]->pt && d->rules[i]->state == RULE_ARMED &&
		    d->rules[i]->r.kernel)
			return true;
	return false;
}

static void pt_rings_close(struct daemon *d)
{
	if (!d->pt)
		return;
	epoll_ctl(d->epfd, EPOLL_CTL_DEL, pt_capture__fd(d->pt), NULL);
	pt_capture__free(d->pt);
	d->pt = NULL;
}

static int pt_rings_open(struct daemon *d, uint64_t buffer_size, bool kernel, char *why,
			 size_t size)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = &d->pt };
	int err;

	err = pt_capture__open(buffer_size, kernel, why, size, &d->pt);
	if (err)
		return err;
	if (epoll_ctl(d->epfd, EPOLL_CTL_ADD, pt_capture__fd(d->pt), &ev)) {
		err = -errno;
		snprintf(why, size, "cannot watch the PT rings: %s", strerror(-err));
		pt_rings_close(d);
		return err;
	}
	dlog_event("info", NULL, "pt_rings", NULL, "system-wide PT rings armed: %s",
		   pt_capture__describe(d->pt));
	return 0;
}

/*
 * The rings a pt rule needs: opened with the first such rule, reopened when one needs a
 * larger ring or the kernel too (PT is exclusive per CPU: the old rings go first, and
 * come back as they were if the new ones cannot be had). 0, or -errno with `why` set.
 */
static int pt_rings_for(struct daemon *d, const struct rule_rt *rt, char *why, size_t size)
{
	uint64_t have = d->pt ? pt_capture__buffer_size(d->pt) : 0, want = rt->r.buffer_size;
	bool kernel = pt_rule_wants_kernel(d, rt), had_kernel = pt_capture__kernel(d->pt);
	char again[256];
	int err;

	if (d->pt && (!want || want <= have) && (!kernel || had_kernel))
		return 0;
	if (want < have)
		want = have;
	pt_rings_close(d);
	err = pt_rings_open(d, want, kernel, why, size);
	if (err && have && pt_rings_open(d, have, had_kernel, again, sizeof(again)))
		dlog_event("error", NULL, "pt_rings", NULL, "the PT rings could not be opened "
			   "again: %s", again);
	return err;
}

/* No armed pt rule is left (a reload): the rings go. */
static void pt_rings_sync(struct daemon *d)
{
	unsigned i;

	for (i = 0; i < d->nr_rules; i++)
		if (d->rules[i] && d->rules[i]->pt && d->rules[i]->state == RULE_ARMED)
			return;
	if (d->pt)
		dlog_event("info", NULL, "pt_rings", NULL, "no pt rule armed: the PT rings are "
			   "closed");
	pt_rings_close(d);
}

/* ---- arming ---- */

/* A plane rule's trigger, process and kernel-enforced budget. */
static struct trigger_scope plane_scope(const struct rule_rt *rt)
{
	struct trigger_scope sc = {
		.tgid = rt->r.pid,
		.nth = rt->r.opts.nth,
		.max = kernel_max(rt),
	};

	if (rt->kernel_budget && rt->state == RULE_ARMED)
		sc.cooldown_ns = rt->r.cooldown_ns;
	return sc;
}

static void report_armed(const struct rule_rt *rt)
{
	const struct rule *r = &rt->r;

	if (rt->state == RULE_ARMED)
		dlog_event("info", r->name, "armed", NULL, "armed: %s, %s", r->trigger_desc,
			   rt->pt ? "pt capture on the system-wide rings" :
			   rt->capture ? "capture" : "events only");
	else
		dlog_event(rt->state == RULE_FAILED ? "error" : "warning", r->name,
			   rule_state_names[rt->state], NULL, "%s: %s", rule_state_names[rt->state],
			   rt->why);
}

/*
 * Put rule `rt` into the trigger plane (loaded with the first rule): a slot of its own,
 * its probes attached, nothing else touched. With `pred`, the rule it replaces (same
 * name, changed), make-before-break: the new slot is attached while the old one still
 * fires, takes over its spent hour and cooldown, and then one store hands the rule over.
 * Returns 0, or -errno with the rule failed and its reason set.
 */
static int plane_arm(struct daemon *d, struct rule_rt *rt, struct rule_rt *pred)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = &d->plane };
	struct trigger_scope scope = plane_scope(rt);
	int err, slot;

	if (!d->plane) {
		err = triggers__plane_new(&d->plane);
		if (err) {
			snprintf(rt->why, sizeof(rt->why), "cannot load the trigger plane: %s (see "
				 "the error above)", strerror(-err));
			goto fail;
		}
		if (epoll_ctl(d->epfd, EPOLL_CTL_ADD, triggers__ringbuf_fd(d->plane), &ev))
			dlog_event("error", NULL, "plane", NULL, "cannot watch the trigger plane's "
				   "ring buffer: %s", strerror(errno));
	}
	if (pred && (!pred->in_plane || pred->plane_index < 0))
		pred = NULL;
	if (pred) {
		/* the same hour and cooldown: a change of the rule is no new budget */
		rt->hour_start = pred->hour_start;
		rt->hour_count = pred->hour_count;
		rt->day_start = pred->day_start;
		rt->day_count = pred->day_count;
		rt->day_bytes = pred->day_bytes;
		rt->last_cooldown_ns = pred->last_cooldown_ns;
	}
	err = triggers__plane_add(d->plane, &rt->r.opts.triggers[0], &scope,
				  pred ? pred->plane_index : -1, &slot);
	if (err == -ENOSPC && triggers__plane_rules(d->plane) >= PLANE_MAX_RULES) {
		snprintf(rt->why, sizeof(rt->why), "the trigger plane is full: it holds at most %d "
			 "rules without a capture child (PLANE_MAX_RULES): merge or remove rules",
			 PLANE_MAX_RULES);
		goto fail;
	}
	if (err == -ENOSPC) {
		snprintf(rt->why, sizeof(rt->why), "the trigger plane holds at most %d rules of "
			 "each of the kinds run-queue latency, syscall latency and tracepoint "
			 "(PLANE_MAX_LATENCY_RULES): merge or remove rules", PLANE_MAX_LATENCY_RULES);
		goto fail;
	}
	if (err) {
		snprintf(rt->why, sizeof(rt->why), "cannot arm the trigger: %s (see the error "
			 "above)", strerror(-err));
		goto fail;
	}
	rt->plane_index = slot;
	d->plane_rules[slot] = rt;
	if (kernel_max(rt) || rt->last_cooldown_ns)
		triggers__set_index_budget(d->plane, slot, kernel_max(rt),
					   kernel_max(rt) ? rt->hour_count : 0,
					   rt->last_cooldown_ns);
	if (pred)
		triggers__plane_activate(d->plane, slot);
	d->plane_added++;
	return 0;

fail:
	rt->state = RULE_FAILED;
	return err;
}

/* Take rule `rt` out of the plane: its slot's probes detached, the slot freed. */
static void plane_disarm(struct daemon *d, struct rule_rt *rt)
{
	if (!d->plane || rt->plane_index < 0)
		return;
	/* what waits in the ring is still this rule's (and the others') */
	triggers__consume(d->plane, on_event, d);
	read_kernel_counters(d, rt);
	triggers__plane_remove(d->plane, rt->plane_index);
	d->plane_rules[rt->plane_index] = NULL;
	rt->plane_index = -1;
	d->plane_removed++;
}

/*
 * A capture rule whose child ended with its budget spent: its trigger goes into the plane
 * as a slot that only counts (on_event(): a fire, suppressed `budget`), the target being
 * no longer stepped, until the tick respawns the child in the next window (spent_disarm()
 * first: a stepped target must not hit the plane's probe too).
 */
static void spent_arm(struct daemon *d, struct rule_rt *rt)
{
	enum rule_state state = rt->state;
	char why[sizeof(rt->why)];

	if (rt->plane_index >= 0)
		return;
	memcpy(why, rt->why, sizeof(why));
	if (plane_arm(d, rt, NULL)) {
		dlog_event("warning", rt->r.name, "budget_spent", NULL, "fires are not counted "
			   "until the next window: %s", rt->why);
		rt->state = state;
		memcpy(rt->why, why, sizeof(why));
		return;
	}
	snprintf(rt->why, sizeof(rt->why), "budget spent (max_per_hour %" PRIu64 ", max_per_day "
		 "%" PRIu64 "): fires are counted as suppressed until the next window",
		 rt->r.max_per_hour, rt->r.max_per_day);
}

static void spent_disarm(struct daemon *d, struct rule_rt *rt)
{
	if (rt->plane_index < 0)
		return;
	plane_disarm(d, rt);
	rt->why[0] = '\0';
}

/* A changed rule's counters go on under its name, in the rule that replaced it. */
static void carry_counters(struct rule_rt *rt)
{
	struct rule_rt *succ = rt->successor;
	size_t k;

	if (!succ)
		return;
	succ->fires += rt->fires + rt->k_fires;
	succ->events += rt->events;
	for (k = 0; k < NR_SUPPRESS; k++)
		succ->suppressed[k] += rt->suppressed[k] + rt->k_suppressed[k];
	succ->seq += rt->seq;
	memcpy(succ->last_fire, rt->last_fire, sizeof(succ->last_fire));
}

static void arm_rule(struct daemon *d, struct rule_rt *rt, struct rule_rt *pred)
{
	const struct rule *r = &rt->r;
	char why[512] = "";
	bool pt = pt_backend_ops.usable(why, sizeof(why));
	const char *backend = NULL;
	int err;

	rt->wd = -1;
	rt->plane_index = -1;
	if (r->pid && !pid_alive(r->pid)) {
		rt->state = RULE_UNAVAILABLE;
		snprintf(rt->why, sizeof(rt->why), "match.pid %u: no such process", r->pid);
		goto report;
	}
	switch (r->backend) {
	case RULE_BACKEND_EVENTS_ONLY:
		break;
	case RULE_BACKEND_SINGLESTEP:
		backend = "singlestep";
		break;
	case RULE_BACKEND_PT:
	case RULE_BACKEND_AUTO:
		if (pt) {
			/* into the plane, snapshotting the system-wide rings */
			rt->pt = true;
			err = pt_rings_for(d, rt, why, sizeof(why));
			if (err)
				snprintf(rt->why, sizeof(rt->why), "the system-wide PT rings: %s",
					 why);
		} else if (r->backend == RULE_BACKEND_AUTO && r->pid)
			backend = "singlestep";
		else
			snprintf(rt->why, sizeof(rt->why), "backend pt: %s", why);
		if (rt->why[0])
			rt->state = RULE_UNAVAILABLE;
		break;
	}
	if (backend) {
		rt->capture = true;
		/* not in the spool: a full spool must not fail the capture itself */
		snprintf(rt->workdir, sizeof(rt->workdir), "%s/" WORK_DIR "/%s", d->state_dir,
			 r->name);
		mkdir(rt->workdir, 0700);
		rt->wd = inotify_add_watch(d->ifd, rt->workdir, IN_MOVED_TO | IN_CLOSE_WRITE);
		err = spawn_capture(d, rt, backend);
		if (err) {
			rt->state = RULE_FAILED;
			snprintf(rt->why, sizeof(rt->why), "cannot start the capture: %s",
				 strerror(-err));
		}
		goto report;
	}
	/* events-only, pt, or an unavailable rule whose fires are counted: into the plane */
	rt->in_plane = true;
	rt->kernel_budget = !needs_user_filter(r);
	plane_arm(d, rt, pred);
report:
	report_armed(rt);
}

static void stop_child(struct rule_rt *rt, bool wait_for_it)
{
	int status, i;

	if (!rt->child)
		return;
	if (!rt->child_stopping)
		kill(rt->child, SIGTERM);
	rt->child_stopping = true;
	if (!wait_for_it)
		return;
	for (i = 0; i < CHILD_STOP_TIMEOUT_S * 10; i++) {
		if (waitpid(rt->child, &status, WNOHANG) == rt->child) {
			rt->child = 0;
			return;
		}
		usleep(100000);
	}
	kill(rt->child, SIGKILL);
	waitpid(rt->child, &status, 0);
	rt->child = 0;
}

static void disarm_rule(struct daemon *d, struct rule_rt *rt)
{
	struct pending_capture *pc;

	stop_child(rt, true);
	if (rt->capture)
		scan_workdir(d, rt);	/* what the child wrote before it stopped */
	/* its captures being decoded are spooled all the same, without its counters */
	for (pc = d->decoding; pc; pc = pc->next)
		if (pc->rt == rt)
			pc->rt = NULL;
	if (rt->in_plane || rt->plane_index >= 0)
		plane_disarm(d, rt);
	if (rt->wd >= 0)
		inotify_rm_watch(d->ifd, rt->wd);
	rt->wd = -1;
	if (rt->workdir[0])
		rm_tree(rt->workdir);
}

static void rule_free(struct rule_rt *rt)
{
	if (!rt)
		return;
	rule_clear(&rt->r);
	free(rt);
}

/* ---- configuration, reload ---- */

static void watch_config(struct daemon *d)
{
	char dir[PATH_MAX];
	const char *slash = strrchr(d->config_path, '/');

	if (d->cfg_wd >= 0)
		inotify_rm_watch(d->ifd, d->cfg_wd);
	if (d->rules_wd >= 0)
		inotify_rm_watch(d->ifd, d->rules_wd);
	snprintf(dir, sizeof(dir), "%.*s", slash ? (int)(slash - d->config_path) : 1,
		 slash ? d->config_path : ".");
	if (!dir[0])
		strcpy(dir, "/");
	d->cfg_wd = inotify_add_watch(d->ifd, dir, IN_CLOSE_WRITE | IN_MOVED_TO | IN_MOVED_FROM |
				      IN_DELETE | IN_CREATE | IN_ATTRIB);
	d->rules_wd = -1;
	if (d->cfg && d->cfg->rules_dir)
		d->rules_wd = inotify_add_watch(d->ifd, d->cfg->rules_dir, IN_CLOSE_WRITE |
						IN_MOVED_TO | IN_MOVED_FROM | IN_DELETE | IN_ATTRIB);
}

/* The unmatched old rule named `name` (a rule the new configuration changed), or NULL. */
static struct rule_rt *changed_from(struct daemon *d, const char *name)
{
	unsigned j;

	for (j = 0; j < d->nr_rules; j++)
		if (d->rules[j] && !strcmp(d->rules[j]->r.name, name))
			return d->rules[j];
	return NULL;
}

static void disarm_old(struct daemon *d, unsigned j)
{
	dlog_event("info", d->rules[j]->r.name, "disarmed", NULL, "disarmed (removed or changed)");
	disarm_rule(d, d->rules[j]);
	carry_counters(d->rules[j]);
	rule_free(d->rules[j]);
	d->rules[j] = NULL;
}

/*
 * Take the new configuration: unchanged rules keep running untouched (their probes, kernel
 * counters and budgets), removed ones are disarmed, new ones (and those that failed)
 * armed; a changed plane rule is armed before its old version is disarmed
 * (make-before-break, plane_arm()).
 */
static void apply_config(struct daemon *d, struct config *c)
{
	struct rule_rt **next, **pred, **old_rules;
	unsigned i, j, nr_old;

	next = calloc(c->nr_rules ?: 1, sizeof(*next));
	pred = calloc(c->nr_rules ?: 1, sizeof(*pred));
	if (!next || !pred) {
		free(next);
		free(pred);
		config_free(c);
		return;
	}
	for (i = 0; i < c->nr_rules; i++) {
		for (j = 0; j < d->nr_rules; j++) {
			struct rule_rt *old = d->rules[j];

			/* a rule that failed is armed again: the cause may be gone */
			if (old && old->state != RULE_FAILED &&
			    !strcmp(old->r.fingerprint, c->rules[i].fingerprint)) {
				next[i] = old;
				d->rules[j] = NULL;
				break;
			}
		}
	}
	for (i = 0; i < c->nr_rules; i++)
		if (!next[i])
			pred[i] = changed_from(d, c->rules[i].name);
	/* the removed rules, and changed ones with a capture child (it goes before the new) */
	for (j = 0; j < d->nr_rules; j++) {
		bool handover = false;

		if (!d->rules[j])
			continue;
		for (i = 0; i < c->nr_rules && !handover; i++)
			handover = pred[i] == d->rules[j] && d->rules[j]->in_plane;
		if (handover)
			continue;
		/* no handover from a rule about to be freed */
		for (i = 0; i < c->nr_rules; i++)
			if (pred[i] == d->rules[j])
				pred[i] = NULL;
		disarm_old(d, j);
	}
	old_rules = d->rules;
	nr_old = d->nr_rules;
	if (d->cfg)
		config_free(d->cfg);
	d->cfg = c;
	d->rules = next;
	d->nr_rules = c->nr_rules;
	dlog_set_json(c->log_json);
	spool__set_quota(d->spool, c->spool_max_bytes, c->spool_max_files);
	if (d->decoder)
		decode_worker__set_share(d->decoder, c->decode_cpu_share);
	for (i = 0; i < c->nr_rules; i++) {
		if (next[i]) {
			rule_clear(&c->rules[i]);
			continue;
		}
		next[i] = calloc(1, sizeof(*next[i]));
		if (!next[i])
			continue;
		next[i]->r = c->rules[i];	/* moved: the config forgets it */
		memset(&c->rules[i], 0, sizeof(c->rules[i]));
		arm_rule(d, next[i], pred[i]);
		/* its counters go on under its name, whatever it became */
		if (pred[i])
			pred[i]->successor = next[i];
	}
	/* the old versions of changed rules, now that the new ones fire */
	d->rules = old_rules;
	d->nr_rules = nr_old;
	for (j = 0; j < nr_old; j++)
		if (old_rules[j])
			disarm_old(d, j);
	d->rules = next;
	d->nr_rules = c->nr_rules;
	free(old_rules);
	free(pred);
	/* the rings go once no pt rule is armed (the old versions are gone now) */
	pt_rings_sync(d);
	if (d->plane && (d->plane_added || d->plane_removed)) {
		struct json_object *o = json_object_new_object();

		add_u64(o, "added", d->plane_added);
		add_u64(o, "removed", d->plane_removed);
		dlog_event("info", NULL, "plane", o, "trigger plane: one BPF object, %d rules",
			   triggers__plane_rules(d->plane));
	}
	d->plane_added = d->plane_removed = 0;
	d->dirty = true;
}

static void reload(struct daemon *d, const char *why)
{
	struct config *c;
	int err;

	sym_sd_notify(0, "RELOADING=1");
	err = config_load(d->config_path, d->rules_dir, &c);
	if (err) {
		d->reloads_failed++;
		dlog_event("error", NULL, "reload_failed", NULL, "reload (%s): the new configuration "
			   "is invalid (errors above); still running the previous rules", why);
	} else if (strcmp(c->spool_dir, d->cfg->spool_dir)) {
		d->reloads_failed++;
		dlog_event("error", NULL, "reload_failed", NULL, "reload (%s): spool.dir changed "
			   "(%s -> %s): restart the daemon to move the spool", why,
			   d->cfg->spool_dir, c->spool_dir);
		config_free(c);
	} else {
		d->reloads_ok++;
		apply_config(d, c);
		dlog_event("info", NULL, "reloaded", NULL, "reload (%s): %u rules", why, d->nr_rules);
	}
	watch_config(d);
	sym_sd_notify(0, "READY=1");
}

/* ---- metrics, state ---- */

static void esc_label(FILE *f, const char *s)
{
	for (; *s; s++) {
		if (*s == '\\' || *s == '"')
			fputc('\\', f);
		if (*s == '\n') {
			fputs("\\n", f);
			continue;
		}
		fputc(*s, f);
	}
}

/* `metric{rule="RULE"`: the caller adds its other labels, `}` and the value. */
static void sample_head(FILE *f, const char *metric, const char *rule)
{
	fprintf(f, "%s{rule=\"", metric);
	esc_label(f, rule);
	fputc('"', f);
}

struct prog_ctx {
	FILE *f;
	const struct daemon *d;
	bool time;
};

static int prog_stat(void *ctx, const char *name, __u64 run_ns, __u64 runs)
{
	struct prog_ctx *pc = ctx;
	const char *us = strrchr(name, '_'), *rule = "";
	char *end;
	unsigned long k;

	/*
	 * A per-trigger copy (uprobe_hit_3) is its rule's; a program every rule of its kind
	 * shares (sched_switch, sys_exit) has the rule label empty.
	 */
	if (us && us[1]) {
		k = strtoul(us + 1, &end, 10);
		if (!*end && k < PLANE_MAX_RULES && pc->d->plane_rules[k])
			rule = pc->d->plane_rules[k]->r.name;
	}
	sample_head(pc->f, pc->time ? "ptbpf_bpf_run_seconds_total" : "ptbpf_bpf_runs_total",
		    rule);
	if (pc->time)
		fprintf(pc->f, ",program=\"%s\"} %.9f\n", name, run_ns / 1e9);
	else
		fprintf(pc->f, ",program=\"%s\"} %llu\n", name, (unsigned long long)runs);
	return 0;
}

/*
 * The kernel counts BPF programs' run time while someone holds a BPF_ENABLE_STATS fd (ours),
 * or while the sysctl kernel.bpf_stats_enabled is 1 (an operator's choice).
 */
static bool bpf_stats_on(const struct daemon *d)
{
	char buf[8] = "";

	if (d->stats_fd >= 0)
		return true;
	read_line("/proc/sys/kernel/bpf_stats_enabled", buf, sizeof(buf));
	return buf[0] == '1';
}

#define FAMILY(f, name, type, help) fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type)

static char *render_metrics(struct daemon *d, size_t *len)
{
	struct spool_usage u = {};
	unsigned states[NR_RULE_STATES] = {}, i, k;
	char *buf = NULL;
	FILE *f;

	f = open_memstream(&buf, len);
	if (!f)
		return NULL;
	for (i = 0; i < d->nr_rules; i++)
		states[d->rules[i]->state]++;
	spool__usage(d->spool, &u);
	FAMILY(f, "ptbpf_build_info", "gauge", "ptbpf's version; always 1");
	fprintf(f, "ptbpf_build_info{version=\"%s\"} 1\n", PTBPF_VERSION);
	FAMILY(f, "ptbpf_rules", "gauge", "Rules by state (armed, unavailable, failed)");
	for (k = 0; k < NR_RULE_STATES; k++)
		fprintf(f, "ptbpf_rules{state=\"%s\"} %u\n", rule_state_names[k], states[k]);
#define PER_RULE(metric, mtype, mhelp, expr)                                  \
	do {                                                                      \
		FAMILY(f, metric, mtype, mhelp);                                  \
		for (i = 0; i < d->nr_rules; i++) {                               \
			struct rule_rt *rt = d->rules[i];                          \
			sample_head(f, metric, rt->r.name);                            \
			fprintf(f, "} %llu\n", (unsigned long long)(expr));     \
		}                                                                 \
	} while (0)
	PER_RULE("ptbpf_rule_fires_total", "counter",
		 "Fires of each rule's trigger that matched it (captured, recorded or suppressed)",
		 rt->fires + rt->k_fires);
	PER_RULE("ptbpf_rule_events_total", "counter",
		 "Fires an events-only rule recorded (logged as a JSON event)", rt->events);
	FAMILY(f, "ptbpf_captures_total", "counter", "Captures by result (spooled, failed)");
	for (i = 0; i < d->nr_rules; i++) {
		struct rule_rt *rt = d->rules[i];

		sample_head(f, "ptbpf_captures_total", rt->r.name);
		fprintf(f, ",result=\"spooled\"} %llu\n", (unsigned long long)rt->captures_ok);
		sample_head(f, "ptbpf_captures_total", rt->r.name);
		fprintf(f, ",result=\"failed\"} %llu\n", (unsigned long long)rt->captures_failed);
	}
	FAMILY(f, "ptbpf_captures_suppressed_total", "counter",
	       "Fires that did not become a capture or event, by reason");
	for (i = 0; i < d->nr_rules; i++) {
		struct rule_rt *rt = d->rules[i];

		for (k = 0; k < NR_SUPPRESS; k++) {
			sample_head(f, "ptbpf_captures_suppressed_total", rt->r.name);
			fprintf(f, ",reason=\"%s\"} %llu\n", suppress_reason_names[k],
				(unsigned long long)(rt->suppressed[k] + rt->k_suppressed[k]));
		}
	}
	PER_RULE("ptbpf_capture_bytes_total", "counter", "Bytes spooled (compressed captures)",
		 rt->bytes);
	FAMILY(f, "ptbpf_capture_seconds", "histogram", "From a rule's fire to its capture spooled");
	for (i = 0; i < d->nr_rules; i++) {
		struct rule_rt *rt = d->rules[i];

		for (k = 0; k < NR_LATENCY_BUCKETS; k++) {
			sample_head(f, "ptbpf_capture_seconds_bucket", rt->r.name);
			fprintf(f, ",le=\"%g\"} %llu\n", latency_buckets[k],
				(unsigned long long)rt->lat_bucket[k]);
		}
		sample_head(f, "ptbpf_capture_seconds_bucket", rt->r.name);
		fprintf(f, ",le=\"+Inf\"} %llu\n", (unsigned long long)rt->lat_count);
		sample_head(f, "ptbpf_capture_seconds_sum", rt->r.name);
		fprintf(f, "} %.6f\n", rt->lat_sum);
		sample_head(f, "ptbpf_capture_seconds_count", rt->r.name);
		fprintf(f, "} %llu\n", (unsigned long long)rt->lat_count);
	}
	FAMILY(f, "ptbpf_spool_bytes", "gauge", "Bytes of complete captures in the spool");
	fprintf(f, "ptbpf_spool_bytes %llu\n", (unsigned long long)u.bytes);
	FAMILY(f, "ptbpf_spool_files", "gauge", "Complete captures in the spool");
	fprintf(f, "ptbpf_spool_files %llu\n", (unsigned long long)u.files);
	FAMILY(f, "ptbpf_spool_evicted_total", "counter", "Captures the spool quota removed");
	fprintf(f, "ptbpf_spool_evicted_total %llu\n", (unsigned long long)d->spool_evicted);
	FAMILY(f, "ptbpf_config_reloads_total", "counter", "Configuration reloads by result");
	fprintf(f, "ptbpf_config_reloads_total{result=\"success\"} %llu\n",
		(unsigned long long)d->reloads_ok);
	fprintf(f, "ptbpf_config_reloads_total{result=\"failure\"} %llu\n",
		(unsigned long long)d->reloads_failed);
	/*
	 * Absent, not 0, while the kernel keeps no run-time statistics (BPF_ENABLE_STATS
	 * refused: no CAP_SYS_ADMIN, logged at start): a 0 would say the programs never ran.
	 */
	if (bpf_stats_on(d)) {
		FAMILY(f, "ptbpf_bpf_run_seconds_total", "counter",
		       "Run time of the rules' BPF programs (BPF_ENABLE_STATS)");
		struct prog_ctx pt = { f, d, true }, pr = { f, d, false };

		triggers__prog_stats(d->plane, prog_stat, &pt);
		FAMILY(f, "ptbpf_bpf_runs_total", "counter", "Runs of the rules' BPF programs");
		triggers__prog_stats(d->plane, prog_stat, &pr);
	}
	if (d->decoder) {
		struct decode_worker_stats ds;

		decode_worker__stats(d->decoder, &ds);
		FAMILY(f, "ptbpf_decode_cpu_share", "gauge",
		       "Share of one core the decode worker may use (budget.decode_cpu_share)");
		fprintf(f, "ptbpf_decode_cpu_share %g\n", d->cfg->decode_cpu_share);
		FAMILY(f, "ptbpf_decode_cpu_seconds_total", "counter",
		       "CPU time of the decode worker (decode: host), finished decodes");
		fprintf(f, "ptbpf_decode_cpu_seconds_total %.6f\n", ds.cpu_ns / 1e9);
		FAMILY(f, "ptbpf_decode_paused_seconds_total", "counter",
		       "Time the decode worker paused to stay within its CPU share");
		fprintf(f, "ptbpf_decode_paused_seconds_total %.6f\n", ds.paused_ns / 1e9);
		FAMILY(f, "ptbpf_decodes_total", "counter", "Decodes of captures by result");
		fprintf(f, "ptbpf_decodes_total{result=\"ok\"} %llu\n",
			(unsigned long long)ds.decoded);
		fprintf(f, "ptbpf_decodes_total{result=\"failed\"} %llu\n",
			(unsigned long long)ds.failed);
		FAMILY(f, "ptbpf_decode_queue", "gauge", "Captures waiting for or in the decoder");
		fprintf(f, "ptbpf_decode_queue %u\n", ds.queued);
	}
	FAMILY(f, "ptbpf_daemon_cpu_seconds_total", "counter", "CPU time of the daemon itself");
	fprintf(f, "ptbpf_daemon_cpu_seconds_total %.6f\n", self_cpu_seconds());
	if (d->uploader)
		uploader__write_metrics(d->uploader, f);
	if (fclose(f)) {
		free(buf);
		return NULL;
	}
	return buf;
}

/* What `ptbpf daemon status` shows, as the status socket sends it. */
static struct json_object *status_json(struct daemon *d)
{
	struct json_object *s = json_object_new_object(), *rules = json_object_new_array();
	struct spool_usage u = {};
	unsigned i, k;

	spool__usage(d->spool, &u);
	add_u64(s, "pid", getpid());
	add_str(s, "config", d->config_path);
	add_str(s, "spool", spool__dir(d->spool));
	add_u64(s, "spool_bytes", u.bytes);
	add_u64(s, "spool_files", u.files);
	add_u64(s, "spool_max_bytes", d->cfg->spool_max_bytes);
	add_u64(s, "spool_evicted", d->spool_evicted);
	add_u64(s, "reloads_ok", d->reloads_ok);
	add_u64(s, "reloads_failed", d->reloads_failed);
	json_object_object_add(s, "ready", json_object_new_boolean(d->ready));
	if (d->pt) {
		add_str(s, "pt_rings", pt_capture__describe(d->pt));
		add_u64(s, "pt_snapshots", pt_capture__snapshots(d->pt));
	}
	for (i = 0; i < d->nr_rules; i++) {
		struct rule_rt *rt = d->rules[i];
		struct json_object *r = json_object_new_object(), *sup = json_object_new_object();

		add_str(r, "name", rt->r.name);
		add_str(r, "state", rule_state_names[rt->state]);
		if (rt->why[0])
			add_str(r, "why", rt->why);
		add_str(r, "backend", rule_backend_name(rt->r.backend));
		add_str(r, "trigger", rt->r.trigger_desc);
		add_u64(r, "fires", rt->fires + rt->k_fires);
		add_u64(r, "events", rt->events);
		add_u64(r, "captures", rt->captures_ok);
		add_u64(r, "captures_failed", rt->captures_failed);
		add_u64(r, "bytes", rt->bytes);
		for (k = 0; k < NR_SUPPRESS; k++)
			add_u64(sup, suppress_reason_names[k], rt->suppressed[k] + rt->k_suppressed[k]);
		json_object_object_add(r, "suppressed", sup);
		if (rt->last_fire[0])
			add_str(r, "last", rt->last_fire);
		if (rt->child)
			add_u64(r, "capture_pid", rt->child);
		json_object_array_add(rules, r);
	}
	json_object_object_add(s, "rules", rules);
	return s;
}

/* Connections on the status socket: the status for root, a refusal (logged) for others. */
static void serve_status(struct daemon *d)
{
	struct json_object *s;
	const char *text;
	uid_t uid;
	pid_t pid;

	/* the kernel's counters as of now, not of the last tick */
	for (unsigned i = 0; i < d->nr_rules; i++)
		read_kernel_counters(d, d->rules[i]);
	s = status_json(d);
	text = json_object_to_json_string_ext(s, JSON_C_TO_STRING_PLAIN |
					      JSON_C_TO_STRING_NOSLASHESCAPE);
	status_sock__serve(d->status_fd, text, strlen(text), &uid, &pid);
	json_object_put(s);
	if (uid != (uid_t)-1)
		dlog_event("warning", NULL, "status_refused", NULL, "status socket: refused pid %d "
			   "(uid %u): only root may read the status", (int)pid, (unsigned)uid);
}

static void publish(struct daemon *d)
{
	char status[256];
	uint64_t fires = 0, captures = 0;
	unsigned armed = 0, i;
	size_t len = 0;
	char *text;

	for (i = 0; i < d->nr_rules; i++) {
		read_kernel_counters(d, d->rules[i]);
		fires += d->rules[i]->fires + d->rules[i]->k_fires;
		captures += d->rules[i]->captures_ok;
		armed += d->rules[i]->state == RULE_ARMED;
	}
	text = render_metrics(d, &len);
	if (text) {
		if (d->cfg->textfile_dir) {
			int err = metrics_write_textfile(d->cfg->textfile_dir, text, len);

			if (err)
				dlog_event("error", NULL, "metrics", NULL, "cannot write %s/ptbpf.prom: "
					   "%s", d->cfg->textfile_dir, strerror(-err));
		}
		metrics_server__publish(d->http, text, len, d->ready);
		free(text);
	}
	snprintf(status, sizeof(status), "STATUS=%u/%u rules armed, %" PRIu64 " fires, %" PRIu64
		 " captures", armed, d->nr_rules, fires, captures);
	sym_sd_notify(0, status);
	d->dirty = false;
}

static void start_http(struct daemon *d)
{
	if (d->http_listen && d->cfg->listen && !strcmp(d->http_listen, d->cfg->listen))
		return;
	metrics_server__stop(d->http);
	d->http = NULL;
	free(d->http_listen);
	d->http_listen = NULL;
	if (!d->cfg->listen)
		return;
	if (!metrics_server__start(d->cfg->listen, &d->http))
		d->http_listen = strdup(d->cfg->listen);
}

/* ---- the loop ---- */

static void on_child_exit(struct daemon *d)
{
	int status;
	pid_t pid;
	unsigned i;

	while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
		for (i = 0; i < d->nr_rules; i++) {
			struct rule_rt *rt = d->rules[i];
			char last[512];

			if (rt->child != pid)
				continue;
			rt->child = 0;
			scan_workdir(d, rt);
			if (rt->child_stopping)
				break;
			last_log_line(rt->workdir, last, sizeof(last));
			if (!pid_alive(rt->r.pid)) {
				rt->state = RULE_UNAVAILABLE;
				rt->target_gone = true;
				snprintf(rt->why, sizeof(rt->why), "match.pid %u exited", rt->r.pid);
				dlog_event("warning", rt->r.name, "target_exited", NULL, "the target, "
					   "pid %u, exited; the rule waits for a reload", rt->r.pid);
			} else if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
				/* its --max-snapshots (the budget) reached: the tick restarts it */
				dlog_event("info", rt->r.name, "capture_ended", NULL, "the capture "
					   "ended: its budget is spent until the next window");
				spent_arm(d, rt);
			} else {
				/* not restarted (no loop of failing children): a reload re-arms */
				rt->state = RULE_FAILED;
				snprintf(rt->why, sizeof(rt->why), "the capture failed: %s",
					 last[0] ? last : "see its log");
				dlog_event("error", rt->r.name, "capture_failed", NULL, "%s", rt->why);
			}
			break;
		}
	}
	d->dirty = true;
}

static void tick(struct daemon *d)
{
	uint64_t now_s = mono_ns() / 1000000000ull;
	unsigned i;

	for (i = 0; i < d->nr_rules; i++) {
		struct rule_rt *rt = d->rules[i];

		roll_windows(d, rt, now_s);
		/* a capture whose budget ran out starts again in its next window */
		if (rt->capture && !rt->child && rt->state == RULE_ARMED && pid_alive(rt->r.pid) &&
		    capture_budget_left(rt)) {
			spent_disarm(d, rt);
			spawn_capture(d, rt, "singlestep");
		}
	}
	if (d->watchdog_usec)
		sym_sd_notify(0, "WATCHDOG=1");
	/* uploads progress on their own threads: their metrics are news too */
	if (d->uploader && uploader__generation(d->uploader) != d->upload_generation) {
		d->upload_generation = uploader__generation(d->uploader);
		d->dirty = true;
	}
	if (d->dirty || ++d->ticks % PUBLISH_EVERY == 0)
		publish(d);
}

static bool is_config_name(const struct daemon *d, const char *name)
{
	const char *base = strrchr(d->config_path, '/');
	size_t n = strlen(name);

	base = base ? base + 1 : d->config_path;
	return !strcmp(name, base) || (name[0] != '.' && n > 5 && !strcmp(name + n - 5, ".yaml"));
}

static int handle_inotify(struct daemon *d)
{
	char buf[8192] __attribute__((aligned(__alignof__(struct inotify_event))));
	bool config_changed = false;
	ssize_t n;
	unsigned i;

	while ((n = read(d->ifd, buf, sizeof(buf))) > 0) {
		char *p = buf;

		while (p < buf + n) {
			struct inotify_event *ev = (struct inotify_event *)p;

			p += sizeof(*ev) + ev->len;
			if (ev->wd == d->cfg_wd || ev->wd == d->rules_wd) {
				/*
				 * Only the YAML files: the directory may hold anything else
				 * (editors' temp files, the metrics textfile...).
				 */
				if (ev->len && is_config_name(d, ev->name))
					config_changed = true;
				continue;
			}
			for (i = 0; i < d->nr_rules; i++)
				if (d->rules[i]->wd == ev->wd && ev->len && ev->name[0] != '.' &&
				    strlen(ev->name) > 5 &&
				    !strcmp(ev->name + strlen(ev->name) - 5, ".data")) {
					char path[PATH_MAX + 300];

					snprintf(path, sizeof(path), "%s/%s", d->rules[i]->workdir,
						 ev->name);
					if (!access(path, F_OK))
						process_capture(d, d->rules[i], path, false);
				}
		}
	}
	if (config_changed) {
		struct itimerspec its = { .it_value.tv_nsec = RELOAD_DEBOUNCE_MS * 1000000L };

		timerfd_settime(d->rfd, 0, &its, NULL);
	}
	return 0;
}

static int run_loop(struct daemon *d)
{
	struct epoll_event evs[32];
	int n, i;

	while (!d->stopping) {
		n = epoll_wait(d->epfd, evs, 32, -1);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		for (i = 0; i < n; i++) {
			void *ptr = evs[i].data.ptr;
			uint64_t exp;

			if (ptr == &d->sfd) {
				struct signalfd_siginfo si;

				while (read(d->sfd, &si, sizeof(si)) == sizeof(si)) {
					if (si.ssi_signo == SIGHUP)
						reload(d, "SIGHUP");
					else if (si.ssi_signo == SIGCHLD)
						on_child_exit(d);
					else
						d->stopping = true;
				}
			} else if (ptr == &d->tfd) {
				if (read(d->tfd, &exp, sizeof(exp)) > 0)
					tick(d);
			} else if (ptr == &d->rfd) {
				if (read(d->rfd, &exp, sizeof(exp)) > 0)
					reload(d, "configuration changed");
			} else if (ptr == &d->ifd) {
				handle_inotify(d);
			} else if (ptr == &d->status_fd) {
				serve_status(d);
			} else if (ptr == &d->decoder) {
				decodes_done(d);
			} else if (ptr == &d->pt) {
				if (d->pt)
					pt_capture__drain(d->pt);
			} else {
				/* the trigger plane (ptr == &d->plane) */
				if (d->plane)
					triggers__consume(d->plane, on_event, d);
			}
		}
	}
	return 0;
}

static int setup_fds(struct daemon *d)
{
	struct itimerspec its = {
		.it_interval.tv_nsec = TICK_MS * 1000000L,
		.it_value.tv_nsec = TICK_MS * 1000000L,
	};
	struct epoll_event ev = { .events = EPOLLIN };
	sigset_t mask;

	if (TICK_MS >= 1000) {
		its.it_interval = (struct timespec){ TICK_MS / 1000, (TICK_MS % 1000) * 1000000L };
		its.it_value = its.it_interval;
	}
	sigemptyset(&mask);
	sigaddset(&mask, SIGHUP);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGCHLD);
	if (sigprocmask(SIG_BLOCK, &mask, NULL))
		return -errno;
	d->epfd = epoll_create1(EPOLL_CLOEXEC);
	d->sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	d->tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	d->rfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	d->ifd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
	if (d->epfd < 0 || d->sfd < 0 || d->tfd < 0 || d->rfd < 0 || d->ifd < 0)
		return -errno;
	if (timerfd_settime(d->tfd, 0, &its, NULL))
		return -errno;
	ev.data.ptr = &d->sfd;
	epoll_ctl(d->epfd, EPOLL_CTL_ADD, d->sfd, &ev);
	ev.data.ptr = &d->tfd;
	epoll_ctl(d->epfd, EPOLL_CTL_ADD, d->tfd, &ev);
	ev.data.ptr = &d->rfd;
	epoll_ctl(d->epfd, EPOLL_CTL_ADD, d->rfd, &ev);
	ev.data.ptr = &d->ifd;
	epoll_ctl(d->epfd, EPOLL_CTL_ADD, d->ifd, &ev);
	ev.data.ptr = &d->status_fd;
	epoll_ctl(d->epfd, EPOLL_CTL_ADD, d->status_fd, &ev);
	return 0;
}

static void close_fds(struct daemon *d)
{
	int *fds[] = { &d->epfd, &d->sfd, &d->tfd, &d->rfd, &d->ifd, &d->stats_fd, &d->status_fd };
	unsigned i;

	for (i = 0; i < ARRAY_SIZE(fds); i++)
		if (*fds[i] >= 0)
			close(*fds[i]);
}

/* ---- status ---- */

static int cmd_status(const char *state_dir, bool json)
{
	struct json_object *s, *rules;
	char *text = NULL;
	size_t i;
	int pid, err;

	err = status_sock__query(state_dir, &text);
	if (err == -ENOENT || err == -ECONNREFUSED) {
		elog("daemon status: no daemon answers on %s/" STATUS_SOCK_NAME " (is it running "
		     "with --state-dir %s?)\n", state_dir, state_dir);
		return 1;
	}
	if (err) {
		elog("daemon status: %s/" STATUS_SOCK_NAME ": %s%s\n", state_dir,
		     err == -EACCES ? "permission denied" : strerror(-err),
		     err == -EACCES ? " (the status is for root only: run it as root)" : "");
		return 1;
	}
	if (!strncmp(text, STATUS_SOCK_REFUSED, strlen(STATUS_SOCK_REFUSED))) {
		elog("daemon status: %s", text + strlen(STATUS_SOCK_REFUSED));
		free(text);
		return 1;
	}
	s = json_tokener_parse(text);
	free(text);
	if (!json_object_is_type(s, json_type_object)) {
		elog("daemon status: %s/" STATUS_SOCK_NAME ": the answer is not a status (a daemon "
		     "of another version?)\n", state_dir);
		json_object_put(s);
		return 1;
	}
	pid = json_object_get_int(json_object_object_get(s, "pid"));
	if (json) {
		printf("%s\n", json_object_to_json_string_ext(s, JSON_C_TO_STRING_PLAIN |
							       JSON_C_TO_STRING_NOSLASHESCAPE));
		json_object_put(s);
		return 0;
	}
	printf("ptbpf daemon, pid %d, %s, config %s\n", pid,
	       json_object_get_boolean(json_object_object_get(s, "ready")) ? "ready" : "starting",
	       json_object_get_string(json_object_object_get(s, "config")));
	printf("spool %s: %s captures, %s bytes of %s; %s evicted\n",
	       json_object_get_string(json_object_object_get(s, "spool")),
	       json_object_get_string(json_object_object_get(s, "spool_files")),
	       json_object_get_string(json_object_object_get(s, "spool_bytes")),
	       json_object_get_string(json_object_object_get(s, "spool_max_bytes")),
	       json_object_get_string(json_object_object_get(s, "spool_evicted")));
	printf("reloads: %s ok, %s failed\n",
	       json_object_get_string(json_object_object_get(s, "reloads_ok")),
	       json_object_get_string(json_object_object_get(s, "reloads_failed")));
	if (json_object_object_get(s, "pt_rings"))
		printf("system-wide PT rings: %s; %s snapshots\n",
		       json_object_get_string(json_object_object_get(s, "pt_rings")),
		       json_object_get_string(json_object_object_get(s, "pt_snapshots")));
	rules = json_object_object_get(s, "rules");
	for (i = 0; i < json_object_array_length(rules); i++) {
		struct json_object *r = json_object_array_get_idx(rules, i), *why, *last;

		printf("rule %s: %s (%s; %s)\n", json_object_get_string(json_object_object_get(r, "name")),
		       json_object_get_string(json_object_object_get(r, "state")),
		       json_object_get_string(json_object_object_get(r, "backend")),
		       json_object_get_string(json_object_object_get(r, "trigger")));
		why = json_object_object_get(r, "why");
		if (why)
			printf("  why         %s\n", json_object_get_string(why));
		printf("  fires       %s, events %s, captures %s (%s failed), %s bytes\n",
		       json_object_get_string(json_object_object_get(r, "fires")),
		       json_object_get_string(json_object_object_get(r, "events")),
		       json_object_get_string(json_object_object_get(r, "captures")),
		       json_object_get_string(json_object_object_get(r, "captures_failed")),
		       json_object_get_string(json_object_object_get(r, "bytes")));
		printf("  suppressed  %s\n", json_object_to_json_string_ext(
			       json_object_object_get(r, "suppressed"), JSON_C_TO_STRING_PLAIN));
		last = json_object_object_get(r, "last");
		if (last)
			printf("  last        %s\n", json_object_get_string(last));
	}
	json_object_put(s);
	return 0;
}

/* ---- command ---- */

static const char usage[] =
	"Usage: ptbpf daemon [--config FILE] [--rules-dir DIR] [--state-dir DIR]\n"
	"       ptbpf daemon --check-config FILE [--rules-dir DIR]\n"
	"       ptbpf daemon status [--state-dir DIR] [--json]\n"
	"\n"
	"The fleet agent: arms the rules of FILE (default " DEFAULT_CONFIG ") and of every\n"
	"*.yaml in DIR (default: rules.d beside FILE), and captures only when a rule fires,\n"
	"within its budgets, into the spool (zstd perf.data + JSON manifest). events-only\n"
	"and pt rules share one trigger plane (one BPF object); pt rules, whatever they\n"
	"match, snapshot one set of system-wide Intel PT rings (every CPU) for the fired\n"
	"process; singlestep rules (match.pid only) run a capture child each. SIGHUP or a\n"
	"change in the configuration's directory reloads: only the rules added, removed or\n"
	"changed are re-armed (a changed one before its old version goes), the others run\n"
	"on untouched. SIGTERM stops cleanly. Logs are JSON lines on stderr. See README,\n"
	"\"Fleet mode\".\n"
	"\n"
	"  -c, --config FILE       the configuration (YAML)\n"
	"      --rules-dir DIR     drop-in rules (default: rules.d beside FILE)\n"
	"      --check-config FILE validate FILE and its drop-ins, print every error with its\n"
	"                          file and line, exit 2 if any\n"
	"      --state-dir DIR     the status socket (root only) and the captures' work\n"
	"                          files (default " DEFAULT_STATE_DIR ")\n"
	"      --json              status: the state as one JSON object\n"
	"  -h, --help              this text\n"
	"\n"
	"Exit status: 0 after a clean stop (SIGTERM) or a valid --check-config; 1 when the\n"
	"daemon cannot run (spool, BPF); 2 on a usage error or an invalid configuration.\n";

static int check_config(const char *path, const char *rules_dir)
{
	struct config *c;
	int err;

	err = config_load(path, rules_dir, &c);
	if (err) {
		if (err == -ENOMEM)
			elog("%s: out of memory\n", path);
		return 2;
	}
	printf("%s: ok, %u rule%s (%u file%s)\n", path, c->nr_rules, c->nr_rules == 1 ? "" : "s",
	       c->nr_files, c->nr_files == 1 ? "" : "s");
	config_free(c);
	return 0;
}

static int ensure_state_dir(const char *dir)
{
	if (mkdir(dir, 0700) < 0 && errno != EEXIST) {
		int err = -errno;

		elog("state directory %s: %s\n", dir, strerror(errno));
		return err;
	}
	chmod(dir, 0700);
	return 0;
}

static int run_daemon(struct daemon *d)
{
	char work[PATH_MAX];
	struct config *c;
	unsigned i;
	int err, ret = 1;

	if (geteuid() != 0)
		dlog_event("warning", NULL, "start", NULL, "not running as root: attaching probes "
			   "needs CAP_BPF, CAP_PERFMON and CAP_SYS_PTRACE");
	/* sd_notify() from the start: a missing library fails here, said, not at a reload */
	if (lazylib_load(&lib_systemd))
		return 1;
	err = config_load(d->config_path, d->rules_dir, &c);
	if (err) {
		dlog_event("error", NULL, "config_invalid", NULL, "%s: invalid configuration "
			   "(errors above)", d->config_path);
		return 2;
	}
	dlog_set_json(c->log_json);
	host_info(d);
	err = ensure_state_dir(d->state_dir);
	if (err)
		goto out_cfg;
	d->status_fd = status_sock__listen(d->state_dir);
	if (d->status_fd < 0) {
		err = d->status_fd;
		dlog_event("error", NULL, "start", NULL, "status socket %s/" STATUS_SOCK_NAME ": %s",
			   d->state_dir, err == -EADDRINUSE ? "another ptbpf daemon runs on this "
			   "state directory (stop it, or give --state-dir)" : strerror(-err));
		goto out_cfg;
	}
	err = spool__open(c->spool_dir, c->spool_max_bytes, c->spool_max_files, &d->spool);
	if (err) {
		status_sock__close(d->status_fd, d->state_dir);
		d->status_fd = -1;
		goto out_cfg;
	}
	/* what a killed instance left: its capture children's files, tracefs probes */
	snprintf(work, sizeof(work), "%s/" WORK_DIR, d->state_dir);
	rm_tree(work);
	mkdir(work, 0700);
	remove_stale_probes();
	/* run time of every BPF program, while this fd is open (as bpftop does) */
	d->stats_fd = bpf_enable_stats(BPF_STATS_RUN_TIME);
	if (d->stats_fd < 0)
		dlog_event("warning", NULL, "bpf_stats_unavailable", NULL, "BPF run-time statistics "
			   "unavailable (BPF_ENABLE_STATS: %s; it needs CAP_SYS_ADMIN): the "
			   "ptbpf_bpf_* metrics are left out unless sysctl kernel.bpf_stats_enabled=1",
			   strerror(errno));
	err = setup_fds(d);
	if (err) {
		dlog_event("error", NULL, "start", NULL, "cannot set up: %s", strerror(-err));
		goto out;
	}
	d->cfg = NULL;
	err = decode_worker__new(c->decode_cpu_share, &d->decoder);
	if (!err) {
		struct epoll_event ev = { .events = EPOLLIN, .data.ptr = &d->decoder };

		err = epoll_ctl(d->epfd, EPOLL_CTL_ADD, decode_worker__fd(d->decoder), &ev) ?
		      -errno : 0;
	}
	if (err) {
		dlog_event("error", NULL, "start", NULL, "cannot start the decode worker: %s",
			   strerror(-err));
		goto out;
	}
	apply_config(d, c);
	c = NULL;
	watch_config(d);
	start_http(d);
	/* the uploader, when the configuration has an upload: section */
	if (d->cfg->have_upload) {
		struct uploader *u = NULL;

		d->upload = d->cfg->upload;
		memset(&d->cfg->upload, 0, sizeof(d->cfg->upload));
		if (!uploader__new(&d->upload, spool__dir(d->spool), d->host, &u) &&
		    !uploader__start(u))
			d->uploader = u;
		else
			uploader__free(u);
	}
	d->ready = true;
	sym_sd_watchdog_enabled(0, &d->watchdog_usec);
	publish(d);
	sym_sd_notify(0, "READY=1");
	dlog_event("info", NULL, "ready", NULL, "ready: %u rules, spool %s", d->nr_rules,
		   spool__dir(d->spool));
	err = run_loop(d);
	ret = err ? 1 : 0;
	sym_sd_notify(0, "STOPPING=1");
	dlog_event("info", NULL, "stopping", NULL, "stopping: disarming %u rules", d->nr_rules);
out:
	/* stop every capture child first (each lets its target go), then wait for all */
	for (i = 0; i < d->nr_rules; i++)
		stop_child(d->rules[i], false);
	/* the capture being decoded finishes at full speed; every one decoding is spooled */
	decode_worker__stop(d->decoder);
	if (d->decoder)
		decodes_done(d);
	for (i = 0; i < d->nr_rules; i++) {
		disarm_rule(d, d->rules[i]);
		rule_free(d->rules[i]);
	}
	if (d->plane) {
		epoll_ctl(d->epfd, EPOLL_CTL_DEL, triggers__ringbuf_fd(d->plane), NULL);
		triggers__free(d->plane);
		d->plane = NULL;
	}
	pt_rings_close(d);
	free(d->rules);
	d->rules = NULL;
	d->nr_rules = 0;
	decode_worker__free(d->decoder);
	d->decoder = NULL;
	uploader__free(d->uploader);
	upload_config_clear(&d->upload);
	metrics_server__stop(d->http);
	free(d->http_listen);
	status_sock__close(d->status_fd, d->state_dir);
	d->status_fd = -1;
	if (d->cfg)
		rm_tree(work);
	spool__free(d->spool);
	close_fds(d);
out_cfg:
	config_free(d->cfg);
	config_free(c);
	return ret;
}

int cmd_daemon(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "rules-dir", required_argument, NULL, 'r' },
		{ "check-config", required_argument, NULL, 'k' },
		{ "state-dir", required_argument, NULL, 's' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{},
	};
	struct daemon d = {
		.epfd = -1, .sfd = -1, .tfd = -1, .rfd = -1, .ifd = -1, .stats_fd = -1, .status_fd = -1,
		.cfg_wd = -1, .rules_wd = -1,
	};
	const char *check = NULL;
	bool status = false, json = false;
	int c, ret;

	if (argc > 1 && !strcmp(argv[1], "status")) {
		status = true;
		argv[1] = argv[0];
		argv++;
		argc--;
	}
	d.config_path = DEFAULT_CONFIG;
	d.state_dir = DEFAULT_STATE_DIR;
	optind = 1;
	while ((c = getopt_long(argc, argv, "c:h", opts, NULL)) != -1) {
		switch (c) {
		case 'c':
			d.config_path = optarg;
			break;
		case 'r':
			d.rules_dir = optarg;
			break;
		case 'k':
			check = optarg;
			break;
		case 's':
			d.state_dir = optarg;
			break;
		case 'j':
			json = true;
			break;
		case 'h':
			fputs(usage, stdout);
			return 0;
		default:
			elog("daemon: invalid option (see ptbpf daemon --help)\n");
			return 2;
		}
	}
	if (optind < argc) {
		elog("daemon: unexpected argument '%s' (see ptbpf daemon --help)\n", argv[optind]);
		return 2;
	}
	if (status)
		return cmd_status(d.state_dir, json);
	if (check)
		return check_config(check, d.rules_dir);
	the_daemon = &d;
	srand48(getpid() ^ time(NULL));
	log_set_sink(log_sink, &d);
	d.start_cpu = self_cpu_seconds();
	ret = run_daemon(&d);
	log_set_sink(NULL, NULL);
	return ret;
}
