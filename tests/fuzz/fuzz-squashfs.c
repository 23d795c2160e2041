/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* libFuzzer target: the squashfs superblock check run on every squashfs
 * image before a byte of it reaches flash (squashfs_check_superblock).
 * Input: the start of an image. Checked with no size bound, with the
 * input's own size as the bound, and with a short buffer; what passes
 * must satisfy the documented invariants. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "squashfs.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(const uint8_t *data, size_t size, uint64_t max)
{
	struct squashfs_info info;
	struct error err = {};
	int r;

	memset(&info, 0xa5, sizeof(info));
	error_clear(&err);
	r = squashfs_check_superblock(data, size, max, &info, &err);
	if (r == 0) {
		if (info.version_major != 4 || info.version_minor != 0)
			abort();
		if (info.block_size < 4096 || info.block_size > 1024 * 1024 ||
		    (info.block_size & (info.block_size - 1)))
			abort();
		if (info.bytes_used < SQUASHFS_SUPERBLOCK_SIZE)
			abort();
		if (max && info.bytes_used > max)
			abort();
		if (!squashfs_compression_to_string(info.compression))
			abort();
		if (info.inode_count == 0)
			abort();
		return;
	}
	if (r != -EBADMSG && r != -EPROTONOSUPPORT && r != -EFBIG && r != -EINVAL)
		abort();
	if (!err.msg[0] || !memchr(err.msg, 0, sizeof(err.msg)))
		abort(); /* every refusal says why */
	if (r == -EINVAL && size >= SQUASHFS_SUPERBLOCK_SIZE)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *copy = malloc(size ? size : 1);

	if (!copy)
		return 0;
	/* an exact-size heap copy, so ASan sees any read past the end */
	memcpy(copy, data, size);
	check(copy, size, 0);
	check(copy, size, size);
	if (size > 0)
		check(copy, size - 1, 0);
	free(copy);
	return 0;
}
