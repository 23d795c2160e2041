/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The simulator's flash semantics, fault injection and persistence. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>
#include <getopt.h>

#include "cleanup.h"
#include "nsim.h"
#include "testlib.h"
#include "nsim_spec.h"
#include "util.h"

#define NAND_ES (16u * 1024)
#define NAND_PS 512u
#define NOR_ES (64u * 1024)

struct fx {
	char *path;
	struct nsim *s;
};

static int setup_type(void **state, enum nsim_type t)
{
	struct fx *fx = calloc(1, sizeof(*fx));
	struct nsim_geometry g = t == NSIM_NAND ?
		(struct nsim_geometry){ NSIM_NAND, 64 * NAND_ES, NAND_ES, NAND_PS, 16 } :
		(struct nsim_geometry){ NSIM_NOR, 16 * NOR_ES, NOR_ES, 1, 0 };

	fx->path = testlib_sim_new("nsim", &g, NULL, 0);
	assert_int_equal(nsim_open(fx->path, true, &fx->s), 0);
	*state = fx;
	return 0;
}

static int setup_nand(void **state) { return setup_type(state, NSIM_NAND); }
static int setup_nor(void **state) { return setup_type(state, NSIM_NOR); }

static int teardown(void **state)
{
	struct fx *fx = *state;

	nsim_close(fx->s);
	testlib_unlinkp(&fx->path);
	free(fx);
	return 0;
}

/* close and open again: a reboot of the simulated board */
static void reboot(struct fx *fx)
{
	nsim_close(fx->s);
	assert_int_equal(nsim_open(fx->path, true, &fx->s), 0);
}

static void fill(uint8_t *b, size_t n, uint8_t seed)
{
	for (size_t i = 0; i < n; i++)
		b[i] = (uint8_t)(seed + i * 7) & 0x7f; /* never 0xFF */
}

TEST_FIXTURE(test_create_geometry, setup_nand, teardown)
{
	struct fx *fx = *state;
	struct nsim_info i;
	uint8_t buf[NAND_PS];

	assert_int_equal(nsim_get_info(fx->s, &i), 0);
	assert_int_equal(i.geo.type, NSIM_NAND);
	assert_int_equal(i.blocks, 64);
	assert_int_equal(i.oobfree_off, 8);
	assert_int_equal(i.oobfree_len, 8);
	assert_int_equal(i.powercut_left, -1);
	assert_false(i.power_cut);
	assert_int_equal(i.bad_blocks, 0);
	assert_int_equal(nsim_read(fx->s, 5 * NAND_ES, buf, sizeof(buf)), 0);
	assert_true(util_mem_is(buf, 0xff, sizeof(buf)));
	assert_int_equal(nsim_data_offset(), 4096);
}

TEST(test_create_rejects_bad_geometry)
{
	static const struct nsim_geometry bad[] = {
		{ NSIM_NAND, 64 * NAND_ES + 1, NAND_ES, NAND_PS, 16 }, /* size not blocks */
		{ NSIM_NAND, 64 * NAND_ES, NAND_ES, 500, 16 },        /* page not 2^n */
		{ NSIM_NAND, 64 * NAND_ES, NAND_ES, NAND_PS, 8 },     /* OOB too small */
		{ NSIM_NOR, 16 * NOR_ES, NOR_ES, 512, 0 },             /* NOR has no pages */
		{ NSIM_NOR, 16 * NOR_ES, NOR_ES, 1, 16 },              /* NOR has no OOB */
		{ _NSIM_TYPE_MAX, 16 * NOR_ES, NOR_ES, 1, 0 },
	};

	for (size_t i = 0; i < ELEMENTSOF(bad); i++)
		assert_int_equal(nsim_create("/tmp/test-nsim-never", &bad[i], NSIM_CREATE_FORCE),
				 -EINVAL);
	assert_int_equal(access("/tmp/test-nsim-never", F_OK), -1);
}

/* nsim_create_spec: the tools' one way to make a simulator (defaults,
 * factory-bad list, nothing left behind on a bad list). */
