/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Bad-block-skipping streaming writer and reader, verification, erasing. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>


#include "cleanup.h"
#include "hash.h"
#include "flashio.h"
#include "util.h"

/* NOR is programmed in chunks of this size so that runs of 0xFF can be
 * skipped; NAND uses its page. */
#define NOR_PROGRAM_UNIT 4096u

struct flashio_writer {
	struct flash *f;
	unsigned flags;
	uint8_t *buf;    /* one erase block of pending data */
	uint8_t *cmp;    /* the block as it is on flash (compare, read-back) */
	size_t fill;
	uint64_t pos;    /* next physical block in the window */
	int error;       /* sticky */
	bool finished;
	struct flashio_stats st;
};

struct flashio_reader {
	struct flash *f;
	uint64_t pos;    /* physical offset in the window */
	struct flashio_stats st;
};

int flashio_writer_new(struct flash *f, unsigned flags, struct flashio_writer **ret)
{
	struct flashio_writer *w;

	if (!f->writable)
		return -EROFS;
	if (flags & ~(unsigned)(FLASHIO_CHANGED_ONLY | FLASHIO_MARK_BAD | FLASHIO_VERIFY))
		return -EINVAL;
	w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	w->f = f;
	w->flags = flags;
	w->buf = malloc(f->info.erasesize);
	if (flags & (FLASHIO_CHANGED_ONLY | FLASHIO_VERIFY))
		w->cmp = malloc(f->info.erasesize);
	if (!w->buf || ((flags & (FLASHIO_CHANGED_ONLY | FLASHIO_VERIFY)) && !w->cmp)) {
		flashio_writer_free(w);
		return -ENOMEM;
	}
	*ret = w;
	return 0;
}

void flashio_writer_free(struct flashio_writer *w)
{
	if (!w)
		return;
	free(w->buf);
	free(w->cmp);
	free(w);
}

const struct flashio_stats *flashio_writer_stats(const struct flashio_writer *w)
{
	return &w->st;
}

uint64_t flashio_writer_offset(const struct flashio_writer *w)
{
	return w->pos;
}

static uint32_t program_unit(const struct flash *f)
{
	uint32_t u = f->info.writesize;

	if (f->info.type == FLASH_NOR && f->info.erasesize % NOR_PROGRAM_UNIT == 0 &&
	    NOR_PROGRAM_UNIT % u == 0)
		u = NOR_PROGRAM_UNIT;
	return u;
}

/* Program the block at off from w->buf, skipping all-0xFF units and
 * merging consecutive ones into one write. */
static int program_block(struct flashio_writer *w, uint64_t off)
{
	uint32_t es = w->f->info.erasesize, unit = program_unit(w->f);
	uint32_t run = 0, start = 0;

	for (uint32_t p = 0; p <= es; p += unit) {
		bool data = p < es && !util_mem_is(w->buf + p, 0xff, unit);
		int r;

		if (data) {
			if (!run)
				start = p;
			run += unit;
			continue;
		}
		if (!run)
			continue;
		r = flash_write(w->f, off + start, w->buf + start, run);
		if (r < 0)
			return r;
		run = 0;
	}
	return 0;
}

static int retire_block(struct flashio_writer *w, uint64_t off)
{
	int r = flash_block_markbad(w->f, off);

	if (r < 0)
		return r;
	w->st.blocks_marked_bad++;
	return 0;
}

/* Erase (unless skipped) and program the block at w->pos: 0 written; 1
 * it failed with -EIO and was marked bad (FLASHIO_MARK_BAD); -errno. */
static int erase_program(struct flashio_writer *w, bool erase)
{
	int r = 0;

	if (erase) {
		r = flash_erase_block(w->f, w->pos);
		if (r >= 0)
			w->st.erases++;
	}
	if (r >= 0)
		r = program_block(w, w->pos);
	if (r == -EIO && (w->flags & FLASHIO_MARK_BAD)) {
		r = retire_block(w, w->pos);
		return r < 0 ? r : 1;
	}
	return r;
}

/* NAND, FLASHIO_CHANGED_ONLY: is the block at w->pos already w->buf?
 * Compared a page at a time and stopped at the first difference, so
 * writing into an erased or different slot costs one page read per block,
 * not a whole block. 1 same, 0 different (or to be scrubbed), -errno. */
static int nand_block_same(struct flashio_writer *w)
{
	struct flash *f = w->f;
	uint32_t es = f->info.erasesize, ps = MAX(f->info.writesize, 1u);

	for (uint32_t off = 0; off < es; off += ps) {
		int r = flash_read(f, w->pos + off, w->cmp + off, ps);

		w->st.bytes_read += ps;
		if (r == -EUCLEAN) {
			w->st.corrected++; /* rewrite it: scrubbing a weak block */
			return 0;
		}
		if (r == -EBADMSG)
			return 0;
		if (r < 0)
			return r;
		if (memcmp(w->cmp + off, w->buf + off, ps))
			return 0;
	}
	return 1;
}

