/* Board layouts: JSON parsing, validation, and conversion to the kernel's
 * views of the board (mtdparts=, nandsim/mtdram module parameters, the
 * sysfs MTD table). Every rejection names the file, the JSON path and the
 * reason. Schema: man/flashd-layout.5. */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "cleanup.h"
#include "cleanup_json.h"
#include "layout.h"
#include "util.h"

#define LAYOUT_MAX_FILE (1024 * 1024)
#define LAYOUT_NAME_MAX 63         /* struct flash_info.name[64] */
#define UBI_LAYOUT_PEBS 2
#define UBI_RESERVED_PEBS 4
#define UBI_BEB_LIMIT_PER1024 20   /* CONFIG_MTD_UBI_BEB_LIMIT default */
#define NANDSIM_MAX_PARTS 32       /* CONFIG_NANDSIM_MAX_PARTS */
#define MTDRAM_MTD_ID "mtdram test device"

/* snprintf for messages and JSON paths: truncation is acceptable there */
static int xsnprintf(char *buf, size_t len, const char *fmt, ...) _printf_(3, 4);
static int xsnprintf(char *buf, size_t len, const char *fmt, ...)
{
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = vsnprintf(buf, len, fmt, ap);
	va_end(ap);
	return r;
}

/* ---------- string tables ---------- */

static const char *const layout_storage_table[_LAYOUT_STORAGE_MAX] = {
	[LAYOUT_STORAGE_NOR] = "nor",
	[LAYOUT_STORAGE_NAND] = "nand",
	[LAYOUT_STORAGE_UBI] = "ubi",
	[LAYOUT_STORAGE_FILE] = "file",
};
DEFINE_STRING_TABLE_TO(layout_storage, enum layout_storage)

static const char *const layout_overlay_type_table[_LAYOUT_OVERLAY_MAX] = {
	[LAYOUT_OVERLAY_JFFS2] = "jffs2",
	[LAYOUT_OVERLAY_UBIFS] = "ubifs",
	[LAYOUT_OVERLAY_TMPFS] = "tmpfs",
};
DEFINE_STRING_TABLE_TO(layout_overlay_type, enum layout_overlay_type)

static const char *const flash_type_names[_FLASH_TYPE_MAX] = {
	[FLASH_NOR] = "nor",
	[FLASH_NAND] = "nand",
};

static const char *const layout_ubi_vol_type_table[_LAYOUT_UBI_MAX] = {
	[LAYOUT_UBI_DYNAMIC] = "dynamic",
	[LAYOUT_UBI_STATIC] = "static",
};
DEFINE_STRING_TABLE_TO(layout_ubi_vol_type, enum layout_ubi_vol_type)

/* Image formats a slot may hold. */
static const char *const image_types[] = { "squashfs" };

static void join_names(const char *const *table, size_t n, char *buf, size_t len)
{
	size_t o = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < n && o < len; i++)
		if (table[i])
			o += xsnprintf(buf + o, len - o, "%s\"%s\"", o ? ", " : "", table[i]);
}

/* ---------- nandsim chip table ---------- */

/* The 8-bit chips of the kernel's nand_ids.c that nandsim can simulate:
 * legacy small-page ids carry their geometry, extended ids take page,
 * OOB and erase size from the 4th id byte. */
struct nand_chip_id {
	uint8_t dev_id;
	uint32_t size_mib;
	uint32_t erasesize;   /* 0 = from the extended id byte */
	const char *name;     /* kernel chip name = MTD name of the master */
};

static const struct nand_chip_id nand_chip_ids[] = {
	{ 0x33, 16, 16384, "NAND 16MiB 1,8V 8-bit" },
	{ 0x73, 16, 16384, "NAND 16MiB 3,3V 8-bit" },
	{ 0x35, 32, 16384, "NAND 32MiB 1,8V 8-bit" },
	{ 0x75, 32, 16384, "NAND 32MiB 3,3V 8-bit" },
	{ 0x36, 64, 16384, "NAND 64MiB 1,8V 8-bit" },
	{ 0x76, 64, 16384, "NAND 64MiB 3,3V 8-bit" },
	{ 0x78, 128, 16384, "NAND 128MiB 1,8V 8-bit" },
	{ 0x39, 128, 16384, "NAND 128MiB 1,8V 8-bit" },
	{ 0x79, 128, 16384, "NAND 128MiB 3,3V 8-bit" },
	{ 0x71, 256, 16384, "NAND 256MiB 3,3V 8-bit" },
	{ 0xa2, 64, 0, "NAND 64MiB 1,8V 8-bit" },
	{ 0xa0, 64, 0, "NAND 64MiB 1,8V 8-bit" },
	{ 0xf2, 64, 0, "NAND 64MiB 3,3V 8-bit" },
	{ 0xd0, 64, 0, "NAND 64MiB 3,3V 8-bit" },
	{ 0xf0, 64, 0, "NAND 64MiB 3,3V 8-bit" },
	{ 0xa1, 128, 0, "NAND 128MiB 1,8V 8-bit" },
	{ 0xf1, 128, 0, "NAND 128MiB 3,3V 8-bit" },
	{ 0xd1, 128, 0, "NAND 128MiB 3,3V 8-bit" },
	{ 0xaa, 256, 0, "NAND 256MiB 1,8V 8-bit" },
	{ 0xda, 256, 0, "NAND 256MiB 3,3V 8-bit" },
	{ 0xac, 512, 0, "NAND 512MiB 1,8V 8-bit" },
	{ 0xdc, 512, 0, "NAND 512MiB 3,3V 8-bit" },
	{ 0xa3, 1024, 0, "NAND 1GiB 1,8V 8-bit" },
	{ 0xd3, 1024, 0, "NAND 1GiB 3,3V 8-bit" },
	{ 0xa5, 2048, 0, "NAND 2GiB 1,8V 8-bit" },
	{ 0xd5, 2048, 0, "NAND 2GiB 3,3V 8-bit" },
};

struct nand_geom {
	uint64_t size;
	uint32_t erasesize, writesize, oobsize;
	const char *name;
};

static const struct nand_chip_id *nand_chip_by_id(uint8_t dev_id)
{
	for (size_t i = 0; i < ELEMENTSOF(nand_chip_ids); i++)
		if (nand_chip_ids[i].dev_id == dev_id)
			return &nand_chip_ids[i];
	return NULL;
}

/* Parse "0x20,0xaa,0x00,0x15" (2..8 bytes). */
static int parse_id_bytes(const char *s, uint8_t id[8], size_t *ret_n)
{
	size_t n = 0;

	memset(id, 0xff, 8);
	while (*s) {
		char *end;
		unsigned long v;

		if (n == 8 || !isxdigit((unsigned char)*s))
			return -EINVAL;
		errno = 0;
		v = strtoul(s, &end, 0);
		if (errno || end == s || v > 0xff)
			return -EINVAL;
		id[n++] = (uint8_t)v;
		s = end;
		if (*s == ',')
			s++;
		else if (*s)
			return -EINVAL;
	}
	if (n < 2)
		return -EINVAL;
	*ret_n = n;
	return 0;
}

/* What nand_detect() makes of the id (generic decoding, as for nandsim's
 * default manufacturer 0x20 / ST Micro). */
static int nand_decode_id(const uint8_t id[8], size_t n, struct nand_geom *g)
{
	const struct nand_chip_id *c = nand_chip_by_id(id[1]);

	if (!c)
		return -ENOENT;
	g->size = (uint64_t)c->size_mib << 20;
	g->name = c->name;
	if (c->erasesize) {
		g->erasesize = c->erasesize;
		g->writesize = 512;
		g->oobsize = 16;
		return 0;
	}
	if (n < 4)
		return -ENODATA; /* extended ids need the 4th byte */
	if (id[3] & 0x40)
		return -EOPNOTSUPP; /* 16-bit bus */
	g->writesize = 1024u << (id[3] & 3);
	g->oobsize = (8u << ((id[3] >> 2) & 1)) * (g->writesize >> 9);
	g->erasesize = (64u * 1024) << ((id[3] >> 4) & 3);
	return 0;
}

static int log2_exact(uint64_t v)
{
	int s = 0;

	if (!v || (v & (v - 1)))
		return -1;
	while (v >>= 1)
		s++;
	return s;
}

/* id bytes (and overridesize, 0 = none) giving device d. */
static int nandsim_id_for(const struct layout_device *d, uint8_t id[8], size_t *ret_n,
			  unsigned *ret_override, const char **ret_name)
{
	struct nand_geom g;
	int pg, oobper, er, sh;

	if (d->nandsim_id) {
		if (parse_id_bytes(d->nandsim_id, id, ret_n) < 0 || nand_decode_id(id, *ret_n, &g) < 0)
			return -EINVAL; /* validation rejects these */
	} else {
		/* synthesize: ST Micro, a chip of this size if one exists */
		memset(id, 0xff, 8);
		id[0] = 0x20;
		id[2] = 0x00;
		if (d->writesize == 512 && d->erasesize == 16384 && d->oobsize == 16) {
			id[1] = 0x71;
			for (size_t i = 0; i < ELEMENTSOF(nand_chip_ids); i++)
				if (nand_chip_ids[i].erasesize &&
				    ((uint64_t)nand_chip_ids[i].size_mib << 20) == d->size)
					id[1] = nand_chip_ids[i].dev_id;
			*ret_n = 2;
		} else {
			pg = log2_exact(d->writesize / 1024);
			oobper = d->writesize >= 512 ? (int)(d->oobsize / (d->writesize / 512)) : 0;
			er = log2_exact(d->erasesize / (64 * 1024));
			if (d->writesize < 1024 || pg < 0 || pg > 3 || er < 0 || er > 3 ||
			    (oobper != 8 && oobper != 16) || d->erasesize % (64 * 1024))
				return -EOPNOTSUPP;
			id[1] = 0xf1;
			for (size_t i = 0; i < ELEMENTSOF(nand_chip_ids); i++)
				if (!nand_chip_ids[i].erasesize &&
				    ((uint64_t)nand_chip_ids[i].size_mib << 20) == d->size) {
					id[1] = nand_chip_ids[i].dev_id;
					break;
				}
			id[3] = (uint8_t)(pg | (oobper == 16 ? 4 : 0) | (er << 4));
			*ret_n = 4;
		}
		if (nand_decode_id(id, *ret_n, &g) < 0)
			return -EOPNOTSUPP;
	}
	/* nandsim itself handles 512, 2048 and 4096 byte pages only */
	if (g.writesize != 512 && g.writesize != 2048 && g.writesize != 4096)
		return -EOPNOTSUPP;
	if (g.writesize != d->writesize || g.erasesize != d->erasesize || g.oobsize != d->oobsize)
		return -EINVAL;
	*ret_override = 0;
	if (g.size != d->size) {
		sh = log2_exact(d->size / d->erasesize);
		if (sh < 0 || (uint64_t)d->erasesize << sh != d->size)
			return -EOPNOTSUPP;
		*ret_override = (unsigned)sh;
	}
	if (ret_name)
		*ret_name = g.name;
	return 0;
}

