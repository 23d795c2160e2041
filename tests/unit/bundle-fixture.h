/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The fixture of the test-bundle* programs (test-bundle: reading, trust,
 * policy; -craft: hand-made bundles; -create: the writer; -index: the
 * block-hash index): keys, images, bundles built and read. Header-only,
 * static, as bundle-test-helpers.h; each program's group fixture is
 * TEST_GROUP(setup, teardown). */
#pragma once
#include <stdbool.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <json-c/json.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <zlib.h>

#include "bundle-test-helpers.h"
#include "bundle.h"
#include "bundle_create.h"
#include "bundle_reader.h"
#include "cleanup.h"
#include "cleanup_json.h"
#include "testlib.h"

/* Fixture: a trusted key (bundle_keygen), an untrusted one (openssl
 * command line), a keyring holding only the trusted public key, a real
 * squashfs rootfs and a raw kernel image. */
static char *rootfs_path, *kernel_path;
static void *trusted, *untrusted;
static struct keyring *ring;
static uint8_t rootfs_sha[32], kernel_sha[32];
static size_t rootfs_len, kernel_len;

static inline void sha256(const void *p, size_t n, uint8_t out[32])
{
	unsigned len;

	assert_int_equal(EVP_Digest(p, n, out, &len, EVP_sha256(), NULL), 1);
}

static inline int setup(void **state)
{
	uint8_t *buf;

	rootfs_path = th_make_squashfs("rootfs.sqfs", "gzip", 384, NULL);
	if (!rootfs_path || th_sh("openssl version >/dev/null 2>&1") != 0) {
		fprintf(stderr, "mksquashfs or openssl missing: skipping\n");
		exit(77);
	}
	th_keys_new(true, &trusted, &untrusted, &ring);

	kernel_path = th_path("zImage");
	kernel_len = 300 * 1024 + 17;
	buf = malloc(kernel_len);
	th_fill(buf, kernel_len, 99);
	th_write(kernel_path, buf, kernel_len);
	sha256(buf, kernel_len, kernel_sha);
	free(buf);
	buf = th_read(rootfs_path, &rootfs_len);
	sha256(buf, rootfs_len, rootfs_sha);
	free(buf);
	setenv("SOURCE_DATE_EPOCH", "1767225600", 1); /* 2026-01-01 */
	return 0;
}

static inline int teardown(void **state)
{
	th_keys_free(trusted, untrusted, ring);
	free(rootfs_path);
	free(kernel_path);
	return 0;
}

/* ---- building bundles ---- */

struct spec {
	bool gzip_rootfs, gzip_kernel, no_kernel;
	void *keys[3];
	size_t n_keys;
	const char *compatible;
};

static inline uint8_t *make_bundle(const struct spec *s, size_t *ret_len,
				   struct bundle_create_result *res)
{
	struct bundle_create_image imgs[] = {
		{ "rootfs", rootfs_path, BUNDLE_IMAGE_SQUASHFS,
		  s->gzip_rootfs ? BUNDLE_COMPRESSION_GZIP : BUNDLE_COMPRESSION_NONE },
		{ "kernel", kernel_path, BUNDLE_IMAGE_RAW,
		  s->gzip_kernel ? BUNDLE_COMPRESSION_GZIP : BUNDLE_COMPRESSION_NONE },
	};
	struct bundle_create_params p = {
		.compatible = s->compatible ? s->compatible : "acme,board-v1",
		.version = "2026.12.1",
		.description = "test bundle",
		.images = imgs,
		.n_images = s->no_kernel ? 1 : 2,
		.keys = s->keys,
		.n_keys = s->n_keys,
	};
	struct error err = {};
	char *out = th_path("out.fbd");
	int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	uint8_t *data;
	int r;

	assert_true(fd >= 0);
	r = bundle_create(&p, fd, res, &err);
	if (r < 0)
		fail_msg("bundle_create: %d %s", r, err.msg);
	close(fd);
	data = th_read(out, ret_len);
	free(out);
	return data;
}

static inline uint8_t *signed_bundle(bool gzip, size_t *len)
{
	struct spec s = { .gzip_rootfs = gzip, .gzip_kernel = gzip, .keys = { trusted }, .n_keys = 1 };

	return make_bundle(&s, len, NULL);
}

/* ---- reading: a collector that records what the callbacks saw ---- */

struct seen {
	unsigned manifests, begins, ends;
	unsigned data_calls;
	struct bundle_manifest m;
	EVP_MD_CTX *sha[BUNDLE_MAX_IMAGES];
	uint64_t bytes[BUNDLE_MAX_IMAGES];
	uint8_t md[BUNDLE_MAX_IMAGES][32];
	char order[256];
	int stop_after_manifest;
	int fail_data;                  /* return this from image_data */
};

