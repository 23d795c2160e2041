/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* nvflash: the qemu harness's stand-in for non-volatile flash.
 *
 * The kernel's nandsim and mtdram keep the chip in guest RAM, so a VM
 * power-off loses it. nvflash saves a chip (the MTD devices that make it
 * up, in chip order) into a sparse image: raw page data, the whole OOB
 * (ECC bytes, JFFS2 cleanmarkers, bad-block markers as they are) and the
 * list of bad erase blocks; erased pages (all 0xFF, OOB included) are
 * not stored, so an erased block costs nothing and a JFFS2 block with
 * only a cleanmarker one page. Restoring onto a freshly loaded chip of the same geometry
 * marks the bad blocks bad again (MEMSETBADBLOCK, what nandsim's own
 * badblocks= does) and programs the stored pages raw, skipping erased
 * pages, so the next VM boot sees the chip exactly as it was.
 *
 *   nvflash save FILE MTD...      write FILE (FILE.tmp, fsync, rename)
 *   nvflash restore FILE MTD...   FILE onto the (erased) MTD devices
 *   nvflash info FILE             geometry, bad blocks, stored blocks
 *   nvflash read FILE OFFSET LENGTH   the data bytes of a chip range to
 *                                 stdout (erased pages as 0xFF): what the
 *                                 runner hands to U-Boot (the env copies)
 *
 * Needs the C library only, so it also runs in a minimal initramfs.
 * See docs/harness.md, "Non-volatile flash".
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>
#include <mtd/mtd-user.h>

#include "cleanup.h"
#include "tool.h"

#define NVFLASH_MAGIC "FDNVFL02"
#define NVFLASH_END "FDNVEND\n"
#define NVFLASH_MAX_PARTS 64

/* All fields little-endian (the harness is x86-64 only). */
struct nvflash_header {
	char magic[8];
	uint32_t type;          /* MTD_NANDFLASH, MTD_NORFLASH, ... of the first device */
	uint32_t erasesize;
	uint32_t writesize;
	uint32_t oobsize;
	uint64_t size;          /* sum of the devices */
	uint32_t nparts;
	uint32_t nbad;
	uint32_t nstored;
	uint32_t reserved;
	/* then: uint64_t part_size[nparts]; uint32_t bad[nbad];
	 * nstored records { uint32_t block; uint8_t map[(pages + 7) / 8];
	 *                   { data[writesize]; oob[oobsize]; } for each page set in map };
	 * NVFLASH_END */
};

struct nvflash_dev {
	const char *path;
	int fd;
	struct mtd_info_user info;
	uint32_t first_block;   /* absolute erase block of the device's first block */
};

struct nvflash_chip {
	struct nvflash_dev dev[NVFLASH_MAX_PARTS];
	unsigned int ndev;
	uint32_t erasesize, writesize, oobsize, nblocks;
	bool nand;
};

#define fail(...) tool_fail("nvflash", __VA_ARGS__)

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void chip_close(struct nvflash_chip *c)
{
	for (unsigned int i = 0; i < c->ndev; i++)
		if (c->dev[i].fd >= 0)
			close(c->dev[i].fd);
	c->ndev = 0;
}