TEST(test_create_spec)
{
	const char *path = "/tmp/test-nsim-spec";
	struct nsim_geometry g = { NSIM_NAND, 64 * NAND_ES, NAND_ES, 0, 0 };
	struct error err = {};
	struct nsim_block blk;
	struct nsim *s = NULL;

	(void)state;
	assert_int_equal(nsim_create_spec(path, &g, NSIM_CREATE_FORCE, "1,3", &err), 0);
	assert_int_equal(g.writesize, 2048);
	assert_int_equal(g.oobsize, 64);
	assert_int_equal(nsim_open(path, false, &s), 0);
	assert_int_equal(nsim_get_block(s, 3, &blk), 0);
	assert_true(blk.factory_bad);
	assert_int_equal(nsim_get_block(s, 2, &blk), 0);
	assert_false(blk.bad);
	nsim_close(s);
	assert_int_equal(nsim_create_spec(path, &g, 0, NULL, &err), -EEXIST);
	assert_non_null(strstr(err.msg, "--force overwrites"));
	assert_int_equal(nsim_create_spec(path, &g, NSIM_CREATE_FORCE, "1,x", &err), -EINVAL);
	assert_non_null(strstr(err.msg, "invalid --bad-blocks '1,x'"));
	assert_int_equal(access(path, F_OK), -1);
	g = (struct nsim_geometry){ NSIM_NOR, 16 * 4096, 4096, 0, 0 };
	assert_int_equal(nsim_create_spec(path, &g, NSIM_CREATE_FORCE, NULL, &err), 0);
	assert_int_equal(g.writesize, 1);
	assert_int_equal(g.oobsize, 0);
	unlink(path);
}

TEST(test_open_rejects_non_sim)
{
	char path[] = "/tmp/test-nsim-junk-XXXXXX";
	int fd = mkstemp(path);
	struct nsim *s = NULL;
	char junk[8192];

	memset(junk, 'x', sizeof(junk));
	assert_int_equal(write(fd, junk, sizeof(junk)), (ssize_t)sizeof(junk));
	close(fd);
	assert_int_equal(nsim_open(path, false, &s), -EMEDIUMTYPE);
	assert_null(s);
	unlink(path);
	assert_int_equal(nsim_open(path, false, &s), -ENOENT);
}

TEST_FIXTURE(test_nor_program_zero_to_one_fails, setup_nor, teardown)
{
	struct fx *fx = *state;
	uint8_t v[4] = { 0x0f, 0x0f, 0x0f, 0x0f }, w[4] = { 0xf0, 0x0f, 0x0f, 0x0f }, got[4];
	uint8_t less[4] = { 0x0e, 0x0f, 0x00, 0x0f };

	assert_int_equal(nsim_write(fx->s, 100, v, 4), 0);
	/* 0x0f -> 0xf0 needs 0->1 transitions: refused, nothing changes */
	assert_int_equal(nsim_write(fx->s, 100, w, 4), -EINVAL);
	assert_int_equal(nsim_read(fx->s, 100, got, 4), 0);
	assert_memory_equal(got, v, 4);
	/* clearing more bits is allowed on NOR (any byte, bits 1->0) */
	assert_int_equal(nsim_write(fx->s, 100, less, 4), 0);
	assert_int_equal(nsim_read(fx->s, 100, got, 4), 0);
	assert_memory_equal(got, less, 4);
}

TEST_FIXTURE(test_nor_write_across_blocks_validated_first, setup_nor, teardown)
{
	struct fx *fx = *state;
	uint8_t buf[32], got[16];

	/* byte 0 of block 1 is 0x00; a write spanning blocks 0 and 1 that
	 * would set bits there is refused as a whole: block 0 stays erased */
	assert_int_equal(nsim_write(fx->s, NOR_ES, (uint8_t[]){ 0x00 }, 1), 0);
	memset(buf, 0x55, sizeof(buf));
	assert_int_equal(nsim_write(fx->s, NOR_ES - 16, buf, sizeof(buf)), -EINVAL);
	assert_int_equal(nsim_read(fx->s, NOR_ES - 16, got, sizeof(got)), 0);
	assert_true(util_mem_is(got, 0xff, sizeof(got)));
	buf[16] = 0x00;
	assert_int_equal(nsim_write(fx->s, NOR_ES - 16, buf, sizeof(buf)), 0);
	assert_int_equal(nsim_read(fx->s, NOR_ES - 16, got, sizeof(got)), 0);
	assert_true(util_mem_is(got, 0x55, sizeof(got)));
}

