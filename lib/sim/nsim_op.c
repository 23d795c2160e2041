/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The simulator's op framing: the file's lock, a fresh header per op and its
 * write-back, and the file's per-block metadata and per-page state. */
#include <errno.h>
#include <sys/file.h>
#include <unistd.h>

#include "nsim-internal.h"
#include "util.h"

static uint64_t lock_wait_usec;      /* 0: forever */
static uint64_t lock_contended_until; /* CLOCK_MONOTONIC usec: try once only */

void nsim_set_lock_wait(uint64_t usec)
{
	lock_wait_usec = usec;
	lock_contended_until = 0;
}

/* The lock, within lock_wait_usec: tries, sleeping 1, 2, 4 ... 16 ms in
 * between (a writer holds it for one op, at most an erase block). After
 * a wait ran out, the ops of the next second try once: a status that
 * touches every partition must not wait once per op. */
static int op_lock(struct nsim *s)
{
	int how = s->writable ? LOCK_EX : LOCK_SH;
	uint64_t waited = 0, nap = 1000, budget = lock_wait_usec;

	if (!lock_wait_usec) {
		while (flock(s->fd, how) < 0)
			if (errno != EINTR)
				return -errno;
		return 0;
	}
	if (util_now_usec() < lock_contended_until)
		budget = 0;
	while (flock(s->fd, how | LOCK_NB) < 0) {
		if (errno == EINTR)
			continue;
		if (errno != EWOULDBLOCK)
			return -errno;
		if (waited >= budget) {
			lock_contended_until = util_now_usec() + 1000000;
			return -EWOULDBLOCK;
		}
		nap = MIN(nap, budget - waited);
		usleep(nap);
		waited += nap;
		nap = MIN(nap * 2, (uint64_t)16000);
	}
	return 0;
}

int nsim_op_begin(struct nsim *s, bool mutating)
{
	ssize_t n;
	int r;

	if (mutating && !s->writable)
		return -EROFS;
	r = op_lock(s);
	if (r < 0)
		return r;
	n = util_pread_full(s->fd, &s->h, sizeof(s->h), 0);
	if (n != (ssize_t)sizeof(s->h)) {
		flock(s->fd, LOCK_UN);
		return n < 0 ? (int)n : -EIO;
	}
	nsim_format_hdr_swap(&s->h);
	if (mutating && (s->h.flags & HDR_CUT)) {
		flock(s->fd, LOCK_UN);
		return -ESHUTDOWN;
	}
	return 0;
}

int nsim_op_end(struct nsim *s, int r)
{
	if (s->writable) {
		int q = nsim_format_hdr_write(s->fd, &s->h);
		if (q < 0 && r >= 0)
			r = q;
	}
	flock(s->fd, LOCK_UN);
	return r;
}

/* End of an op that did not change the header. */
int nsim_op_end_ro(struct nsim *s, int r)
{
	flock(s->fd, LOCK_UN);
	return r;
}

/* nsim_op_begin for a data op on [off, off + len): -EINVAL (op ended) outside
 * the chip. */
int nsim_op_begin_range(struct nsim *s, bool mutating, uint64_t off, uint64_t len)
{
	int r = nsim_op_begin(s, mutating);

	if (r < 0)
		return r;
	return off <= s->h.size && len <= s->h.size - off ? 0 : nsim_op_end(s, -EINVAL);
}

/* nsim_op_begin for a fault setting: it changes the header only, so it is
 * allowed after a power cut (mutating = false), but not read-only. */
int nsim_op_begin_setting(struct nsim *s)
{
	return s->writable ? nsim_op_begin(s, false) : -EROFS;
}

/* nsim_op_begin_setting for a block's setting; -EINVAL (op ended) past the last block. */
int nsim_op_begin_block_setting(struct nsim *s, uint64_t block)
{
	int r = nsim_op_begin_setting(s);

	if (r < 0)
		return r;
	return block < s->blocks ? 0 : nsim_op_end(s, -EINVAL);
}

/* pread of exactly len bytes of the file: 0 or -errno (-EIO when short). */
int nsim_op_pread_exact(struct nsim *s, void *buf, size_t len, uint64_t fileoff)
{
	ssize_t n = util_pread_full(s->fd, buf, len, fileoff);

	return n == (ssize_t)len ? 0 : n < 0 ? (int)n : -EIO;
}

int nsim_op_meta_load_n(struct nsim *s, uint64_t b, size_t n, struct nsim_meta *m)
{
	int r = nsim_op_pread_exact(s, m, n * sizeof(*m), s->h.meta_offset + b * sizeof(*m));

	if (r < 0)
		return r;
	for (size_t i = 0; i < n; i++)
		nsim_format_meta_swap(&m[i]);
	return 0;
}

int nsim_op_meta_load(struct nsim *s, uint64_t b, struct nsim_meta *m)
{
	return nsim_op_meta_load_n(s, b, 1, m);
}

int nsim_op_meta_store(struct nsim *s, uint64_t b, const struct nsim_meta *m)
{
	struct nsim_meta d = *m;
	ssize_t n;

	nsim_format_meta_swap(&d);
	n = util_pwrite_full(s->fd, &d, sizeof(d), s->h.meta_offset + b * sizeof(d));
	return n < 0 ? (int)n : 0;
}

/* A block's metadata; -EIO for a bad block: reads and programs refuse it. */
int nsim_op_meta_load_good(struct nsim *s, uint64_t b, struct nsim_meta *m)
{
	int r = nsim_op_meta_load(s, b, m);

	if (r < 0)
		return r;
	return m->flags & BLK_BAD ? -EIO : 0;
}

/* The metadata of the block holding off: -EINVAL past the end of the chip
 * (or, aligned, not at the start of a block). */
int nsim_op_block_at(struct nsim *s, uint64_t off, bool aligned, struct nsim_meta *m)
{
	if (off >= s->h.size || (aligned && off % s->h.erasesize))
		return -EINVAL;
	return nsim_op_meta_load(s, off / s->h.erasesize, m);
}

int nsim_op_page_state(struct nsim *s, uint64_t page, uint8_t *ret)
{
	return nsim_op_pread_exact(s, ret, 1, s->h.pages_offset + page);
}

int nsim_op_page_state_set(struct nsim *s, uint64_t page, uint8_t v)
{
	ssize_t n = util_pwrite_full(s->fd, &v, 1, s->h.pages_offset + page);

	return n < 0 ? (int)n : 0;
}

/* A framed mutating op on the block at off (aligned: its start), given
 * the block's number and metadata. */
int nsim_op_block(struct nsim *s, uint64_t off, bool aligned,
		    int (*fn)(struct nsim *s, uint64_t b, struct nsim_meta *m))
{
	struct nsim_meta m;
	int r = nsim_op_begin(s, true);

	if (r < 0)
		return r;
	r = nsim_op_block_at(s, off, aligned, &m);
	return nsim_op_end(s, r < 0 ? r : fn(s, off / s->h.erasesize, &m));
}
