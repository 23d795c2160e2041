/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Update bundles: the streaming reader with bounded memory (see
 * bundle_reader.h and docs/bundle-format.md). */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>
#include <zlib.h>

#include "bundle.h"
#include "bundle_reader.h"
#include "cleanup.h"
#include "hash.h"
#include "util.h"

/* ---- reader ---- */

enum reader_state {
	RS_HEADER,
	RS_MANIFEST,
	RS_SIGS,
	RS_INDEX,
	RS_IMAGE,
	RS_DONE,
	RS_STOPPED,
	RS_FAILED,
};

struct bundle_reader {
	struct bundle_policy policy;
	struct bundle_reader_ops ops;
	void *userdata;
	enum reader_state state;
	int error;
	struct error saved;

	uint64_t offset;                 /* stream bytes consumed */
	size_t fill;                     /* bytes gathered for the current fixed part */
	uint8_t header[BUNDLE_HEADER_SIZE];
	unsigned hdr_major, hdr_minor, n_sigs;
	uint32_t manifest_size;
	/* the signed head: header, manifest, signatures, as read (kept) */
	uint8_t *head;
	size_t head_size;
	uint8_t *manifest_buf, *sigs;    /* in head */

	struct bundle_manifest m;
	bool have_manifest;
	uint8_t *index;                  /* format 2: the block hashes, verified */
	bool have_index;
	struct hash bsha;                /* hash of the current block */
	uint64_t block;                  /* its number in the image */
	size_t cur;                      /* image being read */
	uint64_t stored_done, out_done;
	struct hash sha;
	z_stream z;
	bool z_init, z_end;
	uint8_t *zout;
	uint8_t sb[SQUASHFS_SUPERBLOCK_SIZE];
	size_t sb_fill;

	size_t mem_cur, mem_peak;
};

/* Accounted allocations: a size prefix lets frees be subtracted. */
static void *r_alloc(struct bundle_reader *r, size_t n)
{
	size_t *p = malloc(n + sizeof(max_align_t));

	if (!p)
		return NULL;
	*p = n;
	r->mem_cur += n;
	r->mem_peak = MAX(r->mem_peak, r->mem_cur);
	return (char *)p + sizeof(max_align_t);
}

static void r_free(struct bundle_reader *r, void *q)
{
	size_t *p;

	if (!q)
		return;
	p = (size_t *)((char *)q - sizeof(max_align_t));
	r->mem_cur -= *p;
	free(p);
}

static voidpf z_alloc(voidpf opaque, uInt items, uInt size)
{
	if (size && items > SIZE_MAX / size)
		return NULL;
	return r_alloc(opaque, (size_t)items * size);
}

static void z_free(voidpf opaque, voidpf p)
{
	r_free(opaque, p);
}

int bundle_reader_new(const struct bundle_policy *policy, const struct bundle_reader_ops *ops,
		      void *userdata, struct bundle_reader **ret)
{
	struct bundle_reader *r = calloc(1, sizeof(*r));

	if (!r)
		return -ENOMEM;
	if (policy)
		r->policy = *policy;
	if (ops)
		r->ops = *ops;
	r->userdata = userdata;
	r->mem_cur = r->mem_peak = sizeof(*r);
	*ret = r;
	return 0;
}

static void reader_image_reset(struct bundle_reader *r)
{
	if (r->z_init)
		inflateEnd(&r->z);
	r->z_init = r->z_end = false;
	r_free(r, r->zout);
	r->zout = NULL;
}

void bundle_reader_free(struct bundle_reader *r)
{
	if (!r)
		return;
	reader_image_reset(r);
	r_free(r, r->head);
	r_free(r, r->index);
	free(r);
}

const struct bundle_manifest *bundle_reader_manifest(const struct bundle_reader *r)
{
	return r->have_manifest ? &r->m : NULL;
}

int bundle_reader_stop_at_manifest(void *userdata, const struct bundle_manifest *m,
				   struct error *err)
{
	return BUNDLE_STOP;
}

const uint8_t *bundle_reader_head(const struct bundle_reader *r, size_t *ret_size)
{
	if (!r->have_manifest)
		return NULL;
	*ret_size = r->head_size;
	return r->head;
}

