/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Slot block records (lib/update/block_record.c): what they keep, that a
 * damaged one is refused, that one for another bad-block map or erase
 * size does not match, that dropping is durable and idempotent. */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "block_record.h"
#include "cleanup.h"
#include "flash.h"
#include "testlib.h"

static const struct nsim_geometry geo = {
	.type = NSIM_NAND, .size = 64 * 16384, .erasesize = 16384, .writesize = 512, .oobsize = 16,
};

static struct block_record *sample(struct flash *f)
{
	struct block_record *r = NULL;

	assert_int_equal(block_record_new(f, 5, &r), 0);
	r->size = 5 * 16384 - 10;
	memset(r->image_sha256, 0xab, 32);
	for (uint32_t k = 0; k < 5; k++) {
		r->phys[k] = k + (k >= 2); /* block 2 is bad */
		memset(r->hashes + k * 32, (int)k + 1, 32);
	}
	return r;
}

TEST(test_roundtrip_and_match)
{
	const unsigned bad[] = { 2 };
	_cleanup_unlink_ char *sim = testlib_sim_new("brec", &geo, bad, 1);
	_cleanup_free_ char *dir = testlib_tmp_dir("brec-state");
	_cleanup_free_ char *spec = testlib_asprintf("sim:%s", sim);
	_cleanup_flash_ struct flash *f = NULL;
	_cleanup_block_record_ struct block_record *r = NULL, *back = NULL;

	assert_int_equal(flash_open(spec, true, &f), 0);
	r = sample(f);
	assert_int_equal(r->part_blocks, 64);
	assert_int_equal(r->bad[0], 1u << 2);
	assert_int_equal(block_record_save(dir, "rootfs", "B", "rootfs", r), 0);
	assert_int_equal(block_record_load(dir, "rootfs", "B", "rootfs", &back), 0);
	assert_int_equal(back->erasesize, 16384);
	assert_int_equal(back->size, r->size);
	assert_memory_equal(back->image_sha256, r->image_sha256, 32);
	assert_int_equal(back->n_blocks, 5);
	assert_memory_equal(back->phys, r->phys, 5 * sizeof(uint32_t));
	assert_memory_equal(back->hashes, r->hashes, 5 * 32);
	assert_true(block_record_matches_flash(back, f));
	/* a block gone bad since: the record no longer describes the flash */
	assert_int_equal(flash_block_markbad(f, 40 * 16384), 0);
	assert_false(block_record_matches_flash(back, f));
	/* other members and slots have no record */
	block_record_free(TAKE_PTR(back));
	assert_int_equal(block_record_load(dir, "rootfs", "A", "rootfs", &back), -ENOENT);
	assert_int_equal(block_record_load(dir, "rootfs", "B", "kernel", &back), -ENOENT);
	testlib_rm_rf(dir);
}

TEST(test_damaged_refused)
{
	_cleanup_unlink_ char *sim = testlib_sim_new("brec-d", &geo, NULL, 0);
	_cleanup_free_ char *dir = testlib_tmp_dir("brec-d-state");
	_cleanup_free_ char *spec = testlib_asprintf("sim:%s", sim);
	_cleanup_free_ char *path = testlib_asprintf("%s/blocks-rootfs-B-rootfs.bin", dir);
	_cleanup_flash_ struct flash *f = NULL;
	_cleanup_block_record_ struct block_record *r = NULL, *back = NULL;
	struct stat st;

	assert_int_equal(flash_open(spec, true, &f), 0);
	r = sample(f);
	assert_int_equal(block_record_save(dir, "rootfs", "B", "rootfs", r), 0);
	/* one hash changed, checksum not: refused */
	assert_int_equal(stat(path, &st), 0);
	testlib_poke(path, st.st_size - 40, 0x00);
	assert_int_equal(block_record_load(dir, "rootfs", "B", "rootfs", &back), -EBADMSG);
	/* cut short: refused */
	assert_int_equal(truncate(path, st.st_size / 2), 0);
	assert_int_equal(block_record_load(dir, "rootfs", "B", "rootfs", &back), -EBADMSG);
	/* dropped, twice */
	assert_int_equal(block_record_drop(dir, "rootfs", "B", "rootfs"), 0);
	assert_int_equal(access(path, F_OK), -1);
	assert_int_equal(block_record_drop(dir, "rootfs", "B", "rootfs"), 0);
	testlib_rm_rf(dir);
}
