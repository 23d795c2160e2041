/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* libFuzzer target: the bundle reader (header, manifest framing,
 * signatures, canonical-JSON manifest parser, per-image streaming with
 * gzip inflate, squashfs superblock hold-back, sha256) and the manifest
 * parser on its own.
 *
 * Input: a bundle as it would arrive on the install fd. It is read three
 * ways: (1) with the test keyring (tests/fuzz/keys/fuzz-test.pub, whose
 * private key signed the seed bundles) as the daemon reads it, fed in
 * chunks whose size comes from the input's length, so chunk boundaries
 * move; (2) with signatures skipped (as `bundle info` does), so that
 * mutations of the manifest reach the JSON parser and the payload
 * stages; (3) when it starts with '{', as bare manifest bytes.
 * Invariants: no image_end for an image whose bytes did not all arrive,
 * image bytes delivered never exceed the manifest's size, every refusal
 * has a message, the reader never holds more than its documented bound. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bundle.h"
#include "bundle_reader.h"
#include "keyring.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char test_pub[] =
	"-----BEGIN PUBLIC KEY-----\n"
	"MCowBQYDK2VwAyEA1SwE7QBnUdzsZwSzZKMKAQuVXWGwn+5gMQ2m+eLedW0=\n"
	"-----END PUBLIC KEY-----\n";

static struct keyring *keyring;
static volatile uint8_t sink;

struct seen {
	const struct bundle_image *img;
	uint64_t got;
	unsigned ended;
};

static int on_manifest(void *userdata, const struct bundle_manifest *m, struct error *err)
{
	if (m->n_images < 1 || m->n_images > BUNDLE_MAX_IMAGES)
		abort();
	for (size_t i = 0; i < m->n_images; i++)
		if (!bundle_slot_name_valid(m->images[i].slot))
			abort();
	return 0;
}

static int on_begin(void *userdata, const struct bundle_image *img, struct error *err)
{
	struct seen *s = userdata;

	s->img = img;
	s->got = 0;
	return 0;
}

static int on_data(void *userdata, const struct bundle_image *img, const void *buf, size_t len,
		   struct error *err)
{
	struct seen *s = userdata;

	if (img != s->img)
		abort();
	s->got += len;
	if (s->got > img->size)
		abort(); /* more bytes than the signed size */
	/* touch every byte, so ASan checks the buffer handed out */
	for (size_t i = 0; i < len; i++)
		sink ^= ((const uint8_t *)buf)[i];
	return 0;
}

static int on_end(void *userdata, const struct bundle_image *img, struct error *err)
{
	struct seen *s = userdata;

	if (img != s->img || s->got != img->size)
		abort(); /* an image is good only when all of it arrived */
	s->ended++;
	return 0;
}

static const struct bundle_reader_ops ops = {
	.manifest = on_manifest,
	.image_begin = on_begin,
	.image_data = on_data,
	.image_end = on_end,
};

static void read_bundle(const uint8_t *data, size_t size, const struct bundle_policy *policy,
			size_t chunk)
{
	struct bundle_reader *r = NULL;
	struct error err;
	struct seen seen = { 0 };
	size_t off = 0;
	int k = 0;

	if (bundle_reader_new(policy, &ops, &seen, &r) < 0)
		abort();
	err.msg[0] = 0;
	while (off < size && k == 0) {
		size_t n = size - off < chunk ? size - off : chunk;

		k = bundle_reader_feed(r, data + off, n, &err);
		off += n;
	}
	if (k == 0)
		k = bundle_reader_finish(r, &err);
	if (k < 0 && !err.msg[0])
		abort(); /* every refusal says why */
	if (k == 0) {
		const struct bundle_manifest *m = bundle_reader_manifest(r);

		if (!m || !bundle_reader_done(r) || seen.ended != m->n_images)
			abort(); /* accepted, so every image was complete and verified */
		if (!policy->skip_signatures && !policy->allow_unsigned && !m->is_signed)
			abort();
	}
	if (bundle_reader_mem_peak(r) > BUNDLE_MAX_MANIFEST + 512 * 1024)
		abort();
	bundle_reader_free(r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const size_t chunks[4] = { 1, 97, 4096, 1 << 20 };
	struct bundle_policy trusted = { 0 }, skip = { .skip_signatures = true };
	uint8_t *copy;

	if (!keyring) {
		struct error kerr;

		if (keyring_new(&keyring) < 0 ||
		    keyring_add_pem(keyring, test_pub, strlen(test_pub), "fuzz-test.pub", &kerr) < 0)
			abort();
	}
	trusted.keyring = keyring;
	copy = malloc(size ? size : 1); /* exact size: ASan sees overreads */
	if (!copy)
		return 0;
	memcpy(copy, data, size);
	read_bundle(copy, size, &trusted, chunks[size % 4]);
	read_bundle(copy, size, &skip, chunks[(size / 4) % 4]);
	if (size > 0 && copy[0] == '{') {
		struct bundle_manifest m;
		struct error err = {};

		if (bundle_manifest_parse(copy, size, &m, &err) < 0 && !err.msg[0])
			abort();
	}
	free(copy);
	return 0;
}
