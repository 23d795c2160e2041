/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The simulator's file format (nsim_format.h): header, per-block metadata,
 * geometry checks and the layout of the areas in the file. */
#include <endian.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "nsim.h"
#include "nsim_format.h"
#include "util.h"

void nsim_format_hdr_swap(struct nsim_hdr *h)
{
	/* le<->host is its own inverse: one function for both directions */
	h->version = le32toh(h->version);
	h->type = le32toh(h->type);
	h->size = le64toh(h->size);
	h->erasesize = le32toh(h->erasesize);
	h->writesize = le32toh(h->writesize);
	h->oobsize = le32toh(h->oobsize);
	h->oobfree_off = le32toh(h->oobfree_off);
	h->oobfree_len = le32toh(h->oobfree_len);
	h->flags = le32toh(h->flags);
	h->oob_offset = le64toh(h->oob_offset);
	h->meta_offset = le64toh(h->meta_offset);
	h->pages_offset = le64toh(h->pages_offset);
	h->powercut_left = (int64_t)le64toh((uint64_t)h->powercut_left);
	h->flip_ppm = le32toh(h->flip_ppm);
	h->fail_ppm = le32toh(h->fail_ppm);
	h->seed = le64toh(h->seed);
	h->read_seq = le64toh(h->read_seq);
	for (unsigned i = 0; i < _CNT_MAX; i++)
		h->cnt[i] = le64toh(h->cnt[i]);
}

void nsim_format_meta_swap(struct nsim_meta *m)
{
	m->erase_count = le32toh(m->erase_count);
	m->next_page = le32toh(m->next_page);
}

int nsim_format_geometry_check(const struct nsim_geometry *g)
{
	if ((unsigned)g->type >= _NSIM_TYPE_MAX)
		return -EINVAL;
	if (!g->size || !g->erasesize || g->size % g->erasesize)
		return -EINVAL;
	if (g->erasesize > 16u * 1024 * 1024 || g->erasesize < 512)
		return -EINVAL;
	if (g->type == NSIM_NOR)
		return g->writesize == 1 && g->oobsize == 0 ? 0 : -EINVAL;
	if (util_log2_exact(g->writesize) < 0 || g->writesize < 256 || g->erasesize % g->writesize)
		return -EINVAL;
	if (g->oobsize < 16 || g->oobsize > g->writesize)
		return -EINVAL;
	return 0;
}

/* AUTO OOB layout like the kernel's small/large page layouts: bytes 0-1
 * hold the bad-block marker, the ECC sits at the end. */
static void oob_layout(const struct nsim_geometry *g, uint32_t *off, uint32_t *len)
{
	uint32_t ecc;

	if (g->oobsize <= 16) {
		*off = 8;
		*len = g->oobsize - 8;
		return;
	}
	ecc = 3 * (g->writesize / 256);
	*off = 2;
	*len = g->oobsize - 2 > ecc + 8 ? g->oobsize - 2 - ecc : g->oobsize - 2;
}

void nsim_format_hdr_init(struct nsim_hdr *h, const struct nsim_geometry *g)
{
	uint64_t pages = g->type == NSIM_NAND ? g->size / g->writesize : 0;
	uint64_t blocks = g->size / g->erasesize;

	memset(h, 0, sizeof(*h));
	memcpy(h->magic, NSIM_MAGIC, sizeof(h->magic));
	h->version = NSIM_VERSION;
	h->type = g->type;
	h->size = g->size;
	h->erasesize = g->erasesize;
	h->writesize = g->writesize;
	h->oobsize = g->oobsize;
	if (g->type == NSIM_NAND)
		oob_layout(g, &h->oobfree_off, &h->oobfree_len);
	h->oob_offset = NSIM_HEADER_SIZE + g->size;
	h->meta_offset = h->oob_offset + pages * g->oobsize;
	h->pages_offset = h->meta_offset + blocks * sizeof(struct nsim_meta);
	h->powercut_left = -1;
}

uint64_t nsim_format_file_size(const struct nsim_hdr *h)
{
	uint64_t pages = h->type == NSIM_NAND ? h->size / h->writesize : 0;

	return h->pages_offset + pages;
}

int nsim_format_hdr_write(int fd, const struct nsim_hdr *h)
{
	struct nsim_hdr d = *h;
	ssize_t n;

	nsim_format_hdr_swap(&d);
	n = util_pwrite_full(fd, &d, sizeof(d), 0);
	return n < 0 ? (int)n : 0;
}

int nsim_format_fill_ff(int fd, uint64_t off, uint64_t len)
{
	_cleanup_free_ uint8_t *buf = malloc(1024 * 1024);

	if (!buf)
		return -ENOMEM;
	memset(buf, 0xff, 1024 * 1024);
	while (len) {
		size_t n = MIN(len, (uint64_t)1024 * 1024);
		ssize_t r = util_pwrite_full(fd, buf, n, off);
		if (r < 0)
			return r;
		off += n;
		len -= n;
	}
	return 0;
}
