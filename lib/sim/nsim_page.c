/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The simulator's data ops: reads with bitflips, programs that only clear
 * bits (NAND: whole pages, once, in order), the OOB's free bytes. */
#include <errno.h>

#include "nsim-internal.h"
#include "util.h"

/* ---- data ops ------------------------------------------------------------ */

/* Chunk of [pos, end) handled as one unit: a page on NAND, a block-bounded
 * piece of at most NSIM_CHUNK on NOR. */
static uint64_t chunk_end(const struct nsim *s, uint64_t pos, uint64_t end)
{
	uint64_t unit = s->h.type == NSIM_NAND ? s->h.writesize : s->h.erasesize;
	uint64_t e = (pos / unit + 1) * unit;

	if (s->h.type == NSIM_NOR)
		e = MIN(e, pos + NSIM_CHUNK);
	return MIN(e, end);
}

/* NAND: the page read at pos (into *at) gets its bitflips: result is the
 * read's result so far, returned updated. */
static int page_flip(struct nsim *s, const struct nsim_meta *m, uint64_t pos, uint8_t *at,
		     int result)
{
	s->h.cnt[CNT_PAGE_READS]++;
	switch (nsim_fault_page_flip(s, m, pos / s->h.writesize)) {
	case NSIM_FLIP_NONE:
		return result;
	case NSIM_FLIP_CORRECTED:
		s->h.cnt[CNT_CORRECTED]++;
		return result == 0 ? -EUCLEAN : result;
	case NSIM_FLIP_UNCORRECTABLE:
		s->h.cnt[CNT_FAILED]++;
		*at ^= 0x01;
		return -EBADMSG;
	case _NSIM_FLIP_MAX:
		break;
	}
	return -EINVAL;
}

/* One metadata load and one pread per erase block (a page at a time was
 * two syscalls a page); the bitflips are still drawn a page at a time, in
 * order. */
static int do_read(struct nsim *s, uint64_t off, uint8_t *buf, size_t len)
{
	uint64_t pos = off, end = off + len;
	int result = 0;

	while (pos < end) {
		uint64_t b = pos / s->h.erasesize, e = MIN((b + 1) * s->h.erasesize, end);
		struct nsim_meta m;
		int r = nsim_op_meta_load_good(s, b, &m);

		if (r >= 0)
			r = nsim_op_pread_exact(s, buf + (pos - off), e - pos, NSIM_HEADER_SIZE + pos);
		if (r < 0)
			return r;
		for (; s->h.type == NSIM_NAND && pos < e; pos = chunk_end(s, pos, e)) {
			result = page_flip(s, &m, pos, buf + (pos - off), result);
			if (result == -EINVAL)
				return result;
		}
		pos = e;
	}
	return result;
}

int nsim_read(struct nsim *s, uint64_t off, void *buf, size_t len)
{
	int r = nsim_op_begin_range(s, false, off, len);

	return r < 0 ? r : nsim_op_end(s, do_read(s, off, buf, len));
}

/* A program may only clear bits. */
static int check_bits(struct nsim *s, uint64_t fileoff, const uint8_t *new, size_t len)
{
	while (len) {
		size_t n = MIN(len, (size_t)NSIM_CHUNK);
		int r = nsim_op_pread_exact(s, s->scratch, n, fileoff);

		if (r < 0)
			return r;
		for (size_t i = 0; i < n; i++)
			if (new[i] & ~s->scratch[i])
				return -EINVAL;
		new += n;
		fileoff += n;
		len -= n;
	}
	return 0;
}

/* Pass 1: refuse the whole op before changing anything. */
static int write_validate(struct nsim *s, uint64_t off, const uint8_t *buf, size_t len)
{
	uint64_t pos = off, end = off + len;

	if (s->h.type == NSIM_NAND && (off % s->h.writesize || len % s->h.writesize))
		return -EINVAL;
	while (pos < end) {
		uint64_t e = chunk_end(s, pos, end), b = pos / s->h.erasesize;
		struct nsim_meta m;
		int r = nsim_op_meta_load_good(s, b, &m);

		if (r < 0)
			return r;
		if (s->h.type == NSIM_NAND) {
			uint64_t page = pos / s->h.writesize;
			uint8_t st;

			r = nsim_op_page_state(s, page, &st);
			if (r < 0)
				return r;
			/* programmed twice, or out of order inside the block */
			if ((st & PAGE_DATA) || page % s->pages_per_block < m.next_page)
				return -EINVAL;
		}
		r = check_bits(s, NSIM_HEADER_SIZE + pos, buf + (pos - off), e - pos);
		if (r < 0)
			return r;
		pos = e;
	}
	return 0;
}

/* NSIM_FAULT_STUCK_BIT: the first byte of the n just programmed at fileoff
 * that has a 0 bit gets its lowest 0 bit back to 1. */
static int stick_bit(struct nsim *s, const uint8_t *buf, size_t n, uint64_t fileoff)
{
	for (size_t i = 0; i < n; i++) {
		uint8_t v = buf[i];
		ssize_t q;

		if (v == 0xff)
			continue;
		v |= (uint8_t)(~v & (v + 1));
		q = util_pwrite_full(s->fd, &v, 1, fileoff + i);
		return q < 0 ? (int)q : 0;
	}
	return 0;
}

