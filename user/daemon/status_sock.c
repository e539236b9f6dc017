// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The status socket (status_sock.h). Two locks on it, as the issue asks of anything
 * that shows what a root daemon traces: the file system's (a 0600 socket in a 0700
 * directory: connect() needs write permission on the socket) and the kernel's word on
 * who connected (SO_PEERCRED, the credentials at connect() time), which also holds for
 * a peer that got past the first, e.g. a process with root's fsuid but another euid.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "status_sock.h"

#define ANSWER_TIMEOUT_MS 5000
#define ANSWER_MAX (16u << 20)

static int sock_addr(const char *dir, struct sockaddr_un *sa)
{
	memset(sa, 0, sizeof(*sa));
	sa->sun_family = AF_UNIX;
	if ((size_t)snprintf(sa->sun_path, sizeof(sa->sun_path), "%s/" STATUS_SOCK_NAME, dir) >=
	    sizeof(sa->sun_path))
		return -ENAMETOOLONG;
	return 0;
}

int status_sock__listen(const char *dir)
{
	struct sockaddr_un sa;
	mode_t old_mask;
	int fd, probe, err;

	err = sock_addr(dir, &sa);
	if (err)
		return err;
	/* a live daemon on this state directory keeps it */
	probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (probe < 0)
		return -errno;
	err = connect(probe, (struct sockaddr *)&sa, sizeof(sa)) ? -errno : -EADDRINUSE;
	close(probe);
	if (err == -EADDRINUSE)
		return err;
	unlink(sa.sun_path);	/* a killed daemon's */
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	/* created 0600 from the start: no window in which another user may connect */
	old_mask = umask(0177);
	err = bind(fd, (struct sockaddr *)&sa, sizeof(sa)) ? -errno : 0;
	umask(old_mask);
	if (!err && chmod(sa.sun_path, 0600))
		err = -errno;
	if (!err && listen(fd, 16))
		err = -errno;
	if (err) {
		close(fd);
		return err;
	}
	return fd;
}

void status_sock__close(int lfd, const char *dir)
{
	struct sockaddr_un sa;

	if (lfd < 0)
		return;
	close(lfd);
	if (!sock_addr(dir, &sa))
		unlink(sa.sun_path);
}

static void send_all(int fd, const char *buf, size_t len)
{
	while (len) {
		ssize_t n = send(fd, buf, len, MSG_NOSIGNAL | MSG_DONTWAIT);

		if (n <= 0)
			return;	/* a peer that does not read gets what fitted */
		buf += n;
		len -= n;
	}
}

void status_sock__serve(int lfd, const char *text, size_t len, uid_t *refused_uid,
			pid_t *refused_pid)
{
	static const char refusal[] = STATUS_SOCK_REFUSED "the daemon's status is for root only "
				      "(run ptbpf daemon status as root)\n";
	struct ucred cred;
	socklen_t clen;
	int fd;

	*refused_uid = (uid_t)-1;
	*refused_pid = 0;
	while ((fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK)) >= 0) {
		clen = sizeof(cred);
		if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &clen) || cred.uid != 0) {
			send_all(fd, refusal, sizeof(refusal) - 1);
			*refused_uid = clen == sizeof(cred) ? cred.uid : (uid_t)-1;
			*refused_pid = clen == sizeof(cred) ? cred.pid : 0;
		} else {
			send_all(fd, text, len);
		}
		close(fd);
	}
}

int status_sock__query(const char *dir, char **out)
{
	struct sockaddr_un sa;
	char *buf = NULL, *nbuf;
	size_t len = 0, cap = 0;
	int fd, err;

	*out = NULL;
	err = sock_addr(dir, &sa);
	if (err)
		return err;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		err = -errno;
		goto out;
	}
	for (;;) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		ssize_t n;

		if (len + 1 >= cap) {
			cap = cap ? cap * 2 : 65536;
			if (cap > ANSWER_MAX) {
				err = -EFBIG;
				goto out;
			}
			nbuf = realloc(buf, cap);
			if (!nbuf) {
				err = -ENOMEM;
				goto out;
			}
			buf = nbuf;
		}
		/* the daemon answers from its loop: a hung daemon must not hang the client */
		n = poll(&p, 1, ANSWER_TIMEOUT_MS);
		if (n == 0) {
			err = -ETIMEDOUT;
			goto out;
		}
		n = n < 0 ? -1 : read(fd, buf + len, cap - len - 1);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			err = -errno;
			goto out;
		}
		if (n == 0)
			break;
		len += n;
	}
	buf[len] = '\0';
	*out = buf;
	buf = NULL;
out:
	free(buf);
	close(fd);
	return err;
}
