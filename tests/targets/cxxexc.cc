// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Traced by the tests: a C++ exception thrown three frames below its handler, so the
 * unwinder leaves level3, level2 and level1 without returning; the first iteration
 * returns through the same frames normally. One throw costs ~25k instructions.
 */
#include <cstdio>

struct failure {
	int code;
};

__attribute__((noinline)) void level3(int n)
{
	if (n % 4 == 3)
		throw failure{ n };
}

__attribute__((noinline)) void level2(int n)
{
	level3(n + 1);
}

__attribute__((noinline)) void level1(int n)
{
	level2(n * 2);
}

int main()
{
	int caught = 0, sum = 0;

	for (int i = 0; i < 2; i++) {
		try {
			level1(i);
		} catch (const failure &f) {
			caught++;
			sum += f.code;
		}
	}
	std::printf("caught=%d sum=%d\n", caught, sum);
	return 0;
}
