/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* JFFS2 clean markers: byte-exact format and the flash_erase -j eraser. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "cleanup.h"
#include "flash.h"
#include "jffs2.h"
#include "nsim.h"
#include "testlib.h"
#include "util.h"

static struct flash *open_sim(const char *path)
{
	char spec[128];
	struct flash *f;

	snprintf(spec, sizeof(spec), "sim:%s", path);
	assert_int_equal(flash_open(spec, true, &f), 0);
	return f;
}

TEST(test_crc32_is_kernel_crc32_le)
{
	/* crc32_le(0, "123456789") without the inversions zlib applies;
	 * zlib's crc32() of the same string is 0xcbf43926 */
	assert_int_equal(jffs2_crc32(0, "123456789", 9), 0x2dfd2d88);
	assert_int_equal(jffs2_crc32(0, "", 0), 0);
	/* chaining: crc over a split buffer equals crc over the whole */
	assert_int_equal(jffs2_crc32(jffs2_crc32(0, "1234", 4), "56789", 5), 0x2dfd2d88);
}

TEST(test_cleanmarker_nor_bytes)
{
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	/* magic 0x1985, nodetype 0x2003, totlen 12, hdr_crc = crc32_le(0,
	 * first 8 bytes) = 0xe41eb0b1 (worked out independently as
	 * ~zlib.crc32(bytes, 0xffffffff)); the well-known "85 19 03 20 0c
	 * 00 00 00 b1 b0 1e e4" of freshly flash_erase -j'ed NOR */
	static const uint8_t want[12] = { 0x85, 0x19, 0x03, 0x20, 0x0c, 0x00, 0x00, 0x00,
					  0xb1, 0xb0, 0x1e, 0xe4 };
	uint8_t got[12];

	jffs2_cleanmarker_nor(got);
	assert_memory_equal(got, want, sizeof(want));
	assert_int_equal(jffs2_crc32(0, got, 8), 0xe41eb0b1);
#else
	skip();
#endif
}

TEST(test_cleanmarker_nand_bytes)
{
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	static const uint8_t want[8] = { 0x85, 0x19, 0x03, 0x20, 0x08, 0x00, 0x00, 0x00 };
	uint8_t got[8];

	jffs2_cleanmarker_nand(got);
	assert_memory_equal(got, want, sizeof(want));
#else
	skip();
#endif
}

TEST(test_erase_partition_nor)
{
	struct nsim_geometry g = { NSIM_NOR, 8 * 64 * 1024, 64 * 1024, 1, 0 };
	_cleanup_unlink_ char *path = testlib_sim_new("jffs2", &g, NULL, 0);
	_cleanup_flash_ struct flash *f = open_sim(path);
	_cleanup_free_ uint8_t *blk = malloc(g.erasesize);
	uint8_t marker[12];
	struct flashio_stats st;

	/* old contents everywhere, as if an older filesystem lived here */
	memset(blk, 0x12, g.erasesize);
	for (unsigned b = 0; b < 8; b++)
		assert_int_equal(flash_write(f, (uint64_t)b * g.erasesize, blk, g.erasesize), 0);
	assert_int_equal(jffs2_block_is_clean(f, 0), 0);
	assert_int_equal(jffs2_erase_partition(f, 0, &st), 0);
	assert_int_equal(st.erases, 8);
	assert_int_equal(st.blocks_bad_skipped, 0);
	jffs2_cleanmarker_nor(marker);
	for (unsigned b = 0; b < 8; b++) {
		assert_int_equal(flash_read(f, (uint64_t)b * g.erasesize, blk, g.erasesize), 0);
		assert_memory_equal(blk, marker, 12);
		assert_true(util_mem_is(blk + 12, 0xff, g.erasesize - 12));
		assert_int_equal(jffs2_block_is_clean(f, (uint64_t)b * g.erasesize), 1);
	}
	assert_int_equal(f->stats.erases, 8);
}

