/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Streaming writer/reader over bad blocks, changed-only writes, mark-bad,
 * verification; the erase counters of the simulator prove what was done. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>
#include <openssl/evp.h>

#include "cleanup.h"
#include "flash.h"
#include "flashio.h"
#include "nsim.h"
#include "testlib.h"
#include "util.h"

#define ES (16u * 1024)
#define PS 512u
#define NBLOCKS 32u

struct fx {
	char *path;
	struct flash *f;
	struct nsim *s; /* borrowed from f */
};

/* The fixture's simulator as a flash device */
static int open_sim(const struct fx *fx, bool writable, struct flash **ret)
{
	_cleanup_free_ char *spec = testlib_asprintf("sim:%s", fx->path);

	return flash_open(spec, writable, ret);
}

static int setup_geo(void **state, const struct nsim_geometry *g, const unsigned *bad, size_t n)
{
	struct fx *fx = calloc(1, sizeof(*fx));

	fx->path = testlib_sim_new("flashio", g, bad, n);
	assert_int_equal(open_sim(fx, true, &fx->f), 0);
	fx->s = flash_sim_nsim(fx->f);
	*state = fx;
	return 0;
}

static int setup_nand(void **state)
{
	static const unsigned bad[] = { 2, 5 };
	struct nsim_geometry g = { NSIM_NAND, NBLOCKS * ES, ES, PS, 16 };

	return setup_geo(state, &g, bad, ELEMENTSOF(bad));
}

static int setup_nor(void **state)
{
	struct nsim_geometry g = { NSIM_NOR, 8 * 64 * 1024, 64 * 1024, 1, 0 };

	return setup_geo(state, &g, NULL, 0);
}

static int teardown(void **state)
{
	struct fx *fx = *state;

	flash_close(fx->f);
	testlib_unlinkp(&fx->path);
	free(fx);
	return 0;
}

static uint8_t *image(size_t len, uint32_t seed)
{
	uint8_t *b = malloc(len);

	for (size_t i = 0; i < len; i++) {
		seed = seed * 1103515245u + 12345u;
		b[i] = seed >> 16;
	}
	return b;
}

static void write_image(struct flash *f, unsigned flags, const uint8_t *img, size_t len,
			struct flashio_stats *ret)
{
	_cleanup_(flashio_writer_freep) struct flashio_writer *w = NULL;

	assert_int_equal(flashio_writer_new(f, flags, &w), 0);
	assert_int_equal(flashio_writer_write_all(w, img, len), 0);
	assert_int_equal(flashio_writer_finish(w), (int64_t)len);
	*ret = *flashio_writer_stats(w);
}

/* What is on f: the first len bytes of its logical stream (bad blocks
 * skipped) compared with buf. 0 = identical; -EILSEQ = different
 * (*ret_at = first differing logical offset); -ENOSPC = the good blocks
 * hold fewer bytes; read errors as -errno. */
static int verify_buf(struct flash *f, const uint8_t *buf, size_t len, uint64_t *ret_at)
{
	_cleanup_(flashio_reader_freep) struct flashio_reader *rd = NULL;
	_cleanup_free_ uint8_t *got = malloc(f->info.erasesize);
	size_t done = 0;
	int r;

	assert_non_null(got);
	r = flashio_reader_new(f, &rd);
	if (r < 0)
		return r;
	while (done < len) {
		ssize_t n = flashio_reader_read(rd, got, MIN(len - done, (size_t)f->info.erasesize));

		if (n <= 0)
			return n < 0 ? (int)n : -ENOSPC;
		for (ssize_t i = 0; i < n; i++)
			if (got[i] != buf[done + i]) {
				if (ret_at)
					*ret_at = done + i;
				return -EILSEQ;
			}
		done += n;
	}
	return 0;
}

static uint32_t erase_count(struct fx *fx, unsigned b)
{
	struct nsim_block blk;

	assert_int_equal(nsim_get_block(fx->s, b, &blk), 0);
	return blk.erase_count;
}

