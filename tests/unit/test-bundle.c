/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Bundles read: round trips, the memory bound, trust, the payload, the policy. */
#include <stdbool.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "bundle-fixture.h"
#include "testlib.h"

/* ---- round trips ---- */

static void check_roundtrip(const uint8_t *data, size_t len, size_t chunk)
{
	struct bundle_policy pol = default_policy();
	struct error err = {};
	struct seen s = { 0 };
	int r = feed_all(&pol, data, len, chunk, &s, &err, NULL);

	if (r != 0)
		fail_msg("chunk %zu: %d %s", chunk, r, err.msg);
	assert_string_equal(s.order, "MBEBE");
	assert_int_equal(s.m.trust, BUNDLE_TRUST_VERIFIED);
	assert_true(s.m.is_signed);
	assert_non_null(strstr(s.m.signer_name, "ring/trusted.pub"));
	assert_string_equal(s.m.compatible, "acme,board-v1");
	assert_string_equal(s.m.build_date, "2026-01-01T00:00:00Z");
	assert_int_equal(s.m.total_size, len);
	assert_int_equal(s.bytes[0], rootfs_len);
	assert_int_equal(s.bytes[1], kernel_len);
	assert_memory_equal(s.md[0], rootfs_sha, 32);
	assert_memory_equal(s.md[1], kernel_sha, 32);
	seen_free(&s);
}

TEST(test_roundtrip_chunk_sizes)
{
	static const size_t chunks[] = { 1, 3, 7, 31, 95, 97, 4093, 65536, 65537, 1 << 20 };
	size_t len;

	for (int gzip = 0; gzip < 2; gzip++) {
		uint8_t *b = signed_bundle(gzip, &len);
		for (size_t i = 0; i < sizeof(chunks) / sizeof(chunks[0]); i++)
			check_roundtrip(b, len, chunks[i]);
		check_roundtrip(b, len, len);
		free(b);
	}
}

TEST_FIXTURE(test_random_chunks, setup_gzip, teardown_signed)
{
	struct signed_fx *f = *state;
	uint32_t x = 12345;

	for (int round = 0; round < 5; round++) {
		_cleanup_bundle_reader_ struct bundle_reader *r = NULL;
		struct error err = {};
		struct seen s = { 0 };
		size_t off = 0;

		assert_int_equal(bundle_reader_new(&f->pol, &collect_ops, &s, &r), 0);
		while (off < f->len) {
			x = x * 1103515245 + 12345;
			size_t n = MIN((size_t)(x >> 8) % 20000, f->len - off); /* includes 0 */
			assert_int_equal(bundle_reader_feed(r, f->b + off, n, &err), 0);
			off += n;
		}
		assert_int_equal(bundle_reader_finish(r, &err), 0);
		assert_memory_equal(s.md[0], rootfs_sha, 32);
		assert_memory_equal(s.md[1], kernel_sha, 32);
		seen_free(&s);
	}
}

TEST(test_read_fd_from_pipe)
{
	_cleanup_bundle_reader_ struct bundle_reader *r = NULL;
	struct bundle_policy pol = default_policy();
	struct error err = {};
	struct seen s = { 0 };
	int fds[2];
	size_t len;
	uint8_t *b = signed_bundle(true, &len);
	pid_t pid;
	int st;

	assert_int_equal(pipe(fds), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(fds[0]);
		/* small writes, so the reader sees many partial reads */
		for (size_t off = 0; off < len; off += 777)
			if (write(fds[1], b + off, MIN(777, len - off)) < 0)
				_exit(1);
		_exit(0);
	}
	close(fds[1]);
	assert_int_equal(bundle_reader_new(&pol, &collect_ops, &s, &r), 0);
	assert_int_equal(bundle_reader_read_fd(r, fds[0], &err), 0);
	close(fds[0]);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_int_equal(s.ends, 2);
	assert_memory_equal(s.md[0], rootfs_sha, 32);
	seen_free(&s);
	free(b);
}

/* ---- memory bound ---- */

