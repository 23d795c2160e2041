/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* What a slot holds, block by block, as far as flashd last knew: after a
 * verified write of an image to a raw (NOR/NAND) slot partition, the
 * install engine keeps, in the state dir, the SHA-256 of each logical
 * erase block of the image (the image's part of the bundle's signed
 * index), the physical block each one landed on, the partition's
 * bad-block map, the erase size, the image's size and sha256, and a
 * checksum of it all.
 *
 * A record says where to look first, never what is there. The next
 * adaptive install matches it block by block against the signed index it
 * installs (hashes, never a version string: a rebuilt bundle reusing a
 * version matches only the blocks whose hashes are equal): a block whose
 * recorded hash differs is written without being read; a block whose
 * recorded hash is the one wanted is still read and hashed before it is
 * kept (install_index.h), so bit rot, an uncorrectable block or a write
 * outside flashd is rewritten, whatever the record says.
 *
 * A record is deleted (and the directory fsynced) before anything of
 * flashd writes that slot member, so a record never describes a write in
 * progress. One made for another erase size or bad-block map is not used.
 *
 * File: DIR/blocks-<group>-<slot>-<member>.bin, host byte order (it never
 * leaves the device). */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bundle.h"
#include "error.h"
#include "flash.h"
#include "keyring.h"

struct block_record {
	uint32_t erasesize;
	uint64_t size;                       /* image bytes */
	uint8_t image_sha256[32];
	uint32_t part_blocks;                /* erase blocks of the partition */
	uint8_t *bad;                        /* bitmap of its bad blocks, part_blocks bits */
	uint32_t n_blocks;                   /* logical blocks of the image */
	uint32_t *phys;                      /* physical block of each */
	uint8_t *hashes;                     /* n_blocks x 32 */
};

/* An empty record for n_blocks blocks on f (erase size, bad-block map of
 * f now); the caller fills size, sha, phys and hashes. */
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
/* Read every block the record describes and compare its hash: 1 all
 * match, 0 one differs or cannot be read (an uncorrectable ECC error;
 * *ret_block says which logical block), -errno. */
int block_record_verify(const struct block_record *r, struct flash *f, uint32_t *ret_block);
/* The record still describes f: same erase size, same bad-block map. */
bool block_record_matches_flash(const struct block_record *r, struct flash *f);

/* The signed manifest kept beside a slot's block records: the bundle's
 * head (header, manifest, signatures: bundle_reader_head()) exactly as
 * the install verified it, saved with the records after the read-back
 * verified the slot, dropped with them before any write to the slot, so a
 * slot being written never has one. Only a manifest a trusted key signed
 * is kept. It says which signed version the slot holds once verified
 * again (block_record_manifest_load()): what the downgrade check compares
 * with. File: DIR/manifest-<group>-<slot>.bin. */
int block_record_manifest_save(const char *dir, const char *group, const char *slot,
			       const void *head, size_t len);
/* 0 also when there was none; durable before the slot is written. */
int block_record_manifest_drop(const char *dir, const char *group, const char *slot);
/* The kept manifest of slot, verified again: its signature by a key of
 * keyring k (the reader's, as installs verify), its compatible, and each
 * image it names against the slot's block record of that member where one
 * is kept (size and sha256; a UBI volume has none). 0: *ret filled;
 * -ENOENT: none kept; -ENOKEY: signed by no key of k (retired since), so
 * nothing can verify it; any other -errno: it does not verify, err says
 * why (damaged, tampered, another content than the block record's). */
int block_record_manifest_load(const char *dir, const char *group, const char *slot,
			       const struct keyring *k, const char *compatible,
			       struct bundle_manifest *ret, struct error *err);
