/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Board layouts: the JSON parser and validator. Every rejection names the
 * file, the JSON path and the reason. Schema: man/flashd-layout.5. The model
 * and its lookups are in layout.c, the NAND id table in layout_nand.c, the
 * kernel's views of a layout in layout_kernel.c. */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "cleanup.h"
#include "cleanup_json.h"
#include "layout.h"
#include "layout_nand.h"
#include "layout_parse.h"
#include "util.h"

#define LAYOUT_NAME_MAX 63         /* struct flash_info.name[64] */

/* Image formats a slot may hold. */
static const char *const image_types[] = { "squashfs" };

static void join_names(const char *const *table, size_t n, char *buf, size_t len)
{
	size_t o = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < n && o < len; i++)
		if (table[i])
			o += util_snprintf(buf + o, len - o, "%s\"%s\"", o ? ", " : "", table[i]);
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
		util_snprintf(buf, PATHLEN, "%s.%s", base, key);
	else
		util_snprintf(buf, PATHLEN, "%s", key);
	return buf;
}

static const char *pidx(char *buf, const char *base, size_t i)
{
	util_snprintf(buf, PATHLEN, "%s[%zu]", base, i);
	return buf;
}

static const char *jtype(struct json_object *o)
{
	return o ? json_type_to_name(json_object_get_type(o)) : "null";
}

static int check_object(struct ctx *c, struct json_object *o, const char *path)
{
	if (json_object_get_type(o) == json_type_object)
		return 0;
	return fail(c, -EINVAL, path, "expected an object, got %s", jtype(o));
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
			o2 += util_snprintf(list + o2, sizeof(list) - o2, "%s%s", i ? ", " : "", allowed[i]);
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

/* Names are unique within their array: the name of element n (at path) against
 * the n before it, sz bytes each with their name at name_off. what and arr_path
 * name them in the message ("partition", "partitions"). */
static int check_unique(struct ctx *c, const char *path, const void *arr, size_t n, size_t sz,
			size_t name_off, const char *what, const char *arr_path)
{
	const char *name = *(const char *const *)((const char *)arr + n * sz + name_off);

	for (size_t i = 0; i < n; i++)
		if (!strcmp(*(const char *const *)((const char *)arr + i * sz + name_off), name))
			return fail(c, -EINVAL, path, "duplicate %s name \"%s\" (also %s[%zu])", what,
				    name, arr_path, i);
	return 0;
}
#define CHECK_UNIQUE(c, path, arr, n, field, what, arr_path) \
	check_unique(c, path, arr, n, sizeof(*(arr)), offsetof(__typeof__(*(arr)), field), what, \
		     arr_path)

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

	util_snprintf(what, sizeof(what), "part:%s", p->name);
	util_snprintf(disp, sizeof(disp), "partition \"%s\"", p->name);
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
					   "subpage", "nandsim_id", "mtd_id" };

static int parse_device(struct ctx *c, struct json_object *o, const char *base,
			struct layout_device *d)
{
	char p[PATHLEN];
	uint64_t v;
	int r, t;

	if (check_object(c, o, base) < 0)
		return -EINVAL;
	if ((r = CHECK_KEYS(c, o, base, device_keys)) < 0 ||
	    (r = dup_string(c, o, base, "name", true, &d->name)) < 0 ||
	    (r = check_name(c, pkey(p, base, "name"), d->name)) < 0 ||
	    (r = get_enum(c, o, base, "type", true, flash_type_table, _FLASH_TYPE_MAX, &t)) < 0 ||
	    (r = get_size(c, o, base, "size", true, &d->size)) < 0 ||
	    (r = get_size(c, o, base, "erase_block", true, &v)) < 0)
		return r;
	d->type = t;
	if (v == 0 || v > UINT32_MAX || util_log2_exact(v) < 0)
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
	if (v == 0 || util_log2_exact(v) < 0 || v > d->erasesize)
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

	/* UBI places its VID header by it: a factory UBI image must use the
	 * chip's, or the kernel refuses to attach ("bad VID header offset") */
	v = d->writesize;
	if ((r = get_size(c, o, base, "subpage", false, &v)) < 0)
		return r;
	if (v == 0 || util_log2_exact(v) < 0 || v > d->writesize)
		return fail(c, -EINVAL, pkey(p, base, "subpage"),
			    "%" PRIu64 " is not a power of two no larger than the page (%" PRIu32 ")",
			    v, d->writesize);
	d->subpage = (uint32_t)v;

