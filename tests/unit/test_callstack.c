// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Call-stack reconstruction. A small simulator plays a program (real stack, return
 * addresses) into the callstack; each case checks the `fxtcheck --strict --stacks`
 * output of the FXT written, and that text mode writes exactly the same.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "callstack.h"
#include "fxtcheck_run.h"

/* ---- the program: functions of 4 KiB each from FN_BASE; NULL names have no symbol ---- */

#define FN_BASE 0x400000ull
#define FN_SIZE 0x1000ull
#define NFN 64
#define FN(i) (FN_BASE + (uint64_t)(i) * FN_SIZE)

enum {
	MAIN, FOO, BAR, BAZ, A, B, C, D, E, F, REC, LONGJMP, THROW, UNWIND, WEIRD, HUGE_NAME,
	SETJMP, COLD, NOSYM, NAMED_END
};

static const char *fn_names[NFN] = {
	[MAIN] = "main", [FOO] = "foo", [BAR] = "bar", [BAZ] = "baz", [A] = "a", [B] = "b",
	[C] = "c", [D] = "d", [E] = "e", [F] = "f", [REC] = "rec", [LONGJMP] = "longjmp",
	[THROW] = "__cxa_throw", [UNWIND] = "_Unwind_RaiseException",
	[WEIRD] = "bad\xff\xfe utf8 \xc3", [SETJMP] = "_setjmp", [COLD] = "foo.cold",
};
static char *huge_name;		/* 100 KB */
static unsigned symbolize_calls;

static int symbolize(void *ctx, uint32_t pid, uint64_t addr, struct cs_symbol *out)
{
	uint64_t i = (addr - FN_BASE) / FN_SIZE;

	symbolize_calls++;
	if (addr < FN_BASE || i >= NFN)
		return -ENOENT;
	out->name = i == HUGE_NAME ? huge_name : fn_names[i];
	if (!out->name)
		return -ENOENT;
	out->start = FN(i);
	return 0;
}

/* ---- the simulator ------------------------------------------------------------------ */

#define SIM_STACK 12000

/* How the oracle names a frame (see frame_name()). */
enum fr_kind { FR_PRE, FR_CALL, FR_JUMP, FR_SYSCALL, FR_UNTRACED };

/* A slice the oracle expects: real stack index, name, times. */
struct exp_slice {
	int idx;
	enum fr_kind kind;
	int fn;
	uint64_t addr;
	uint64_t b, e;
};

struct sim {
	struct callstack *cs;
	uint32_t pid, tid;
	uint64_t t;		/* now, ns (jitter may move it back; the callstack clamps) */
	int depth;		/* real stack depth */
	int fn[SIM_STACK];	/* function of each real frame */
	uint64_t ret[SIM_STACK];/* ret[i]: where frame i returns to (in frame i - 1) */
	unsigned off;		/* varies the instruction addresses */

	/* the oracle: what an exact reconstruction shows (clean sequences only) */
	bool oracle;		/* record the slices expected */
	uint64_t last;		/* clamped time of the latest event */
	bool live;		/* the first flow event was seen */
	uint64_t t0;		/* its time */
	int rmin;		/* shallowest real index the thread has been in */
	uint64_t fb[SIM_STACK];	/* begin of each real frame's slice */
	enum fr_kind fk[SIM_STACK];
	uint64_t fa[SIM_STACK];	/* address it was entered at (FR_CALL, FR_JUMP) */
	bool gap;		/* a [syscall]/[untraced] slice is open above the top */
	enum fr_kind gk;
	uint64_t gb;
	struct exp_slice *exp;	/* slices closed so far */
	int nexp, capexp;
};

static void sim_init(struct sim *s, struct callstack *cs, uint32_t pid, uint32_t tid,
		     uint64_t t)
{
	memset(s, 0, sizeof(*s));
	s->cs = cs;
	s->pid = pid;
	s->tid = tid;
	s->t = t;
	s->depth = 1;
	s->fn[0] = MAIN;
}

/* Frames active before the trace: the real stack, outermost first, without events. */
static void sim_stack(struct sim *s, int n, const int *fns)
{
	int i;

	s->depth = n;
	for (i = 0; i < n; i++) {
		s->fn[i] = fns[i];
		s->ret[i] = i ? FN(fns[i - 1]) + 0x200 + 8 * i + 5 : 0;
	}
}

static uint64_t sim_pc(struct sim *s)
{
	return FN(s->fn[s->depth - 1]) + 0x10 + (s->off++ % 0x30) * 8;
}

static void exp_add(struct sim *s, int idx, enum fr_kind k, int fn, uint64_t addr, uint64_t b,
		    uint64_t e)
{
	if (!s->oracle)
		return;
	if (s->nexp == s->capexp) {
		s->capexp = s->capexp ? 2 * s->capexp : 64;
		s->exp = realloc(s->exp, (size_t)s->capexp * sizeof(*s->exp));
		assert_non_null(s->exp);
	}
	s->exp[s->nexp++] = (struct exp_slice){ idx, k, fn, addr, b, e };
}

/* The oracle's time for an event at s->t; starts the epoch and ends an open gap. */
static uint64_t sim_event(struct sim *s, bool flow)
{
	uint64_t t = s->t > s->last ? s->t : s->last;
	int i;

	s->last = t;
	if (!flow)
		return t;
	if (!s->live) {
		s->live = true;
		s->t0 = t;
		s->rmin = s->depth - 1;
		for (i = 0; i < s->depth; i++) {
			s->fb[i] = t;
			s->fk[i] = FR_PRE;
		}
	}
	if (s->gap) {
		exp_add(s, s->depth, s->gk, 0, 0, s->gb, t);
		s->gap = false;
	}
	return t;
}

/* Real frames from index `to` up end at t. */
static void sim_close(struct sim *s, int to, uint64_t t)
{
	while (s->depth > to) {
		s->depth--;
		exp_add(s, s->depth, s->fk[s->depth], s->fn[s->depth], s->fa[s->depth],
			s->fb[s->depth], t);
	}
}

static void sim_call(struct sim *s, int f, uint64_t dt)
{
	uint64_t from = sim_pc(s), t;

	s->t += dt;
	t = sim_event(s, true);
	assert_int_equal(callstack__call(s->cs, s->pid, s->tid, from, FN(f), s->t), 0);
	s->fn[s->depth] = f;
	s->fb[s->depth] = t;
	s->fk[s->depth] = FR_CALL;
	s->fa[s->depth] = FN(f);
	s->ret[s->depth++] = from + 5;
}

static void sim_ret(struct sim *s, uint64_t dt)
{
	uint64_t from = sim_pc(s), t;

	s->t += dt;
	t = sim_event(s, true);
	sim_close(s, s->depth - 1, t);
	if (s->depth - 1 < s->rmin)	/* returned into a frame from before the trace */
		s->rmin = s->depth - 1;
	assert_int_equal(callstack__return(s->cs, s->pid, s->tid, from, s->ret[s->depth], s->t),
			 0);
}

