/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* libcrypto, loaded when it is first used instead of when a program
 * starts: only the host-side commands use it (signing keys: PEM private
 * keys, keygen, bundle signatures). Hashing and signature verification,
 * what a device does, use nettle (hash.h): mapping libcrypto.so.3 costs
 * 1.5 MiB of resident memory even when nothing calls it (relocations,
 * OpenSSL's constructors), 2.8 MiB once it hashed. The OpenSSL functions
 * flashd uses are defined here under their own names and call libcrypto
 * through dlopen() on first use.
 *
 * A missing libcrypto is a broken installation, as a missing library at
 * start-up would be: the call aborts with a message (the dynamic loader
 * would not have started the program at all). */
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

#include "dl.h"

static void *crypto_dl_sym(const char *name)
{
	static void *lib;

	return dl_sym(&lib, CRYPTO_SONAME, name);
}

#define CRYPTO_DL(ret, name, params, args) DL_FORWARD(crypto_dl_sym, ret, name, params, args)
#define CRYPTO_DL_VOID(name, params, args) DL_FORWARD_VOID(crypto_dl_sym, name, params, args)

CRYPTO_DL_VOID(ERR_clear_error, (void), ())
CRYPTO_DL(EVP_MD_CTX *, EVP_MD_CTX_new, (void), ())
CRYPTO_DL_VOID(EVP_MD_CTX_free, (EVP_MD_CTX *ctx), (ctx))
CRYPTO_DL(int, EVP_DigestSignInit, (EVP_MD_CTX *ctx, EVP_PKEY_CTX **pctx, const EVP_MD *type,
				    ENGINE *e, EVP_PKEY *pkey), (ctx, pctx, type, e, pkey))
CRYPTO_DL(int, EVP_DigestSign, (EVP_MD_CTX *ctx, unsigned char *sigret, size_t *siglen,
				const unsigned char *tbs, size_t tbslen),
	  (ctx, sigret, siglen, tbs, tbslen))
CRYPTO_DL_VOID(EVP_PKEY_free, (EVP_PKEY *pkey), (pkey))
CRYPTO_DL(const char *, EVP_PKEY_get0_type_name, (const EVP_PKEY *key), (key))
CRYPTO_DL(int, EVP_PKEY_get_id, (const EVP_PKEY *pkey), (pkey))
CRYPTO_DL(int, EVP_PKEY_get_raw_public_key, (const EVP_PKEY *pkey, unsigned char *pub,
					     size_t *len), (pkey, pub, len))
CRYPTO_DL(EVP_PKEY *, PEM_read_PrivateKey, (FILE *fp, EVP_PKEY **x, pem_password_cb *cb, void *u),
	  (fp, x, cb, u))
CRYPTO_DL(int, PEM_write_PUBKEY, (FILE *fp, const EVP_PKEY *x), (fp, x))
CRYPTO_DL(int, PEM_write_PrivateKey, (FILE *fp, const EVP_PKEY *x, const EVP_CIPHER *enc,
				      const unsigned char *kstr, int klen, pem_password_cb *cb,
				      void *u), (fp, x, enc, kstr, klen, cb, u))

/* Variadic in OpenSSL; flashd only makes keys that take no parameter
 * (ED25519), so none is passed on. */
EVP_PKEY *EVP_PKEY_Q_keygen(OSSL_LIB_CTX *libctx, const char *propq, const char *type, ...)
{
	return DL_FN(crypto_dl_sym, EVP_PKEY_Q_keygen)(libctx, propq, type);
}
