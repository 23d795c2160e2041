/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The listening socket of the flashd control socket: bound at a path
 * (a stale socket replaced, a live one left alone) or passed by systemd. */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>
#include <systemd/sd-daemon.h>

#include "cleanup.h"
#include "proto-internal.h"
#include "util.h"

/* ---- sockets ---- */

/* A socket file at path: 0 stale (nobody listens), -EADDRINUSE live. */
static int socket_probe(const struct sockaddr_un *sa)
{
	_cleanup_close_ int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);

	if (fd < 0)
		return -errno;
	if (connect(fd, (const struct sockaddr *) sa, sizeof(*sa)) == 0 || errno == EAGAIN)
		return -EADDRINUSE;
	return errno == ECONNREFUSED ? 0 : -errno;
}

int proto_listen(const char *path, int *ret_fd)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	_cleanup_close_ int fd = -1;
	struct stat st;
	int r;

	if (!path || path[0] != '/')
		return -EINVAL;
	if (strlen(path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	strcpy(sa.sun_path, path);
	r = util_mkdir_parents(path, 0755);
	if (r < 0)
		return r;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	if (bind(fd, (struct sockaddr *) &sa, sizeof(sa)) < 0) {
		if (errno != EADDRINUSE)
			return -errno;
		if (lstat(path, &st) < 0)
			return -errno;
		if (!S_ISSOCK(st.st_mode))
			return -EEXIST;
		r = socket_probe(&sa);
		if (r < 0)
			return r;
		if (unlink(path) < 0 && errno != ENOENT)
			return -errno;
		if (bind(fd, (struct sockaddr *) &sa, sizeof(sa)) < 0)
			return -errno;
	}
	if (chmod(path, 0666) < 0 || listen(fd, SOMAXCONN) < 0) {
		r = -errno;
		unlink(path);
		return r;
	}
	*ret_fd = TAKE_FD(fd);
	return 0;
}

int proto_listen_activated(int *ret_fd)
{
	int n, fd, flags;

	n = sd_listen_fds(1);
	if (n <= 0)
		return n;
	if (n > 1)
		return -EINVAL;
	fd = SD_LISTEN_FDS_START;
	if (sd_is_socket_unix(fd, SOCK_STREAM, 1, NULL, 0) <= 0)
		return -EINVAL;
	flags = fcntl(fd, F_GETFL);
	if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0)
		return -errno;
	*ret_fd = fd;
	return 1;
}
