/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <stdbool.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "bundle-test-helpers.h"
#include "keyring.h"
#include "testlib.h"

/* Keys are made by the openssl command line, so the keyring is checked
 * against an independent implementation. */
static char *kdir;

static int setup(void **state)
{
	if (th_sh("openssl version >/dev/null 2>&1") != 0) {
		fprintf(stderr, "openssl command missing: skipping\n");
		exit(77);
	}
	kdir = th_path("keys");
	assert_int_equal(th_sh("mkdir -p %s/ring %s/priv && cd %s && "
			       "openssl genpkey -algorithm ed25519 -out priv/a.key && "
			       "openssl genpkey -algorithm ed25519 -out priv/b.key && "
			       "openssl pkey -in priv/a.key -pubout -out ring/a.pem && "
			       "openssl pkey -in priv/b.key -pubout -out ring/b.pub && "
			       "echo not a key > ring/README && cp ring/a.pem ring/.hidden.pem",
			       kdir, kdir, kdir), 0);
	return 0;
}

static int teardown(void **state)
{
	free(kdir);
	return 0;
}

/* sha256 of the raw key = last 32 bytes of the DER SubjectPublicKeyInfo */
static void expected_id(const char *pub, char out[65])
{
	char cmd[512];
	FILE *p;

	snprintf(cmd, sizeof(cmd), "openssl pkey -pubin -in %s -outform DER | tail -c 32 | "
		 "sha256sum | cut -c1-64", pub);
	p = popen(cmd, "r");
	assert_non_null(p);
	assert_non_null(fgets(out, 65, p));
	pclose(p);
}

TEST(test_load_dir)
{
	_cleanup_keyring_ struct keyring *k = NULL;
	struct error err = {};
	char path[256], want[65], got[65];

	snprintf(path, sizeof(path), "%s/ring", kdir);
	assert_int_equal(keyring_load_dir(path, &k, &err), 0);
	/* a.pem and b.pub; README and the hidden file are skipped */
	assert_int_equal(keyring_count(k), 2);
	assert_non_null(strstr(keyring_get(k, 0)->name, "/ring/a.pem"));
	assert_non_null(strstr(keyring_get(k, 1)->name, "/ring/b.pub"));
	assert_null(keyring_get(k, 2));

	snprintf(path, sizeof(path), "%s/ring/a.pem", kdir);
	expected_id(path, want);
	keyring_id_to_hex(keyring_get(k, 0)->id, got, sizeof(got));
	assert_string_equal(got, want);
	assert_ptr_equal(keyring_find(k, keyring_get(k, 0)->id), keyring_get(k, 0));

	uint8_t other[KEYRING_ID_SIZE] = { 1, 2, 3 };
	assert_null(keyring_find(k, other));
}

TEST(test_duplicate_key_counted_once)
{
	_cleanup_keyring_ struct keyring *k = NULL;
	struct error err = {};
	char a[256];

	snprintf(a, sizeof(a), "%s/ring/a.pem", kdir);
	assert_int_equal(keyring_new(&k), 0);
	assert_int_equal(keyring_add_file(k, a, &err), 0);
	assert_int_equal(keyring_add_file(k, a, &err), 0);
	assert_int_equal(keyring_count(k), 1);
}

static void expect_dir_error(const char *setup_cmd, int code, const char *msg)
{
	_cleanup_keyring_ struct keyring *k = NULL;
	struct error err = {};
	char dir[256];

	snprintf(dir, sizeof(dir), "%s/bad", kdir);
	assert_int_equal(th_sh("rm -rf %s && mkdir %s && cd %s && %s", dir, dir, kdir, setup_cmd), 0);
	assert_int_equal(keyring_load_dir(dir, &k, &err), code);
	assert_null(k);
	if (!strstr(err.msg, msg))
		fail_msg("message \"%s\" lacks \"%s\"", err.msg, msg);
}

TEST(test_refusals)
{
	expect_dir_error("true", -ENOKEY, "no public keys");
	expect_dir_error("openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 "
			 "-out bad/ec.key && openssl pkey -in bad/ec.key -pubout -out bad/ec.pem",
			 -EINVAL, "bad/ec.pem: EC key, only Ed25519");
	expect_dir_error("cp priv/a.key bad/oops.pem", -EINVAL, "bad/oops.pem: contains a private key");
	expect_dir_error("echo garbage > bad/x.pub", -EINVAL, "bad/x.pub: not a PEM public key");
	expect_dir_error("head -c 20000 /dev/zero > bad/big.pem", -EFBIG, "bad/big.pem");

	_cleanup_keyring_ struct keyring *k = NULL;
	struct error err = {};
	assert_int_equal(keyring_load_dir("/nonexistent/keys", &k, &err), -ENOENT);
	assert_non_null(strstr(err.msg, "/nonexistent/keys"));
}

