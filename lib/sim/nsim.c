/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The userspace flash simulator: a chip in a file, driven with pread/pwrite
 * (never a whole-file mmap: it must stay small in memory). Every op takes
 * an flock on the file and re-reads the header, so several processes (the
 * daemon, flashctl, nsimctl, libubootenv on the data area) see one chip. */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cleanup.h"
#include "nsim.h"
#include "nsim_format.h"
#include "util.h"

#define NSIM_CHUNK (64u * 1024u) /* bounded scratch for NOR programs and erases */

struct nsim {
	int fd;
	bool writable;
	struct nsim_hdr h; /* host byte order, valid inside an op */
	uint64_t blocks;
	uint32_t pages_per_block; /* NAND; 0 on NOR */
	uint8_t *scratch;         /* NSIM_CHUNK bytes */
	uint8_t *ff;              /* NSIM_CHUNK bytes of 0xFF */
};

uint64_t nsim_data_offset(void)
{
	return NSIM_HEADER_SIZE;
}

#define NSIM_FAULTS (NSIM_FAULT_PROGRAM | NSIM_FAULT_ERASE | NSIM_FAULT_STUCK_BIT)

static const char *const nsim_type_table[] = { NSIM_TYPE_LIST(STRING_TABLE_NAME) };
DEFINE_STRING_TABLE(nsim_type, enum nsim_type)
static const char *const nsim_flip_table[] = { NSIM_FLIP_LIST(STRING_TABLE_NAME) };
DEFINE_STRING_TABLE(nsim_flip, enum nsim_flip)

int nsim_create(const char *path, const struct nsim_geometry *geo, unsigned flags)
{
	_cleanup_close_ int fd = -1;
	struct nsim_hdr h;
	uint8_t zero[NSIM_HEADER_SIZE] = { 0 };
	struct stat st;
	int r;

	r = nsim_format_geometry_check(geo);
	if (r < 0)
		return r;
	/* 0600: whoever can open the file can hold its lock, and stall a
	 * daemon's op on it (issue 32 item 11) */
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NONBLOCK | O_NOCTTY |
		  ((flags & NSIM_CREATE_FORCE) ? 0 : O_EXCL), 0600);
	if (fd < 0)
		return -errno;
	/* --force replaces a simulator, never truncates a device or a FIFO */
	if (fstat(fd, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode))
		return -EMEDIUMTYPE;
	if (fcntl(fd, F_SETFL, 0) < 0)
		return -errno;
	nsim_format_hdr_init(&h, geo);
	if (ftruncate(fd, 0) < 0) {
		r = -errno;
		goto fail;
	}
	r = util_pwrite_full(fd, zero, sizeof(zero), 0);
	if (r < 0)
		goto fail;
	/* data and OOB start erased; metadata and page states are zeroes */
	r = nsim_format_fill_ff(fd, NSIM_HEADER_SIZE, h.meta_offset - NSIM_HEADER_SIZE);
	if (r < 0)
		goto fail;
	if (ftruncate(fd, nsim_format_file_size(&h)) < 0) {
		r = -errno;
		goto fail;
	}
	r = nsim_format_hdr_write(fd, &h);
	if (r < 0)
		goto fail;
	return 0;
fail:
	unlink(path);
	return r;
}

static int set_bad_list(struct nsim *s, const char *bad, uint64_t blocks, struct error *err)
{
	for (const char *p = bad; p && *p;) {
		char *end;
		unsigned long long b = strtoull(p, &end, 0);

		if (end == p || (*end && *end != ',') || nsim_set_factory_bad(s, b) < 0)
			return error_set(err, -EINVAL, "invalid --bad-blocks '%s': expected block "
					 "numbers below %" PRIu64 " separated by commas", bad, blocks);
		p = *end ? end + 1 : end;
	}
	return 0;
}

