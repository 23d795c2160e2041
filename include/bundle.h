/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Signed update bundles: format (docs/bundle-format.md), streaming reader
 * with bounded memory (bundle_reader.h), and the host-side writer
 * (bundle_create.h).
 *
 * A bundle is: a 32-byte header, the manifest (canonical JSON, the exact
 * bytes that are signed), 0..4 Ed25519 signatures, then each image's
 * payload in manifest order. The reader takes the stream in chunks of any
 * size (from an event loop or a blocking fd), verifies the signatures
 * before it parses the manifest, and hands uncompressed image bytes to the
 * caller as they arrive; nothing beyond the manifest and one 64 KiB
 * inflate window is buffered.
 *
 * Errors: -errno, with a message in struct error naming the image,
 * field or byte offset. The codes callers may want to tell apart:
 *   -EBADMSG          malformed bundle, tampered manifest framing, payload
 *                     hash mismatch, corrupt gzip data, not a squashfs
 *   -EKEYREJECTED     a signature by a trusted key does not verify
 *   -ENOKEY           unsigned, or signed only by keys not in the keyring
 *                     (refused unless policy.allow_unsigned)
 *   -EPROTONOSUPPORT  a newer major format version, squashfs not 4.0
 *   -EMEDIUMTYPE      compatible string does not match, an image of another
 *                     type than its slot takes, a CramFS image (not in the
 *                     reference kernel)
 *   -EFBIG            an image (or its squashfs) is larger than its slot
 *   -ENXIO            an image for a slot member the caller has no room for
 *   -ENODATA          stream ended early (truncated bundle)
 *   -ECANCELED        a callback refused without an error code of its own */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "chunk.h"
#include "error.h"
#include "keyring.h"
#include "squashfs.h"

struct json_object;

#define BUNDLE_MAGIC "FLASHDBL"
/* The newest format this flashd writes and reads; 2.0 (no chunk table)
 * and 1.0 (no block index) are still read, and written by `bundle create
 * --no-chunks` and `--no-index`. */
#define BUNDLE_FORMAT_MAJOR 3
#define BUNDLE_FORMAT_MINOR 0
#define BUNDLE_FORMAT_MAJOR_OLDEST 1
#define BUNDLE_HEADER_SIZE 32
#define BUNDLE_SIG_ENTRY_SIZE (KEYRING_ID_SIZE + KEYRING_SIG_SIZE)
#define BUNDLE_MAX_SIGNATURES 4
#define BUNDLE_MAX_MANIFEST (64 * 1024)
#define BUNDLE_MAX_IMAGES 8
#define BUNDLE_MAX_IMAGE_SIZE (UINT64_C(1) << 40)
#define BUNDLE_SLOT_MAX 32
#define BUNDLE_COMPATIBLE_MAX 64
#define BUNDLE_VERSION_MAX 64
#define BUNDLE_DESCRIPTION_MAX 256
#define BUNDLE_BUILD_DATE_LEN 20 /* "2026-12-01T12:00:00Z" */
#define BUNDLE_INFLATE_CHUNK (64 * 1024)
/* The block-hash index (format 2): one SHA-256 per block_size chunk of
 * each image's uncompressed data. */
#define BUNDLE_BLOCK_SIZE_DEFAULT (128 * 1024)
#define BUNDLE_BLOCK_SIZE_MIN 4096
#define BUNDLE_BLOCK_SIZE_MAX (16 * 1024 * 1024)
#define BUNDLE_HASH_SIZE 32
#define BUNDLE_MAX_INDEX (8 * 1024 * 1024) /* 262144 blocks: 32 GiB at 128 KiB */
/* The chunk table (format 3), after the block hashes in the index
 * section: 16 bytes per chunk (chunk.h), 1 Mi chunks (16 GiB of images at
 * the 16 KiB average) */
#define BUNDLE_MAX_CHUNK_TABLE (16 * 1024 * 1024)

#define BUNDLE_IMAGE_TYPE_LIST(X) X(BUNDLE_IMAGE_SQUASHFS, "squashfs") X(BUNDLE_IMAGE_RAW, "raw")

enum bundle_image_type {
	BUNDLE_IMAGE_TYPE_LIST(STRING_TABLE_ENUM)
	_BUNDLE_IMAGE_TYPE_MAX,
};

#define BUNDLE_COMPRESSION_LIST(X) X(BUNDLE_COMPRESSION_NONE, "none") X(BUNDLE_COMPRESSION_GZIP, "gzip")

enum bundle_compression {
	BUNDLE_COMPRESSION_LIST(STRING_TABLE_ENUM)
	_BUNDLE_COMPRESSION_MAX,
};

#define BUNDLE_TRUST_LIST(X)                                                          \
	/* a trusted key's signature verified */                                     \
	X(BUNDLE_TRUST_VERIFIED, "verified")                                          \
	/* no signature; accepted by allow_unsigned */                                \
	X(BUNDLE_TRUST_UNSIGNED, "unsigned")                                          \
	/* signed by keys not in the keyring; accepted by allow_unsigned */           \
	X(BUNDLE_TRUST_UNKNOWN_KEY, "unknown-key")                                    \
	/* signatures not looked at (policy.skip_signatures) */                       \
	X(BUNDLE_TRUST_UNCHECKED, "unchecked")

enum bundle_trust {
	BUNDLE_TRUST_LIST(STRING_TABLE_ENUM)
	_BUNDLE_TRUST_MAX,
};