/* Opens the devices, checks they are one chip (same erase/page/OOB size). */
static int chip_open(struct nvflash_chip *c, char **paths, int n, bool writable)
{
	memset(c, 0, sizeof(*c));
	if (n < 1 || n > NVFLASH_MAX_PARTS)
		return fail("between 1 and %d MTD devices, in chip order", NVFLASH_MAX_PARTS);
	for (int i = 0; i < n; i++) {
		struct nvflash_dev *d = &c->dev[i];

		d->path = paths[i];
		d->fd = open(paths[i], (writable ? O_RDWR : O_RDONLY) | O_CLOEXEC);
		c->ndev = i + 1;
		if (d->fd < 0)
			return fail("%s: %s", paths[i], strerror(errno));
		if (ioctl(d->fd, MEMGETINFO, &d->info) < 0)
			return fail("%s: MEMGETINFO: %s (not an MTD character device?)",
				    paths[i], strerror(errno));
		if (i == 0) {
			c->erasesize = d->info.erasesize;
			c->writesize = d->info.writesize;
			c->oobsize = d->info.oobsize;
			c->nand = d->info.type == MTD_NANDFLASH || d->info.type == MTD_MLCNANDFLASH;
		} else if (d->info.erasesize != c->erasesize || d->info.writesize != c->writesize ||
			   d->info.oobsize != c->oobsize) {
			return fail("%s: erase/page/OOB size %u/%u/%u differ from %s's %u/%u/%u: not one chip",
				    paths[i], d->info.erasesize, d->info.writesize, d->info.oobsize,
				    paths[0], c->erasesize, c->writesize, c->oobsize);
		}
		if (c->erasesize == 0 || c->writesize == 0 || d->info.size % c->erasesize)
			return fail("%s: size %u is no multiple of the erase size %u",
				    paths[i], d->info.size, c->erasesize);
		d->first_block = c->nblocks;
		c->nblocks += d->info.size / c->erasesize;
	}
	return 0;
}

/* 1 bad, 0 good, <0 error. Devices without bad blocks (NOR, RAM) are good. */
static int block_isbad(const struct nvflash_dev *d, uint32_t erasesize, uint32_t blk)
{
	loff_t off = (loff_t)blk * erasesize;
	int r = ioctl(d->fd, MEMGETBADBLOCK, &off);

	if (r < 0 && (errno == EOPNOTSUPP || errno == ENOTTY))
		return 0;
	return r < 0 ? -errno : r > 0;
}

static bool all_ff(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != 0xff)
			return false;
	return true;
}

static size_t oob_per_block(const struct nvflash_chip *c);
static bool page_erased(const struct nvflash_chip *c, const uint8_t *data, const uint8_t *oob,
			uint32_t p);

/* Reads n bytes of data (and their OOB, NAND) at off, raw. */
static int range_read(const struct nvflash_chip *c, const struct nvflash_dev *d, uint64_t off,
		      uint32_t n, uint8_t *data, uint8_t *oob)
{
	if (c->nand && c->oobsize) {
		struct mtd_read_req req = {
			.start = off, .len = n,
			.ooblen = (uint64_t)n / c->writesize * c->oobsize,
			.usr_data = (uintptr_t)data, .usr_oob = (uintptr_t)oob,
			.mode = MTD_OPS_RAW,
		};

		if (ioctl(d->fd, MEMREAD, &req) < 0)
			return -errno;
		return req.len == n ? 0 : -EIO;
	}
	ssize_t got = pread(d->fd, data, n, off);

	return got < 0 ? -errno : got == (ssize_t)n ? 0 : -EIO;
}

/* A NAND block whose first page is erased is read no further: the pages
 * of a block are programmed in order (required by MLC NAND, and what
 * every MTD user does: JFFS2's cleanmarker and UBI's EC header sit in page
 * 0, images and env copies start at the block), so the rest is erased too.
 * Reading a page of nandsim under TCG is slow; most blocks are erased. */
static int block_read(const struct nvflash_chip *c, const struct nvflash_dev *d, uint32_t blk,
		      uint8_t *data, uint8_t *oob)
{
	uint64_t off = (uint64_t)blk * c->erasesize;
	int r;

	if (c->nand) {
		r = range_read(c, d, off, c->writesize, data, oob);
		if (r < 0 || page_erased(c, data, oob, 0)) {
			memset(data, 0xff, c->erasesize);
			memset(oob, 0xff, oob_per_block(c));
			return r;
		}
	}
	return range_read(c, d, off, c->erasesize, data, oob);
}