/* A jump to `to` in function f that replaces the current frame. */
static void sim_jump(struct sim *s, int f, uint64_t to, uint64_t dt)
{
	uint64_t from = sim_pc(s), t;

	s->t += dt;
	t = sim_event(s, true);
	sim_close(s, s->depth - 1, t);
	s->fn[s->depth] = f;
	s->fb[s->depth] = t;
	s->fk[s->depth] = FR_JUMP;
	s->fa[s->depth++] = to;
	assert_int_equal(callstack__jump(s->cs, s->pid, s->tid, from, to, s->t), 0);
}

/* longjmp: a jump back into frame `level`, after the call it made (setjmp's return). */
static void sim_longjmp(struct sim *s, int level, uint64_t dt)
{
	uint64_t from = sim_pc(s), t;

	s->t += dt;
	t = sim_event(s, true);
	sim_close(s, level + 1, t);
	assert_int_equal(callstack__jump(s->cs, s->pid, s->tid, from, FN(s->fn[level]) + 0x205,
					 s->t), 0);
}

/* The unwinder's final return: into a landing pad in the middle of frame `level`. */
static void sim_throw(struct sim *s, int level, uint64_t dt)
{
	uint64_t from = sim_pc(s), t;

	s->t += dt;
	t = sim_event(s, true);
	sim_close(s, level + 1, t);
	assert_int_equal(callstack__return(s->cs, s->pid, s->tid, from, FN(s->fn[level]) + 0x800,
					   s->t), 0);
}

static void sim_stop(struct sim *s, enum cs_stop_reason why, uint64_t dt)
{
	uint64_t t;

	s->t += dt;
	t = sim_event(s, true);
	if (why == CS_STOP_SYSCALL || why == CS_STOP_UNTRACED) {
		s->gap = true;
		s->gk = why == CS_STOP_SYSCALL ? FR_SYSCALL : FR_UNTRACED;
		s->gb = t;
	}
	assert_int_equal(callstack__stop(s->cs, s->pid, s->tid, why, sim_pc(s), 0, s->t), 0);
}

static void sim_start(struct sim *s, uint64_t dt)
{
	s->t += dt;
	sim_event(s, true);
	assert_int_equal(callstack__start(s->cs, s->pid, s->tid, sim_pc(s), s->t), 0);
}

/* ---- running a case ----------------------------------------------------------------- */

typedef void (*scenario_fn)(struct callstack *cs, struct fxt_writer *w);

/* An extra check of the --stacks output, when set. */
static void (*verify_stacks)(const char *stacks);

/* Plays `play` into a writer at `path` (text mode or FXT); returns the callstack stats. */
static void play_to(const char *path, bool text, const struct callstack_opts *opts,
		    scenario_fn play, struct cs_stats *st)
{
	struct fxt_opts fo = { .text = text };
	struct callstack_opts co = { .symbolize = symbolize };
	struct fxt_writer *w;
	struct callstack *cs;

	if (opts)
		co = *opts;
	co.symbolize = symbolize;
	assert_int_equal(fxt_writer__open(&w, path, &fo), 0);
	cs = callstack__new(w, &co);
	assert_non_null(cs);
	play(cs, w);
	assert_int_equal(callstack__finish(cs), 0);
	if (st)
		callstack__stats(cs, st);
	callstack__free(cs);
	assert_int_equal(fxt_writer__close(w), 0);
}

/* FXT valid under --strict with these --stacks; text mode prints the same. Returns FXT path. */
static void run_case(scenario_fn play, const struct callstack_opts *opts, const char *want,
		     struct cs_stats *st, char *fxt_path, size_t fxt_size)
{
	char fxt[256], txt[256], *out = NULL, *text;
	int rc;

	test_tmp_path(fxt, sizeof(fxt), "cs", "fxt");
	test_tmp_path(txt, sizeof(txt), "cs", "txt");
	play_to(fxt, false, opts, play, st);
	play_to(txt, true, opts, play, NULL);
	rc = fxtcheck_run(fxt, "--strict --stacks", &out);
	if (rc) {
		char *why = NULL;

		fxtcheck_run(fxt, "--strict", &why);
		print_error("%s\n", why);
		free(why);
	}
	assert_int_equal(rc, 0);
	if (want)
		assert_string_equal(out, want);
	if (verify_stacks)
		verify_stacks(out);
	text = test_read_file(txt, NULL);
	assert_non_null(text);
	assert_string_equal(text, out);
	free(text);
	free(out);
	unlink(txt);
	if (fxt_path)
		snprintf(fxt_path, fxt_size, "%s", fxt);
	else
		unlink(fxt);
}

/* ---- cases -------------------------------------------------------------------------- */

static void play_plain(struct callstack *cs, struct fxt_writer *w)
{
	struct sim s;

	assert_int_equal(fxt_thread(w, 1, 1, "worker"), 0);
	sim_init(&s, cs, 1, 1, 0);
	sim_call(&s, FOO, 10);
	sim_call(&s, BAR, 2);
	sim_ret(&s, 3);
	sim_ret(&s, 5);
	sim_call(&s, BAZ, 10);
	sim_ret(&s, 10);
}

static void test_plain_calls(void **state)
{
	struct cs_stats st;

	NEED_FXTCHECK();
	run_case(play_plain, NULL,
		 "# thread pid=1 tid=1 name=worker\n"
		 "0 main 10 40\n"
		 "1 foo 10 20\n"
		 "2 bar 12 15\n"
		 "1 baz 30 40\n", &st, NULL, 0);
	assert_int_equal(st.calls, 3);
	assert_int_equal(st.returns, 3);
	assert_int_equal(st.slices, 4);
	assert_int_equal(st.unknown_parents, 0);
}

static void play_recursion(struct callstack *cs, struct fxt_writer *w)
{
	static struct sim s;
	int i;

	sim_init(&s, cs, 1, 1, 0);
	for (i = 0; i < 10000; i++)
		sim_call(&s, REC, 1);
	for (i = 0; i < 10000; i++)
		sim_ret(&s, 1);
}

static void test_recursion_capped(void **state)
{
	size_t cap = 600 * 40, len;
	char fxt[256];
	char *want = malloc(cap), *p = want;
	struct cs_stats st;
	int d;

	NEED_FXTCHECK();
	p += sprintf(p, "# thread pid=1 tid=1 name=\n0 main 1 20000\n");
	for (d = 1; d < CS_MAX_DEPTH; d++)
		p += sprintf(p, "%d rec %d %d\n", d, d, 20001 - d);
	sprintf(p, "%d [depth limit] %d %d\n", CS_MAX_DEPTH, CS_MAX_DEPTH, 20001 - CS_MAX_DEPTH);
	run_case(play_recursion, NULL, want, &st, fxt, sizeof(fxt));
	assert_int_equal(st.depth_capped, 10000 - CS_MAX_DEPTH);
	free(want);
	/* the marker names the function it stands for */
	want = test_read_file(fxt, &len);
	assert_non_null(want);
	assert_int_equal(test_fxt_count_arg(want, len, "function"), 1);
	assert_non_null(memmem(want, len, "rec\0", 4));
	free(want);
	unlink(fxt);
}

static void test_small_max_depth(void **state)
{
	struct callstack_opts o = { .max_depth = 3 };

	NEED_FXTCHECK();
	run_case(play_plain, &o, NULL, NULL, NULL, 0);
	run_case(play_recursion, &o,
		 "# thread pid=1 tid=1 name=\n"
		 "0 main 1 20000\n"
		 "1 rec 1 20000\n"
		 "2 rec 2 19999\n"
		 "3 [depth limit] 3 19998\n", NULL, NULL, 0);
}

