/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Slot block records (block_record.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "block_record.h"
#include "bundle_reader.h"
#include "cleanup.h"
#include "hash.h"
#include "record.h"
#include "util.h"

#define BLOCK_RECORD_MAGIC "FLASHDBR"
/* 2: no bundle version (a record is matched by its hashes, never by a
 * name); a version 1 record is not used */
#define BLOCK_RECORD_VERSION 2
#define BLOCK_RECORD_MAX_BLOCKS (1u << 20)

/* The fixed part, then bad[], phys[], hashes[], then the SHA-256 of all
 * the bytes before it. */
struct block_record_head {
	char magic[8];
	uint32_t format;
	uint32_t erasesize;
	uint64_t size;
	uint8_t image_sha256[32];
	uint32_t part_blocks;
	uint32_t n_blocks;
};

static size_t bad_bytes(uint32_t part_blocks) { return (part_blocks + 7) / 8; }

static size_t record_bytes(uint32_t part_blocks, uint32_t n_blocks)
{
	return sizeof(struct block_record_head) + bad_bytes(part_blocks) +
	       (size_t)n_blocks * (sizeof(uint32_t) + 32) + 32;
}

void block_record_free(struct block_record *r)
{
	if (!r)
		return;
	free(r->bad);
	free(r->phys);
	free(r->hashes);
	free(r);
}

static int record_alloc(uint32_t part_blocks, uint32_t n_blocks, struct block_record **ret)
{
	struct block_record *r;

	if (part_blocks > BLOCK_RECORD_MAX_BLOCKS || n_blocks > part_blocks)
		return -EINVAL;
	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->part_blocks = part_blocks;
	r->n_blocks = n_blocks;
	r->bad = calloc(1, bad_bytes(part_blocks) + 1);
	r->phys = calloc(n_blocks + 1, sizeof(uint32_t));
	r->hashes = calloc(n_blocks + 1, 32);
	if (!r->bad || !r->phys || !r->hashes) {
		block_record_free(r);
		return -ENOMEM;
	}
	*ret = r;
	return 0;
}

/* The bad-block map of f now. */
static int bad_map(struct flash *f, uint8_t *bad, uint32_t part_blocks)
{
	for (uint32_t b = 0; b < part_blocks; b++) {
		int r = flash_block_isbad(f, (uint64_t)b * f->info.erasesize);
		if (r < 0)
			return r;
		if (r)
			bad[b / 8] |= 1u << (b % 8);
	}
	return 0;
}

int block_record_new(struct flash *f, uint32_t n_blocks, struct block_record **ret)
{
	struct block_record *r;
	int ret2 = record_alloc(flash_blocks(f), n_blocks, &r);

	if (ret2 < 0)
		return ret2;
	r->erasesize = f->info.erasesize;
	ret2 = bad_map(f, r->bad, r->part_blocks);
	if (ret2 < 0) {
		block_record_free(r);
		return ret2;
	}
	*ret = r;
	return 0;
}

bool block_record_matches_flash(const struct block_record *r, struct flash *f)
{
	_cleanup_free_ uint8_t *now = NULL;

	if (r->erasesize != f->info.erasesize || r->part_blocks != flash_blocks(f))
		return false;
	now = calloc(1, bad_bytes(r->part_blocks) + 1);
	if (!now || bad_map(f, now, r->part_blocks) < 0)
		return false;
	return !memcmp(now, r->bad, bad_bytes(r->part_blocks));
}

static int record_path(const char *dir, const char *group, const char *slot, const char *member,
		       char **ret)
{
	return asprintf(ret, "%s/blocks-%s-%s-%s.bin", dir, group, slot, member) < 0 ? -ENOMEM : 0;
}

int block_record_save(const char *dir, const char *group, const char *slot, const char *member,
		      const struct block_record *r)
{
	size_t len = record_bytes(r->part_blocks, r->n_blocks);
	_cleanup_free_ uint8_t *buf = calloc(1, len);
	_cleanup_free_ char *path = NULL;
	struct block_record_head h = {
		.magic = BLOCK_RECORD_MAGIC, .format = BLOCK_RECORD_VERSION,
		.erasesize = r->erasesize, .size = r->size, .part_blocks = r->part_blocks,
		.n_blocks = r->n_blocks,
	};
	uint8_t *p = buf;
	int ret;

	if (!buf || record_path(dir, group, slot, member, &path) < 0)
		return -ENOMEM;
	memcpy(h.image_sha256, r->image_sha256, 32);
	memcpy(p, &h, sizeof(h));
	p += sizeof(h);
	memcpy(p, r->bad, bad_bytes(r->part_blocks));
	p += bad_bytes(r->part_blocks);
	memcpy(p, r->phys, (size_t)r->n_blocks * sizeof(uint32_t));
	p += (size_t)r->n_blocks * sizeof(uint32_t);
	memcpy(p, r->hashes, (size_t)r->n_blocks * 32);
	p += (size_t)r->n_blocks * 32;
	hash_buf(buf, (size_t)(p - buf), p);
	ret = util_mkdir_p(dir, 0755);
	if (ret < 0)
		return ret;
	return record_write_atomic(dir, path, buf, len);
}

static int record_parse(const uint8_t *buf, size_t len, struct block_record **ret)
{
	struct block_record_head h;
	struct block_record *r;
	const uint8_t *p = buf + sizeof(h);
	uint8_t md[32];
	int ret2;

	if (len < sizeof(h) + 32)
		return -EBADMSG;
	memcpy(&h, buf, sizeof(h));
	if (memcmp(h.magic, BLOCK_RECORD_MAGIC, 8) || h.format != BLOCK_RECORD_VERSION ||
	    h.part_blocks > BLOCK_RECORD_MAX_BLOCKS || h.n_blocks > h.part_blocks ||
	    len != record_bytes(h.part_blocks, h.n_blocks))
		return -EBADMSG;
	hash_buf(buf, len - 32, md);
	if (memcmp(md, buf + len - 32, 32))
		return -EBADMSG;
	ret2 = record_alloc(h.part_blocks, h.n_blocks, &r);
	if (ret2 < 0)
		return ret2;
	r->erasesize = h.erasesize;
	r->size = h.size;
	memcpy(r->image_sha256, h.image_sha256, 32);
	memcpy(r->bad, p, bad_bytes(h.part_blocks));
	p += bad_bytes(h.part_blocks);
	memcpy(r->phys, p, (size_t)h.n_blocks * sizeof(uint32_t));
	p += (size_t)h.n_blocks * sizeof(uint32_t);
	memcpy(r->hashes, p, (size_t)h.n_blocks * 32);
	*ret = r;
	return 0;
}

int block_record_load(const char *dir, const char *group, const char *slot, const char *member,
		      struct block_record **ret)
{
	_cleanup_free_ char *path = NULL, *buf = NULL;
	size_t len = 0;
	int r;

	if (record_path(dir, group, slot, member, &path) < 0)
		return -ENOMEM;
	r = util_read_file(path, record_bytes(BLOCK_RECORD_MAX_BLOCKS, BLOCK_RECORD_MAX_BLOCKS), &buf, &len);
	if (r < 0)
		return r;
	return record_parse((const uint8_t *)buf, len, ret);
}

/* Delete path and fsync dir: gone for good before what follows. */
static int drop_durably(const char *dir, const char *path)
{
	_cleanup_close_ int dfd = -1;

	if (unlink(path) < 0) {
		if (errno == ENOENT)
			return 0;
		return -errno;
	}
	/* the deletion must be durable before the first write of the slot */
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0 || fsync(dfd) < 0)
		return -errno;
	return 0;
}