static int page_write(const struct nvflash_chip *c, const struct nvflash_dev *d, uint64_t off,
		      const uint8_t *data, const uint8_t *oob)
{
	if (c->nand && c->oobsize) {
		struct mtd_write_req req = {
			.start = off, .len = c->writesize, .ooblen = c->oobsize,
			.usr_data = (uintptr_t)data, .usr_oob = (uintptr_t)oob,
			.mode = MTD_OPS_RAW,
		};

		return ioctl(d->fd, MEMWRITE, &req) < 0 ? -errno : 0;
	}
	ssize_t n = pwrite(d->fd, data, c->writesize, off);

	return n < 0 ? -errno : n == (ssize_t)c->writesize ? 0 : -EIO;
}

static int raw_write(int fd, const uint8_t *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return w < 0 ? -errno : -EIO;
		p += w;
		n -= w;
	}
	return 0;
}

/* The image goes through the harness's 9p share, where every read or
 * write call is a round trip to the host: records of a page are read and
 * written through 1 MiB buffers (one image file per run of nvflash). */
static struct iobuf {
	int fd;
	size_t pos, len;
	uint8_t b[1 << 20];
} rbuf = { .fd = -1 }, wbuf = { .fd = -1 };

/* Writes out what write_all buffered; before seeking, fsync or close. */
static int write_flush(void)
{
	int r = wbuf.len ? raw_write(wbuf.fd, wbuf.b, wbuf.len) : 0;

	wbuf.len = 0;
	return r;
}

static int write_all(int fd, const void *buf, size_t n)
{
	const uint8_t *p = buf;
	int r;

	if (wbuf.fd != fd) {
		r = write_flush();
		if (r < 0)
			return r;
		wbuf.fd = fd;
	}
	while (n) {
		size_t k = sizeof(wbuf.b) - wbuf.len < n ? sizeof(wbuf.b) - wbuf.len : n;

		memcpy(wbuf.b + wbuf.len, p, k);
		wbuf.len += k;
		p += k;
		n -= k;
		if (wbuf.len == sizeof(wbuf.b) && (r = write_flush()) < 0)
			return r;
	}
	return 0;
}

static int read_all(int fd, void *buf, size_t n)
{
	uint8_t *p = buf;

	if (rbuf.fd != fd) {
		rbuf.fd = fd;
		rbuf.pos = rbuf.len = 0;
	}
	while (n) {
		if (rbuf.pos == rbuf.len) {
			ssize_t r = read(fd, rbuf.b, sizeof(rbuf.b));

			if (r < 0 && errno == EINTR)
				continue;
			if (r <= 0)
				return r < 0 ? -errno : -ENODATA;
			rbuf.pos = 0;
			rbuf.len = (size_t)r;
		}
		size_t k = rbuf.len - rbuf.pos < n ? rbuf.len - rbuf.pos : n;

		memcpy(p, rbuf.b + rbuf.pos, k);
		rbuf.pos += k;
		p += k;
		n -= k;
	}
	return 0;
}

static size_t oob_per_block(const struct nvflash_chip *c)
{
	return c->nand ? (size_t)c->erasesize / c->writesize * c->oobsize : 0;
}

static bool page_erased(const struct nvflash_chip *c, const uint8_t *data, const uint8_t *oob,
			uint32_t p)
{
	return all_ff(data + (size_t)p * c->writesize, c->writesize) &&
	       all_ff(oob + (size_t)p * c->oobsize, c->nand ? c->oobsize : 0);
}

/* One record: the block, a bitmap of its programmed pages, those pages.
 * Returns 1 when stored, 0 when the block is erased, -errno. */
static int save_block(const struct nvflash_chip *c, int fd, uint32_t abs, const uint8_t *data,
		      const uint8_t *oob)
{
	uint32_t pages = c->erasesize / c->writesize;
	uint8_t map[(pages + 7) / 8];
	bool any = false;
	int r;

	memset(map, 0, sizeof(map));
	for (uint32_t p = 0; p < pages; p++)
		if (!page_erased(c, data, oob, p)) {
			map[p / 8] |= 1u << (p % 8);
			any = true;
		}
	if (!any)
		return 0;
	r = write_all(fd, &abs, sizeof(abs));
	if (!r)
		r = write_all(fd, map, sizeof(map));
	for (uint32_t p = 0; p < pages && !r; p++) {
		if (!(map[p / 8] & (1u << (p % 8))))
			continue;
		r = write_all(fd, data + (size_t)p * c->writesize, c->writesize);
		if (!r && c->nand)
			r = write_all(fd, oob + (size_t)p * c->oobsize, c->oobsize);
	}
	return r < 0 ? r : 1;
}

