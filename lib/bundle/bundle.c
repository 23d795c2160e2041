/* Update bundles: streaming reader and host-side writer (see bundle.h and
 * docs/bundle-format.md). */
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
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <zlib.h>

#include "bundle.h"
#include "cleanup.h"
#include "cleanup_crypto.h"
#include "cleanup_json.h"
#include "util.h"


static void hex(const uint8_t *p, size_t n, char *out)
{
	static const char digits[] = "0123456789abcdef";

	for (size_t i = 0; i < n; i++) {
		out[2 * i] = digits[p[i] >> 4];
		out[2 * i + 1] = digits[p[i] & 15];
	}
	out[2 * n] = '\0';
}

static uint16_t get16(const uint8_t *p) { return p[0] | (uint16_t)p[1] << 8; }
static uint32_t get32(const uint8_t *p) { return get16(p) | (uint32_t)get16(p + 2) << 16; }
static void put16(uint8_t *p, uint16_t v) { p[0] = v; p[1] = v >> 8; }
static void put32(uint8_t *p, uint32_t v) { put16(p, v); put16(p + 2, v >> 16); }

/* ---- enums ---- */

static const char *const bundle_image_type_table[_BUNDLE_IMAGE_TYPE_MAX] = {
	[BUNDLE_IMAGE_SQUASHFS] = "squashfs",
	[BUNDLE_IMAGE_RAW] = "raw",
};
DEFINE_STRING_TABLE(bundle_image_type, enum bundle_image_type)
static const char *const bundle_compression_table[_BUNDLE_COMPRESSION_MAX] = {
	[BUNDLE_COMPRESSION_NONE] = "none",
	[BUNDLE_COMPRESSION_GZIP] = "gzip",
};
DEFINE_STRING_TABLE(bundle_compression, enum bundle_compression)
static const char *const bundle_trust_table[_BUNDLE_TRUST_MAX] = {
	[BUNDLE_TRUST_VERIFIED] = "verified",
	[BUNDLE_TRUST_UNSIGNED] = "unsigned",
	[BUNDLE_TRUST_UNKNOWN_KEY] = "unknown-key",
	[BUNDLE_TRUST_UNCHECKED] = "unchecked",
};
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

static int parse_type(struct json_object *v, void *t, const char *path, struct error *err)
{
	struct bundle_image *img = t;
	const char *s;
	int r = get_string(v, path, &s, err);

	if (r < 0)
		return r;
	r = bundle_image_type_from_string(s);
	if (r < 0)
		return error_set(err, -EBADMSG, "manifest: %s: unknown image type \"%.40s\" "
			    "(squashfs, raw)", path, s);
	img->type = r;
	return 0;
}

static int parse_compression(struct json_object *v, void *t, const char *path,
			     struct error *err)
{
	struct bundle_image *img = t;
	const char *s;
	int r = get_string(v, path, &s, err);

