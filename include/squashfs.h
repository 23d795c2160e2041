/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* squashfs 4.0 superblock check: catches "not a squashfs", a wrong
 * version, an unknown compressor, an insane block size and a filesystem
 * that does not fit its slot before anything is written to flash.
 * Layout of the 96-byte little-endian superblock: docs/bundle-format.md
 * (section "Image checks") and the kernel's fs/squashfs/squashfs_fs.h. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "error.h"

#define SQUASHFS_SUPERBLOCK_SIZE 96
#define SQUASHFS_MAGIC 0x73717368u /* "hsqs" on disk */

enum squashfs_compression {
	SQUASHFS_COMP_GZIP = 1,
	SQUASHFS_COMP_LZMA = 2,
	SQUASHFS_COMP_LZO = 3,
	SQUASHFS_COMP_XZ = 4,
	SQUASHFS_COMP_LZ4 = 5,
	SQUASHFS_COMP_ZSTD = 6,
};

struct squashfs_info {
	uint32_t inode_count;
	uint32_t mkfs_time;          /* seconds since the epoch */
	uint32_t block_size;
	uint32_t fragment_count;
	uint16_t compression;        /* enum squashfs_compression */
	uint16_t flags;
	uint16_t version_major, version_minor;
	uint64_t bytes_used;         /* filesystem size; the image may be padded beyond */
};

/* Check the first len bytes of an image (at least SQUASHFS_SUPERBLOCK_SIZE).
 * max_size bounds bytes_used (the slot or image size; 0 = no bound).
 * Returns 0 and fills *ret (may be NULL), or:
 *   -EBADMSG  not a squashfs / corrupt superblock (err says which field)
 *   -EPROTONOSUPPORT  squashfs but not version 4.0
 *   -EFBIG    bytes_used > max_size
 *   -EINVAL   len < SQUASHFS_SUPERBLOCK_SIZE */
int squashfs_check_superblock(const void *buf, size_t len, uint64_t max_size,
			      struct squashfs_info *ret, struct error *err);

/* "gzip", "xz", ... or NULL for an unknown id. */
const char *squashfs_compression_to_string(unsigned id);
