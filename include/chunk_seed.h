/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The chunks found on the board (docs/bundle-format.md, "Chunk
 * assembly"): the content of raw slot partitions (the running slot, the
 * target slot's old content) cut by the bundle's chunker (chunk.h) and
 * hashed, so that an install can take the chunks of a format 3 bundle's
 * image from the flash instead of fetching them.
 *
 * A source's content is its good erase blocks in order (as an image is
 * placed), up to the squashfs its first block holds (bytes_used, rounded
 * up to 4 KiB as mksquashfs pads), else up to a size the caller knows
 * (a record's; only where to stop reading, never what is there). What a
 * seed says is a hint: the engine checks every block it assembles against
 * the signed per-block SHA-256 before it is written.
 *
 * Memory: 32 bytes per chunk plus an 8-byte slot of the hash table per
 * chunk (a 128 MiB slot at the 16 KiB average: 8192 chunks, 320 KiB),
 * plus 4 bytes per erase block of the source and one erase block of read
 * buffer while scanning. */
#pragma once
#include <stdbool.h>
#include <stdint.h>

#include "chunk.h"
#include "error.h"
#include "flash.h"

#define CHUNK_SEED_MAX_SOURCES 2

struct chunk_seed_entry {
	uint8_t hash[CHUNK_HASH_SIZE];
	uint32_t len;
	uint64_t off;        /* in the source's content */
	uint32_t src;        /* its source */
};

struct chunk_seed_source {
	struct flash *flash; /* borrowed */
	uint32_t es;
	uint32_t *phys;      /* physical erase block of each content block */
	uint64_t n_blocks;
	uint64_t size;       /* bytes of content scanned */
};

struct chunk_seed {
	struct chunk_seed_source src[CHUNK_SEED_MAX_SOURCES];
	size_t n_src;
	struct chunk_seed_entry *e;
	uint64_t n, cap;
	uint32_t *table;     /* open addressing: entry index + 1, 0 empty */
	uint64_t table_mask;
};

int chunk_seed_new(struct chunk_seed **ret);
void chunk_seed_free(struct chunk_seed *s);
static inline void chunk_seed_freep(struct chunk_seed **s) { chunk_seed_free(*s); }
#define _cleanup_chunk_seed_ __attribute__((cleanup(chunk_seed_freep)))

/* Chunk the content of f (borrowed; it must outlive s). fallback_size:
 * where to stop without a squashfs in the first block (0: skip such a
 * source). A read that fails ends the content there. 0 or -errno. */
int chunk_seed_scan(struct chunk_seed *s, struct flash *f, uint64_t fallback_size,
		    struct error *err);
/* The entry with this length and hash, or NULL. The table is built by
 * the first call after the scans. */
const struct chunk_seed_entry *chunk_seed_find(struct chunk_seed *s, uint32_t len,
					       const uint8_t hash[CHUNK_HASH_SIZE]);
/* The physical erase block of byte off of source src's content. */
uint32_t chunk_seed_phys(const struct chunk_seed *s, uint32_t src, uint64_t off);
/* len bytes of e's chunk from byte from on, read from the flash:
 * 0 (an ECC correction included), -errno. */
int chunk_seed_read(const struct chunk_seed *s, const struct chunk_seed_entry *e,
		    uint64_t from, void *buf, size_t len);
