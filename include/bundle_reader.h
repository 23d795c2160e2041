/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The streaming bundle reader: takes the stream in chunks of any size,
 * verifies the signatures before it parses the manifest, and hands the
 * uncompressed image bytes to the caller as they arrive (errors: bundle.h). */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bundle.h"
#include "error.h"

/* Pointers must stay valid for the reader's lifetime. */
struct bundle_policy {
	const struct keyring *keyring;       /* trusted keys (NULL = none) */
	bool allow_unsigned;                 /* accept unsigned / unknown-key bundles */
	bool skip_signatures;                /* inspection only (bundle info): trust UNCHECKED */
	const char *compatible;              /* NULL: caller checks (bundle_manifest_check) */
	const struct bundle_slot_limit *slots; /* NULL/0: caller checks */
	size_t n_slots;
};

/* Callbacks return 0 to go on, -errno to refuse (optionally filling err;
 * otherwise the reader writes a generic message). manifest may return
 * BUNDLE_STOP to end reading after the manifest (bundle info). Any of
 * them may be NULL. image_data gets the image's uncompressed bytes in
 * order; the image is trustworthy only once image_end is called (its
 * sha256 matched). The reader holds back the first 96 bytes of every
 * image (all of a smaller one) until they passed the checks: a CramFS
 * image is refused by name, a squashfs superblock must be sound. */
#define BUNDLE_STOP 1
/* The manifest callback of a reader that reads no further (bundle info, a
 * kept head verified again): the manifest is bundle_reader_manifest()'s. */
int bundle_reader_stop_at_manifest(void *userdata, const struct bundle_manifest *m,
				   struct error *err);
struct bundle_reader_ops {
	int (*manifest)(void *userdata, const struct bundle_manifest *m, struct error *err);
	/* Format 2: the block index, verified against the signed manifest
	 * (m->index_size bytes, valid for the reader's lifetime). */
	int (*index)(void *userdata, const struct bundle_manifest *m, const uint8_t *index,
		     struct error *err);
	int (*image_begin)(void *userdata, const struct bundle_image *img, struct error *err);
	int (*image_data)(void *userdata, const struct bundle_image *img, const void *buf,
			  size_t len, struct error *err);
	int (*image_end)(void *userdata, const struct bundle_image *img, struct error *err);
};

struct bundle_reader;

int bundle_reader_new(const struct bundle_policy *policy, const struct bundle_reader_ops *ops,
		      void *userdata, struct bundle_reader **ret);
void bundle_reader_free(struct bundle_reader *r);
static inline void bundle_reader_freep(struct bundle_reader **r) { if (*r) bundle_reader_free(*r); }
#define _cleanup_bundle_reader_ __attribute__((cleanup(bundle_reader_freep)))

/* Feed the next len bytes. Returns 0 (more wanted), BUNDLE_STOP (the
 * manifest callback stopped reading; further input is ignored), or
 * -errno. Errors are sticky: later calls return the same code and message. */
int bundle_reader_feed(struct bundle_reader *r, const void *buf, size_t len,
		       struct error *err);
/* End of stream: 0 when the bundle was complete (or stopped), -ENODATA
 * naming where it was cut off otherwise. */
int bundle_reader_finish(struct bundle_reader *r, struct error *err);
/* Read fd to EOF in BUNDLE_INFLATE_CHUNK pieces, feed, finish. */
int bundle_reader_read_fd(struct bundle_reader *r, int fd, struct error *err);

/* NULL until the manifest was verified and parsed. */
const struct bundle_manifest *bundle_reader_manifest(const struct bundle_reader *r);
/* The bundle's signed head as it was verified: its first *ret_size bytes
 * (header, manifest, signatures), NULL before the manifest. A reader fed
 * them alone verifies the same manifest again (a manifest callback that
 * returns BUNDLE_STOP): what block_record.h keeps of a slot's bundle. */
const uint8_t *bundle_reader_head(const struct bundle_reader *r, size_t *ret_size);
/* Format 2: the verified block index (NULL before, or without one).
 * Image img's block b has the hash at (img->index_first + b) * 32. */
const uint8_t *bundle_reader_index(const struct bundle_reader *r);
bool bundle_reader_done(const struct bundle_reader *r);
uint64_t bundle_reader_offset(const struct bundle_reader *r);  /* bytes consumed */
/* Heap bytes the reader holds now / held at most (its own buffers and
 * zlib's state; OpenSSL's digest context, a few hundred bytes, is not
 * counted). Bounded by the manifest size (kept: bundle_reader_head())
 * plus the index and the inflate window. */
size_t bundle_reader_mem_current(const struct bundle_reader *r);
size_t bundle_reader_mem_peak(const struct bundle_reader *r);
