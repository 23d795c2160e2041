/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* SHA-256, the one hash of flashd (bundle images and index, read-back,
 * block records, key ids), from nettle: loaded on first use (a program
 * that never hashes, like the idle daemon or `flashd boot`, never maps
 * it), SHA-NI / ARMv8 crypto extensions where the CPU has them.
 *
 *   struct hash h; hash_init(&h); hash_update(&h, p, n); hash_final(&h, md);
 */
#pragma once
#include <stddef.h>
#include <stdint.h>

#include <nettle/sha2.h>

#define HASH_SIZE 32

struct hash {
	struct sha256_ctx ctx;
};

void hash_init(struct hash *h);
void hash_update(struct hash *h, const void *p, size_t n);
/* The digest of all that was fed since hash_init(); h starts over. */
void hash_final(struct hash *h, uint8_t md[HASH_SIZE]);
void hash_buf(const void *p, size_t n, uint8_t md[HASH_SIZE]);

/* nettle's address of name (nettle_* from libnettle, and from libhogweed
 * for the public-key functions), loaded on first use: see dl.h. */
void *hash_nettle_sym(const char *name);
void *hash_hogweed_sym(const char *name);