static size_t peak_for_image(size_t mib, bool gzip, bool no_index)
{
	struct bundle_create_image img = { "kernel", NULL, BUNDLE_IMAGE_RAW,
					   gzip ? BUNDLE_COMPRESSION_GZIP : BUNDLE_COMPRESSION_NONE };
	struct bundle_create_params p = {
		.compatible = "acme,board-v1", .version = "1", .images = &img, .n_images = 1,
		.keys = &trusted, .n_keys = 1, .gzip_level = 1, .no_index = no_index,
	};
	struct bundle_policy pol = default_policy();
	struct error err = {};
	struct seen s = { 0 };
	char *in = th_path("big.img"), *out = th_path("big.fbd");
	uint8_t *buf = malloc(mib << 20), *data;
	size_t len, peak;
	int fd;

	th_fill(buf, mib << 20, 5);
	th_write(in, buf, mib << 20);
	free(buf);
	img.path = in;
	fd = open(out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	assert_int_equal(bundle_create(&p, fd, NULL, &err), 0);
	close(fd);
	data = th_read(out, &len);
	assert_int_equal(feed_all(&pol, data, len, 65536, &s, &err, &peak), 0);
	assert_int_equal(s.bytes[0], mib << 20);
	seen_free(&s);
	free(data);
	free(in);
	free(out);
	return peak;
}

TEST(test_memory_bounded)
{
	size_t gz1 = peak_for_image(1, true, true), gz16 = peak_for_image(16, true, true);
	size_t raw1 = peak_for_image(1, false, true), raw16 = peak_for_image(16, false, true);
	size_t ix1 = peak_for_image(1, false, false), ix16 = peak_for_image(16, false, false);

	printf("reader peak heap: gzip 1 MiB %zu B, 16 MiB %zu B; raw 1 MiB %zu B, 16 MiB %zu B; "
	       "with index 1 MiB %zu B, 16 MiB %zu B\n", gz1, gz16, raw1, raw16, ix1, ix16);
	/* format 1.0: independent of the image size (the manifest differs by a few digits) */
	assert_true(gz16 <= gz1 + 16);
	assert_true(raw16 <= raw1 + 16);
	/* inflate window + state + one output chunk + manifest + reader */
	assert_true(gz16 < 160 * 1024);
	assert_true(raw16 < 16 * 1024);
	/* format 3.0 adds the index: 32 bytes per 128 KiB block and 16 per
	 * chunk (at most one per CHUNK_MIN), nothing else */
	assert_true(ix16 <= raw16 + 16 * (8 * BUNDLE_HASH_SIZE +
					  (1 << 20) / CHUNK_MIN * CHUNK_ENTRY_SIZE) + 256);
	assert_true(ix16 >= 16 * 8 * BUNDLE_HASH_SIZE);
	assert_true(ix1 < ix16);
}

/* ---- trust ---- */

TEST(test_unsigned)
{
	struct spec sp = { .no_kernel = true };
	struct bundle_policy pol = default_policy();
	struct seen s = { 0 };
	size_t len;
	uint8_t *b = make_bundle(&sp, &len, NULL);

	expect_refusal(&pol, b, len, -ENOKEY, "not signed");
	pol.allow_unsigned = true;
	expect_read(&pol, b, len, 4096, 0, NULL, &s);
	assert_int_equal(s.m.trust, BUNDLE_TRUST_UNSIGNED);
	assert_false(s.m.is_signed);
	assert_int_equal(s.m.n_signatures, 0);
	assert_int_equal(s.ends, 1);
	seen_free(&s);
	free(b);
}

TEST(test_unknown_key)
{
	struct spec sp = { .no_kernel = true, .keys = { untrusted }, .n_keys = 1 };
	struct bundle_policy pol = default_policy();
	struct seen s = { 0 };
	size_t len;
	uint8_t *b = make_bundle(&sp, &len, NULL);

	expect_refusal(&pol, b, len, -ENOKEY, "unknown key");
	pol.keyring = NULL; /* no keyring at all: same refusal */
	expect_refusal(&pol, b, len, -ENOKEY, "0 trusted key");
	pol.keyring = ring;
	pol.allow_unsigned = true;
	expect_read(&pol, b, len, 4096, 0, NULL, &s);
	assert_int_equal(s.m.trust, BUNDLE_TRUST_UNKNOWN_KEY);
	assert_false(s.m.is_signed);
	assert_int_equal(s.m.n_signatures, 1);
	seen_free(&s);
	free(b);
}

TEST(test_two_signatures)
{
	struct spec sp = { .no_kernel = true, .keys = { untrusted, trusted }, .n_keys = 2 };
	struct bundle_policy pol = default_policy();
	struct seen s = { 0 };
	size_t len;
	uint8_t *b = make_bundle(&sp, &len, NULL);

	expect_read(&pol, b, len, 4096, 0, NULL, &s);
	assert_int_equal(s.m.trust, BUNDLE_TRUST_VERIFIED);
	assert_int_equal(s.m.n_signatures, 2);
	assert_memory_equal(s.m.signer_id, keyring_get(ring, 0)->id, KEYRING_ID_SIZE);
	seen_free(&s);
	free(b);
}

TEST_FIXTURE(test_wrong_signature, setup_plain, teardown_signed)
{
	struct signed_fx *f = *state;
	size_t sig = BUNDLE_HEADER_SIZE + manifest_size(f->b) + KEYRING_ID_SIZE;

	f->b[sig + 5] ^= 0x20;
	expect_refusal(&f->pol, f->b, f->len, -EKEYREJECTED, "does not verify");
	/* a bad signature by a trusted key is refused even when unsigned is allowed */
	f->pol.allow_unsigned = true;
	expect_refusal(&f->pol, f->b, f->len, -EKEYREJECTED, "does not verify");
}

TEST_FIXTURE(test_tampered_manifest, setup_plain, teardown_signed)
{
	struct signed_fx *f = *state;
	char *v = memmem(f->b, f->len, "2026.12.1", 9);
	struct seen s = { 0 };

	assert_non_null(v);
	v[8] = '2';  /* same length, still valid JSON */
	expect_read(&f->pol, f->b, f->len, 100, -EKEYREJECTED, "manifest tampered", &s);
	assert_int_equal(s.manifests, 0); /* nothing reached the caller */
	assert_int_equal(s.data_calls, 0);
}

/* ---- payload ---- */

TEST(test_tampered_payload)
{
	struct bundle_policy pol = default_policy();
	size_t len;

	for (int gzip = 0; gzip < 2; gzip++) {
		uint8_t *b = signed_bundle(gzip, &len);
		struct seen s = { 0 };
		struct error err = {};
		struct bundle_manifest m;
		uint32_t ms = manifest_size(b);
		size_t kernel_off;
		int r;

		assert_int_equal(bundle_manifest_parse(b + BUNDLE_HEADER_SIZE, ms, &m, &err), 0);
		bundle_manifest_layout(&m, 1);
		kernel_off = m.images[1].offset;
		b[kernel_off + m.images[1].stored_size / 2] ^= 0x04;
		r = feed_all(&pol, b, len, 65536, &s, &err, NULL);
		assert_int_equal(r, -EBADMSG);
		/* image 0 completed; image 1 did not reach image_end */
		assert_string_equal(s.order, "MBEB");
		assert_non_null(strstr(err.msg, "image 1 \"kernel\""));
		/* the signed index names the block, before it reaches the caller whole */
		if (!gzip)
			assert_non_null(strstr(err.msg, "does not match its sha256 in the signed index"));
		seen_free(&s);
		free(b);
	}
}

TEST_FIXTURE(test_tampered_superblock, setup_plain, teardown_signed)
{
	struct signed_fx *f = *state;
	uint32_t ms = manifest_size(f->b);
	struct seen s = { 0 };
	struct error err = {};

	struct bundle_manifest m;

	assert_int_equal(bundle_manifest_parse(f->b + BUNDLE_HEADER_SIZE, ms, &m, &err), 0);
	bundle_manifest_layout(&m, 1);
	f->b[m.payload_offset] = 'X';
	expect_read(&f->pol, f->b, f->len, 13, -EBADMSG, "image 0 \"rootfs\": not a squashfs", &s);
	assert_int_equal(s.data_calls, 0); /* not one byte reached "flash" */
	seen_free(&s);
}

TEST_FIXTURE(test_truncated, setup_gzip, teardown_signed)
{
	struct signed_fx *f = *state;
	uint32_t ms = manifest_size(f->b);
	struct bundle_manifest m;
	size_t ix;

	assert_int_equal(bundle_manifest_parse(f->b + BUNDLE_HEADER_SIZE, ms, &m, NULL), 0);
	bundle_manifest_layout(&m, 1);
	ix = m.index_size;
	const size_t cuts[] = { 0, 1, 31, 32, 33, 32 + ms - 1, 32 + ms, 32 + ms + 50,
				32 + ms + 96, 32 + ms + 96 + ix - 1, 32 + ms + 96 + ix,
				32 + ms + 96 + ix + 1000, f->len / 2, f->len - 1 };
	const char *where[] = { "empty", "header", "header", "manifest", "manifest", "manifest",
				"signatures", "signatures", "block index", "block index", "image 0",
				"image 0", "image", "image 1" };

	for (size_t i = 0; i < sizeof(cuts) / sizeof(cuts[0]); i++) {
		struct seen s = { 0 };
		struct error err = {};
		int r = feed_all(&f->pol, f->b, cuts[i], 4096, &s, &err, NULL);

		if (r != -ENODATA || !strstr(err.msg, where[i]))
			fail_msg("cut at %zu: %d \"%s\", expected \"%s\"", cuts[i], r, err.msg,
				 where[i]);
		assert_int_equal(s.ends == 2, false);
		seen_free(&s);
	}
}

TEST_FIXTURE(test_trailing_data, setup_plain, teardown_signed)
{
	struct signed_fx *f = *state;
	uint8_t *b2 = malloc(f->len + 3);

	memcpy(b2, f->b, f->len);
	memcpy(b2 + f->len, "xyz", 3);
	expect_refusal(&f->pol, b2, f->len + 3, -EBADMSG, "trailing data");
	free(b2);
}

/* ---- policy ---- */

TEST_FIXTURE(test_compatible, setup_plain, teardown_signed)
{
	struct signed_fx *f = *state;
	struct seen s = { 0 };
	struct error err = {};

	f->pol.compatible = "acme,board-v2";
	expect_refusal(&f->pol, f->b, f->len, -EMEDIUMTYPE,
		       "bundle is for \"acme,board-v1\", this system is \"acme,board-v2\"");
	f->pol.compatible = "acme,board-v1";
	expect_read(&f->pol, f->b, f->len, 8192, 0, NULL, &s);
	assert_int_equal(bundle_manifest_check(&s.m, "other", NULL, 0, &err), -EMEDIUMTYPE);
	assert_int_equal(bundle_manifest_check(&s.m, NULL, NULL, 0, &err), 0);
	seen_free(&s);
}

TEST_FIXTURE(test_slot_limits, setup_gzip, teardown_signed)
{
	struct signed_fx *f = *state;
	struct bundle_slot_limit fits[] = { { "rootfs", rootfs_len, "squashfs" },
					    { "kernel", 4 << 20, NULL } };
	struct bundle_slot_limit small[] = { { "rootfs", rootfs_len - 1, NULL },
					     { "kernel", 4 << 20, NULL } };
	struct bundle_slot_limit no_kernel[] = { { "rootfs", 8 << 20, NULL } };
	struct bundle_slot_limit raw_kernel_only[] = { { "rootfs", 8 << 20, NULL },
						       { "kernel", 4 << 20, "squashfs" } };
	struct seen s = { 0 };

	f->pol.slots = fits;
	f->pol.n_slots = 2;
	expect_read(&f->pol, f->b, f->len, 8192, 0, NULL, &s);
	f->pol.slots = small;
	expect_refusal(&f->pol, f->b, f->len, -EFBIG, "image 0 \"rootfs\"");
	f->pol.slots = no_kernel;
	f->pol.n_slots = 1;
	expect_refusal(&f->pol, f->b, f->len, -ENXIO, "no \"kernel\" member");
	/* the layout's image type is enforced before any image byte */
	f->pol.slots = raw_kernel_only;
	f->pol.n_slots = 2;
	expect_refusal(&f->pol, f->b, f->len, -EMEDIUMTYPE, "\"kernel\" is of type raw; the layout's "
		       "slots take a squashfs image");
	seen_free(&s);
}

/* A CramFS image (here a raw kernel whose first bytes are the cramfs magic,
 * as a hand-made bundle could carry) is refused by name before a single
 * byte of it reaches the caller, whatever the chunking. */
TEST(test_cramfs_refused)
{
	static const uint8_t magic[4] = { 0x45, 0x3d, 0xcd, 0x28 };
	struct spec sp = { .n_keys = 0 };
	struct bundle_create_result *res = calloc(1, sizeof(*res));
	struct bundle_policy pol = default_policy();
	uint8_t *b, *kernel, md[32];
	char old[65], new[65];
	size_t len, klen;
	char *at;

	assert_non_null(res);
	b = make_bundle(&sp, &len, res);
	klen = res->manifest.images[1].size;
	kernel = b + res->manifest.images[1].offset;
	memcpy(kernel, magic, sizeof(magic));
	/* unsigned: the manifest's sha256 can follow the change */
	for (int i = 0; i < 32; i++)
		sprintf(old + 2 * i, "%02x", res->manifest.images[1].sha256[i]);
	sha256(kernel, klen, md);
	for (int i = 0; i < 32; i++)
		sprintf(new + 2 * i, "%02x", md[i]);
	at = memmem(b, res->manifest.payload_offset, old, 64);
	assert_non_null(at);
	memcpy(at, new, 64);
	pol.allow_unsigned = true;
	for (size_t chunk = 1; chunk <= 8192; chunk *= 8) {
		struct seen s = { 0 };
		struct error err = {};
		int r = feed_all(&pol, b, len, chunk, &s, &err, NULL);

		if (r != -EMEDIUMTYPE || !strstr(err.msg, "CramFS image (magic 0x28cd3d45): the "
						 "reference kernel has no cramfs"))
			fail_msg("chunk %zu: got %d \"%s\"", chunk, r, err.msg);
		assert_int_equal(s.bytes[1], 0);
		seen_free(&s);
	}
	assert_true(bundle_is_cramfs(magic, 4));
	assert_false(bundle_is_cramfs(magic, 3));
	free(res);
	free(b);
}

TEST_FIXTURE(test_callbacks_refuse_and_stop, setup_plain, teardown_signed)
{
	struct signed_fx *f = *state;
	struct error err = {};
	struct seen s = { .fail_data = -EIO };
	_cleanup_bundle_reader_ struct bundle_reader *r = NULL;

	expect_read(&f->pol, f->b, f->len, 8192, -EIO, "refused by the caller", &s);
	seen_free(&s);

	/* errors are sticky */
	memset(&s, 0, sizeof(s));
	s.fail_data = -ENOSPC;
	assert_int_equal(bundle_reader_new(&f->pol, &collect_ops, &s, &r), 0);
	assert_int_equal(bundle_reader_feed(r, f->b, f->len, &err), -ENOSPC);
	err.msg[0] = '\0';
	assert_int_equal(bundle_reader_feed(r, f->b, 10, &err), -ENOSPC);
	assert_non_null(strstr(err.msg, "refused"));
	assert_int_equal(bundle_reader_finish(r, &err), -ENOSPC);
	seen_free(&s);

	/* info-style: stop after the manifest, even on a truncated stream */
	memset(&s, 0, sizeof(s));
	s.stop_after_manifest = BUNDLE_STOP;
	f->pol.skip_signatures = true;
	f->pol.keyring = NULL;
	expect_read(&f->pol, f->b, f->len - 1000, 8192, 0, NULL, &s);
	assert_string_equal(s.order, "M");
	assert_int_equal(s.m.trust, BUNDLE_TRUST_UNCHECKED);
	seen_free(&s);
}

TEST_GROUP(setup, teardown);
