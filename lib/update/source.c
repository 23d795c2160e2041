/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Bundle sources (source.h): the generic calls, and the fd backend. A
 * regular file is random access (pread), anything else (pipe, socket,
 * terminal) a stream read once in order. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include "source.h"
#include "util.h"

struct source_fd {
	struct source s;  /* first: the backend's state embeds the base */
	int fd;           /* borrowed */
	uint64_t pos;     /* next byte of the sequential read (files) */
};

ssize_t source_read(struct source *s, void *buf, size_t len, struct error *err)
{
	ssize_t n = s->ops->read(s, buf, len, err);

	if (n > 0)
		s->fetched += n;
	return n;
}

ssize_t source_pread(struct source *s, void *buf, size_t len, uint64_t off, struct error *err)
{
	ssize_t n;

	if (!s->ops->pread)
		return error_set(err, -ESPIPE, "%s source: no random access", s->ops->kind);
	n = s->ops->pread(s, buf, len, off, err);
	if (n > 0)
		s->fetched += n;
	return n;
}

int source_plan(struct source *s, const struct source_range *r, size_t n, struct error *err)
{
	return s->ops->plan ? s->ops->plan(s, r, n, err) : 0;
}

void source_expect(struct source *s, uint64_t len)
{
	if (s->ops->expect)
		s->ops->expect(s, len);
}

void source_free(struct source *s)
{
	if (s)
		s->ops->free(s);
}

static ssize_t fd_stream_read(struct source *s, void *buf, size_t len, struct error *err)
{
	struct source_fd *f = (struct source_fd *)s;

	for (;;) {
		struct pollfd p = { .fd = f->fd, .events = POLLIN };
		ssize_t n;
		int r;

		if (util_cancelled(s->cancel))
			return error_set(err, -ECANCELED, "cancelled");
		/* with a cancel flag, wake up to look at it */
		r = poll(&p, 1, s->cancel ? 200 : -1);
		if (r == 0 || (r < 0 && errno == EINTR))
			continue;
		n = read(f->fd, buf, len);
		if (n >= 0)
			return n;
		if (errno != EINTR && errno != EAGAIN)
			return error_set(err, -errno, "reading the bundle: %s", strerror(errno));
	}
}

static ssize_t fd_file_pread(struct source *s, void *buf, size_t len, uint64_t off,
			     struct error *err)
{
	struct source_fd *f = (struct source_fd *)s;
	ssize_t n;

	if (off > INT64_MAX - len)
		return error_set(err, -EINVAL, "bundle offset %" PRIu64 " out of range", off);
	n = util_pread_full(f->fd, buf, len, (off_t)off);
	if (n < 0)
		return error_set(err, (int)n, "reading the bundle at byte %" PRIu64 ": %s", off,
				 strerror((int)-n));
	return n;
}

/* A file is read in order through pread too: the sequential position and
 * random reads never disturb each other. */
static ssize_t fd_file_read(struct source *s, void *buf, size_t len, struct error *err)
{
	struct source_fd *f = (struct source_fd *)s;
	ssize_t n = fd_file_pread(s, buf, len, f->pos, err);

	if (n > 0)
		f->pos += n;
	return n;
}

static void fd_free(struct source *s)
{
	free(s);
}

static const struct source_ops fd_file_ops = {
	.kind = "file", .read = fd_file_read, .pread = fd_file_pread, .free = fd_free,
};

static const struct source_ops fd_stream_ops = {
	.kind = "stream", .read = fd_stream_read, .free = fd_free,
};

int source_new_fd(int fd, struct source **ret, struct error *err)
{
	struct source_fd *f;
	struct stat st;

	if (fstat(fd, &st) < 0)
		return error_set(err, -errno, "bundle fd %d: %s", fd, strerror(errno));
	f = calloc(1, sizeof(*f));
	if (!f)
		return -ENOMEM;
	f->fd = fd;
	f->s.ops = S_ISREG(st.st_mode) ? &fd_file_ops : &fd_stream_ops;
	f->s.size = S_ISREG(st.st_mode) ? (uint64_t)st.st_size : 0;
	*ret = &f->s;
	return 0;
}
