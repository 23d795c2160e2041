/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Update bundles: the host-side writer (bundle_create.h) and the Ed25519
 * signing keys it uses. */
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
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <zlib.h>

#include "bundle.h"
#include "bundle_create.h"
#include "cleanup.h"
#include "cleanup_crypto.h"
#include "cleanup_json.h"
#include "hash.h"
#include "util.h"

/* An image's chunk table entries, from its first pass. */
struct create_chunks {
	uint8_t *entries;
	uint64_t n;
};

struct pass {
	struct hash sha;
	struct hash bsha;                /* the current block (index) */
	uint32_t bs;                     /* block size; 0: no index */
	uint8_t *hashes;                 /* one per block, grown as they come */
	uint64_t n_hashes;
	struct chunk_stream cs;          /* the chunk table (format 3) */
	bool chunking;
	uint8_t *chunks;                 /* CHUNK_ENTRY_SIZE per chunk, grown */
	uint64_t n_chunks;
	z_stream z;
	bool gzip;
	uint64_t in, out;
	int out_fd;                      /* -1: count only */
	uint8_t buf[BUNDLE_INFLATE_CHUNK];
};

static int pass_write(struct pass *ps, const void *p, size_t n)
{
	ps->out += n;
	if (ps->out_fd < 0 || n == 0)
		return 0;
	ssize_t w = util_write_full(ps->out_fd, p, n);
	return w < 0 ? (int)w : 0;
}

static int pass_deflate(struct pass *ps, const void *p, size_t n, int flush)
{
	int zr, r;

	ps->z.next_in = (Bytef *)p;
	ps->z.avail_in = n;
	do {
		ps->z.next_out = ps->buf;
		ps->z.avail_out = sizeof(ps->buf);
		zr = deflate(&ps->z, flush);
		if (zr == Z_STREAM_ERROR)
			return -EIO;
		r = pass_write(ps, ps->buf, sizeof(ps->buf) - ps->z.avail_out);
		if (r < 0)
			return r;
	} while (ps->z.avail_out == 0 || (flush == Z_FINISH && zr != Z_STREAM_END));
	return 0;
}

/* The block hashes of the index: cut the data at block boundaries. */
static int pass_blocks(struct pass *ps, const uint8_t *p, size_t n, bool end)
{
	uint64_t pos = ps->in - n; /* image offset of p */

	while (n > 0 || (end && pos % ps->bs)) {
		size_t take = MIN((uint64_t)n, ps->bs - pos % ps->bs);
		uint8_t *h;

		hash_update(&ps->bsha, p, take);
		pos += take;
		p += take;
		n -= take;
		if (pos % ps->bs && !(end && n == 0))
			continue;
		h = realloc(ps->hashes, (ps->n_hashes + 1) * BUNDLE_HASH_SIZE);
		if (!h)
			return -ENOMEM;
		ps->hashes = h;
		hash_final(&ps->bsha, h + ps->n_hashes++ * BUNDLE_HASH_SIZE);
		if (end && n == 0)
			break;
	}
	return 0;
}

static int pass_chunk(void *userdata, uint32_t len, const uint8_t hash[CHUNK_HASH_SIZE])
{
	struct pass *ps = userdata;
	uint8_t *c;

	if ((ps->n_chunks + 1) * CHUNK_ENTRY_SIZE > BUNDLE_MAX_CHUNK_TABLE)
		return -EFBIG;
	c = realloc(ps->chunks, (ps->n_chunks + 1) * CHUNK_ENTRY_SIZE);
	if (!c)
		return -ENOMEM;
	ps->chunks = c;
	chunk_entry_put(c + ps->n_chunks++ * CHUNK_ENTRY_SIZE, len, hash);
	return 0;
}

/* One pass over an image file: hash (whole and, with block_size, per
 * block into *ret_hashes), optionally compress, count or write. */
