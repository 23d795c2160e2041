/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Trusted Ed25519 public keys (see keyring.h). */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <nettle/eddsa.h>

#include "cleanup.h"
#include "dl.h"
#include "hash.h"
#include "keyring.h"
#include "util.h"

struct keyring {
	struct keyring_key keys[KEYRING_MAX_KEYS];
	size_t n_keys;
};

int keyring_new(struct keyring **ret)
{
	struct keyring *k = calloc(1, sizeof(*k));

	if (!k)
		return -ENOMEM;
	*ret = k;
	return 0;
}

void keyring_free(struct keyring *k)
{
	if (!k)
		return;
	for (size_t i = 0; i < k->n_keys; i++)
		free(k->keys[i].name);
	free(k);
}

size_t keyring_count(const struct keyring *k)
{
	return k ? k->n_keys : 0;
}

const struct keyring_key *keyring_get(const struct keyring *k, size_t i)
{
	return k && i < k->n_keys ? &k->keys[i] : NULL;
}

const struct keyring_key *keyring_find(const struct keyring *k, const uint8_t id[KEYRING_ID_SIZE])
{
	for (size_t i = 0; k && i < k->n_keys; i++)
		if (!memcmp(k->keys[i].id, id, KEYRING_ID_SIZE))
			return &k->keys[i];
	return NULL;
}

int keyring_key_id_raw(const uint8_t raw[KEYRING_RAW_KEY_SIZE], uint8_t ret[KEYRING_ID_SIZE])
{
	hash_buf(raw, KEYRING_RAW_KEY_SIZE, ret);
	return 0;
}

const char *keyring_id_to_hex(const uint8_t id[KEYRING_ID_SIZE], char *buf, size_t len)
{
	static const char hex[] = "0123456789abcdef";
	size_t i;

	if (len == 0)
		return buf;
	for (i = 0; i < KEYRING_ID_SIZE && 2 * i + 2 < len; i++) {
		buf[2 * i] = hex[id[i] >> 4];
		buf[2 * i + 1] = hex[id[i] & 15];
	}
	buf[2 * i] = '\0';
	return buf;
}

/* The SubjectPublicKeyInfo of an Ed25519 key (RFC 8410): this prefix and
 * the raw key; any other key differs from it in the algorithm's OID. */
static const uint8_t ed25519_spki[] = { 0x30, 0x2a, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65,
					0x70, 0x03, 0x21, 0x00 };
#define SPKI_SIZE (sizeof(ed25519_spki) + KEYRING_RAW_KEY_SIZE)

/* Name another key's algorithm (by its OID) for the refusal message. */
static const char *spki_type_name(const uint8_t *der, size_t len)
{
	static const struct { const char *name; uint8_t oid[11]; size_t len; } types[] = {
		{ "RSA", { 6, 9, 0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 1, 1, 1 }, 11 },
		{ "EC", { 6, 7, 0x2a, 0x86, 0x48, 0xce, 0x3d, 2, 1 }, 9 },
		{ "DSA", { 6, 7, 0x2a, 0x86, 0x48, 0xce, 0x38, 4, 1 }, 9 },
		{ "ED448", { 6, 3, 0x2b, 0x65, 0x71 }, 5 },
		{ "X25519", { 6, 3, 0x2b, 0x65, 0x6e }, 5 },
		{ "X448", { 6, 3, 0x2b, 0x65, 0x6f }, 5 },
		{ "ED25519", { 6, 3, 0x2b, 0x65, 0x70 }, 5 }, /* but not well-formed */
	};

	for (size_t i = 0; i < ELEMENTSOF(types); i++)
		if (memmem(der, len, types[i].oid, types[i].len))
			return types[i].name;
	return "unknown";
}

static int base64_value(char c)
{
	static const char alphabet[] =
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	const char *p = c ? strchr(alphabet, c) : NULL;

	return p ? (int)(p - alphabet) : -1;
}

/* Decode the base64 text [p, end) (line breaks allowed, '=' only as
 * padding at the end) into out; the decoded length, or -EINVAL. */
static ssize_t base64_decode(const char *p, const char *end, uint8_t *out, size_t max)
{
	uint32_t acc = 0;
	size_t n = 0, bits = 0, pad = 0;

	for (; p < end; p++) {
		int v = base64_value(*p);

		if (*p && strchr(" \t\r\n", *p))
			continue;
		if (*p == '=' && ++pad <= 2)
			continue;
		if (v < 0 || pad)
			return -EINVAL;
		acc = acc << 6 | (uint32_t)v;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			if (n >= max)
				return -EINVAL;
			out[n++] = (uint8_t)(acc >> bits);
		}
	}
	return bits >= 6 ? -EINVAL : (ssize_t)n;
}

/* The DER inside the first PUBLIC KEY block of a PEM text. */
static ssize_t pem_public_key(const char *pem, size_t len, uint8_t *der, size_t max)
{
	static const char begin[] = "-----BEGIN PUBLIC KEY-----", end[] = "-----END PUBLIC KEY-----";
	const char *b = memmem(pem, len, begin, sizeof(begin) - 1), *e;

	if (!b)
		return -EINVAL;
	b += sizeof(begin) - 1;
	e = memmem(b, len - (size_t)(b - pem), end, sizeof(end) - 1);
	return e ? base64_decode(b, e, der, max) : -EINVAL;
}

