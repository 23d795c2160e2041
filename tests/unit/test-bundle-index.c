/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The block-hash index (format 2.0) and the chunk table (format 3). */
#include <stdbool.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "bundle-fixture.h"
#include "testlib.h"

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
