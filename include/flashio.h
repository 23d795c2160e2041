/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Streaming flash I/O on top of flash.h, with nandwrite/nanddump semantics:
 * a logical byte stream is laid out over the good erase blocks of a device
 * or window, bad blocks are stepped over.
 *
 * Everything is incremental and bounded so the daemon can run it from its
 * event loop: the writer buffers at most one erase block and one call does
 * the I/O of at most one erase block (compare read, erase, program,
 * read-back; plus a retry on the next block when a block goes bad under
 * FLASHIO_MARK_BAD); the reader returns at most the rest of the current
 * erase block per call. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "flash.h"

enum {
	/* Read each target block first; leave identical blocks untouched
	 * (no erase, no program). On NOR an erased block is not erased again;
	 * on NAND it is, since an all-0xFF read does not prove that no page
	 * was programmed (pages may only be programmed once per erase). A
	 * block read with corrected bitflips is rewritten (scrubbed). */
	FLASHIO_CHANGED_ONLY = 1u << 0,
	/* On -EIO from erase/program: mark the block bad and put the same
	 * data on the next good block (nandwrite -m). */
	FLASHIO_MARK_BAD = 1u << 1,
	/* Read every programmed block back right after programming it and
	 * compare it with what was written: the data is still in memory, so
	 * the check is exact and needs no hash. A block that FLASHIO_CHANGED_ONLY
	 * found identical was compared in full by that read and is not read
	 * again. A block that fails its read-back is erased and programmed
	 * once more; failing again, under FLASHIO_MARK_BAD it is marked bad
	 * and the data goes on the next good block. Errors (a block that
	 * could not be retired): -EBADMSG uncorrectable read-back, -EILSEQ
	 * the flash did not keep what was programmed (at
	 * flashio_writer_offset()): flash faults, not faults of the data. */
	FLASHIO_VERIFY = 1u << 2,
};

struct flashio_stats {
	uint64_t bytes;              /* logical bytes written/read */
	uint64_t blocks_written;     /* blocks programmed */
	uint64_t blocks_identical;   /* FLASHIO_CHANGED_ONLY: left as they were */
	uint64_t blocks_bad_skipped; /* bad blocks stepped over */
	uint64_t blocks_marked_bad;  /* blocks that failed and were marked bad */
	uint64_t erases;             /* erase ops issued */
	uint64_t erases_skipped;     /* NOR blocks already erased */
	uint64_t corrected;          /* reads that needed ECC correction */
	uint64_t bytes_read;         /* flash bytes read (compare and read-back) */
	uint64_t bytes_verified;     /* FLASHIO_VERIFY: logical bytes known to be on flash */
};

struct flashio_writer;
struct flashio_reader;

int flashio_writer_new(struct flash *f, unsigned flags, struct flashio_writer **ret);
/* Consume up to len bytes: returns how many were taken (>= 1 for len > 0)
 * or -errno; the write of one block happens in the call that fills it.
 * -ENOSPC: no good block left for the data. Errors are sticky. */
ssize_t flashio_writer_write(struct flashio_writer *w, const void *buf, size_t len);
/* Convenience for tools: loop until all of buf is taken. */
int flashio_writer_write_all(struct flashio_writer *w, const void *buf, size_t len);
/* Write out the partial last block (last page padded with 0xFF). Returns
 * the number of logical bytes written (saturated at INT64_MAX) or -errno. */
int64_t flashio_writer_finish(struct flashio_writer *w);
const struct flashio_stats *flashio_writer_stats(const struct flashio_writer *w);
/* Offset (in the window) of the block being worked on: where an error
 * happened, or where the next block goes. */
uint64_t flashio_writer_offset(const struct flashio_writer *w);
void flashio_writer_free(struct flashio_writer *w);
static inline void flashio_writer_freep(struct flashio_writer **w) { flashio_writer_free(*w); }
#define _cleanup_flashio_writer_ __attribute__((cleanup(flashio_writer_freep)))

int flashio_reader_new(struct flash *f, struct flashio_reader **ret);
/* Read up to len bytes of the logical stream, never past the end of the
 * current erase block: returns the count, 0 at the end of the device, or
 * -errno (-EBADMSG: uncorrectable data at flashio_reader_offset()). */
ssize_t flashio_reader_read(struct flashio_reader *r, void *buf, size_t len);
const struct flashio_stats *flashio_reader_stats(const struct flashio_reader *r);
uint64_t flashio_reader_offset(const struct flashio_reader *r); /* physical, in the window */
void flashio_reader_free(struct flashio_reader *r);
static inline void flashio_reader_freep(struct flashio_reader **r) { flashio_reader_free(*r); }
#define _cleanup_flashio_reader_ __attribute__((cleanup(flashio_reader_freep)))

/* Read back the first len bytes of the logical stream of f (bad blocks
 * skipped, as written) and hash them: the read-back check of a write whose
 * source cannot be read twice. -ENOSPC = the good blocks hold fewer than
 * len bytes; -EBADMSG (uncorrectable) and other -errno = read error at
 * *ret_at (physical offset in f), if not NULL. */
int flashio_read_sha256(struct flash *f, uint64_t len, uint8_t ret_sha256[32], uint64_t *ret_at);

/* An eraser of one block (flashio_erase_block, jffs2_erase_block): 0
 * erased, 1 skipped (bad, or marked bad now under FLASHIO_MARK_BAD after
 * -EIO), -errno. Counts erases, blocks_bad_skipped and blocks_marked_bad
 * in st if not NULL. */
typedef int flashio_erase_fn(struct flash *f, uint64_t off, unsigned flags,
			     struct flashio_stats *st);
/* Erase one block unless it is bad (flash_erase semantics). */
int flashio_erase_block(struct flash *f, uint64_t off, unsigned flags, struct flashio_stats *st);
/* The same, then then(f, off) on the erased block (a JFFS2 clean marker);
 * -EIO from either marks the block bad under FLASHIO_MARK_BAD. */
int flashio_erase_block_then(struct flash *f, uint64_t off, unsigned flags,
			     int (*then)(struct flash *f, uint64_t off), struct flashio_stats *st);
/* Every block of f through erase; *ret (if not NULL) is set on success. */
int flashio_erase_each(struct flash *f, flashio_erase_fn *erase, unsigned flags,
		       struct flashio_stats *ret);
/* Erase every good block of f (flash_erase semantics). */
int flashio_erase_all(struct flash *f, unsigned flags, struct flashio_stats *ret);