int nsim_create_spec(const char *path, struct nsim_geometry *g, unsigned flags,
		     const char *bad, struct error *err)
{
	struct nsim *s = NULL;
	int r;

	if (!g->writesize)
		g->writesize = g->type == NSIM_NAND ? 2048 : 1;
	if (!g->oobsize)
		g->oobsize = g->type == NSIM_NAND ? g->writesize / 32 : 0;
	r = nsim_create(path, g, flags);
	if (r < 0)
		return error_set(err, r, "cannot create simulator %s: %s%s", path, strerror(-r),
				 r == -EINVAL ? " (size must be a multiple of the erase block, "
				 "the erase block of the page; NAND: page a power of two >= 256 "
				 "with >= 16 OOB bytes; NOR: no --page/--oob)" :
				 r == -EEXIST ? " (--force overwrites)" :
				 r == -EMEDIUMTYPE ? " (not a regular file)" : "");
	r = nsim_open(path, true, &s);
	if (r < 0)
		error_set(err, r, "cannot open %s: %s", path, strerror(-r));
	else
		r = set_bad_list(s, bad, g->size / g->erasesize, err);
	if (s)
		nsim_close(s);
	if (r < 0)
		unlink(path);
	return r;
}

int nsim_open(const char *path, bool writable, struct nsim **ret)
{
	_cleanup_free_ struct nsim *s = NULL;
	_cleanup_close_ int fd = -1;
	struct nsim_geometry g;
	struct nsim_hdr expect;
	struct stat st;
	ssize_t n;

	/* O_NONBLOCK: a FIFO must not hang the open; only regular files are chips */
	fd = open(path, (writable ? O_RDWR : O_RDONLY) | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode))
		return S_ISDIR(st.st_mode) ? -EISDIR : -EMEDIUMTYPE;
	if (fcntl(fd, F_SETFL, 0) < 0)
		return -errno;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	n = util_pread_full(fd, &s->h, sizeof(s->h), 0);
	if (n < 0)
		return n;
	if ((size_t)n < sizeof(s->h) || memcmp(s->h.magic, NSIM_MAGIC, sizeof(s->h.magic)))
		return -EMEDIUMTYPE;
	nsim_format_hdr_swap(&s->h);
	if (s->h.version != NSIM_VERSION)
		return -EPROTONOSUPPORT;
	g = (struct nsim_geometry){ s->h.type, s->h.size, s->h.erasesize, s->h.writesize,
				    s->h.oobsize };
	if (nsim_format_geometry_check(&g) < 0)
		return -EMEDIUMTYPE;
	nsim_format_hdr_init(&expect, &g);
	if (expect.oob_offset != s->h.oob_offset || expect.meta_offset != s->h.meta_offset ||
	    expect.pages_offset != s->h.pages_offset)
		return -EMEDIUMTYPE;
	if (fstat(fd, &st) < 0)
		return -errno;
	if ((uint64_t)st.st_size < nsim_format_file_size(&s->h))
		return -ENODATA; /* truncated */
	s->scratch = malloc(NSIM_CHUNK);
	s->ff = malloc(NSIM_CHUNK);
	if (!s->scratch || !s->ff) {
		free(s->scratch);
		free(s->ff);
		return -ENOMEM;
	}
	memset(s->ff, 0xff, NSIM_CHUNK);
	s->blocks = s->h.size / s->h.erasesize;
	s->pages_per_block = s->h.type == NSIM_NAND ? s->h.erasesize / s->h.writesize : 0;
	s->writable = writable;
	s->fd = TAKE_FD(fd);
	*ret = TAKE_PTR(s);
	return 0;
}

void nsim_close(struct nsim *s)
{
	if (!s)
		return;
	close(s->fd);
	free(s->scratch);
	free(s->ff);
	free(s);
}

/* ---- op framing: lock, fresh header, write back ---------------------- */

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

static int op_begin(struct nsim *s, bool mutating)
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

static int op_end(struct nsim *s, int r)
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
static int op_end_ro(struct nsim *s, int r)
{
	flock(s->fd, LOCK_UN);
	return r;
}

/* op_begin for a data op on [off, off + len): -EINVAL (op ended) outside
 * the chip. */
static int op_begin_range(struct nsim *s, bool mutating, uint64_t off, uint64_t len)
{
	int r = op_begin(s, mutating);

	if (r < 0)
		return r;
	return off <= s->h.size && len <= s->h.size - off ? 0 : op_end(s, -EINVAL);
}

/* op_begin for a fault setting: it changes the header only, so it is
 * allowed after a power cut (mutating = false), but not read-only. */
static int op_begin_setting(struct nsim *s)
{
	return s->writable ? op_begin(s, false) : -EROFS;
}

/* op_begin_setting for a block's setting; -EINVAL (op ended) past the last block. */
static int op_begin_block_setting(struct nsim *s, uint64_t block)
{
	int r = op_begin_setting(s);

	if (r < 0)
		return r;
	return block < s->blocks ? 0 : op_end(s, -EINVAL);
}