static int image_pass(const struct bundle_create_image *ci, int level, int out_fd,
		      uint32_t block_size, uint8_t **ret_hashes, struct create_chunks *ret_chunks,
		      uint8_t sha[32], uint64_t *ret_size, uint64_t *ret_stored,
		      uint8_t sb[SQUASHFS_SUPERBLOCK_SIZE], struct error *err)
{
	_cleanup_close_ int fd = open(ci->path, O_RDONLY | O_CLOEXEC);
	_cleanup_free_ struct pass *ps = calloc(1, sizeof(*ps));
	_cleanup_free_ uint8_t *in = malloc(BUNDLE_INFLATE_CHUNK);
	int r = 0;

	if (fd < 0)
		return error_set(err, -errno, "%s: %s", ci->path, strerror(errno));
	if (!ps || !in)
		return -ENOMEM;
	ps->out_fd = out_fd;
	ps->gzip = ci->compression == BUNDLE_COMPRESSION_GZIP;
	hash_init(&ps->sha);
	hash_init(&ps->bsha);
	ps->bs = ret_hashes ? block_size : 0;
	ps->chunking = ret_chunks;
	chunk_stream_init(&ps->cs, pass_chunk, ps);
	/* default gzip header (mtime 0): the same input gives the same bundle */
	if (ps->gzip && deflateInit2(&ps->z, level ? level : Z_DEFAULT_COMPRESSION, Z_DEFLATED,
				     15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
		ps->gzip = false;
		r = -ENOMEM;
		goto out;
	}
	for (;;) {
		ssize_t n = util_read_full(fd, in, BUNDLE_INFLATE_CHUNK);
		if (n < 0) {
			r = error_set(err, (int)n, "%s: %s", ci->path, strerror((int)-n));
			goto out;
		}
		if (ps->in < SQUASHFS_SUPERBLOCK_SIZE && sb)
			memcpy(sb + ps->in, in, MIN((uint64_t)n, SQUASHFS_SUPERBLOCK_SIZE - ps->in));
		ps->in += n;
		if (ps->in > BUNDLE_MAX_IMAGE_SIZE) {
			r = error_set(err, -EFBIG, "%s: larger than the format's 1 TiB limit", ci->path);
			goto out;
		}
		hash_update(&ps->sha, in, n);
		if (ps->bs && (r = pass_blocks(ps, in, n, n == 0)) < 0)
			goto out;
		if (ps->chunking && (r = n ? chunk_stream_feed(&ps->cs, in, n) :
				     chunk_stream_end(&ps->cs)) < 0) {
			r = error_set(err, r, "%s: chunk table: %s", ci->path, r == -EFBIG ?
				      "larger than the format's limit" : strerror(-r));
			goto out;
		}
		r = ps->gzip ? pass_deflate(ps, in, n, n ? Z_NO_FLUSH : Z_FINISH) :
			pass_write(ps, in, n);
		if (r < 0) {
			r = error_set(err, r, "writing the bundle: %s", strerror(-r));
			goto out;
		}
		if (n == 0)
			break;
	}
	hash_final(&ps->sha, sha);
	*ret_size = ps->in;
	*ret_stored = ps->out;
	if (ret_hashes)
		*ret_hashes = TAKE_PTR(ps->hashes);
	if (ret_chunks) {
		ret_chunks->entries = TAKE_PTR(ps->chunks);
		ret_chunks->n = ps->n_chunks;
	}
out:
	if (ps->gzip)
		deflateEnd(&ps->z);
	free(ps->hashes);
	free(ps->chunks);
	return r;
}

static int build_date_now(char buf[BUNDLE_BUILD_DATE_LEN + 1], struct error *err)
{
	const char *sde = getenv("SOURCE_DATE_EPOCH");
	time_t t = time(NULL);
	struct tm tm;

	if (sde && *sde) {
		char *end;
		errno = 0;
		long long v = strtoll(sde, &end, 10);
		if (errno || *end || v < 0)
			return error_set(err, -EINVAL, "SOURCE_DATE_EPOCH=\"%s\" is not a number of seconds",
				    sde);
		t = (time_t)v;
	}
	if (!gmtime_r(&t, &tm) || tm.tm_year + 1900 > 9999)
		return error_set(err, -EINVAL, "build date out of range");
	strftime(buf, BUNDLE_BUILD_DATE_LEN + 1, "%Y-%m-%dT%H:%M:%SZ", &tm);
	return 0;
}

/* The signer's keys are OpenSSL's; the keyring (keyring.c) never calls
 * libcrypto, so a device's verifier does not map it. */
int bundle_create_key_id(void *pkey, uint8_t ret[KEYRING_ID_SIZE])
{
	uint8_t raw[KEYRING_RAW_KEY_SIZE];
	size_t len = sizeof(raw);

	if (!pkey || EVP_PKEY_get_id(pkey) != EVP_PKEY_ED25519)
		return -EINVAL;
	if (!EVP_PKEY_get_raw_public_key(pkey, raw, &len) || len != sizeof(raw))
		return -EINVAL;
	return keyring_key_id_raw(raw, ret);
}

static int sign_manifest(EVP_PKEY *key, const void *msg, size_t len,
			 uint8_t entry[BUNDLE_SIG_ENTRY_SIZE], struct error *err)
{
	_cleanup_(EVP_MD_CTX_freep) EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	size_t siglen = KEYRING_SIG_SIZE;

	if (!ctx)
		return -ENOMEM;
	if (bundle_create_key_id(key, entry) < 0)
		return error_set(err, -EINVAL, "signing key is not an Ed25519 key");
	if (EVP_DigestSignInit(ctx, NULL, NULL, NULL, key) != 1 ||
	    EVP_DigestSign(ctx, entry + KEYRING_ID_SIZE, &siglen, msg, len) != 1 ||
	    siglen != KEYRING_SIG_SIZE) {
		ERR_clear_error();
		return error_set(err, -EINVAL, "Ed25519 signing failed (is it a private key?)");
	}
	return 0;
}

static void index_freep(uint8_t *(*h)[BUNDLE_MAX_IMAGES])
{
	for (size_t i = 0; i < BUNDLE_MAX_IMAGES; i++)
		free((*h)[i]);
}

static void chunks_freep(struct create_chunks (*c)[BUNDLE_MAX_IMAGES])
{
	for (size_t i = 0; i < BUNDLE_MAX_IMAGES; i++)
		free((*c)[i].entries);
}

/* Format 3: the images' chunk tables after the block hashes. */
static int index_add_chunks(const struct create_chunks *c, size_t n, uint8_t **idx,
			    uint64_t *size, struct error *err)
{
	uint64_t total = *size;
	uint8_t *p;

	for (size_t i = 0; i < n; i++)
		total += c[i].n * CHUNK_ENTRY_SIZE;
	if (total - *size > BUNDLE_MAX_CHUNK_TABLE)
		return error_set(err, -EFBIG, "the chunk table would be %" PRIu64 " bytes, more "
				 "than %d: use --no-chunks", total - *size, BUNDLE_MAX_CHUNK_TABLE);
	p = realloc(*idx, total ? total : 1);
	if (!p)
		return -ENOMEM;
	*idx = p;
	for (size_t i = 0; i < n; i++) {
		memcpy(p + *size, c[i].entries, c[i].n * CHUNK_ENTRY_SIZE);
		*size += c[i].n * CHUNK_ENTRY_SIZE;
	}
	return 0;
}

/* All images' block hashes, in manifest order: the index section. */
static int index_build(uint8_t *const *hashes, const uint64_t *size, size_t n, uint32_t bs,
		       uint8_t **ret, uint64_t *ret_size, struct error *err)
{
	uint64_t total = 0, at = 0;
	uint8_t *idx;

	for (size_t i = 0; i < n; i++)
		total += bundle_blocks(size[i], bs) * BUNDLE_HASH_SIZE;
	if (total > BUNDLE_MAX_INDEX)
		return error_set(err, -EFBIG, "the block index would be %" PRIu64 " bytes, more than "
				 "%d: use a larger --block-size than %" PRIu32, total,
				 BUNDLE_MAX_INDEX, bs);
	idx = malloc(total ? total : 1);
	if (!idx)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		uint64_t len = bundle_blocks(size[i], bs) * BUNDLE_HASH_SIZE;
		memcpy(idx + at, hashes[i], len);
		at += len;
	}
	*ret = idx;
	*ret_size = total;
	return 0;
}