const uint8_t *bundle_reader_index(const struct bundle_reader *r)
{
	return r->have_index ? r->index : NULL;
}

bool bundle_reader_done(const struct bundle_reader *r)
{
	return r->state == RS_DONE;
}

uint64_t bundle_reader_offset(const struct bundle_reader *r)
{
	return r->offset;
}

size_t bundle_reader_mem_current(const struct bundle_reader *r)
{
	return r->mem_cur;
}

size_t bundle_reader_mem_peak(const struct bundle_reader *r)
{
	return r->mem_peak;
}

/* Run a caller callback; make sure a refusal carries a message. */
static int call(struct bundle_reader *r, int cb_r, const char *what, struct error *err)
{
	if (cb_r >= 0)
		return cb_r;
	if (!err->msg[0])
		error_set(err, cb_r, "%s refused by the caller: %s", what, strerror(-cb_r));
	return cb_r;
}

static int verify_signatures(struct bundle_reader *r, struct error *err)
{
	struct bundle_manifest *m = &r->m;
	char idhex[2 * KEYRING_ID_SIZE + 1], unknown[4 * 20] = "";
	bool verified = false;

	m->n_signatures = r->n_sigs;
	if (r->policy.skip_signatures) {
		m->trust = BUNDLE_TRUST_UNCHECKED;
		return 0;
	}
	for (unsigned i = 0; i < r->n_sigs; i++) {
		const uint8_t *e = r->sigs + i * BUNDLE_SIG_ENTRY_SIZE;
		const struct keyring_key *key;

		for (unsigned j = 0; j < i; j++)
			if (!memcmp(e, r->sigs + j * BUNDLE_SIG_ENTRY_SIZE, KEYRING_ID_SIZE))
				return error_set(err, -EBADMSG, "signature %u repeats the key of "
					    "signature %u", i, j);
		util_hex(e, KEYRING_ID_SIZE, idhex);
		key = keyring_find(r->policy.keyring, e);
		if (!key) {
			size_t n = strlen(unknown);
			snprintf(unknown + n, sizeof(unknown) - n, "%s%.16s", n ? ", " : "", idhex);
			continue;
		}
		/* a trusted key's signature that fails means tampering: never accepted */
		if (keyring_verify(key, r->manifest_buf, r->manifest_size,
				   e + KEYRING_ID_SIZE) < 0)
			return error_set(err, -EKEYREJECTED, "signature %u by trusted key %.16s (%s) does "
				    "not verify: manifest tampered or signature corrupt", i,
				    idhex, key->name);
		if (!verified) {
			verified = true;
			memcpy(m->signer_id, key->id, KEYRING_ID_SIZE);
			snprintf(m->signer_name, sizeof(m->signer_name), "%s", key->name);
		}
	}
	if (verified) {
		m->trust = BUNDLE_TRUST_VERIFIED;
		m->is_signed = true;
		return 0;
	}
	m->trust = r->n_sigs ? BUNDLE_TRUST_UNKNOWN_KEY : BUNDLE_TRUST_UNSIGNED;
	if (r->policy.allow_unsigned)
		return 0;
	if (!r->n_sigs)
		return error_set(err, -ENOKEY, "bundle is not signed (refused: unsigned bundles are "
			    "accepted only with allow-unsigned)");
	return error_set(err, -ENOKEY, "bundle signed only by unknown key(s) %s: none is in the "
		    "keyring (%zu trusted key(s))", unknown, keyring_count(r->policy.keyring));
}