/* pread of exactly len bytes of the file: 0 or -errno (-EIO when short). */
static int pread_exact(struct nsim *s, void *buf, size_t len, uint64_t fileoff)
{
	ssize_t n = util_pread_full(s->fd, buf, len, fileoff);

	return n == (ssize_t)len ? 0 : n < 0 ? (int)n : -EIO;
}

static int meta_load(struct nsim *s, uint64_t b, struct nsim_meta *m)
{
	int r = pread_exact(s, m, sizeof(*m), s->h.meta_offset + b * sizeof(*m));

	if (r < 0)
		return r;
	nsim_format_meta_swap(m);
	return 0;
}

static int meta_store(struct nsim *s, uint64_t b, const struct nsim_meta *m)
{
	struct nsim_meta d = *m;
	ssize_t n;

	nsim_format_meta_swap(&d);
	n = util_pwrite_full(s->fd, &d, sizeof(d), s->h.meta_offset + b * sizeof(d));
	return n < 0 ? (int)n : 0;
}

/* A block's metadata; -EIO for a bad block: reads and programs refuse it. */
static int meta_load_good(struct nsim *s, uint64_t b, struct nsim_meta *m)
{
	int r = meta_load(s, b, m);

	if (r < 0)
		return r;
	return m->flags & BLK_BAD ? -EIO : 0;
}

/* The metadata of the block holding off: -EINVAL past the end of the chip
 * (or, aligned, not at the start of a block). */
static int block_at(struct nsim *s, uint64_t off, bool aligned, struct nsim_meta *m)
{
	if (off >= s->h.size || (aligned && off % s->h.erasesize))
		return -EINVAL;
	return meta_load(s, off / s->h.erasesize, m);
}

static int page_state(struct nsim *s, uint64_t page, uint8_t *ret)
{
	return pread_exact(s, ret, 1, s->h.pages_offset + page);
}

static int page_state_set(struct nsim *s, uint64_t page, uint8_t v)
{
	ssize_t n = util_pwrite_full(s->fd, &v, 1, s->h.pages_offset + page);

	return n < 0 ? (int)n : 0;
}

/* The power-cut clock: 0 = apply the op, 1 = the power fails now. */
static int powercut_tick(struct nsim *s)
{
	if (s->h.powercut_left < 0)
		return 0;
	if (s->h.powercut_left == 0) {
		s->h.flags |= HDR_CUT;
		return 1;
	}
	s->h.powercut_left--;
	return 0;
}

/* Before a program or erase of a block: its injected fault, then the
 * power-cut clock. 0: apply the op whole; 1: the power fails during it
 * (HDR_TEAR: apply half, then mutation_end() answers -ESHUTDOWN);
 * -ESHUTDOWN: it fails before the op. */
static int mutation_begin(struct nsim *s, const struct nsim_meta *m, unsigned fault)
{
	if (m->faults & fault)
		return -EIO;
	if (!powercut_tick(s))
		return 0;
	return s->h.flags & HDR_TEAR ? 1 : -ESHUTDOWN;
}

/* After it: a torn op fails, a whole one counts (counter: CNT_*). */
static int mutation_end(struct nsim *s, int cut, unsigned counter)
{
	if (cut)
		return -ESHUTDOWN;
	s->h.cnt[counter]++;
	s->h.cnt[CNT_MUTATIONS]++;
	return 0;
}