/* keyring.c reads the PEM and the DER itself: line ends, other key
 * types, and damaged keys, each with the message that names them. */
TEST(test_pem_forms)
{
	_cleanup_keyring_ struct keyring *k = NULL;
	struct error err = {};
	char path[256], want[65], got[65];

	expect_dir_error("openssl genpkey -algorithm ed448 | openssl pkey -pubout -out bad/k.pem",
			 -EINVAL, "bad/k.pem: ED448 key, only Ed25519");
	expect_dir_error("openssl genpkey -algorithm rsa -pkeyopt rsa_keygen_bits:1024 | "
			 "openssl pkey -pubout -out bad/k.pem", -EINVAL, "bad/k.pem: RSA key");
	expect_dir_error("sed '2s/....$//' ring/a.pem > bad/k.pem", -EINVAL,
			 "bad/k.pem: not a well-formed Ed25519 public key");
	expect_dir_error("sed '2s/^./*/' ring/a.pem > bad/k.pem", -EINVAL,
			 "bad/k.pem: not a PEM public key");
	expect_dir_error("sed '2s/=$/===/' ring/a.pem > bad/k.pem", -EINVAL,
			 "bad/k.pem: not a PEM public key");
	expect_dir_error("sed '2s/^\\(....\\)/\\1\\x00/' ring/a.pem > bad/k.pem", -EINVAL,
			 "bad/k.pem: not a PEM public key");
	expect_dir_error("head -2 ring/a.pem > bad/k.pem", -EINVAL, "bad/k.pem: not a PEM public key");
	expect_dir_error(": > bad/k.pem", -EINVAL, "bad/k.pem: not a PEM public key");

	/* CRLF line ends and text around the block, as mail and editors leave them */
	assert_int_equal(th_sh("cd %s && rm -rf crlf && mkdir crlf && (echo 'Subject: key'; "
			       "sed 's/$/\\r/' ring/a.pem; echo bye) > crlf/a.pem", kdir), 0);
	snprintf(path, sizeof(path), "%s/crlf", kdir);
	assert_int_equal(keyring_load_dir(path, &k, &err), 0);
	snprintf(path, sizeof(path), "%s/ring/a.pem", kdir);
	expected_id(path, want);
	keyring_id_to_hex(keyring_get(k, 0)->id, got, sizeof(got));
	assert_string_equal(got, want);
}

TEST(test_verify_openssl_signature)
{
	_cleanup_keyring_ struct keyring *k = NULL;
	struct error err = {};
	const char msg[] = "{\"format_major\":1}";
	char path[256];
	uint8_t *sig;
	size_t len;

	snprintf(path, sizeof(path), "%s/msg", kdir);
	th_write(path, msg, strlen(msg));
	assert_int_equal(th_sh("cd %s && openssl pkeyutl -sign -rawin -inkey priv/a.key -in msg "
			       "-out msg.sig", kdir), 0);
	snprintf(path, sizeof(path), "%s/msg.sig", kdir);
	sig = th_read(path, &len);
	assert_int_equal(len, KEYRING_SIG_SIZE);

	snprintf(path, sizeof(path), "%s/ring", kdir);
	assert_int_equal(keyring_load_dir(path, &k, &err), 0);
	const struct keyring_key *a = keyring_get(k, 0), *b = keyring_get(k, 1);
	assert_int_equal(keyring_verify(a, msg, strlen(msg), sig), 0);
	/* other key, other message, flipped signature bit */
	assert_int_equal(keyring_verify(b, msg, strlen(msg), sig), -EKEYREJECTED);
	assert_int_equal(keyring_verify(a, msg, strlen(msg) - 1, sig), -EKEYREJECTED);
	sig[10] ^= 0x01;
	assert_int_equal(keyring_verify(a, msg, strlen(msg), sig), -EKEYREJECTED);
	free(sig);
}

TEST_GROUP(setup, teardown);