static int cmd_save(int argc, char **argv)
{
	struct nvflash_chip c;
	struct nvflash_header h = { .magic = NVFLASH_MAGIC };
	_cleanup_free_ uint8_t *data = NULL, *oob = NULL;
	_cleanup_free_ uint32_t *bad = NULL;
	_cleanup_free_ char *tmp = NULL;
	uint64_t part_size[NVFLASH_MAX_PARTS];
	double t0 = now_ms();
	int fd = -1, r, rc = EXIT_FAILURE;
	off_t total;

	if (argc < 3)
		return fail("usage: nvflash save FILE MTD...");
	if (chip_open(&c, argv + 2, argc - 2, false))
		goto out;
	data = malloc(c.erasesize);
	oob = malloc(oob_per_block(&c) + 1);
	bad = calloc(c.nblocks, sizeof(*bad));
	if (asprintf(&tmp, "%s.tmp", argv[1]) < 0 || !data || !oob || !bad) {
		fail("out of memory");
		goto out;
	}
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		fail("%s: %s", tmp, strerror(errno));
		goto out;
	}
	/* Bad blocks first: their list precedes the records. */
	for (unsigned int i = 0; i < c.ndev; i++) {
		struct nvflash_dev *d = &c.dev[i];

		part_size[i] = d->info.size;
		for (uint32_t b = 0; b < d->info.size / c.erasesize; b++) {
			r = block_isbad(d, c.erasesize, b);
			if (r < 0) {
				fail("%s: block %u: MEMGETBADBLOCK: %s", d->path, b, strerror(-r));
				goto out;
			}
			if (r)
				bad[h.nbad++] = d->first_block + b;
		}
	}
	h.type = c.dev[0].info.type;
	h.erasesize = c.erasesize;
	h.writesize = c.writesize;
	h.oobsize = c.oobsize;
	h.size = (uint64_t)c.nblocks * c.erasesize;
	h.nparts = c.ndev;
	if (lseek(fd, sizeof(h), SEEK_SET) < 0 ||
	    write_all(fd, part_size, c.ndev * sizeof(*part_size)) ||
	    write_all(fd, bad, h.nbad * sizeof(*bad))) {
		fail("%s: write: %s", tmp, strerror(errno));
		goto out;
	}
	for (unsigned int i = 0, k = 0; i < c.ndev; i++) {
		struct nvflash_dev *d = &c.dev[i];

		for (uint32_t b = 0; b < d->info.size / c.erasesize; b++) {
			uint32_t abs = d->first_block + b;

			if (k < h.nbad && bad[k] == abs) {
				k++;
				continue;
			}
			r = block_read(&c, d, b, data, oob);
			if (r < 0) {
				fail("%s: block %u: read: %s", d->path, b, strerror(-r));
				goto out;
			}
			r = save_block(&c, fd, abs, data, oob);
			if (r < 0) {
				fail("%s: write: %s", tmp, strerror(-r));
				goto out;
			}
			h.nstored += r;
		}
	}
	if (write_all(fd, NVFLASH_END, 8) || write_flush() || pwrite(fd, &h, sizeof(h), 0) != sizeof(h) ||
	    fsync(fd) < 0) {
		fail("%s: write: %s", tmp, strerror(errno));
		goto out;
	}
	total = lseek(fd, 0, SEEK_END);
	close(fd);
	fd = -1;
	if (rename(tmp, argv[1]) < 0) {
		fail("rename %s to %s: %s", tmp, argv[1], strerror(errno));
		goto out;
	}
	printf("nvflash: saved %u of %u blocks (%u bad) to %s: %lld bytes in %.0f ms\n",
	       h.nstored, c.nblocks, h.nbad, argv[1], (long long)total, now_ms() - t0);
	rc = EXIT_SUCCESS;