const char *layout_device_mtd_id(const struct layout_device *d)
{
	uint8_t id[8];
	size_t n;
	struct nand_geom g;

	if (d->mtd_id)
		return d->mtd_id;
	if (d->type == FLASH_NAND && d->nandsim_id && parse_id_bytes(d->nandsim_id, id, &n) == 0 &&
	    nand_decode_id(id, n, &g) == 0)
		return g.name;
	return d->name;
}

/* ---------- parser context and error reporting ---------- */

struct claim {
	char *what;   /* "part:NAME" or "ubivol:UBI/VOL" */
	char *by;     /* JSON path of the user */
	const char *role; /* role class; two users of the same class "env" may share */
};

struct ctx {
	const char *file;
	struct error *err;
	struct layout *l;
	struct claim *claims;
	size_t n_claims;
};

static int _printf_(4, 5) fail(struct ctx *c, int r, const char *path, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	error_setv(c->err, r, fmt, ap);
	va_end(ap);
	if (path && *path)
		return error_prefix(c->err, r, "%s: %s", c->file, path);
	return error_prefix(c->err, r, "%s", c->file);
}

/* path helpers: "base.key" and "base[i]" */
#define PATHLEN 160
static const char *pkey(char *buf, const char *base, const char *key)
{
	if (base && *base)
		xsnprintf(buf, PATHLEN, "%s.%s", base, key);
	else
		xsnprintf(buf, PATHLEN, "%s", key);
	return buf;
}

static const char *pidx(char *buf, const char *base, size_t i)
{
	xsnprintf(buf, PATHLEN, "%s[%zu]", base, i);
	return buf;
}

static const char *jtype(struct json_object *o)
{
	return o ? json_type_to_name(json_object_get_type(o)) : "null";
}

static int check_keys(struct ctx *c, struct json_object *o, const char *base,
		      const char *const *allowed, size_t n)
{
	char p[PATHLEN], list[256];

	json_object_object_foreach(o, key, val) {
		(void)val;
		if (string_table_lookup(allowed, n, key) >= 0)
			continue;
		list[0] = '\0';
		for (size_t i = 0, o2 = 0; i < n && o2 < sizeof(list); i++)
			o2 += xsnprintf(list + o2, sizeof(list) - o2, "%s%s", i ? ", " : "", allowed[i]);
		return fail(c, -EINVAL, pkey(p, base, key), "unknown key (allowed here: %s)", list);
	}
	return 0;
}
#define CHECK_KEYS(c, o, base, arr) check_keys(c, o, base, arr, ELEMENTSOF(arr))

static int get_member(struct ctx *c, struct json_object *o, const char *base, const char *key,
		      bool required, json_type want, const char *want_name, struct json_object **ret)
{
	char p[PATHLEN];
	struct json_object *v = NULL;

	*ret = NULL;
	if (!json_object_object_get_ex(o, key, &v)) {
		if (required)
			return fail(c, -EINVAL, pkey(p, base, key), "required key is missing");
		return 0;
	}
	if (!v || json_object_get_type(v) != want)
		return fail(c, -EINVAL, pkey(p, base, key), "expected %s, got %s", want_name, jtype(v));
	*ret = v;
	return 1;
}

static int get_object(struct ctx *c, struct json_object *o, const char *base, const char *key,
		      bool required, struct json_object **ret)
{
	return get_member(c, o, base, key, required, json_type_object, "an object", ret);
}

static int get_array(struct ctx *c, struct json_object *o, const char *base, const char *key,
		     bool required, struct json_object **ret)
{
	return get_member(c, o, base, key, required, json_type_array, "an array", ret);
}

static int get_string(struct ctx *c, struct json_object *o, const char *base, const char *key,
		      bool required, const char **ret)
{
	struct json_object *v;
	char p[PATHLEN];
	int r;

	*ret = NULL;
	r = get_member(c, o, base, key, required, json_type_string, "a string", &v);
	if (r <= 0)
		return r;
	if (!*json_object_get_string(v))
		return fail(c, -EINVAL, pkey(p, base, key), "must not be empty");
	*ret = json_object_get_string(v);
	return 1;
}

static int dup_string(struct ctx *c, struct json_object *o, const char *base, const char *key,
		      bool required, char **ret)
{
	const char *s;
	int r = get_string(c, o, base, key, required, &s);

	if (r <= 0)
		return r;
	*ret = strdup(s);
	return *ret ? 1 : -ENOMEM;
}

/* A size: non-negative integer, or a string for util_parse_size(). */
static int size_value(struct ctx *c, struct json_object *v, const char *path, uint64_t *ret)
{
	int r;

	switch (json_object_get_type(v)) {
	case json_type_int:
		if (json_object_get_int64(v) < 0)
			return fail(c, -EINVAL, path, "must not be negative");
		*ret = (uint64_t)json_object_get_int64(v);
		return 0;
	case json_type_string:
		r = util_parse_size(json_object_get_string(v), ret);
		if (r == -ERANGE)
			return fail(c, -EINVAL, path, "\"%s\" is too large", json_object_get_string(v));
		if (r < 0)
			return fail(c, -EINVAL, path,
				    "\"%s\" is not a size (use a number, \"0x20000\", \"64KiB\" or \"16MiB\")",
				    json_object_get_string(v));
		return 0;
	default:
		return fail(c, -EINVAL, path, "expected a size (number or string like \"16MiB\"), got %s",
			    jtype(v));
	}
}

static int get_size(struct ctx *c, struct json_object *o, const char *base, const char *key,
		    bool required, uint64_t *ret)
{
	struct json_object *v;
	char p[PATHLEN];
	int r;

	if (!json_object_object_get_ex(o, key, &v)) {
		if (required)
			return fail(c, -EINVAL, pkey(p, base, key), "required key is missing");
		return 0;
	}
	r = size_value(c, v, pkey(p, base, key), ret);
	return r < 0 ? r : 1;
}

static int get_bool(struct ctx *c, struct json_object *o, const char *base, const char *key,
		    bool *ret)
{
	struct json_object *v;
	int r = get_member(c, o, base, key, false, json_type_boolean, "true or false", &v);

	if (r > 0)
		*ret = json_object_get_boolean(v);
	return r;
}

static int get_enum(struct ctx *c, struct json_object *o, const char *base, const char *key,
		    bool required, const char *const *table, size_t n, int *ret)
{
	const char *s;
	char p[PATHLEN], list[128];
	int r = get_string(c, o, base, key, required, &s), i;

	if (r <= 0)
		return r;
	i = string_table_lookup(table, n, s);
	if (i < 0) {
		join_names(table, n, list, sizeof(list));
		return fail(c, -EINVAL, pkey(p, base, key), "\"%s\" is not one of %s", s, list);
	}
	*ret = i;
	return 1;
}

/* Names end up in mtdparts=, sysfs lookups and U-Boot variables. */
static int check_name(struct ctx *c, const char *path, const char *name)
{
	if (strlen(name) > LAYOUT_NAME_MAX)
		return fail(c, -EINVAL, path, "name \"%s\" is longer than %d characters", name,
			    LAYOUT_NAME_MAX);
	for (const char *s = name; *s; s++)
		if (!isgraph((unsigned char)*s) || strchr("(),;:\"'/\\", *s))
			return fail(c, -EINVAL, path,
				    "name \"%s\" contains '%c' (not allowed: spaces, ( ) , ; : quotes slashes)",
				    name, isgraph((unsigned char)*s) ? *s : ' ');
	return 0;
}

static const char *partition_path(const struct layout *l, const struct layout_partition *p,
				  char *buf)
{
	xsnprintf(buf, PATHLEN, "partitions[%zu]", (size_t)(p - l->partitions));
	return buf;
}

/* Each partition / UBI volume serves one role (env copies may share). */
static int claim(struct ctx *c, const char *what, const char *display, const char *by,
		 const char *role)
{
	struct claim *n;

	for (size_t i = 0; i < c->n_claims; i++) {
		if (strcmp(c->claims[i].what, what))
			continue;
		if (!strcmp(role, "env") && !strcmp(c->claims[i].role, "env"))
			return 0;
		return fail(c, -EINVAL, by, "%s is already used by %s", display, c->claims[i].by);
	}
	n = realloc(c->claims, (c->n_claims + 1) * sizeof(*n));
	if (!n)
		return -ENOMEM;
	c->claims = n;
	n[c->n_claims].what = strdup(what);
	n[c->n_claims].by = strdup(by);
	n[c->n_claims].role = role;
	if (!n[c->n_claims].what || !n[c->n_claims].by) {
		free(n[c->n_claims].what);
		free(n[c->n_claims].by);
		return -ENOMEM;
	}
	c->n_claims++;
	return 0;
}

static int claim_partition(struct ctx *c, const struct layout_partition *p, const char *by,
			   const char *role)
{
	char what[LAYOUT_NAME_MAX + 8], disp[LAYOUT_NAME_MAX + 16];

	xsnprintf(what, sizeof(what), "part:%s", p->name);
	xsnprintf(disp, sizeof(disp), "partition \"%s\"", p->name);
	return claim(c, what, disp, by, role);
}