static int process_manifest(struct bundle_reader *r, struct error *err)
{
	struct bundle_manifest parsed;
	int r2;

	/* signatures first: untrusted JSON is parsed only once it is known
	 * to be signed (or the policy accepts unsigned input) */
	r2 = verify_signatures(r, err);
	if (r2 < 0)
		return r2;
	r2 = bundle_manifest_parse(r->manifest_buf, r->manifest_size, &parsed, err);
	if (r2 < 0)
		return r2;
	if (parsed.format_major != r->hdr_major || parsed.format_minor != r->hdr_minor)
		return error_set(err, -EBADMSG, "header says format %u.%u, the signed manifest %u.%u",
			    r->hdr_major, r->hdr_minor, parsed.format_major, parsed.format_minor);
	/* keep the trust fields verify_signatures() filled */
	memcpy(parsed.signer_id, r->m.signer_id, sizeof(parsed.signer_id));
	memcpy(parsed.signer_name, r->m.signer_name, sizeof(parsed.signer_name));
	parsed.trust = r->m.trust;
	parsed.is_signed = r->m.is_signed;
	parsed.n_signatures = r->m.n_signatures;
	bundle_manifest_layout(&parsed, r->n_sigs);
	r->m = parsed;
	r->have_manifest = true;

	r2 = bundle_manifest_check(&r->m, r->policy.compatible, r->policy.slots,
				   r->policy.n_slots, err);
	if (r2 < 0)
		return r2;
	if (r->ops.manifest)
		return call(r, r->ops.manifest(r->userdata, &r->m, err), "manifest", err);
	return 0;
}

static int image_begin(struct bundle_reader *r, struct error *err)
{
	const struct bundle_image *img = &r->m.images[r->cur];

	r->stored_done = r->out_done = 0;
	r->sb_fill = 0;
	r->block = 0;
	hash_init(&r->sha);
	hash_init(&r->bsha);
	if (img->compression == BUNDLE_COMPRESSION_GZIP) {
		r->zout = r_alloc(r, BUNDLE_INFLATE_CHUNK);
		if (!r->zout)
			return -ENOMEM;
		r->z = (z_stream) { .zalloc = z_alloc, .zfree = z_free, .opaque = r };
		if (inflateInit2(&r->z, 15 + 16) != Z_OK) /* gzip wrapper only */
			return -ENOMEM;
		r->z_init = true;
	}
	if (r->ops.image_begin)
		return call(r, r->ops.image_begin(r->userdata, img, err), "image", err);
	return 0;
}

static int deliver(struct bundle_reader *r, const uint8_t *p, size_t n, struct error *err)
{
	const struct bundle_image *img = &r->m.images[r->cur];

	if (!n || !r->ops.image_data)
		return 0;
	return call(r, r->ops.image_data(r->userdata, img, p, n, err), "image data", err);
}

/* The first bytes of every image are held back until they passed: a
 * CramFS image is refused by name, a squashfs superblock is checked. */
static int check_head(struct bundle_reader *r, const struct bundle_image *img,
		      struct error *err)
{
	uint64_t max = img->size;
	int ret;

	if (bundle_is_cramfs(r->sb, r->sb_fill))
		return error_set(err, -EMEDIUMTYPE, "image %u \"%s\": %s", img->index, img->slot,
			    BUNDLE_CRAMFS_REFUSED);
	if (img->type != BUNDLE_IMAGE_SQUASHFS)
		return 0;
	for (size_t i = 0; i < r->policy.n_slots; i++)
		if (r->policy.slots[i].slot && !strcmp(r->policy.slots[i].slot, img->slot))
			max = MIN(max, r->policy.slots[i].max_size);
	ret = squashfs_check_superblock(r->sb, sizeof(r->sb), max, NULL, err);
	if (ret < 0)
		return error_prefix(err, ret, "image %u \"%s\"", img->index, img->slot);
	return 0;
}

/* A block is complete: it must be what the signed index says. Checked
 * before its last bytes go to the caller, so a flash writer that buffers
 * one erase block of block_size never programs a block that differs. */
static int check_block(struct bundle_reader *r, const struct bundle_image *img,
		       struct error *err)
{
	uint8_t md[HASH_SIZE];
	const uint8_t *want = r->index + (img->index_first + r->block) * BUNDLE_HASH_SIZE;

	hash_final(&r->bsha, md);
	if (memcmp(md, want, 32))
		return error_set(err, -EBADMSG, "image %u \"%s\": block %" PRIu64 " (bytes %" PRIu64
				 "..%" PRIu64 ") does not match its sha256 in the signed index "
				 "(payload corrupt or tampered)", img->index, img->slot, r->block,
				 r->block * r->m.block_size, r->out_done - 1);
	r->block++;
	return 0;
}

static int emit_piece(struct bundle_reader *r, const uint8_t *p, size_t n, struct error *err);

/* Uncompressed image bytes, cut at block boundaries when there is an
 * index. */