TEST_FIXTURE(test_write_read_across_bad_blocks, setup_nand, teardown)
{
	struct fx *fx = *state;
	size_t len = 10 * ES + 3 * PS + 100; /* ends inside a page */
	_cleanup_free_ uint8_t *img = image(len, 1);
	_cleanup_free_ uint8_t *back = malloc(NBLOCKS * ES);
	_cleanup_(flashio_reader_freep) struct flashio_reader *r = NULL;
	struct flashio_stats st;
	size_t got = 0;
	ssize_t n;

	write_image(fx->f, 0, img, len, &st);
	assert_int_equal(st.blocks_written, 11);
	assert_int_equal(st.blocks_bad_skipped, 2);
	assert_int_equal(st.erases, 11);
	assert_int_equal(st.bytes, len);
	/* bad blocks were never touched; the image ends on block 12 */
	assert_int_equal(erase_count(fx, 2), 0);
	assert_int_equal(erase_count(fx, 5), 0);
	assert_int_equal(erase_count(fx, 12), 1);
	assert_int_equal(erase_count(fx, 13), 0);

	assert_int_equal(flashio_reader_new(fx->f, &r), 0);
	while ((n = flashio_reader_read(r, back + got, NBLOCKS * ES - got)) > 0) {
		assert_true(n <= (ssize_t)ES); /* bounded: one block per call */
		got += n;
	}
	assert_int_equal(n, 0);
	assert_int_equal(got, (NBLOCKS - 2) * ES); /* every good block */
	assert_memory_equal(back, img, len);
	/* the padding of the last page and the rest of the block read erased */
	assert_true(util_mem_is(back + len, 0xff, 11 * ES - len));
	assert_int_equal(flashio_reader_stats(r)->blocks_bad_skipped, 2);
	assert_int_equal(verify_buf(fx->f, img, len, NULL), 0);
}

TEST_FIXTURE(test_skipped_ff_pages_are_not_programmed, setup_nand, teardown)
{
	struct fx *fx = *state;
	_cleanup_free_ uint8_t *img = malloc(2 * ES);
	struct nsim_info before, after;
	struct flashio_stats st;

	memset(img, 0xff, 2 * ES);
	memset(img + 3 * PS, 0x00, PS);     /* one data page in block 0 */
	memset(img + ES + 5, 0x42, 10);     /* one data page in block 1 */
	assert_int_equal(nsim_get_info(fx->s, &before), 0);
	write_image(fx->f, 0, img, 2 * ES, &st);
	assert_int_equal(nsim_get_info(fx->s, &after), 0);
	assert_int_equal(after.cnt.programs - before.cnt.programs, 2);
	assert_int_equal(verify_buf(fx->f, img, 2 * ES, NULL), 0);
}

TEST_FIXTURE(test_out_of_good_blocks, setup_nand, teardown)
{
	struct fx *fx = *state;
	_cleanup_flash_ struct flash *w = NULL;
	_cleanup_(flashio_writer_freep) struct flashio_writer *wr = NULL;
	_cleanup_free_ uint8_t *img = image(3 * ES, 2);
	ssize_t n;

	/* blocks 1..4 hold two bad ones (2 and 5 is outside): 3 good, 1 bad */
	assert_int_equal(flash_open_window(fx->f, "small", ES, 4 * ES, &w), 0);
	assert_int_equal(flashio_writer_new(w, 0, &wr), 0);
	assert_int_equal(flashio_writer_write_all(wr, img, 3 * ES), 0);
	assert_int_equal(flashio_writer_finish(wr), 3 * ES);
	flashio_writer_free(wr);
	wr = NULL;

	/* one byte more than the good blocks hold */
	assert_int_equal(flashio_writer_new(w, 0, &wr), 0);
	assert_int_equal(flashio_writer_write_all(wr, img, 3 * ES), 0);
	n = flashio_writer_write(wr, img, 1);
	assert_int_equal(n, 1); /* buffered */
	assert_int_equal(flashio_writer_finish(wr), -ENOSPC);
	/* the error is sticky */
	assert_int_equal(flashio_writer_write(wr, img, 1), -ENOSPC);
	assert_int_equal(flashio_writer_offset(wr), 4 * ES);
	assert_int_equal(erase_count(fx, 5), 0); /* never left the window */
	/* and the verify of a longer stream than fits says so */
	assert_int_equal(verify_buf(w, img, 3 * ES, NULL), 0);
	{
		_cleanup_free_ uint8_t *big = image(3 * ES + 1, 2);
		assert_int_equal(verify_buf(w, big, 3 * ES + 1, NULL), -ENOSPC);
	}
}