/* Look up a partition named by o[key]. */
static int ref_partition(struct ctx *c, struct json_object *o, const char *base, const char *key,
			 struct layout_partition **ret)
{
	const char *name;
	char p[PATHLEN];
	int r = get_string(c, o, base, key, true, &name);

	if (r < 0)
		return r;
	*ret = layout_find_partition(c->l, name);
	if (!*ret)
		return fail(c, -EINVAL, pkey(p, base, key), "no partition named \"%s\" in \"partitions\"",
			    name);
	return 0;
}

/* ---------- devices ---------- */

static const char *const device_keys[] = { "name", "type", "size", "erase_block", "page", "oob",
					   "nandsim_id", "mtd_id" };

static int parse_device(struct ctx *c, struct json_object *o, const char *base,
			struct layout_device *d)
{
	char p[PATHLEN];
	uint64_t v;
	int r, t;

	if (json_object_get_type(o) != json_type_object)
		return fail(c, -EINVAL, base, "expected an object, got %s", jtype(o));
	if ((r = CHECK_KEYS(c, o, base, device_keys)) < 0 ||
	    (r = dup_string(c, o, base, "name", true, &d->name)) < 0 ||
	    (r = check_name(c, pkey(p, base, "name"), d->name)) < 0 ||
	    (r = get_enum(c, o, base, "type", true, flash_type_names, _FLASH_TYPE_MAX, &t)) < 0 ||
	    (r = get_size(c, o, base, "size", true, &d->size)) < 0 ||
	    (r = get_size(c, o, base, "erase_block", true, &v)) < 0)
		return r;
	d->type = t;
	if (v == 0 || v > UINT32_MAX || log2_exact(v) < 0)
		return fail(c, -EINVAL, pkey(p, base, "erase_block"),
			    "%" PRIu64 " is not a power of two between 1 and 4 GiB", v);
	d->erasesize = (uint32_t)v;
	if (d->size == 0 || d->size % d->erasesize)
		return fail(c, -EINVAL, pkey(p, base, "size"),
			    "0x%" PRIx64 " is not a non-zero multiple of the erase block 0x%" PRIx32,
			    d->size, d->erasesize);

	v = d->type == FLASH_NOR ? 1 : 0;
	if ((r = get_size(c, o, base, "page", d->type == FLASH_NAND, &v)) < 0)
		return r;
	if (v == 0 || log2_exact(v) < 0 || v > d->erasesize)
		return fail(c, -EINVAL, pkey(p, base, "page"),
			    "%" PRIu64 " is not a power of two no larger than the erase block", v);
	if (d->type == FLASH_NAND && v < 512)
		return fail(c, -EINVAL, pkey(p, base, "page"),
			    "NAND pages are at least 512 bytes, not %" PRIu64, v);
	d->writesize = (uint32_t)v;

	v = 0;
	if ((r = get_size(c, o, base, "oob", d->type == FLASH_NAND, &v)) < 0)
		return r;
	if (d->type == FLASH_NOR && v)
		return fail(c, -EINVAL, pkey(p, base, "oob"), "NOR flash has no OOB area (use 0)");
	if (d->type == FLASH_NAND && (v == 0 || v >= d->writesize))
		return fail(c, -EINVAL, pkey(p, base, "oob"),
			    "%" PRIu64 " is not a valid OOB size for %" PRIu32 "-byte pages", v,
			    d->writesize);
	d->oobsize = (uint32_t)v;

	if ((r = dup_string(c, o, base, "mtd_id", false, &d->mtd_id)) < 0 ||
	    (r = dup_string(c, o, base, "nandsim_id", false, &d->nandsim_id)) < 0)
		return r;
	if (d->mtd_id && (strchr(d->mtd_id, ':') || strchr(d->mtd_id, ';')))
		return fail(c, -EINVAL, pkey(p, base, "mtd_id"),
			    "\"%s\" cannot be used in mtdparts= (contains ':' or ';')", d->mtd_id);
	if (d->nandsim_id) {
		uint8_t id[8];
		size_t n;
		struct nand_geom g;

		pkey(p, base, "nandsim_id");
		if (d->type != FLASH_NAND)
			return fail(c, -EINVAL, p, "only NAND devices have a nandsim id");
		if (parse_id_bytes(d->nandsim_id, id, &n) < 0)
			return fail(c, -EINVAL, p, "\"%s\" is not 2 to 8 comma-separated bytes like "
				    "\"0x20,0xf1,0x00,0x15\"", d->nandsim_id);
		r = nand_decode_id(id, n, &g);
		if (r == -ENOENT)
			return fail(c, -EINVAL, p, "device id 0x%02x is not an 8-bit chip of the "
				    "kernel's NAND id table", id[1]);
		if (r == -ENODATA)
			return fail(c, -EINVAL, p, "device id 0x%02x needs the 4th (extended id) byte",
				    id[1]);
		if (r < 0)
			return fail(c, -EINVAL, p, "16-bit bus chips are not supported");
		if (g.writesize != d->writesize || g.erasesize != d->erasesize ||
		    g.oobsize != d->oobsize)
			return fail(c, -EINVAL, p,
				    "\"%s\" is a chip with %" PRIu32 "-byte pages, %" PRIu32
				    "-byte OOB and %" PRIu32 " KiB erase blocks, not %" PRIu32 "/%" PRIu32
				    "/%" PRIu32 " KiB as the device says", d->nandsim_id, g.writesize,
				    g.oobsize, g.erasesize / 1024, d->writesize, d->oobsize,
				    d->erasesize / 1024);
		if (g.size != d->size && log2_exact(d->size / d->erasesize) < 0)
			return fail(c, -EINVAL, p,
				    "\"%s\" is a %" PRIu64 " MiB chip and nandsim's overridesize can only "
				    "make power-of-two block counts, not %" PRIu64, d->nandsim_id,
				    g.size >> 20, d->size / d->erasesize);
	}
	return 0;
}

/* ---------- partitions ---------- */

static const char *const partition_keys[] = { "name", "device", "offset", "size", "readonly" };

static int parse_partition(struct ctx *c, struct json_object *o, const char *base, size_t idx)
{
	struct layout *l = c->l;
	struct layout_partition *pt = &l->partitions[idx];
	struct json_object *v;
	const char *dev;
	char p[PATHLEN];
	bool have_off = false;
	int r;

	if (json_object_get_type(o) != json_type_object)
		return fail(c, -EINVAL, base, "expected an object, got %s", jtype(o));
	if ((r = CHECK_KEYS(c, o, base, partition_keys)) < 0 ||
	    (r = dup_string(c, o, base, "name", true, &pt->name)) < 0 ||
	    (r = check_name(c, pkey(p, base, "name"), pt->name)) < 0 ||
	    (r = get_string(c, o, base, "device", l->n_devices != 1, &dev)) < 0)
		return r;
	for (size_t i = 0; i < idx; i++)
		if (!strcmp(l->partitions[i].name, pt->name))
			return fail(c, -EINVAL, pkey(p, base, "name"),
				    "duplicate partition name \"%s\" (also partitions[%zu])", pt->name, i);
	pt->dev = dev ? layout_find_device(l, dev) : &l->devices[0];
	if (!pt->dev)
		return fail(c, -EINVAL, pkey(p, base, "device"), "no device named \"%s\" in \"devices\"",
			    dev);
	if ((r = get_size(c, o, base, "offset", false, &pt->offset)) < 0)
		return r;
	have_off = r > 0;
	if (!have_off) {
		/* like mtdparts: right after the previous partition on the device */
		pt->offset = 0;
		for (size_t i = idx; i-- > 0;)
			if (l->partitions[i].dev == pt->dev) {
				pt->offset = l->partitions[i].offset + l->partitions[i].size;
				break;
			}
	}
	if (!json_object_object_get_ex(o, "size", &v))
		return fail(c, -EINVAL, pkey(p, base, "size"), "required key is missing");
	if (json_object_get_type(v) == json_type_string && !strcmp(json_object_get_string(v), "-")) {
		if (pt->offset >= pt->dev->size)
			return fail(c, -EINVAL, pkey(p, base, "size"),
				    "\"-\" (rest of the device) but offset 0x%" PRIx64
				    " is at or past the end of device \"%s\" (0x%" PRIx64 ")",
				    pt->offset, pt->dev->name, pt->dev->size);
		pt->size = pt->dev->size - pt->offset;
	} else if ((r = size_value(c, v, pkey(p, base, "size"), &pt->size)) < 0) {
		return r;
	}
	if (pt->size == 0)
		return fail(c, -EINVAL, pkey(p, base, "size"), "must not be 0");
	if ((r = get_bool(c, o, base, "readonly", &pt->readonly)) < 0)
		return r;
	if (pt->offset % pt->dev->erasesize)
		return fail(c, -EINVAL, pkey(p, base, "offset"),
			    "0x%" PRIx64 " is not a multiple of the erase block size 0x%" PRIx32
			    " of device \"%s\"", pt->offset, pt->dev->erasesize, pt->dev->name);
	if (pt->size % pt->dev->erasesize)
		return fail(c, -EINVAL, pkey(p, base, "size"),
			    "0x%" PRIx64 " is not a multiple of the erase block size 0x%" PRIx32
			    " of device \"%s\"", pt->size, pt->dev->erasesize, pt->dev->name);
	if (pt->offset > pt->dev->size || pt->size > pt->dev->size - pt->offset)
		return fail(c, -EINVAL, pkey(p, base, "size"),
			    "partition \"%s\" ends at 0x%" PRIx64 ", past the end of device \"%s\" (0x%"
			    PRIx64 ")", pt->name, pt->offset + pt->size, pt->dev->name, pt->dev->size);
	return 0;
}

