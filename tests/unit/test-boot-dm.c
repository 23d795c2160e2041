/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* boot_dm: the dm-linear table that lays a squashfs written over NAND bad
 * blocks out contiguously. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>
#include <cmocka.h>

#include "boot/boot_dm.h"
#include "testlib.h"

#define ES (128 * 1024)
#define BS (ES / 512) /* sectors per block */

TEST(test_no_bad_block_is_one_run)
{
	uint8_t bad[8] = { 0 };
	struct boot_dm_plan p;

	assert_int_equal(boot_dm_plan(bad, 8, ES, 3 * ES + 1, &p), 0);
	assert_int_equal(p.n_targets, 1);
	assert_int_equal(p.blocks, 4);
	assert_int_equal(p.sectors, 4 * BS);
	assert_int_equal(p.targets[0].start, 0);
	assert_int_equal(p.targets[0].offset, 0);
	assert_int_equal(p.targets[0].len, 4 * BS);
	assert_int_equal(p.bad_inside, 0);
	boot_dm_plan_done(&p);
}

TEST(test_bad_blocks_are_stepped_over)
{
	/* blocks 2 and 3 bad, 5 bad: logical 0,1 | 4 | 6,7 */
	uint8_t bad[10] = { 0, 0, 1, 1, 0, 1, 0, 0, 0, 0 };
	struct boot_dm_plan p;
	char *table = NULL;

	assert_int_equal(boot_dm_plan(bad, 10, ES, 5 * ES, &p), 0);
	assert_int_equal(p.n_targets, 3);
	assert_int_equal(p.blocks, 5);
	assert_int_equal(p.bad_inside, 3);
	assert_int_equal(p.targets[0].start, 0);
	assert_int_equal(p.targets[0].offset, 0);
	assert_int_equal(p.targets[0].len, 2 * BS);
	assert_int_equal(p.targets[1].start, 2 * BS);
	assert_int_equal(p.targets[1].offset, 4 * BS);
	assert_int_equal(p.targets[1].len, BS);
	assert_int_equal(p.targets[2].start, 3 * BS);
	assert_int_equal(p.targets[2].offset, 6 * BS);
	assert_int_equal(p.targets[2].len, 2 * BS);
	assert_int_equal(boot_dm_plan_format(&p, makedev(31, 4), &table), 0);
	assert_string_equal(table, "0 512 linear 31:4 0\n"
				   "512 256 linear 31:4 1024\n"
				   "768 512 linear 31:4 1536\n");
	free(table);
	boot_dm_plan_done(&p);
}

TEST(test_leading_bad_block)
{
	uint8_t bad[4] = { 1, 0, 0, 0 };
	struct boot_dm_plan p;

	assert_int_equal(boot_dm_plan(bad, 4, ES, ES, &p), 0);
	assert_int_equal(p.n_targets, 1);
	assert_int_equal(p.targets[0].offset, BS);
	assert_int_equal(p.bad_inside, 0); /* before the map, not inside */
	boot_dm_plan_done(&p);
}

TEST(test_zero_need_maps_every_good_block)
{
	uint8_t bad[6] = { 0, 1, 0, 0, 1, 0 };
	struct boot_dm_plan p;

	assert_int_equal(boot_dm_plan(bad, 6, ES, 0, &p), 0);
	assert_int_equal(p.blocks, 4);
	assert_int_equal(p.n_targets, 3);
	assert_int_equal(p.sectors, 4 * BS);
	boot_dm_plan_done(&p);
}

TEST(test_not_enough_good_blocks)
{
	uint8_t bad[4] = { 0, 1, 1, 0 };
	uint8_t allbad[2] = { 1, 1 };
	struct boot_dm_plan p = { 0 };

	assert_int_equal(boot_dm_plan(bad, 4, ES, 3 * ES, &p), -ENOSPC);
	assert_null(p.targets);
	assert_int_equal(boot_dm_plan(allbad, 2, ES, 0, &p), -ENOSPC);
	assert_int_equal(boot_dm_plan(bad, 4, 1000, ES, &p), -EINVAL);
}
