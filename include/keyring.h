/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Trusted Ed25519 public keys, loaded from a directory of PEM files
 * (*.pem, *.pub; SubjectPublicKeyInfo, as written by
 * `openssl pkey -pubout` or `flashctl bundle keygen`).
 * A key's id is the SHA-256 of its raw 32-byte public key; bundles name
 * the key of each signature by that id. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "error.h"

#define KEYRING_ID_SIZE 32
#define KEYRING_SIG_SIZE 64
#define KEYRING_RAW_KEY_SIZE 32
#define KEYRING_MAX_KEYS 64
#define KEYRING_MAX_FILE_SIZE (16 * 1024)

struct keyring_key {
	uint8_t id[KEYRING_ID_SIZE];
	char *name;                  /* file it came from */
	uint8_t pub[KEYRING_RAW_KEY_SIZE]; /* the raw Ed25519 public key */
};

struct keyring;

int keyring_new(struct keyring **ret);
/* Load every *.pem / *.pub in dir (hidden files and other names are
 * skipped). -ENOKEY when dir holds no key; -EINVAL (message names the
 * file) for a file that is not an Ed25519 public key, including a
 * private key put there by mistake. */
int keyring_load_dir(const char *dir, struct keyring **ret, struct error *err);
/* How many files keyring_load_dir() would read from dir, without reading
 * them (and without libcrypto); -errno when dir cannot be read. */
int keyring_dir_count(const char *dir);
/* Add one PEM public key; name is used in messages and keyring_key.name.
 * A key already present is not added twice (returns 0). */
int keyring_add_pem(struct keyring *k, const void *pem, size_t len, const char *name,
		    struct error *err);
int keyring_add_file(struct keyring *k, const char *path, struct error *err);

size_t keyring_count(const struct keyring *k);
const struct keyring_key *keyring_get(const struct keyring *k, size_t i);
const struct keyring_key *keyring_find(const struct keyring *k, const uint8_t id[KEYRING_ID_SIZE]);

/* 0 when sig is key's Ed25519 signature over msg, -EKEYREJECTED if not. */
int keyring_verify(const struct keyring_key *key, const void *msg, size_t len,
		   const uint8_t sig[KEYRING_SIG_SIZE]);

/* Key id of a raw Ed25519 public key (bundle_create_key_id: of a signer's). */
int keyring_key_id_raw(const uint8_t raw[KEYRING_RAW_KEY_SIZE], uint8_t ret[KEYRING_ID_SIZE]);
/* Lower-case hex of an id (buf >= 2 * KEYRING_ID_SIZE + 1). */
const char *keyring_id_to_hex(const uint8_t id[KEYRING_ID_SIZE], char *buf, size_t len);

void keyring_free(struct keyring *k);
static inline void keyring_freep(struct keyring **k) { if (*k) keyring_free(*k); }
#define _cleanup_keyring_ __attribute__((cleanup(keyring_freep)))