static int emit(struct bundle_reader *r, const uint8_t *p, size_t n, struct error *err)
{
	const struct bundle_image *img = &r->m.images[r->cur];
	uint32_t bs = r->m.block_size;
	int ret;

	if (n > img->size - r->out_done)
		return error_set(err, -EBADMSG, "image %u \"%s\": data runs past its declared size "
			    "%" PRIu64 " (corrupt or tampered payload)", img->index, img->slot,
			    img->size);
	if (!r->have_index)
		return emit_piece(r, p, n, err);
	while (n > 0) {
		size_t take = MIN((uint64_t)n, bs - r->out_done % bs);

		hash_update(&r->bsha, p, take);
		if ((r->out_done + take) % bs == 0 || r->out_done + take == img->size) {
			r->out_done += take;
			ret = check_block(r, img, err);
			r->out_done -= take;
			if (ret < 0)
				return ret;
		}
		ret = emit_piece(r, p, take, err);
		if (ret < 0)
			return ret;
		p += take;
		n -= take;
	}
	return 0;
}

/* Hash (without an index: with one, every block is checked against it,
 * and the whole image's sha256 would hash every byte a second time),
 * hold back the head until it is checked, pass on. */
static int emit_piece(struct bundle_reader *r, const uint8_t *p, size_t n, struct error *err)
{
	const struct bundle_image *img = &r->m.images[r->cur];
	size_t head = MIN(img->size, (uint64_t)SQUASHFS_SUPERBLOCK_SIZE);
	int ret;

	r->out_done += n;
	if (!r->have_index)
		hash_update(&r->sha, p, n);
	if (r->sb_fill < head) {
		size_t take = MIN(n, head - r->sb_fill);

		memcpy(r->sb + r->sb_fill, p, take);
		r->sb_fill += take;
		p += take;
		n -= take;
		if (r->sb_fill < head)
			return 0;
		ret = check_head(r, img, err);
		if (ret >= 0)
			ret = deliver(r, r->sb, r->sb_fill, err);
		if (ret < 0)
			return ret;
	}
	return deliver(r, p, n, err);
}

static int consume_gzip(struct bundle_reader *r, const uint8_t *p, size_t n,
			struct error *err)
{
	const struct bundle_image *img = &r->m.images[r->cur];
	int zr, ret;

	r->z.next_in = (Bytef *)p;
	r->z.avail_in = n;
	while (r->z.avail_in > 0) {
		if (r->z_end)
			return error_set(err, -EBADMSG, "image %u \"%s\": gzip stream ends %u bytes before "
				    "its stored_size %" PRIu64, img->index, img->slot,
				    r->z.avail_in, img->stored_size);
		r->z.next_out = r->zout;
		r->z.avail_out = BUNDLE_INFLATE_CHUNK;
		zr = inflate(&r->z, Z_NO_FLUSH);
		if (zr != Z_OK && zr != Z_STREAM_END && zr != Z_BUF_ERROR)
			return error_set(err, -EBADMSG, "image %u \"%s\": corrupt gzip data near stored "
				    "byte %" PRIu64 ": %s", img->index, img->slot,
				    r->stored_done + (n - r->z.avail_in),
				    r->z.msg ? r->z.msg : zError(zr));
		ret = emit(r, r->zout, BUNDLE_INFLATE_CHUNK - r->z.avail_out, err);
		if (ret < 0)
			return ret;
		if (zr == Z_STREAM_END)
			r->z_end = true;
	}
	return 0;
}

/* Without an index, the whole image's sha256 is what vouches for it. */
static int image_sha_check(struct bundle_reader *r, const struct bundle_image *img,
			   struct error *err)
{
	uint8_t md[HASH_SIZE];
	char want[65], got[65];

	hash_final(&r->sha, md);
	if (!memcmp(md, img->sha256, HASH_SIZE))
		return 0;
	util_hex(img->sha256, 32, want);
	util_hex(md, 32, got);
	return error_set(err, -EBADMSG, "image %u \"%s\": sha256 mismatch (payload corrupt or "
			 "tampered): manifest %.16s..., data %.16s...", img->index, img->slot,
			 want, got);
}