int bundle_create(const struct bundle_create_params *p, int out_fd,
		  struct bundle_create_result *ret, struct error *err)
{
	_cleanup_json_ struct json_object *o = json_object_new_object();
	_cleanup_free_ struct bundle_create_result *res = calloc(1, sizeof(*res));
	struct json_object *imgs = json_object_new_array();
	uint8_t sha[BUNDLE_MAX_IMAGES][32];
	_cleanup_(index_freep) uint8_t *hashes[BUNDLE_MAX_IMAGES] = { NULL };
	_cleanup_(chunks_freep) struct create_chunks chunks[BUNDLE_MAX_IMAGES] = { { 0 } };
	_cleanup_free_ uint8_t *index = NULL;
	uint32_t bs = p->no_index ? 0 : p->block_size ? p->block_size : BUNDLE_BLOCK_SIZE_DEFAULT;
	/* 3.0 with the chunk table; 2.0 (--no-chunks) and 1.0 (--no-index)
	 * for devices with an older flashd */
	bool chunked = bs && !p->no_chunks;
	unsigned major = chunked ? BUNDLE_FORMAT_MAJOR : bs ? 2 : 1;
	unsigned minor = chunked ? BUNDLE_FORMAT_MINOR : 0;
	uint64_t index_size = 0;
	uint8_t isha[32];
	uint64_t size[BUNDLE_MAX_IMAGES], stored[BUNDLE_MAX_IMAGES];
	uint8_t hdr[BUNDLE_HEADER_SIZE], sigs[BUNDLE_MAX_SIGNATURES * BUNDLE_SIG_ENTRY_SIZE];
	char date[BUNDLE_BUILD_DATE_LEN + 1], shahex[65];
	const char *manifest;
	size_t mlen;
	int r;