static int check_overlaps(struct ctx *c)
{
	struct layout *l = c->l;
	char p[PATHLEN];

	for (size_t i = 0; i < l->n_partitions; i++)
		for (size_t j = 0; j < i; j++) {
			const struct layout_partition *a = &l->partitions[j], *b = &l->partitions[i];

			if (a->dev != b->dev || b->offset >= a->offset + a->size ||
			    a->offset >= b->offset + b->size)
				continue;
			xsnprintf(p, sizeof(p), "partitions[%zu]", i);
			return fail(c, -EINVAL, p,
				    "partition \"%s\" [0x%" PRIx64 "-0x%" PRIx64 ") overlaps partition \"%s\""
				    " [0x%" PRIx64 "-0x%" PRIx64 ") (partitions[%zu]) on device \"%s\"",
				    b->name, b->offset, b->offset + b->size, a->name, a->offset,
				    a->offset + a->size, j, a->dev->name);
		}
	return 0;
}

/* ---------- env ---------- */

static const char *const env_keys[] = { "copies" };
static const char *const env_copy_keys[] = { "partition", "offset", "size", "sector_size" };

static int parse_env(struct ctx *c, struct json_object *o)
{
	struct layout *l = c->l;
	struct json_object *copies;
	char base[PATHLEN], p[PATHLEN];
	size_t n;
	int r;

	if ((r = CHECK_KEYS(c, o, "env", env_keys)) < 0 ||
	    (r = get_array(c, o, "env", "copies", true, &copies)) < 0)
		return r;
	n = json_object_array_length(copies);
	if (n < 1 || n > 2)
		return fail(c, -EINVAL, "env.copies", "has %zu entries; U-Boot keeps 1 or 2 (redundant) "
			    "copies", n);
	for (size_t i = 0; i < n; i++) {
		struct json_object *e = json_object_array_get_idx(copies, i);
		struct layout_env_copy *cp = &l->env.copies[i];
		uint64_t eb;

		pidx(base, "env.copies", i);
		if (json_object_get_type(e) != json_type_object)
			return fail(c, -EINVAL, base, "expected an object, got %s", jtype(e));
		if ((r = CHECK_KEYS(c, e, base, env_copy_keys)) < 0 ||
		    (r = ref_partition(c, e, base, "partition", &cp->part)) < 0 ||
		    (r = get_size(c, e, base, "offset", false, &cp->offset)) < 0 ||
		    (r = get_size(c, e, base, "size", true, &cp->size)) < 0)
			return r;
		eb = cp->part->dev->erasesize;
		cp->sector_size = eb;
		if ((r = get_size(c, e, base, "sector_size", false, &cp->sector_size)) < 0)
			return r;
		if (cp->sector_size == 0 || cp->sector_size % eb)
			return fail(c, -EINVAL, pkey(p, base, "sector_size"),
				    "0x%" PRIx64 " is not a multiple of the erase block size 0x%" PRIx64
				    " of partition \"%s\"", cp->sector_size, eb, cp->part->name);
		if (cp->size == 0 || cp->size > cp->sector_size)
			return fail(c, -EINVAL, pkey(p, base, "size"),
				    "env size 0x%" PRIx64 " must be between 1 byte and the sector size 0x%"
				    PRIx64 " (one erase unit holds one copy)", cp->size, cp->sector_size);
		if (cp->offset % eb)
			return fail(c, -EINVAL, pkey(p, base, "offset"),
				    "0x%" PRIx64 " is not aligned to the erase block size 0x%" PRIx64
				    " of partition \"%s\"", cp->offset, eb, cp->part->name);
		if (cp->offset > cp->part->size || cp->sector_size > cp->part->size - cp->offset)
			return fail(c, -EINVAL, pkey(p, base, "offset"),
				    "env sector [0x%" PRIx64 "-0x%" PRIx64 ") is not inside partition \"%s\" "
				    "(size 0x%" PRIx64 ")", cp->offset, cp->offset + cp->sector_size,
				    cp->part->name, cp->part->size);
		if ((r = claim_partition(c, cp->part, pkey(p, base, "partition"), "env")) < 0)
			return r;
		l->env.n_copies = i + 1;
	}
	if (n == 2) {
		const struct layout_env_copy *a = &l->env.copies[0], *b = &l->env.copies[1];

		if (a->part == b->part && a->offset < b->offset + b->sector_size &&
		    b->offset < a->offset + a->sector_size)
			return fail(c, -EINVAL, "env.copies[1].offset",
				    "the two env copies overlap in partition \"%s\"", a->part->name);
		if (a->size != b->size)
			return fail(c, -EINVAL, "env.copies[1].size",
				    "redundant env copies must have the same size (0x%" PRIx64
				    " vs 0x%" PRIx64 ")", b->size, a->size);
	}
	return 0;
}

/* ---------- UBI ---------- */

int layout_ubi_capacity(const struct layout_ubi *u, uint64_t *ret_leb_size, uint64_t *ret_lebs)
{
	const struct layout_device *d = u->part->dev;
	uint64_t pebs = u->part->size / d->erasesize, reserve, hdr;

	hdr = d->type == FLASH_NAND ? 2ull * d->writesize : 128;
	reserve = UBI_LAYOUT_PEBS + UBI_RESERVED_PEBS;
	if (d->type == FLASH_NAND)
		reserve += DIV_ROUND_UP(d->size / d->erasesize * UBI_BEB_LIMIT_PER1024, 1024);
	if (d->erasesize <= hdr)
		return -EINVAL;
	*ret_leb_size = d->erasesize - hdr;
	*ret_lebs = pebs > reserve ? pebs - reserve : 0;
	return 0;
}

static const char *const ubi_keys[] = { "partition", "volumes" };
static const char *const ubi_vol_keys[] = { "name", "size", "type" };

static int parse_ubi(struct ctx *c, struct json_object *o, const char *base, size_t idx)
{
	struct layout *l = c->l;
	struct layout_ubi *u = &l->ubis[idx];
	struct json_object *vols;
	char p[PATHLEN], vb[PATHLEN];
	uint64_t leb, lebs, need = 0;
	size_t n;
	int r;

	if (json_object_get_type(o) != json_type_object)
		return fail(c, -EINVAL, base, "expected an object, got %s", jtype(o));
	if ((r = CHECK_KEYS(c, o, base, ubi_keys)) < 0 ||
	    (r = ref_partition(c, o, base, "partition", &u->part)) < 0)
		return r;
	for (size_t i = 0; i < idx; i++)
		if (l->ubis[i].part == u->part)
			return fail(c, -EINVAL, pkey(p, base, "partition"),
				    "partition \"%s\" is already UBI ubi[%zu]", u->part->name, i);
	if ((r = claim_partition(c, u->part, pkey(p, base, "partition"), "ubi")) < 0 ||
	    (r = get_array(c, o, base, "volumes", true, &vols)) < 0)
		return r;
	n = json_object_array_length(vols);
	if (n == 0)
		return fail(c, -EINVAL, pkey(p, base, "volumes"), "a UBI device needs at least one volume");
	u->volumes = calloc(n, sizeof(*u->volumes));
	if (!u->volumes)
		return -ENOMEM;
	r = layout_ubi_capacity(u, &leb, &lebs);
	if (r < 0)
		return fail(c, -EINVAL, pkey(p, base, "partition"), "erase blocks too small for UBI");
	for (size_t i = 0; i < n; i++) {
		struct json_object *e = json_object_array_get_idx(vols, i);
		struct layout_ubi_volume *v = &u->volumes[i];
		int t = LAYOUT_UBI_DYNAMIC;

		xsnprintf(vb, sizeof(vb), "%s.volumes[%zu]", base, i);
		if (json_object_get_type(e) != json_type_object)
			return fail(c, -EINVAL, vb, "expected an object, got %s", jtype(e));
		if ((r = CHECK_KEYS(c, e, vb, ubi_vol_keys)) < 0 ||
		    (r = dup_string(c, e, vb, "name", true, &v->name)) < 0)
			return r;
		u->n_volumes = i + 1;
		if ((r = check_name(c, pkey(p, vb, "name"), v->name)) < 0 ||
		    (r = get_size(c, e, vb, "size", true, &v->size)) < 0 ||
		    (r = get_enum(c, e, vb, "type", false, layout_ubi_vol_type_table, _LAYOUT_UBI_MAX, &t)) < 0)
			return r;
		v->type = t;
		if (v->size == 0)
			return fail(c, -EINVAL, pkey(p, vb, "size"), "must not be 0");
		for (size_t j = 0; j < i; j++)
			if (!strcmp(u->volumes[j].name, v->name))
				return fail(c, -EINVAL, pkey(p, vb, "name"),
					    "duplicate UBI volume name \"%s\" (also %s.volumes[%zu])",
					    v->name, base, j);
		need += DIV_ROUND_UP(v->size, leb);
	}
	if (need > lebs)
		return fail(c, -EINVAL, pkey(p, base, "volumes"),
			    "volumes need %" PRIu64 " LEBs of %" PRIu64 " bytes but partition \"%s\" "
			    "offers only %" PRIu64 " (%" PRIu64 " PEBs minus %d for the layout volume, "
			    "%d reserved%s)", need, leb, u->part->name, lebs,
			    u->part->size / u->part->dev->erasesize, UBI_LAYOUT_PEBS, UBI_RESERVED_PEBS,
			    u->part->dev->type == FLASH_NAND ? " and the bad-block reserve" : "");
	return 0;
}

static struct layout_ubi *find_ubi(const struct layout *l, const char *name)
{
	for (size_t i = 0; i < l->n_ubis; i++)
		if (!strcmp(l->ubis[i].part->name, name))
			return &l->ubis[i];
	return NULL;
}

static struct layout_ubi_volume *find_ubi_volume(const struct layout_ubi *u, const char *name)
{
	for (size_t i = 0; i < u->n_volumes; i++)
		if (!strcmp(u->volumes[i].name, name))
			return &u->volumes[i];
	return NULL;
}

/* "ubi": "NAME" + "volume": "VOL" -> the UBI and volume, claimed for by. */
static int ref_ubi_volume(struct ctx *c, struct json_object *o, const char *base,
			  struct layout_partition **ret_part, char **ret_vol,
			  struct layout_ubi_volume **ret_v)
{
	const char *un, *vn;
	struct layout_ubi *u;
	struct layout_ubi_volume *v;
	char p[PATHLEN], what[2 * LAYOUT_NAME_MAX + 16], disp[2 * LAYOUT_NAME_MAX + 32];
	int r;