static int image_end(struct bundle_reader *r, struct error *err)
{
	const struct bundle_image *img = &r->m.images[r->cur];

	if (img->compression == BUNDLE_COMPRESSION_GZIP && !r->z_end)
		return error_set(err, -EBADMSG, "image %u \"%s\": gzip stream incomplete at its stored_size "
			    "%" PRIu64 " (corrupt or tampered payload)", img->index, img->slot,
			    img->stored_size);
	if (r->out_done != img->size)
		return error_set(err, -EBADMSG, "image %u \"%s\": %" PRIu64 " bytes, manifest says %"
			    PRIu64, img->index, img->slot, r->out_done, img->size);
	if (!r->have_index && image_sha_check(r, img, err) < 0)
		return -EBADMSG;
	reader_image_reset(r);
	if (r->ops.image_end)
		return call(r, r->ops.image_end(r->userdata, img, err), "image end", err);
	return 0;
}

/* The index is trusted only through the signed manifest's index_sha256. */
static int index_verify(struct bundle_reader *r, struct error *err)
{
	uint8_t md[32];
	int ret = bundle_index_sha256(r->index, r->m.index_size, md);

	if (ret < 0)
		return ret;
	if (memcmp(md, r->m.index_sha256, 32))
		return error_set(err, -EBADMSG, "block index (%" PRIu64 " bytes at bundle offset %"
				 PRIu64 ") does not match the manifest's index_sha256 (corrupt "
				 "or tampered)", r->m.index_size, r->m.index_offset);
	ret = bundle_chunks_check(&r->m, r->index, err);
	if (ret < 0)
		return ret;
	r->have_index = true;
	if (r->ops.index)
		return call(r, r->ops.index(r->userdata, &r->m, r->index, err), "index", err);
	return 0;
}

/* Gather a fixed-size part; true when complete. */
static bool gather(struct bundle_reader *r, uint8_t *dst, size_t want, const uint8_t **p,
		   size_t *n)
{
	size_t take = MIN(want - r->fill, *n);

	memcpy(dst + r->fill, *p, take);
	r->fill += take;
	*p += take;
	*n -= take;
	r->offset += take;
	if (r->fill < want)
		return false;
	r->fill = 0;
	return true;
}

static int step(struct bundle_reader *r, const uint8_t **p, size_t *n, struct error *err)
{
	const struct bundle_image *img;
	size_t take;
	int ret;

	switch (r->state) {
	case RS_HEADER:
		if (!gather(r, r->header, BUNDLE_HEADER_SIZE, p, n))
			return 0;
		ret = bundle_header_parse(r->header, &r->hdr_major, &r->hdr_minor, &r->manifest_size,
				   &r->n_sigs, err);
		if (ret < 0)
			return ret;
		r->head_size = BUNDLE_HEADER_SIZE + r->manifest_size +
			       (size_t)r->n_sigs * BUNDLE_SIG_ENTRY_SIZE;
		r->head = r_alloc(r, r->head_size);
		if (!r->head)
			return -ENOMEM;
		memcpy(r->head, r->header, BUNDLE_HEADER_SIZE);
		r->manifest_buf = r->head + BUNDLE_HEADER_SIZE;
		r->sigs = r->manifest_buf + r->manifest_size;
		r->state = RS_MANIFEST;
		return 0;
	case RS_MANIFEST:
		if (!gather(r, r->manifest_buf, r->manifest_size, p, n))
			return 0;
		r->state = RS_SIGS;
		if (r->n_sigs)
			return 0;
		/* no signature block: process right away */
		__attribute__((fallthrough));
	case RS_SIGS:
		if (r->n_sigs && !gather(r, r->sigs, r->n_sigs * BUNDLE_SIG_ENTRY_SIZE, p, n))
			return 0;
		ret = process_manifest(r, err);
		if (ret < 0)
			return ret;
		if (ret == BUNDLE_STOP) {
			r->state = RS_STOPPED;
			return BUNDLE_STOP;
		}
		if (r->m.index_size) {
			r->index = r_alloc(r, r->m.index_size);
			if (!r->index)
				return -ENOMEM;
			r->state = RS_INDEX;
			return 0;
		}
		r->state = RS_IMAGE;
		r->cur = 0;
		return image_begin(r, err);
	case RS_INDEX:
		if (!gather(r, r->index, r->m.index_size, p, n))
			return 0;
		ret = index_verify(r, err);
		if (ret < 0)
			return ret;
		r->state = RS_IMAGE;
		r->cur = 0;
		return image_begin(r, err);
	case RS_IMAGE:
		img = &r->m.images[r->cur];
		take = MIN(*n, img->stored_size - r->stored_done);
		ret = img->compression == BUNDLE_COMPRESSION_GZIP ? consume_gzip(r, *p, take, err) :
			emit(r, *p, take, err);
		if (ret < 0)
			return ret;
		r->stored_done += take;
		r->offset += take;
		*p += take;
		*n -= take;
		if (r->stored_done < img->stored_size)
			return 0;
		ret = image_end(r, err);
		if (ret < 0)
			return ret;
		if (++r->cur == r->m.n_images) {
			r->state = RS_DONE;
			return 0;
		}
		return image_begin(r, err);
	case RS_DONE:
		if (*n == 0)
			return 0;
		return error_set(err, -EBADMSG, "%zu bytes of trailing data after the last image (at "
			    "byte %" PRIu64 ")", *n, r->offset);
	case RS_STOPPED:
		*n = 0;
		return BUNDLE_STOP;
	case RS_FAILED:
		return r->error;
	}
	return -EINVAL;
}

