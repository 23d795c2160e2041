/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Update bundles: the format (docs/bundle-format.md): the header and the
 * manifest (parsing, checks, JSON view). The streaming reader is in
 * bundle_reader.c, the host-side writer in bundle_create.c. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>
#include <zlib.h>

#include "bundle.h"
#include "hash.h"
#include "cleanup.h"
#include "cleanup_json.h"
#include "util.h"

static uint16_t get16(const uint8_t *p) { return p[0] | (uint16_t)p[1] << 8; }
static uint32_t get32(const uint8_t *p) { return get16(p) | (uint32_t)get16(p + 2) << 16; }
static void put16(uint8_t *p, uint16_t v) { p[0] = v; p[1] = v >> 8; }
static void put32(uint8_t *p, uint32_t v) { put16(p, v); put16(p + 2, v >> 16); }

/* ---- enums ---- */

static const char *const bundle_image_type_table[] = { BUNDLE_IMAGE_TYPE_LIST(STRING_TABLE_NAME) };
DEFINE_STRING_TABLE(bundle_image_type, enum bundle_image_type)
static const char *const bundle_compression_table[] = { BUNDLE_COMPRESSION_LIST(STRING_TABLE_NAME) };
DEFINE_STRING_TABLE(bundle_compression, enum bundle_compression)
static const char *const bundle_trust_table[] = { BUNDLE_TRUST_LIST(STRING_TABLE_NAME) };
DEFINE_STRING_TABLE_TO(bundle_trust, enum bundle_trust)

/* ---- manifest parsing ---- */

static bool chars_in(const char *s, size_t min, size_t max, const char *extra)
{
	size_t n = strlen(s);

	if (n < min || n > max)
		return false;
	for (; *s; s++) {
		unsigned char c = *s;
		if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
		      (extra && strchr(extra, c))))
			return false;
	}
	return true;
}

bool bundle_slot_name_valid(const char *s)
{
	return s && chars_in(s, 1, BUNDLE_SLOT_MAX, "_-");
}

static bool compatible_valid(const char *s)
{
	return chars_in(s, 1, BUNDLE_COMPATIBLE_MAX, "ABCDEFGHIJKLMNOPQRSTUVWXYZ._,:+-");
}

static bool version_valid(const char *s)
{
	size_t n = strlen(s);

	if (n < 1 || n > BUNDLE_VERSION_MAX)
		return false;
	for (; *s; s++)
		if ((unsigned char)*s <= ' ' || (unsigned char)*s >= 0x7f)
			return false;
	return true;
}

static bool description_valid(const char *s)
{
	if (strlen(s) > BUNDLE_DESCRIPTION_MAX)
		return false;
	for (; *s; s++)
		if ((unsigned char)*s < ' ' || (unsigned char)*s == 0x7f)
			return false;
	return true;
}

/* Strict "YYYY-MM-DDTHH:MM:SSZ" (UTC, ISO 8601 / RFC 3339). */
static bool build_date_valid(const char *s)
{
	static const char pattern[] = "dddd-dd-ddTdd:dd:ddZ";
	struct tm tm = { 0 };
	time_t t;

	if (strlen(s) != BUNDLE_BUILD_DATE_LEN)
		return false;
	for (size_t i = 0; i < BUNDLE_BUILD_DATE_LEN; i++)
		if (pattern[i] == 'd' ? (s[i] < '0' || s[i] > '9') : s[i] != pattern[i])
			return false;
	tm.tm_year = atoi(s) - 1900;
	tm.tm_mon = atoi(s + 5) - 1;
	tm.tm_mday = atoi(s + 8);
	tm.tm_hour = atoi(s + 11);
	tm.tm_min = atoi(s + 14);
	tm.tm_sec = atoi(s + 17);
	if (tm.tm_mon > 11 || tm.tm_mday < 1 || tm.tm_hour > 23 || tm.tm_min > 59 ||
	    tm.tm_sec > 60)
		return false;
	/* timegm normalises 02-30 to 03-02: a round trip catches bad days */
	t = timegm(&tm);
	return gmtime_r(&t, &tm) && tm.tm_mday == atoi(s + 8);
}