struct bundle_image {
	unsigned index;                      /* position in the manifest */
	char slot[BUNDLE_SLOT_MAX + 1];      /* slot member: "rootfs", "kernel" */
	enum bundle_image_type type;
	enum bundle_compression compression;
	uint64_t size;                       /* uncompressed bytes (written to flash) */
	uint64_t stored_size;                /* bytes in the bundle */
	uint8_t sha256[32];                  /* of the uncompressed image */
	uint64_t offset;                     /* of the payload from the start of the bundle */
	/* format 2: this image's hashes are index entries first..first+n_blocks-1 */
	uint64_t index_first, n_blocks;
	/* format 3: its chunks are chunk table entries chunk_first.. */
	uint64_t chunk_first, n_chunks;
};

struct bundle_manifest {
	unsigned format_major, format_minor;
	char compatible[BUNDLE_COMPATIBLE_MAX + 1];
	char version[BUNDLE_VERSION_MAX + 1];
	char build_date[BUNDLE_BUILD_DATE_LEN + 1];
	char description[BUNDLE_DESCRIPTION_MAX + 1];
	struct bundle_image images[BUNDLE_MAX_IMAGES];
	size_t n_images;
	/* format 2: the signed block-hash index (0 / none in format 1) */
	uint32_t block_size;
	uint64_t index_size;                 /* bytes: 32 x all images' blocks (+ format 3's
					      * chunk table) */
	uint64_t chunk_table_offset;         /* format 3: of the chunk table in the index */
	uint8_t index_sha256[32];
	/* filled by the reader, not part of the signed JSON: */
	enum bundle_trust trust;
	bool is_signed;                      /* trust == BUNDLE_TRUST_VERIFIED */
	unsigned n_signatures;
	uint8_t signer_id[KEYRING_ID_SIZE];  /* valid when is_signed */
	char signer_name[256];               /* keyring file of the signer, when is_signed */
	uint32_t manifest_size;
	uint64_t index_offset;               /* first index byte (format 2) */
	uint64_t payload_offset;             /* first payload byte */
	uint64_t total_size;                 /* whole bundle */
};

/* Room for one slot member, supplied by the caller (from the layout). */
struct bundle_slot_limit {
	const char *slot;
	uint64_t max_size;
	const char *image_type;              /* the layout's type for it ("squashfs"); NULL: any */
};

/* The checks the reader applies from its policy, for callers that left
 * policy.compatible / policy.slots empty and check in the manifest
 * callback: compatible (NULL = skip) and slot room (n_slots 0 = skip). */
int bundle_manifest_check(const struct bundle_manifest *m, const char *compatible,
			  const struct bundle_slot_limit *slots, size_t n_slots,
			  struct error *err);
/* Parse and validate manifest bytes (canonical JSON) without the
 * framing or signatures; used by the reader, the writer's self-check and
 * the fuzzers. Trust fields are left zero. */
int bundle_manifest_parse(const void *buf, size_t len, struct bundle_manifest *ret,
			  struct error *err);
/* SHA-256 of len bytes (the index as a whole, or one block). */
int bundle_index_sha256(const void *buf, uint64_t len, uint8_t ret[32]);
/* Blocks of block_size in size bytes (the last one may be short). */
static inline uint64_t bundle_blocks(uint64_t size, uint32_t block_size)
{
	return block_size ? (size + block_size - 1) / block_size : 0;
}
/* Format 3: the chunk table of the verified index section, checked:
 * each image's chunks cover exactly its size, every length 1..CHUNK_MAX.
 * Without a chunk table (formats 1 and 2): 0. */
int bundle_chunks_check(const struct bundle_manifest *m, const uint8_t *index,
			struct error *err);
/* Entry c of image img's chunks (a pointer into the index section). */
static inline const uint8_t *bundle_chunk_entry(const struct bundle_manifest *m,
						const uint8_t *index,
						const struct bundle_image *img, uint64_t c)
{
	return index + m->chunk_table_offset + (img->chunk_first + c) * CHUNK_ENTRY_SIZE;
}
/* The offsets a manifest implies, with the framing around it: index and
 * payloads follow the header, the manifest and n_sigs signatures. Fills
 * index_offset, payload_offset, each image's offset, total_size. */
void bundle_manifest_layout(struct bundle_manifest *m, unsigned n_sigs);
/* JSON view of a manifest (for flashctl --json and the daemon status). */
int bundle_manifest_to_json(const struct bundle_manifest *m, struct json_object **ret);

/* CramFS (magic 0x28cd3d45, either byte order) in the first len bytes of
 * an image: refused everywhere, the reference kernel has no cramfs. */
bool bundle_is_cramfs(const void *head, size_t len);
#define BUNDLE_CRAMFS_REFUSED "a CramFS image (magic 0x28cd3d45): the reference kernel has " \
	"no cramfs, so this image could never be mounted; build a squashfs image (mksquashfs)"

const char *bundle_image_type_to_string(enum bundle_image_type t);
int bundle_image_type_from_string(const char *s);    /* enum or -EINVAL */
const char *bundle_compression_to_string(enum bundle_compression c);
int bundle_compression_from_string(const char *s);   /* enum or -EINVAL */
const char *bundle_trust_to_string(enum bundle_trust t);
/* True for a valid slot member name: [a-z0-9_-]{1,32}. */
bool bundle_slot_name_valid(const char *s);

/* The 32-byte header (docs/bundle-format.md): build one, or check one and
 * return its fields. */
void bundle_header_build(uint8_t h[BUNDLE_HEADER_SIZE], unsigned major, unsigned minor,
			 uint32_t manifest_size, unsigned n_sigs);
int bundle_header_parse(const uint8_t h[BUNDLE_HEADER_SIZE], unsigned *ret_major,
			unsigned *ret_minor, uint32_t *ret_manifest_size, unsigned *ret_sigs,
			struct error *err);