int block_record_drop(const char *dir, const char *group, const char *slot, const char *member)
{
	_cleanup_free_ char *path = NULL;

	if (record_path(dir, group, slot, member, &path) < 0)
		return -ENOMEM;
	return drop_durably(dir, path);
}

/* ---- the slot's kept signed manifest ---- */

static int manifest_path(const char *dir, const char *group, const char *slot, char **ret)
{
	return asprintf(ret, "%s/manifest-%s-%s.bin", dir, group, slot) < 0 ? -ENOMEM : 0;
}

int block_record_manifest_save(const char *dir, const char *group, const char *slot,
			       const void *head, size_t len)
{
	_cleanup_free_ char *path = NULL;
	int r;

	if (manifest_path(dir, group, slot, &path) < 0)
		return -ENOMEM;
	r = util_mkdir_p(dir, 0755);
	return r < 0 ? r : record_write_atomic(dir, path, head, len);
}

int block_record_manifest_drop(const char *dir, const char *group, const char *slot)
{
	_cleanup_free_ char *path = NULL;

	if (manifest_path(dir, group, slot, &path) < 0)
		return -ENOMEM;
	return drop_durably(dir, path);
}

/* The manifest vouches for the slot's content only if its images are
 * what the slot's block records say the read-back verified. */
static int manifest_matches_records(const char *dir, const char *group, const char *slot,
				    const struct bundle_manifest *m, struct error *err)
{
	for (size_t i = 0; i < m->n_images; i++) {
		const struct bundle_image *img = &m->images[i];
		_cleanup_block_record_ struct block_record *rec = NULL;
		int r = block_record_load(dir, group, slot, img->slot, &rec);

		if (r == -ENOENT)
			continue;
		if (r < 0)
			return error_set(err, r, "the block record of '%s' cannot be read: %s",
					 img->slot, strerror(-r));
		if (rec->size != img->size || memcmp(rec->image_sha256, img->sha256, 32))
			return error_set(err, -EBADMSG, "its image '%s' is not what the slot's block "
					 "record says it holds", img->slot);
	}
	return 0;
}

