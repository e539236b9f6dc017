// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * `ptbpf symbols BIN [PATTERN]` and `--uprobe '?[PATTERN]'`: the functions of a program
 * a user half-remembers, ranked (magic-trace's `-trigger ?` picker, non-interactive):
 * an exact name first, then names that start with the pattern, contain it, or hold its
 * letters in order; among equals, a sized symbol, fewer leading underscores, a shorter
 * name. Case is ignored. PLT stubs are left out: a uprobe there is not the function.
 */
#include <argp.h>
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cli.h"
#include "commands.h"
#include "log.h"
#include "symtab.h"

#define PICK_SHOWN 40	/* lines printed at most; the rest are counted */

struct pick {
	const struct sym *sym;
	unsigned rank;		/* 0 exact ... 4 letters in order */
	unsigned underscores;
	size_t len;
};

/* The pattern's letters in order in `name`, case ignored (fuzzy). */
static bool in_order(const char *name, const char *pattern)
{
	for (; *pattern; pattern++) {
		while (*name && tolower((unsigned char)*name) != tolower((unsigned char)*pattern))
			name++;
		if (!*name++)
			return false;
	}
	return true;
}

/* 0..4 as above; -1: no match. */
static int rank_of(const char *name, const char *pattern)
{
	size_t plen = strlen(pattern);

	if (!plen)
		return 3;
	if (!strcmp(name, pattern))
		return 0;
	if (!strcasecmp(name, pattern))
		return 1;
	if (!strncasecmp(name, pattern, plen))
		return 2;
	if (strcasestr(name, pattern))
		return 3;
	return in_order(name, pattern) ? 4 : -1;
}

static int cmp_pick(const void *a, const void *b)
{
	const struct pick *x = a, *y = b;

	if (x->rank != y->rank)
		return x->rank < y->rank ? -1 : 1;
	if (!x->sym->size != !y->sym->size)
		return x->sym->size ? -1 : 1;
	if (x->underscores != y->underscores)
		return x->underscores < y->underscores ? -1 : 1;
	if (x->len != y->len)
		return x->len < y->len ? -1 : 1;
	return strcmp(x->sym->name, y->sym->name);
}

int symbols_pick(const char *bin, const char *pattern)
{
	struct symtab *st = NULL;
	struct pick *picks = NULL;
	uint32_t i, n = 0, nr;
	int err, ret = 1;

	if (!pattern)
		pattern = "";
	err = symtab__load(bin, &st);
	if (err) {
		elog("cannot read the symbols of %s: %s\n", bin, strerror(-err));
		return err == -ENOMEM ? 1 : 2;
	}
	nr = symtab__count(st);
	picks = calloc(nr ? nr : 1, sizeof(*picks));
	if (!picks) {
		elog("out of memory\n");
		goto out;
	}
	for (i = 0; i < nr; i++) {
		const struct sym *s = symtab__get(st, i);
		const char *name = s->name;
		int rank;

		if (!name || !*name || strstr(name, "@plt"))
			continue;
		rank = rank_of(name, pattern);
		if (rank < 0)
			continue;
		picks[n].sym = s;
		picks[n].rank = rank;
		picks[n].len = strlen(name);
		while (name[picks[n].underscores] == '_')
			picks[n].underscores++;
		n++;
	}
	qsort(picks, n, sizeof(*picks), cmp_pick);
	/* one line per name: aliases at one address keep the best-ranked name */
	for (i = 0, nr = 0; i < n; i++) {
		uint32_t j;

		for (j = 0; j < nr; j++)
			if (!strcmp(picks[j].sym->name, picks[i].sym->name))
				break;
		if (j == nr)
			picks[nr++] = picks[i];
	}
	n = nr;
	if (!n) {
		elog("no function of %s matches '%s'\n", bin, pattern);
		goto out;
	}
	for (i = 0; i < n && i < PICK_SHOWN; i++)
		printf("%-40s 0x%-12llx %6llu  --uprobe %s:%s\n", picks[i].sym->name,
		       (unsigned long long)picks[i].sym->addr,
		       (unsigned long long)picks[i].sym->size, bin, picks[i].sym->name);
	if (n > PICK_SHOWN)
		elog("%u more functions match '%s': give a longer pattern\n", n - PICK_SHOWN,
		     pattern);
	ret = fflush(stdout) ? 1 : 0;
out:
	free(picks);
	symtab__free(st);
	return ret;
}

struct symbols_args {
	const char *bin, *pattern;
};

static error_t parse_symbols_arg(int key, char *arg, struct argp_state *state)
{
	struct symbols_args *a = state->input;

	switch (key) {
	case ARGP_KEY_ARG:
		if (!a->bin)
			a->bin = arg;
		else if (!a->pattern)
			a->pattern = arg;
		else
			return usage_error(state, "unexpected argument '%s'", arg);
		return 0;
	case ARGP_KEY_END:
		if (!a->bin)
			return usage_error(state, "give the program: ptbpf symbols BIN [PATTERN]");
		return 0;
	default:
		return ARGP_ERR_UNKNOWN;
	}
}

int cmd_symbols(int argc, char **argv)
{
	static const struct argp_option options[] = { {} };
	static const struct argp argp = {
		.options = options,
		.parser = parse_symbols_arg,
		.args_doc = "BIN [PATTERN]",
		.doc = "List the functions of BIN whose names match PATTERN, best first: the "
		       "exact name, then names that start with it, contain it, or hold its "
		       "letters in order (case ignored); each with its address, size and the "
		       "--uprobe that traces it. Without PATTERN, every function.\n"
		       "\n"
		       "Exit status: 0 when something matched, 1 when nothing did, 2 on a usage "
		       "error or a file without symbols."
		       "\v"
		       "Examples:\n"
		       "  ptbpf symbols ./server handle     handle_request, handle_conn, ...\n"
		       "  ptbpf --uprobe '?hndl' -- ./server   the same for the traced program",
	};
	struct symbols_args a = {};
	int err;

	err = cli_parse(&argp, argc, argv, 0, &a);
	if (err)
		return err;
	return symbols_pick(a.bin, a.pattern);
}