static void play_longjmp(struct callstack *cs, struct fxt_writer *w)
{
	struct sim s;

	sim_init(&s, cs, 1, 1, 0);
	sim_call(&s, A, 10);		/* 10 */
	sim_call(&s, SETJMP, 1);	/* 11 */
	sim_ret(&s, 1);			/* 12 */
	sim_call(&s, B, 1);		/* 13 */
	sim_call(&s, C, 1);
	sim_call(&s, D, 1);
	sim_call(&s, E, 1);
	sim_call(&s, F, 1);		/* 17 */
	sim_call(&s, LONGJMP, 1);	/* 18 */
	sim_longjmp(&s, 1, 2);		/* 20: back in a, 6 frames closed */
	sim_ret(&s, 5);			/* 25 */
	/* a return that lands after the call of a deeper frame: through 3 frames */
	sim_call(&s, B, 1);		/* 26 */
	sim_call(&s, C, 1);
	sim_call(&s, D, 1);		/* 28 */
	s.t += 2;
	s.depth = 2;
	assert_int_equal(callstack__return(cs, 1, 1, FN(D) + 3, s.ret[2], s.t), 0); /* 30 */
	sim_ret(&s, 2);			/* 32 */
}

static void test_longjmp(void **state)
{
	struct cs_stats st;

	NEED_FXTCHECK();
	run_case(play_longjmp, NULL,
		 "# thread pid=1 tid=1 name=\n"
		 "0 main 10 32\n"
		 "1 a 10 25\n"
		 "2 _setjmp 11 12\n"
		 "2 b 13 20\n"
		 "3 c 14 20\n"
		 "4 d 15 20\n"
		 "5 e 16 20\n"
		 "6 f 17 20\n"
		 "7 longjmp 18 20\n"
		 "1 b 26 32\n"
		 "2 c 27 30\n"
		 "3 d 28 30\n", &st, NULL, 0);
	assert_int_equal(st.unwinds, 2);
}

static void play_exception(struct callstack *cs, struct fxt_writer *w)
{
	struct sim s;

	sim_init(&s, cs, 1, 1, 0);
	sim_call(&s, A, 10);		/* 10 */
	sim_call(&s, B, 1);		/* 11 */
	sim_call(&s, C, 1);
	sim_call(&s, D, 1);
	sim_call(&s, THROW, 1);		/* 14 */
	sim_call(&s, UNWIND, 1);	/* 15 */
	sim_throw(&s, 2, 5);		/* 20: landing pad in b */
	sim_ret(&s, 2);			/* 22: b returns */
	sim_ret(&s, 2);			/* 24: a returns */
}

static void test_exception_unwinding(void **state)
{
	struct cs_stats st;

	NEED_FXTCHECK();
	run_case(play_exception, NULL,
		 "# thread pid=1 tid=1 name=\n"
		 "0 main 10 24\n"
		 "1 a 10 24\n"
		 "2 b 11 22\n"
		 "3 c 12 20\n"
		 "4 d 13 20\n"
		 "5 __cxa_throw 14 20\n"
		 "6 _Unwind_RaiseException 15 20\n", &st, NULL, 0);
	assert_int_equal(st.unwinds, 1);
}

static void play_tail_calls(struct callstack *cs, struct fxt_writer *w)
{
	struct sim s;

	sim_init(&s, cs, 1, 1, 0);
	sim_call(&s, A, 10);			/* 10 */
	sim_call(&s, C, 2);			/* 12 */
	sim_ret(&s, 2);				/* 14 */
	sim_jump(&s, B, FN(B), 2);		/* 16: a tail-calls b */
	sim_jump(&s, COLD, FN(COLD) + 0x600, 2);	/* 18: b jumps into foo.cold */
	sim_ret(&s, 2);				/* 20: to main, where a was called */
	sim_jump(&s, FOO, FN(FOO), 5);		/* 25: main tail-calls foo */
	sim_call(&s, BAR, 1);			/* 26 */
	sim_ret(&s, 1);				/* 27 */
}

static void test_tail_calls(void **state)
{
	struct cs_stats st;

	NEED_FXTCHECK();
	run_case(play_tail_calls, NULL,
		 "# thread pid=1 tid=1 name=\n"
		 "0 main 10 25\n"
		 "1 a 10 16\n"
		 "2 c 12 14\n"
		 "1 b 16 18\n"
		 "1 foo.cold 18 20\n"
		 "0 foo 25 27\n"
		 "1 bar 26 27\n", &st, NULL, 0);
	assert_int_equal(st.tail_calls, 2);
	assert_int_equal(st.jumps, 3);
}

static void play_above_start(struct callstack *cs, struct fxt_writer *w)
{
	static const int real[] = { MAIN, A, B, C };
	struct sim s;

	sim_init(&s, cs, 1, 1, 0);
	sim_stack(&s, 4, real);	/* the trace starts in c, called by b, by a, by main */
	sim_call(&s, D, 10);	/* 10 */
	sim_ret(&s, 2);		/* 12 */
	sim_ret(&s, 3);		/* 15: c returns into b: unknown until now */
	sim_ret(&s, 5);		/* 20: b returns into a */
	sim_call(&s, E, 5);	/* 25 */
	sim_ret(&s, 2);		/* 27 */
	sim_stop(&s, CS_STOP_END, 3); /* 30 */
}

static void test_returns_above_start(void **state)
{
	char fxt[256], *data;
	struct cs_stats st;
	size_t len;

	NEED_FXTCHECK();
	run_case(play_above_start, NULL,
		 "# thread pid=1 tid=1 name=\n"
		 "0 a 10 30\n"
		 "1 b 10 20\n"
		 "2 c 10 15\n"
		 "3 d 10 12\n"
		 "1 e 25 27\n", &st, fxt, sizeof(fxt));
	assert_int_equal(st.unknown_parents, 2);
	assert_int_equal(st.late_parents, 0);
	/* the three back-dated frames say so */
	data = test_read_file(fxt, &len);
	assert_non_null(data);
	assert_int_equal(test_fxt_count_arg(data, len, "inferred_start"), 3);
	free(data);
	unlink(fxt);
}

/* A parent found after children that began at the same instant still comes first. */
static void play_above_start_ties(struct callstack *cs, struct fxt_writer *w)
{
	static const int real[] = { MAIN, A, B };
	struct sim s;

	sim_init(&s, cs, 1, 1, 0);
	sim_stack(&s, 3, real);
	sim_call(&s, C, 10);	/* 10 */
	sim_ret(&s, 0);		/* 10 */
	sim_call(&s, D, 0);	/* 10 */
	sim_ret(&s, 0);		/* 10 */
	sim_ret(&s, 0);		/* 10: b returns into a */
	sim_ret(&s, 0);		/* 10: a returns into main */
	sim_call(&s, E, 0);	/* 10 */
	sim_ret(&s, 5);		/* 15 */
}

static void test_above_start_ties(void **state)
{
	NEED_FXTCHECK();
	run_case(play_above_start_ties, NULL,
		 "# thread pid=1 tid=1 name=\n"
		 "0 main 10 15\n"
		 "1 a 10 10\n"
		 "2 b 10 10\n"
		 "3 c 10 10\n"
		 "3 d 10 10\n"
		 "1 e 10 15\n", NULL, NULL, 0);
}