int bundle_reader_feed(struct bundle_reader *r, const void *buf, size_t len,
		       struct error *err)
{
	struct error local;
	const uint8_t *p = buf;
	int ret = 0;

	if (!err)
		err = &local;
	if (r->state == RS_FAILED) {
		error_copy(err, &r->saved);
		return r->error;
	}
	err->msg[0] = '\0';
	do {
		ret = step(r, &p, &len, err);
	} while (ret == 0 && len > 0);
	if (ret < 0) {
		if (!err->msg[0])
			error_set(err, ret, "at byte %" PRIu64 ": %s", r->offset, strerror(-ret));
		r->state = RS_FAILED;
		r->error = ret;
		error_copy(&r->saved, err);
		reader_image_reset(r);
		return ret;
	}
	return ret;
}

int bundle_reader_finish(struct bundle_reader *r, struct error *err)
{
	const struct bundle_image *img;

	switch (r->state) {
	case RS_DONE:
	case RS_STOPPED:
		return 0;
	case RS_FAILED:
		error_copy(err, &r->saved);
		return r->error;
	case RS_HEADER:
		if (r->fill == 0)
			return error_set(err, -ENODATA, "empty stream: no bundle");
		return error_set(err, -ENODATA, "truncated bundle: stream ended in the header after "
			    "%" PRIu64 " bytes", r->offset);
	case RS_MANIFEST:
	case RS_SIGS:
	case RS_INDEX:
		return error_set(err, -ENODATA, "truncated bundle: stream ended in the %s at byte %"
			    PRIu64, r->state == RS_MANIFEST ? "manifest" : r->state == RS_SIGS ?
			    "signatures" : "block index", r->offset);
	case RS_IMAGE:
		img = &r->m.images[r->cur];
		return error_set(err, -ENODATA, "truncated bundle: stream ended in image %u \"%s\" after "
			    "%" PRIu64 " of %" PRIu64 " stored bytes (bundle offset %" PRIu64 ")",
			    img->index, img->slot, r->stored_done, img->stored_size, r->offset);
	}
	return -EINVAL;
}

int bundle_reader_read_fd(struct bundle_reader *r, int fd, struct error *err)
{
	_cleanup_free_ uint8_t *buf = malloc(BUNDLE_INFLATE_CHUNK);
	int ret;

	if (!buf)
		return -ENOMEM;
	for (;;) {
		ssize_t n = read(fd, buf, BUNDLE_INFLATE_CHUNK);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			ret = -errno;
			return error_set(err, ret, "reading the bundle at byte %" PRIu64 ": %s",
				    r->offset, strerror(-ret));
		}
		if (n == 0)
			break;
		ret = bundle_reader_feed(r, buf, n, err);
		if (ret < 0)
			return ret;
		if (ret == BUNDLE_STOP)
			return 0;
	}
	return bundle_reader_finish(r, err);
}
