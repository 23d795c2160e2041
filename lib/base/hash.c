/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* SHA-256 through nettle, dlopen()ed on first use (see hash.h). nettle
 * rather than libcrypto: the install worker maps 0.9 MiB for nettle and
 * hogweed against 2.8 MiB for libcrypto 3 once it hashed, at the same
 * speed with SHA-NI, and faster in a guest without it (measured in the
 * commit that brought it). */
#include "dl.h"
#include "hash.h"

void *hash_nettle_sym(const char *name)
{
	static void *lib;

	return dl_sym(&lib, NETTLE_SONAME, name);
}

void *hash_hogweed_sym(const char *name)
{
	static void *lib;

	return dl_sym(&lib, HOGWEED_SONAME, name);
}

#define NETTLE(name) DL_FN(hash_nettle_sym, name)

void hash_init(struct hash *h)
{
	NETTLE(nettle_sha256_init)(&h->ctx);
}

void hash_update(struct hash *h, const void *p, size_t n)
{
	NETTLE(nettle_sha256_update)(&h->ctx, n, p);
}

void hash_final(struct hash *h, uint8_t md[HASH_SIZE])
{
	NETTLE(nettle_sha256_digest)(&h->ctx, HASH_SIZE, md);
}

void hash_buf(const void *p, size_t n, uint8_t md[HASH_SIZE])
{
	struct hash h;

	hash_init(&h);
	hash_update(&h, p, n);
	hash_final(&h, md);
}