	if ((r = get_string(c, o, base, "ubi", true, &un)) < 0 ||
	    (r = get_string(c, o, base, "volume", true, &vn)) < 0)
		return r;
	u = find_ubi(c->l, un);
	if (!u)
		return fail(c, -EINVAL, pkey(p, base, "ubi"),
			    "no UBI device on partition \"%s\" in \"ubi\"", un);
	v = find_ubi_volume(u, vn);
	if (!v)
		return fail(c, -EINVAL, pkey(p, base, "volume"),
			    "UBI device \"%s\" has no volume \"%s\"", un, vn);
	xsnprintf(what, sizeof(what), "ubivol:%s/%s", un, vn);
	xsnprintf(disp, sizeof(disp), "UBI volume \"%s\" of \"%s\"", vn, un);
	if ((r = claim(c, what, disp, base, "image")) < 0)
		return r;
	*ret_part = u->part;
	*ret_vol = strdup(vn);
	if (ret_v)
		*ret_v = v;
	return *ret_vol ? 0 : -ENOMEM;
}

static int check_abs_path(struct ctx *c, const char *path, const char *s)
{
	if (s[0] != '/')
		return fail(c, -EINVAL, path, "\"%s\" is not an absolute path", s);
	if (strstr(s, "//") || strstr(s, "/./") || strstr(s, "/../") ||
	    (strlen(s) > 1 && s[strlen(s) - 1] == '/') ||
	    (strlen(s) >= 3 && !strcmp(s + strlen(s) - 3, "/..")) ||
	    (strlen(s) >= 2 && !strcmp(s + strlen(s) - 2, "/.")))
		return fail(c, -EINVAL, path,
			    "\"%s\" is not a normalized path (no //, . or .. components, no trailing /)", s);
	return 0;
}

/* ---------- image targets (slots and lowers) ---------- */

static const char *const target_keys_by_storage[_LAYOUT_STORAGE_MAX][3] = {
	[LAYOUT_STORAGE_NOR] = { "storage", "partition" },
	[LAYOUT_STORAGE_NAND] = { "storage", "partition" },
	[LAYOUT_STORAGE_UBI] = { "storage", "ubi", "volume" },
	[LAYOUT_STORAGE_FILE] = { "storage", "path" },
};

static size_t n_keys(const char *const *k, size_t max)
{
	size_t n = 0;

	while (n < max && k[n])
		n++;
	return n;
}

/* extra: one more key the caller allows at this level (e.g. "name"), or NULL */
static int parse_target(struct ctx *c, struct json_object *o, const char *base, const char *extra,
			const char *role, struct layout_image_target *t)
{
	const char *keys[4];
	char p[PATHLEN];
	size_t nk;
	int r, s;

	if (json_object_get_type(o) != json_type_object)
		return fail(c, -EINVAL, base, "expected an object, got %s", jtype(o));
	if ((r = get_enum(c, o, base, "storage", true, layout_storage_table, _LAYOUT_STORAGE_MAX, &s)) < 0)
		return r;
	t->storage = s;
	nk = n_keys(target_keys_by_storage[s], 3);
	memcpy(keys, target_keys_by_storage[s], nk * sizeof(*keys));
	if (extra)
		keys[nk++] = extra;
	if ((r = check_keys(c, o, base, keys, nk)) < 0)
		return r;
	switch (t->storage) {
	case LAYOUT_STORAGE_NOR:
	case LAYOUT_STORAGE_NAND: {
		enum flash_type want = t->storage == LAYOUT_STORAGE_NOR ? FLASH_NOR : FLASH_NAND;

		if ((r = ref_partition(c, o, base, "partition", &t->part)) < 0)
			return r;
		if (t->part->dev->type != want)
			return fail(c, -EINVAL, pkey(p, base, "storage"),
				    "storage \"%s\" but partition \"%s\" is on %s device \"%s\"",
				    layout_storage_table[s], t->part->name,
				    flash_type_to_string(t->part->dev->type), t->part->dev->name);
		return claim_partition(c, t->part, base, role);
	}
	case LAYOUT_STORAGE_UBI:
		return ref_ubi_volume(c, o, base, &t->part, &t->ubi_volume, NULL);
	case LAYOUT_STORAGE_FILE:
		if ((r = dup_string(c, o, base, "path", true, &t->file)) < 0)
			return r;
		return check_abs_path(c, pkey(p, base, "path"), t->file);
	case _LAYOUT_STORAGE_MAX:
		break;
	}
	return -EINVAL;
}

uint64_t layout_target_size(const struct layout *l, const struct layout_image_target *t)
{
	switch (t->storage) {
	case LAYOUT_STORAGE_NOR:
	case LAYOUT_STORAGE_NAND:
		return t->part ? t->part->size : 0;
	case LAYOUT_STORAGE_UBI:
		for (size_t i = 0; t->part && i < l->n_ubis; i++)
			if (l->ubis[i].part == t->part) {
				const struct layout_ubi_volume *v = find_ubi_volume(&l->ubis[i], t->ubi_volume);
				return v ? v->size : 0;
			}
		return 0;
	case LAYOUT_STORAGE_FILE:
	case _LAYOUT_STORAGE_MAX:
		break;
	}
	return 0;
}

/* ---------- slot groups ---------- */

static const char *const group_keys[] = { "name", "image", "max_tries", "slots" };
static const char *const slot_keys[] = { "rootfs", "kernel" };

static int check_slot_name(struct ctx *c, const char *path, const char *name)
{
	/* becomes part of BOOT_<name>_LEFT and a BOOT_ORDER word */
	if (!*name || strlen(name) > 16)
		return fail(c, -EINVAL, path, "slot name \"%s\" must have 1 to 16 characters", name);
	for (const char *s = name; *s; s++)
		if (!isalnum((unsigned char)*s) && *s != '_')
			return fail(c, -EINVAL, path, "slot name \"%s\" may only contain letters, digits "
				    "and '_' (it is used in BOOT_ORDER and BOOT_%s_LEFT)", name, name);
	return 0;
}

static int check_same_size(struct ctx *c, const char *gbase, struct layout_slot_group *g,
			   size_t i, bool kernel)
{
	const struct layout_slot *a = &g->slots[0], *b = &g->slots[i];
	const struct layout_image_target *ta = kernel ? &a->kernel : &a->rootfs;
	const struct layout_image_target *tb = kernel ? &b->kernel : &b->rootfs;
	uint64_t sa = layout_target_size(c->l, ta), sb = layout_target_size(c->l, tb);
	char p[PATHLEN];

	if (kernel && a->has_kernel != b->has_kernel) {
		xsnprintf(p, sizeof(p), "%s.slots.%s", gbase, b->has_kernel ? b->name : a->name);
		return fail(c, -EINVAL, p, "slot %s has a kernel and slot %s has none; all slots of a "
			    "group must be alike", a->has_kernel ? a->name : b->name,
			    a->has_kernel ? b->name : a->name);
	}
	if (kernel && !a->has_kernel)
		return 0;
	if (ta->storage != tb->storage) {
		xsnprintf(p, sizeof(p), "%s.slots.%s.%s.storage", gbase, b->name, kernel ? "kernel" : "rootfs");
		return fail(c, -EINVAL, p, "storage \"%s\" differs from slot %s's \"%s\"",
			    layout_storage_table[tb->storage], a->name, layout_storage_table[ta->storage]);
	}
	if (sa != sb) {
		xsnprintf(p, sizeof(p), "%s.slots.%s.%s", gbase, b->name, kernel ? "kernel" : "rootfs");
		return fail(c, -EINVAL, p, "size 0x%" PRIx64 " differs from slot %s's 0x%" PRIx64
			    " (slots of a group must be the same size)", sb, a->name, sa);
	}
	return 0;
}

static int parse_group(struct ctx *c, struct json_object *o, const char *base, size_t idx)
{
	struct layout *l = c->l;
	struct layout_slot_group *g = &l->groups[idx];
	struct json_object *slots, *mt;
	char p[PATHLEN], sb[PATHLEN], tb[PATHLEN];
	int r, it;
	size_t n;

	if (json_object_get_type(o) != json_type_object)
		return fail(c, -EINVAL, base, "expected an object, got %s", jtype(o));
	if ((r = CHECK_KEYS(c, o, base, group_keys)) < 0 ||
	    (r = dup_string(c, o, base, "name", true, &g->name)) < 0 ||
	    (r = check_name(c, pkey(p, base, "name"), g->name)) < 0)
		return r;
	for (size_t i = 0; i < idx; i++)
		if (!strcmp(l->groups[i].name, g->name))
			return fail(c, -EINVAL, pkey(p, base, "name"),
				    "duplicate slot group name \"%s\" (also slots[%zu])", g->name, i);
	it = 0;
	if ((r = get_enum(c, o, base, "image", false, image_types, ELEMENTSOF(image_types), &it)) < 0)
		return r;
	g->image_type = strdup(image_types[it]);
	if (!g->image_type)
		return -ENOMEM;
	g->max_tries = 3;
	if ((r = get_member(c, o, base, "max_tries", false, json_type_int, "an integer", &mt)) < 0)
		return r;
	if (mt) {
		int64_t v = json_object_get_int64(mt);
		if (v < 1 || v > 99)
			return fail(c, -EINVAL, pkey(p, base, "max_tries"),
				    "%" PRId64 " is not between 1 and 99", v);
		g->max_tries = (unsigned)v;
	}
	if ((r = get_object(c, o, base, "slots", true, &slots)) < 0)
		return r;
	n = (size_t)json_object_object_length(slots);
	if (n < 1 || n > 4)
		return fail(c, -EINVAL, pkey(p, base, "slots"),
			    "has %zu slots; a group has 1 to 4 (2 for A/B)", n);
	g->slots = calloc(n, sizeof(*g->slots));
	if (!g->slots)
		return -ENOMEM;
	json_object_object_foreach(slots, sname, sobj) {
		struct layout_slot *s = &g->slots[g->n_slots];
		struct json_object *k;

		xsnprintf(sb, sizeof(sb), "%s.slots.%s", base, sname);
		s->name = strdup(sname);
		if (!s->name)
			return -ENOMEM;
		g->n_slots++;
		if ((r = check_slot_name(c, sb, sname)) < 0)
			return r;
		if (json_object_get_type(sobj) != json_type_object)
			return fail(c, -EINVAL, sb, "expected an object, got %s", jtype(sobj));
		if ((r = CHECK_KEYS(c, sobj, sb, slot_keys)) < 0 ||
		    (r = get_object(c, sobj, sb, "rootfs", true, &k)) < 0 ||
		    (r = parse_target(c, k, pkey(tb, sb, "rootfs"), NULL, "image", &s->rootfs)) < 0 ||
		    (r = get_object(c, sobj, sb, "kernel", false, &k)) < 0)
			return r;
		if (k) {
			s->has_kernel = true;
			if ((r = parse_target(c, k, pkey(tb, sb, "kernel"), NULL, "image", &s->kernel)) < 0)
				return r;
		}
	}
	for (size_t i = 1; i < g->n_slots; i++)
		if ((r = check_same_size(c, base, g, i, false)) < 0 ||
		    (r = check_same_size(c, base, g, i, true)) < 0)
			return r;
	return 0;
}