TEST_FIXTURE(test_changed_only_skips_identical_blocks, setup_nand, teardown)
{
	struct fx *fx = *state;
	size_t len = 8 * ES;
	_cleanup_free_ uint8_t *img = image(len, 3);
	uint32_t before[NBLOCKS], after[NBLOCKS];
	struct flashio_stats st;

	write_image(fx->f, 0, img, len, &st);
	for (unsigned b = 0; b < NBLOCKS; b++)
		before[b] = erase_count(fx, b);
	/* change one byte in logical block 4 = physical block 6 (2 bad before) */
	img[4 * ES + 1000] ^= 0x40;
	write_image(fx->f, FLASHIO_CHANGED_ONLY, img, len, &st);
	assert_int_equal(st.blocks_identical, 7);
	assert_int_equal(st.blocks_written, 1);
	assert_int_equal(st.erases, 1);
	for (unsigned b = 0; b < NBLOCKS; b++) {
		after[b] = erase_count(fx, b);
		assert_int_equal(after[b], before[b] + (b == 6));
	}
	assert_int_equal(verify_buf(fx->f, img, len, NULL), 0);
	/* the same image again: nothing at all is erased or written */
	write_image(fx->f, FLASHIO_CHANGED_ONLY, img, len, &st);
	assert_int_equal(st.blocks_identical, 8);
	assert_int_equal(st.erases, 0);
	assert_int_equal(fx->f->stats.writes, 9 * ES - 0); /* 8 blocks + 1 rewritten */
}

/* FLASHIO_VERIFY: every block is read from flash once per write. A block
 * written into an erased slot: one compare page, then its read-back; a
 * block found identical: the compare read of the whole block, nothing
 * more. Before FLASHIO_VERIFY the caller read the whole slot back again. */
TEST_FIXTURE(test_verify_reads_each_block_once, setup_nand, teardown)
{
	struct fx *fx = *state;
	size_t len = 6 * ES + 1000; /* 7 blocks, the last one partial */
	_cleanup_free_ uint8_t *img = image(len, 7);
	const unsigned flags = FLASHIO_CHANGED_ONLY | FLASHIO_VERIFY;
	struct flashio_stats st;
	uint64_t reads = fx->f->stats.reads;

	write_image(fx->f, flags, img, len, &st);
	assert_int_equal(st.blocks_written, 7);
	assert_int_equal(st.bytes_verified, len);
	assert_int_equal(st.bytes_read, 7 * (PS + ES));
	assert_int_equal(fx->f->stats.reads - reads, 7 * (PS + ES));

	reads = fx->f->stats.reads;
	write_image(fx->f, flags, img, len, &st);
	assert_int_equal(st.blocks_identical, 7);
	assert_int_equal(st.erases, 0);
	assert_int_equal(st.bytes_verified, len);
	assert_int_equal(st.bytes_read, 7 * ES);
	assert_int_equal(fx->f->stats.reads - reads, 7 * ES);

	/* without the compare: the read-back only */
	reads = fx->f->stats.reads;
	write_image(fx->f, FLASHIO_VERIFY, img, len, &st);
	assert_int_equal(st.blocks_written, 7);
	assert_int_equal(fx->f->stats.reads - reads, 7 * ES);
	assert_int_equal(verify_buf(fx->f, img, len, NULL), 0);
}

/* A program that reports success but does not keep a bit: the read-back
 * catches it, the block gets a second erase and program; failing again it
 * is a flash fault: without FLASHIO_MARK_BAD the write stops there
 * (-EILSEQ, its offset, the blocks before it verified), with it the block
 * is marked bad and the data goes on the next good block (issue 31: a
 * failed read-back once stopped the install and blamed the bundle). */
