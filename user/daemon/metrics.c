// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon_libs.h"
#include "log.h"
#include "metrics.h"

struct metrics_server {
	struct MHD_Daemon *mhd;
	pthread_mutex_t lock;
	char *text;
	size_t len;
	bool ready;
};

static enum MHD_Result reply(struct MHD_Connection *conn, unsigned status, const char *type,
			     const char *body, size_t len)
{
	struct MHD_Response *r;
	enum MHD_Result ret;

	r = sym_MHD_create_response_from_buffer(len, (void *)body, MHD_RESPMEM_MUST_COPY);
	if (!r)
		return MHD_NO;
	sym_MHD_add_response_header(r, "Content-Type", type);
	ret = sym_MHD_queue_response(conn, status, r);
	sym_MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *conn, const char *url,
			      const char *method, const char *version, const char *upload_data,
			      size_t *upload_data_size, void **req_ctx)
{
	struct metrics_server *m = cls;
	enum MHD_Result ret;

	if (strcmp(method, "GET") && strcmp(method, "HEAD"))
		return reply(conn, MHD_HTTP_METHOD_NOT_ALLOWED, "text/plain", "GET only\n", 9);
	if (!strcmp(url, "/metrics")) {
		pthread_mutex_lock(&m->lock);
		ret = reply(conn, MHD_HTTP_OK, "text/plain; version=0.0.4; charset=utf-8",
			    m->text ? m->text : "", m->text ? m->len : 0);
		pthread_mutex_unlock(&m->lock);
		return ret;
	}
	if (!strcmp(url, "/healthz"))
		return reply(conn, MHD_HTTP_OK, "text/plain", "ok\n", 3);
	if (!strcmp(url, "/readyz")) {
		bool ready;

		pthread_mutex_lock(&m->lock);
		ready = m->ready;
		pthread_mutex_unlock(&m->lock);
		return ready ? reply(conn, MHD_HTTP_OK, "text/plain", "ready\n", 6)
			     : reply(conn, MHD_HTTP_SERVICE_UNAVAILABLE, "text/plain",
				     "not ready: rules not armed yet\n", 31);
	}
	return reply(conn, MHD_HTTP_NOT_FOUND, "text/plain",
		     "not found: /metrics, /healthz, /readyz\n", 39);
}

int metrics_server__start(const char *listen, struct metrics_server **out)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	struct metrics_server *m;
	char host[64];
	unsigned port;

	*out = NULL;
	if (sscanf(listen, "%63[^:]:%u", host, &port) != 2 || port > 65535)
		return -EINVAL;
	if (!strcmp(host, "localhost"))
		strcpy(host, "127.0.0.1");
	if (inet_pton(AF_INET, host, &sa.sin_addr) != 1) {
		elog("metrics.listen %s: not an IPv4 address\n", listen);
		return -EINVAL;
	}
	sa.sin_port = htons(port);
	if (lazylib_load(&lib_microhttpd))
		return -ENOENT;
	m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	pthread_mutex_init(&m->lock, NULL);
	m->mhd = sym_MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG, port,
				      NULL, NULL, handle, m, MHD_OPTION_SOCK_ADDR, &sa,
				      MHD_OPTION_CONNECTION_LIMIT, 16, MHD_OPTION_CONNECTION_TIMEOUT,
				      10, MHD_OPTION_END);
	if (!m->mhd) {
		int err = errno ? -errno : -EADDRINUSE;

		elog("metrics.listen %s: cannot listen: %s\n", listen, strerror(-err));
		pthread_mutex_destroy(&m->lock);
		free(m);
		return err;
	}
	*out = m;
	return 0;
}

void metrics_server__publish(struct metrics_server *m, const char *text, size_t len, bool ready)
{
	char *copy;

	if (!m)
		return;
	copy = malloc(len + 1);
	if (!copy)
		return;
	memcpy(copy, text, len);
	copy[len] = '\0';
	pthread_mutex_lock(&m->lock);
	free(m->text);
	m->text = copy;
	m->len = len;
	m->ready = ready;
	pthread_mutex_unlock(&m->lock);
}

void metrics_server__stop(struct metrics_server *m)
{
	if (!m)
		return;
	sym_MHD_stop_daemon(m->mhd);
	pthread_mutex_destroy(&m->lock);
	free(m->text);
	free(m);
}

int metrics_write_textfile(const char *dir, const char *text, size_t len)
{
	char tmp[PATH_MAX], final[PATH_MAX];
	int fd, err = 0;

	snprintf(tmp, sizeof(tmp), "%s/.ptbpf.prom.tmp", dir);
	snprintf(final, sizeof(final), "%s/ptbpf.prom", dir);
	/* node_exporter reads it as another user: readable, as its other .prom files */
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	if (write(fd, text, len) != (ssize_t)len)
		err = errno ? -errno : -EIO;
	if (close(fd) < 0 && !err)
		err = -errno;
	if (!err && rename(tmp, final) < 0)
		err = -errno;
	if (err)
		unlink(tmp);
	return err;
}