static void play_gaps(struct callstack *cs, struct fxt_writer *w)
{
	struct sim s;

	sim_init(&s, cs, 1, 1, 0);
	sim_call(&s, FOO, 10);			/* 10 */
	sim_stop(&s, CS_STOP_SYSCALL, 2);	/* 12 */
	sim_start(&s, 8);			/* 20 */
	sim_call(&s, BAR, 1);			/* 21 */
	sim_stop(&s, CS_STOP_UNTRACED, 1);	/* 22 */
	sim_start(&s, 2);			/* 24 */
	sim_ret(&s, 1);				/* 25 */
	sim_stop(&s, CS_STOP_SYSCALL, 1);	/* 26: no start: the next event resumes */
	sim_ret(&s, 4);				/* 30 */
}

static void test_syscall_gaps(void **state)
{
	struct cs_stats st;

	NEED_FXTCHECK();
	run_case(play_gaps, NULL,
		 "# thread pid=1 tid=1 name=\n"
		 "0 main 10 30\n"
		 "1 foo 10 30\n"
		 "2 [syscall] 12 20\n"
		 "2 bar 21 25\n"
		 "3 [untraced] 22 24\n"
		 "2 [syscall] 26 30\n", &st, NULL, 0);
	assert_int_equal(st.gaps, 3);
}

static void play_error(struct callstack *cs, struct fxt_writer *w)
{
	struct sim s;

	sim_init(&s, cs, 1, 1, 0);
	sim_call(&s, FOO, 10);		/* 10 */
	sim_call(&s, BAR, 2);		/* 12 */
	assert_int_equal(callstack__error(cs, 1, 1, 0x1234, FN(BAR) + 5, "bad packet", 15), 0);
	s.t = 20;
	sim_call(&s, BAZ, 0);		/* 20: bar calls baz; the stack restarts in bar */
	sim_ret(&s, 2);			/* 22 */
	sim_ret(&s, 2);			/* 24: bar returns into foo */
	sim_ret(&s, 2);			/* 26: foo returns into main */
	sim_stop(&s, CS_STOP_OVERFLOW, 4);	/* 30 */
	sim_call(&s, A, 5);		/* 35 */
}

static void test_decode_error(void **state)
{
	char fxt[256], *data;
	struct cs_stats st;
	size_t len;

	NEED_FXTCHECK();
	run_case(play_error, NULL,
		 "# thread pid=1 tid=1 name=\n"
		 "0 main 10 15\n"
		 "1 foo 10 15\n"
		 "2 bar 12 15\n"
		 "0 main 20 30\n"
		 "1 foo 20 26\n"
		 "2 bar 20 24\n"
		 "3 baz 20 22\n"
		 "0 main 35 35\n"
		 "1 a 35 35\n", &st, fxt, sizeof(fxt));
	assert_int_equal(st.errors, 1);
	assert_int_equal(st.overflows, 1);
	data = test_read_file(fxt, &len);
	assert_non_null(data);
	assert_non_null(memmem(data, len, "[decode error]", 14));
	assert_non_null(memmem(data, len, "bad packet", 10));
	assert_non_null(memmem(data, len, "[overflow]", 10));
	assert_int_equal(test_fxt_count_arg(data, len, "offset"), 1);
	assert_int_equal(test_fxt_count_arg(data, len, "message"), 1);
	assert_int_equal(test_fxt_count_arg(data, len, "ip"), 2);	/* error, overflow */
	free(data);
	unlink(fxt);
}

static void play_two_threads(struct callstack *cs, struct fxt_writer *w)
{
	struct sim s1, s2;

	assert_int_equal(fxt_thread(w, 1, 1, "A"), 0);
	assert_int_equal(fxt_thread(w, 1, 2, "B"), 0);
	sim_init(&s1, cs, 1, 1, 0);
	sim_init(&s2, cs, 1, 2, 0);
	s2.fn[0] = BAZ;
	sim_call(&s1, FOO, 10);		/* A 10 */
	assert_int_equal(callstack__switch_out(cs, 1, 1, 12), 0);
	assert_int_equal(callstack__switch_in(cs, 1, 2, 12), 0);
	sim_call(&s2, BAR, 13);		/* B 13 */
	sim_ret(&s2, 1);		/* B 14 */
	assert_int_equal(callstack__switch_out(cs, 1, 2, 15), 0);
	assert_int_equal(callstack__switch_in(cs, 1, 1, 16), 0);
	sim_ret(&s1, 8);		/* A 18 */
}

static void test_two_threads(void **state)
{
	NEED_FXTCHECK();
	run_case(play_two_threads, NULL,
		 "# thread pid=1 tid=1 name=A\n"
		 "0 main 10 18\n"
		 "1 foo 10 18\n"
		 "# thread pid=1 tid=2 name=B\n"
		 "0 baz 13 15\n"
		 "1 bar 13 14\n", NULL, NULL, 0);
}

static void play_names(struct callstack *cs, struct fxt_writer *w)
{
	struct sim s;

	sim_init(&s, cs, 1, 1, 0);
	sim_call(&s, WEIRD, 10);
	sim_ret(&s, 1);
	sim_call(&s, HUGE_NAME, 1);
	sim_ret(&s, 1);
	sim_call(&s, NOSYM, 1);
	sim_ret(&s, 1);
}

static void test_symbol_names(void **state)
{
	char want[4096], *p = want;

	NEED_FXTCHECK();
	p += sprintf(p, "# thread pid=1 tid=1 name=\n0 main 10 15\n");
	p += sprintf(p, "1 bad\xef\xbf\xbd\xef\xbf\xbd utf8 \xef\xbf\xbd 10 11\n1 ");
	memset(p, 'x', FXT_MAX_NAME_LEN - 3);
	p += FXT_MAX_NAME_LEN - 3;
	p += sprintf(p, "\xe2\x80\xa6 12 13\n1 [unknown @ 0x%llx] 14 15\n",
		     (unsigned long long)FN(NOSYM));
	run_case(play_names, NULL, want, NULL, NULL, 0);
}

static void play_ties(struct callstack *cs, struct fxt_writer *w)
{
	struct fxt_arg a = { .name = "n", .type = FXT_ARG_INT64, .i = 1 };
	struct sim s;

	sim_init(&s, cs, 1, 1, 0);
	sim_call(&s, A, 10);	/* 10 */
	sim_ret(&s, 0);		/* 10 */
	sim_call(&s, B, 0);	/* 10 */
	sim_call(&s, C, 0);	/* 10 */
	sim_ret(&s, 0);		/* 10 */
	sim_ret(&s, 0);		/* 10 */
	sim_call(&s, D, 0);	/* 10 */
	sim_call(&s, E, 10);	/* 20: at d's end */
	sim_ret(&s, 0);		/* 20 */
	sim_ret(&s, 0);		/* 20 */
	sim_call(&s, F, 5);	/* 25 */
	assert_int_equal(callstack__instant(cs, 1, 1, "trigger", 30, &a, 1), 0);
	sim_ret(&s, 5);		/* 30: the instant is at f's end */
	sim_call(&s, FOO, 1);	/* 31 */
	sim_call(&s, BAR, 1);	/* 32 */
	sim_ret(&s, 3);		/* 35 */
	sim_ret(&s, 0);		/* 35: foo ends with its child */
}

