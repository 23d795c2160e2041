/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The userspace flash simulator: a chip in a file, driven with pread/pwrite
 * (never a whole-file mmap: it must stay small in memory). Every op takes
 * an flock on the file and re-reads the header, so several processes (the
 * daemon, flashctl, nsimctl, libubootenv on the data area) see one chip. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleanup.h"
#include "nsim-internal.h"
#include "util.h"

uint64_t nsim_data_offset(void)
{
	return NSIM_HEADER_SIZE;
}

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

/* ---- info ------------------------------------------------------------------- */

int nsim_get_block(struct nsim *s, uint64_t block, struct nsim_block *ret)
{
	struct nsim_meta m;
	int r = nsim_op_begin(s, false);

	if (r < 0)
		return r;
	if (block >= s->blocks)
		return nsim_op_end_ro(s, -EINVAL);
	r = nsim_op_meta_load(s, block, &m);
	if (r < 0)
		return nsim_op_end_ro(s, r);
	*ret = (struct nsim_block){
		.bad = m.flags & BLK_BAD,
		.factory_bad = m.flags & BLK_FACTORY_BAD,
		.faults = m.faults,
		.flip = m.flip < _NSIM_FLIP_MAX ? m.flip : NSIM_FLIP_NONE,
		.erase_count = m.erase_count,
		.next_page = m.next_page,
	};
	return nsim_op_end_ro(s, 0);
}

int nsim_get_info(struct nsim *s, struct nsim_info *ret)
{
	struct nsim_info i = { 0 };
	int r = nsim_op_begin(s, false);

	if (r < 0)
		return r;
	/* the table NSIM_CHUNK at a time: a read a block was 1,024 syscalls
	 * at each open of a 128 MiB chip, most of a test's syscalls */
	for (uint64_t b = 0, per = NSIM_CHUNK / sizeof(struct nsim_meta); b < s->blocks; b += per) {
		struct nsim_meta *m = (struct nsim_meta *)s->scratch;
		size_t n = MIN(per, s->blocks - b);

		r = nsim_op_meta_load_n(s, b, n, m);
		if (r < 0)
			return nsim_op_end_ro(s, r);
		for (size_t k = 0; k < n; k++)
			i.bad_blocks += !!(m[k].flags & BLK_BAD);
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
	return nsim_op_end_ro(s, 0);
}