TEST_FIXTURE(test_nand_double_program_fails, setup_nand, teardown)
{
	struct fx *fx = *state;
	uint8_t page[NAND_PS], zeros[NAND_PS] = { 0 }, got[NAND_PS];

	fill(page, sizeof(page), 1);
	assert_int_equal(nsim_write(fx->s, 0, page, NAND_PS), 0);
	/* even a write that only clears bits is a second program: refused */
	assert_int_equal(nsim_write(fx->s, 0, zeros, NAND_PS), -EINVAL);
	assert_int_equal(nsim_read(fx->s, 0, got, NAND_PS), 0);
	assert_memory_equal(got, page, NAND_PS);
}

TEST_FIXTURE(test_nand_page_order_and_alignment, setup_nand, teardown)
{
	struct fx *fx = *state;
	uint8_t page[NAND_PS];
	struct nsim_block b;

	fill(page, sizeof(page), 2);
	assert_int_equal(nsim_write(fx->s, NAND_ES + 3 * NAND_PS, page, NAND_PS), 0);
	/* lower page after a higher one in the same block */
	assert_int_equal(nsim_write(fx->s, NAND_ES + 1 * NAND_PS, page, NAND_PS), -EINVAL);
	/* skipping forward is fine */
	assert_int_equal(nsim_write(fx->s, NAND_ES + 7 * NAND_PS, page, NAND_PS), 0);
	assert_int_equal(nsim_get_block(fx->s, 1, &b), 0);
	assert_int_equal(b.next_page, 8);
	/* partial pages */
	assert_int_equal(nsim_write(fx->s, 2 * NAND_ES, page, 100), -EINVAL);
	assert_int_equal(nsim_write(fx->s, 2 * NAND_ES + 10, page, NAND_PS), -EINVAL);
	/* beyond the end */
	assert_int_equal(nsim_write(fx->s, 64 * NAND_ES, page, NAND_PS), -EINVAL);
}

TEST_FIXTURE(test_erase_restores_ff_and_counts, setup_nand, teardown)
{
	struct fx *fx = *state;
	uint8_t page[NAND_PS], got[NAND_PS], oob[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };
	struct nsim_block b;
	struct nsim_info i;

	fill(page, sizeof(page), 3);
	assert_int_equal(nsim_write(fx->s, 4 * NAND_ES, page, NAND_PS), 0);
	assert_int_equal(nsim_write_oob(fx->s, 4 * NAND_ES, oob, sizeof(oob)), 0);
	assert_int_equal(nsim_erase(fx->s, 4 * NAND_ES), 0);
	assert_int_equal(nsim_read(fx->s, 4 * NAND_ES, got, NAND_PS), 0);
	assert_true(util_mem_is(got, 0xff, NAND_PS));
	assert_int_equal(nsim_read_oob(fx->s, 4 * NAND_ES, got, 8), 0);
	assert_true(util_mem_is(got, 0xff, 8));
	/* the page may be programmed again after the erase */
	assert_int_equal(nsim_write(fx->s, 4 * NAND_ES, page, NAND_PS), 0);
	assert_int_equal(nsim_erase(fx->s, 4 * NAND_ES), 0);
	assert_int_equal(nsim_get_block(fx->s, 4, &b), 0);
	assert_int_equal(b.erase_count, 2);
	assert_int_equal(b.next_page, 0);
	assert_int_equal(nsim_get_block(fx->s, 5, &b), 0);
	assert_int_equal(b.erase_count, 0);
	assert_int_equal(nsim_get_info(fx->s, &i), 0);
	assert_int_equal(i.cnt.erases, 2);
	assert_int_equal(i.cnt.programs, 2);
	assert_int_equal(i.cnt.oob_programs, 1);
	/* unaligned erase */
	assert_int_equal(nsim_erase(fx->s, 4 * NAND_ES + NAND_PS), -EINVAL);
}