	if (!o || !imgs || !res) {
		json_object_put(imgs);
		return -ENOMEM;
	}
	if (bs && (bs < BUNDLE_BLOCK_SIZE_MIN || bs > BUNDLE_BLOCK_SIZE_MAX || (bs & (bs - 1)))) {
		json_object_put(imgs);
		return error_set(err, -EINVAL, "block size %" PRIu32 ": must be a power of two from "
				 "%d to %d", bs, BUNDLE_BLOCK_SIZE_MIN, BUNDLE_BLOCK_SIZE_MAX);
	}
	json_object_object_add(o, "format_major", json_object_new_int(major));
	json_object_object_add(o, "format_minor", json_object_new_int(minor));
	json_object_object_add(o, "compatible", json_object_new_string(p->compatible ? p->compatible : ""));
	json_object_object_add(o, "version", json_object_new_string(p->version ? p->version : ""));
	if (p->build_date)
		snprintf(date, sizeof(date), "%s", p->build_date);
	else if ((r = build_date_now(date, err)) < 0) {
		json_object_put(imgs);
		return r;
	}
	json_object_object_add(o, "build_date", json_object_new_string(date));
	if (p->description)
		json_object_object_add(o, "description", json_object_new_string(p->description));
	json_object_object_add(o, "images", imgs);
	if (p->n_images < 1 || p->n_images > BUNDLE_MAX_IMAGES)
		return error_set(err, -EINVAL, "%zu images, a bundle holds 1..%d", p->n_images,
			    BUNDLE_MAX_IMAGES);
	if (p->n_keys > BUNDLE_MAX_SIGNATURES)
		return error_set(err, -EINVAL, "%zu signing keys, at most %d", p->n_keys,
			    BUNDLE_MAX_SIGNATURES);