/* ---------- overlays and lowers ---------- */

static const char *const overlay_keys_by_type[_LAYOUT_OVERLAY_MAX][4] = {
	[LAYOUT_OVERLAY_JFFS2] = { "path", "type", "partition" },
	[LAYOUT_OVERLAY_UBIFS] = { "path", "type", "ubi", "volume" },
	[LAYOUT_OVERLAY_TMPFS] = { "path", "type", "size" },
};

static int parse_overlay(struct ctx *c, struct json_object *o, const char *base, size_t idx)
{
	struct layout *l = c->l;
	struct layout_overlay *ov = &l->overlays[idx];
	struct layout_ubi_volume *v;
	char p[PATHLEN];
	int r, t;

	if (json_object_get_type(o) != json_type_object)
		return fail(c, -EINVAL, base, "expected an object, got %s", jtype(o));
	if ((r = get_enum(c, o, base, "type", true, layout_overlay_type_table, _LAYOUT_OVERLAY_MAX, &t)) < 0)
		return r;
	ov->type = t;
	if ((r = check_keys(c, o, base, overlay_keys_by_type[t], n_keys(overlay_keys_by_type[t], 4))) < 0)
		return r;
	if (!json_object_object_get_ex(o, "path", NULL)) {
		ov->path = strdup("/");
		if (!ov->path)
			return -ENOMEM;
	} else if ((r = dup_string(c, o, base, "path", true, &ov->path)) < 0) {
		return r;
	}
	if ((r = check_abs_path(c, pkey(p, base, "path"), ov->path)) < 0)
		return r;
	for (size_t i = 0; i < idx; i++)
		if (!strcmp(l->overlays[i].path, ov->path))
			return fail(c, -EINVAL, pkey(p, base, "path"),
				    "\"%s\" already has an overlay (overlays[%zu])", ov->path, i);
	switch (ov->type) {
	case LAYOUT_OVERLAY_JFFS2:
		if ((r = ref_partition(c, o, base, "partition", &ov->part)) < 0)
			return r;
		return claim_partition(c, ov->part, base, "overlay");
	case LAYOUT_OVERLAY_UBIFS:
		if ((r = ref_ubi_volume(c, o, base, &ov->part, &ov->ubi_volume, &v)) < 0)
			return r;
		if (v->type == LAYOUT_UBI_STATIC)
			return fail(c, -EINVAL, pkey(p, base, "volume"),
				    "UBIFS needs a dynamic volume; \"%s\" is static", v->name);
		return 0;
	case LAYOUT_OVERLAY_TMPFS:
		r = get_size(c, o, base, "size", false, &ov->tmpfs_size);
		return r < 0 ? r : 0;
	case _LAYOUT_OVERLAY_MAX:
		break;
	}
	return -EINVAL;
}

static int parse_lower(struct ctx *c, struct json_object *o, const char *base, size_t idx)
{
	struct layout *l = c->l;
	struct layout_lower *lw = &l->lowers[idx];
	char p[PATHLEN];
	int r;

	if (json_object_get_type(o) != json_type_object)
		return fail(c, -EINVAL, base, "expected an object, got %s", jtype(o));
	if ((r = dup_string(c, o, base, "name", true, &lw->name)) < 0 ||
	    (r = check_name(c, pkey(p, base, "name"), lw->name)) < 0)
		return r;
	for (size_t i = 0; i < idx; i++)
		if (!strcmp(l->lowers[i].name, lw->name))
			return fail(c, -EINVAL, pkey(p, base, "name"),
				    "duplicate lower name \"%s\" (also lowers[%zu])", lw->name, i);
	return parse_target(c, o, base, "name", "lower", &lw->target);
}

/* ---------- top level ---------- */

static const char *const top_keys[] = { "board", "compatible", "devices", "partitions",
					"bootloader", "env", "ubi", "slots", "overlays", "lowers" };

/* Parse the array at key: allocate n elements of size sz into *ret and
 * call each(c, element, path, index). */
static int parse_array(struct ctx *c, struct json_object *top, const char *key, bool required,
		       size_t sz, void **ret, size_t *ret_n,
		       int (*each)(struct ctx *, struct json_object *, const char *, size_t))
{
	struct json_object *a;
	char p[PATHLEN];
	size_t n;
	int r;

	if ((r = get_array(c, top, "", key, required, &a)) <= 0)
		return r;
	n = json_object_array_length(a);
	if (n == 0 && required)
		return fail(c, -EINVAL, key, "must not be empty");
	*ret = calloc(n ? n : 1, sz);
	if (!*ret)
		return -ENOMEM;
	*ret_n = n;
	for (size_t i = 0; i < n; i++)
		if ((r = each(c, json_object_array_get_idx(a, i), pidx(p, key, i), i)) < 0)
			return r;
	return 0;
}

static int each_device(struct ctx *c, struct json_object *o, const char *base, size_t i)
{
	struct layout *l = c->l;
	char p[PATHLEN];
	int r = parse_device(c, o, base, &l->devices[i]);

	if (r < 0)
		return r;
	for (size_t j = 0; j < i; j++)
		if (!strcmp(l->devices[j].name, l->devices[i].name))
			return fail(c, -EINVAL, pkey(p, base, "name"),
				    "duplicate device name \"%s\" (also devices[%zu])", l->devices[i].name, j);
	return 0;
}

static int parse_root(struct ctx *c, struct json_object *top)
{
	struct layout *l = c->l;
	const char *bl;
	struct json_object *env;
	int r;
	bool ab = false;

	if (json_object_get_type(top) != json_type_object)
		return fail(c, -EINVAL, NULL, "the layout must be a JSON object, not %s", jtype(top));
	if ((r = CHECK_KEYS(c, top, "", top_keys)) < 0 ||
	    (r = dup_string(c, top, "", "board", true, &l->board)) < 0 ||
	    (r = dup_string(c, top, "", "compatible", true, &l->compatible)) < 0)
		return r;
	if ((r = parse_array(c, top, "devices", true, sizeof(*l->devices), (void **)&l->devices,
			     &l->n_devices, each_device)) < 0 ||
	    (r = parse_array(c, top, "partitions", true, sizeof(*l->partitions),
			     (void **)&l->partitions, &l->n_partitions, parse_partition)) < 0 ||
	    (r = check_overlaps(c)) < 0)
		return r;
	if ((r = get_string(c, top, "", "bootloader", false, &bl)) < 0)
		return r;
	if (bl) {
		l->bootloader = layout_find_partition(l, bl);
		if (!l->bootloader)
			return fail(c, -EINVAL, "bootloader", "no partition named \"%s\" in \"partitions\"", bl);
		if ((r = claim_partition(c, l->bootloader, "bootloader", "bootloader")) < 0)
			return r;
	}
	if ((r = get_object(c, top, "", "env", false, &env)) < 0 || (env && (r = parse_env(c, env)) < 0))
		return r;
	if ((r = parse_array(c, top, "ubi", false, sizeof(*l->ubis), (void **)&l->ubis, &l->n_ubis,
			     parse_ubi)) < 0 ||
	    (r = parse_array(c, top, "slots", true, sizeof(*l->groups), (void **)&l->groups,
			     &l->n_groups, parse_group)) < 0 ||
	    (r = parse_array(c, top, "overlays", true, sizeof(*l->overlays), (void **)&l->overlays,
			     &l->n_overlays, parse_overlay)) < 0 ||
	    (r = parse_array(c, top, "lowers", false, sizeof(*l->lowers), (void **)&l->lowers,
			     &l->n_lowers, parse_lower)) < 0)
		return r;
	for (size_t i = 0; i < l->n_groups; i++)
		ab |= l->groups[i].n_slots == 2;
	if (!ab)
		return fail(c, -EINVAL, "slots", "no slot group has exactly 2 slots (A/B)");
	return 0;
}

/* json-c has no line numbers: derive line:column from the byte offset. */
static void offset_to_linecol(const char *s, size_t off, unsigned *line, unsigned *col)
{
	*line = 1;
	*col = 1;
	for (size_t i = 0; i < off && s[i]; i++) {
		if (s[i] == '\n') {
			(*line)++;
			*col = 1;
		} else {
			(*col)++;
		}
	}
}