TEST_FIXTURE(test_bad_blocks_refuse_io, setup_nand, teardown)
{
	struct fx *fx = *state;
	uint8_t page[NAND_PS], raw[16];
	struct nsim_block b;
	struct nsim_info i;

	fill(page, sizeof(page), 4);
	assert_int_equal(nsim_set_factory_bad(fx->s, 3), 0);
	assert_int_equal(nsim_block_isbad(fx->s, 3 * NAND_ES + 5 * NAND_PS), 1);
	assert_int_equal(nsim_block_isbad(fx->s, 4 * NAND_ES), 0);
	assert_int_equal(nsim_read(fx->s, 3 * NAND_ES, page, NAND_PS), -EIO);
	assert_int_equal(nsim_write(fx->s, 3 * NAND_ES, page, NAND_PS), -EIO);
	assert_int_equal(nsim_erase(fx->s, 3 * NAND_ES), -EIO);
	assert_int_equal(nsim_write_oob(fx->s, 3 * NAND_ES, page, 8), -EIO);
	/* a read spanning into the bad block fails too */
	assert_int_equal(nsim_read(fx->s, 3 * NAND_ES - NAND_PS, page, 2 * NAND_PS), -EIO);
	/* the marker sits in the first page's OOB like on real chips */
	assert_int_equal(nsim_read_oob_raw(fx->s, 3 * NAND_ES, raw, sizeof(raw)), 0);
	assert_int_equal(raw[0], 0);
	assert_int_equal(raw[1], 0);

	assert_int_equal(nsim_block_markbad(fx->s, 9 * NAND_ES), 0);
	assert_int_equal(nsim_block_markbad(fx->s, 9 * NAND_ES), 0); /* idempotent */
	reboot(fx);
	assert_int_equal(nsim_get_block(fx->s, 3, &b), 0);
	assert_true(b.bad && b.factory_bad);
	assert_int_equal(nsim_get_block(fx->s, 9, &b), 0);
	assert_true(b.bad);
	assert_false(b.factory_bad);
	assert_int_equal(nsim_get_info(fx->s, &i), 0);
	assert_int_equal(i.bad_blocks, 2);
	assert_int_equal(nsim_erase(fx->s, 9 * NAND_ES), -EIO);
}

TEST_FIXTURE(test_powercut_after_n_ops, setup_nand, teardown)
{
	struct fx *fx = *state;
	uint8_t page[NAND_PS], got[NAND_PS];
	struct nsim_info before, after;

	assert_int_equal(nsim_get_info(fx->s, &before), 0);
	assert_int_equal(nsim_set_powercut(fx->s, 5, false), 0);
	for (unsigned p = 0; p < 8; p++) {
		fill(page, sizeof(page), p);
		assert_int_equal(nsim_write(fx->s, 2 * NAND_ES + p * NAND_PS, page, NAND_PS),
				 p < 5 ? 0 : -ESHUTDOWN);
	}
	/* every mutating op is refused until the power comes back */
	assert_int_equal(nsim_erase(fx->s, 10 * NAND_ES), -ESHUTDOWN);
	assert_int_equal(nsim_block_markbad(fx->s, 10 * NAND_ES), -ESHUTDOWN);
	assert_int_equal(nsim_write_oob(fx->s, 10 * NAND_ES, page, 8), -ESHUTDOWN);
	/* reads still work (the board is "off"; the test looks at the chip) */
	assert_int_equal(nsim_read(fx->s, 2 * NAND_ES, got, NAND_PS), 0);

	reboot(fx);
	assert_int_equal(nsim_get_info(fx->s, &after), 0);
	assert_true(after.power_cut);
	assert_int_equal(after.cnt.mutations - before.cnt.mutations, 5);
	for (unsigned p = 0; p < 8; p++) {
		assert_int_equal(nsim_read(fx->s, 2 * NAND_ES + p * NAND_PS, got, NAND_PS), 0);
		fill(page, sizeof(page), p);
		if (p < 5)
			assert_memory_equal(got, page, NAND_PS);
		else
			assert_true(util_mem_is(got, 0xff, NAND_PS));
	}
	assert_int_equal(nsim_erase(fx->s, 10 * NAND_ES), -ESHUTDOWN);
	assert_int_equal(nsim_power_on(fx->s), 0);
	assert_int_equal(nsim_erase(fx->s, 10 * NAND_ES), 0);
	assert_int_equal(nsim_get_info(fx->s, &after), 0);
	assert_false(after.power_cut);
	assert_int_equal(after.powercut_left, -1);
}