TEST(test_erase_partition_nand_oob)
{
	static const unsigned bad[] = { 3 };
	struct nsim_geometry g = { NSIM_NAND, 16 * 128 * 1024, 128 * 1024, 2048, 64 };
	_cleanup_unlink_ char *path = testlib_sim_new("jffs2", &g, bad, 1);
	_cleanup_flash_ struct flash *f = open_sim(path);
	_cleanup_free_ uint8_t *page = malloc(2048);
	struct flashio_stats st;
	struct nsim *s = flash_sim_nsim(f);
	uint8_t raw[64], marker[8];
	struct nsim_block b;

	assert_int_equal(jffs2_erase_partition(f, 0, &st), 0);
	assert_int_equal(st.erases, 15);
	assert_int_equal(st.blocks_bad_skipped, 1);
	jffs2_cleanmarker_nand(marker);
	for (unsigned blk = 0; blk < 16; blk++) {
		uint64_t off = (uint64_t)blk * g.erasesize;

		assert_int_equal(nsim_get_block(s, blk, &b), 0);
		if (blk == 3) {
			assert_int_equal(b.erase_count, 0); /* never touched */
			continue;
		}
		assert_int_equal(b.erase_count, 1);
		/* large-page AUTO layout: free bytes start at OOB byte 2 */
		assert_int_equal(nsim_read_oob_raw(s, off, raw, sizeof(raw)), 0);
		assert_int_equal(raw[0], 0xff);
		assert_int_equal(raw[1], 0xff);
		assert_memory_equal(raw + 2, marker, 8);
		assert_true(util_mem_is(raw + 10, 0xff, sizeof(raw) - 10));
		/* in-band data stays erased: JFFS2 will write its nodes there */
		assert_int_equal(flash_read(f, off, page, 2048), 0);
		assert_true(util_mem_is(page, 0xff, 2048));
		assert_int_equal(jffs2_block_is_clean(f, off), 1);
	}
	/* the first page can still be programmed after its OOB marker */
	memset(page, 0x42, 2048);
	assert_int_equal(flash_write(f, 0, page, 2048), 0);
}

TEST(test_erase_failure_marks_bad)
{
	struct nsim_geometry g = { NSIM_NAND, 8 * 16 * 1024, 16 * 1024, 512, 16 };
	_cleanup_unlink_ char *path = testlib_sim_new("jffs2", &g, NULL, 0);
	_cleanup_flash_ struct flash *f = open_sim(path);
	struct flashio_stats st;

	assert_int_equal(nsim_set_block_faults(flash_sim_nsim(f), 5, NSIM_FAULT_ERASE), 0);
	assert_int_equal(jffs2_erase_partition(f, 0, &st), -EIO);
	assert_int_equal(flash_block_isbad(f, 5 * g.erasesize), 0);
	assert_int_equal(jffs2_erase_partition(f, FLASHIO_MARK_BAD, &st), 0);
	assert_int_equal(st.erases, 7);
	assert_int_equal(st.blocks_marked_bad, 1);
	assert_int_equal(flash_block_isbad(f, 5 * g.erasesize), 1);
	/* the next run simply skips it */
	assert_int_equal(jffs2_erase_partition(f, 0, &st), 0);
	assert_int_equal(st.blocks_bad_skipped, 1);
	assert_int_equal(st.erases, 7);
}

TEST(test_erase_window_only)
{
	struct nsim_geometry g = { NSIM_NOR, 8 * 64 * 1024, 64 * 1024, 1, 0 };
	_cleanup_unlink_ char *path = testlib_sim_new("jffs2", &g, NULL, 0);
	_cleanup_flash_ struct flash *f = open_sim(path);
	_cleanup_flash_ struct flash *w = NULL;
	struct flashio_stats st;

	assert_int_equal(flash_open_window(f, "rootfs_data", 2 * g.erasesize, 3 * g.erasesize, &w), 0);
	assert_int_equal(jffs2_erase_partition(w, 0, &st), 0);
	assert_int_equal(st.erases, 3);
	assert_int_equal(jffs2_block_is_clean(f, 1 * g.erasesize), 0);
	assert_int_equal(jffs2_block_is_clean(f, 2 * g.erasesize), 1);
	assert_int_equal(jffs2_block_is_clean(f, 4 * g.erasesize), 1);
	assert_int_equal(jffs2_block_is_clean(f, 5 * g.erasesize), 0);
}