out:
	if (fd >= 0) {
		close(fd);
		unlink(tmp);
	}
	chip_close(&c);
	return rc;
}

/* Reads and checks the header, part sizes and bad list of FILE. */
static int image_open(const char *path, struct nvflash_header *h, uint64_t *part_size,
		      uint32_t **retbad)
{
	_cleanup_free_ uint32_t *bad = NULL;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return fail("%s: %s", path, strerror(errno)), -1;
	if (read_all(fd, h, sizeof(*h)) || memcmp(h->magic, NVFLASH_MAGIC, 8)) {
		close(fd);
		return fail("%s: not an nvflash image (bad magic)", path), -1;
	}
	if (h->nparts < 1 || h->nparts > NVFLASH_MAX_PARTS || !h->erasesize || !h->writesize ||
	    h->size / h->erasesize > UINT32_MAX || h->nbad > h->size / h->erasesize) {
		close(fd);
		return fail("%s: corrupt header", path), -1;
	}
	bad = calloc(h->nbad + 1, sizeof(*bad));
	if (!bad || read_all(fd, part_size, h->nparts * sizeof(*part_size)) ||
	    read_all(fd, bad, h->nbad * sizeof(*bad))) {
		close(fd);
		return fail("%s: truncated header", path), -1;
	}
	*retbad = TAKE_PTR(bad);
	return fd;
}

static int restore_bad(const struct nvflash_chip *c, const uint32_t *bad, uint32_t nbad,
		       unsigned int *retmarked)
{
	unsigned int marked = 0;

	for (uint32_t k = 0; k < nbad; k++) {
		const struct nvflash_dev *d = NULL;

		for (unsigned int i = 0; i < c->ndev; i++)
			if (bad[k] >= c->dev[i].first_block &&
			    bad[k] < c->dev[i].first_block + c->dev[i].info.size / c->erasesize)
				d = &c->dev[i];
		if (!d)
			return fail("bad block %u is outside the chip", bad[k]);
		uint32_t b = bad[k] - d->first_block;
		int r = block_isbad(d, c->erasesize, b);
		loff_t off = (loff_t)b * c->erasesize;

		if (r < 0)
			return fail("%s: block %u: MEMGETBADBLOCK: %s", d->path, b, strerror(-r));
		if (r)
			continue;
		if (ioctl(d->fd, MEMSETBADBLOCK, &off) < 0)
			return fail("%s: block %u: MEMSETBADBLOCK: %s", d->path, b, strerror(errno));
		marked++;
	}
	*retmarked = marked;
	return 0;
}

/* Reads one record and programs its pages raw. */
static int restore_block(const struct nvflash_chip *c, int fd, const char *file, uint8_t *data,
			 uint8_t *oob, unsigned int *retpages)
{
	uint32_t pages = c->erasesize / c->writesize, abs;
	const struct nvflash_dev *d = NULL;
	uint8_t map[(pages + 7) / 8];
	int r;

	if (read_all(fd, &abs, sizeof(abs)) || read_all(fd, map, sizeof(map)))
		return fail("%s: truncated record", file);
	for (unsigned int i = 0; i < c->ndev; i++)
		if (abs >= c->dev[i].first_block &&
		    abs < c->dev[i].first_block + c->dev[i].info.size / c->erasesize)
			d = &c->dev[i];
	if (!d)
		return fail("%s: stored block %u is outside the chip", file, abs);
	uint32_t b = abs - d->first_block;

	r = block_isbad(d, c->erasesize, b);
	if (r)
		return fail("%s: block %u is %s, the image has data for it", d->path, b,
			    r > 0 ? "bad" : "unreadable");
	for (uint32_t p = 0; p < pages; p++) {
		if (!(map[p / 8] & (1u << (p % 8))))
			continue;
		if (read_all(fd, data, c->writesize) || (c->nand && read_all(fd, oob, c->oobsize)))
			return fail("%s: truncated record of block %u", file, abs);
		r = page_write(c, d, (uint64_t)b * c->erasesize + (uint64_t)p * c->writesize,
			       data, oob);
		if (r < 0)
			return fail("%s: block %u page %u: write: %s (was the chip freshly loaded?)",
				    d->path, b, p, strerror(-r));
		(*retpages)++;
	}
	return 0;
}