TEST_FIXTURE(test_powercut_multi_page_write_counts_pages, setup_nand, teardown)
{
	struct fx *fx = *state;
	uint8_t buf[4 * NAND_PS], got[NAND_PS];

	fill(buf, sizeof(buf), 9);
	assert_int_equal(nsim_set_powercut(fx->s, 2, false), 0);
	assert_int_equal(nsim_write(fx->s, 0, buf, sizeof(buf)), -ESHUTDOWN);
	assert_int_equal(nsim_read(fx->s, NAND_PS, got, NAND_PS), 0);
	assert_memory_equal(got, buf + NAND_PS, NAND_PS);
	assert_int_equal(nsim_read(fx->s, 2 * NAND_PS, got, NAND_PS), 0);
	assert_true(util_mem_is(got, 0xff, NAND_PS));
}

TEST_FIXTURE(test_powercut_tearing, setup_nand, teardown)
{
	struct fx *fx = *state;
	uint8_t page[NAND_PS], got[NAND_PS];
	_cleanup_free_ uint8_t *blk = malloc(NAND_ES);

	/* torn page program: first half applied, page counts as programmed */
	fill(page, sizeof(page), 5);
	assert_int_equal(nsim_set_powercut(fx->s, 0, true), 0);
	assert_int_equal(nsim_write(fx->s, 0, page, NAND_PS), -ESHUTDOWN);
	assert_int_equal(nsim_power_on(fx->s), 0);
	assert_int_equal(nsim_read(fx->s, 0, got, NAND_PS), 0);
	assert_memory_equal(got, page, NAND_PS / 2);
	assert_true(util_mem_is(got + NAND_PS / 2, 0xff, NAND_PS / 2));
	assert_int_equal(nsim_write(fx->s, 0, page, NAND_PS), -EINVAL);

	/* torn erase: the first half of the block is erased, the rest is not */
	fill(blk, NAND_ES, 6);
	assert_int_equal(nsim_write(fx->s, NAND_ES, blk, NAND_ES), 0);
	assert_int_equal(nsim_set_powercut(fx->s, 0, true), 0);
	assert_int_equal(nsim_erase(fx->s, NAND_ES), -ESHUTDOWN);
	assert_int_equal(nsim_power_on(fx->s), 0);
	assert_int_equal(nsim_read(fx->s, NAND_ES, blk, NAND_ES), 0);
	assert_true(util_mem_is(blk, 0xff, NAND_ES / 2));
	assert_false(util_mem_is(blk + NAND_ES / 2, 0xff, NAND_ES / 2));
}