static inline int on_manifest(void *u, const struct bundle_manifest *m, struct error *err)
{
	struct seen *s = u;

	s->manifests++;
	s->m = *m;
	strcat(s->order, "M");
	return s->stop_after_manifest;
}

static inline int on_begin(void *u, const struct bundle_image *img, struct error *err)
{
	struct seen *s = u;

	s->begins++;
	strcat(s->order, "B");
	s->sha[img->index] = EVP_MD_CTX_new();
	EVP_DigestInit_ex(s->sha[img->index], EVP_sha256(), NULL);
	return 0;
}

static inline int on_data(void *u, const struct bundle_image *img, const void *buf, size_t len,
			  struct error *err)
{
	struct seen *s = u;

	assert_true(len > 0);
	s->data_calls++;
	if (s->fail_data)
		return s->fail_data;
	s->bytes[img->index] += len;
	EVP_DigestUpdate(s->sha[img->index], buf, len);
	return 0;
}

static inline int on_end(void *u, const struct bundle_image *img, struct error *err)
{
	struct seen *s = u;
	unsigned n;

	s->ends++;
	strcat(s->order, "E");
	EVP_DigestFinal_ex(s->sha[img->index], s->md[img->index], &n);
	return 0;
}

static const struct bundle_reader_ops collect_ops = {
	.manifest = on_manifest, .image_begin = on_begin, .image_data = on_data, .image_end = on_end,
};

static inline void seen_free(struct seen *s)
{
	for (size_t i = 0; i < BUNDLE_MAX_IMAGES; i++)
		EVP_MD_CTX_free(s->sha[i]);
}

static inline struct bundle_policy default_policy(void)
{
	return (struct bundle_policy) { .keyring = ring };
}

/* Feed data in chunks of `chunk` bytes, then finish; returns the first
 * error (or 0) and fills err. */
static inline int feed_all(const struct bundle_policy *pol, const uint8_t *data, size_t len,
			   size_t chunk, struct seen *s, struct error *err, size_t *ret_peak)
{
	_cleanup_bundle_reader_ struct bundle_reader *r = NULL;
	int ret = 0;

	assert_int_equal(bundle_reader_new(pol, &collect_ops, s, &r), 0);
	for (size_t off = 0; off < len && ret == 0; off += chunk)
		ret = bundle_reader_feed(r, data + off, MIN(chunk, len - off), err);
	if (ret == 0 || ret == BUNDLE_STOP)
		ret = bundle_reader_finish(r, err);
	if (ret_peak)
		*ret_peak = bundle_reader_mem_peak(r);
	if (ret == 0 && s->stop_after_manifest == 0) {
		assert_true(bundle_reader_done(r));
		assert_int_equal(bundle_reader_offset(r), len);
	}
	return ret;
}

/* data read whole under pol, chunk bytes at a time: accepted (code 0) or
 * refused with code and an error that holds msg (NULL: any); s has what
 * the callbacks saw (the caller's to set up and to seen_free()). */
static inline void expect_read(const struct bundle_policy *pol, const uint8_t *data, size_t len,
			       size_t chunk, int code, const char *msg, struct seen *s)
{
	struct error err = {};
	int r = feed_all(pol, data, len, chunk, s, &err, NULL);

	if (r != code || (msg && !strstr(err.msg, msg)))
		fail_msg("chunk %zu: got %d \"%s\", expected %d \"%s\"", chunk, r, err.msg, code,
			 msg ? msg : "");
}

static inline void expect_refusal(const struct bundle_policy *pol, const uint8_t *data,
				  size_t len, int code, const char *msg)
{
	struct seen s = { 0 };

	/* odd chunk size: refusals must not depend on chunk boundaries */
	expect_read(pol, data, len, 1021, code, msg, &s);
	seen_free(&s);
}

/* A signed bundle of the two images (fixture state), and the default policy */
struct signed_fx {
	struct bundle_policy pol;
	uint8_t *b;
	size_t len;
};

static inline int setup_signed(void **state, bool gzip)
{
	struct signed_fx *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	f->pol = default_policy();
	f->b = signed_bundle(gzip, &f->len);
	*state = f;
	return 0;
}

static inline int setup_plain(void **state) { return setup_signed(state, false); }
static inline int setup_gzip(void **state) { return setup_signed(state, true); }

static inline int teardown_signed(void **state)
{
	_cleanup_free_ struct signed_fx *f = *state;

	free(f->b);
	return 0;
}

static inline uint32_t manifest_size(const uint8_t *b)
{
	return b[12] | b[13] << 8 | b[14] << 16 | (uint32_t)b[15] << 24;
}

/* sha256 of "hello" */
#define HELLO_SHA "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824"