int block_record_manifest_load(const char *dir, const char *group, const char *slot,
			       const struct keyring *k, const char *compatible,
			       struct bundle_manifest *ret, struct error *err)
{
	const struct bundle_policy policy = { .keyring = k, .compatible = compatible };
	const struct bundle_reader_ops ops = { .manifest = bundle_reader_stop_at_manifest };
	_cleanup_bundle_reader_ struct bundle_reader *rd = NULL;
	_cleanup_free_ char *path = NULL, *buf = NULL;
	size_t len = 0;
	int r;

	if (manifest_path(dir, group, slot, &path) < 0)
		return -ENOMEM;
	r = util_read_file(path, BUNDLE_HEADER_SIZE + BUNDLE_MAX_MANIFEST +
			   BUNDLE_MAX_SIGNATURES * BUNDLE_SIG_ENTRY_SIZE, &buf, &len);
	if (r < 0)
		return r == -ENOENT ? r : error_set(err, r, "cannot read %s: %s", path, strerror(-r));
	r = bundle_reader_new(&policy, &ops, NULL, &rd);
	if (r >= 0)
		r = bundle_reader_feed(rd, buf, len, err);
	if (r == 0)
		r = error_set(err, -EBADMSG, "it ends before its signatures");
	if (r == BUNDLE_STOP)
		r = manifest_matches_records(dir, group, slot, bundle_reader_manifest(rd), err);
	if (r < 0)
		return error_prefix(err, r, "%s", path);
	*ret = *bundle_reader_manifest(rd);
	return 0;
}
static int block_matches(const struct block_record *r, struct flash *f, uint32_t k, uint8_t *buf)
{
	size_t len = (size_t)MIN((uint64_t)r->erasesize, r->size - (uint64_t)k * r->erasesize);
	uint8_t md[32];
	int q = flash_read(f, (uint64_t)r->phys[k] * r->erasesize, buf, len);

	if (q < 0 && q != -EUCLEAN)
		return q == -EBADMSG ? 0 : q;
	hash_buf(buf, len, md);
	return !memcmp(md, r->hashes + (size_t)k * 32, 32);
}

int block_record_verify(const struct block_record *r, struct flash *f, uint32_t *ret_block)
{
	_cleanup_free_ uint8_t *buf = malloc(r->erasesize ? r->erasesize : 1);
	int q = 1;

	if (!buf)
		return -ENOMEM;
	for (uint32_t k = 0; q == 1 && k < r->n_blocks; k++) {
		q = block_matches(r, f, k, buf);
		if (q != 1 && ret_block)
			*ret_block = k;
	}
	return q;
}
