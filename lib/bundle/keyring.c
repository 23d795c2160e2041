/* Trusted Ed25519 public keys (see keyring.h). */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

#include "cleanup.h"
#include "cleanup_crypto.h"
#include "keyring.h"
#include "util.h"

struct keyring {
	struct keyring_key keys[KEYRING_MAX_KEYS];
	size_t n_keys;
};

static void BIO_freep(BIO **p) { BIO_free(*p); }

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
	for (size_t i = 0; i < k->n_keys; i++) {
		EVP_PKEY_free(k->keys[i].pkey);
		free(k->keys[i].name);
	}
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
	unsigned int n = 0;

	if (!EVP_Digest(raw, KEYRING_RAW_KEY_SIZE, ret, &n, EVP_sha256(), NULL) ||
	    n != KEYRING_ID_SIZE)
		return -EIO;
	return 0;
}

int keyring_key_id_pkey(void *pkey, uint8_t ret[KEYRING_ID_SIZE])
{
	uint8_t raw[KEYRING_RAW_KEY_SIZE];
	size_t len = sizeof(raw);

	if (!pkey || EVP_PKEY_get_id(pkey) != EVP_PKEY_ED25519)
		return -EINVAL;
	if (!EVP_PKEY_get_raw_public_key(pkey, raw, &len) || len != sizeof(raw))
		return -EINVAL;
	return keyring_key_id_raw(raw, ret);
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

/* Name the key type for a refusal message. */
static const char *pkey_type_name(EVP_PKEY *p)
{
	const char *n = EVP_PKEY_get0_type_name(p);

	return n ? n : "unknown";
}

int keyring_add_pem(struct keyring *k, const void *pem, size_t len, const char *name,
		    struct error *err)
{
	_cleanup_(BIO_freep) BIO *bio = NULL;
	_cleanup_(EVP_PKEY_freep) EVP_PKEY *pkey = NULL;
	uint8_t id[KEYRING_ID_SIZE];
	char *dup;

	if (len > KEYRING_MAX_FILE_SIZE || len > INT32_MAX)
		return error_set(err, -EFBIG, "%s: %zu bytes, too large for a public key file",
			 name, len);
	if (memmem(pem, len, "PRIVATE KEY-----", 16)) {
		snprintf(err->msg, sizeof(err->msg), "%s: contains a private key; a keyring holds "
			 "public keys only (openssl pkey -in KEY -pubout)", name);
		return -EINVAL;
	}
	bio = BIO_new_mem_buf(pem, (int)len);
	if (!bio)
		return -ENOMEM;
	pkey = PEM_read_bio_PUBKEY(bio, NULL, NULL, NULL);
	if (!pkey) {
		ERR_clear_error();
		return error_set(err, -EINVAL, "%s: not a PEM public key", name);
	}
	if (EVP_PKEY_get_id(pkey) != EVP_PKEY_ED25519)
		return error_set(err, -EINVAL, "%s: %s key, only Ed25519 keys are supported",
			 name, pkey_type_name(pkey));
	if (keyring_key_id_pkey(pkey, id) < 0)
		return error_set(err, -EINVAL, "%s: cannot read the raw Ed25519 key", name);
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
		.pkey = TAKE_PTR(pkey),
	};
	memcpy(k->keys[k->n_keys - 1].id, id, sizeof(id));
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
	_cleanup_(EVP_MD_CTX_freep) EVP_MD_CTX *ctx = EVP_MD_CTX_new();

	if (!ctx)
		return -ENOMEM;
	if (EVP_DigestVerifyInit(ctx, NULL, NULL, NULL, key->pkey) != 1)
		return -EIO;
	if (EVP_DigestVerify(ctx, sig, KEYRING_SIG_SIZE, msg, len) != 1) {
		ERR_clear_error();
		return -EKEYREJECTED;
	}
	return 0;
}
