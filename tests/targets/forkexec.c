// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Traced by the tests: forks; the child execs this same program as "forkexec child",
 * which computes and exits; the parent waits. Children are traced only with
 * --follow-forks.
 */
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

__attribute__((noinline)) int child_work(int n)
{
	return n <= 1 ? 1 : n * child_work(n - 1);
}

__attribute__((noinline)) int parent_work(int n)
{
	int s = 0;

	while (n--)
		s += n;
	return s;
}

int main(int argc, char **argv)
{
	int status;
	pid_t pid;

	if (argc > 1 && !strcmp(argv[1], "child")) {
		printf("child=%d\n", child_work(6));
		return 0;
	}
	fflush(stdout);
	pid = fork();
	if (pid < 0)
		return 1;
	if (pid == 0) {
		execl("/proc/self/exe", argv[0], "child", (char *)NULL);
		_exit(127);
	}
	if (waitpid(pid, &status, 0) != pid)
		return 1;
	printf("parent=%d child_status=%d\n", parent_work(10), WEXITSTATUS(status));
	return 0;
}
