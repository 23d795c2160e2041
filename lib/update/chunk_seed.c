/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The chunks found on the board (chunk_seed.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "chunk_seed.h"
#include "cleanup.h"
#include "squashfs.h"

#define SEED_PAD 4096 /* mksquashfs pads its output to 4 KiB */

int chunk_seed_new(struct chunk_seed **ret)
{
	struct chunk_seed *s = calloc(1, sizeof(*s));

	if (!s)
		return -ENOMEM;
	*ret = s;
	return 0;
}

void chunk_seed_free(struct chunk_seed *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->n_src; i++)
		free(s->src[i].phys);
	free(s->e);
	free(s->table);
	free(s);
}

/* The good blocks of f, in order, as an image is placed on them. */
static int map_good(struct chunk_seed_source *c)
{
	uint64_t blocks = flash_blocks(c->flash);

	c->phys = calloc(blocks ? blocks : 1, sizeof(*c->phys));
	if (!c->phys)
		return -ENOMEM;
	for (uint64_t p = 0; p < blocks; p++) {
		int r = flash_block_isbad(c->flash, p * c->es);
		if (r < 0)
			return r;
		if (!r)
			c->phys[c->n_blocks++] = p;
	}
	return 0;
}

/* How far the content goes: the squashfs of the first block, else
 * fallback (0: nothing to scan). */
static uint64_t content_size(struct chunk_seed_source *c, uint64_t fallback)
{
	uint8_t sb[SQUASHFS_SUPERBLOCK_SIZE];
	uint64_t room = c->n_blocks * c->es;
	struct squashfs_info info;
	struct error err = {};

	if (c->n_blocks && flash_read(c->flash, (uint64_t)c->phys[0] * c->es, sb, sizeof(sb)) >= 0 &&
	    squashfs_check_superblock(sb, sizeof(sb), room, &info, &err) >= 0)
		return MIN(room, (info.bytes_used + SEED_PAD - 1) / SEED_PAD * SEED_PAD);
	return MIN(room, fallback);
}

struct scan {
	struct chunk_seed *s;
	uint32_t src;
	uint64_t at;
};

static int add(void *userdata, uint32_t len, const uint8_t hash[CHUNK_HASH_SIZE])
{
	struct scan *sc = userdata;
	struct chunk_seed *s = sc->s;
	struct chunk_seed_entry *e;

	if (s->n == UINT32_MAX - 1)
		return -EFBIG;
	if (s->n == s->cap) {
		uint64_t cap = s->cap ? 2 * s->cap : 1024;
		e = realloc(s->e, cap * sizeof(*e));
		if (!e)
			return -ENOMEM;
		s->e = e;
		s->cap = cap;
	}
	e = &s->e[s->n++];
	memcpy(e->hash, hash, CHUNK_HASH_SIZE);
	e->len = len;
	e->off = sc->at;
	e->src = sc->src;
	sc->at += len;
	return 0;
}

int chunk_seed_scan(struct chunk_seed *s, struct flash *f, uint64_t fallback_size,
		    struct error *err)
{
	struct chunk_seed_source *c;
	struct chunk_stream cs;
	struct scan sc = { .s = s, .src = s->n_src };
	_cleanup_free_ uint8_t *buf = NULL;
	uint64_t size;
	int r;

	if (s->n_src == CHUNK_SEED_MAX_SOURCES)
		return error_set(err, -E2BIG, "chunk seed: more than %d sources",
				 CHUNK_SEED_MAX_SOURCES);
	c = &s->src[s->n_src++];
	*c = (struct chunk_seed_source){ .flash = f, .es = f->info.erasesize };
	free(s->table);
	s->table = NULL;
	r = map_good(c);
	if (r < 0)
		return error_set(err, r, "chunk seed: bad-block scan: %s", strerror(-r));
	size = content_size(c, fallback_size);
	buf = malloc(c->es);
	if (!buf)
		return -ENOMEM;
	chunk_stream_init(&cs, add, &sc);
	for (uint64_t k = 0; k * c->es < size; k++) {
		size_t len = MIN((uint64_t)c->es, size - k * c->es);
		r = flash_read(f, (uint64_t)c->phys[k] * c->es, buf, len);
		/* unreadable: the content ends here (what was read stays a hint) */
		if (r < 0 && r != -EUCLEAN)
			break;
		r = chunk_stream_feed(&cs, buf, len);
		if (r < 0)
			return error_set(err, r, "chunk seed: %s", strerror(-r));
		c->size += len;
	}
	r = chunk_stream_end(&cs);
	if (r < 0)
		return error_set(err, r, "chunk seed: %s", strerror(-r));
	return 0;
}

static uint64_t slot_of(const uint8_t *hash)
{
	uint64_t v;

	memcpy(&v, hash, sizeof(v)); /* already a uniform hash */
	return v;
}

static int table_build(struct chunk_seed *s)
{
	uint64_t size = 16;

	while (size < 2 * s->n)
		size *= 2;
	s->table = calloc(size, sizeof(*s->table));
	if (!s->table)
		return -ENOMEM;
	s->table_mask = size - 1;
	for (uint64_t i = 0; i < s->n; i++) {
		uint64_t h = slot_of(s->e[i].hash) & s->table_mask;
		while (s->table[h])
			h = (h + 1) & s->table_mask;
		s->table[h] = i + 1;
	}
	return 0;
}

const struct chunk_seed_entry *chunk_seed_find(struct chunk_seed *s, uint32_t len,
					       const uint8_t hash[CHUNK_HASH_SIZE])
{
	if (!s->table && table_build(s) < 0)
		return NULL;
	for (uint64_t h = slot_of(hash) & s->table_mask; s->table[h]; h = (h + 1) & s->table_mask) {
		const struct chunk_seed_entry *e = &s->e[s->table[h] - 1];
		if (e->len == len && !memcmp(e->hash, hash, CHUNK_HASH_SIZE))
			return e;
	}
	return NULL;
}

uint32_t chunk_seed_phys(const struct chunk_seed *s, uint32_t src, uint64_t off)
{
	const struct chunk_seed_source *c = &s->src[src];

	return c->phys[off / c->es];
}

int chunk_seed_read(const struct chunk_seed *s, const struct chunk_seed_entry *e,
		    uint64_t from, void *buf, size_t len)
{
	const struct chunk_seed_source *c = &s->src[e->src];
	uint64_t off = e->off + from;
	uint8_t *p = buf;

	while (len > 0) {
		size_t take = MIN((uint64_t)len, c->es - off % c->es);
		int r = flash_read(c->flash, (uint64_t)c->phys[off / c->es] * c->es + off % c->es,
				   p, take);
		if (r < 0 && r != -EUCLEAN)
			return r;
		p += take;
		off += take;
		len -= take;
	}
	return 0;
}