static int cmd_restore(int argc, char **argv)
{
	struct nvflash_chip c;
	struct nvflash_header h;
	uint64_t part_size[NVFLASH_MAX_PARTS];
	_cleanup_free_ uint32_t *bad = NULL;
	_cleanup_free_ uint8_t *data = NULL, *oob = NULL;
	unsigned int marked = 0, pages = 0;
	double t0 = now_ms();
	char end[8];
	int fd, rc = EXIT_FAILURE;

	if (argc < 3)
		return fail("usage: nvflash restore FILE MTD...");
	fd = image_open(argv[1], &h, part_size, &bad);
	if (fd < 0)
		return EXIT_FAILURE;
	if (chip_open(&c, argv + 2, argc - 2, true))
		goto out;
	if (h.erasesize != c.erasesize || h.writesize != c.writesize || h.oobsize != c.oobsize ||
	    h.nparts != c.ndev || h.size != (uint64_t)c.nblocks * c.erasesize) {
		fail("%s: saved from a chip of %u partitions, %" PRIu64 " bytes, erase/page/OOB %u/%u/%u; "
		     "the devices are %u partitions, %" PRIu64 " bytes, %u/%u/%u",
		     argv[1], h.nparts, h.size, h.erasesize, h.writesize, h.oobsize, c.ndev,
		     (uint64_t)c.nblocks * c.erasesize, c.erasesize, c.writesize, c.oobsize);
		goto out;
	}
	for (unsigned int i = 0; i < c.ndev; i++)
		if (part_size[i] != c.dev[i].info.size) {
			fail("%s: partition %u was %" PRIu64 " bytes, %s is %u", argv[1], i,
			     part_size[i], c.dev[i].path, c.dev[i].info.size);
			goto out;
		}
	if (restore_bad(&c, bad, h.nbad, &marked))
		goto out;
	data = malloc(c.erasesize);
	oob = malloc(oob_per_block(&c) + 1);
	if (!data || !oob) {
		fail("out of memory");
		goto out;
	}
	for (uint32_t n = 0; n < h.nstored; n++)
		if (restore_block(&c, fd, argv[1], data, oob, &pages))
			goto out;
	if (read_all(fd, end, sizeof(end)) || memcmp(end, NVFLASH_END, 8)) {
		fail("%s: no end marker after %u blocks: truncated or corrupt", argv[1], h.nstored);
		goto out;
	}
	printf("nvflash: restored %u blocks (%u pages) and %u bad blocks (%u newly marked) from %s in %.0f ms\n",
	       h.nstored, pages, h.nbad, marked, argv[1], now_ms() - t0);
	rc = EXIT_SUCCESS;
out:
	close(fd);
	chip_close(&c);
	return rc;
}

static int cmd_info(int argc, char **argv)
{
	struct nvflash_header h;
	uint64_t part_size[NVFLASH_MAX_PARTS];
	_cleanup_free_ uint32_t *bad = NULL;
	int fd;

	if (argc != 2)
		return fail("usage: nvflash info FILE");
	fd = image_open(argv[1], &h, part_size, &bad);
	if (fd < 0)
		return EXIT_FAILURE;
	close(fd);
	printf("type %u, %" PRIu64 " bytes, erase block %u, page %u, OOB %u\n", h.type, h.size,
	       h.erasesize, h.writesize, h.oobsize);
	printf("partitions:");
	for (uint32_t i = 0; i < h.nparts; i++)
		printf(" %" PRIu64, part_size[i]);
	printf("\nbad blocks:");
	for (uint32_t i = 0; i < h.nbad; i++)
		printf("%s%u", i ? "," : " ", bad[i]);
	printf("\nstored blocks: %u of %" PRIu64 "\n", h.nstored, h.size / h.erasesize);
	return EXIT_SUCCESS;
}

