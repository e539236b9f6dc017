// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * upload_tool: runs the daemon's uploader (user/daemon/upload.c) on a spool, as the
 * daemon does, for the S3 integration tests and the upload benchmark.
 *
 *   upload_tool --endpoint URL --bucket B [--prefix P] [--credentials FILE] [--rate BYTES]
 *               [--concurrency N] [--host H] [--metrics FILE] [--until-empty] SPOOL
 *
 * Runs until SIGTERM/SIGINT, or with --until-empty until the spool's queue is drained;
 * then writes the metrics (Prometheus text) to FILE and exits 0 (1 if the queue is not
 * empty at the end).
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "upload.h"

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	stop = 1;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "endpoint", required_argument, NULL, 'e' },
		{ "bucket", required_argument, NULL, 'b' },
		{ "prefix", required_argument, NULL, 'p' },
		{ "credentials", required_argument, NULL, 'c' },
		{ "rate", required_argument, NULL, 'r' },
		{ "concurrency", required_argument, NULL, 'j' },
		{ "host", required_argument, NULL, 'H' },
		{ "metrics", required_argument, NULL, 'm' },
		{ "until-empty", no_argument, NULL, 'u' },
		{},
	};
	struct upload_config cfg = { .region = "us-east-1", .path_style = true, .concurrency = 2 };
	const char *host = "testhost", *metrics = NULL;
	struct uploader *u = NULL;
	bool until_empty = false;
	uint64_t files = 1, bytes;
	int opt, err;

	while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (opt) {
		case 'e': cfg.endpoint = optarg; break;
		case 'b': cfg.bucket = optarg; break;
		case 'p': cfg.prefix = optarg; break;
		case 'c': cfg.credentials_file = optarg; break;
		case 'r': cfg.max_bytes_per_second = strtoull(optarg, NULL, 10); break;
		case 'j': cfg.concurrency = atoi(optarg); break;
		case 'H': host = optarg; break;
		case 'm': metrics = optarg; break;
		case 'u': until_empty = true; break;
		default: return 2;
		}
	}
	if (optind != argc - 1 || !cfg.endpoint || !cfg.bucket) {
		fprintf(stderr, "usage: upload_tool --endpoint URL --bucket B [options] SPOOL\n");
		return 2;
	}
	signal(SIGTERM, on_signal);
	signal(SIGINT, on_signal);
	err = uploader__new(&cfg, argv[optind], host, &u);
	if (!err)
		err = uploader__start(u);
	if (err) {
		fprintf(stderr, "upload_tool: %s\n", strerror(-err));
		uploader__free(u);
		return 1;
	}
	while (!stop) {
		struct timespec ts = { 0, 50 * 1000000 };

		nanosleep(&ts, NULL);
		uploader__pending(u, &files, &bytes);
		if (until_empty && !files)
			break;
	}
	if (metrics) {
		FILE *f = fopen(metrics, "w");

		if (f) {
			uploader__write_metrics(u, f);
			fclose(f);
		}
	}
	uploader__pending(u, &files, &bytes);
	uploader__free(u);
	return files ? 1 : 0;
}