/* The block at w->pos is programmed and, under FLASHIO_VERIFY, read back:
 * one read of the whole block, compared with what was programmed. Corrected
 * bitflips are fine: the data is intact. */
static int readback_block(struct flashio_writer *w)
{
	uint32_t es = w->f->info.erasesize;
	int r = flash_read(w->f, w->pos, w->cmp, es);

	w->st.bytes_read += es;
	if (r == -EUCLEAN)
		w->st.corrected++;
	else if (r < 0)
		return r;
	return memcmp(w->cmp, w->buf, es) ? -EILSEQ : 0;
}

/* Programs of a block that does not read back what was programmed,
 * counting the first: the second rules out a stray bitflip while
 * programming; a block failing both is worn out. */
#define READBACK_TRIES 2

static bool readback_failed(int r)
{
	return r == -EBADMSG || r == -EILSEQ;
}

/* The read-back of the block at w->pos under FLASHIO_VERIFY, with a
 * block that fails it erased and programmed again, then (under
 * FLASHIO_MARK_BAD) retired like a block failing erase or program: 0
 * verified, 1 retired (the data goes on the next good block), -errno
 * (-EBADMSG, -EILSEQ: failed and not retired). */
static int verify_block(struct flashio_writer *w)
{
	int r = readback_block(w);

	for (unsigned t = 1; readback_failed(r) && t < READBACK_TRIES; t++) {
		r = erase_program(w, true);
		if (r == 0)
			r = readback_block(w);
	}
	if (readback_failed(r) && (w->flags & FLASHIO_MARK_BAD) && retire_block(w, w->pos) == 0)
		return 1;
	return r;
}

/* The block at w->pos holds w->buf: left as it was (identical, which the
 * compare read proved in full) or written. */
static int block_done(struct flashio_writer *w, bool identical)
{
	if (identical)
		w->st.blocks_identical++;
	else
		w->st.blocks_written++;
	if (w->flags & FLASHIO_VERIFY)
		w->st.bytes_verified += w->fill;
	w->pos += w->f->info.erasesize;
	return 0;
}

/* Put w->buf (a full block, padded with 0xFF) on the next good block. */
static int flush_block(struct flashio_writer *w)
{
	struct flash *f = w->f;
	uint32_t es = f->info.erasesize;
	int r;

	for (;; w->pos += es) {
		bool erase = true;

		if (w->pos >= f->info.size)
			return -ENOSPC;
		r = flash_block_isbad(f, w->pos);
		if (r < 0)
			return r;
		if (r > 0) {
			w->st.blocks_bad_skipped++;
			continue;
		}
		if ((w->flags & FLASHIO_CHANGED_ONLY) && f->info.type == FLASH_NAND) {
			r = nand_block_same(w);
			if (r < 0)
				return r;
			if (r == 1)
				return block_done(w, true);
		} else if (w->flags & FLASHIO_CHANGED_ONLY) {
			r = flash_read(f, w->pos, w->cmp, es);
			w->st.bytes_read += es;
			if (r == -EUCLEAN)
				w->st.corrected++; /* rewrite it: scrubbing a weak block */
			else if (r < 0 && r != -EBADMSG)
				return r;
			if (r == 0 && memcmp(w->cmp, w->buf, es) == 0)
				return block_done(w, true);
			if (r == 0 && f->info.type == FLASH_NOR && util_mem_is(w->cmp, 0xff, es)) {
				erase = false;
				w->st.erases_skipped++;
			}
		}
		r = erase_program(w, erase);
		if (r < 0)
			return r;
		if (r > 0)
			continue; /* retired: the next good block */
		if (w->flags & FLASHIO_VERIFY) {
			r = verify_block(w);
			if (r < 0)
				return r;
			if (r > 0)
				continue; /* retired: the next good block */
		}
		return block_done(w, false);
	}
}

ssize_t flashio_writer_write(struct flashio_writer *w, const void *buf, size_t len)
{
	size_t n;
	int r;

	if (w->error)
		return w->error;
	if (w->finished)
		return -EINVAL;
	if (!len)
		return 0;
	n = MIN(len, w->f->info.erasesize - w->fill);
	memcpy(w->buf + w->fill, buf, n);
	w->fill += n;
	if (w->fill == w->f->info.erasesize) {
		r = flush_block(w);
		if (r < 0)
			return w->error = r;
		w->fill = 0;
	}
	w->st.bytes += n;
	return n;
}

int flashio_writer_write_all(struct flashio_writer *w, const void *buf, size_t len)
{
	const uint8_t *p = buf;

	while (len) {
		ssize_t n = flashio_writer_write(w, p, len);
		if (n < 0)
			return n;
		p += n;
		len -= n;
	}
	return 0;
}