int keyring_add_pem(struct keyring *k, const void *pem, size_t len, const char *name,
		    struct error *err)
{
	uint8_t der[KEYRING_MAX_FILE_SIZE], id[KEYRING_ID_SIZE];
	const char *type;
	ssize_t n;
	char *dup;

	if (len > KEYRING_MAX_FILE_SIZE)
		return error_set(err, -EFBIG, "%s: %zu bytes, too large for a public key file",
			 name, len);
	if (memmem(pem, len, "PRIVATE KEY-----", 16))
		return error_set(err, -EINVAL, "%s: contains a private key; a keyring holds "
				 "public keys only (openssl pkey -in KEY -pubout)", name);
	n = pem_public_key(pem, len, der, sizeof(der));
	if (n < 0 || n < 2 || der[0] != 0x30)
		return error_set(err, -EINVAL, "%s: not a PEM public key", name);
	type = (size_t)n == SPKI_SIZE && !memcmp(der, ed25519_spki, sizeof(ed25519_spki)) ?
		NULL : spki_type_name(der, (size_t)n);
	if (type && !strcmp(type, "ED25519"))
		return error_set(err, -EINVAL, "%s: not a well-formed Ed25519 public key (%zd bytes "
				 "of DER, want %zu)", name, n, SPKI_SIZE);
	if (type)
		return error_set(err, -EINVAL, "%s: %s key, only Ed25519 keys are supported",
			 name, type);
	keyring_key_id_raw(der + sizeof(ed25519_spki), id);
	if (keyring_find(k, id))
		return 0;
	if (k->n_keys >= KEYRING_MAX_KEYS)
		return error_set(err, -E2BIG, "%s: more than %d keys in the keyring", name,
			 KEYRING_MAX_KEYS);
	dup = strdup(name);
	if (!dup)
		return -ENOMEM;
	k->keys[k->n_keys++] = (struct keyring_key) {
		.name = dup,
	};
	memcpy(k->keys[k->n_keys - 1].id, id, sizeof(id));
	memcpy(k->keys[k->n_keys - 1].pub, der + sizeof(ed25519_spki), KEYRING_RAW_KEY_SIZE);
	return 0;
}

int keyring_add_file(struct keyring *k, const char *path, struct error *err)
{
	_cleanup_free_ char *buf = NULL;
	size_t len;
	int r;

	r = util_read_file(path, KEYRING_MAX_FILE_SIZE, &buf, &len);
	if (r == -EFBIG)
		return error_set(err, r, "%s: larger than %d bytes, not a public key",
			 path, KEYRING_MAX_FILE_SIZE);
	if (r < 0)
		return error_set(err, r, "%s: %s", path, strerror(-r));
	return keyring_add_pem(k, buf, len, path, err);
}

static bool has_key_suffix(const char *name)
{
	static const char *const suffixes[] = { ".pem", ".pub" };
	size_t n = strlen(name);

	if (name[0] == '.')
		return false;
	for (size_t i = 0; i < ELEMENTSOF(suffixes); i++) {
		size_t s = strlen(suffixes[i]);
		if (n > s && !strcmp(name + n - s, suffixes[i]))
			return true;
	}
	return false;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int keyring_dir_count(const char *dir)
{
	_cleanup_closedir_ DIR *d = opendir(dir);
	struct dirent *de;
	int n = 0;

	if (!d)
		return -errno;
	while ((de = readdir(d)))
		n += has_key_suffix(de->d_name);
	return n;
}

int keyring_load_dir(const char *dir, struct keyring **ret, struct error *err)
{
	_cleanup_closedir_ DIR *d = opendir(dir);
	_cleanup_(keyring_freep) struct keyring *k = NULL;
	char *names[KEYRING_MAX_KEYS * 2];
	size_t n = 0;
	struct dirent *de;
	int r = 0;

	if (!d) {
		r = -errno;
		return error_set(err, r, "keyring %s: %s", dir, strerror(-r));
	}
	r = keyring_new(&k);
	if (r < 0)
		return r;
	/* sorted, so that messages and key order do not depend on readdir order */
	while ((de = readdir(d))) {
		if (!has_key_suffix(de->d_name))
			continue;
		if (n >= ELEMENTSOF(names)) {
			r = -E2BIG;
			snprintf(err->msg, sizeof(err->msg), "keyring %s: too many key files (max %zu)",
				 dir, ELEMENTSOF(names));
			goto out;
		}
		if (asprintf(&names[n], "%s/%s", dir, de->d_name) < 0) {
			r = -ENOMEM;
			goto out;
		}
		n++;
	}
	qsort(names, n, sizeof(*names), cmp_str);
	for (size_t i = 0; i < n && r >= 0; i++)
		r = keyring_add_file(k, names[i], err);
	if (r >= 0 && k->n_keys == 0) {
		r = -ENOKEY;
		snprintf(err->msg, sizeof(err->msg), "keyring %s: no public keys (*.pem, *.pub)", dir);
	}
out:
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	if (r < 0)
		return r;
	*ret = TAKE_PTR(k);
	return 0;
}

int keyring_verify(const struct keyring_key *key, const void *msg, size_t len,
		   const uint8_t sig[KEYRING_SIG_SIZE])
{
	return DL_FN(hash_hogweed_sym, nettle_ed25519_sha512_verify)(key->pub, len, msg, sig) ?
		0 : -EKEYREJECTED;
}