static int parse_hex32(const char *s, uint8_t out[32])
{
	if (strlen(s) != 64)
		return -EINVAL;
	for (size_t i = 0; i < 64; i++) {
		char c = s[i];
		int v = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
		if (v < 0)
			return -EINVAL;
		if (i % 2 == 0)
			out[i / 2] = v << 4;
		else
			out[i / 2] |= v;
	}
	return 0;
}

struct field {
	const char *name;
	bool required;
	/* target is the manifest or the image being filled */
	int (*parse)(struct json_object *v, void *target, const char *path, struct error *err);
};

static int get_string(struct json_object *v, const char *path, const char **ret,
		      struct error *err)
{
	if (!json_object_is_type(v, json_type_string))
		return error_set(err, -EBADMSG, "manifest: %s: must be a string", path);
	*ret = json_object_get_string(v);
	if (strlen(*ret) != (size_t)json_object_get_string_len(v))
		return error_set(err, -EBADMSG, "manifest: %s: contains a NUL character", path);
	return 0;
}

static int get_u64(struct json_object *v, const char *path, uint64_t min, uint64_t max,
		   uint64_t *ret, struct error *err)
{
	int64_t i;

	if (!json_object_is_type(v, json_type_int))
		return error_set(err, -EBADMSG, "manifest: %s: must be an integer", path);
	i = json_object_get_int64(v);
	if (i < 0 || (uint64_t)i < min || (uint64_t)i > max)
		return error_set(err, -EBADMSG, "manifest: %s: %" PRId64 " out of range %" PRIu64
			    "..%" PRIu64, path, i, min, max);
	*ret = (uint64_t)i;
	return 0;
}

#define STRING_FIELD(fname, member, valid, what)                                        \
	static int parse_##fname(struct json_object *v, void *t, const char *path,       \
				 struct error *err)                               \
	{                                                                                \
		struct bundle_manifest *m = t;                                           \
		const char *s;                                                           \
		int r = get_string(v, path, &s, err);                                    \
		if (r < 0)                                                               \
			return r;                                                        \
		if (!valid(s))                                                           \
			return error_set(err, -EBADMSG, "manifest: %s: \"%.80s\" is not " what, \
				    path, s);                                            \
		snprintf(m->member, sizeof(m->member), "%s", s);                         \
		return 0;                                                                \
	}

STRING_FIELD(compatible, compatible, compatible_valid,
	     "a valid compatible string ([A-Za-z0-9._,:+-]{1,64})")
STRING_FIELD(version, version, version_valid, "a valid version (1..64 printable, no spaces)")
STRING_FIELD(build_date, build_date, build_date_valid, "a UTC date YYYY-MM-DDTHH:MM:SSZ")
STRING_FIELD(description, description, description_valid,
	     "a valid description (at most 256 bytes, no control characters)")

static int parse_format(struct json_object *v, void *t, const char *path, struct error *err)
{
	/* read up front by parse_object(); present only to be a known field */
	return 0;
}

static int parse_slot(struct json_object *v, void *t, const char *path, struct error *err)
{
	struct bundle_image *img = t;
	const char *s;
	int r = get_string(v, path, &s, err);

	if (r < 0)
		return r;
	if (!bundle_slot_name_valid(s))
		return error_set(err, -EBADMSG, "manifest: %s: \"%.40s\" is not a slot member name "
			    "([a-z0-9_-]{1,32})", path, s);
	snprintf(img->slot, sizeof(img->slot), "%s", s);
	return 0;
}

/* A name of an enum (from_string: its lookup): the value, or -EBADMSG
 * naming what and the accepted names. */
static int get_enum(struct json_object *v, const char *path, int (*from_string)(const char *s),
		    const char *what, const char *names, struct error *err)
{
	const char *s;
	int r = get_string(v, path, &s, err);

	if (r < 0)
		return r;
	r = from_string(s);
	if (r < 0)
		return error_set(err, -EBADMSG, "manifest: %s: unknown %s \"%.40s\" (%s)", path,
				 what, s, names);
	return r;
}

static int parse_type(struct json_object *v, void *t, const char *path, struct error *err)
{
	int r = get_enum(v, path, bundle_image_type_from_string, "image type", "squashfs, raw",
			 err);

	if (r < 0)
		return r;
	((struct bundle_image *)t)->type = r;
	return 0;
}