int layout_parse(const char *json, const char *name, struct layout **ret, struct error *err)
{
	_cleanup_json_ struct json_object *top = NULL;
	struct json_tokener *tok;
	struct layout *l;
	struct ctx c = { .file = name ? name : "<layout>", .err = err };
	size_t len = strlen(json), end;
	unsigned line, col;
	int r;

	tok = json_tokener_new();
	if (!tok)
		return -ENOMEM;
	top = json_tokener_parse_ex(tok, json, (int)len + 1); /* with the NUL: numbers end */
	if (!top) {
		enum json_tokener_error e = json_tokener_get_error(tok);

		offset_to_linecol(json, json_tokener_get_parse_end(tok), &line, &col);
		json_tokener_free(tok);
		if (e == json_tokener_continue)
			return fail(&c, -EINVAL, NULL, "line %u: unexpected end of file (JSON incomplete)",
				    line);
		return fail(&c, -EINVAL, NULL, "line %u, column %u: JSON syntax error: %s", line, col,
			    json_tokener_error_desc(e));
	}
	end = json_tokener_get_parse_end(tok);
	json_tokener_free(tok);
	while (end < len && isspace((unsigned char)json[end]))
		end++;
	if (end < len) {
		offset_to_linecol(json, end, &line, &col);
		return fail(&c, -EINVAL, NULL, "line %u, column %u: trailing data after the JSON object",
			    line, col);
	}

	l = calloc(1, sizeof(*l));
	if (!l)
		return -ENOMEM;
	c.l = l;
	l->path = strdup(c.file);
	r = l->path ? parse_root(&c, top) : -ENOMEM;
	for (size_t i = 0; i < c.n_claims; i++) {
		free(c.claims[i].what);
		free(c.claims[i].by);
	}
	free(c.claims);
	if (r < 0) {
		if (r == -ENOMEM && err)
			xsnprintf(err->msg, sizeof(err->msg), "%s: out of memory", c.file);
		layout_free(l);
		return r;
	}
	*ret = l;
	return 0;
}

int layout_load(const char *path, struct layout **ret, struct error *err)
{
	_cleanup_free_ char *buf = NULL;
	size_t len;
	int r;

	r = util_read_file(path, LAYOUT_MAX_FILE, &buf, &len);
	if (r < 0)
		return error_set(err, r, "%s: cannot read: %s", path, strerror(-r));
	if (strlen(buf) != len)
		return error_set(err, -EINVAL, "%s: contains a NUL byte (not a JSON text file)",
				 path);
	return layout_parse(buf, path, ret, err);
}

static void free_target(struct layout_image_target *t)
{
	free(t->ubi_volume);
	free(t->file);
}

void layout_free(struct layout *l)
{
	if (!l)
		return;
	for (size_t i = 0; l->devices && i < l->n_devices; i++) {
		free(l->devices[i].name);
		free(l->devices[i].nandsim_id);
		free(l->devices[i].mtd_id);
	}
	free(l->devices);
	for (size_t i = 0; l->partitions && i < l->n_partitions; i++)
		free(l->partitions[i].name);
	free(l->partitions);
	for (size_t i = 0; l->ubis && i < l->n_ubis; i++) {
		for (size_t j = 0; j < l->ubis[i].n_volumes; j++)
			free(l->ubis[i].volumes[j].name);
		free(l->ubis[i].volumes);
	}
	free(l->ubis);
	for (size_t i = 0; l->groups && i < l->n_groups; i++) {
		struct layout_slot_group *g = &l->groups[i];

		for (size_t j = 0; g->slots && j < g->n_slots; j++) {
			free(g->slots[j].name);
			free_target(&g->slots[j].rootfs);
			free_target(&g->slots[j].kernel);
		}
		free(g->slots);
		free(g->name);
		free(g->image_type);
	}
	free(l->groups);
	for (size_t i = 0; l->overlays && i < l->n_overlays; i++) {
		free(l->overlays[i].path);
		free(l->overlays[i].ubi_volume);
	}
	free(l->overlays);
	for (size_t i = 0; l->lowers && i < l->n_lowers; i++) {
		free(l->lowers[i].name);
		free_target(&l->lowers[i].target);
	}
	free(l->lowers);
	free(l->path);
	free(l->board);
	free(l->compatible);
	free(l);
}

/* ---------- lookups ---------- */

struct layout_partition *layout_find_partition(const struct layout *l, const char *name)
{
	for (size_t i = 0; l->partitions && i < l->n_partitions; i++)
		if (l->partitions[i].name && !strcmp(l->partitions[i].name, name))
			return &l->partitions[i];
	return NULL;
}

struct layout_device *layout_find_device(const struct layout *l, const char *name)
{
	for (size_t i = 0; l->devices && i < l->n_devices; i++)
		if (l->devices[i].name && !strcmp(l->devices[i].name, name))
			return &l->devices[i];
	return NULL;
}

struct layout_slot_group *layout_find_group(const struct layout *l, const char *name)
{
	for (size_t i = 0; i < l->n_groups; i++)
		if (!strcmp(l->groups[i].name, name))
			return &l->groups[i];
	return NULL;
}

struct layout_slot *layout_find_slot(struct layout_slot_group *g, const char *name)
{
	for (size_t i = 0; i < g->n_slots; i++)
		if (!strcmp(g->slots[i].name, name))
			return &g->slots[i];
	return NULL;
}

int layout_partition_index(const struct layout *l, const struct layout_partition *p)
{
	int idx = 0;

	if (p < l->partitions || p >= l->partitions + l->n_partitions)
		return -ENOENT;
	for (size_t d = 0; d < l->n_devices; d++) {
		const struct layout_device *dev = &l->devices[d];

		for (size_t i = 0; i < l->n_partitions; i++) {
			const struct layout_partition *q = &l->partitions[i];

			if (q->dev != dev)
				continue;
			if (dev == p->dev && q->offset < p->offset)
				idx++;
			else if (dev != p->dev && dev < p->dev)
				idx++;
		}
	}
	return idx;
}

/* Partitions of dev in offset order (n returned, caller frees). */
static int sorted_partitions(const struct layout *l, const struct layout_device *dev,
			     const struct layout_partition ***ret)
{
	const struct layout_partition **v = calloc(l->n_partitions + 1, sizeof(*v));
	size_t n = 0;

	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < l->n_partitions; i++) {
		const struct layout_partition *p = &l->partitions[i];
		size_t j;

		if (p->dev != dev)
			continue;
		for (j = n; j > 0 && v[j - 1]->offset > p->offset; j--)
			v[j] = v[j - 1];
		v[j] = p;
		n++;
	}
	*ret = v;
	return (int)n;
}

/* ---------- roles ---------- */

static void add_role(char *buf, size_t len, int *n, const char *fmt, ...) _printf_(4, 5);
static void add_role(char *buf, size_t len, int *n, const char *fmt, ...)
{
	size_t o = strlen(buf);
	va_list ap;

	if (o + 2 >= len)
		return;
	if (*n)
		o += xsnprintf(buf + o, len - o, ", ");
	va_start(ap, fmt);
	vsnprintf(buf + o, len - o, fmt, ap);
	va_end(ap);
	(*n)++;
}

int layout_partition_roles(const struct layout *l, const struct layout_partition *p, char *buf,
			   size_t len)
{
	int n = 0;

	if (!len)
		return 0;
	buf[0] = '\0';
	if (l->bootloader == p)
		add_role(buf, len, &n, "bootloader");
	for (size_t i = 0; i < l->env.n_copies; i++)
		if (l->env.copies[i].part == p) {
			add_role(buf, len, &n, l->env.n_copies == 2 ? "env copy %zu" : "env", i + 1);
		}
	for (size_t i = 0; i < l->n_ubis; i++)
		if (l->ubis[i].part == p)
			add_role(buf, len, &n, "ubi (%zu volumes)", l->ubis[i].n_volumes);
	for (size_t i = 0; i < l->n_groups; i++)
		for (size_t j = 0; j < l->groups[i].n_slots; j++) {
			const struct layout_slot *s = &l->groups[i].slots[j];

			if (s->rootfs.storage != LAYOUT_STORAGE_UBI && s->rootfs.part == p)
				add_role(buf, len, &n, "slot %s.%s rootfs", l->groups[i].name, s->name);
			if (s->has_kernel && s->kernel.storage != LAYOUT_STORAGE_UBI && s->kernel.part == p)
				add_role(buf, len, &n, "slot %s.%s kernel", l->groups[i].name, s->name);
		}
	for (size_t i = 0; i < l->n_overlays; i++)
		if (l->overlays[i].type == LAYOUT_OVERLAY_JFFS2 && l->overlays[i].part == p)
			add_role(buf, len, &n, "overlay %s (jffs2)", l->overlays[i].path);
	for (size_t i = 0; i < l->n_lowers; i++)
		if (l->lowers[i].target.storage != LAYOUT_STORAGE_UBI && l->lowers[i].target.part == p)
			add_role(buf, len, &n, "lower %s", l->lowers[i].name);
	return n;
}

/* ---------- mtdparts ---------- */

/* cmdlinepart's memparse(): plain number or k/m/g suffix */
static void mtdsize(char *buf, size_t len, uint64_t v)
{
	if (v && !(v % (1024 * 1024 * 1024ull)))
		xsnprintf(buf, len, "%" PRIu64 "g", v >> 30);
	else if (v && !(v % (1024 * 1024)))
		xsnprintf(buf, len, "%" PRIu64 "m", v >> 20);
	else if (v && !(v % 1024))
		xsnprintf(buf, len, "%" PRIu64 "k", v >> 10);
	else
		xsnprintf(buf, len, "%" PRIu64, v);
}

static int append(char **s, size_t *len, const char *fmt, ...) _printf_(3, 4);
static int append(char **s, size_t *len, const char *fmt, ...)
{
	va_list ap;
	char *n;
	int k;

	va_start(ap, fmt);
	k = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	n = realloc(*s, *len + k + 1);
	if (!n)
		return -ENOMEM;
	va_start(ap, fmt);
	vsnprintf(n + *len, k + 1, fmt, ap);
	va_end(ap);
	*s = n;
	*len += k;
	return 0;
}