	if (r < 0)
		return r;
	r = bundle_compression_from_string(s);
	if (r < 0)
		return error_set(err, -EBADMSG, "manifest: %s: unknown compression \"%.40s\" "
			    "(none, gzip)", path, s);
	img->compression = r;
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

static int parse_sha256(struct json_object *v, void *t, const char *path, struct error *err)
{
	struct bundle_image *img = t;
	const char *s;
	int r = get_string(v, path, &s, err);

	if (r < 0)
		return r;
	if (parse_hex32(s, img->sha256) < 0)
		return error_set(err, -EBADMSG, "manifest: %s: not 64 lower-case hex digits", path);
	return 0;
}

static int parse_images(struct json_object *v, void *t, const char *path, struct error *err);

static const struct field manifest_fields[] = {
	{ "format_major", true, parse_format },
	{ "format_minor", true, parse_format },
	{ "compatible", true, parse_compatible },
	{ "version", true, parse_version },
	{ "build_date", true, parse_build_date },
	{ "description", false, parse_description },
	{ "images", true, parse_images },
};

static const struct field image_fields[] = {
	{ "slot", true, parse_slot },
	{ "type", true, parse_type },
	{ "size", true, parse_size },
	{ "sha256", true, parse_sha256 },
	{ "compression", true, parse_compression },
	{ "stored_size", true, parse_stored_size },
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
	if (major != BUNDLE_FORMAT_MAJOR)
		return error_set(err, -EPROTONOSUPPORT, "manifest: format %" PRIu64 ".x, this flashd "
			    "reads %d.x", major, BUNDLE_FORMAT_MAJOR);
	if (!json_object_object_get_ex(o, "format_minor", &v))
		return error_set(err, -EBADMSG, "manifest: missing field \"format_minor\"");
	r = get_u64(v, "format_minor", 0, 65535, &minor, err);
	if (r < 0)
		return r;
	m.format_major = major;
	m.format_minor = minor;
	/* a newer minor may add fields an older reader safely ignores */
	ictx.ignore_unknown = minor > BUNDLE_FORMAT_MINOR;
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
		hex(m->signer_id, KEYRING_ID_SIZE, buf);
		json_object_object_add(o, "signer_key_id", json_object_new_string(buf));
		json_object_object_add(o, "signer_key", json_object_new_string(m->signer_name));
	}
	json_object_object_add(o, "manifest_size", json_object_new_int64(m->manifest_size));
	json_object_object_add(o, "total_size", json_object_new_int64(m->total_size));
	for (size_t i = 0; i < m->n_images; i++) {
		const struct bundle_image *img = &m->images[i];
		struct json_object *j = json_object_new_object();

		if (!j)
			return -ENOMEM;
		hex(img->sha256, 32, buf);
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
static void header_build(uint8_t h[BUNDLE_HEADER_SIZE], uint32_t manifest_size, unsigned n_sigs)
{
	memset(h, 0, BUNDLE_HEADER_SIZE);
	memcpy(h, BUNDLE_MAGIC, 8);
	put16(h + 8, BUNDLE_FORMAT_MAJOR);
	put16(h + 10, BUNDLE_FORMAT_MINOR);
	put32(h + 12, manifest_size);
	put16(h + 16, n_sigs);
	put32(h + 20, crc32(0, h, 20));
}

static int header_parse(const uint8_t h[BUNDLE_HEADER_SIZE], unsigned *ret_major,
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
	if (get16(h + 8) != BUNDLE_FORMAT_MAJOR)
		return error_set(err, -EPROTONOSUPPORT, "bundle format %u.%u, this flashd reads %d.x "
			    "only", get16(h + 8), get16(h + 10), BUNDLE_FORMAT_MAJOR);
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

/* ---- reader ---- */

enum reader_state {
	RS_HEADER,
	RS_MANIFEST,
	RS_SIGS,
	RS_IMAGE,
	RS_DONE,
	RS_STOPPED,
	RS_FAILED,
};

struct bundle_reader {
	struct bundle_policy policy;
	struct bundle_reader_ops ops;
	void *userdata;
	enum reader_state state;
	int error;
	struct error saved;

	uint64_t offset;                 /* stream bytes consumed */
	size_t fill;                     /* bytes gathered for the current fixed part */
	uint8_t header[BUNDLE_HEADER_SIZE];
	unsigned hdr_major, hdr_minor, n_sigs;
	uint32_t manifest_size;
	uint8_t *manifest_buf;
	uint8_t sigs[BUNDLE_MAX_SIGNATURES * BUNDLE_SIG_ENTRY_SIZE];

	struct bundle_manifest m;
	bool have_manifest;
	size_t cur;                      /* image being read */
	uint64_t stored_done, out_done;
	EVP_MD_CTX *sha;
	z_stream z;
	bool z_init, z_end;
	uint8_t *zout;
	uint8_t sb[SQUASHFS_SUPERBLOCK_SIZE];
	size_t sb_fill;

	size_t mem_cur, mem_peak;
};

/* Accounted allocations: a size prefix lets frees be subtracted. */
static void *r_alloc(struct bundle_reader *r, size_t n)
{
	size_t *p = malloc(n + sizeof(max_align_t));

	if (!p)
		return NULL;
	*p = n;
	r->mem_cur += n;
	r->mem_peak = MAX(r->mem_peak, r->mem_cur);
	return (char *)p + sizeof(max_align_t);
}

static void r_free(struct bundle_reader *r, void *q)
{
	size_t *p;

	if (!q)
		return;
	p = (size_t *)((char *)q - sizeof(max_align_t));
	r->mem_cur -= *p;
	free(p);
}

static voidpf z_alloc(voidpf opaque, uInt items, uInt size)
{
	if (size && items > SIZE_MAX / size)
		return NULL;
	return r_alloc(opaque, (size_t)items * size);
}

static void z_free(voidpf opaque, voidpf p)
{
	r_free(opaque, p);
}

int bundle_reader_new(const struct bundle_policy *policy, const struct bundle_reader_ops *ops,
		      void *userdata, struct bundle_reader **ret)
{
	struct bundle_reader *r = calloc(1, sizeof(*r));

	if (!r)
		return -ENOMEM;
	if (policy)
		r->policy = *policy;
	if (ops)
		r->ops = *ops;
	r->userdata = userdata;
	r->mem_cur = r->mem_peak = sizeof(*r);
	*ret = r;
	return 0;
}

static void reader_image_reset(struct bundle_reader *r)
{
	if (r->z_init)
		inflateEnd(&r->z);
	r->z_init = r->z_end = false;
	r_free(r, r->zout);
	r->zout = NULL;
	EVP_MD_CTX_free(r->sha);
	r->sha = NULL;
}

void bundle_reader_free(struct bundle_reader *r)
{
	if (!r)
		return;
	reader_image_reset(r);
	r_free(r, r->manifest_buf);
	free(r);
}

const struct bundle_manifest *bundle_reader_manifest(const struct bundle_reader *r)
{
	return r->have_manifest ? &r->m : NULL;
}

bool bundle_reader_done(const struct bundle_reader *r)
{
	return r->state == RS_DONE;
}

uint64_t bundle_reader_offset(const struct bundle_reader *r)
{
	return r->offset;
}

size_t bundle_reader_mem_current(const struct bundle_reader *r)
{
	return r->mem_cur;
}

size_t bundle_reader_mem_peak(const struct bundle_reader *r)
{
	return r->mem_peak;
}

/* Run a caller callback; make sure a refusal carries a message. */
static int call(struct bundle_reader *r, int cb_r, const char *what, struct error *err)
{
	if (cb_r >= 0)
		return cb_r;
	if (!err->msg[0])
		error_set(err, cb_r, "%s refused by the caller: %s", what, strerror(-cb_r));
	return cb_r;
}

static int verify_signatures(struct bundle_reader *r, struct error *err)
{
	struct bundle_manifest *m = &r->m;
	char idhex[2 * KEYRING_ID_SIZE + 1], unknown[4 * 20] = "";
	bool verified = false;

	m->n_signatures = r->n_sigs;
	if (r->policy.skip_signatures) {
		m->trust = BUNDLE_TRUST_UNCHECKED;
		return 0;
	}
	for (unsigned i = 0; i < r->n_sigs; i++) {
		const uint8_t *e = r->sigs + i * BUNDLE_SIG_ENTRY_SIZE;
		const struct keyring_key *key;

		for (unsigned j = 0; j < i; j++)
			if (!memcmp(e, r->sigs + j * BUNDLE_SIG_ENTRY_SIZE, KEYRING_ID_SIZE))
				return error_set(err, -EBADMSG, "signature %u repeats the key of "
					    "signature %u", i, j);
		hex(e, KEYRING_ID_SIZE, idhex);
		key = keyring_find(r->policy.keyring, e);
		if (!key) {
			size_t n = strlen(unknown);
			snprintf(unknown + n, sizeof(unknown) - n, "%s%.16s", n ? ", " : "", idhex);
			continue;
		}
		/* a trusted key's signature that fails means tampering: never accepted */
		if (keyring_verify(key, r->manifest_buf, r->manifest_size,
				   e + KEYRING_ID_SIZE) < 0)
			return error_set(err, -EKEYREJECTED, "signature %u by trusted key %.16s (%s) does "
				    "not verify: manifest tampered or signature corrupt", i,
				    idhex, key->name);
		if (!verified) {
			verified = true;
			memcpy(m->signer_id, key->id, KEYRING_ID_SIZE);
			snprintf(m->signer_name, sizeof(m->signer_name), "%s", key->name);
		}
	}
	if (verified) {
		m->trust = BUNDLE_TRUST_VERIFIED;
		m->is_signed = true;
		return 0;
	}
	m->trust = r->n_sigs ? BUNDLE_TRUST_UNKNOWN_KEY : BUNDLE_TRUST_UNSIGNED;
	if (r->policy.allow_unsigned)
		return 0;
	if (!r->n_sigs)
		return error_set(err, -ENOKEY, "bundle is not signed (refused: unsigned bundles are "
			    "accepted only with allow-unsigned)");
	return error_set(err, -ENOKEY, "bundle signed only by unknown key(s) %s: none is in the "
		    "keyring (%zu trusted key(s))", unknown, keyring_count(r->policy.keyring));
}

static int process_manifest(struct bundle_reader *r, struct error *err)
{
	struct bundle_manifest parsed;
	uint64_t off;
	int r2;

	/* signatures first: untrusted JSON is parsed only once it is known
	 * to be signed (or the policy accepts unsigned input) */
	r2 = verify_signatures(r, err);
	if (r2 < 0)
		return r2;
	r2 = bundle_manifest_parse(r->manifest_buf, r->manifest_size, &parsed, err);
	if (r2 < 0)
		return r2;
	if (parsed.format_major != r->hdr_major || parsed.format_minor != r->hdr_minor)
		return error_set(err, -EBADMSG, "header says format %u.%u, the signed manifest %u.%u",
			    r->hdr_major, r->hdr_minor, parsed.format_major, parsed.format_minor);
	/* keep the trust fields verify_signatures() filled */
	memcpy(parsed.signer_id, r->m.signer_id, sizeof(parsed.signer_id));
	memcpy(parsed.signer_name, r->m.signer_name, sizeof(parsed.signer_name));
	parsed.trust = r->m.trust;
	parsed.is_signed = r->m.is_signed;
	parsed.n_signatures = r->m.n_signatures;
	off = r->offset;
	parsed.payload_offset = off;
	for (size_t i = 0; i < parsed.n_images; i++) {
		parsed.images[i].offset = off;
		off += parsed.images[i].stored_size;
	}
	parsed.total_size = off;
	r->m = parsed;
	r->have_manifest = true;
	r_free(r, r->manifest_buf);
	r->manifest_buf = NULL;

	r2 = bundle_manifest_check(&r->m, r->policy.compatible, r->policy.slots,
				   r->policy.n_slots, err);
	if (r2 < 0)
		return r2;
	if (r->ops.manifest)
		return call(r, r->ops.manifest(r->userdata, &r->m, err), "manifest", err);
	return 0;
}

static int image_begin(struct bundle_reader *r, struct error *err)
{
	const struct bundle_image *img = &r->m.images[r->cur];

	r->stored_done = r->out_done = 0;
	r->sb_fill = 0;
	r->sha = EVP_MD_CTX_new();
	if (!r->sha || EVP_DigestInit_ex(r->sha, EVP_sha256(), NULL) != 1)
		return -ENOMEM;
	if (img->compression == BUNDLE_COMPRESSION_GZIP) {
		r->zout = r_alloc(r, BUNDLE_INFLATE_CHUNK);
		if (!r->zout)
			return -ENOMEM;
		r->z = (z_stream) { .zalloc = z_alloc, .zfree = z_free, .opaque = r };
		if (inflateInit2(&r->z, 15 + 16) != Z_OK) /* gzip wrapper only */
			return -ENOMEM;
		r->z_init = true;
	}
	if (r->ops.image_begin)
		return call(r, r->ops.image_begin(r->userdata, img, err), "image", err);
	return 0;
}

static int deliver(struct bundle_reader *r, const uint8_t *p, size_t n, struct error *err)
{
	const struct bundle_image *img = &r->m.images[r->cur];

	if (!n || !r->ops.image_data)
		return 0;
	return call(r, r->ops.image_data(r->userdata, img, p, n, err), "image data", err);
}

/* The first bytes of every image are held back until they passed: a
 * CramFS image is refused by name, a squashfs superblock is checked. */
static int check_head(struct bundle_reader *r, const struct bundle_image *img,
		      struct error *err)
{
	uint64_t max = img->size;
	int ret;

	if (bundle_is_cramfs(r->sb, r->sb_fill))
		return error_set(err, -EMEDIUMTYPE, "image %u \"%s\": %s", img->index, img->slot,
			    BUNDLE_CRAMFS_REFUSED);
	if (img->type != BUNDLE_IMAGE_SQUASHFS)
		return 0;
	for (size_t i = 0; i < r->policy.n_slots; i++)
		if (r->policy.slots[i].slot && !strcmp(r->policy.slots[i].slot, img->slot))
			max = MIN(max, r->policy.slots[i].max_size);
	ret = squashfs_check_superblock(r->sb, sizeof(r->sb), max, NULL, err);
	if (ret < 0)
		return error_prefix(err, ret, "image %u \"%s\"", img->index, img->slot);
	return 0;
}

/* Uncompressed image bytes: hash, hold back the head until it is checked,
 * pass on. */
static int emit(struct bundle_reader *r, const uint8_t *p, size_t n, struct error *err)
{
	const struct bundle_image *img = &r->m.images[r->cur];
	size_t head = MIN(img->size, (uint64_t)SQUASHFS_SUPERBLOCK_SIZE);
	int ret;

	if (n > img->size - r->out_done)
		return error_set(err, -EBADMSG, "image %u \"%s\": data runs past its declared size "
			    "%" PRIu64 " (corrupt or tampered payload)", img->index, img->slot,
			    img->size);
	r->out_done += n;
	if (EVP_DigestUpdate(r->sha, p, n) != 1)
		return -EIO;
	if (r->sb_fill < head) {
		size_t take = MIN(n, head - r->sb_fill);

		memcpy(r->sb + r->sb_fill, p, take);
		r->sb_fill += take;
		p += take;
		n -= take;
		if (r->sb_fill < head)
			return 0;
		ret = check_head(r, img, err);
		if (ret >= 0)
			ret = deliver(r, r->sb, r->sb_fill, err);
		if (ret < 0)
			return ret;
	}
	return deliver(r, p, n, err);
}

static int consume_gzip(struct bundle_reader *r, const uint8_t *p, size_t n,
			struct error *err)
{
	const struct bundle_image *img = &r->m.images[r->cur];
	int zr, ret;

	r->z.next_in = (Bytef *)p;
	r->z.avail_in = n;
	while (r->z.avail_in > 0) {
		if (r->z_end)
			return error_set(err, -EBADMSG, "image %u \"%s\": gzip stream ends %u bytes before "
				    "its stored_size %" PRIu64, img->index, img->slot,
				    r->z.avail_in, img->stored_size);
		r->z.next_out = r->zout;
		r->z.avail_out = BUNDLE_INFLATE_CHUNK;
		zr = inflate(&r->z, Z_NO_FLUSH);
		if (zr != Z_OK && zr != Z_STREAM_END && zr != Z_BUF_ERROR)
			return error_set(err, -EBADMSG, "image %u \"%s\": corrupt gzip data near stored "
				    "byte %" PRIu64 ": %s", img->index, img->slot,
				    r->stored_done + (n - r->z.avail_in),
				    r->z.msg ? r->z.msg : zError(zr));
		ret = emit(r, r->zout, BUNDLE_INFLATE_CHUNK - r->z.avail_out, err);
		if (ret < 0)
			return ret;
		if (zr == Z_STREAM_END)
			r->z_end = true;
	}
	return 0;
}

static int image_end(struct bundle_reader *r, struct error *err)
{
	const struct bundle_image *img = &r->m.images[r->cur];
	uint8_t md[32];
	char want[65], got[65];
	unsigned mdlen = 0;

	if (img->compression == BUNDLE_COMPRESSION_GZIP && !r->z_end)
		return error_set(err, -EBADMSG, "image %u \"%s\": gzip stream incomplete at its stored_size "
			    "%" PRIu64 " (corrupt or tampered payload)", img->index, img->slot,
			    img->stored_size);
	if (r->out_done != img->size)
		return error_set(err, -EBADMSG, "image %u \"%s\": %" PRIu64 " bytes, manifest says %"
			    PRIu64, img->index, img->slot, r->out_done, img->size);
	if (EVP_DigestFinal_ex(r->sha, md, &mdlen) != 1 || mdlen != 32)
		return -EIO;
	if (memcmp(md, img->sha256, 32)) {
		hex(img->sha256, 32, want);
		hex(md, 32, got);
		return error_set(err, -EBADMSG, "image %u \"%s\": sha256 mismatch (payload corrupt or "
			    "tampered): manifest %.16s..., data %.16s...", img->index, img->slot,
			    want, got);
	}
	reader_image_reset(r);
	if (r->ops.image_end)
		return call(r, r->ops.image_end(r->userdata, img, err), "image end", err);
	return 0;
}

/* Gather a fixed-size part; true when complete. */
static bool gather(struct bundle_reader *r, uint8_t *dst, size_t want, const uint8_t **p,
		   size_t *n)
{
	size_t take = MIN(want - r->fill, *n);

	memcpy(dst + r->fill, *p, take);
	r->fill += take;
	*p += take;
	*n -= take;
	r->offset += take;
	if (r->fill < want)
		return false;
	r->fill = 0;
	return true;
}

static int step(struct bundle_reader *r, const uint8_t **p, size_t *n, struct error *err)
{
	const struct bundle_image *img;
	size_t take;
	int ret;

	switch (r->state) {
	case RS_HEADER:
		if (!gather(r, r->header, BUNDLE_HEADER_SIZE, p, n))
			return 0;
		ret = header_parse(r->header, &r->hdr_major, &r->hdr_minor, &r->manifest_size,
				   &r->n_sigs, err);
		if (ret < 0)
			return ret;
		r->manifest_buf = r_alloc(r, r->manifest_size);
		if (!r->manifest_buf)
			return -ENOMEM;
		r->state = RS_MANIFEST;
		return 0;
	case RS_MANIFEST:
		if (!gather(r, r->manifest_buf, r->manifest_size, p, n))
			return 0;
		r->state = RS_SIGS;
		if (r->n_sigs)
			return 0;
		/* no signature block: process right away */
		__attribute__((fallthrough));
	case RS_SIGS:
		if (r->n_sigs && !gather(r, r->sigs, r->n_sigs * BUNDLE_SIG_ENTRY_SIZE, p, n))
			return 0;
		ret = process_manifest(r, err);
		if (ret < 0)
			return ret;
		if (ret == BUNDLE_STOP) {
			r->state = RS_STOPPED;
			return BUNDLE_STOP;
		}
		r->state = RS_IMAGE;
		r->cur = 0;
		return image_begin(r, err);
	case RS_IMAGE:
		img = &r->m.images[r->cur];
		take = MIN(*n, img->stored_size - r->stored_done);
		ret = img->compression == BUNDLE_COMPRESSION_GZIP ? consume_gzip(r, *p, take, err) :
			emit(r, *p, take, err);
		if (ret < 0)
			return ret;
		r->stored_done += take;
		r->offset += take;
		*p += take;
		*n -= take;
		if (r->stored_done < img->stored_size)
			return 0;
		ret = image_end(r, err);
		if (ret < 0)
			return ret;
		if (++r->cur == r->m.n_images) {
			r->state = RS_DONE;
			return 0;
		}
		return image_begin(r, err);
	case RS_DONE:
		if (*n == 0)
			return 0;
		return error_set(err, -EBADMSG, "%zu bytes of trailing data after the last image (at "
			    "byte %" PRIu64 ")", *n, r->offset);
	case RS_STOPPED:
		*n = 0;
		return BUNDLE_STOP;
	case RS_FAILED:
		return r->error;
	}
	return -EINVAL;
}

int bundle_reader_feed(struct bundle_reader *r, const void *buf, size_t len,
		       struct error *err)
{
	struct error local;
	const uint8_t *p = buf;
	int ret = 0;

	if (!err)
		err = &local;
	if (r->state == RS_FAILED) {
		*err = r->saved;
		return r->error;
	}
	err->msg[0] = '\0';
	do {
		ret = step(r, &p, &len, err);
	} while (ret == 0 && len > 0);
	if (ret < 0) {
		if (!err->msg[0])
			error_set(err, ret, "at byte %" PRIu64 ": %s", r->offset, strerror(-ret));
		r->state = RS_FAILED;
		r->error = ret;
		r->saved = *err;
		reader_image_reset(r);
		return ret;
	}
	return ret;
}

int bundle_reader_finish(struct bundle_reader *r, struct error *err)
{
	const struct bundle_image *img;

	switch (r->state) {
	case RS_DONE:
	case RS_STOPPED:
		return 0;
	case RS_FAILED:
		if (err)
			*err = r->saved;
		return r->error;
	case RS_HEADER:
		if (r->fill == 0)
			return error_set(err, -ENODATA, "empty stream: no bundle");
		return error_set(err, -ENODATA, "truncated bundle: stream ended in the header after "
			    "%" PRIu64 " bytes", r->offset);
	case RS_MANIFEST:
	case RS_SIGS:
		return error_set(err, -ENODATA, "truncated bundle: stream ended in the %s at byte %"
			    PRIu64, r->state == RS_MANIFEST ? "manifest" : "signatures", r->offset);
	case RS_IMAGE:
		img = &r->m.images[r->cur];
		return error_set(err, -ENODATA, "truncated bundle: stream ended in image %u \"%s\" after "
			    "%" PRIu64 " of %" PRIu64 " stored bytes (bundle offset %" PRIu64 ")",
			    img->index, img->slot, r->stored_done, img->stored_size, r->offset);
	}
	return -EINVAL;
}

int bundle_reader_read_fd(struct bundle_reader *r, int fd, struct error *err)
{
	_cleanup_free_ uint8_t *buf = malloc(BUNDLE_INFLATE_CHUNK);
	int ret;

	if (!buf)
		return -ENOMEM;
	for (;;) {
		ssize_t n = read(fd, buf, BUNDLE_INFLATE_CHUNK);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			ret = -errno;
			return error_set(err, ret, "reading the bundle at byte %" PRIu64 ": %s",
				    r->offset, strerror(-ret));
		}
		if (n == 0)
			break;
		ret = bundle_reader_feed(r, buf, n, err);
		if (ret < 0)
			return ret;
		if (ret == BUNDLE_STOP)
			return 0;
	}
	return bundle_reader_finish(r, err);
}

/* ---- writer (host side) ---- */

struct pass {
	EVP_MD_CTX *sha;
	z_stream z;
	bool gzip;
	uint64_t in, out;
	int out_fd;                      /* -1: count only */
	uint8_t buf[BUNDLE_INFLATE_CHUNK];
};

static int pass_write(struct pass *ps, const void *p, size_t n)
{
	ps->out += n;
	if (ps->out_fd < 0 || n == 0)
		return 0;
	ssize_t w = util_write_full(ps->out_fd, p, n);
	return w < 0 ? (int)w : 0;
}

static int pass_deflate(struct pass *ps, const void *p, size_t n, int flush)
{
	int zr, r;

	ps->z.next_in = (Bytef *)p;
	ps->z.avail_in = n;
	do {
		ps->z.next_out = ps->buf;
		ps->z.avail_out = sizeof(ps->buf);
		zr = deflate(&ps->z, flush);
		if (zr == Z_STREAM_ERROR)
			return -EIO;
		r = pass_write(ps, ps->buf, sizeof(ps->buf) - ps->z.avail_out);
		if (r < 0)
			return r;
	} while (ps->z.avail_out == 0 || (flush == Z_FINISH && zr != Z_STREAM_END));
	return 0;
}

/* One pass over an image file: hash, optionally compress, count or write. */
static int image_pass(const struct bundle_create_image *ci, int level, int out_fd,
		      uint8_t sha[32], uint64_t *ret_size, uint64_t *ret_stored,
		      uint8_t sb[SQUASHFS_SUPERBLOCK_SIZE], struct error *err)
{
	_cleanup_close_ int fd = open(ci->path, O_RDONLY | O_CLOEXEC);
	_cleanup_free_ struct pass *ps = calloc(1, sizeof(*ps));
	_cleanup_free_ uint8_t *in = malloc(BUNDLE_INFLATE_CHUNK);
	unsigned mdlen = 0;
	int r = 0;

	if (fd < 0)
		return error_set(err, -errno, "%s: %s", ci->path, strerror(errno));
	if (!ps || !in)
		return -ENOMEM;
	ps->out_fd = out_fd;
	ps->gzip = ci->compression == BUNDLE_COMPRESSION_GZIP;
	ps->sha = EVP_MD_CTX_new();
	if (!ps->sha || EVP_DigestInit_ex(ps->sha, EVP_sha256(), NULL) != 1) {
		r = -ENOMEM;
		goto out;
	}
	/* default gzip header (mtime 0): the same input gives the same bundle */
	if (ps->gzip && deflateInit2(&ps->z, level ? level : Z_DEFAULT_COMPRESSION, Z_DEFLATED,
				     15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
		EVP_MD_CTX_free(ps->sha);
		return -ENOMEM;
	}
	for (;;) {
		ssize_t n = util_read_full(fd, in, BUNDLE_INFLATE_CHUNK);
		if (n < 0) {
			r = error_set(err, (int)n, "%s: %s", ci->path, strerror((int)-n));
			goto out;
		}
		if (ps->in < SQUASHFS_SUPERBLOCK_SIZE && sb)
			memcpy(sb + ps->in, in, MIN((uint64_t)n, SQUASHFS_SUPERBLOCK_SIZE - ps->in));
		ps->in += n;
		if (ps->in > BUNDLE_MAX_IMAGE_SIZE) {
			r = error_set(err, -EFBIG, "%s: larger than the format's 1 TiB limit", ci->path);
			goto out;
		}
		if (EVP_DigestUpdate(ps->sha, in, n) != 1) {
			r = -EIO;
			goto out;
		}
		r = ps->gzip ? pass_deflate(ps, in, n, n ? Z_NO_FLUSH : Z_FINISH) :
			pass_write(ps, in, n);
		if (r < 0) {
			r = error_set(err, r, "writing the bundle: %s", strerror(-r));
			goto out;
		}
		if (n == 0)
			break;
	}
	if (EVP_DigestFinal_ex(ps->sha, sha, &mdlen) != 1)
		r = -EIO;
	*ret_size = ps->in;
	*ret_stored = ps->out;
out:
	if (ps->gzip)
		deflateEnd(&ps->z);
	EVP_MD_CTX_free(ps->sha);
	return r;
}

static int build_date_now(char buf[BUNDLE_BUILD_DATE_LEN + 1], struct error *err)
{
	const char *sde = getenv("SOURCE_DATE_EPOCH");
	time_t t = time(NULL);
	struct tm tm;

	if (sde && *sde) {
		char *end;
		errno = 0;
		long long v = strtoll(sde, &end, 10);
		if (errno || *end || v < 0)
			return error_set(err, -EINVAL, "SOURCE_DATE_EPOCH=\"%s\" is not a number of seconds",
				    sde);
		t = (time_t)v;
	}
	if (!gmtime_r(&t, &tm) || tm.tm_year + 1900 > 9999)
		return error_set(err, -EINVAL, "build date out of range");
	strftime(buf, BUNDLE_BUILD_DATE_LEN + 1, "%Y-%m-%dT%H:%M:%SZ", &tm);
	return 0;
}

static int sign_manifest(EVP_PKEY *key, const void *msg, size_t len,
			 uint8_t entry[BUNDLE_SIG_ENTRY_SIZE], struct error *err)
{
	_cleanup_(EVP_MD_CTX_freep) EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	size_t siglen = KEYRING_SIG_SIZE;

	if (!ctx)
		return -ENOMEM;
	if (keyring_key_id_pkey(key, entry) < 0)
		return error_set(err, -EINVAL, "signing key is not an Ed25519 key");
	if (EVP_DigestSignInit(ctx, NULL, NULL, NULL, key) != 1 ||
	    EVP_DigestSign(ctx, entry + KEYRING_ID_SIZE, &siglen, msg, len) != 1 ||
	    siglen != KEYRING_SIG_SIZE) {
		ERR_clear_error();
		return error_set(err, -EINVAL, "Ed25519 signing failed (is it a private key?)");
	}
	return 0;
}

int bundle_create(const struct bundle_create_params *p, int out_fd,
		  struct bundle_create_result *ret, struct error *err)
{
	_cleanup_json_ struct json_object *o = json_object_new_object();
	_cleanup_free_ struct bundle_create_result *res = calloc(1, sizeof(*res));
	struct json_object *imgs = json_object_new_array();
	uint8_t sha[BUNDLE_MAX_IMAGES][32];
	uint64_t size[BUNDLE_MAX_IMAGES], stored[BUNDLE_MAX_IMAGES];
	uint8_t hdr[BUNDLE_HEADER_SIZE], sigs[BUNDLE_MAX_SIGNATURES * BUNDLE_SIG_ENTRY_SIZE];
	char date[BUNDLE_BUILD_DATE_LEN + 1], shahex[65];
	const char *manifest;
	size_t mlen;
	int r;

	if (!o || !imgs || !res) {
		json_object_put(imgs);
		return -ENOMEM;
	}
	json_object_object_add(o, "format_major", json_object_new_int(BUNDLE_FORMAT_MAJOR));
	json_object_object_add(o, "format_minor", json_object_new_int(BUNDLE_FORMAT_MINOR));
	json_object_object_add(o, "compatible", json_object_new_string(p->compatible ? p->compatible : ""));
	json_object_object_add(o, "version", json_object_new_string(p->version ? p->version : ""));
	if (p->build_date)
		snprintf(date, sizeof(date), "%s", p->build_date);
	else if ((r = build_date_now(date, err)) < 0) {
		json_object_put(imgs);
		return r;
	}
	json_object_object_add(o, "build_date", json_object_new_string(date));
	if (p->description)
		json_object_object_add(o, "description", json_object_new_string(p->description));
	json_object_object_add(o, "images", imgs);
	if (p->n_images < 1 || p->n_images > BUNDLE_MAX_IMAGES)
		return error_set(err, -EINVAL, "%zu images, a bundle holds 1..%d", p->n_images,
			    BUNDLE_MAX_IMAGES);
	if (p->n_keys > BUNDLE_MAX_SIGNATURES)
		return error_set(err, -EINVAL, "%zu signing keys, at most %d", p->n_keys,
			    BUNDLE_MAX_SIGNATURES);

	/* pass 1: hash, learn sizes, check squashfs superblocks */
	for (size_t i = 0; i < p->n_images; i++) {
		const struct bundle_create_image *ci = &p->images[i];
		uint8_t sb[SQUASHFS_SUPERBLOCK_SIZE] = { 0 };
		struct json_object *j;

		if (!bundle_slot_name_valid(ci->slot))
			return error_set(err, -EINVAL, "\"%s\" is not a slot member name ([a-z0-9_-]{1,32})",
				    ci->slot ? ci->slot : "");
		r = image_pass(ci, p->gzip_level, -1, sha[i], &size[i], &stored[i], sb, err);
		if (r < 0)
			return r;
		if (size[i] == 0)
			return error_set(err, -EINVAL, "%s: empty image", ci->path);
		if (bundle_is_cramfs(sb, MIN(size[i], sizeof(sb))))
			return error_set(err, -EMEDIUMTYPE, "%s: %s", ci->path, BUNDLE_CRAMFS_REFUSED);
		if (ci->type == BUNDLE_IMAGE_SQUASHFS) {
			r = squashfs_check_superblock(sb, MIN(size[i], sizeof(sb)), size[i],
						      &res->squashfs[i], err);
			if (r < 0)
				return error_prefix(err, r, "%s", ci->path);
			res->has_squashfs[i] = true;
		}
		j = json_object_new_object();
		if (!j)
			return -ENOMEM;
		hex(sha[i], 32, shahex);
		json_object_object_add(j, "slot", json_object_new_string(ci->slot));
		json_object_object_add(j, "type", json_object_new_string(
					       bundle_image_type_to_string(ci->type)));
		json_object_object_add(j, "size", json_object_new_int64(size[i]));
		json_object_object_add(j, "sha256", json_object_new_string(shahex));
		json_object_object_add(j, "compression", json_object_new_string(
					       bundle_compression_to_string(ci->compression)));
		json_object_object_add(j, "stored_size", json_object_new_int64(stored[i]));
		json_object_array_add(imgs, j);
	}
	manifest = json_object_to_json_string_length(
		o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE, &mlen);
	if (!manifest)
		return -ENOMEM;
	/* self-check: what we write must be what a reader accepts */
	r = bundle_manifest_parse(manifest, mlen, &res->manifest, err);
	if (r < 0)
		return r;
	for (size_t k = 0; k < p->n_keys; k++) {
		r = sign_manifest(p->keys[k], manifest, mlen, sigs + k * BUNDLE_SIG_ENTRY_SIZE, err);
		if (r < 0)
			return r;
		for (size_t j = 0; j < k; j++)
			if (!memcmp(sigs + j * BUNDLE_SIG_ENTRY_SIZE, sigs + k * BUNDLE_SIG_ENTRY_SIZE,
				    KEYRING_ID_SIZE))
				return error_set(err, -EINVAL, "signing key %zu given twice", k + 1);
	}
	header_build(hdr, mlen, p->n_keys);
	if ((r = (int)util_write_full(out_fd, hdr, sizeof(hdr))) < 0 ||
	    (r = (int)util_write_full(out_fd, manifest, mlen)) < 0 ||
	    (r = (int)util_write_full(out_fd, sigs, p->n_keys * BUNDLE_SIG_ENTRY_SIZE)) < 0)
		return error_set(err, r, "writing the bundle: %s", strerror(-r));

	/* pass 2: write payloads; the files must not have changed */
	res->manifest.n_signatures = p->n_keys;
	res->manifest.trust = BUNDLE_TRUST_UNCHECKED;
	res->manifest.payload_offset = BUNDLE_HEADER_SIZE + mlen + p->n_keys * BUNDLE_SIG_ENTRY_SIZE;
	res->manifest.total_size = res->manifest.payload_offset;
	for (size_t i = 0; i < p->n_images; i++) {
		uint8_t sha2[32];
		uint64_t s2, st2;

		res->manifest.images[i].offset = res->manifest.total_size;
		res->manifest.total_size += stored[i];
		r = image_pass(&p->images[i], p->gzip_level, out_fd, sha2, &s2, &st2, NULL, err);
		if (r < 0)
			return r;
		if (s2 != size[i] || st2 != stored[i] || memcmp(sha2, sha[i], 32))
			return error_set(err, -ESTALE, "%s changed while the bundle was being written",
				    p->images[i].path);
	}
	if (ret)
		*ret = *res;
	return 0;
}

int bundle_key_load(const char *path, void **ret, struct error *err)
{
	_cleanup_fclose_ FILE *f = fopen(path, "re");
	EVP_PKEY *key;

	if (!f)
		return error_set(err, -errno, "%s: %s", path, strerror(errno));
	key = PEM_read_PrivateKey(f, NULL, NULL, NULL);
	if (!key) {
		ERR_clear_error();
		return error_set(err, -EINVAL, "%s: not a PEM private key", path);
	}
	if (EVP_PKEY_get_id(key) != EVP_PKEY_ED25519) {
		error_set(err, -EINVAL, "%s: %s key, bundles are signed with Ed25519 only", path,
		     EVP_PKEY_get0_type_name(key) ? EVP_PKEY_get0_type_name(key) : "unknown");
		EVP_PKEY_free(key);
		return -EINVAL;
	}
	*ret = key;
	return 0;
}

void bundle_key_free(void *key)
{
	EVP_PKEY_free(key);
}

static int write_pem(const char *path, mode_t mode, EVP_PKEY *key, bool private,
		     struct error *err)
{
	_cleanup_close_ int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
	_cleanup_fclose_ FILE *f = NULL;
	int ok;

	if (fd < 0)
		return error_set(err, -errno, "%s: %s", path, strerror(errno));
	f = fdopen(fd, "we");
	if (!f)
		return error_set(err, -errno, "%s: %s", path, strerror(errno));
	TAKE_FD(fd);
	ok = private ? PEM_write_PrivateKey(f, key, NULL, NULL, 0, NULL, NULL) :
		PEM_write_PUBKEY(f, key);
	if (!ok || fflush(f) != 0 || fsync(fileno(f)) < 0) {
		int r = errno ? -errno : -EIO;
		unlink(path);
		return error_set(err, r, "%s: writing the key failed", path);
	}
	return 0;
}

int bundle_keygen(const char *private_path, const char *public_path,
		  uint8_t ret_id[KEYRING_ID_SIZE], struct error *err)
{
	_cleanup_(EVP_PKEY_freep) EVP_PKEY *key = EVP_PKEY_Q_keygen(NULL, NULL, "ED25519");
	uint8_t id[KEYRING_ID_SIZE];
	int r;

	if (!key)
		return error_set(err, -EIO, "Ed25519 key generation failed");
	r = write_pem(private_path, 0600, key, true, err);
	if (r < 0)
		return r;
	r = write_pem(public_path, 0644, key, false, err);
	if (r < 0) {
		unlink(private_path);
		return r;
	}
	if (keyring_key_id_pkey(key, id) < 0)
		return -EIO;
	if (ret_id)
		memcpy(ret_id, id, sizeof(id));
	return 0;
}