static uint64_t splitmix64(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

/* Reproducible: depends only on the seed, the page and the read sequence
 * number (stored in the header). */
static enum nsim_flip page_flip(struct nsim *s, const struct nsim_meta *m, uint64_t page)
{
	uint64_t x;
	uint32_t v;

	s->h.read_seq++;
	if (m->flip != NSIM_FLIP_NONE)
		return m->flip;
	if (!s->h.flip_ppm && !s->h.fail_ppm)
		return NSIM_FLIP_NONE;
	x = splitmix64(s->h.seed ^ splitmix64(page ^ splitmix64(s->h.read_seq)));
	v = x % 1000000u;
	if (v < s->h.fail_ppm)
		return NSIM_FLIP_UNCORRECTABLE;
	if (v < (uint64_t)s->h.fail_ppm + s->h.flip_ppm)
		return NSIM_FLIP_CORRECTED;
	return NSIM_FLIP_NONE;
}

/* A framed mutating op on the block at off (aligned: its start), given
 * the block's number and metadata. */
static int op_block(struct nsim *s, uint64_t off, bool aligned,
		    int (*fn)(struct nsim *s, uint64_t b, struct nsim_meta *m))
{
	struct nsim_meta m;
	int r = op_begin(s, true);

	if (r < 0)
		return r;
	r = block_at(s, off, aligned, &m);
	return op_end(s, r < 0 ? r : fn(s, off / s->h.erasesize, &m));
}

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

static int do_read(struct nsim *s, uint64_t off, uint8_t *buf, size_t len)
{
	uint64_t pos = off, end = off + len;
	int result = 0;

	while (pos < end) {
		uint64_t e = chunk_end(s, pos, end);
		struct nsim_meta m;
		int r = meta_load_good(s, pos / s->h.erasesize, &m);

		if (r >= 0)
			r = pread_exact(s, buf + (pos - off), e - pos, NSIM_HEADER_SIZE + pos);
		if (r < 0)
			return r;
		if (s->h.type == NSIM_NAND) {
			s->h.cnt[CNT_PAGE_READS]++;
			switch (page_flip(s, &m, pos / s->h.writesize)) {
			case NSIM_FLIP_NONE:
				break;
			case NSIM_FLIP_CORRECTED:
				s->h.cnt[CNT_CORRECTED]++;
				if (result == 0)
					result = -EUCLEAN;
				break;
			case NSIM_FLIP_UNCORRECTABLE:
				s->h.cnt[CNT_FAILED]++;
				buf[pos - off] ^= 0x01;
				result = -EBADMSG;
				break;
			case _NSIM_FLIP_MAX:
				return -EINVAL;
			}
		}
		pos = e;
	}
	return result;
}

int nsim_read(struct nsim *s, uint64_t off, void *buf, size_t len)
{
	int r = op_begin_range(s, false, off, len);

	return r < 0 ? r : op_end(s, do_read(s, off, buf, len));
}

/* A program may only clear bits. */
static int check_bits(struct nsim *s, uint64_t fileoff, const uint8_t *new, size_t len)
{
	while (len) {
		size_t n = MIN(len, (size_t)NSIM_CHUNK);
		int r = pread_exact(s, s->scratch, n, fileoff);

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
		int r = meta_load_good(s, b, &m);

		if (r < 0)
			return r;
		if (s->h.type == NSIM_NAND) {
			uint64_t page = pos / s->h.writesize;
			uint8_t st;

			r = page_state(s, page, &st);
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

		r = meta_load(s, b, &m);
		if (r < 0)
			return r;
		cut = mutation_begin(s, &m, NSIM_FAULT_PROGRAM);
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

			r = page_state(s, page, &st);
			if (r >= 0)
				r = page_state_set(s, page, st | PAGE_DATA);
			if (r < 0)
				return r;
			m.next_page = page % s->pages_per_block + 1;
			r = meta_store(s, b, &m);
			if (r < 0)
				return r;
		}
		r = mutation_end(s, cut, CNT_PROGRAMS);
		if (r < 0)
			return r;
		pos = e;
	}
	return 0;
}

int nsim_write(struct nsim *s, uint64_t off, const void *buf, size_t len)
{
	int r = op_begin_range(s, true, off, len);

	return r < 0 ? r : op_end(s, do_write(s, off, buf, len));
}

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
	cut = mutation_begin(s, m, NSIM_FAULT_ERASE);
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
	r = meta_store(s, b, m);
	if (r < 0)
		return r;
	return mutation_end(s, cut, CNT_ERASES);
}

int nsim_erase(struct nsim *s, uint64_t off)
{
	return op_block(s, off, true, do_erase);
}

int nsim_block_isbad(struct nsim *s, uint64_t off)
{
	struct nsim_meta m;
	int r = op_begin(s, false);

	if (r < 0)
		return r;
	r = block_at(s, off, false, &m);
	return op_end_ro(s, r < 0 ? r : !!(m.flags & BLK_BAD));
}

/* Bad-block marker: bytes 0-1 of the first page's OOB (NAND). */
static int set_bad(struct nsim *s, uint64_t b, uint8_t flags)
{
	struct nsim_meta m;
	int r = meta_load(s, b, &m);

	if (r < 0)
		return r;
	m.flags |= flags;
	r = meta_store(s, b, &m);
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
	if (powercut_tick(s))
		return -ESHUTDOWN;
	r = set_bad(s, b, BLK_BAD);
	if (r < 0)
		return r;
	s->h.cnt[CNT_MUTATIONS]++;
	return 0;
}

