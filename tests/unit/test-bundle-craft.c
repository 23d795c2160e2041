/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Hand-made bundles: framing and manifest refusals. */
#include <stdbool.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <zlib.h>

#include "bundle-fixture.h"
#include "testlib.h"

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

TEST_GROUP(setup, teardown);
