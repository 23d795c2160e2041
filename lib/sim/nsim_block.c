/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The simulator's block ops: erase and bad blocks (the NAND marker in the
 * first page's OOB, factory-bad blocks). */
#include <errno.h>
#include <stdlib.h>

#include "cleanup.h"
#include "nsim-internal.h"
#include "util.h"

/* 0xff over len bytes of the file, NSIM_CHUNK (the size of s->ff) at a time. */
static int fill_ff(struct nsim *s, uint64_t fileoff, uint64_t len)
{
	for (uint64_t done = 0; done < len;) {
		size_t n = MIN(len - done, (uint64_t)NSIM_CHUNK);
		ssize_t q = util_pwrite_full(s->fd, s->ff, n, fileoff + done);

		if (q < 0)
			return q;
		done += n;
	}
	return 0;
}

static int erase_range(struct nsim *s, uint64_t b, uint64_t len)
{
	uint64_t start = b * s->h.erasesize;
	int r = fill_ff(s, NSIM_HEADER_SIZE + start, len);

	if (r < 0)
		return r;
	if (s->h.type == NSIM_NAND) {
		uint64_t pages = len / s->h.writesize, first = start / s->h.writesize;
		_cleanup_free_ uint8_t *zero = calloc(1, pages ? pages : 1);
		ssize_t q;

		r = fill_ff(s, s->h.oob_offset + first * s->h.oobsize, pages * s->h.oobsize);
		if (r < 0)
			return r;
		if (!zero)
			return -ENOMEM;
		q = util_pwrite_full(s->fd, zero, pages, s->h.pages_offset + first);
		if (q < 0)
			return q;
	}
	return 0;
}

static int do_erase(struct nsim *s, uint64_t b, struct nsim_meta *m)
{
	int cut, r;

	if (m->flags & BLK_BAD)
		return -EIO;
	cut = nsim_fault_mutation_begin(s, m, NSIM_FAULT_ERASE);
	if (cut < 0)
		return cut;
	/* a torn erase clears the first half only; next_page stays, so the
	 * block must be erased again before it is programmed */
	r = erase_range(s, b, cut ? s->h.erasesize / 2 : s->h.erasesize);
	if (r < 0)
		return r;
	m->erase_count++;
	if (!cut)
		m->next_page = 0;
	r = nsim_op_meta_store(s, b, m);
	if (r < 0)
		return r;
	return nsim_fault_mutation_end(s, cut, CNT_ERASES);
}

int nsim_erase(struct nsim *s, uint64_t off)
{
	return nsim_op_block(s, off, true, do_erase);
}

int nsim_block_isbad(struct nsim *s, uint64_t off)
{
	struct nsim_meta m;
	int r = nsim_op_begin(s, false);

	if (r < 0)
		return r;
	r = nsim_op_block_at(s, off, false, &m);
	return nsim_op_end_ro(s, r < 0 ? r : !!(m.flags & BLK_BAD));
}

/* Bad-block marker: bytes 0-1 of the first page's OOB (NAND). */
static int set_bad(struct nsim *s, uint64_t b, uint8_t flags)
{
	struct nsim_meta m;
	int r = nsim_op_meta_load(s, b, &m);

	if (r < 0)
		return r;
	m.flags |= flags;
	r = nsim_op_meta_store(s, b, &m);
	if (r < 0)
		return r;
	if (s->h.type == NSIM_NAND) {
		static const uint8_t marker[2] = { 0, 0 };
		uint64_t page = b * s->pages_per_block;
		ssize_t q = util_pwrite_full(s->fd, marker, sizeof(marker),
					     s->h.oob_offset + page * s->h.oobsize);
		if (q < 0)
			return q;
	}
	return 0;
}

static int do_markbad(struct nsim *s, uint64_t b, struct nsim_meta *m)
{
	int r;

	if (m->flags & BLK_BAD)
		return 0;
	if (nsim_fault_powercut_tick(s))
		return -ESHUTDOWN;
	r = set_bad(s, b, BLK_BAD);
	if (r < 0)
		return r;
	s->h.cnt[CNT_MUTATIONS]++;
	return 0;
}

int nsim_block_markbad(struct nsim *s, uint64_t off)
{
	return nsim_op_block(s, off, false, do_markbad);
}

int nsim_set_factory_bad(struct nsim *s, uint64_t block)
{
	int r = nsim_op_begin_block_setting(s, block);

	return r < 0 ? r : nsim_op_end(s, set_bad(s, block, BLK_BAD | BLK_FACTORY_BAD));
}