int nsim_block_markbad(struct nsim *s, uint64_t off)
{
	return op_block(s, off, false, do_markbad);
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
	int r = op_begin(s, false);

	if (r < 0)
		return r;
	r = oob_check(s, off, len, s->h.oobsize);
	if (r >= 0)
		r = pread_exact(s, buf, len, s->h.oob_offset + off / s->h.writesize * s->h.oobsize);
	return op_end_ro(s, r);
}

/* The free OOB bytes have no ECC (as on real chips and the kernel's
 * nandsim, whose flips land anywhere in what is read): a read the global
 * rate flips returns one bit wrong and no error. The next read may not. */
static void oob_flip(struct nsim *s, const struct nsim_meta *m, uint64_t page,
		     uint8_t *buf, size_t len)
{
	uint64_t bit;

	if (m->flip != NSIM_FLIP_NONE || page_flip(s, m, page) == NSIM_FLIP_NONE)
		return;
	bit = splitmix64(s->h.seed ^ s->h.read_seq) % (len * 8);
	buf[bit / 8] ^= (uint8_t)(1u << (bit % 8));
}

int nsim_read_oob(struct nsim *s, uint64_t off, void *buf, size_t len)
{
	struct nsim_meta m;
	int r = op_begin(s, false);

	if (r < 0)
		return r;
	r = oob_check(s, off, len, s->h.oobfree_len);
	if (r >= 0)
		r = meta_load_good(s, off / s->h.erasesize, &m);
	if (r >= 0)
		r = pread_exact(s, buf, len, s->h.oob_offset +
				off / s->h.writesize * s->h.oobsize + s->h.oobfree_off);
	if (r >= 0 && len)
		oob_flip(s, &m, off / s->h.writesize, buf, len);
	return op_end(s, r);       /* read_seq moved on */
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
	r = meta_load_good(s, b, &m);
	if (r < 0)
		return r;
	r = page_state(s, page, &st);
	if (r < 0)
		return r;
	if (st & PAGE_OOB)
		return -EINVAL;
	r = check_bits(s, fileoff, buf, len);
	if (r < 0)
		return r;
	cut = mutation_begin(s, &m, NSIM_FAULT_PROGRAM);
	if (cut < 0)
		return cut;
	q = util_pwrite_full(s->fd, buf, cut ? len / 2 : len, fileoff);
	if (q < 0)
		return q;
	r = page_state_set(s, page, st | PAGE_OOB);
	if (r < 0)
		return r;
	return mutation_end(s, cut, CNT_OOB_PROGRAMS);
}

int nsim_write_oob(struct nsim *s, uint64_t off, const void *buf, size_t len)
{
	int r = op_begin(s, true);

	if (r < 0)
		return r;
	return op_end(s, do_write_oob(s, off, buf, len));
}

/* ---- info and fault hooks ----------------------------------------------- */

int nsim_get_block(struct nsim *s, uint64_t block, struct nsim_block *ret)
{
	struct nsim_meta m;
	int r = op_begin(s, false);

	if (r < 0)
		return r;
	if (block >= s->blocks)
		return op_end_ro(s, -EINVAL);
	r = meta_load(s, block, &m);
	if (r < 0)
		return op_end_ro(s, r);
	*ret = (struct nsim_block){
		.bad = m.flags & BLK_BAD,
		.factory_bad = m.flags & BLK_FACTORY_BAD,
		.faults = m.faults,
		.flip = m.flip < _NSIM_FLIP_MAX ? m.flip : NSIM_FLIP_NONE,
		.erase_count = m.erase_count,
		.next_page = m.next_page,
	};
	return op_end_ro(s, 0);
}

