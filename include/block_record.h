/* What a slot holds, block by block: after a verified write of an image
 * to a raw (NOR/NAND) slot partition, the install engine keeps, in the
 * state dir, the SHA-256 of each logical erase block of the image, the
 * physical block each one landed on, the partition's bad-block map, the
 * erase size, the image's sha256 and bundle version, and a checksum of it
 * all. An adaptive install then skips the blocks the record says already
 * hold the right data, without reading them.
 *
 * A record is deleted (and the directory fsynced) before anything of
 * flashd writes that slot member, so a record never describes a write in
 * progress. It is trusted only when everything it can check still holds:
 * its checksum, the erase size, the current bad-block map, and the
 * U-Boot env's view of the slot (record verified or good, the same
 * FLASHD_<slot>_VERSION). Otherwise it is "unsure" and the engine reads
 * and compares every block. What it cannot see is a write to the slot
 * outside flashd that changes none of those: such a write must delete the
 * record (block_record_drop) or mark the slot bad first (docs/bundle-format.md).
 *
 * File: DIR/blocks-<group>-<slot>-<member>.bin, host byte order (it never
 * leaves the device). */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bundle.h"
#include "flash.h"

struct block_record {
	uint32_t erasesize;
	uint64_t size;                       /* image bytes */
	uint8_t image_sha256[32];
	char version[BUNDLE_VERSION_MAX + 1]; /* bundle version, as FLASHD_<slot>_VERSION */
	uint32_t part_blocks;                /* erase blocks of the partition */
	uint8_t *bad;                        /* bitmap of its bad blocks, part_blocks bits */
	uint32_t n_blocks;                   /* logical blocks of the image */
	uint32_t *phys;                      /* physical block of each */
	uint8_t *hashes;                     /* n_blocks x 32 */
};

/* An empty record for n_blocks blocks on f (erase size, bad-block map of
 * f now); the caller fills size, sha, version, phys and hashes. */
int block_record_new(struct flash *f, uint32_t n_blocks, struct block_record **ret);
void block_record_free(struct block_record *r);
static inline void block_record_freep(struct block_record **r) { block_record_free(*r); }
#define _cleanup_block_record_ __attribute__((cleanup(block_record_freep)))

/* Atomic (temp, fsync, rename, fsync dir); creates dir. */
int block_record_save(const char *dir, const char *group, const char *slot, const char *member,
		      const struct block_record *r);
/* -ENOENT: none; -EBADMSG: damaged (checksum, sizes). */
int block_record_load(const char *dir, const char *group, const char *slot, const char *member,
		      struct block_record **ret);
/* Delete the record and fsync dir: before the member is written. 0 also
 * when there was none. */
int block_record_drop(const char *dir, const char *group, const char *slot, const char *member);
/* Read n blocks the record describes (the first, the last, the rest at
 * random) from f and compare their hashes: 1 all match, 0 one differs,
 * -errno. A slot erased or rewritten outside flashd, with the env still
 * vouching for it, is caught so (a change of a few blocks only with
 * luck: such writes must delete the record, docs/bundle-format.md). */
int block_record_spot_check(const struct block_record *r, struct flash *f, unsigned n);
/* Read every block the record describes and compare its hash: 1 all
 * match, 0 one differs or cannot be read (an uncorrectable ECC error;
 * *ret_block says which logical block), -errno. */
int block_record_verify(const struct block_record *r, struct flash *f, uint32_t *ret_block);
/* The record still describes f: same erase size, same bad-block map. */
bool block_record_matches_flash(const struct block_record *r, struct flash *f);