TEST_FIXTURE(test_verify_catches_stuck_bit, setup_nand, teardown)
{
	struct fx *fx = *state;
	size_t len = 4 * ES;
	_cleanup_free_ uint8_t *img = image(len, 8);
	_cleanup_(flashio_writer_freep) struct flashio_writer *w = NULL;
	uint32_t erases;

	/* logical block 2 is physical block 3 (block 2 is bad) */
	assert_int_equal(nsim_set_block_faults(fx->s, 3, NSIM_FAULT_STUCK_BIT), 0);
	erases = erase_count(fx, 3);
	assert_int_equal(flashio_writer_new(fx->f, FLASHIO_VERIFY, &w), 0);
	assert_int_equal(flashio_writer_write_all(w, img, len), -EILSEQ);
	assert_int_equal(flashio_writer_offset(w), 3 * ES);
	assert_int_equal(flashio_writer_stats(w)->bytes_verified, 2 * ES);
	assert_int_equal(flashio_writer_stats(w)->blocks_marked_bad, 0);
	assert_int_equal(flashio_writer_finish(w), -EILSEQ);
	/* programmed twice */
	assert_int_equal(erase_count(fx, 3) - erases, 2);
	flashio_writer_free(TAKE_PTR(w));

	assert_int_equal(flashio_writer_new(fx->f, FLASHIO_VERIFY | FLASHIO_MARK_BAD, &w), 0);
	assert_int_equal(flashio_writer_write_all(w, img, len), 0);
	assert_int_equal(flashio_writer_finish(w), (int64_t)len);
	assert_int_equal(flashio_writer_stats(w)->blocks_marked_bad, 1);
	assert_int_equal(flashio_writer_stats(w)->bytes_verified, len);
	assert_int_equal(nsim_block_isbad(fx->s, 3 * ES), 1);
	assert_int_equal(verify_buf(fx->f, img, len, NULL), 0);
}

/* An uncorrectable block (the ECC fails on every read) is the same flash
 * fault: retired, the data on the next good block. */
TEST_FIXTURE(test_verify_retires_uncorrectable_block, setup_nand, teardown)
{
	struct fx *fx = *state;
	size_t len = 3 * ES;
	_cleanup_free_ uint8_t *img = image(len, 9);
	struct flashio_stats st;

	assert_int_equal(nsim_set_block_flip(fx->s, 1, NSIM_FLIP_UNCORRECTABLE), 0);
	write_image(fx->f, FLASHIO_VERIFY | FLASHIO_MARK_BAD, img, len, &st);
	assert_int_equal(st.blocks_marked_bad, 1);
	assert_int_equal(st.blocks_written, 3);
	assert_int_equal(nsim_block_isbad(fx->s, ES), 1);
	assert_int_equal(verify_buf(fx->f, img, len, NULL), 0);
}

TEST_FIXTURE(test_changed_only_scrubs_corrected_block, setup_nand, teardown)
{
	struct fx *fx = *state;
	_cleanup_free_ uint8_t *img = image(2 * ES, 4);
	struct flashio_stats st;

	write_image(fx->f, 0, img, 2 * ES, &st);
	assert_int_equal(nsim_set_block_flip(fx->s, 1, NSIM_FLIP_CORRECTED), 0);
	write_image(fx->f, FLASHIO_CHANGED_ONLY, img, 2 * ES, &st);
	assert_int_equal(st.blocks_identical, 1);
	assert_int_equal(st.blocks_written, 1); /* block 1 refreshed */
	assert_true(st.corrected >= 1);
	assert_int_equal(erase_count(fx, 1), 2);
}

