/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Where the install engine reads a bundle from.
 *
 * A stream (pipe, stdin, a socket) is read once, in order. A random-access
 * source (a regular file, an http(s) URL whose server answers Range
 * requests) can also be read at any offset: an adaptive install uses that to
 * fetch only the blocks of an image that the target slot does not already
 * hold, and a resumed install to fetch only what an interrupted one did not
 * write. Every source counts the bytes it fetched, so progress and the
 * benchmark can say how much of a bundle crossed the wire.
 *
 * Backends: `source.c` (fds: regular file = random access, else stream) and
 * `source_http.c` (libcurl, loaded on first use). */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "error.h"

struct source;

/* A byte range of the bundle, for source_plan(). */
struct source_range {
	uint64_t off;
	uint64_t len;
};

struct source_ops {
	const char *kind; /* "file", "stream", "http" */
	/* The next bytes of the sequential read: count, 0 at the end, -errno. */
	ssize_t (*read)(struct source *s, void *buf, size_t len, struct error *err);
	/* Bytes at off (random access); NULL for a stream. Returns the count
	 * (short only at the end of the bundle), -errno. */
	ssize_t (*pread)(struct source *s, void *buf, size_t len, uint64_t off, struct error *err);
	/* Optional: the ranges the next pread() calls will ask for, in that
	 * order, so a network source can coalesce them into few requests.
	 * NULL when the backend gains nothing from it. */
	int (*plan)(struct source *s, const struct source_range *r, size_t n, struct error *err);
	/* Optional: the sequential read will next consume len bytes and then
	 * may stop (the bundle's head), so a network source asks for exactly
	 * those rather than a guessed range. NULL when it gains nothing. */
	void (*expect)(struct source *s, uint64_t len);
	void (*free)(struct source *s);
};

struct source {
	const struct source_ops *ops;
	uint64_t size;    /* bytes of the bundle; 0: not known (a stream) */
	uint64_t fetched; /* bytes read from the origin so far (file, pipe or network) */
	/* NULL, or set by the caller: a read waiting for data gives up with
	 * -ECANCELED once *cancel is non-zero (a pipe that never sends more
	 * must not keep a cancelled install alive) */
	volatile int *cancel;
};

/* A source reading fd (borrowed, not closed): random access when fd is a
 * regular file, a stream otherwise. */
int source_new_fd(int fd, struct source **ret, struct error *err);

static inline bool source_can_pread(const struct source *s) { return s->ops->pread; }
ssize_t source_read(struct source *s, void *buf, size_t len, struct error *err);
ssize_t source_pread(struct source *s, void *buf, size_t len, uint64_t off, struct error *err);
int source_plan(struct source *s, const struct source_range *r, size_t n, struct error *err);
void source_expect(struct source *s, uint64_t len);
void source_free(struct source *s);
static inline void source_freep(struct source **s) { source_free(*s); }
#define _cleanup_source_ __attribute__((cleanup(source_freep)))