static int parse_compression(struct json_object *v, void *t, const char *path,
			     struct error *err)
{
	int r = get_enum(v, path, bundle_compression_from_string, "compression", "none, gzip",
			 err);

	if (r < 0)
		return r;
	((struct bundle_image *)t)->compression = r;
	return 0;
}

static int parse_size(struct json_object *v, void *t, const char *path, struct error *err)
{
	return get_u64(v, path, 1, BUNDLE_MAX_IMAGE_SIZE, &((struct bundle_image *)t)->size, err);
}

static int parse_stored_size(struct json_object *v, void *t, const char *path,
			     struct error *err)
{
	/* gzip can grow incompressible data a little; the exact bound is
	 * checked against size once both are known */
	return get_u64(v, path, 1, BUNDLE_MAX_IMAGE_SIZE * 2,
		       &((struct bundle_image *)t)->stored_size, err);
}

/* format 3: how many chunk table entries describe the image (bounded
 * against its size once both are known) */
static int parse_chunks(struct json_object *v, void *t, const char *path, struct error *err)
{
	return get_u64(v, path, 1, BUNDLE_MAX_CHUNK_TABLE / CHUNK_ENTRY_SIZE,
		       &((struct bundle_image *)t)->n_chunks, err);
}

static int get_sha256(struct json_object *v, const char *path, uint8_t out[32],
		      struct error *err)
{
	const char *s;
	int r = get_string(v, path, &s, err);

	if (r < 0)
		return r;
	if (parse_hex32(s, out) < 0)
		return error_set(err, -EBADMSG, "manifest: %s: not 64 lower-case hex digits", path);
	return 0;
}

static int parse_sha256(struct json_object *v, void *t, const char *path, struct error *err)
{
	return get_sha256(v, path, ((struct bundle_image *)t)->sha256, err);
}

static int parse_block_size(struct json_object *v, void *t, const char *path,
			    struct error *err)
{
	struct bundle_manifest *m = t;
	uint64_t bs;
	int r = get_u64(v, path, BUNDLE_BLOCK_SIZE_MIN, BUNDLE_BLOCK_SIZE_MAX, &bs, err);

	if (r < 0)
		return r;
	if (bs & (bs - 1))
		return error_set(err, -EBADMSG, "manifest: %s: %" PRIu64 " is not a power of two",
				 path, bs);
	m->block_size = bs;
	return 0;
}

static int parse_index_sha256(struct json_object *v, void *t, const char *path,
			      struct error *err)
{
	return get_sha256(v, path, ((struct bundle_manifest *)t)->index_sha256, err);
}

static int parse_images(struct json_object *v, void *t, const char *path, struct error *err);

/* block_size and index_sha256 are format 2's (required there, refused in 1.x) */
static const struct field manifest_fields[] = {
	{ "format_major", true, parse_format },
	{ "format_minor", true, parse_format },
	{ "compatible", true, parse_compatible },
	{ "version", true, parse_version },
	{ "build_date", true, parse_build_date },
	{ "description", false, parse_description },
	{ "images", true, parse_images },
	{ "block_size", false, parse_block_size },
	{ "index_sha256", false, parse_index_sha256 },
};

static const struct field image_fields[] = {
	{ "slot", true, parse_slot },
	{ "type", true, parse_type },
	{ "size", true, parse_size },
	{ "sha256", true, parse_sha256 },
	{ "compression", true, parse_compression },
	{ "stored_size", true, parse_stored_size },
	{ "chunks", false, parse_chunks },
};

/* Walk an object against a field table. Unknown keys are refused unless
 * the manifest comes from a newer minor format (ignore_unknown). */
static int parse_object(struct json_object *o, const struct field *fields, size_t n_fields,
			void *target, const char *path, bool ignore_unknown,
			struct error *err)
{
	char sub[96];
	int r;

