/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The host-side bundle writer and its Ed25519 signing keys. */
#pragma once
#include <stdbool.h>
#include <stdint.h>

#include "bundle.h"
#include "error.h"
#include "keyring.h"
#include "squashfs.h"

struct bundle_create_image {
	const char *slot;
	const char *path;
	enum bundle_image_type type;
	enum bundle_compression compression;
};

struct bundle_create_params {
	const char *compatible;
	const char *version;
	const char *build_date;              /* NULL: $SOURCE_DATE_EPOCH, else now (UTC) */
	const char *description;             /* NULL: none */
	const struct bundle_create_image *images;
	size_t n_images;
	void *const *keys;                   /* EVP_PKEY * Ed25519 private keys; none = unsigned */
	size_t n_keys;
	int gzip_level;                      /* 0: Z_DEFAULT_COMPRESSION */
	/* The block-hash index (format 2.0): block_size 0 = 128 KiB; no_index
	 * writes a format 1.0 bundle (no index) for devices with an older flashd. */
	uint32_t block_size;
	bool no_index;
	/* no_chunks writes format 2.0 (index without the chunk table of 3.0)
	 * for devices whose flashd reads 2.x at most. */
	bool no_chunks;
};

struct bundle_create_result {
	struct bundle_manifest manifest;     /* as a reader would see it (trust: UNCHECKED) */
	bool has_squashfs[BUNDLE_MAX_IMAGES];
	struct squashfs_info squashfs[BUNDLE_MAX_IMAGES];
};

/* Write a bundle to out_fd (may be a pipe: nothing is seeked). Images are
 * read twice: once to hash (and compress, to learn the stored size), once
 * to write; a file changing in between is an error. */
int bundle_create(const struct bundle_create_params *p, int out_fd,
		  struct bundle_create_result *ret, struct error *err);

/* Ed25519 key pair as PEM: private_path (mode 0600, PKCS#8) and
 * public_path (SubjectPublicKeyInfo, for the keyring). Refuses to
 * overwrite existing files (-EEXIST). ret_id may be NULL. */
int bundle_create_keygen(const char *private_path, const char *public_path,
			 uint8_t ret_id[KEYRING_ID_SIZE], struct error *err);
/* Key id of an OpenSSL EVP_PKEY (public or private; -EINVAL unless
 * Ed25519): keyring_key_id_raw of its public half. */
int bundle_create_key_id(void *pkey, uint8_t ret[KEYRING_ID_SIZE]);
/* Load an Ed25519 private key (PEM) for bundle_create; free with
 * bundle_create_key_free. */
int bundle_create_key_load(const char *path, void **ret, struct error *err);
void bundle_create_key_free(void *key);
