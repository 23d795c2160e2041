/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <stdbool.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "bundle-test-helpers.h"
#include "squashfs.h"
#include "testlib.h"

struct comp {
	const char *name;
	unsigned id;
};

static const struct comp comps[] = {
	{ "gzip", SQUASHFS_COMP_GZIP }, { "xz", SQUASHFS_COMP_XZ },
	{ "zstd", SQUASHFS_COMP_ZSTD }, { "lz4", SQUASHFS_COMP_LZ4 },
	{ "lzo", SQUASHFS_COMP_LZO },
};

static uint8_t *gzip_image;
static size_t gzip_len;

static int setup(void **state)
{
	char *p = th_make_squashfs("gz.sqfs", "gzip", 256, NULL);

	if (!p) {
		fprintf(stderr, "mksquashfs not usable: skipping\n");
		exit(77);
	}
	gzip_image = th_read(p, &gzip_len);
	free(p);
	return 0;
}

static int teardown(void **state)
{
	free(gzip_image);
	return 0;
}

TEST(test_real_images)
{
	unsigned made = 0;

	for (size_t i = 0; i < sizeof(comps) / sizeof(comps[0]); i++) {
		struct squashfs_info info;
		char name[32];
		struct error err = {};
		uint8_t *img;
		size_t len;
		char *p;

		snprintf(name, sizeof(name), "real-%s.sqfs", comps[i].name);
		p = th_make_squashfs(name, comps[i].name, 64, "-b 4096");
		if (!p) {
			fprintf(stderr, "mksquashfs has no %s: not tested\n", comps[i].name);
			continue;
		}
		made++;
		img = th_read(p, &len);
		assert_int_equal(squashfs_check_superblock(img, len, len, &info, &err), 0);
		assert_int_equal(info.compression, comps[i].id);
		assert_string_equal(squashfs_compression_to_string(info.compression), comps[i].name);
		assert_int_equal(info.block_size, 4096);
		assert_int_equal(info.version_major, 4);
		assert_int_equal(info.mkfs_time, 1700000000);
		assert_true(info.inode_count >= 5); /* root, etc, bin, two files */
		assert_true(info.bytes_used <= len);
		assert_true(info.bytes_used > SQUASHFS_SUPERBLOCK_SIZE);
		/* exactly fitting, and one byte too small */
		assert_int_equal(squashfs_check_superblock(img, len, info.bytes_used, NULL, &err), 0);
		assert_int_equal(squashfs_check_superblock(img, len, info.bytes_used - 1, NULL, &err), -EFBIG);
		assert_non_null(strstr(err.msg, "more than"));
		free(img);
		free(p);
	}
	assert_true(made >= 3); /* gzip, xz, zstd are in Debian's squashfs-tools */
}

/* Corrupt one field of the real gzip image and expect a refusal. */
struct corruption {
	const char *what;
	size_t off;
	unsigned width;
	uint64_t value;
	int expect;
	const char *msg;
};

static const struct corruption corruptions[] = {
	{ "magic", 0, 1, 'x', -EBADMSG, "not a squashfs" },
	{ "big-endian magic", 0, 4, 0x68737173, -EPROTONOSUPPORT, "big-endian" },
	{ "version 3.1", 28, 4, 0x00010003, -EPROTONOSUPPORT, "version 3.1" },
	{ "version 4.1", 28, 4, 0x00010004, -EPROTONOSUPPORT, "4.1" },
	{ "compression 0", 20, 2, 0, -EBADMSG, "compression id 0" },
	{ "compression 7", 20, 2, 7, -EBADMSG, "compression id 7" },
	{ "block size 3000", 12, 4, 3000, -EBADMSG, "block size" },
	{ "block size 2 MiB", 12, 4, 2u << 20, -EBADMSG, "block size" },
	{ "block_log mismatch", 22, 2, 12, -EBADMSG, "block_log" },
	{ "no inodes", 4, 4, 0, -EBADMSG, "no inodes" },
	{ "bytes_used tiny", 40, 8, 10, -EBADMSG, "bytes_used" },
	{ "inode table past the end", 64, 8, UINT64_MAX - 1, -EBADMSG, "inode_table_start" },
	{ "id table inside superblock", 48, 8, 8, -EBADMSG, "id_table_start" },
	{ "bytes_used past max", 40, 8, UINT64_C(1) << 40, -EFBIG, "more than" },
};

TEST(test_corruptions)
{
	for (size_t i = 0; i < sizeof(corruptions) / sizeof(corruptions[0]); i++) {
		const struct corruption *c = &corruptions[i];
		uint8_t sb[SQUASHFS_SUPERBLOCK_SIZE];
		struct error err = {};
		int r;

		memcpy(sb, gzip_image, sizeof(sb));
		for (unsigned b = 0; b < c->width; b++)
			sb[c->off + b] = (uint8_t)(c->value >> (8 * b));
		r = squashfs_check_superblock(sb, sizeof(sb), gzip_len, NULL, &err);
		if (r != c->expect || !strstr(err.msg, c->msg))
			fail_msg("%s: got %d \"%s\", expected %d \"%s\"", c->what, r, err.msg, c->expect,
				 c->msg);
	}
}

TEST(test_not_squashfs)
{
	uint8_t buf[4096];
	struct error err = {};
	struct squashfs_info info = { .block_size = 1234 };

	th_fill(buf, sizeof(buf), 7);
	assert_int_equal(squashfs_check_superblock(buf, sizeof(buf), 0, &info, &err),
			 -EBADMSG);
	assert_non_null(strstr(err.msg, "not a squashfs"));
	assert_int_equal(info.block_size, 1234); /* untouched on failure */
	memset(buf, 0xff, sizeof(buf)); /* erased flash */
	assert_int_equal(squashfs_check_superblock(buf, sizeof(buf), 0, NULL, &err),
			 -EBADMSG);
	assert_int_equal(squashfs_check_superblock(gzip_image, 95, 0, NULL, &err),
			 -EINVAL);
	assert_non_null(strstr(err.msg, "too short"));
	assert_null(squashfs_compression_to_string(0));
	assert_null(squashfs_compression_to_string(99));
}

TEST_GROUP(setup, teardown);