	if (!json_object_is_type(o, json_type_object))
		return error_set(err, -EBADMSG, "manifest: %s: must be an object", path);
	json_object_object_foreach(o, key, val) {
		size_t i;
		for (i = 0; i < n_fields; i++)
			if (!strcmp(fields[i].name, key))
				break;
		if (i == n_fields) {
			if (ignore_unknown)
				continue;
			return error_set(err, -EBADMSG, "manifest: %s: unknown field \"%.40s\" (format "
				    "%d.%d defines no such field)", path, key, BUNDLE_FORMAT_MAJOR,
				    BUNDLE_FORMAT_MINOR);
		}
		snprintf(sub, sizeof(sub), "%s%s%s", path, *path ? "." : "", key);
		r = fields[i].parse(val, target, sub, err);
		if (r < 0)
			return r;
	}
	for (size_t i = 0; i < n_fields; i++)
		if (fields[i].required && !json_object_object_get_ex(o, fields[i].name, NULL))
			return error_set(err, -EBADMSG, "manifest: %s%smissing field \"%s\"", path,
				    *path ? ": " : "", fields[i].name);
	return 0;
}

struct images_ctx {
	struct bundle_manifest *m;
	bool ignore_unknown;
};

static int parse_images(struct json_object *v, void *t, const char *path, struct error *err)
{
	struct images_ctx *ctx = t;
	struct bundle_manifest *m = ctx->m;
	size_t n;
	int r;

	if (!json_object_is_type(v, json_type_array))
		return error_set(err, -EBADMSG, "manifest: %s: must be an array", path);
	n = json_object_array_length(v);
	if (n < 1 || n > BUNDLE_MAX_IMAGES)
		return error_set(err, -EBADMSG, "manifest: %s: %zu images, must be 1..%d", path, n,
			    BUNDLE_MAX_IMAGES);
	for (size_t i = 0; i < n; i++) {
		struct bundle_image *img = &m->images[i];
		char sub[64];

		snprintf(sub, sizeof(sub), "images[%zu]", i);
		*img = (struct bundle_image) { .index = i };
		r = parse_object(json_object_array_get_idx(v, i), image_fields,
				 ELEMENTSOF(image_fields), img, sub, ctx->ignore_unknown, err);
		if (r < 0)
			return r;
		for (size_t j = 0; j < i; j++)
			if (!strcmp(m->images[j].slot, img->slot))
				return error_set(err, -EBADMSG, "manifest: %s.slot: \"%s\" appears twice "
					    "(also images[%zu])", sub, img->slot, j);
		if (img->compression == BUNDLE_COMPRESSION_NONE && img->stored_size != img->size)
			return error_set(err, -EBADMSG, "manifest: %s: stored_size %" PRIu64 " differs "
				    "from size %" PRIu64 " without compression", sub,
				    img->stored_size, img->size);
		/* deflate's worst case is 5 bytes per 16 KiB block plus the gzip frame */
		if (img->compression == BUNDLE_COMPRESSION_GZIP &&
		    (img->stored_size < 20 || img->stored_size > img->size + img->size / 1024 + 64))
			return error_set(err, -EBADMSG, "manifest: %s: gzip stored_size %" PRIu64
				    " impossible for size %" PRIu64, sub, img->stored_size,
				    img->size);
		if (img->type == BUNDLE_IMAGE_SQUASHFS && img->size < SQUASHFS_SUPERBLOCK_SIZE)
			return error_set(err, -EBADMSG, "manifest: %s: squashfs image of %" PRIu64
				    " bytes is smaller than a superblock", sub, img->size);
	}
	m->n_images = n;
	return 0;
}

/* Format 3: each image's chunk count, in the bounds its size allows
 * (every chunk but the last at least CHUNK_MIN, none over CHUNK_MAX),
 * placed after the block hashes. */
