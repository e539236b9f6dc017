// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The `make demo` program: a toy server that handles requests in a loop. One request
 * in fifty misses the cache, rebuilds an index and waits on "disk" (a 600 ms sleep),
 * so `ptbpf --uprobe demo_server:handle_request --latency-over 300ms` catches it.
 * Kept to a few hundred instructions per request so the singlestep backend (tens to
 * hundreds of microseconds per instruction, with load) runs it in seconds: a fast
 * request then takes 20-110 ms stepped, under the threshold, and microseconds natively.
 */
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#define TABLE_SIZE 64
#define SLOW_EVERY 50

struct request {
	int id;
	char key[16];
	unsigned hash;
	int value;
};

static int table[TABLE_SIZE];
static unsigned long served;

static void parse_request(struct request *req, int id)
{
	int i, n = id;

	req->id = id;
	for (i = 0; i < 8; i++) {
		req->key[i] = 'a' + n % 26;
		n = n / 26 + 7;
	}
	req->key[8] = '\0';
}

static unsigned hash_key(const char *key)
{
	unsigned h = 2166136261u;

	while (*key)
		h = (h ^ (unsigned char)*key++) * 16777619u;
	return h;
}

static int lookup(struct request *req)
{
	/* Every SLOW_EVERY-th request misses. */
	if (req->id % SLOW_EVERY == SLOW_EVERY - 1)
		return -1;
	req->value = table[req->hash % TABLE_SIZE];
	return 0;
}

static void rebuild_index(void)
{
	int i;

	for (i = 0; i < TABLE_SIZE; i++)
		table[i] = (int)hash_key("index") + i;
}

static void wait_for_disk(void)
{
	struct timespec ts = { .tv_sec = 0, .tv_nsec = 600 * 1000 * 1000 };

	nanosleep(&ts, NULL);
}

static void slow_path(struct request *req)
{
	rebuild_index();
	wait_for_disk();
	req->value = table[req->hash % TABLE_SIZE];
}

static void respond(const struct request *req)
{
	served += (unsigned long)req->value & 1;
}

__attribute__((noinline)) int handle_request(int id)
{
	struct request req;

	parse_request(&req, id);
	req.hash = hash_key(req.key);
	if (lookup(&req))
		slow_path(&req);
	respond(&req);
	return req.value;
}

int main(int argc, char **argv)
{
	int i, n = argc > 1 ? atoi(argv[1]) : 60;

	for (i = 0; i < n; i++)
		handle_request(i);
	return served == (unsigned long)-1;
}
