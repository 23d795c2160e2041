/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The adaptive write of one image onto a raw (NOR/NAND) slot partition,
 * from a random-access bundle source and the bundle's signed block index
 * (docs/bundle-format.md, "Adaptive install").
 *
 * Logical block k of the image goes to the k-th good erase block of the
 * partition. For each block:
 *   - the slot's block record knows the block at the same physical place:
 *     another hash than the index's -> fetched and written without a
 *     read; the index's hash -> the block is to keep, but only once it was
 *     read and hashed (below);
 *   - else the flash block is read and hashed: equal -> left alone;
 *   - else the block is fetched (source_pread, after one source_plan()
 *     of all such blocks), its hash checked against the index, erased,
 *     programmed and read back; a block the other (running) slot's
 *     record names is read there instead, checked the same way.
 * Every block an install keeps is read from the flash and hashed against
 * the signed index, whatever the record says: the blocks the record names
 * on the fetch-ahead thread (through a second handle, `verify`), while the
 * main thread programs, so the reads overlap the writes. A read error, an
 * ECC correction or failure, or another hash means the block is rewritten
 * (fetched and written like a changed one): bit rot, an uncorrectable
 * block and a write outside flashd are repaired, never kept. A read-back
 * that fails twice marks the block bad (flashio) and the blocks after it
 * move one good block on: they are classified again on their new place;
 * where a block cannot be retired, the install fails with a flash error
 * (-EIO), not a fault of the bundle.
 *
 * With a format 3 bundle (a chunk table), a block to write is first
 * assembled from chunks found on the board (the other slot, this slot's
 * old content, at any offset) and only its missing byte ranges are
 * fetched; the block is checked against the index before it is written,
 * and fetched whole when it does not match.
 *
 * The same path resumes an interrupted install: an install that stopped
 * halfway left no record (it was dropped before the first write), so
 * every block is read and compared, and only what was not yet written
 * is fetched. */
#pragma once
#include <stdint.h>

#include "block_record.h"
#include "bundle.h"
#include "error.h"
#include "flash.h"
#include "flashio.h"
#include "source.h"

struct install_index_stats {
	uint64_t blocks_read;      /* flash blocks read to compare (not read-back) */
	uint64_t blocks_recorded;  /* the record said they held the block (read all the same) */
	uint64_t blocks_stale;     /* of those, read otherwise (rot, ECC, a write): rewritten */
	uint64_t blocks_same;      /* read, equal, left alone */
	uint64_t blocks_written;
	uint64_t blocks_copied;    /* of those, read from the other slot, not fetched */
	uint64_t blocks_bad;       /* marked bad while writing */
	uint64_t blocks_erased;    /* compared by one page: erased, the image needs data */
	uint64_t erases;
	uint64_t bytes_written;    /* image bytes programmed */
	/* format 3: blocks assembled from chunks found on the board (the
	 * rest of their bytes fetched), and of those, blocks whose result did
	 * not match the index (a seed read wrong, bit rot): fetched whole */
	uint64_t blocks_assembled;
	uint64_t blocks_assembly_failed;
	uint64_t bytes_local;      /* image bytes taken from the board's chunks */
};

struct install_index_image {
	struct flash *flash;             /* the slot partition */
	const struct bundle_image *img;  /* offset, size, n_blocks, index_first */
	uint32_t block_size;             /* the manifest's = flash erase size */
	const uint8_t *index;            /* the whole verified index */
	const struct block_record *rec;  /* record of the slot (where to look first), or NULL */
	/* A second, read-only handle onto the same partition, or NULL: the
	 * fetch-ahead thread reads the blocks to keep through it while the
	 * main thread writes through flash (a handle is one thread's). NULL:
	 * they are read on the main thread. */
	struct flash *verify;
	/* The same member in the other (running) slot and its record, or
	 * NULL: a block the record names is read from there (and checked
	 * against the index) instead of fetched. Only read, never written. */
	struct flash *other;
	const struct block_record *other_rec;
	/* Format 3: the manifest (its chunk table is in index), else NULL.
	 * The chunks of `other` and of this slot's old content are looked up
	 * (chunk_seed.h) for every block to write, which is assembled from
	 * them and the missing byte ranges fetched; a chunk of this slot is
	 * used only while its erase block was not yet erased. */
	const struct bundle_manifest *m;
	/* NULL, or called after each logical block is classified and after
	 * each is settled (skipped, or written and read back): done counts
	 * both, 0..2 x the image's blocks (it may step back when a block goes
	 * bad and the rest is placed again). Progress, and a negative return
	 * (a cancel) stops the write with it. */
	int (*tick)(void *userdata, uint64_t done, const struct install_index_stats *st);
	/* Erase, program and read back the erase block at byte at of flash:
	 * the install's storage handler (install_target.c), the one way its
	 * writes reach the flash. 0 or -errno; *ret: its flashio counters
	 * (a block that failed is marked bad: blocks_marked_bad). */
	int (*program)(void *userdata, uint64_t at, const void *buf, size_t len,
		       struct flashio_stats *ret);
	void *userdata;
};

/* Write img adaptively. On success *ret_rec (when not NULL) describes what
 * the partition now holds (hashes, physical blocks, bad-block map); the
 * caller sets version and saves it. err names image and block. */
int install_index_write(const struct install_index_image *ii, struct source *src,
			struct install_index_stats *st, struct block_record **ret_rec,
			struct error *err);
/* A record of what f holds after a verified write of img whose blocks are
 * described by index (the stream path): logical block k on the k-th good
 * block. */
int install_index_record(struct flash *f, const struct bundle_image *img, const uint8_t *index,
			 struct block_record **ret);