static int chunks_place(struct bundle_manifest *m, uint64_t blocks, struct error *err)
{
	uint64_t n = 0;

	for (size_t i = 0; i < m->n_images; i++) {
		struct bundle_image *img = &m->images[i];
		uint64_t lo = (img->size + CHUNK_MAX - 1) / CHUNK_MAX, hi = img->size / CHUNK_MIN + 1;

		if (m->format_major < 3 && img->n_chunks)
			return error_set(err, -EBADMSG, "manifest: images[%zu]: format %u.%u has no "
					 "chunk table (\"chunks\" is a format 3 field)", i,
					 m->format_major, m->format_minor);
		if (m->format_major < 3)
			continue;
		if (!img->n_chunks)
			return error_set(err, -EBADMSG, "manifest: images[%zu]: missing field "
					 "\"chunks\"", i);
		if (img->n_chunks < lo || img->n_chunks > hi)
			return error_set(err, -EBADMSG, "manifest: images[%zu].chunks: %" PRIu64
					 " chunks cannot cover %" PRIu64 " bytes (%" PRIu64 "..%"
					 PRIu64 ")", i, img->n_chunks, img->size, lo, hi);
		img->chunk_first = n;
		n += img->n_chunks;
	}
	if (n > BUNDLE_MAX_CHUNK_TABLE / CHUNK_ENTRY_SIZE)
		return error_set(err, -EBADMSG, "manifest: %" PRIu64 " chunks: the chunk table would "
				 "exceed %d bytes", n, BUNDLE_MAX_CHUNK_TABLE);
	m->chunk_table_offset = blocks * BUNDLE_HASH_SIZE;
	m->index_size = m->chunk_table_offset + n * CHUNK_ENTRY_SIZE;
	return 0;
}

/* Format 2 has a block-hash index, format 1 none: place each image's
 * hashes in it and bound its size. */
static int index_check(struct bundle_manifest *m, struct error *err)
{
	uint64_t n = 0;

	if (m->format_major < 2) {
		if (m->block_size || !util_mem_is(m->index_sha256, 0, 32))
			return error_set(err, -EBADMSG, "manifest: format %u.%u has no block index "
					 "(block_size / index_sha256 are format 2 fields)",
					 m->format_major, m->format_minor);
		return chunks_place(m, 0, err);
	}
	if (!m->block_size)
		return error_set(err, -EBADMSG, "manifest: missing field \"block_size\"");
	if (util_mem_is(m->index_sha256, 0, 32))
		return error_set(err, -EBADMSG, "manifest: missing field \"index_sha256\"");
	for (size_t i = 0; i < m->n_images; i++) {
		m->images[i].index_first = n;
		m->images[i].n_blocks = bundle_blocks(m->images[i].size, m->block_size);
		n += m->images[i].n_blocks;
	}
	if (n > BUNDLE_MAX_INDEX / BUNDLE_HASH_SIZE)
		return error_set(err, -EBADMSG, "manifest: %" PRIu64 " blocks of %" PRIu32 " bytes: the "
				 "index would exceed %d bytes (use a larger block size)", n,
				 m->block_size, BUNDLE_MAX_INDEX);
	return chunks_place(m, n, err);
}

int bundle_chunks_check(const struct bundle_manifest *m, const uint8_t *index,
			struct error *err)
{
	for (size_t i = 0; m->format_major >= 3 && i < m->n_images; i++) {
		const struct bundle_image *img = &m->images[i];
		uint64_t at = 0;

		for (uint64_t c = 0; c < img->n_chunks; c++) {
			uint32_t len = chunk_entry_len(bundle_chunk_entry(m, index, img, c));
			if (len < 1 || len > CHUNK_MAX || len > img->size - at)
				return error_set(err, -EBADMSG, "chunk table: image %zu \"%s\": chunk %"
						 PRIu64 " (at image byte %" PRIu64 ") has length %"
						 PRIu32 ", must be 1..%d and end by byte %" PRIu64,
						 i, img->slot, c, at, len, CHUNK_MAX, img->size);
			at += len;
		}
		if (at != img->size)
			return error_set(err, -EBADMSG, "chunk table: image %zu \"%s\": its %" PRIu64
					 " chunks cover %" PRIu64 " of its %" PRIu64 " bytes", i,
					 img->slot, img->n_chunks, at, img->size);
	}
	return 0;
}

int bundle_index_sha256(const void *buf, uint64_t len, uint8_t ret[32])
{
	if (len > SIZE_MAX)
		return -EFBIG;
	hash_buf(buf, len, ret);
	return 0;
}

void bundle_manifest_layout(struct bundle_manifest *m, unsigned n_sigs)
{
	uint64_t off = BUNDLE_HEADER_SIZE + (uint64_t)m->manifest_size +
		       (uint64_t)n_sigs * BUNDLE_SIG_ENTRY_SIZE;

	m->index_offset = off;
	off += m->index_size;
	m->payload_offset = off;
	for (size_t i = 0; i < m->n_images; i++) {
		m->images[i].offset = off;
		off += m->images[i].stored_size;
	}
	m->total_size = off;
}

