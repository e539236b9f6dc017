// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fxtcheck_run.h"

const char *fxtcheck_path(void)
{
	static const char *const tries[] = { "../shared/tools/fxtcheck.py",
					     "/work/shared/tools/fxtcheck.py" };
	const char *p = getenv("FXTCHECK");
	size_t i;

	if (p && !access(p, R_OK))
		return p;
	for (i = 0; i < sizeof(tries) / sizeof(tries[0]); i++)
		if (!access(tries[i], R_OK))
			return tries[i];
	return NULL;
}

/*
 * Python starts slowly on a loaded machine (seconds), so checks go to one python process
 * per test binary that imports fxtcheck and answers "RC LEN\n" + LEN bytes of output per
 * request, with the same functions the command line uses (check_file, print_stacks,
 * print_text). fxtcheck_cli() runs the real command line.
 */
static const char coproc_src[] =
	"import io, sys\n"
	"sys.path.insert(0, sys.argv[1])\n"
	"import fxtcheck\n"
	"while True:\n"
	"    line = sys.stdin.readline()\n"
	"    if not line:\n"
	"        break\n"
	"    flags, path = line.rstrip('\\n').split('\\t', 1)\n"
	"    fl = flags.split()\n"
	"    out = io.StringIO()\n"
	"    try:\n"
	"        ck = fxtcheck.check_file(path, strict='--strict' in fl,\n"
	"                                 want_stacks='--stacks' in fl)\n"
	"        s = ck.summary()\n"
	"        if '--stacks' in fl:\n"
	"            fxtcheck.print_stacks(ck.stacks(), out)\n"
	"        else:\n"
	"            fxtcheck.print_text(s, out)\n"
	"        rc = 0 if s['valid'] else 1\n"
	"    except OSError as e:\n"
	"        out.write(str(e))\n"
	"        rc = 2\n"
	"    data = out.getvalue().encode()\n"
	"    sys.stdout.buffer.write(b'%d %d\\n' % (rc, len(data)) + data)\n"
	"    sys.stdout.buffer.flush()\n";

static FILE *co_in, *co_out;
static pid_t co_pid;

static void coproc_stop(void)
{
	if (co_in)
		fclose(co_in);
	if (co_out)
		fclose(co_out);
	if (co_pid > 0)
		waitpid(co_pid, NULL, 0);
	co_in = co_out = NULL;
	co_pid = 0;
}

static int coproc_start(void)
{
	const char *py = getenv("PYTHON") ? getenv("PYTHON") : "python3";
	const char *tool = fxtcheck_path();
	int to[2], from[2];
	char *dir, *slash;

	if (co_pid)
		return co_pid > 0 ? 0 : -1;
	co_pid = -1;
	if (!tool || pipe(to) || pipe(from))
		return -1;
	dir = strdup(tool);
	slash = dir ? strrchr(dir, '/') : NULL;
	if (slash)
		*slash = 0;
	co_pid = fork();
	if (co_pid == 0) {
		dup2(to[0], 0);
		dup2(from[1], 1);
		close(to[0]);
		close(to[1]);
		close(from[0]);
		close(from[1]);
		execlp(py, py, "-c", coproc_src, slash ? dir : ".", (char *)NULL);
		_exit(127);
	}
	free(dir);
	close(to[0]);
	close(from[1]);
	if (co_pid < 0)
		return -1;
	co_in = fdopen(to[1], "w");
	co_out = fdopen(from[0], "r");
	signal(SIGPIPE, SIG_IGN);
	atexit(coproc_stop);
	return co_in && co_out ? 0 : -1;
}

int fxtcheck_run(const char *file, const char *flags, char **out)
{
	int rc, len;
	char *buf;

	if (out)
		*out = NULL;
	if (coproc_start())
		return -1;
	fprintf(co_in, "%s\t%s\n", flags, file);
	fflush(co_in);
	if (fscanf(co_out, "%d %d", &rc, &len) != 2 || fgetc(co_out) != '\n' || len < 0)
		return -1;
	buf = malloc((size_t)len + 1);
	if (!buf || fread(buf, 1, (size_t)len, co_out) != (size_t)len) {
		free(buf);
		return -1;
	}
	buf[len] = 0;
	if (out)
		*out = buf;
	else
		free(buf);
	return rc;
}