TEST_FIXTURE(test_nor_changed_only_skips_erase_of_erased, setup_nor, teardown)
{
	struct fx *fx = *state;
	_cleanup_free_ uint8_t *img = image(3 * 64 * 1024, 5);
	struct flashio_stats st;
	struct nsim_block b;

	write_image(fx->f, FLASHIO_CHANGED_ONLY, img, 3 * 64 * 1024, &st);
	assert_int_equal(st.blocks_written, 3);
	assert_int_equal(st.erases, 0);
	assert_int_equal(st.erases_skipped, 3);
	assert_int_equal(nsim_get_block(fx->s, 0, &b), 0);
	assert_int_equal(b.erase_count, 0);
	assert_int_equal(verify_buf(fx->f, img, 3 * 64 * 1024, NULL), 0);
	/* without the flag the writer always erases */
	write_image(fx->f, 0, img, 3 * 64 * 1024, &st);
	assert_int_equal(st.erases, 3);
}

TEST_FIXTURE(test_mark_bad_moves_data_on, setup_nand, teardown)
{
	struct fx *fx = *state;
	size_t len = 4 * ES;
	_cleanup_free_ uint8_t *img = image(len, 6);
	_cleanup_(flashio_writer_freep) struct flashio_writer *w = NULL;
	struct flashio_stats st;

	assert_int_equal(nsim_set_block_faults(fx->s, 1, NSIM_FAULT_PROGRAM), 0);
	/* without the flag, the -EIO comes back with the block's offset */
	assert_int_equal(flashio_writer_new(fx->f, 0, &w), 0);
	assert_int_equal(flashio_writer_write_all(w, img, len), -EIO);
	assert_int_equal(flashio_writer_offset(w), ES);
	assert_int_equal(flash_block_isbad(fx->f, ES), 0);

	write_image(fx->f, FLASHIO_MARK_BAD, img, len, &st);
	assert_int_equal(st.blocks_marked_bad, 1);
	assert_int_equal(st.blocks_bad_skipped, 2);
	assert_int_equal(st.blocks_written, 4);
	assert_int_equal(flash_block_isbad(fx->f, ES), 1);
	/* blocks 0, 3, 4, 6 hold the image now */
	assert_int_equal(verify_buf(fx->f, img, len, NULL), 0);

	/* an erase failure is handled the same way */
	assert_int_equal(nsim_set_block_faults(fx->s, 0, NSIM_FAULT_ERASE), 0);
	write_image(fx->f, FLASHIO_MARK_BAD, img, len, &st);
	assert_int_equal(st.blocks_marked_bad, 1);
	assert_int_equal(verify_buf(fx->f, img, len, NULL), 0);
	assert_int_equal(flash_count_bad(fx->f), 4);
}

TEST_FIXTURE(test_incremental_bounded, setup_nand, teardown)
{
	struct fx *fx = *state;
	_cleanup_free_ uint8_t *img = image(3 * ES, 7);
	_cleanup_(flashio_writer_freep) struct flashio_writer *w = NULL;
	uint64_t erases;
	ssize_t n;

	assert_int_equal(flashio_writer_new(fx->f, 0, &w), 0);
	/* a huge write is taken one erase block at a time */
	n = flashio_writer_write(w, img, 3 * ES);
	assert_int_equal(n, ES);
	assert_int_equal(flashio_writer_stats(w)->erases, 1);
	n = flashio_writer_write(w, img + ES, 100);
	assert_int_equal(n, 100);
	erases = flashio_writer_stats(w)->erases;
	assert_int_equal(erases, 1); /* buffered, no I/O yet */
	n = flashio_writer_write(w, img + ES + 100, 3 * ES);
	assert_int_equal(n, ES - 100);
	assert_int_equal(flashio_writer_stats(w)->erases, 2);
	assert_int_equal(flashio_writer_finish(w), 2 * ES);
	assert_int_equal(flashio_writer_finish(w), -EINVAL);
	assert_int_equal(flashio_writer_write(w, img, 1), -EINVAL);
}

TEST_FIXTURE(test_verify_reports_mismatch, setup_nand, teardown)
{
	struct fx *fx = *state;
	size_t len = 3 * ES + 17;
	_cleanup_free_ uint8_t *img = image(len, 8);
	struct flashio_stats st;
	uint64_t at = 0;

	write_image(fx->f, 0, img, len, &st);
	assert_int_equal(verify_buf(fx->f, img, len, &at), 0);
	img[2 * ES + 77] ^= 1;
	assert_int_equal(verify_buf(fx->f, img, len, &at), -EILSEQ);
	assert_int_equal(at, 2 * ES + 77);
}