/* The signed bytes must be exactly what json-c's plain serialisation of
 * the parsed document produces: no whitespace, no duplicate keys, one
 * spelling per string and number. Two parsers can then never disagree on
 * what was signed. */
static int check_canonical(struct json_object *o, const char *buf, size_t len,
			   struct error *err)
{
	size_t clen;
	const char *c = json_object_to_json_string_length(
		o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE, &clen);
	size_t i;

	if (!c)
		return -ENOMEM;
	if (clen == len && !memcmp(c, buf, len))
		return 0;
	for (i = 0; i < MIN(len, clen) && c[i] == buf[i]; i++)
		;
	return error_set(err, -EBADMSG, "manifest: not in canonical form at byte %zu (whitespace, "
		    "duplicate key, or a non-canonical string or number)", i);
}

int bundle_manifest_parse(const void *buf, size_t len, struct bundle_manifest *ret,
			  struct error *err)
{
	_cleanup_json_ struct json_object *o = NULL;
	struct json_tokener *tok;
	struct bundle_manifest m = { 0 };
	struct json_object *v;
	uint64_t major, minor;
	struct images_ctx ictx = { .m = &m };
	enum json_tokener_error jerr;
	size_t consumed;
	int r;

	if (len < 2 || len > BUNDLE_MAX_MANIFEST)
		return error_set(err, -EBADMSG, "manifest: %zu bytes, must be 2..%d", len,
			    BUNDLE_MAX_MANIFEST);
	if (memchr(buf, '\0', len))
		return error_set(err, -EBADMSG, "manifest: contains a NUL byte");
	tok = json_tokener_new_ex(8);
	if (!tok)
		return -ENOMEM;
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
	o = json_tokener_parse_ex(tok, buf, (int)len);
	jerr = json_tokener_get_error(tok);
	consumed = json_tokener_get_parse_end(tok);
	json_tokener_free(tok);
	if (!o || jerr != json_tokener_success)
		return error_set(err, -EBADMSG, "manifest: invalid JSON at byte %zu: %s", consumed,
			    jerr == json_tokener_continue ? "unexpected end" :
			    json_tokener_error_desc(jerr));
	if (consumed != len)
		return error_set(err, -EBADMSG, "manifest: trailing bytes after the JSON object at "
			    "byte %zu", consumed);
	if (!json_object_is_type(o, json_type_object))
		return error_set(err, -EBADMSG, "manifest: must be a JSON object");
	r = check_canonical(o, buf, len, err);
	if (r < 0)
		return r;
	if (!json_object_object_get_ex(o, "format_major", &v))
		return error_set(err, -EBADMSG, "manifest: missing field \"format_major\"");
	r = get_u64(v, "format_major", 1, 65535, &major, err);
	if (r < 0)
		return r;
	if (major < BUNDLE_FORMAT_MAJOR_OLDEST || major > BUNDLE_FORMAT_MAJOR)
		return error_set(err, -EPROTONOSUPPORT, "manifest: format %" PRIu64 ".x, this flashd "
			    "reads %d.x to %d.x", major, BUNDLE_FORMAT_MAJOR_OLDEST,
			    BUNDLE_FORMAT_MAJOR);
	if (!json_object_object_get_ex(o, "format_minor", &v))
		return error_set(err, -EBADMSG, "manifest: missing field \"format_minor\"");
	r = get_u64(v, "format_minor", 0, 65535, &minor, err);
	if (r < 0)
		return r;
	m.format_major = major;
	m.format_minor = minor;
	/* a newer minor may add fields an older reader safely ignores (every
	 * major this flashd reads is known up to minor 0) */
	ictx.ignore_unknown = minor > 0;
	json_object_object_foreach(o, key, val) {
		size_t i;
		for (i = 0; i < ELEMENTSOF(manifest_fields); i++)
			if (!strcmp(manifest_fields[i].name, key))
				break;
		if (i == ELEMENTSOF(manifest_fields)) {
			if (ictx.ignore_unknown)
				continue;
			return error_set(err, -EBADMSG, "manifest: unknown field \"%.40s\" (format %d.%d "
				    "defines no such field)", key, BUNDLE_FORMAT_MAJOR,
				    BUNDLE_FORMAT_MINOR);
		}
		r = manifest_fields[i].parse(val, manifest_fields[i].parse == parse_images ?
					     (void *)&ictx : (void *)&m, key, err);
		if (r < 0)
			return r;
	}
	for (size_t i = 0; i < ELEMENTSOF(manifest_fields); i++)
		if (manifest_fields[i].required &&
		    !json_object_object_get_ex(o, manifest_fields[i].name, NULL))
			return error_set(err, -EBADMSG, "manifest: missing field \"%s\"",
				    manifest_fields[i].name);
	r = index_check(&m, err);
	if (r < 0)
		return r;
	m.manifest_size = len;
	*ret = m;
	return 0;
}