/* The page data of [off, off + len) of the saved chip, to stdout: the
 * host side of the harness reads the env copies of a powered-off board
 * without booting it. Unstored pages read erased (0xFF), as on the chip. */
static int cmd_read(int argc, char **argv)
{
	struct nvflash_header h;
	uint64_t part_size[NVFLASH_MAX_PARTS], off, len;
	_cleanup_free_ uint32_t *bad = NULL;
	_cleanup_free_ uint8_t *out = NULL, *page = NULL, *map = NULL;
	uint32_t pages;
	bool nand;
	char *end;
	int fd, rc = EXIT_FAILURE;

	if (argc != 4)
		return fail("usage: nvflash read FILE OFFSET LENGTH");
	off = strtoull(argv[2], &end, 0);
	if (*end)
		return fail("OFFSET '%s' is not a number", argv[2]);
	len = strtoull(argv[3], &end, 0);
	if (*end || !len || len > 64u << 20)
		return fail("LENGTH '%s' is not a number of bytes up to 64 MiB", argv[3]);
	fd = image_open(argv[1], &h, part_size, &bad);
	if (fd < 0)
		return EXIT_FAILURE;
	if (off > h.size || len > h.size - off) {
		fail("%s: range 0x%" PRIx64 "+0x%" PRIx64 " is outside the %" PRIu64 "-byte chip",
		     argv[1], off, len, h.size);
		goto out;
	}
	pages = h.erasesize / h.writesize;
	nand = h.type == MTD_NANDFLASH || h.type == MTD_MLCNANDFLASH;
	out = malloc(len);
	page = malloc((size_t)h.writesize + h.oobsize);
	map = malloc((pages + 7) / 8);
	if (!out || !page || !map) {
		fail("out of memory");
		goto out;
	}
	memset(out, 0xff, len);
	for (uint32_t n = 0; n < h.nstored; n++) {
		uint32_t abs;

		if (read_all(fd, &abs, sizeof(abs)) || read_all(fd, map, (pages + 7) / 8)) {
			fail("%s: truncated record", argv[1]);
			goto out;
		}
		for (uint32_t p = 0; p < pages; p++) {
			if (!(map[p / 8] & (1u << (p % 8))))
				continue;
			if (read_all(fd, page, h.writesize + (nand ? h.oobsize : 0))) {
				fail("%s: truncated record of block %u", argv[1], abs);
				goto out;
			}
			uint64_t at = (uint64_t)abs * h.erasesize + (uint64_t)p * h.writesize;

			if (at + h.writesize <= off || at >= off + len)
				continue;
			uint64_t from = at < off ? off - at : 0;
			uint64_t to = at + h.writesize > off + len ? off + len - at : h.writesize;

			memcpy(out + (at + from - off), page + from, to - from);
		}
	}
	if (raw_write(STDOUT_FILENO, out, len)) {
		fail("writing to stdout: %s", strerror(errno));
		goto out;
	}
	rc = EXIT_SUCCESS;
out:
	close(fd);
	return rc;
}

static const struct {
	const char *name;
	int (*run)(int argc, char **argv);
} commands[] = {
	{ "save", cmd_save },
	{ "restore", cmd_restore },
	{ "info", cmd_info },
	{ "read", cmd_read },
};

int main(int argc, char **argv)
{
	if (argc >= 2)
		for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
			if (!strcmp(argv[1], commands[i].name))
				return commands[i].run(argc - 1, argv + 1);
	fprintf(stderr, "usage: nvflash save FILE MTD... | restore FILE MTD... | info FILE | read FILE OFFSET LENGTH\n");
	return 2;
}