static void test_equal_timestamps(void **state)
{
	struct cs_stats st;

	NEED_FXTCHECK();
	run_case(play_ties, NULL,
		 "# thread pid=1 tid=1 name=\n"
		 "0 main 10 35\n"
		 "1 a 10 10\n"
		 "1 b 10 10\n"
		 "2 c 10 10\n"
		 "1 d 10 20\n"
		 "2 e 20 20\n"
		 "1 f 25 30\n"
		 "1 foo 31 35\n"
		 "2 bar 32 35\n", &st, NULL, 0);
	assert_int_equal(st.slices, 9);
}

static void play_jitter(struct callstack *cs, struct fxt_writer *w)
{
	struct sim s;

	sim_init(&s, cs, 1, 1, 100);
	sim_call(&s, FOO, 0);		/* 100 */
	s.t = 90;
	sim_call(&s, BAR, 0);		/* 90 -> 100 */
	s.t = 110;
	sim_ret(&s, 0);			/* 110 */
	s.t = 105;
	sim_ret(&s, 0);			/* 105 -> 110 */
}

static void test_time_jitter(void **state)
{
	struct cs_stats st;

	NEED_FXTCHECK();
	run_case(play_jitter, NULL,
		 "# thread pid=1 tid=1 name=\n"
		 "0 main 100 110\n"
		 "1 foo 100 110\n"
		 "2 bar 100 110\n", &st, NULL, 0);
	assert_int_equal(st.clamps, 2);
}

static void play_long(struct callstack *cs, struct fxt_writer *w)
{
	struct sim s;

	sim_init(&s, cs, 1, 1, 0);
	sim_call(&s, FOO, 10);
	sim_call(&s, BAR, 5000000000ull);	/* > 4.29 s: a begin/end pair */
	sim_ret(&s, 1);
	sim_ret(&s, 1);
}

static void test_long_slices(void **state)
{
	NEED_FXTCHECK();
	run_case(play_long, NULL,
		 "# thread pid=1 tid=1 name=\n"
		 "0 main 10 5000000012\n"
		 "1 foo 10 5000000012\n"
		 "2 bar 5000000010 5000000011\n", NULL, NULL, 0);
}

/* Held slices written early: valid, parents found later start where they are found. */
static void play_early(struct callstack *cs, struct fxt_writer *w)
{
	static const int real[] = { MAIN, A, B };
	struct sim s;
	int i;

	sim_init(&s, cs, 1, 1, 0);
	sim_stack(&s, 3, real);
	sim_call(&s, C, 10);		/* 10 */
	for (i = 0; i < 10; i++) {
		sim_call(&s, D, 1);
		sim_ret(&s, 1);
	}
	sim_ret(&s, 1);			/* 31: c returns */
	sim_ret(&s, 1);			/* 32: b returns into a: a late parent */
	sim_call(&s, E, 1);		/* 33 */
	sim_ret(&s, 1);			/* 34 */
}

static void test_early_write(void **state)
{
	struct callstack_opts o = { .max_buffer = 8 };
	struct cs_stats st;

	NEED_FXTCHECK();
	run_case(play_early, &o,
		 "# thread pid=1 tid=1 name=\n"
		 "0 b 10 32\n"
		 "1 c 10 31\n"
		 "2 d 11 12\n"
		 "2 d 13 14\n"
		 "2 d 15 16\n"
		 "2 d 17 18\n"
		 "2 d 19 20\n"
		 "2 d 21 22\n"
		 "2 d 23 24\n"
		 "2 d 25 26\n"
		 "2 d 27 28\n"
		 "2 d 29 30\n"
		 "0 a 32 34\n"
		 "1 e 33 34\n", &st, NULL, 0);
	assert_true(st.early_writes >= 1);
	assert_int_equal(st.late_parents, 1);
	assert_true(st.max_held <= 8);
}

static void play_cache(struct callstack *cs, struct fxt_writer *w)
{
	struct sim s;
	int i;

	sim_init(&s, cs, 1, 1, 0);
	for (i = 0; i < 1000; i++) {
		sim_call(&s, FOO + i % 3, 1);
		sim_ret(&s, 1);
	}
}

static void test_symbol_cache(void **state)
{
	NEED_FXTCHECK();
	symbolize_calls = 0;
	run_case(play_cache, NULL, NULL, NULL, NULL, 0);
	/* main (root) and three targets, in each of the two runs */
	assert_int_equal(symbolize_calls, 2 * 4);
}

/* The cache's figures (--stats): every lookup counted, the symbolizer's answers as misses. */
static void test_symbol_cache_stats(void **state)
{
	struct cs_stats st;

	NEED_FXTCHECK();
	symbolize_calls = 0;
	run_case(play_cache, NULL, NULL, &st, NULL, 0);
	/* the epoch's start and 1000 call targets; the FXT run's symbolizer calls */
	assert_int_equal(st.sym_lookups, 1 + 1000);
	assert_int_equal(st.sym_misses, 4);
	assert_int_equal(st.sym_hits, 1001 - 4);
	assert_int_equal(symbolize_calls, 2 * 4);
}

/* ---- randomized --------------------------------------------------------------------- */

static uint64_t rnd_state;

static uint32_t rnd(void)
{
	rnd_state = rnd_state * 6364136223846793005ull + 1442695040888963407ull;
	return (uint32_t)(rnd_state >> 33);
}

static uint64_t rnd_dt(void)
{
	switch (rnd() % 16) {
	case 0 ... 4:
		return 0;
	case 5 ... 8:
		return 1;
	case 9 ... 11:
		return rnd() % 50;
	case 12:
		return rnd() % 100000;
	case 13:
		return rnd() % 8 == 0 ? 5000000000ull : 3;
	default:
		return (uint64_t)-(int64_t)(rnd() % 4);	/* jitter backwards */
	}
}

static const char *fn_name(int i)
{
	return i == HUGE_NAME ? huge_name : fn_names[i];
}

/* Whether f is the function of a frame the callstack knows, below the top. */
static bool on_stack(const struct sim *s, int f)
{
	int i;

	for (i = s->live ? s->rmin : s->depth - 1; i < s->depth - 1; i++)
		if (s->fn[i] == f)
			return true;
	return false;
}

/* A frame the callstack can find by its function: known to it, named, unique above. */
static bool findable(const struct sim *s, int level)
{
	int i;

	/* before the first event, the thread will start in its top frame */
	if (level < (s->live ? s->rmin : s->depth - 1) || !fn_name(s->fn[level]))
		return false;
	for (i = level + 1; i < s->depth - 1; i++)
		if (s->fn[i] == s->fn[level])
			return false;
	return true;
}

/*
 * One random event sequence on thread (pid, tid). A clean sequence keeps to what an
 * exact reconstruction handles (no errors, overflows, ends, returns to nowhere, ambiguous
 * longjmp targets), so the oracle knows its slices.
 */