int bundle_manifest_check(const struct bundle_manifest *m, const char *compatible,
			  const struct bundle_slot_limit *slots, size_t n_slots,
			  struct error *err)
{
	if (compatible && strcmp(m->compatible, compatible))
		return error_set(err, -EMEDIUMTYPE, "bundle is for \"%s\", this system is \"%s\"",
			    m->compatible, compatible);
	for (size_t i = 0; n_slots && i < m->n_images; i++) {
		const struct bundle_image *img = &m->images[i];
		size_t j;

		for (j = 0; j < n_slots; j++)
			if (slots[j].slot && !strcmp(slots[j].slot, img->slot))
				break;
		if (j == n_slots)
			return error_set(err, -ENXIO, "image %u \"%s\": the target slot has no \"%s\" "
				    "member", img->index, img->slot, img->slot);
		if (img->size > slots[j].max_size)
			return error_set(err, -EFBIG, "image %u \"%s\": %" PRIu64 " bytes, larger than "
				    "the slot's %" PRIu64, img->index, img->slot, img->size,
				    slots[j].max_size);
		if (slots[j].image_type &&
		    strcmp(slots[j].image_type, bundle_image_type_to_string(img->type)))
			return error_set(err, -EMEDIUMTYPE, "image %u \"%s\" is of type %s; the layout's "
				    "slots take a %s image for \"%s\"", img->index, img->slot,
				    bundle_image_type_to_string(img->type), slots[j].image_type,
				    img->slot);
	}
	return 0;
}

bool bundle_is_cramfs(const void *head, size_t len)
{
	static const uint8_t le[4] = { 0x45, 0x3d, 0xcd, 0x28 }, be[4] = { 0x28, 0xcd, 0x3d, 0x45 };

	return len >= 4 && (!memcmp(head, le, 4) || !memcmp(head, be, 4));
}

int bundle_manifest_to_json(const struct bundle_manifest *m, struct json_object **ret)
{
	_cleanup_json_ struct json_object *o = json_object_new_object();
	struct json_object *imgs = json_object_new_array();
	char buf[2 * KEYRING_ID_SIZE + 1], fmt[16];

	if (!o || !imgs) {
		json_object_put(imgs);
		return -ENOMEM;
	}
	snprintf(fmt, sizeof(fmt), "%u.%u", m->format_major, m->format_minor);
	json_object_object_add(o, "format", json_object_new_string(fmt));
	json_object_object_add(o, "compatible", json_object_new_string(m->compatible));
	json_object_object_add(o, "version", json_object_new_string(m->version));
	json_object_object_add(o, "build_date", json_object_new_string(m->build_date));
	json_object_object_add(o, "description", json_object_new_string(m->description));
	json_object_object_add(o, "trust", json_object_new_string(bundle_trust_to_string(m->trust)));
	json_object_object_add(o, "signed", json_object_new_boolean(m->is_signed));
	json_object_object_add(o, "signatures", json_object_new_int(m->n_signatures));
	if (m->is_signed) {
		util_hex(m->signer_id, KEYRING_ID_SIZE, buf);
		json_object_object_add(o, "signer_key_id", json_object_new_string(buf));
		json_object_object_add(o, "signer_key", json_object_new_string(m->signer_name));
	}
	json_object_object_add(o, "manifest_size", json_object_new_int64(m->manifest_size));
	json_object_object_add(o, "total_size", json_object_new_int64(m->total_size));
	if (m->block_size) {
		util_hex(m->index_sha256, 32, buf);
		json_object_object_add(o, "block_size", json_object_new_int64(m->block_size));
		json_object_object_add(o, "index_size", json_object_new_int64(m->index_size));
		json_object_object_add(o, "index_sha256", json_object_new_string(buf));
	}
	for (size_t i = 0; i < m->n_images; i++) {
		const struct bundle_image *img = &m->images[i];
		struct json_object *j = json_object_new_object();

		if (!j)
			return -ENOMEM;
		util_hex(img->sha256, 32, buf);
		json_object_object_add(j, "slot", json_object_new_string(img->slot));
		json_object_object_add(j, "type",
				       json_object_new_string(bundle_image_type_to_string(img->type)));
		json_object_object_add(j, "compression", json_object_new_string(
					       bundle_compression_to_string(img->compression)));
		json_object_object_add(j, "size", json_object_new_int64(img->size));
		json_object_object_add(j, "stored_size", json_object_new_int64(img->stored_size));
		json_object_object_add(j, "offset", json_object_new_int64(img->offset));
		json_object_object_add(j, "sha256", json_object_new_string(buf));
		json_object_array_add(imgs, j);
	}
	json_object_object_add(o, "images", imgs);
	*ret = TAKE_PTR(o);
	return 0;
}

