/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* JFFS2 clean markers and the flash_erase -j eraser. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "jffs2.h"

/* Reflected CRC-32 (poly 0xEDB88320) without pre/post inversion: the
 * kernel's crc32_le(), which JFFS2 calls as crc32(0, ...). */
uint32_t jffs2_crc32(uint32_t crc, const void *buf, size_t len)
{
	const uint8_t *p = buf;

	while (len--) {
		crc ^= *p++;
		for (int k = 0; k < 8; k++)
			crc = (crc >> 1) ^ (0xedb88320u & -(crc & 1));
	}
	return crc;
}

/* struct jffs2_unknown_node in host byte order, like the kernel writes it */
static void node_header(uint8_t *out, uint32_t totlen)
{
	uint16_t magic = JFFS2_MAGIC_BITMASK, type = JFFS2_NODETYPE_CLEANMARKER;

	memcpy(out, &magic, 2);
	memcpy(out + 2, &type, 2);
	memcpy(out + 4, &totlen, 4);
}

void jffs2_cleanmarker_nor(uint8_t out[JFFS2_CLEANMARKER_NOR_SIZE])
{
	uint32_t crc;

	node_header(out, JFFS2_CLEANMARKER_NOR_SIZE);
	crc = jffs2_crc32(0, out, 8);
	memcpy(out + 8, &crc, 4);
}

void jffs2_cleanmarker_nand(uint8_t out[JFFS2_CLEANMARKER_NAND_SIZE])
{
	node_header(out, JFFS2_CLEANMARKER_NAND_SIZE);
}

static int write_marker(struct flash *f, uint64_t off)
{
	if (f->info.type == FLASH_NAND) {
		uint8_t m[JFFS2_CLEANMARKER_NAND_SIZE];

		if (f->info.oobavail < sizeof(m))
			return -ENOSPC; /* no room for the marker in this OOB layout */
		jffs2_cleanmarker_nand(m);
		return flash_write_oob(f, off, m, sizeof(m));
	} else {
		/* NOR with a program unit > 1 (ECC'd NOR): pad the unit */
		size_t n = MAX((size_t)f->info.writesize, (size_t)JFFS2_CLEANMARKER_NOR_SIZE);
		_cleanup_free_ uint8_t *buf = NULL;

		n = DIV_ROUND_UP(n, f->info.writesize) * f->info.writesize;
		buf = malloc(n);
		if (!buf)
			return -ENOMEM;
		memset(buf, 0xff, n);
		jffs2_cleanmarker_nor(buf);
		return flash_write(f, off, buf, n);
	}
}

int jffs2_erase_block(struct flash *f, uint64_t off, unsigned flags, struct flashio_stats *st)
{
	return flashio_erase_block_then(f, off, flags, write_marker, st);
}

int jffs2_erase_partition(struct flash *f, unsigned flags, struct flashio_stats *ret)
{
	return flashio_erase_each(f, jffs2_erase_block, flags, ret);
}

int jffs2_block_is_clean(struct flash *f, uint64_t off)
{
	uint8_t want[JFFS2_CLEANMARKER_NOR_SIZE], got[JFFS2_CLEANMARKER_NOR_SIZE];
	size_t n;
	int r;

	if (f->info.type == FLASH_NAND) {
		n = JFFS2_CLEANMARKER_NAND_SIZE;
		jffs2_cleanmarker_nand(want);
		r = flash_read_oob(f, off, got, n);
	} else {
		n = JFFS2_CLEANMARKER_NOR_SIZE;
		jffs2_cleanmarker_nor(want);
		r = flash_read(f, off, got, n);
	}
	if (r < 0 && r != -EUCLEAN)
		return r;
	return memcmp(want, got, n) == 0;
}
