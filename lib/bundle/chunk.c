/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Content-defined chunking (chunk.h). */
#include <pthread.h>
#include <string.h>

#include "chunk.h"
#include "cleanup.h"

/* The cut: the top 14 bits of the gear hash zero (1 in 16384). */
#define CHUNK_CUT_MASK (~UINT64_C(0) << (64 - 14))

static uint64_t gear[256];
static pthread_once_t gear_once = PTHREAD_ONCE_INIT;

/* splitmix64 from 0: fixed by the format, the same on every host */
static void gear_init(void)
{
	uint64_t s = 0;

	for (size_t i = 0; i < ELEMENTSOF(gear); i++) {
		uint64_t z = (s += UINT64_C(0x9E3779B97F4A7C15));
		z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
		z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
		gear[i] = z ^ (z >> 31);
	}
}

void chunk_stream_init(struct chunk_stream *s, chunk_cb cb, void *userdata)
{
	pthread_once(&gear_once, gear_init);
	*s = (struct chunk_stream){ .cb = cb, .userdata = userdata };
	hash_init(&s->sha);
}

static int cut(struct chunk_stream *s)
{
	uint8_t md[HASH_SIZE];
	uint32_t len = s->len;

	hash_final(&s->sha, md);
	s->h = 0;
	s->len = 0;
	return s->cb(s->userdata, len, md);
}

/* Bytes of p[0..n) in the current chunk; *ret_cut: it ends there. The
 * hash needs only the 64 bytes before a possible cut, so the first
 * CHUNK_MIN - 64 bytes of a chunk are skipped. */
static size_t scan(struct chunk_stream *s, const uint8_t *p, size_t n, bool *ret_cut)
{
	size_t i = 0;
	uint32_t skip = CHUNK_MIN - 64;

	*ret_cut = false;
	if (s->len < skip) {
		i = MIN(n, (size_t)(skip - s->len));
		s->len += i;
	}
	for (; i < n; i++) {
		s->h = (s->h << 1) + gear[p[i]];
		s->len++;
		if ((s->len >= CHUNK_MIN && !(s->h & CHUNK_CUT_MASK)) || s->len == CHUNK_MAX) {
			*ret_cut = true;
			return i + 1;
		}
	}
	return n;
}

int chunk_stream_feed(struct chunk_stream *s, const uint8_t *p, size_t n)
{
	while (n > 0) {
		bool c;
		size_t m = scan(s, p, n, &c);
		int r;

		hash_update(&s->sha, p, m);
		p += m;
		n -= m;
		if (c && (r = cut(s)) < 0)
			return r;
	}
	return 0;
}

int chunk_stream_end(struct chunk_stream *s)
{
	return s->len ? cut(s) : 0;
}

void chunk_entry_put(uint8_t e[CHUNK_ENTRY_SIZE], uint32_t len, const uint8_t *hash)
{
	for (int i = 0; i < 4; i++)
		e[i] = len >> (8 * i);
	memcpy(e + 4, hash, CHUNK_HASH_SIZE);
}

uint32_t chunk_entry_len(const uint8_t e[CHUNK_ENTRY_SIZE])
{
	return e[0] | (uint32_t)e[1] << 8 | (uint32_t)e[2] << 16 | (uint32_t)e[3] << 24;
}
