// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * A small C program for the symbol corpus (tests/integration/symbols_corpus.sh): built
 * with each linker as PIE, non-PIE and static, run under the singlestep backend, its
 * call targets named by ptbpf and by perf. Calls of its own (direct, through a pointer,
 * recursive, a static function), and libc functions whose addresses carry several
 * names (memmove/memcpy, strchr/index, strlen's ifunc) so that alias choice shows.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct op {
	const char *name;
	long (*fn)(long, long);
};

__attribute__((noinline)) static long add(long a, long b)
{
	return a + b;
}

__attribute__((noinline)) long mul(long a, long b)
{
	return a * b;
}

__attribute__((noinline)) long fold(const struct op *op, const long *v, int n)
{
	long acc = v[0];
	int i;

	for (i = 1; i < n; i++)
		acc = op->fn(acc, v[i]);
	return acc;
}

__attribute__((noinline)) long depth(long n)
{
	return n <= 0 ? 0 : 1 + depth(n - 1);
}

__attribute__((noinline)) size_t text_work(char *buf, size_t size, const char *word)
{
	const char *hit;

	memmove(buf + 1, buf, size - 1);
	memcpy(buf, word, strlen(word) + 1);
	hit = strchr(buf, 'r');
	return strlen(buf) + (hit ? (size_t)(hit - buf) : 0);
}

int main(int argc, char **argv)
{
	static const struct op ops[] = { { "add", add }, { "mul", mul } };
	long v[] = { 1, 2, 3, 4, 5 };
	char buf[64] = "corpus";
	long total = 0;
	int i;

	for (i = 0; i < 2; i++)
		total += fold(&ops[i], v, 5);
	total += depth(argc + 3);
	total += (long)text_work(buf, sizeof(buf), argc > 1 ? argv[1] : "words");
	printf("%ld\n", total);
	return 0;
}