TEST_FIXTURE(test_program_erase_faults, setup_nand, teardown)
{
	struct fx *fx = *state;
	uint8_t page[NAND_PS], got[NAND_PS];
	struct nsim_block b;

	fill(page, sizeof(page), 7);
	assert_int_equal(nsim_set_block_faults(fx->s, 6, NSIM_FAULT_PROGRAM | NSIM_FAULT_ERASE), 0);
	assert_int_equal(nsim_write(fx->s, 6 * NAND_ES, page, NAND_PS), -EIO);
	assert_int_equal(nsim_read(fx->s, 6 * NAND_ES, got, NAND_PS), 0);
	assert_true(util_mem_is(got, 0xff, NAND_PS));
	assert_int_equal(nsim_erase(fx->s, 6 * NAND_ES), -EIO);
	assert_int_equal(nsim_get_block(fx->s, 6, &b), 0);
	assert_int_equal(b.erase_count, 0);
	assert_int_equal(b.faults, NSIM_FAULT_PROGRAM | NSIM_FAULT_ERASE);
	/* neighbours are unaffected */
	assert_int_equal(nsim_write(fx->s, 7 * NAND_ES, page, NAND_PS), 0);
	assert_int_equal(nsim_set_block_faults(fx->s, 6, 0), 0);
	assert_int_equal(nsim_write(fx->s, 6 * NAND_ES, page, NAND_PS), 0);
	assert_int_equal(nsim_set_block_faults(fx->s, 6, 0x80), -EINVAL);
}

TEST_FIXTURE(test_bitflips_per_block, setup_nand, teardown)
{
	struct fx *fx = *state;
	uint8_t page[NAND_PS], got[2 * NAND_PS];
	struct nsim_info i;

	fill(page, sizeof(page), 8);
	assert_int_equal(nsim_write(fx->s, NAND_ES, page, NAND_PS), 0);
	assert_int_equal(nsim_set_block_flip(fx->s, 1, NSIM_FLIP_CORRECTED), 0);
	assert_int_equal(nsim_read(fx->s, NAND_ES, got, 2 * NAND_PS), -EUCLEAN);
	assert_memory_equal(got, page, NAND_PS);
	assert_int_equal(nsim_get_info(fx->s, &i), 0);
	assert_int_equal(i.cnt.corrected, 2); /* one per page read */
	assert_int_equal(i.cnt.failed, 0);

	assert_int_equal(nsim_set_block_flip(fx->s, 1, NSIM_FLIP_UNCORRECTABLE), 0);
	assert_int_equal(nsim_read(fx->s, NAND_ES, got, NAND_PS), -EBADMSG);
	assert_memory_not_equal(got, page, NAND_PS);
	assert_int_equal(nsim_get_info(fx->s, &i), 0);
	assert_int_equal(i.cnt.failed, 1);
	/* the flash itself is intact: clearing the fault reads good data */
	assert_int_equal(nsim_set_block_flip(fx->s, 1, NSIM_FLIP_NONE), 0);
	assert_int_equal(nsim_read(fx->s, NAND_ES, got, NAND_PS), 0);
	assert_memory_equal(got, page, NAND_PS);
}

static void read_pattern(struct nsim *s, int *out, unsigned n)
{
	uint8_t got[NAND_PS];

	for (unsigned p = 0; p < n; p++)
		out[p] = nsim_read(s, (uint64_t)p * NAND_PS, got, NAND_PS);
}

TEST_FIXTURE(test_bitflips_global_rate_reproducible, setup_nand, teardown)
{
	struct fx *fx = *state;
	int a[200], b[200], c[200];
	unsigned corrected = 0, failed = 0;

	assert_int_equal(nsim_set_flip_rate(fx->s, 300000, 100000, 42), 0);
	read_pattern(fx->s, a, 200);
	reboot(fx); /* the rate, seed and sequence live in the file */
	assert_int_equal(nsim_set_flip_rate(fx->s, 300000, 100000, 42), 0);
	read_pattern(fx->s, b, 200);
	assert_memory_equal(a, b, sizeof(a));
	for (unsigned p = 0; p < 200; p++) {
		corrected += a[p] == -EUCLEAN;
		failed += a[p] == -EBADMSG;
		assert_true(a[p] == 0 || a[p] == -EUCLEAN || a[p] == -EBADMSG);
	}
	/* 30 % and 10 % of 200 reads, with generous margins */
	assert_in_range(corrected, 30, 90);
	assert_in_range(failed, 5, 40);
	assert_int_equal(nsim_set_flip_rate(fx->s, 300000, 100000, 43), 0);
	read_pattern(fx->s, c, 200);
	assert_memory_not_equal(a, c, sizeof(a));
	assert_int_equal(nsim_set_flip_rate(fx->s, 900000, 200000, 1), -EINVAL);
}