int nsim_get_info(struct nsim *s, struct nsim_info *ret)
{
	struct nsim_info i = { 0 };
	int r = op_begin(s, false);

	if (r < 0)
		return r;
	for (uint64_t b = 0; b < s->blocks; b++) {
		struct nsim_meta m;
		r = meta_load(s, b, &m);
		if (r < 0)
			return op_end_ro(s, r);
		if (m.flags & BLK_BAD)
			i.bad_blocks++;
	}
	i.geo = (struct nsim_geometry){ s->h.type, s->h.size, s->h.erasesize, s->h.writesize,
					s->h.oobsize };
	i.version = s->h.version;
	i.oobfree_off = s->h.oobfree_off;
	i.oobfree_len = s->h.oobfree_len;
	i.blocks = s->blocks;
	i.powercut_left = s->h.powercut_left;
	i.power_cut = s->h.flags & HDR_CUT;
	i.tear = s->h.flags & HDR_TEAR;
	i.flip_ppm = s->h.flip_ppm;
	i.fail_ppm = s->h.fail_ppm;
	i.seed = s->h.seed;
	i.cnt = (struct nsim_counters){
		.erases = s->h.cnt[CNT_ERASES],
		.programs = s->h.cnt[CNT_PROGRAMS],
		.oob_programs = s->h.cnt[CNT_OOB_PROGRAMS],
		.page_reads = s->h.cnt[CNT_PAGE_READS],
		.corrected = s->h.cnt[CNT_CORRECTED],
		.failed = s->h.cnt[CNT_FAILED],
		.mutations = s->h.cnt[CNT_MUTATIONS],
	};
	*ret = i;
	return op_end_ro(s, 0);
}

/* Change one block's metadata outside of the flash-op rules. */
static int meta_update(struct nsim *s, uint64_t block, int (*fn)(struct nsim *s, uint64_t b,
								    struct nsim_meta *m, uintptr_t v),
		       uintptr_t v)
{
	struct nsim_meta m;
	int r = op_begin_block_setting(s, block);

	if (r < 0)
		return r;
	r = meta_load(s, block, &m);
	if (r >= 0)
		r = fn(s, block, &m, v);
	if (r >= 0)
		r = meta_store(s, block, &m);
	return op_end(s, r);
}

static int set_faults_fn(struct nsim *s, uint64_t b, struct nsim_meta *m, uintptr_t v)
{
	m->faults = v & NSIM_FAULTS;
	return 0;
}

static int set_flip_fn(struct nsim *s, uint64_t b, struct nsim_meta *m, uintptr_t v)
{
	if (s->h.type != NSIM_NAND)
		return -EOPNOTSUPP; /* NOR has no ECC */
	m->flip = v;
	return 0;
}

int nsim_set_block_faults(struct nsim *s, uint64_t block, unsigned faults)
{
	if (faults & ~(unsigned)NSIM_FAULTS)
		return -EINVAL;
	return meta_update(s, block, set_faults_fn, faults);
}

int nsim_set_block_flip(struct nsim *s, uint64_t block, enum nsim_flip flip)
{
	if ((unsigned)flip >= _NSIM_FLIP_MAX)
		return -EINVAL;
	return meta_update(s, block, set_flip_fn, flip);
}

int nsim_set_factory_bad(struct nsim *s, uint64_t block)
{
	int r = op_begin_block_setting(s, block);

	return r < 0 ? r : op_end(s, set_bad(s, block, BLK_BAD | BLK_FACTORY_BAD));
}

int nsim_set_flip_rate(struct nsim *s, uint32_t flip_ppm, uint32_t fail_ppm, uint64_t seed)
{
	int r;

	if (!s->writable)
		return -EROFS;
	if ((uint64_t)flip_ppm + fail_ppm > 1000000u)
		return -EINVAL;
	if (s->h.type != NSIM_NAND && (flip_ppm || fail_ppm))
		return -EOPNOTSUPP;
	r = op_begin(s, false);
	if (r < 0)
		return r;
	s->h.flip_ppm = flip_ppm;
	s->h.fail_ppm = fail_ppm;
	s->h.seed = seed;
	s->h.read_seq = 0;
	return op_end(s, 0);
}

int nsim_set_powercut(struct nsim *s, int64_t ops, bool tear)
{
	int r;

	r = op_begin_setting(s);
	if (r < 0)
		return r;
	s->h.powercut_left = ops < 0 ? -1 : ops;
	if (tear)
		s->h.flags |= HDR_TEAR;
	else
		s->h.flags &= ~HDR_TEAR;
	return op_end(s, 0);
}

int nsim_power_on(struct nsim *s)
{
	int r;

	r = op_begin_setting(s);
	if (r < 0)
		return r;
	s->h.flags &= ~(uint32_t)HDR_CUT;
	s->h.powercut_left = -1;
	return op_end(s, 0);
}