	if ((r = dup_string(c, o, base, "mtd_id", false, &d->mtd_id)) < 0 ||
	    (r = dup_string(c, o, base, "nandsim_id", false, &d->nandsim_id)) < 0)
		return r;
	if (d->mtd_id && (strchr(d->mtd_id, ':') || strchr(d->mtd_id, ';')))
		return fail(c, -EINVAL, pkey(p, base, "mtd_id"),
			    "\"%s\" cannot be used in mtdparts= (contains ':' or ';')", d->mtd_id);
	if (d->nandsim_id) {
		uint8_t id[8];
		size_t n;
		struct layout_nand_geom g;

		pkey(p, base, "nandsim_id");
		if (d->type != FLASH_NAND)
			return fail(c, -EINVAL, p, "only NAND devices have a nandsim id");
		if (layout_nand_parse_id(d->nandsim_id, id, &n) < 0)
			return fail(c, -EINVAL, p, "\"%s\" is not 2 to 8 comma-separated bytes like "
				    "\"0x20,0xf1,0x00,0x15\"", d->nandsim_id);
		r = layout_nand_decode_id(id, n, &g);
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
		if (g.size != d->size && util_log2_exact(d->size / d->erasesize) < 0)
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

	if (check_object(c, o, base) < 0)
		return -EINVAL;
	if ((r = CHECK_KEYS(c, o, base, partition_keys)) < 0 ||
	    (r = dup_string(c, o, base, "name", true, &pt->name)) < 0 ||
	    (r = check_name(c, pkey(p, base, "name"), pt->name)) < 0 ||
	    (r = get_string(c, o, base, "device", l->n_devices != 1, &dev)) < 0)
		return r;
	if ((r = CHECK_UNIQUE(c, pkey(p, base, "name"), l->partitions, idx, name, "partition",
			      "partitions")) < 0)
		return r;
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
			util_snprintf(p, sizeof(p), "partitions[%zu]", i);
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
		if (check_object(c, e, base) < 0)
			return -EINVAL;
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

static const char *const ubi_keys[] = { "partition", "volumes" };
static const char *const ubi_vol_keys[] = { "name", "size", "type", "autoresize" };

static int parse_ubi(struct ctx *c, struct json_object *o, const char *base, size_t idx)
{
	struct layout *l = c->l;
	struct layout_ubi *u = &l->ubis[idx];
	struct json_object *vols;
	char p[PATHLEN], vb[PATHLEN], ab[PATHLEN];
	uint64_t leb, lebs, need = 0;
	size_t n;
	int r;

	if (check_object(c, o, base) < 0)
		return -EINVAL;
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
	util_snprintf(ab, sizeof(ab), "%s.volumes", base);
	for (size_t i = 0; i < n; i++) {
		struct json_object *e = json_object_array_get_idx(vols, i);
		struct layout_ubi_volume *v = &u->volumes[i];
		int t = LAYOUT_UBI_DYNAMIC;

		util_snprintf(vb, sizeof(vb), "%s.volumes[%zu]", base, i);
		if (check_object(c, e, vb) < 0)
			return -EINVAL;
		if ((r = CHECK_KEYS(c, e, vb, ubi_vol_keys)) < 0 ||
		    (r = dup_string(c, e, vb, "name", true, &v->name)) < 0)
			return r;
		u->n_volumes = i + 1;
		if ((r = check_name(c, pkey(p, vb, "name"), v->name)) < 0 ||
		    (r = get_size(c, e, vb, "size", true, &v->size)) < 0 ||
		    (r = get_enum(c, e, vb, "type", false, layout_ubi_vol_type_table, _LAYOUT_UBI_MAX, &t)) < 0)
			return r;
		v->type = t;
		if ((r = get_bool(c, e, vb, "autoresize", &v->autoresize)) < 0)
			return r;
		for (size_t j = 0; v->autoresize && j < i; j++)
			if (u->volumes[j].autoresize)
				return fail(c, -EINVAL, pkey(p, vb, "autoresize"), "only one volume may "
					    "grow at attach (also %s.volumes[%zu])", base, j);
		if (v->size == 0)
			return fail(c, -EINVAL, pkey(p, vb, "size"), "must not be 0");
		if ((r = CHECK_UNIQUE(c, pkey(p, vb, "name"), u->volumes, i, name, "UBI volume",
				      ab)) < 0)
			return r;
		need += DIV_ROUND_UP(v->size, leb);
	}
	if (need > lebs)
		return fail(c, -EINVAL, pkey(p, base, "volumes"),
			    "volumes need %" PRIu64 " LEBs of %" PRIu64 " bytes but partition \"%s\" "
			    "offers only %" PRIu64 " (%" PRIu64 " PEBs minus %d for the layout volume, "
			    "%d reserved%s)", need, leb, u->part->name, lebs,
			    u->part->size / u->part->dev->erasesize, LAYOUT_UBI_LAYOUT_PEBS, LAYOUT_UBI_RESERVED_PEBS,
			    u->part->dev->type == FLASH_NAND ? " and the bad-block reserve" : "");
	return 0;
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
	u = layout_find_ubi(c->l, un);
	if (!u)
		return fail(c, -EINVAL, pkey(p, base, "ubi"),
			    "no UBI device on partition \"%s\" in \"ubi\"", un);
	v = layout_find_ubi_volume(u, vn);
	if (!v)
		return fail(c, -EINVAL, pkey(p, base, "volume"),
			    "UBI device \"%s\" has no volume \"%s\"", un, vn);
	util_snprintf(what, sizeof(what), "ubivol:%s/%s", un, vn);
	util_snprintf(disp, sizeof(disp), "UBI volume \"%s\" of \"%s\"", vn, un);
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

/* the keys of each kind of an object with kinds (get_kinded_object) */
#define KINDED_MAX_KEYS 4

static const char *const target_keys_by_storage[_LAYOUT_STORAGE_MAX][KINDED_MAX_KEYS] = {
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

/* An object whose kind is the enum name at key (names: table of n), with
 * the keys that kind allows (keys_by_kind: n rows of KINDED_MAX_KEYS,
 * NULL-padded) plus extra (or NULL). */
static int get_kinded_object(struct ctx *c, struct json_object *o, const char *base,
			     const char *key, const char *const *table, size_t n,
			     const char *const (*keys_by_kind)[KINDED_MAX_KEYS], const char *extra,
			     int *ret)
{
	const char *keys[KINDED_MAX_KEYS + 1];
	size_t nk;
	int r, kind;

	if (check_object(c, o, base) < 0)
		return -EINVAL;
	if ((r = get_enum(c, o, base, key, true, table, n, &kind)) < 0)
		return r;
	nk = n_keys(keys_by_kind[kind], KINDED_MAX_KEYS);
	memcpy(keys, keys_by_kind[kind], nk * sizeof(*keys));
	if (extra)
		keys[nk++] = extra;
	if ((r = check_keys(c, o, base, keys, nk)) < 0)
		return r;
	*ret = kind;
	return 0;
}

/* extra: one more key the caller allows at this level (e.g. "name"), or NULL */
static int parse_target(struct ctx *c, struct json_object *o, const char *base, const char *extra,
			const char *role, struct layout_image_target *t)
{
	char p[PATHLEN];
	int r, s;

	if ((r = get_kinded_object(c, o, base, "storage", layout_storage_table, _LAYOUT_STORAGE_MAX,
				   target_keys_by_storage, extra, &s)) < 0)
		return r;
	t->storage = s;
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

/* ---------- slot groups ---------- */

static const char *const group_keys[] = { "name", "image", "max_tries", "seal", "slots" };
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
		util_snprintf(p, sizeof(p), "%s.slots.%s", gbase, b->has_kernel ? b->name : a->name);
		return fail(c, -EINVAL, p, "slot %s has a kernel and slot %s has none; all slots of a "
			    "group must be alike", a->has_kernel ? a->name : b->name,
			    a->has_kernel ? b->name : a->name);
	}
	if (kernel && !a->has_kernel)
		return 0;
	if (ta->storage != tb->storage) {
		util_snprintf(p, sizeof(p), "%s.slots.%s.%s.storage", gbase, b->name, kernel ? "kernel" : "rootfs");
		return fail(c, -EINVAL, p, "storage \"%s\" differs from slot %s's \"%s\"",
			    layout_storage_table[tb->storage], a->name, layout_storage_table[ta->storage]);
	}
	if (sa != sb) {
		util_snprintf(p, sizeof(p), "%s.slots.%s.%s", gbase, b->name, kernel ? "kernel" : "rootfs");
		return fail(c, -EINVAL, p, "size 0x%" PRIx64 " differs from slot %s's 0x%" PRIx64
			    " (slots of a group must be the same size)", sb, a->name, sa);
	}
	return 0;
}

/* The seal is the last erase block of each slot's raw rootfs partition
 * (docs/boot-contract.md, "The seal"): the image needs one block less. */
static int check_seal(struct ctx *c, const char *gbase, const struct layout_slot_group *g)
{
	char p[PATHLEN];

	for (size_t i = 0; i < g->n_slots; i++) {
		const struct layout_image_target *t = &g->slots[i].rootfs;

		if (t->storage == LAYOUT_STORAGE_NOR || t->storage == LAYOUT_STORAGE_NAND) {
			if (t->part->size >= 2 * (uint64_t)t->part->dev->erasesize)
				continue;
			util_snprintf(p, sizeof(p), "%s.slots.%s.rootfs", gbase, g->slots[i].name);
			return fail(c, -EINVAL, p, "partition '%s' has room for no seal: a sealed "
				    "slot needs at least two erase blocks (its last one is the seal)",
				    t->part->name);
		}
		util_snprintf(p, sizeof(p), "%s.seal", gbase);
		return fail(c, -EINVAL, p, "slot %s's rootfs is not on a raw NOR or NAND partition: "
			    "only those can be sealed (the boot script reads the seal with 'mtd read')",
			    g->slots[i].name);
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

	if (check_object(c, o, base) < 0)
		return -EINVAL;
	if ((r = CHECK_KEYS(c, o, base, group_keys)) < 0 ||
	    (r = dup_string(c, o, base, "name", true, &g->name)) < 0 ||
	    (r = check_name(c, pkey(p, base, "name"), g->name)) < 0)
		return r;
	if ((r = CHECK_UNIQUE(c, pkey(p, base, "name"), l->groups, idx, name, "slot group",
			      "slots")) < 0)
		return r;
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

		util_snprintf(sb, sizeof(sb), "%s.slots.%s", base, sname);
		s->name = strdup(sname);
		if (!s->name)
			return -ENOMEM;
		g->n_slots++;
		if ((r = check_slot_name(c, sb, sname)) < 0)
			return r;
		if (check_object(c, sobj, sb) < 0)
			return -EINVAL;
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
	if ((r = get_bool(c, o, base, "seal", &g->seal)) < 0)
		return r;
	return g->seal ? check_seal(c, base, g) : 0;
}

/* ---------- overlays and lowers ---------- */

static const char *const overlay_keys_by_type[_LAYOUT_OVERLAY_MAX][KINDED_MAX_KEYS] = {
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

	if ((r = get_kinded_object(c, o, base, "type", layout_overlay_type_table, _LAYOUT_OVERLAY_MAX,
				   overlay_keys_by_type, NULL, &t)) < 0)
		return r;
	ov->type = t;
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

	if (check_object(c, o, base) < 0)
		return -EINVAL;
	if ((r = dup_string(c, o, base, "name", true, &lw->name)) < 0 ||
	    (r = check_name(c, pkey(p, base, "name"), lw->name)) < 0)
		return r;
	if ((r = CHECK_UNIQUE(c, pkey(p, base, "name"), l->lowers, idx, name, "lower",
			      "lowers")) < 0)
		return r;
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
	return CHECK_UNIQUE(c, pkey(p, base, "name"), l->devices, i, name, "device", "devices");
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
			util_snprintf(err->msg, sizeof(err->msg), "%s: out of memory", c.file);
		layout_free(l);
		return r;
	}
	*ret = l;
	return 0;
}