static int do_write(struct nsim *s, uint64_t off, const uint8_t *buf, size_t len)
{
	uint64_t pos = off, end = off + len;
	int r;

	r = write_validate(s, off, buf, len);
	if (r < 0)
		return r;
	while (pos < end) {
		uint64_t e = chunk_end(s, pos, end), b = pos / s->h.erasesize;
		uint64_t n = e - pos;
		struct nsim_meta m;
		ssize_t q;
		int cut;

		r = nsim_op_meta_load(s, b, &m);
		if (r < 0)
			return r;
		cut = nsim_fault_mutation_begin(s, &m, NSIM_FAULT_PROGRAM);
		if (cut < 0)
			return cut;
		if (cut)
			n /= 2;
		q = util_pwrite_full(s->fd, buf + (pos - off), n, NSIM_HEADER_SIZE + pos);
		if (q < 0)
			return q;
		if (m.faults & NSIM_FAULT_STUCK_BIT) {
			r = stick_bit(s, buf + (pos - off), n, NSIM_HEADER_SIZE + pos);
			if (r < 0)
				return r;
		}
		if (s->h.type == NSIM_NAND) {
			uint64_t page = pos / s->h.writesize;
			uint8_t st;

			r = nsim_op_page_state(s, page, &st);
			if (r >= 0)
				r = nsim_op_page_state_set(s, page, st | PAGE_DATA);
			if (r < 0)
				return r;
			m.next_page = page % s->pages_per_block + 1;
			r = nsim_op_meta_store(s, b, &m);
			if (r < 0)
				return r;
		}
		r = nsim_fault_mutation_end(s, cut, CNT_PROGRAMS);
		if (r < 0)
			return r;
		pos = e;
	}
	return 0;
}

int nsim_write(struct nsim *s, uint64_t off, const void *buf, size_t len)
{
	int r = nsim_op_begin_range(s, true, off, len);

	return r < 0 ? r : nsim_op_end(s, do_write(s, off, buf, len));
}

/* ---- OOB ------------------------------------------------------------------ */

static int oob_check(struct nsim *s, uint64_t off, size_t len, size_t max)
{
	if (s->h.type != NSIM_NAND)
		return -EOPNOTSUPP;
	if (off % s->h.writesize || off >= s->h.size || len > max)
		return -EINVAL;
	return 0;
}

int nsim_read_oob_raw(struct nsim *s, uint64_t off, void *buf, size_t len)
{
	int r = nsim_op_begin(s, false);

	if (r < 0)
		return r;
	r = oob_check(s, off, len, s->h.oobsize);
	if (r >= 0)
		r = nsim_op_pread_exact(s, buf, len, s->h.oob_offset + off / s->h.writesize * s->h.oobsize);
	return nsim_op_end_ro(s, r);
}

int nsim_read_oob(struct nsim *s, uint64_t off, void *buf, size_t len)
{
	struct nsim_meta m;
	int r = nsim_op_begin(s, false);

	if (r < 0)
		return r;
	r = oob_check(s, off, len, s->h.oobfree_len);
	if (r >= 0)
		r = nsim_op_meta_load_good(s, off / s->h.erasesize, &m);
	if (r >= 0)
		r = nsim_op_pread_exact(s, buf, len, s->h.oob_offset +
				off / s->h.writesize * s->h.oobsize + s->h.oobfree_off);
	if (r >= 0 && len)
		nsim_fault_oob_flip(s, &m, off / s->h.writesize, buf, len);
	return nsim_op_end(s, r);       /* read_seq moved on */
}

static int do_write_oob(struct nsim *s, uint64_t off, const uint8_t *buf, size_t len)
{
	uint64_t page = off / s->h.writesize, b = off / s->h.erasesize;
	uint64_t fileoff = s->h.oob_offset + page * s->h.oobsize + s->h.oobfree_off;
	struct nsim_meta m;
	uint8_t st;
	ssize_t q;
	int cut, r;

	r = oob_check(s, off, len, s->h.oobfree_len);
	if (r < 0)
		return r;
	r = nsim_op_meta_load_good(s, b, &m);
	if (r < 0)
		return r;
	r = nsim_op_page_state(s, page, &st);
	if (r < 0)
		return r;
	if (st & PAGE_OOB)
		return -EINVAL;
	r = check_bits(s, fileoff, buf, len);
	if (r < 0)
		return r;
	cut = nsim_fault_mutation_begin(s, &m, NSIM_FAULT_PROGRAM);
	if (cut < 0)
		return cut;
	q = util_pwrite_full(s->fd, buf, cut ? len / 2 : len, fileoff);
	if (q < 0)
		return q;
	r = nsim_op_page_state_set(s, page, st | PAGE_OOB);
	if (r < 0)
		return r;
	return nsim_fault_mutation_end(s, cut, CNT_OOB_PROGRAMS);
}

int nsim_write_oob(struct nsim *s, uint64_t off, const void *buf, size_t len)
{
	int r = nsim_op_begin(s, true);

	if (r < 0)
		return r;
	return nsim_op_end(s, do_write_oob(s, off, buf, len));
}