int64_t flashio_writer_finish(struct flashio_writer *w)
{
	int r;

	if (w->error)
		return w->error;
	if (w->finished)
		return -EINVAL;
	if (w->fill) {
		/* the rest of the block must read as erased: pages of pure 0xFF
		 * are not programmed, the last data page is padded */
		memset(w->buf + w->fill, 0xff, w->f->info.erasesize - w->fill);
		r = flush_block(w);
		if (r < 0)
			return w->error = r;
		w->fill = 0;
	}
	w->finished = true;
	return (int64_t)MIN(w->st.bytes, (uint64_t)INT64_MAX);
}

/* ---- reader ---------------------------------------------------------------- */

int flashio_reader_new(struct flash *f, struct flashio_reader **ret)
{
	struct flashio_reader *r = calloc(1, sizeof(*r));

	if (!r)
		return -ENOMEM;
	r->f = f;
	*ret = r;
	return 0;
}

void flashio_reader_free(struct flashio_reader *r)
{
	free(r);
}

const struct flashio_stats *flashio_reader_stats(const struct flashio_reader *r)
{
	return &r->st;
}

uint64_t flashio_reader_offset(const struct flashio_reader *r)
{
	return r->pos;
}

ssize_t flashio_reader_read(struct flashio_reader *r, void *buf, size_t len)
{
	struct flash *f = r->f;
	uint32_t es = f->info.erasesize;
	uint64_t in_block;
	size_t n;
	int q;

	if (!len)
		return 0;
	/* at a block boundary: step over bad blocks */
	while (r->pos < f->info.size && r->pos % es == 0) {
		q = flash_block_isbad(f, r->pos);
		if (q < 0)
			return q;
		if (!q)
			break;
		r->st.blocks_bad_skipped++;
		r->pos += es;
	}
	if (r->pos >= f->info.size)
		return 0;
	in_block = es - r->pos % es;
	n = MIN((uint64_t)len, in_block);
	q = flash_read(f, r->pos, buf, n);
	if (q == -EUCLEAN)
		r->st.corrected++;
	else if (q < 0)
		return q;
	r->pos += n;
	r->st.bytes += n;
	return n;
}

/* ---- verification ------------------------------------------------------------ */

int flashio_read_sha256(struct flash *f, uint64_t len, uint8_t ret_sha256[32], uint64_t *ret_at)
{
	_cleanup_(flashio_reader_freep) struct flashio_reader *rd = NULL;
	_cleanup_free_ uint8_t *buf = malloc(f->info.erasesize);
	struct hash md;
	int r;

	if (!buf)
		return -ENOMEM;
	hash_init(&md);
	r = flashio_reader_new(f, &rd);
	if (r < 0)
		return r;
	while (len) {
		ssize_t n = flashio_reader_read(rd, buf, MIN(len, (uint64_t)f->info.erasesize));

		if (n <= 0) {
			if (ret_at)
				*ret_at = flashio_reader_offset(rd);
			return n < 0 ? (int)n : -ENOSPC;
		}
		hash_update(&md, buf, n);
		len -= n;
	}
	hash_final(&md, ret_sha256);
	return 0;
}

/* ---- erasing ------------------------------------------------------------------ */

int flashio_erase_block_then(struct flash *f, uint64_t off, unsigned flags,
			     int (*then)(struct flash *f, uint64_t off), struct flashio_stats *st)
{
	int r = flash_block_isbad(f, off);

	if (r < 0)
		return r;
	if (r > 0) {
		if (st)
			st->blocks_bad_skipped++;
		return 1;
	}
	r = flash_erase_block(f, off);
	if (r >= 0 && then)
		r = then(f, off);
	if (r == -EIO && (flags & FLASHIO_MARK_BAD)) {
		r = flash_block_markbad(f, off);
		if (r < 0)
			return r;
		if (st)
			st->blocks_marked_bad++;
		return 1;
	}
	if (r < 0)
		return r;
	if (st)
		st->erases++;
	return 0;
}

int flashio_erase_block(struct flash *f, uint64_t off, unsigned flags, struct flashio_stats *st)
{
	return flashio_erase_block_then(f, off, flags, NULL, st);
}

int flashio_erase_each(struct flash *f, flashio_erase_fn *erase, unsigned flags,
		       struct flashio_stats *ret)
{
	struct flashio_stats st = { 0 };

	for (uint64_t off = 0; off < f->info.size; off += f->info.erasesize) {
		int r = erase(f, off, flags, &st);
		if (r < 0)
			return r;
	}
	if (ret)
		*ret = st;
	return 0;
}

int flashio_erase_all(struct flash *f, unsigned flags, struct flashio_stats *ret)
{
	return flashio_erase_each(f, flashio_erase_block, flags, ret);
}