/* ---- header ---- */

/* Header, little-endian:
 *   0  magic "FLASHDBL"      8  u16 format_major   10 u16 format_minor
 *  12  u32 manifest_size    16  u16 n_signatures   18 u16 reserved (0)
 *  20  u32 crc32 of bytes 0..19                    24 8 reserved (0) */
void bundle_header_build(uint8_t h[BUNDLE_HEADER_SIZE], unsigned major, unsigned minor,
			 uint32_t manifest_size, unsigned n_sigs)
{
	memset(h, 0, BUNDLE_HEADER_SIZE);
	memcpy(h, BUNDLE_MAGIC, 8);
	put16(h + 8, major);
	put16(h + 10, minor);
	put32(h + 12, manifest_size);
	put16(h + 16, n_sigs);
	put32(h + 20, crc32(0, h, 20));
}

int bundle_header_parse(const uint8_t h[BUNDLE_HEADER_SIZE], unsigned *ret_major,
			unsigned *ret_minor, uint32_t *ret_manifest_size, unsigned *ret_sigs,
			struct error *err)
{
	uint32_t msize;
	unsigned sigs;

	if (memcmp(h, BUNDLE_MAGIC, 8))
		return error_set(err, -EBADMSG, "not a flashd bundle (bad magic at byte 0, expected "
			    "\"%s\")", BUNDLE_MAGIC);
	if (get32(h + 20) != crc32(0, h, 20))
		return error_set(err, -EBADMSG, "bundle header corrupt (crc32 mismatch)");
	if (get16(h + 8) < BUNDLE_FORMAT_MAJOR_OLDEST || get16(h + 8) > BUNDLE_FORMAT_MAJOR)
		return error_set(err, -EPROTONOSUPPORT, "bundle format %u.%u, this flashd reads %d.x "
			    "to %d.x only", get16(h + 8), get16(h + 10), BUNDLE_FORMAT_MAJOR_OLDEST,
			    BUNDLE_FORMAT_MAJOR);
	msize = get32(h + 12);
	sigs = get16(h + 16);
	if (msize < 2 || msize > BUNDLE_MAX_MANIFEST)
		return error_set(err, -EBADMSG, "bundle header: manifest size %" PRIu32 " out of range "
			    "2..%d", msize, BUNDLE_MAX_MANIFEST);
	if (sigs > BUNDLE_MAX_SIGNATURES)
		return error_set(err, -EBADMSG, "bundle header: %u signatures, at most %d", sigs,
			    BUNDLE_MAX_SIGNATURES);
	if (get16(h + 18) || !util_mem_is(h + 24, 0, 8))
		return error_set(err, -EBADMSG, "bundle header: reserved bytes not zero");
	*ret_major = get16(h + 8);
	*ret_minor = get16(h + 10);
	*ret_manifest_size = msize;
	*ret_sigs = sigs;
	return 0;
}