static int mtdparts_dev(const struct layout *l, const struct layout_device *dev, char **s,
			size_t *len, bool *first)
{
	_cleanup_free_ const struct layout_partition **v = NULL;
	char sz[32], off[32];
	int n = sorted_partitions(l, dev, &v), r;

	if (n <= 0)
		return n;
	if ((r = append(s, len, "%s%s:", *first ? "" : ";", layout_device_mtd_id(dev))) < 0)
		return r;
	*first = false;
	for (int i = 0; i < n; i++) {
		mtdsize(sz, sizeof(sz), v[i]->size);
		mtdsize(off, sizeof(off), v[i]->offset);
		if ((r = append(s, len, "%s%s@%s(%s)%s", i ? "," : "", sz, off, v[i]->name,
				v[i]->readonly ? "ro" : "")) < 0)
			return r;
	}
	return 0;
}

static int mtdparts(const struct layout *l, const struct layout_device *only, char **ret)
{
	_cleanup_free_ char *s = NULL;
	size_t len = 0;
	bool first = true;
	int r;

	if ((r = append(&s, &len, "mtdparts=")) < 0)
		return r;
	for (size_t i = 0; i < l->n_devices; i++) {
		if (only && &l->devices[i] != only)
			continue;
		if ((r = mtdparts_dev(l, &l->devices[i], &s, &len, &first)) < 0)
			return r;
	}
	*ret = TAKE_PTR(s);
	return 0;
}

int layout_mtdparts(const struct layout *l, char **ret)
{
	return mtdparts(l, NULL, ret);
}

int layout_mtdparts_device(const struct layout *l, const struct layout_device *dev, char **ret)
{
	if (!dev || dev < l->devices || dev >= l->devices + l->n_devices)
		return -EINVAL;
	return mtdparts(l, dev, ret);
}

/* ---------- nandsim / mtdram ---------- */

int layout_nandsim(const struct layout *l, const struct layout_device *dev,
		   const char **ret_module, char **ret_params)
{
	_cleanup_free_ const struct layout_partition **v = NULL;
	_cleanup_free_ char *s = NULL;
	size_t len = 0;
	uint8_t id[8];
	size_t nid;
	unsigned override, nparts = 0;
	uint64_t pos = 0;
	int n, r;

	if (!dev)
		dev = l->n_devices ? &l->devices[0] : NULL;
	if (!dev || dev < l->devices || dev >= l->devices + l->n_devices)
		return -EINVAL;
	if (dev->type == FLASH_NOR) {
		/* mtdram: sizes in KiB; partitions come from mtdparts= */
		if (dev->size % 1024 || dev->erasesize % 1024)
			return -EOPNOTSUPP;
		if (asprintf(&s, "total_size=%" PRIu64 " erase_size=%" PRIu32, dev->size / 1024,
			     dev->erasesize / 1024) < 0)
			return -ENOMEM;
		*ret_module = "mtdram";
		*ret_params = TAKE_PTR(s);
		return 0;
	}
	r = nandsim_id_for(dev, id, &nid, &override, NULL);
	if (r < 0)
		return r;
	if ((r = append(&s, &len, "id_bytes=")) < 0)
		return r;
	for (size_t i = 0; i < nid; i++)
		if ((r = append(&s, &len, "%s0x%02x", i ? "," : "", id[i])) < 0)
			return r;
	if (override && (r = append(&s, &len, " overridesize=%u", override)) < 0)
		return r;
	n = sorted_partitions(l, dev, &v);
	if (n < 0)
		return n;
	/* nandsim lays parts= out back to back from 0 and adds the rest as
	 * one more partition: gaps become filler partitions */
	for (int i = 0; i < n; i++) {
		if (v[i]->offset > pos) {
			if ((r = append(&s, &len, "%s%" PRIu64, nparts ? "," : " parts=",
					(v[i]->offset - pos) / dev->erasesize)) < 0)
				return r;
			nparts++;
		}
		if ((r = append(&s, &len, "%s%" PRIu64, nparts ? "," : " parts=",
				v[i]->size / dev->erasesize)) < 0)
			return r;
		nparts++;
		pos = v[i]->offset + v[i]->size;
	}
	if (nparts + (pos < dev->size ? 1 : 0) > NANDSIM_MAX_PARTS)
		return -E2BIG;
	*ret_module = "nandsim";
	*ret_params = TAKE_PTR(s);
	return 0;
}

/* ---------- comparison with the running kernel ---------- */

struct sys_mtd {
	char dir[64];
	char name[128];
	char type[32];
	uint64_t size, erasesize, writesize, oobsize, offset;
	bool has_offset;
};

/* sysfs "type" strings (drivers/mtd/mtdcore.c) -> our flash type */
static const struct {
	const char *sys;
	enum flash_type type;
} sys_types[] = {
	{ "nor", FLASH_NOR }, { "ram", FLASH_NOR }, { "rom", FLASH_NOR }, { "dataflash", FLASH_NOR },
	{ "nand", FLASH_NAND }, { "mlc-nand", FLASH_NAND },
};

static int read_sys_mtd(const char *root, const char *entry, struct sys_mtd *m)
{
	char path[1024];
	int r;

	xsnprintf(m->dir, sizeof(m->dir), "%s", entry);
#define RD_LINE(f, buf) (xsnprintf(path, sizeof(path), "%s/%s/%s", root, entry, f), \
			 util_read_line(path, buf, sizeof(buf)))
#define RD_U64(f, v) (xsnprintf(path, sizeof(path), "%s/%s/%s", root, entry, f), util_read_u64(path, v))
	if ((r = RD_LINE("name", m->name)) < 0 || (r = RD_LINE("type", m->type)) < 0 ||
	    (r = RD_U64("size", &m->size)) < 0 || (r = RD_U64("erasesize", &m->erasesize)) < 0)
		return r;
	if (RD_U64("writesize", &m->writesize) < 0)
		m->writesize = 0;
	if (RD_U64("oobsize", &m->oobsize) < 0)
		m->oobsize = 0;
	m->has_offset = RD_U64("offset", &m->offset) >= 0;
#undef RD_LINE
#undef RD_U64
	return 0;
}

int layout_check_system(const struct layout *l, const char *sysfs_root, struct error *err)
{
	struct sys_mtd *mtds = NULL;
	size_t n = 0;
	DIR *d;
	struct dirent *de;
	char pp[PATHLEN];
	int r = 0;

	if (!sysfs_root)
		sysfs_root = FLASH_MTD_SYSFS;
	d = opendir(sysfs_root);
	if (!d) {
		int e = errno;

		return error_set(err, e == ENOENT ? -ENODEV : -e,
			       "%s: cannot open (%s); the running kernel has no MTD support", sysfs_root,
			       strerror(e));
	}
	while ((de = readdir(d))) {
		struct sys_mtd *nm;

		if (flash_mtd_parse_dirname(de->d_name, &(unsigned){ 0 }) < 0)
			continue;
		nm = realloc(mtds, (n + 1) * sizeof(*mtds));
		if (!nm) {
			r = -ENOMEM;
			break;
		}
		mtds = nm;
		memset(&mtds[n], 0, sizeof(mtds[n]));
		r = read_sys_mtd(sysfs_root, de->d_name, &mtds[n]);
		if (r < 0) {
			r = error_set(err, r, "%s/%s: cannot read its attributes: %s", sysfs_root,
				    de->d_name, strerror(-r));
			break;
		}
		n++;
	}
	closedir(d);
	for (size_t i = 0; r >= 0 && i < l->n_partitions; i++) {
		const struct layout_partition *p = &l->partitions[i];
		const struct sys_mtd *m = NULL;
		int t = -1;

		partition_path(l, p, pp);
		for (size_t j = 0; j < n; j++)
			if (!strcmp(mtds[j].name, p->name))
				m = &mtds[j];
		if (!m) {
			r = error_set(err, -ENODEV,
				    "partition \"%s\" (%s: %s): no MTD device of that name in %s (%zu MTD "
				    "devices there; is mtdparts= set?)", p->name, l->path, pp, sysfs_root, n);
			break;
		}
		for (size_t k = 0; k < ELEMENTSOF(sys_types); k++)
			if (!strcmp(m->type, sys_types[k].sys))
				t = (int)sys_types[k].type;
		if (t != (int)p->dev->type)
			r = error_set(err, -EINVAL, "partition \"%s\" (%s: %s): %s/%s is of type \"%s\", "
				    "the layout says %s", p->name, l->path, pp, sysfs_root, m->dir, m->type,
				    flash_type_to_string(p->dev->type));
		else if (m->size != p->size)
			r = error_set(err, -EINVAL, "partition \"%s\" (%s: %s): size 0x%" PRIx64
				    " in the layout, 0x%" PRIx64 " in %s/%s", p->name, l->path, pp,
				    p->size, m->size, sysfs_root, m->dir);
		else if (m->erasesize != p->dev->erasesize)
			r = error_set(err, -EINVAL, "partition \"%s\" (%s: %s): erase size 0x%" PRIx32
				    " in the layout, 0x%" PRIx64 " in %s/%s", p->name, l->path, pp,
				    p->dev->erasesize, m->erasesize, sysfs_root, m->dir);
		else if (p->dev->type == FLASH_NAND && m->writesize && m->writesize != p->dev->writesize)
			r = error_set(err, -EINVAL, "partition \"%s\" (%s: %s): page size %" PRIu32
				    " in the layout, %" PRIu64 " in %s/%s", p->name, l->path, pp,
				    p->dev->writesize, m->writesize, sysfs_root, m->dir);
		else if (p->dev->type == FLASH_NAND && m->oobsize && m->oobsize != p->dev->oobsize)
			r = error_set(err, -EINVAL, "partition \"%s\" (%s: %s): OOB size %" PRIu32
				    " in the layout, %" PRIu64 " in %s/%s", p->name, l->path, pp,
				    p->dev->oobsize, m->oobsize, sysfs_root, m->dir);
		else if (m->has_offset && m->offset != p->offset)
			r = error_set(err, -EINVAL, "partition \"%s\" (%s: %s): offset 0x%" PRIx64
				    " in the layout, 0x%" PRIx64 " in %s/%s", p->name, l->path, pp,
				    p->offset, m->offset, sysfs_root, m->dir);
	}
	free(mtds);
	return r < 0 ? r : 0;
}