static void random_sequence(struct sim *s, struct callstack *cs, uint32_t pid, uint32_t tid,
			    bool clean)
{
	struct fxt_arg arg = { .name = "k", .type = FXT_ARG_STRING, .s = "v" };
	int n = 10 + rnd() % 60, i, k, level;
	uint64_t to;
	int fns[8];

	free(s->exp);
	sim_init(s, cs, pid, tid, 1000000 + rnd() % 1000);
	s->oracle = clean;
	for (i = 0; i < (int)(rnd() % 8); i++)
		fns[i] = rnd() % NFN;
	if (i)
		sim_stack(s, i, fns);
	for (k = 0; k < n; k++) {
		int op = rnd() % 32, f = rnd() % NFN;
		uint64_t dt = rnd_dt();

		switch (op) {
		case 0 ... 9:
			if (s->depth < SIM_STACK - 1)
				sim_call(s, f, dt);
			break;
		case 10 ... 18:
			if (s->depth > 1)
				sim_ret(s, dt);
			else if (!clean)	/* the outermost frame returns somewhere */
				assert_int_equal(callstack__return(cs, pid, tid, sim_pc(s),
								   FN(f) + 0x123, s->t += dt), 0);
			break;
		case 19:
			/* into the middle of a function on the stack would be a longjmp */
			if (rnd() % 2 || (clean && fn_name(f) && on_stack(s, f)))
				sim_jump(s, f, FN(f), dt);
			else
				sim_jump(s, f, FN(f) + 0x600, dt);
			break;
		case 20:
		case 21:
			if (s->depth <= 2)
				break;
			level = (int)(rnd() % (s->depth - 1));
			if (clean && !findable(s, level))
				break;
			if (op == 20)
				sim_longjmp(s, level, dt);
			else
				sim_throw(s, level, dt);
			break;
		case 22:
			sim_stop(s, rnd() % 2 ? CS_STOP_SYSCALL : CS_STOP_UNTRACED, dt);
			if (rnd() % 2)
				sim_start(s, rnd_dt());
			break;
		case 23:
			if (clean)
				break;
			s->t += dt;
			assert_int_equal(callstack__error(cs, pid, tid, rnd(), sim_pc(s),
							  "random error", s->t), 0);
			break;
		case 24:
			if (!clean)
				sim_stop(s, rnd() % 2 ? CS_STOP_OVERFLOW : CS_STOP_END, dt);
			break;
		case 25:
			s->t += dt;
			sim_event(s, false);
			assert_int_equal(callstack__instant(cs, pid, tid, "mark", s->t, &arg, 1),
					 0);
			break;
		case 26:
			s->t += dt;
			sim_event(s, false);
			assert_int_equal(callstack__switch_out(cs, pid, tid, s->t), 0);
			s->t += rnd_dt();
			sim_event(s, false);
			assert_int_equal(callstack__switch_in(cs, pid, tid, s->t), 0);
			break;
		case 27:	/* a return to nowhere in particular */
			if (clean)
				break;
			s->t += dt;
			to = rnd() % 2 ? FN(f) + 7 : 0x1234;
			assert_int_equal(callstack__return(cs, pid, tid, sim_pc(s), to, s->t), 0);
			break;
		case 28:	/* a burst of recursion */
			for (i = (int)(rnd() % 24); i > 0 && s->depth < SIM_STACK - 1; i--)
				sim_call(s, REC, rnd_dt());
			break;
		default:
			if (s->depth < SIM_STACK - 1)
				sim_call(s, f, dt);
			break;
		}
		s->t = (int64_t)s->t < 0 ? 0 : s->t;
	}
	/* callstack__finish() closes what is open at the thread's latest time */
	if (s->live) {
		uint64_t end = s->last;

		if (s->gap) {
			exp_add(s, s->depth, s->gk, 0, 0, s->gb, end);
			s->gap = false;
		}
		sim_close(s, s->rmin, end);
	}
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The oracle's --stacks lines of one thread, sorted. */
static char **expected_lines(const struct sim *s, unsigned max_depth, int *n)
{
	char **v = calloc((size_t)s->nexp + 1, sizeof(*v));
	char name[FXT_MAX_NAME_LEN + 1], raw[64];
	int i, m = 0;

	for (i = 0; i < s->nexp; i++) {
		const struct exp_slice *x = &s->exp[i];
		int d = x->idx - s->rmin;
		const char *nm = x->kind == FR_SYSCALL ? "[syscall]" : x->kind == FR_UNTRACED ?
			"[untraced]" : fn_name(x->fn);

		if (x->idx < s->rmin || d > (int)max_depth)
			continue;
		if (!nm) {
			if (x->kind == FR_PRE)
				nm = "[unknown]";
			else
				snprintf(raw, sizeof(raw), "[unknown @ 0x%llx]",
					 (unsigned long long)x->addr);
			nm = nm ? nm : raw;
		}
		fxt_sanitize(d == (int)max_depth ? "[depth limit]" : nm, name, NULL, NULL);
		assert_true(asprintf(&v[m++], "%d %s %llu %llu", d, name,
				     (unsigned long long)x->b, (unsigned long long)x->e) > 0);
	}
	qsort(v, (size_t)m, sizeof(*v), cmp_str);
	*n = m;
	return v;
}

enum { SEQUENCES = 10000, PER_FILE = 1000 };

static uint64_t batch_seed;
static unsigned batch_max_depth;
static bool batch_oracle;
static struct sim batch_sims[PER_FILE];
static bool batch_clean[PER_FILE];

static void play_random_batch(struct callstack *cs, struct fxt_writer *w)
{
	unsigned i;

	rnd_state = batch_seed;
	for (i = 0; i < PER_FILE; i++) {
		batch_clean[i] = batch_oracle && rnd() % 2;
		random_sequence(&batch_sims[i], cs, 100 + i % 5, 1000 + i, batch_clean[i]);
	}
}

static unsigned oracle_threads, oracle_slices;

static void check_section(unsigned tid, char **got, int ngot)
{
	const struct sim *s = &batch_sims[tid - 1000];
	int nwant, i;
	char **want;

	qsort(got, (size_t)ngot, sizeof(*got), cmp_str);
	want = expected_lines(s, batch_max_depth, &nwant);
	for (i = 0; i < nwant || i < ngot; i++) {
		if (i >= nwant || i >= ngot || strcmp(want[i], got[i])) {
			int j;

			for (j = 0; j < nwant || j < ngot; j++)
				print_error("  %-40.60s | %.60s\n", j < ngot ? got[j] : "",
					    j < nwant ? want[j] : "");
			print_error("thread %u, sorted line %d: got '%.80s' want '%.80s'\n", tid, i,
				    i < ngot ? got[i] : "(none)", i < nwant ? want[i] : "(none)");
			fail();
		}
	}
	oracle_threads++;
	oracle_slices += (unsigned)nwant;
	for (i = 0; i < nwant; i++)
		free(want[i]);
	free(want);
}

/* Compares each clean thread's section of --stacks with the oracle's slices. */
static void check_oracle(const char *stacks)
{
	static bool seen[PER_FILE];
	char *copy = strdup(stacks), *p = copy, *line, *got[4096];
	unsigned pid, tid = UINT32_MAX, prev = UINT32_MAX, i;
	int ngot = 0, nwant;

	memset(seen, 0, sizeof(seen));
	for (;;) {
		line = p;
		p = p ? strchr(p, '\n') : NULL;
		if (p)
			*p++ = 0;
		if (!line || !*line || sscanf(line, "# thread pid=%u tid=%u", &pid, &tid) == 2) {
			/* the end of the previous thread's section */
			if (prev - 1000 < PER_FILE && batch_clean[prev - 1000]) {
				seen[prev - 1000] = true;
				check_section(prev, got, ngot);
			}
			ngot = 0;
			prev = line && *line ? tid : UINT32_MAX;
			if (!line || !*line)
				break;
			continue;
		}
		assert_true(ngot < 4096);
		got[ngot++] = line;
	}
	/* a clean thread without a section shows nothing */
	for (i = 0; i < PER_FILE; i++) {
		if (batch_clean[i] && !seen[i]) {
			char **want = expected_lines(&batch_sims[i], batch_max_depth, &nwant);

			assert_int_equal(nwant, 0);
			free(want);
		}
	}
	free(copy);
}

static void test_randomized(void **state)
{
	unsigned b;

	NEED_FXTCHECK();
	for (b = 0; b < SEQUENCES / PER_FILE; b++) {
		struct callstack_opts o = { 0 };

		batch_seed = 0x9e3779b97f4a7c15ull * (b + 1);
		if (b % 3 == 1)
			o.max_depth = 2 + b;
		if (b % 4 == 2)
			o.max_buffer = 4 + b;
		batch_max_depth = o.max_depth ? o.max_depth : CS_MAX_DEPTH;
		batch_oracle = !o.max_buffer;
		verify_stacks = batch_oracle ? check_oracle : NULL;
		run_case(play_random_batch, &o, NULL, NULL, NULL, 0);
		verify_stacks = NULL;
	}
	/* about half the sequences of 7 files in 10 are clean and checked slice by slice */
	printf("randomized: %u sequences valid, %u held against the oracle (%u slices)\n",
	       SEQUENCES, oracle_threads, oracle_slices);
	assert_true(oracle_threads > SEQUENCES / 4);
}

/* ---- invalid arguments -------------------------------------------------------------- */

/*
 * The summary's slowest call: timed from its call to the return to its call site, across
 * a tail call that replaced the callee; a return that unwinds through deeper frames times
 * the frame it returns to; a frame closed by an error or the end of the data is no call
 * that returned.
 */
/* main > foo (10) > bar (12..15); foo tail-calls baz (20), which returns at 40. */
static void play_slowest_tail(struct callstack *cs, struct fxt_writer *w)
{
	assert_int_equal(callstack__call(cs, 1, 1, FN(MAIN) + 0x20, FN(FOO), 10), 0);
	assert_int_equal(callstack__call(cs, 1, 1, FN(FOO) + 0x30, FN(BAR), 12), 0);
	assert_int_equal(callstack__return(cs, 1, 1, FN(BAR) + 0x40, FN(FOO) + 0x35, 15), 0);
	assert_int_equal(callstack__jump(cs, 1, 1, FN(FOO) + 0x50, FN(BAZ), 20), 0);
	assert_int_equal(callstack__return(cs, 1, 1, FN(BAZ) + 0x60, FN(MAIN) + 0x25, 40), 0);
}

static void play_slowest(struct callstack *cs, struct fxt_writer *w)
{
	play_slowest_tail(cs, w);	/* tid 1: baz's call returns after 30 ns */
	/* tid 2: main > a (50) > b (51); b returns straight after a's call at 100 */
	assert_int_equal(callstack__call(cs, 1, 2, FN(MAIN) + 0x20, FN(A), 50), 0);
	assert_int_equal(callstack__call(cs, 1, 2, FN(A) + 0x10, FN(B), 51), 0);
	assert_int_equal(callstack__return(cs, 1, 2, FN(B) + 0x10, FN(MAIN) + 0x25, 100), 0);
	/* tid 3: calls that never return (an error, then the end): longer, not counted */
	assert_int_equal(callstack__call(cs, 1, 3, FN(MAIN) + 0x20, FN(C), 200), 0);
	assert_int_equal(callstack__error(cs, 1, 3, 0x10, FN(C) + 4, "bad packet", 1000), 0);
	assert_int_equal(callstack__call(cs, 1, 3, FN(C) + 0x20, FN(D), 1100), 0);
	assert_int_equal(callstack__jump(cs, 1, 3, FN(D) + 0x20, FN(D) + 0x10, 5000), 0);
}

static void test_slowest_return(void **state)
{
	struct cs_stats st;

	NEED_FXTCHECK();
	run_case(play_slowest, NULL, NULL, &st, NULL, 0);
	assert_int_equal(st.slowest_ns, 50);
	assert_int_equal(st.slowest_pid, 1);
	assert_int_equal(st.slowest_tid, 2);
	assert_string_equal(st.slowest_path, "main > a");
}

static void test_slowest_tail_call(void **state)
{
	struct cs_stats st;

	NEED_FXTCHECK();
	run_case(play_slowest_tail, NULL,
		 "# thread pid=1 tid=1 name=\n"
		 "0 main 10 40\n"
		 "1 foo 10 20\n"
		 "2 bar 12 15\n"
		 "1 baz 20 40\n", &st, NULL, 0);
	assert_int_equal(st.slowest_ns, 30);
	assert_string_equal(st.slowest_path, "main > baz");
}

/* An address without a symbol: the signal trampoline (__restore_rt) of these cases. */
#define TRAMPOLINE (FN_BASE + 40 * FN_SIZE + 0x7)

/*
 * Signal frames. tid 1: foo is in a system call when a signal comes; tracing resumes at
 * the handler e's entry, not where foo would go on: e is called from there, and its
 * return into the trampoline goes back into foo. tid 2: the handler leaves by
 * siglongjmp (a jump into main's body), which forgets it.
 */
static void play_signals(struct callstack *cs, struct fxt_writer *w)
{
	assert_int_equal(fxt_thread(w, 1, 1, "sig"), 0);
	assert_int_equal(callstack__call(cs, 1, 1, FN(MAIN) + 0x20, FN(FOO), 10), 0);
	assert_int_equal(callstack__stop(cs, 1, 1, CS_STOP_SYSCALL, FN(FOO) + 0x40,
					 FN(FOO) + 0x42, 12), 0);
	assert_int_equal(callstack__start(cs, 1, 1, FN(E), 20), 0);
	assert_int_equal(callstack__call(cs, 1, 1, FN(E) + 0x10, FN(F), 22), 0);
	assert_int_equal(callstack__return(cs, 1, 1, FN(F) + 0x20, FN(E) + 0x15, 24), 0);
	assert_int_equal(callstack__return(cs, 1, 1, FN(E) + 0x30, TRAMPOLINE, 30), 0);
	assert_int_equal(callstack__return(cs, 1, 1, FN(FOO) + 0x50, FN(MAIN) + 0x25, 40), 0);

	assert_int_equal(fxt_thread(w, 1, 2, "jmp"), 0);
	assert_int_equal(callstack__call(cs, 1, 2, FN(MAIN) + 0x20, FN(FOO), 100), 0);
	assert_int_equal(callstack__stop(cs, 1, 2, CS_STOP_SYSCALL, FN(FOO) + 0x40,
					 FN(FOO) + 0x42, 102), 0);
	assert_int_equal(callstack__start(cs, 1, 2, FN(E), 110), 0);
	assert_int_equal(callstack__jump(cs, 1, 2, FN(E) + 0x10, FN(MAIN) + 0x25, 115), 0);
	assert_int_equal(callstack__call(cs, 1, 2, FN(MAIN) + 0x30, FN(A), 120), 0);
	assert_int_equal(callstack__return(cs, 1, 2, FN(A) + 0x10, FN(MAIN) + 0x35, 125), 0);
	/* resuming where it stopped is no signal */
	assert_int_equal(callstack__stop(cs, 1, 2, CS_STOP_SYSCALL, FN(MAIN) + 0x40,
					 FN(MAIN) + 0x42, 130), 0);
	assert_int_equal(callstack__start(cs, 1, 2, FN(MAIN) + 0x42, 140), 0);
}

static void test_signal_frames(void **state)
{
	struct cs_stats st;

	NEED_FXTCHECK();
	run_case(play_signals, NULL,
		 "# thread pid=1 tid=1 name=sig\n"
		 "0 main 10 40\n"
		 "1 foo 10 40\n"
		 "2 [syscall] 12 20\n"
		 "2 e 20 30\n"
		 "3 f 22 24\n"
		 "# thread pid=1 tid=2 name=jmp\n"
		 "0 main 100 140\n"
		 "1 foo 100 115\n"
		 "2 [syscall] 102 110\n"
		 "2 e 110 115\n"
		 "1 a 120 125\n"
		 "1 [syscall] 130 140\n", &st, NULL, 0);
	assert_int_equal(st.unknown_parents, 0);
	assert_int_equal(st.calls, 6);	/* 4 calls and the 2 handlers' entries */
	/* foo's call returned after 30 ns; e's after 10, by the trampoline */
	assert_int_equal(st.slowest_ns, 30);
	assert_int_equal(st.slowest_tid, 1);
	assert_string_equal(st.slowest_path, "main > foo");
}

static void test_invalid_args(void **state)
{
	struct fxt_arg many[FXT_MAX_ARGS + 1] = { 0 };
	struct fxt_writer *w;
	struct callstack *cs;
	struct cs_stats st;
	char path[256];

	errno = 0;
	assert_null(callstack__new(NULL, NULL));
	assert_int_equal(errno, EINVAL);
	assert_int_equal(callstack__finish(NULL), 0);
	callstack__free(NULL);
	memset(&st, 0xff, sizeof(st));
	callstack__stats(NULL, &st);
	assert_int_equal(st.calls, 0);
	assert_int_equal(callstack__call(NULL, 1, 1, 1, 2, 3), -EINVAL);
	assert_int_equal(callstack__return(NULL, 1, 1, 1, 2, 3), -EINVAL);
	assert_int_equal(callstack__jump(NULL, 1, 1, 1, 2, 3), -EINVAL);
	assert_int_equal(callstack__stop(NULL, 1, 1, CS_STOP_END, 1, 0, 3), -EINVAL);
	assert_int_equal(callstack__start(NULL, 1, 1, 1, 3), -EINVAL);
	assert_int_equal(callstack__error(NULL, 1, 1, 1, 2, "x", 3), -EINVAL);
	assert_int_equal(callstack__switch_out(NULL, 1, 1, 3), -EINVAL);
	assert_int_equal(callstack__switch_in(NULL, 1, 1, 3), -EINVAL);
	assert_int_equal(callstack__instant(NULL, 1, 1, "x", 3, NULL, 0), -EINVAL);

	test_tmp_path(path, sizeof(path), "cs", "fxt");
	assert_int_equal(fxt_writer__open(&w, path, NULL), 0);
	cs = callstack__new(w, NULL);	/* no symbolizer: names by address */
	assert_non_null(cs);
	callstack__stats(cs, NULL);
	assert_int_equal(callstack__stop(cs, 1, 1, (enum cs_stop_reason)42, 1, 0, 3), -EINVAL);
	assert_int_equal(callstack__instant(cs, 1, 1, "x", 3, many, FXT_MAX_ARGS + 1), -EINVAL);
	assert_int_equal(callstack__instant(cs, 1, 1, "x", 3, NULL, 2), -EINVAL);
	assert_int_equal(callstack__error(cs, 1, 1, 1, 2, NULL, 3), 0);
	assert_int_equal(callstack__call(cs, 1, 1, 0x10, 0x20, 4), 0);
	assert_int_equal(callstack__finish(cs), 0);
	callstack__free(cs);
	/* dropped unfinished */
	cs = callstack__new(w, NULL);
	assert_int_equal(callstack__call(cs, 1, 1, 0x10, 0x20, 5), 0);
	assert_int_equal(callstack__instant(cs, 1, 1, "x", 6, many, 2), 0);
	callstack__free(cs);
	assert_int_equal(fxt_writer__close(w), 0);
	assert_int_equal(fxtcheck_run(path, "--strict", NULL), 0);
	unlink(path);
}

static void test_writer_error_is_returned(void **state)
{
	struct fxt_writer *w;
	struct callstack *cs;
	int i, err = 0;

	if (!test_have_dev_full())
		skip();
	assert_int_equal(fxt_writer__open(&w, "/dev/full", NULL), 0);
	cs = callstack__new(w, &(struct callstack_opts){ .max_buffer = 1000 });
	assert_non_null(cs);
	for (i = 0; i < 100000 && !err; i++) {
		err = callstack__call(cs, 1, 1, 0x10, 0x20, i);
		if (!err)
			err = callstack__return(cs, 1, 1, 0x25, 0x15, i);
	}
	assert_int_equal(err, -ENOSPC);
	assert_int_equal(callstack__call(cs, 1, 1, 0x10, 0x20, i), -ENOSPC);
	assert_int_equal(callstack__finish(cs), -ENOSPC);
	callstack__free(cs);
	assert_int_equal(fxt_writer__close(w), -ENOSPC);
}

static int setup(void **state)
{
	huge_name = malloc(100 * 1024 + 1);
	if (!huge_name)
		return -1;
	memset(huge_name, 'x', 100 * 1024);
	huge_name[100 * 1024] = 0;
	return 0;
}

static int teardown(void **state)
{
	free(huge_name);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_plain_calls),
		cmocka_unit_test(test_recursion_capped),
		cmocka_unit_test(test_small_max_depth),
		cmocka_unit_test(test_longjmp),
		cmocka_unit_test(test_exception_unwinding),
		cmocka_unit_test(test_tail_calls),
		cmocka_unit_test(test_returns_above_start),
		cmocka_unit_test(test_above_start_ties),
		cmocka_unit_test(test_syscall_gaps),
		cmocka_unit_test(test_decode_error),
		cmocka_unit_test(test_two_threads),
		cmocka_unit_test(test_symbol_names),
		cmocka_unit_test(test_equal_timestamps),
		cmocka_unit_test(test_time_jitter),
		cmocka_unit_test(test_long_slices),
		cmocka_unit_test(test_early_write),
		cmocka_unit_test(test_symbol_cache),
		cmocka_unit_test(test_symbol_cache_stats),
		cmocka_unit_test(test_randomized),
		cmocka_unit_test(test_slowest_return),
		cmocka_unit_test(test_slowest_tail_call),
		cmocka_unit_test(test_signal_frames),
		cmocka_unit_test(test_invalid_args),
		cmocka_unit_test(test_writer_error_is_returned),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
