/* SPDX-License-Identifier: LGPL-2.1-or-later */
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

static void sha256(const void *p, size_t n, uint8_t out[32])
{
	unsigned len;

	assert_int_equal(EVP_Digest(p, n, out, &len, EVP_sha256(), NULL), 1);
}

static int setup(void **state)
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

static int teardown(void **state)
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

static uint8_t *make_bundle(const struct spec *s, size_t *ret_len, struct bundle_create_result *res)
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

static uint8_t *signed_bundle(bool gzip, size_t *len)
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

static int on_manifest(void *u, const struct bundle_manifest *m, struct error *err)
{
	struct seen *s = u;

	s->manifests++;
	s->m = *m;
	strcat(s->order, "M");
	return s->stop_after_manifest;
}

static int on_begin(void *u, const struct bundle_image *img, struct error *err)
{
	struct seen *s = u;

	s->begins++;
	strcat(s->order, "B");
	s->sha[img->index] = EVP_MD_CTX_new();
	EVP_DigestInit_ex(s->sha[img->index], EVP_sha256(), NULL);
	return 0;
}

static int on_data(void *u, const struct bundle_image *img, const void *buf, size_t len,
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

static int on_end(void *u, const struct bundle_image *img, struct error *err)
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

static void seen_free(struct seen *s)
{
	for (size_t i = 0; i < BUNDLE_MAX_IMAGES; i++)
		EVP_MD_CTX_free(s->sha[i]);
}

static struct bundle_policy default_policy(void)
{
	return (struct bundle_policy) { .keyring = ring };
}

/* Feed data in chunks of `chunk` bytes, then finish; returns the first
 * error (or 0) and fills err. */
static int feed_all(const struct bundle_policy *pol, const uint8_t *data, size_t len,
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
static void expect_read(const struct bundle_policy *pol, const uint8_t *data, size_t len,
			size_t chunk, int code, const char *msg, struct seen *s)
{
	struct error err = {};
	int r = feed_all(pol, data, len, chunk, s, &err, NULL);

	if (r != code || (msg && !strstr(err.msg, msg)))
		fail_msg("chunk %zu: got %d \"%s\", expected %d \"%s\"", chunk, r, err.msg, code,
			 msg ? msg : "");
}

static void expect_refusal(const struct bundle_policy *pol, const uint8_t *data, size_t len,
			   int code, const char *msg)
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

static int setup_signed(void **state, bool gzip)
{
	struct signed_fx *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	f->pol = default_policy();
	f->b = signed_bundle(gzip, &f->len);
	*state = f;
	return 0;
}

static int setup_plain(void **state) { return setup_signed(state, false); }
static int setup_gzip(void **state) { return setup_signed(state, true); }

static int teardown_signed(void **state)
{
	_cleanup_free_ struct signed_fx *f = *state;

	free(f->b);
	return 0;
}

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

static uint32_t manifest_size(const uint8_t *b)
{
	return b[12] | b[13] << 8 | b[14] << 16 | (uint32_t)b[15] << 24;
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

/* ---- hand-made bundles: framing and manifest refusals ---- */

static uint8_t *craft(const char *manifest, unsigned major, unsigned minor, void *key,
		      const void *payload, size_t plen, size_t *ret_len)
{
	size_t mlen = strlen(manifest), n_sigs = key ? 1 : 0;
	size_t len = BUNDLE_HEADER_SIZE + mlen + n_sigs * BUNDLE_SIG_ENTRY_SIZE + plen;
	uint8_t *b = calloc(1, len), *h = b;

	memcpy(h, "FLASHDBL", 8);
	h[8] = major;
	h[10] = minor;
	h[12] = mlen & 0xff;
	h[13] = mlen >> 8;
	h[14] = mlen >> 16;
	h[16] = n_sigs;
	uint32_t c = crc32(0, h, 20);
	h[20] = c;
	h[21] = c >> 8;
	h[22] = c >> 16;
	h[23] = c >> 24;
	memcpy(b + BUNDLE_HEADER_SIZE, manifest, mlen);
	if (key) {
		uint8_t *e = b + BUNDLE_HEADER_SIZE + mlen;
		EVP_MD_CTX *ctx = EVP_MD_CTX_new();
		size_t siglen = 64;
		assert_int_equal(bundle_create_key_id(key, e), 0);
		assert_int_equal(EVP_DigestSignInit(ctx, NULL, NULL, NULL, key), 1);
		assert_int_equal(EVP_DigestSign(ctx, e + 32, &siglen, (const uint8_t *)manifest,
						mlen), 1);
		EVP_MD_CTX_free(ctx);
	}
	memcpy(b + len - plen, payload, plen);
	*ret_len = len;
	return b;
}

#define HEAD "{\"format_major\":1,\"format_minor\":0,\"compatible\":\"x\",\"version\":\"1\"," \
	"\"build_date\":\"2026-01-01T00:00:00Z\","
/* sha256 of "hello" */
#define HELLO_SHA "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824"
#define IMG(extra) "{\"slot\":\"kernel\",\"type\":\"raw\",\"size\":5,\"sha256\":\"" HELLO_SHA \
	"\",\"compression\":\"none\",\"stored_size\":5" extra "}"
#define ONE_IMAGE(img) HEAD "\"images\":[" img "]}"

static void craft_expect(const char *manifest, unsigned major, unsigned minor, int code,
			 const char *msg)
{
	struct bundle_policy pol = default_policy();
	size_t len;
	uint8_t *b = craft(manifest, major, minor, trusted, "hello", 5, &len);

	struct seen s = { 0 };
	struct error err = {};
	/* accepted: in chunks of 3; refused: as expect_refusal() */
	int r = feed_all(&pol, b, len, code ? 1021 : 3, &s, &err, NULL);

	if (r != code || (code && !strstr(err.msg, msg)))
		fail_msg("%s: got %d \"%s\", expected %d \"%s\"", manifest, r, err.msg, code,
			 msg ? msg : "");
	if (code == 0)
		assert_memory_equal(s.md[0], s.m.images[0].sha256, 32);
	seen_free(&s);
	free(b);
}

TEST(test_crafted_manifests)
{
	static const struct {
		const char *manifest;
		unsigned major, minor; /* of the header */
		int code;
		const char *msg;
	} cases[] = {
		/* the baseline is accepted: the test builder follows the spec */
		{ ONE_IMAGE(IMG("")), 1, 0, 0, NULL },
		/* versions */
		{ ONE_IMAGE(IMG("")), 4, 0, -EPROTONOSUPPORT, "format 4.0" },
		{ "{\"format_major\":4,\"format_minor\":0}", 1, 0, -EPROTONOSUPPORT, "format 4.x" },
		{ ONE_IMAGE(IMG("")), 2, 0, -EBADMSG, "header says format 2.0, the signed manifest 1.0" },
		/* format 1 has no index; format 2 must have one */
		{ HEAD "\"images\":[" IMG("") "],\"block_size\":4096}", 1, 0, -EBADMSG,
		  "has no block index" },
		{ "{\"format_major\":2,\"format_minor\":0,\"compatible\":\"x\",\"version\":\"1\","
		  "\"build_date\":\"2026-01-01T00:00:00Z\",\"images\":[" IMG("") "]}", 2, 0, -EBADMSG,
		  "missing field \"block_size\"" },
		{ "{\"format_major\":2,\"format_minor\":0,\"compatible\":\"x\",\"version\":\"1\","
		  "\"build_date\":\"2026-01-01T00:00:00Z\",\"images\":[" IMG("") "],"
		  "\"block_size\":5000,\"index_sha256\":\"" HELLO_SHA "\"}", 2, 0, -EBADMSG,
		  "not a power of two" },
		{ ONE_IMAGE(IMG("")), 1, 1, -EBADMSG, "header says format 1.1" },
		/* the chunk table is format 3's: refused before, required from it,
		 * its count bounded by the image's size */
		{ HEAD "\"images\":[" IMG(",\"chunks\":1") "]}", 1, 0, -EBADMSG,
		  "\"chunks\" is a format 3 field" },
		{ "{\"format_major\":2,\"format_minor\":0,\"compatible\":\"x\",\"version\":\"1\","
		  "\"build_date\":\"2026-01-01T00:00:00Z\",\"images\":[" IMG(",\"chunks\":1") "],"
		  "\"block_size\":4096,\"index_sha256\":\"" HELLO_SHA "\"}", 2, 0, -EBADMSG,
		  "\"chunks\" is a format 3 field" },
		{ "{\"format_major\":3,\"format_minor\":0,\"compatible\":\"x\",\"version\":\"1\","
		  "\"build_date\":\"2026-01-01T00:00:00Z\",\"images\":[" IMG("") "],"
		  "\"block_size\":4096,\"index_sha256\":\"" HELLO_SHA "\"}", 3, 0, -EBADMSG,
		  "images[0]: missing field \"chunks\"" },
		{ "{\"format_major\":3,\"format_minor\":0,\"compatible\":\"x\",\"version\":\"1\","
		  "\"build_date\":\"2026-01-01T00:00:00Z\",\"images\":[" IMG(",\"chunks\":3") "],"
		  "\"block_size\":4096,\"index_sha256\":\"" HELLO_SHA "\"}", 3, 0, -EBADMSG,
		  "images[0].chunks: 3 chunks cannot cover 5 bytes (1..1)" },
		{ "{\"format_major\":3,\"format_minor\":0,\"compatible\":\"x\",\"version\":\"1\","
		  "\"build_date\":\"2026-01-01T00:00:00Z\",\"images\":[" IMG(",\"chunks\":0") "],"
		  "\"block_size\":4096,\"index_sha256\":\"" HELLO_SHA "\"}", 3, 0, -EBADMSG,
		  "images[0].chunks: 0 out of range" },
		/* unknown fields: refused at our minor, ignored from a newer minor */
		{ HEAD "\"images\":[" IMG("") "],\"delta\":true}", 1, 0, -EBADMSG,
		  "unknown field \"delta\"" },
		{ ONE_IMAGE(IMG(",\"verity\":\"x\"")), 1, 0, -EBADMSG,
		  "images[0]: unknown field \"verity\"" },
		{ "{\"format_major\":1,\"format_minor\":3,\"compatible\":\"x\",\"version\":\"1\","
		  "\"build_date\":\"2026-01-01T00:00:00Z\",\"images\":[" IMG(",\"verity\":{\"a\":1}")
		  "],\"delta\":[1,2]}", 1, 3, 0, NULL },
		/* canonical form */
		{ "{ \"format_major\":1}", 1, 0, -EBADMSG, "canonical form at byte 1" },
		{ HEAD "\"version\":\"2\",\"images\":[" IMG("") "]}", 1, 0, -EBADMSG, "canonical" },
		{ ONE_IMAGE(IMG("")) "\n", 1, 0, -EBADMSG, "canonical" },
		{ HEAD "\"images\":[" IMG("") "]", 1, 0, -EBADMSG, "invalid JSON" },
		{ "[1,2]", 1, 0, -EBADMSG, "must be a JSON object" },
		{ ONE_IMAGE(IMG("")) "\xff", 1, 0, -EBADMSG, "" },
		/* fields */
		{ "{\"format_major\":1,\"format_minor\":0,\"compatible\":\"x\",\"version\":\"1\","
		  "\"images\":[" IMG("") "]}", 1, 0, -EBADMSG, "missing field \"build_date\"" },
		{ "{\"format_major\":1,\"format_minor\":0,\"compatible\":\"x y\",\"version\":\"1\","
		  "\"build_date\":\"2026-01-01T00:00:00Z\",\"images\":[" IMG("") "]}", 1, 0, -EBADMSG,
		  "compatible" },
		{ "{\"format_major\":1,\"format_minor\":0,\"compatible\":\"x\",\"version\":\"1\","
		  "\"build_date\":\"2026-02-30T00:00:00Z\",\"images\":[" IMG("") "]}", 1, 0, -EBADMSG,
		  "build_date" },
		{ "{\"format_major\":1,\"format_minor\":0,\"compatible\":\"x\",\"version\":1,"
		  "\"build_date\":\"2026-01-01T00:00:00Z\",\"images\":[" IMG("") "]}", 1, 0, -EBADMSG,
		  "version: must be a string" },
		{ HEAD "\"images\":[]}", 1, 0, -EBADMSG, "0 images" },
		{ ONE_IMAGE(IMG("") "," IMG("")), 1, 0, -EBADMSG, "appears twice" },
	};

	for (size_t i = 0; i < ELEMENTSOF(cases); i++)
		craft_expect(cases[i].manifest, cases[i].major, cases[i].minor, cases[i].code,
			     cases[i].msg);
}

/* The one-image manifest of "hello" (IMG("")) with the image's field set to
 * value (JSON text; NULL: left out), in buf. */
static const char *image_with(char *buf, size_t size, const char *field, const char *value)
{
	static const char *const fields[][2] = {
		{ "slot", "\"kernel\"" }, { "type", "\"raw\"" }, { "size", "5" },
		{ "sha256", "\"" HELLO_SHA "\"" }, { "compression", "\"none\"" }, { "stored_size", "5" },
	};
	size_t n = snprintf(buf, size, "%s", HEAD "\"images\":[{");
	const char *sep = "";

	for (size_t i = 0; i < ELEMENTSOF(fields); i++) {
		const char *v = strcmp(fields[i][0], field) ? fields[i][1] : value;

		if (!v)
			continue;
		n += snprintf(buf + n, size - n, "%s\"%s\":%s", sep, fields[i][0], v);
		sep = ",";
	}
	snprintf(buf + n, size - n, "}]}");
	return buf;
}

/* One image field out of its range, type or form: refused, named. */
TEST(test_crafted_image_fields)
{
	static const struct {
		const char *field, *value, *msg;
	} cases[] = {
		{ "slot", "\"../etc\"", "not a slot member name" },
		{ "slot", "\"Kernel\"", "not a slot member name" },
		{ "type", "\"ext4\"", "unknown image type" },
		{ "compression", "\"xz\"", "unknown compression" },
		{ "size", "-5", "images[0].size: -5 out of range" },
		{ "size", "5.0", "must be an integer" },
		{ "sha256", "\"2CF24DBA5FB0A30E26E83B2AC5B9E29E1B161E5C1FA7425E73043362938B9824\"",
		  "hex digits" },
		{ "stored_size", "4", "differs from size" },
		{ "type", "\"squashfs\"", "smaller than a superblock" },
		{ "stored_size", NULL, "images[0]: missing field \"stored_size\"" },
		/* payload hash */
		{ "sha256", "\"2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9825\"",
		  "sha256 mismatch" },
	};
	char m[1024];

	/* the builder writes the baseline as the spec does */
	assert_string_equal(image_with(m, sizeof(m), "", NULL), ONE_IMAGE(IMG("")));
	for (size_t i = 0; i < ELEMENTSOF(cases); i++)
		craft_expect(image_with(m, sizeof(m), cases[i].field, cases[i].value), 1, 0,
			     -EBADMSG, cases[i].msg);
}

TEST(test_too_many_images)
{
	char m[8192];
	size_t n = snprintf(m, sizeof(m), HEAD "\"images\":[");

	for (int i = 0; i < 9; i++)
		n += snprintf(m + n, sizeof(m) - n, "%s{\"slot\":\"s%d\",\"type\":\"raw\",\"size\":5,"
			      "\"sha256\":\"" HELLO_SHA "\",\"compression\":\"none\","
			      "\"stored_size\":5}", i ? "," : "", i);
	snprintf(m + n, sizeof(m) - n, "]}");
	craft_expect(m, 1, 0, -EBADMSG, "9 images, must be 1..8");
}

TEST(test_crafted_framing)
{
	struct bundle_policy pol = default_policy();
	size_t len;
	uint8_t *b = craft(HEAD "\"images\":[" IMG("") "]}", 1, 0, trusted, "hello", 5, &len);
	uint8_t *c = malloc(len);

	memcpy(c, b, len);
	c[0] = 'f';
	expect_refusal(&pol, c, len, -EBADMSG, "not a flashd bundle");
	memcpy(c, b, len);
	c[13] ^= 1; /* manifest size, crc not updated */
	expect_refusal(&pol, c, len, -EBADMSG, "crc32 mismatch");
	memcpy(c, b, len);
	c[28] = 1; /* reserved */
	expect_refusal(&pol, c, len, -EBADMSG, "reserved bytes");
	free(c);
	free(b);

	/* oversized manifest and too many signatures, with a valid crc */
	static const struct { size_t off; uint8_t v; const char *msg; } hdr[] = {
		{ 14, 0x01, "manifest size 65" }, /* 64 KiB + ... */
		{ 16, 5, "5 signatures" },
	};
	for (size_t i = 0; i < 2; i++) {
		b = craft(HEAD "\"images\":[" IMG("") "]}", 1, 0, NULL, "hello", 5, &len);
		b[hdr[i].off] = hdr[i].v;
		uint32_t crc = crc32(0, b, 20);
		b[20] = crc; b[21] = crc >> 8; b[22] = crc >> 16; b[23] = crc >> 24;
		expect_refusal(&pol, b, len, -EBADMSG, hdr[i].msg);
		free(b);
	}
}

TEST(test_crafted_gzip)
{
	/* gzip of "hello" followed by junk inside stored_size, and cut short */
	uint8_t gz[64], payload[80];
	z_stream z = { 0 };
	char m[1024];
	size_t len, gzlen;
	struct bundle_policy pol = default_policy();
	uint8_t *b;

	assert_int_equal(deflateInit2(&z, 9, Z_DEFLATED, 31, 8, Z_DEFAULT_STRATEGY), Z_OK);
	z.next_in = (Bytef *)"hello";
	z.avail_in = 5;
	z.next_out = gz;
	z.avail_out = sizeof(gz);
	assert_int_equal(deflate(&z, Z_FINISH), Z_STREAM_END);
	gzlen = sizeof(gz) - z.avail_out;
	deflateEnd(&z);

	memcpy(payload, gz, gzlen);
	memcpy(payload + gzlen, "JUNK", 4);
	snprintf(m, sizeof(m), HEAD "\"images\":[{\"slot\":\"kernel\",\"type\":\"raw\",\"size\":5,"
		 "\"sha256\":\"" HELLO_SHA "\",\"compression\":\"gzip\",\"stored_size\":%zu}]}",
		 gzlen + 4);
	b = craft(m, 1, 0, trusted, payload, gzlen + 4, &len);
	expect_refusal(&pol, b, len, -EBADMSG, "gzip stream ends 4 bytes before");
	free(b);

	snprintf(m, sizeof(m), HEAD "\"images\":[{\"slot\":\"kernel\",\"type\":\"raw\",\"size\":5,"
		 "\"sha256\":\"" HELLO_SHA "\",\"compression\":\"gzip\",\"stored_size\":%zu}]}",
		 gzlen - 4);
	b = craft(m, 1, 0, trusted, payload, gzlen - 4, &len);
	expect_refusal(&pol, b, len, -EBADMSG, "gzip stream incomplete");
	free(b);

	payload[gzlen - 8] ^= 1; /* crc32 in the gzip trailer */
	snprintf(m, sizeof(m), HEAD "\"images\":[{\"slot\":\"kernel\",\"type\":\"raw\",\"size\":5,"
		 "\"sha256\":\"" HELLO_SHA "\",\"compression\":\"gzip\",\"stored_size\":%zu}]}", gzlen);
	b = craft(m, 1, 0, trusted, payload, gzlen, &len);
	expect_refusal(&pol, b, len, -EBADMSG, "corrupt gzip data");
	free(b);

	/* expands past its declared size */
	payload[gzlen - 8] ^= 1;
	snprintf(m, sizeof(m), HEAD "\"images\":[{\"slot\":\"kernel\",\"type\":\"raw\",\"size\":4,"
		 "\"sha256\":\"" HELLO_SHA "\",\"compression\":\"gzip\",\"stored_size\":%zu}]}", gzlen);
	b = craft(m, 1, 0, trusted, payload, gzlen, &len);
	expect_refusal(&pol, b, len, -EBADMSG, "runs past its declared size 4");
	free(b);
}

TEST(test_not_squashfs_in_bundle)
{
	struct bundle_policy pol = default_policy();
	uint8_t img[4096];
	uint8_t sha[32];
	char m[1024], hexs[65];
	size_t len;
	uint8_t *b;

	th_fill(img, sizeof(img), 3);
	sha256(img, sizeof(img), sha);
	for (int i = 0; i < 32; i++)
		sprintf(hexs + 2 * i, "%02x", sha[i]);
	snprintf(m, sizeof(m), HEAD "\"images\":[{\"slot\":\"rootfs\",\"type\":\"squashfs\","
		 "\"size\":4096,\"sha256\":\"%s\",\"compression\":\"none\",\"stored_size\":4096}]}",
		 hexs);
	b = craft(m, 1, 0, trusted, img, sizeof(img), &len);
	expect_refusal(&pol, b, len, -EBADMSG, "image 0 \"rootfs\": not a squashfs");
	free(b);
}

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

/* ---- the block-hash index (format 2.0) ---- */

static void parse_layout(const uint8_t *b, struct bundle_manifest *m)
{
	struct error err = {};

	assert_int_equal(bundle_manifest_parse(b + BUNDLE_HEADER_SIZE, manifest_size(b), m, &err), 0);
	bundle_manifest_layout(m, b[16]);
}

/* Incompressible-enough test data (th_fill), malloc'd */
static uint8_t *random_data(size_t len, uint32_t seed)
{
	uint8_t *d = malloc(len);

	assert_non_null(d);
	th_fill(d, len, seed);
	return d;
}

/* A one-image raw bundle of data (len bytes) with block size bs; its
 * manifest, laid out, in ret_m unless NULL. */
static uint8_t *index_bundle(const uint8_t *data, size_t dlen, uint32_t bs, bool no_index,
			     size_t *ret_len, struct bundle_manifest *ret_m)
{
	char *in = th_path("ix.img"), *out = th_path("ix.fbd");
	struct bundle_create_image img = { "kernel", in, BUNDLE_IMAGE_RAW, BUNDLE_COMPRESSION_NONE };
	struct bundle_create_params p = {
		.compatible = "acme,board-v1", .version = "1", .images = &img, .n_images = 1,
		.keys = &trusted, .n_keys = 1, .block_size = bs, .no_index = no_index,
	};
	struct error err = {};
	uint8_t *b;
	int fd;

	th_write(in, data, dlen);
	fd = open(out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	assert_true(fd >= 0);
	if (bundle_create(&p, fd, NULL, &err) < 0)
		fail_msg("bundle_create: %s", err.msg);
	close(fd);
	b = th_read(out, ret_len);
	free(in);
	free(out);
	if (ret_m)
		parse_layout(b, ret_m);
	return b;
}


/* The index holds the SHA-256 of every block (the last one short), sits
 * between the signatures and the payload, and payload offsets follow from
 * the manifest alone (what a random-access install preads). */
TEST(test_index_layout)
{
	const uint32_t bs = 4096;
	size_t dlen = 5 * bs + 100, len;
	uint8_t *data = random_data(dlen, 77), md[32];
	uint8_t *b;
	struct bundle_manifest m;

	b = index_bundle(data, dlen, bs, false, &len, &m);
	assert_int_equal(m.format_major, 3);
	assert_int_equal(m.block_size, bs);
	assert_int_equal(m.images[0].n_blocks, 6);
	/* the block hashes, then the chunk table (format 3) */
	assert_int_equal(m.chunk_table_offset, 6 * 32);
	assert_true(m.images[0].n_chunks >= 1);
	assert_int_equal(m.index_size, 6 * 32 + m.images[0].n_chunks * CHUNK_ENTRY_SIZE);
	assert_int_equal(m.index_offset, BUNDLE_HEADER_SIZE + m.manifest_size + BUNDLE_SIG_ENTRY_SIZE);
	assert_int_equal(m.payload_offset, m.index_offset + m.index_size);
	assert_int_equal(m.total_size, len);
	assert_memory_equal(b + m.payload_offset, data, dlen);
	for (int k = 0; k < 6; k++) {
		assert_int_equal(bundle_index_sha256(data + k * bs, k < 5 ? bs : 100, md), 0);
		assert_memory_equal(b + m.index_offset + k * 32, md, 32);
	}
	assert_int_equal(bundle_index_sha256(b + m.index_offset, m.index_size, md), 0);
	assert_memory_equal(md, m.index_sha256, 32);
	free(b);
	free(data);
}

/* The chunk table (format 3), signed with the index: every entry's
 * length is checked (1..CHUNK_MAX, within the image) and together they
 * must cover the image exactly; an error names image, chunk and offset. */
TEST(test_chunk_table_checked)
{
	static const char manifest[] = "{\"format_major\":3,\"format_minor\":0,\"compatible\":"
		"\"x\",\"version\":\"1\",\"build_date\":\"2026-01-01T00:00:00Z\",\"images\":["
		"{\"slot\":\"kernel\",\"type\":\"raw\",\"size\":70000,\"sha256\":\"" HELLO_SHA
		"\",\"compression\":\"none\",\"stored_size\":70000,\"chunks\":2}],"
		"\"block_size\":65536,\"index_sha256\":\"" HELLO_SHA "\"}";
	static const struct {
		uint32_t a, b;
		const char *msg;
	} cases[] = {
		{ 60000, 10000, NULL },
		{ 0, 70000, "chunk 0 (at image byte 0) has length 0" },
		{ 70000, 0, "chunk 0 (at image byte 0) has length 70000, must be 1..65536" },
		{ 60000, 10001, "chunk 1 (at image byte 60000) has length 10001" },
		{ 60000, 9999, "its 2 chunks cover 69999 of its 70000 bytes" },
	};
	struct bundle_manifest m;
	struct error err = {};
	uint8_t index[2 * 32 + 2 * CHUNK_ENTRY_SIZE] = { 0 }, h[CHUNK_HASH_SIZE] = { 0 };

	assert_int_equal(bundle_manifest_parse(manifest, strlen(manifest), &m, &err), 0);
	assert_int_equal(m.chunk_table_offset, 2 * 32);
	assert_int_equal(m.index_size, sizeof(index));
	for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
		int r;

		chunk_entry_put(index + 64, cases[i].a, h);
		chunk_entry_put(index + 64 + CHUNK_ENTRY_SIZE, cases[i].b, h);
		error_clear(&err);
		r = bundle_chunks_check(&m, index, &err);
		if (cases[i].msg ? r != -EBADMSG || !strstr(err.msg, cases[i].msg) : r != 0)
			fail_msg("%" PRIu32 "+%" PRIu32 ": got %d \"%s\"", cases[i].a, cases[i].b, r,
				 err.msg);
	}
}

/* The chunker cuts by content: the same bytes at another offset give the
 * same chunks once it is past the shift (what makes a rebuilt image's
 * unchanged parts findable), every chunk within CHUNK_MIN..CHUNK_MAX. */
struct chunk_list {
	uint32_t len[512];
	uint8_t hash[512][CHUNK_HASH_SIZE];
	size_t n;
};

static int chunk_collect(void *userdata, uint32_t len, const uint8_t hash[CHUNK_HASH_SIZE])
{
	struct chunk_list *l = userdata;

	assert_true(l->n < ELEMENTSOF(l->len));
	l->len[l->n] = len;
	memcpy(l->hash[l->n++], hash, CHUNK_HASH_SIZE);
	return 0;
}

TEST(test_chunker_shift)
{
	size_t dlen = 2 * 1024 * 1024;
	uint8_t *data = random_data(dlen + 777, 90);
	struct chunk_list *a = calloc(1, sizeof(*a)), *b = calloc(1, sizeof(*b));
	struct chunk_stream cs;
	size_t same = 0;

	chunk_stream_init(&cs, chunk_collect, a);
	assert_int_equal(chunk_stream_feed(&cs, data + 777, dlen), 0);
	assert_int_equal(chunk_stream_end(&cs), 0);
	/* the same bytes behind 777 others, fed in odd pieces */
	chunk_stream_init(&cs, chunk_collect, b);
	for (size_t off = 0; off < dlen + 777; off += 1000)
		assert_int_equal(chunk_stream_feed(&cs, data + off, MIN(1000, dlen + 777 - off)), 0);
	assert_int_equal(chunk_stream_end(&cs), 0);
	for (size_t i = 0; i + 1 < a->n; i++) {
		assert_true(a->len[i] >= CHUNK_MIN && a->len[i] <= CHUNK_MAX);
		for (size_t j = 0; j < b->n; j++)
			if (a->len[i] == b->len[j] && !memcmp(a->hash[i], b->hash[j], CHUNK_HASH_SIZE)) {
				same++;
				break;
			}
	}
	printf("chunker: %zu chunks of 2 MiB (average %zu B), %zu found again after a "
	       "777-byte shift\n", a->n, dlen / a->n, same);
	assert_true(a->n > 2 * 1024 * 1024 / CHUNK_MAX);
	assert_true(same + 2 >= a->n - 1);
	free(a);
	free(b);
	free(data);
}

/* A damaged index is refused before any image byte reaches the caller. */
TEST(test_index_corrupt)
{
	struct bundle_policy pol = default_policy();
	size_t dlen = 3 * 4096, len;
	uint8_t *data = random_data(dlen, 78), *b;
	struct bundle_manifest m;
	struct seen s = { 0 };

	b = index_bundle(data, dlen, 4096, false, &len, &m);
	b[m.index_offset + 40] ^= 0x80;
	expect_read(&pol, b, len, 1021, -EBADMSG, "does not match the manifest's index_sha256", &s);
	assert_int_equal(s.data_calls, 0);
	assert_int_equal(s.begins, 0);
	seen_free(&s);
	free(b);
	free(data);
}

/* A signed index that does not match the payload (another image of the
 * same size spliced in): refused naming the block, and that block never
 * reaches the caller whole, so a writer of block_size never programs it. */
TEST(test_index_payload_mismatch)
{
	struct bundle_policy pol = default_policy();
	const uint32_t bs = 4096;
	size_t dlen = 6 * bs, len, len2;
	uint8_t *data = random_data(dlen, 79), *b, *b2;
	struct bundle_manifest m;
	struct seen s = { 0 };

	b = index_bundle(data, dlen, bs, false, &len, &m);
	data[3 * bs + 7] ^= 1;
	b2 = index_bundle(data, dlen, bs, false, &len2, NULL);
	assert_int_equal(len, len2);
	memcpy(b + m.payload_offset, b2 + m.payload_offset, dlen);
	expect_read(&pol, b, len, 1000, -EBADMSG, "image 0 \"kernel\": block 3 (bytes 12288..16383) "
		    "does not match its sha256 in the signed index", &s);
	/* blocks 0..2 whole, block 3 never complete */
	assert_true(s.bytes[0] >= 3 * bs && s.bytes[0] < 4 * bs);
	assert_int_equal(s.ends, 0);
	seen_free(&s);
	free(b);
	free(b2);
	free(data);
}

/* --no-index writes format 1.0, which this reader still reads whole. */
TEST(test_index_none_is_format_1_0)
{
	struct bundle_policy pol = default_policy();
	size_t dlen = 3 * 4096 + 1, len;
	uint8_t *data = random_data(dlen, 80), *b;
	struct bundle_manifest m;
	struct seen s = { 0 };

	b = index_bundle(data, dlen, 0, true, &len, &m);
	assert_int_equal(m.format_major, 1);
	assert_int_equal(m.format_minor, 0);
	assert_int_equal(b[8], 1);
	assert_int_equal(m.index_size, 0);
	assert_null(memmem(b, len, "block_size", 10));
	assert_int_equal(m.payload_offset, BUNDLE_HEADER_SIZE + m.manifest_size + BUNDLE_SIG_ENTRY_SIZE);
	expect_read(&pol, b, len, 4096, 0, NULL, &s);
	assert_int_equal(s.ends, 1);
	assert_int_equal(s.bytes[0], dlen);
	seen_free(&s);
	free(b);
	free(data);
}

TEST(test_index_block_size_refused)
{
	uint8_t data[100] = { 1 };
	char *in = th_path("ixr.img");
	struct bundle_create_image img = { "kernel", in, BUNDLE_IMAGE_RAW, BUNDLE_COMPRESSION_NONE };
	struct bundle_create_params p = {
		.compatible = "acme,board-v1", .version = "1", .images = &img, .n_images = 1,
		.block_size = 3000,
	};
	struct error err = {};

	th_write(in, data, sizeof(data));
	assert_int_equal(bundle_create(&p, 1, NULL, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "block size 3000: must be a power of two"));
	free(in);
}

TEST_GROUP(setup, teardown);