	/* pass 1: hash, learn sizes, check squashfs superblocks */
	for (size_t i = 0; i < p->n_images; i++) {
		const struct bundle_create_image *ci = &p->images[i];
		uint8_t sb[SQUASHFS_SUPERBLOCK_SIZE] = { 0 };
		struct json_object *j;

		if (!bundle_slot_name_valid(ci->slot))
			return error_set(err, -EINVAL, "\"%s\" is not a slot member name ([a-z0-9_-]{1,32})",
				    ci->slot ? ci->slot : "");
		r = image_pass(ci, p->gzip_level, -1, bs, bs ? &hashes[i] : NULL,
			       chunked ? &chunks[i] : NULL, sha[i], &size[i], &stored[i], sb, err);
		if (r < 0)
			return r;
		if (size[i] == 0)
			return error_set(err, -EINVAL, "%s: empty image", ci->path);
		if (bundle_is_cramfs(sb, MIN(size[i], sizeof(sb))))
			return error_set(err, -EMEDIUMTYPE, "%s: %s", ci->path, BUNDLE_CRAMFS_REFUSED);
		if (ci->type == BUNDLE_IMAGE_SQUASHFS) {
			r = squashfs_check_superblock(sb, MIN(size[i], sizeof(sb)), size[i],
						      &res->squashfs[i], err);
			if (r < 0)
				return error_prefix(err, r, "%s", ci->path);
			res->has_squashfs[i] = true;
		}
		j = json_object_new_object();
		if (!j)
			return -ENOMEM;
		util_hex(sha[i], 32, shahex);
		json_object_object_add(j, "slot", json_object_new_string(ci->slot));
		json_object_object_add(j, "type", json_object_new_string(
					       bundle_image_type_to_string(ci->type)));
		json_object_object_add(j, "size", json_object_new_int64(size[i]));
		json_object_object_add(j, "sha256", json_object_new_string(shahex));
		json_object_object_add(j, "compression", json_object_new_string(
					       bundle_compression_to_string(ci->compression)));
		json_object_object_add(j, "stored_size", json_object_new_int64(stored[i]));
		if (chunked)
			json_object_object_add(j, "chunks", json_object_new_int64(chunks[i].n));
		json_object_array_add(imgs, j);
	}
	if (bs) {
		r = index_build(hashes, size, p->n_images, bs, &index, &index_size, err);
		if (r >= 0 && chunked)
			r = index_add_chunks(chunks, p->n_images, &index, &index_size, err);
		if (r < 0)
			return r;
		r = bundle_index_sha256(index, index_size, isha);
		if (r < 0)
			return r;
		util_hex(isha, 32, shahex);
		json_object_object_add(o, "block_size", json_object_new_int64(bs));
		json_object_object_add(o, "index_sha256", json_object_new_string(shahex));
	}
	manifest = json_object_to_json_string_length(
		o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE, &mlen);
	if (!manifest)
		return -ENOMEM;
	/* self-check: what we write must be what a reader accepts */
	r = bundle_manifest_parse(manifest, mlen, &res->manifest, err);
	if (r < 0)
		return r;
	for (size_t k = 0; k < p->n_keys; k++) {
		r = sign_manifest(p->keys[k], manifest, mlen, sigs + k * BUNDLE_SIG_ENTRY_SIZE, err);
		if (r < 0)
			return r;
		for (size_t j = 0; j < k; j++)
			if (!memcmp(sigs + j * BUNDLE_SIG_ENTRY_SIZE, sigs + k * BUNDLE_SIG_ENTRY_SIZE,
				    KEYRING_ID_SIZE))
				return error_set(err, -EINVAL, "signing key %zu given twice", k + 1);
	}
	bundle_header_build(hdr, major, minor, mlen, p->n_keys);
	if ((r = (int)util_write_full(out_fd, hdr, sizeof(hdr))) < 0 ||
	    (r = (int)util_write_full(out_fd, manifest, mlen)) < 0 ||
	    (r = (int)util_write_full(out_fd, sigs, p->n_keys * BUNDLE_SIG_ENTRY_SIZE)) < 0 ||
	    (index_size && (r = (int)util_write_full(out_fd, index, index_size)) < 0))
		return error_set(err, r, "writing the bundle: %s", strerror(-r));