TEST_FIXTURE(test_oob_program_once, setup_nand, teardown)
{
	struct fx *fx = *state;
	uint8_t m[8] = { 0x85, 0x19, 0x03, 0x20, 0x08, 0, 0, 0 }, got[8], raw[16], page[NAND_PS];

	assert_int_equal(nsim_write_oob(fx->s, 2 * NAND_ES, m, 8), 0);
	assert_int_equal(nsim_read_oob(fx->s, 2 * NAND_ES, got, 8), 0);
	assert_memory_equal(got, m, 8);
	assert_int_equal(nsim_read_oob_raw(fx->s, 2 * NAND_ES, raw, 16), 0);
	assert_memory_equal(raw + 8, m, 8);            /* the free area */
	assert_true(util_mem_is(raw, 0xff, 8));         /* marker + ECC untouched */
	assert_int_equal(nsim_write_oob(fx->s, 2 * NAND_ES, m, 8), -EINVAL);
	assert_int_equal(nsim_write_oob(fx->s, 2 * NAND_ES, m, 9), -EINVAL);
	/* page data is independent of the OOB program (JFFS2 relies on it) */
	fill(page, sizeof(page), 10);
	assert_int_equal(nsim_write(fx->s, 2 * NAND_ES, page, NAND_PS), 0);
}

TEST_FIXTURE(test_nor_has_no_oob_or_ecc, setup_nor, teardown)
{
	struct fx *fx = *state;
	uint8_t b[8] = { 0 };

	assert_int_equal(nsim_write_oob(fx->s, 0, b, 8), -EOPNOTSUPP);
	assert_int_equal(nsim_read_oob(fx->s, 0, b, 8), -EOPNOTSUPP);
	assert_int_equal(nsim_set_block_flip(fx->s, 0, NSIM_FLIP_CORRECTED), -EOPNOTSUPP);
}

