/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Content-defined chunking of images (docs/bundle-format.md, "Chunk
 * table"): the same cut points wherever the same bytes are, so an image
 * rebuilt with its unchanged parts at shifted offsets (a squashfs: every
 * data, fragment and metadata block compressed on its own) shares most of
 * its chunks with the one on the board. `bundle create` writes the chunk
 * table of each image; the install engine chunks the slots' content with
 * the same chunker to find them (chunk_seed.h).
 *
 * The chunker: a gear rolling hash (h = 2h + gear[byte], 64 bits, so a
 * cut depends on the last 64 bytes only), a cut where the top 14 bits are
 * zero (16 KiB apart on average), none before CHUNK_MIN bytes, one forced
 * at CHUNK_MAX. The gear table is fixed by the format (splitmix64 from 0).
 * Parameters measured on the reference appliance's v1 -> v2 rebuild
 * (docs/bundle-format.md): 16 KiB average fetched the fewest bytes with
 * the table counted. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hash.h"

#define CHUNK_MIN (4 * 1024)
#define CHUNK_AVG (16 * 1024)
#define CHUNK_MAX (64 * 1024)
/* A table entry: le32 length, then the first CHUNK_HASH_SIZE bytes of the
 * chunk's SHA-256. 96 bits: a chunk matched wrongly on the board (a chance
 * of 2^-96 per pair) only costs a refetch, since every assembled block is
 * checked against its full signed SHA-256 before it is written. */
#define CHUNK_HASH_SIZE 12
#define CHUNK_ENTRY_SIZE (4 + CHUNK_HASH_SIZE)

/* Called for each chunk in order: its length and truncated hash. */
typedef int (*chunk_cb)(void *userdata, uint32_t len, const uint8_t hash[CHUNK_HASH_SIZE]);

struct chunk_stream {
	uint64_t h;          /* gear hash of the current chunk */
	uint32_t len;        /* bytes of the current chunk so far */
	struct hash sha;     /* of the current chunk */
	chunk_cb cb;
	void *userdata;
};

void chunk_stream_init(struct chunk_stream *s, chunk_cb cb, void *userdata);
/* Feed n bytes; cb for each chunk completed. Returns 0 or cb's error. */
int chunk_stream_feed(struct chunk_stream *s, const uint8_t *p, size_t n);
/* The end of the data: the last (short) chunk, if any. */
int chunk_stream_end(struct chunk_stream *s);

/* A table entry: encode, decode. */
void chunk_entry_put(uint8_t e[CHUNK_ENTRY_SIZE], uint32_t len, const uint8_t *hash);
uint32_t chunk_entry_len(const uint8_t e[CHUNK_ENTRY_SIZE]);
static inline const uint8_t *chunk_entry_hash(const uint8_t *e)
{
	return e + 4;
}