/* The read-back hash of a write: the bytes written (bad blocks skipped),
 * not the bytes at the same offsets; a changed byte changes it; more than
 * the good blocks hold is -ENOSPC. */
TEST_FIXTURE(test_read_sha256, setup_nand, teardown)
{
	struct fx *fx = *state;
	size_t len = 3 * ES + 17;
	_cleanup_free_ uint8_t *img = image(len, 10);
	uint8_t want[32], got[32];
	struct flashio_stats st;
	uint64_t at = 0;

	write_image(fx->f, 0, img, len, &st); /* block 2 is bad (setup_nand) */
	assert_int_equal(st.blocks_bad_skipped, 1);
	assert_non_null(EVP_Digest(img, len, want, NULL, EVP_sha256(), NULL));
	assert_int_equal(flashio_read_sha256(fx->f, len, got, &at), 0);
	assert_memory_equal(got, want, sizeof(want));
	img[ES + 5] ^= 1;
	assert_non_null(EVP_Digest(img, len, want, NULL, EVP_sha256(), NULL));
	assert_int_equal(flashio_read_sha256(fx->f, len, got, &at), 0);
	assert_memory_not_equal(got, want, sizeof(want));
	assert_int_equal(flashio_read_sha256(fx->f, fx->f->info.size, got, &at), -ENOSPC);
	assert_int_equal(nsim_set_block_flip(fx->s, 3, NSIM_FLIP_UNCORRECTABLE), 0);
	assert_int_equal(flashio_read_sha256(fx->f, len, got, &at), -EBADMSG);
	assert_int_equal(at, 3 * ES);
}

TEST_FIXTURE(test_reader_uncorrectable, setup_nand, teardown)
{
	struct fx *fx = *state;
	_cleanup_free_ uint8_t *img = image(2 * ES, 9);
	_cleanup_(flashio_reader_freep) struct flashio_reader *r = NULL;
	uint8_t buf[ES];
	struct flashio_stats st;

	write_image(fx->f, 0, img, 2 * ES, &st);
	assert_int_equal(nsim_set_block_flip(fx->s, 1, NSIM_FLIP_UNCORRECTABLE), 0);
	assert_int_equal(flashio_reader_new(fx->f, &r), 0);
	assert_int_equal(flashio_reader_read(r, buf, ES), ES);
	assert_int_equal(flashio_reader_read(r, buf, ES), -EBADMSG);
	assert_int_equal(flashio_reader_offset(r), ES);
	assert_int_equal(verify_buf(fx->f, img, 2 * ES, NULL), -EBADMSG);
}

TEST_FIXTURE(test_erase_all_skips_bad, setup_nand, teardown)
{
	struct fx *fx = *state;
	struct flashio_stats st;

	assert_int_equal(nsim_set_block_faults(fx->s, 9, NSIM_FAULT_ERASE), 0);
	assert_int_equal(flashio_erase_all(fx->f, 0, &st), -EIO);
	assert_int_equal(flashio_erase_all(fx->f, FLASHIO_MARK_BAD, &st), 0);
	assert_int_equal(st.erases, NBLOCKS - 3);
	assert_int_equal(st.blocks_bad_skipped, 2);
	assert_int_equal(st.blocks_marked_bad, 1);
	assert_int_equal(erase_count(fx, 2), 0);
	assert_int_equal(erase_count(fx, 3), 2);
}

TEST_FIXTURE(test_writer_refuses_readonly, setup_nand, teardown)
{
	struct fx *fx = *state;
	_cleanup_flash_ struct flash *ro = NULL;
	struct flashio_writer *w = NULL;

	assert_int_equal(open_sim(fx, false, &ro), 0);
	assert_int_equal(flashio_writer_new(ro, 0, &w), -EROFS);
	assert_int_equal(flashio_writer_new(fx->f, 0x80, &w), -EINVAL);
	assert_null(w);
}