TEST_FIXTURE(test_data_area_is_plain_file, setup_nor, teardown)
{
	struct fx *fx = *state;
	uint8_t v[16], got[16];
	_cleanup_close_ int fd = -1;

	fill(v, sizeof(v), 11);
	assert_int_equal(nsim_write(fx->s, 3 * NOR_ES + 123, v, sizeof(v)), 0);
	fd = open(fx->path, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(pread(fd, got, sizeof(got), nsim_data_offset() + 3 * NOR_ES + 123),
			 (ssize_t)sizeof(got));
	assert_memory_equal(got, v, sizeof(v));
	assert_int_equal(pread(fd, got, 1, nsim_data_offset() + 3 * NOR_ES + 122), 1);
	assert_int_equal(got[0], 0xff);
}

TEST_FIXTURE(test_readonly_refuses_mutation, setup_nand, teardown)
{
	struct fx *fx = *state;
	struct nsim *ro = NULL;
	uint8_t b[4] = { 0 };

	assert_int_equal(nsim_open(fx->path, false, &ro), 0);
	assert_int_equal(nsim_write(ro, 0, b, 4), -EROFS);
	assert_int_equal(nsim_erase(ro, 0), -EROFS);
	assert_int_equal(nsim_set_powercut(ro, 1, false), -EROFS);
	assert_int_equal(nsim_read(ro, 0, b, 4), 0);
	assert_true(util_mem_is(b, 0xff, 4));
	nsim_close(ro);
}

TEST(test_strings)
{
	assert_int_equal(nsim_type_from_string("nand"), NSIM_NAND);
	assert_int_equal(nsim_type_from_string("nor"), NSIM_NOR);
	assert_int_equal(nsim_type_from_string("emmc"), -EINVAL);
	assert_string_equal(nsim_flip_to_string(NSIM_FLIP_UNCORRECTABLE), "uncorrectable");
	assert_int_equal(nsim_flip_from_string("corrected"), NSIM_FLIP_CORRECTED);
}

/* a test on a fresh simulated chip of each kind */
static int spec_parse(struct nsim_spec *s, struct error *err, ...)
{
	char *argv[16] = { "create" };
	int argc = 1;
	va_list ap;

	va_start(ap, err);
	while (argc < 15 && (argv[argc] = va_arg(ap, char *)))
		argc++;
	va_end(ap);
	optind = 0;
	return nsim_spec_parse(argc, argv, s, err);
}

/* The one parser of flashctl flash sim-create and nsimctl create. */
TEST(test_spec_parse)
{
	struct nsim_spec s;
	struct error err = {};

	(void)state;
	assert_int_equal(spec_parse(&s, &err, "/x.sim", "--type", "nand", "--size", "64MiB",
				    "--erase-block", "128KiB", "--bad-blocks", "3,17", "--force", NULL), 0);
	assert_string_equal(s.path, "/x.sim");
	assert_int_equal(s.geo.type, NSIM_NAND);
	assert_int_equal(s.geo.size, 64u << 20);
	assert_int_equal(s.geo.erasesize, 128u << 10);
	assert_int_equal(s.geo.writesize, 0); /* nsim_create_spec's default */
	assert_string_equal(s.bad_blocks, "3,17");
	assert_int_equal(s.flags, NSIM_CREATE_FORCE);
	assert_int_equal(spec_parse(&s, &err, "/x.sim", "-t", "nor", "-s", "0x100000", "-e", "65536",
				    NULL), 0);
	assert_int_equal(s.geo.type, NSIM_NOR);
	assert_int_equal(s.geo.size, 1u << 20);

	assert_int_equal(spec_parse(&s, &err, "/x.sim", "--type", "emmc", NULL), -EINVAL);
	assert_string_equal(err.msg, "--type must be nand or nor");
	assert_int_equal(spec_parse(&s, &err, "/x.sim", "--type", "nor", "--size", "1MiB", NULL),
			 -EINVAL);
	assert_string_equal(err.msg, "--type, --size and --erase-block are required");
	assert_int_equal(spec_parse(&s, &err, "--type", "nor", "--size", "1MiB", "--erase-block",
				    "64KiB", NULL), -EINVAL);
	assert_string_equal(err.msg, "expected one FILE");
	assert_int_equal(spec_parse(&s, &err, "/x.sim", "--type", "nor", "--size", "1MiB",
				    "--erase-block", "8GiB", NULL), -EINVAL);
	assert_string_equal(err.msg, "--erase-block 8GiB is too large");
	assert_int_equal(spec_parse(&s, &err, "/x.sim", "--size", "lots", NULL), -EINVAL);
	assert_non_null(strstr(err.msg, "invalid --size 'lots'"));
}

/* Simulator files are private to their owner: whoever can open one can
 * hold its lock (issue 32 item 11). */
TEST_FIXTURE(test_create_mode_0600, setup_nand, teardown)
{
	struct fx *fx = *state;
	struct stat st;

	assert_int_equal(stat(fx->path, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0600);
}

/* With a lock wait set (the daemon's event loop), an op whose lock another
 * open file holds fails with -EWOULDBLOCK after the wait, and the ops of
 * the next second try once only; released, ops work again. Without one
 * (tools, workers), nothing changes. */
TEST_FIXTURE(test_lock_wait_bounded, setup_nand, teardown)
{
	struct fx *fx = *state;
	_cleanup_close_ int other = open(fx->path, O_RDONLY | O_CLOEXEC);
	struct nsim_info i;

	assert_true(other >= 0);
	assert_int_equal(flock(other, LOCK_SH), 0);
	nsim_set_lock_wait(20 * 1000);
	assert_int_equal(nsim_get_info(fx->s, &i), -EWOULDBLOCK);
	assert_int_equal(nsim_get_info(fx->s, &i), -EWOULDBLOCK);
	assert_int_equal(flock(other, LOCK_UN), 0);
	assert_int_equal(nsim_get_info(fx->s, &i), 0);
	nsim_set_lock_wait(0);
	assert_int_equal(nsim_get_info(fx->s, &i), 0);
}