int fxtcheck_cli(const char *file, const char *flags, char **out)
{
	const char *py = getenv("PYTHON") ? getenv("PYTHON") : "python3";
	const char *tool = fxtcheck_path();
	size_t len = 0, cap = 0;
	char *cmd, *buf = NULL;
	FILE *f;
	int st;

	if (out)
		*out = NULL;
	if (!tool || asprintf(&cmd, "%s %s %s %s", py, tool, flags, file) < 0)
		return -1;
	f = popen(cmd, "r");
	free(cmd);
	if (!f)
		return -1;
	for (;;) {
		size_t n;

		if (len + 4096 + 1 > cap) {
			char *nb = realloc(buf, cap = (cap ? cap * 2 : 65536));

			if (!nb)
				break;
			buf = nb;
		}
		n = fread(buf + len, 1, cap - len - 1, f);
		if (!n)
			break;
		len += n;
	}
	if (buf)
		buf[len] = 0;
	st = pclose(f);
	if (out)
		*out = buf ? buf : strdup("");
	else
		free(buf);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

void test_tmp_path(char *buf, size_t size, const char *tag, const char *ext)
{
	static unsigned n;
	const char *dir = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";

	snprintf(buf, size, "%s/ptbpf-%s-%d-%u.%s", dir, tag, (int)getpid(), n++, ext);
}

char *test_read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	long n;

	if (!f)
		return NULL;
	if (fseek(f, 0, SEEK_END) || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET))
		goto out;
	buf = malloc((size_t)n + 1);
	if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
		free(buf);
		buf = NULL;
		goto out;
	}
	if (buf) {
		buf[n] = 0;
		if (len)
			*len = (size_t)n;
	}
out:
	fclose(f);
	return buf;
}

int test_have_dev_full(void)
{
	if (!access("/dev/full", W_OK))
		return 1;
	printf("SKIP: no writable /dev/full\n");
	return 0;
}

/* The text of string ref `ref` (indexed or inline at *p, which it advances). */
static const char *ref_text(char *const *table, uint16_t ref, const uint8_t **p, char *buf)
{
	size_t n = ref & 0x7fff;

	if (!ref)
		return "";
	if (!(ref & 0x8000))
		return table[ref] ? table[ref] : "";
	memcpy(buf, *p, n);
	buf[n] = 0;
	*p += (n + 7) / 8 * 8;
	return buf;
}

int test_fxt_count_arg(const void *data, size_t len, const char *arg)
{
	const uint8_t *p = data, *end = p + len;
	char *table[0x8000] = { 0 }, buf[0x8000];
	int count = 0, i;

	while (p + 8 <= end) {
		uint64_t h, a;
		const uint8_t *q = p + 8, *next;
		unsigned size, nargs, k;

		memcpy(&h, p, 8);
		size = (h >> 4) & 0xfff;
		if (!size)
			break;
		next = p + size * 8;
		if ((h & 0xf) == 2) {		/* string record */
			unsigned idx = (h >> 16) & 0x7fff, n = (h >> 32) & 0x7fff;

			free(table[idx]);
			table[idx] = strndup((const char *)q, n);
		} else if ((h & 0xf) == 4) {	/* event */
			nargs = (h >> 20) & 0xf;
			q += 8;			/* timestamp */
			if (!((h >> 24) & 0xff))
				q += 16;	/* inline thread */
			ref_text(table, (h >> 32) & 0xffff, &q, buf);
			ref_text(table, (h >> 48) & 0xffff, &q, buf);
			for (k = 0; k < nargs && q + 8 <= next; k++) {
				const uint8_t *an;

				memcpy(&a, q, 8);
				an = q + 8;
				if (!strcmp(ref_text(table, (a >> 16) & 0xffff, &an, buf), arg))
					count++;
				q += ((a >> 4) & 0xfff) * 8;
			}
		}
		p = next;
	}
	for (i = 0; i < 0x8000; i++)
		free(table[i]);
	return count;
}
