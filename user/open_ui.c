// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * `ptbpf decode --open`: hand the trace to the Perfetto UI in the browser, as Perfetto's
 * own tools/open_trace_in_ui does: serve the file once over HTTP on 127.0.0.1 (port
 * 9001, the origin ui.perfetto.dev accepts ?url= traces from), with CORS for the UI's
 * origin, and open https://ui.perfetto.dev/#!/?url=http://127.0.0.1:9001/NAME.
 * libmicrohttpd serves; the command returns once the UI has fetched the file whole.
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "daemon_libs.h"
#include "log.h"
#include "open_ui.h"
#include "privs.h"

#define PERFETTO_UI "https://ui.perfetto.dev"

struct serve_ctx {
	const char *path;
	char url_path[512];		/* "/NAME" */
	volatile sig_atomic_t served;	/* the file went out whole */
};

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
				  const char *method, const char *version,
				  const char *upload_data, size_t *upload_data_size,
				  void **req_cls)
{
	struct serve_ctx *ctx = cls;
	struct MHD_Response *resp;
	enum MHD_Result ret;
	struct stat st;
	int fd;

	if (strcmp(method, "GET") || strcmp(url, ctx->url_path)) {
		static const char nf[] = "not found\n";

		resp = sym_MHD_create_response_from_buffer(sizeof(nf) - 1, (void *)nf,
						       MHD_RESPMEM_PERSISTENT);
		ret = sym_MHD_queue_response(conn, MHD_HTTP_NOT_FOUND, resp);
		sym_MHD_destroy_response(resp);
		return ret;
	}
	fd = open(ctx->path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st)) {
		if (fd >= 0)
			close(fd);
		return MHD_NO;
	}
	resp = sym_MHD_create_response_from_fd64((uint64_t)st.st_size, fd);
	if (!resp) {
		close(fd);
		return MHD_NO;
	}
	sym_MHD_add_response_header(resp, "Access-Control-Allow-Origin", PERFETTO_UI);
	sym_MHD_add_response_header(resp, "Cache-Control", "no-cache");
	sym_MHD_add_response_header(resp, "Content-Type", "application/octet-stream");
	*req_cls = ctx;		/* marks a request for the file, for on_completed */
	ret = sym_MHD_queue_response(conn, MHD_HTTP_OK, resp);
	sym_MHD_destroy_response(resp);
	return ret;
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **req_cls,
			 enum MHD_RequestTerminationCode toe)
{
	struct serve_ctx *ctx = cls;

	if (*req_cls == ctx && toe == MHD_REQUEST_TERMINATED_COMPLETED_OK)
		ctx->served = 1;
}

static volatile sig_atomic_t interrupted;

static void on_sigint(int sig)
{
	interrupted = 1;
}

/* The browser, if this session has a display; otherwise the user opens the URL. */
static void launch_browser(const char *url)
{
	pid_t pid;

	if (!getenv("DISPLAY") && !getenv("WAYLAND_DISPLAY"))
		return;
	pid = fork();
	if (pid == 0) {
		int null = open("/dev/null", O_RDWR);

		if (null >= 0) {
			dup2(null, STDOUT_FILENO);
			dup2(null, STDERR_FILENO);
		}
		privs_restore_nofile();
		execlp("xdg-open", "xdg-open", url, (char *)NULL);
		_exit(127);
	}
}

int perfetto_open(const char *path, unsigned port)
{
	struct sockaddr_in addr = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
				    .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct sigaction sa = { .sa_handler = on_sigint }, old_int, old_term;
	struct serve_ctx ctx = { .path = path };
	const char *name = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
	struct MHD_Daemon *d;
	char url[1024];

	if (lazylib_load(&lib_microhttpd))
		return -ENOENT;
	snprintf(ctx.url_path, sizeof(ctx.url_path), "/%s", name);
	d = sym_MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG,
				 (uint16_t)port, NULL, NULL, on_request, &ctx,
				 MHD_OPTION_SOCK_ADDR, &addr, MHD_OPTION_NOTIFY_COMPLETED,
				 on_completed, &ctx, MHD_OPTION_END);
	if (!d) {
		elog("cannot serve the trace on 127.0.0.1:%u (in use? Perfetto's UI takes "
		     "traces from 127.0.0.1:9001 only; --open=PORT for another)\n", port);
		return -EADDRINUSE;
	}
	snprintf(url, sizeof(url), PERFETTO_UI "/#!/?url=http://127.0.0.1:%u/%s", port, name);
	elog("open %s (serving %s once on 127.0.0.1:%u; Ctrl-C to stop)\n", url, path, port);
	sigaction(SIGINT, &sa, &old_int);
	sigaction(SIGTERM, &sa, &old_term);
	launch_browser(url);
	while (!ctx.served && !interrupted) {
		struct timespec ts = { 0, 50 * 1000000 };

		nanosleep(&ts, NULL);
		while (waitpid(-1, NULL, WNOHANG) > 0)
			;
	}
	sym_MHD_stop_daemon(d);
	sigaction(SIGINT, &old_int, NULL);
	sigaction(SIGTERM, &old_term, NULL);
	return ctx.served ? 0 : -EINTR;
}
