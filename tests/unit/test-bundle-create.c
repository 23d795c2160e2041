/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The writer: deterministic bundles, refusals, keys, the manifest as JSON. */
#include <stdbool.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "bundle-fixture.h"
#include "testlib.h"

/* ---- writer ---- */

TEST(test_create_deterministic_and_openssl_verifiable)
{
	struct bundle_create_result res;
	size_t l1, l2;
	struct spec sp = { .gzip_rootfs = true, .keys = { trusted }, .n_keys = 1 };
	uint8_t *a = make_bundle(&sp, &l1, &res), *b = make_bundle(&sp, &l2, NULL);
	char *mp = th_path("m.json"), *sp_ = th_path("m.sig"), *pub = th_path("ring/trusted.pub");

	assert_int_equal(l1, l2);
	assert_memory_equal(a, b, l1);
	assert_int_equal(res.manifest.total_size, l1);
	assert_true(res.has_squashfs[0]);
	assert_false(res.has_squashfs[1]);
	assert_int_equal(res.squashfs[0].compression, SQUASHFS_COMP_GZIP);
	assert_int_equal(res.manifest.images[0].size, rootfs_len);
	assert_true(res.manifest.images[0].stored_size < rootfs_len);
	assert_memory_equal(res.manifest.images[0].sha256, rootfs_sha, 32);
	assert_int_equal(res.manifest.images[1].offset,
			 res.manifest.images[0].offset + res.manifest.images[0].stored_size);

	/* the signature is plain Ed25519 over the manifest bytes (docs/bundle-format.md) */
	uint32_t ms = manifest_size(a);
	th_write(mp, a + BUNDLE_HEADER_SIZE, ms);
	th_write(sp_, a + BUNDLE_HEADER_SIZE + ms + KEYRING_ID_SIZE, KEYRING_SIG_SIZE);
	assert_int_equal(th_sh("openssl pkeyutl -verify -rawin -pubin -inkey %s -in %s -sigfile %s "
			       ">/dev/null", pub, mp, sp_), 0);
	free(a);
	free(b);
	free(mp);
	free(sp_);
	free(pub);
}

TEST(test_create_refusals)
{
	struct bundle_create_image img = { "rootfs", NULL, BUNDLE_IMAGE_SQUASHFS,
					   BUNDLE_COMPRESSION_NONE };
	struct bundle_create_params p = {
		.compatible = "x", .version = "1", .images = &img, .n_images = 1,
	};
	struct error err = {};
	int fd = open("/dev/null", O_WRONLY | O_CLOEXEC);

	img.path = kernel_path; /* not a squashfs */
	assert_int_equal(bundle_create(&p, fd, NULL, &err), -EBADMSG);
	assert_non_null(strstr(err.msg, "zImage: not a squashfs"));
	img.path = "/nonexistent/rootfs";
	assert_int_equal(bundle_create(&p, fd, NULL, &err), -ENOENT);
	assert_non_null(strstr(err.msg, "/nonexistent/rootfs"));
	img.path = rootfs_path;
	img.slot = "root/fs";
	assert_int_equal(bundle_create(&p, fd, NULL, &err), -EINVAL);
	img.slot = "rootfs";
	p.compatible = "has space";
	assert_int_equal(bundle_create(&p, fd, NULL, &err), -EBADMSG);
	assert_non_null(strstr(err.msg, "compatible"));
	p.compatible = "x";
	p.build_date = "yesterday";
	assert_int_equal(bundle_create(&p, fd, NULL, &err), -EBADMSG);
	p.build_date = NULL;
	p.keys = &untrusted;
	p.n_keys = 5;
	assert_int_equal(bundle_create(&p, fd, NULL, &err), -EINVAL);
	p.n_keys = 0;
	assert_int_equal(bundle_create(&p, fd, NULL, &err), 0);
	close(fd);
}

TEST(test_keygen)
{
	char *priv = th_path("kg.key"), *pub = th_path("kg.pub");
	struct error err = {};
	struct error kerr = {};
	_cleanup_keyring_ struct keyring *k = NULL;
	uint8_t id[KEYRING_ID_SIZE];
	struct stat st;
	void *key;

	assert_int_equal(bundle_create_keygen(priv, pub, id, &err), 0);
	assert_int_equal(stat(priv, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	assert_int_equal(bundle_create_keygen(priv, pub, NULL, &err), -EEXIST);
	assert_int_equal(keyring_new(&k), 0);
	assert_int_equal(keyring_add_file(k, pub, &kerr), 0);
	assert_memory_equal(keyring_get(k, 0)->id, id, KEYRING_ID_SIZE);
	assert_int_equal(bundle_create_key_load(pub, &key, &err), -EINVAL); /* public, not private */
	assert_int_equal(bundle_create_key_load(priv, &key, &err), 0);
	bundle_create_key_free(key);
	free(priv);
	free(pub);
}

TEST_FIXTURE(test_manifest_json, setup_gzip, teardown_signed)
{
	struct signed_fx *f = *state;
	struct seen s = { 0 };
	_cleanup_json_ struct json_object *j = NULL;
	struct json_object *v, *img;

	expect_read(&f->pol, f->b, f->len, 65536, 0, NULL, &s);
	assert_int_equal(bundle_manifest_to_json(&s.m, &j), 0);
	assert_true(json_object_object_get_ex(j, "trust", &v));
	assert_string_equal(json_object_get_string(v), "verified");
	assert_true(json_object_object_get_ex(j, "images", &v));
	assert_int_equal(json_object_array_length(v), 2);
	img = json_object_array_get_idx(v, 1);
	assert_true(json_object_object_get_ex(img, "compression", &v));
	assert_string_equal(json_object_get_string(v), "gzip");
	assert_true(json_object_object_get_ex(img, "size", &v));
	assert_int_equal(json_object_get_int64(v), kernel_len);
	seen_free(&s);
}

TEST_GROUP(setup, teardown);
