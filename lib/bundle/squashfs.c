/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* squashfs 4.0 superblock check (see squashfs.h). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "cleanup.h"
#include "squashfs.h"

#define SQUASHFS_INVALID_BLK UINT64_MAX
#define SQUASHFS_MIN_BLOCK (4u * 1024)
#define SQUASHFS_MAX_BLOCK (1024u * 1024)

static const char *const squashfs_compression_table[] = {
	[SQUASHFS_COMP_GZIP] = "gzip",
	[SQUASHFS_COMP_LZMA] = "lzma",
	[SQUASHFS_COMP_LZO] = "lzo",
	[SQUASHFS_COMP_XZ] = "xz",
	[SQUASHFS_COMP_LZ4] = "lz4",
	[SQUASHFS_COMP_ZSTD] = "zstd",
};
DEFINE_STRING_TABLE_TO(squashfs_compression, unsigned)

static uint16_t le16(const uint8_t *p) { return p[0] | (uint16_t)p[1] << 8; }
static uint32_t le32(const uint8_t *p) { return le16(p) | (uint32_t)le16(p + 2) << 16; }
static uint64_t le64(const uint8_t *p) { return le32(p) | (uint64_t)le32(p + 4) << 32; }

/* Table offsets that must lie inside the filesystem; optional ones may be
 * SQUASHFS_INVALID_BLK (absent). */
static const struct {
	const char *name;
	unsigned off;
	bool optional;
} tables[] = {
	{ "id_table_start", 48, false },
	{ "xattr_id_table_start", 56, true },
	{ "inode_table_start", 64, false },
	{ "directory_table_start", 72, false },
	{ "fragment_table_start", 80, true },
	{ "export_table_start", 88, true },
};

int squashfs_check_superblock(const void *buf, size_t len, uint64_t max_size,
			      struct squashfs_info *ret, struct error *err)
{
	const uint8_t *p = buf;
	struct squashfs_info i;
	uint32_t magic;
	uint16_t block_log;

	if (len < SQUASHFS_SUPERBLOCK_SIZE)
		return error_set(err, -EINVAL, "%zu bytes, too short for a squashfs superblock (%d)", len,
			 SQUASHFS_SUPERBLOCK_SIZE);
	magic = le32(p);
	if (magic == __builtin_bswap32(SQUASHFS_MAGIC))
		return error_set(err, -EPROTONOSUPPORT, "big-endian squashfs (version 3 or older), need 4.0");
	if (magic != SQUASHFS_MAGIC)
		return error_set(err, -EBADMSG, "not a squashfs image (magic 0x%08" PRIx32 ", expected 0x%08x \"hsqs\")",
			 magic, SQUASHFS_MAGIC);
	i = (struct squashfs_info) {
		.inode_count = le32(p + 4),
		.mkfs_time = le32(p + 8),
		.block_size = le32(p + 12),
		.fragment_count = le32(p + 16),
		.compression = le16(p + 20),
		.flags = le16(p + 24),
		.version_major = le16(p + 28),
		.version_minor = le16(p + 30),
		.bytes_used = le64(p + 40),
	};
	block_log = le16(p + 22);
	if (i.version_major != 4 || i.version_minor != 0)
		return error_set(err, -EPROTONOSUPPORT, "squashfs version %u.%u, only 4.0 is supported",
			 i.version_major, i.version_minor);
	if (!squashfs_compression_to_string(i.compression))
		return error_set(err, -EBADMSG, "unknown squashfs compression id %u (known: 1 gzip, 2 lzma, "
			 "3 lzo, 4 xz, 5 lz4, 6 zstd)", i.compression);
	if (i.block_size < SQUASHFS_MIN_BLOCK || i.block_size > SQUASHFS_MAX_BLOCK ||
	    (i.block_size & (i.block_size - 1)) || block_log >= 32 ||
	    (1u << block_log) != i.block_size) {
		return error_set(err, -EBADMSG, "bad squashfs block size %" PRIu32 " (block_log %u): must be "
			 "a power of two from 4 KiB to 1 MiB", i.block_size, block_log);
	}
	if (i.inode_count == 0)
		return error_set(err, -EBADMSG, "squashfs has no inodes");
	if (i.bytes_used < SQUASHFS_SUPERBLOCK_SIZE)
		return error_set(err, -EBADMSG, "squashfs bytes_used %" PRIu64 " is smaller than the superblock",
			 i.bytes_used);
	for (size_t t = 0; t < ELEMENTSOF(tables); t++) {
		uint64_t v = le64(p + tables[t].off);
		if (tables[t].optional && v == SQUASHFS_INVALID_BLK)
			continue;
		if (v < SQUASHFS_SUPERBLOCK_SIZE || v >= i.bytes_used)
			return error_set(err, -EBADMSG, "squashfs %s 0x%" PRIx64 " outside the filesystem "
				 "(bytes_used %" PRIu64 ")", tables[t].name, v, i.bytes_used);
	}
	if (le64(p + 64) >= le64(p + 72))
		return error_set(err, -EBADMSG, "squashfs inode table does not precede the directory table");
	if (max_size && i.bytes_used > max_size)
		return error_set(err, -EFBIG, "squashfs uses %" PRIu64 " bytes, more than the %" PRIu64
			 " available", i.bytes_used, max_size);
	if (ret)
		*ret = i;
	return 0;
}