	/* pass 2: write payloads; the files must not have changed */
	res->manifest.n_signatures = p->n_keys;
	res->manifest.trust = BUNDLE_TRUST_UNCHECKED;
	bundle_manifest_layout(&res->manifest, p->n_keys);
	for (size_t i = 0; i < p->n_images; i++) {
		uint8_t sha2[32];
		uint64_t s2, st2;

		r = image_pass(&p->images[i], p->gzip_level, out_fd, 0, NULL, NULL, sha2, &s2, &st2,
			       NULL, err);
		if (r < 0)
			return r;
		if (s2 != size[i] || st2 != stored[i] || memcmp(sha2, sha[i], 32))
			return error_set(err, -ESTALE, "%s changed while the bundle was being written",
				    p->images[i].path);
	}
	if (ret)
		*ret = *res;
	return 0;
}

int bundle_create_key_load(const char *path, void **ret, struct error *err)
{
	_cleanup_fclose_ FILE *f = fopen(path, "re");
	EVP_PKEY *key;

	if (!f)
		return error_set(err, -errno, "%s: %s", path, strerror(errno));
	key = PEM_read_PrivateKey(f, NULL, NULL, NULL);
	if (!key) {
		ERR_clear_error();
		return error_set(err, -EINVAL, "%s: not a PEM private key", path);
	}
	if (EVP_PKEY_get_id(key) != EVP_PKEY_ED25519) {
		error_set(err, -EINVAL, "%s: %s key, bundles are signed with Ed25519 only", path,
		     EVP_PKEY_get0_type_name(key) ? EVP_PKEY_get0_type_name(key) : "unknown");
		EVP_PKEY_free(key);
		return -EINVAL;
	}
	*ret = key;
	return 0;
}

void bundle_create_key_free(void *key)
{
	EVP_PKEY_free(key);
}

static int write_pem(const char *path, mode_t mode, EVP_PKEY *key, bool private,
		     struct error *err)
{
	_cleanup_close_ int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
	_cleanup_fclose_ FILE *f = NULL;
	int ok;

	if (fd < 0)
		return error_set(err, -errno, "%s: %s", path, strerror(errno));
	f = fdopen(fd, "we");
	if (!f)
		return error_set(err, -errno, "%s: %s", path, strerror(errno));
	TAKE_FD(fd);
	ok = private ? PEM_write_PrivateKey(f, key, NULL, NULL, 0, NULL, NULL) :
		PEM_write_PUBKEY(f, key);
	if (!ok || fflush(f) != 0 || fsync(fileno(f)) < 0) {
		int r = errno ? -errno : -EIO;
		unlink(path);
		return error_set(err, r, "%s: writing the key failed", path);
	}
	return 0;
}

int bundle_create_keygen(const char *private_path, const char *public_path,
			 uint8_t ret_id[KEYRING_ID_SIZE], struct error *err)
{
	_cleanup_(EVP_PKEY_freep) EVP_PKEY *key = EVP_PKEY_Q_keygen(NULL, NULL, "ED25519");
	uint8_t id[KEYRING_ID_SIZE];
	int r;

	if (!key)
		return error_set(err, -EIO, "Ed25519 key generation failed");
	r = write_pem(private_path, 0600, key, true, err);
	if (r < 0)
		return r;
	r = write_pem(public_path, 0644, key, false, err);
	if (r < 0) {
		unlink(private_path);
		return r;
	}
	if (bundle_create_key_id(key, id) < 0)
		return -EIO;
	if (ret_id)
		memcpy(ret_id, id, sizeof(id));
	return 0;
}
