/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Typed descriptions (struct proto_param, include/proto.h): whether a JSON
 * value is of a declared type, the reply check that goes into nested
 * types, and the replies built from typed structs. One description per
 * IDL type serves both, so what is built is what is checked. */
#include <string.h>

#include "proto-internal.h"

static bool type_bool(struct json_object *j) { return json_object_is_type(j, json_type_boolean); }
static bool type_int(struct json_object *j) { return json_object_is_type(j, json_type_int); }
static bool type_float(struct json_object *j)
{
	return json_object_is_type(j, json_type_int) || json_object_is_type(j, json_type_double);
}
/* A string with an embedded NUL ("\u0000") would reach C code cut short:
 * the daemon would act on another value than the caller sent. */
static bool type_string(struct json_object *j)
{
	return json_object_is_type(j, json_type_string) &&
	       strlen(json_object_get_string(j)) == (size_t) json_object_get_string_len(j);
}
static bool type_object(struct json_object *j) { return json_object_is_type(j, json_type_object); }
static bool type_array(struct json_object *j) { return json_object_is_type(j, json_type_array); }

static bool (*const type_check[_PROTO_TYPE_MAX])(struct json_object *) = {
	[PROTO_TYPE_BOOL] = type_bool,
	[PROTO_TYPE_INT] = type_int,
	[PROTO_TYPE_FLOAT] = type_float,
	[PROTO_TYPE_STRING] = type_string,
	[PROTO_TYPE_OBJECT] = type_object,
	[PROTO_TYPE_ARRAY] = type_array,
};

bool proto_typed_is(enum proto_type type, struct json_object *j)
{
	return type_check[type](j);
}

/* ---- the reply check ---- */

/* The field of table named key, or its "*" (a map's every key). */
static const struct proto_param *field_find(const struct proto_param *table, const char *key)
{
	for (const struct proto_param *p = table; p->name; p++)
		if (!strcmp(p->name, key) || !strcmp(p->name, "*"))
			return p;
	return NULL;
}

static const char *object_check(const struct proto_param *table, struct json_object *o,
				unsigned depth);

/* The elements of an array of a nested type: objects, never null. */
static const char *array_check(const struct proto_param *p, const char *key,
			       struct json_object *a, unsigned depth)
{
	for (size_t i = 0; i < json_object_array_length(a); i++) {
		struct json_object *e = json_object_array_get_idx(a, i);
		const char *bad;

		if (!e || !type_object(e))
			return key;
		bad = object_check(p->fields, e, depth + 1);
		if (bad)
			return bad;
	}
	return NULL;
}

/* NULL when val fits field p (named key), else the name of the offender:
 * key for a wrong type or a null the IDL has no "?" for, the nested
 * field's own name inside a nested type. Deeper than PROTO_MAX_DEPTH is
 * refused: no IDL type nests that far. */
static const char *value_check(const struct proto_param *p, const char *key,
			       struct json_object *val, unsigned depth)
{
	if (!val)
		return p->required ? key : NULL;
	if (!type_check[p->type](val))
		return key;
	if (!p->fields)
		return NULL;
	if (depth >= PROTO_MAX_DEPTH)
		return key;
	if (p->type == PROTO_TYPE_ARRAY)
		return array_check(p, key, val, depth);
	return object_check(p->fields, val, depth + 1);
}

static const char *object_check(const struct proto_param *table, struct json_object *o,
				unsigned depth)
{
	json_object_object_foreach(o, key, val) {
		const struct proto_param *p = field_find(table, key);
		const char *bad = p ? value_check(p, key, val, depth) : key;

		if (bad)
			return bad;
	}
	return NULL;
}

/* NULL when a reply's params fit the method's declared reply at every
 * depth, else the name of the first field the IDL does not declare or
 * of the wrong type (a null where the IDL has no "?" included). */
const char *proto_typed_check(const struct proto_param *table, struct json_object *params)
{
	if (!table || !params)
		return NULL;
	return object_check(table, params, 0);
}

/* ---- building ---- */

/* One field of a typed struct: its value, or NULL (JSON null) for an
 * optional one not given. */
static struct json_object *field_value(const struct proto_param *p, const char *at)
{
	const struct proto_bool *b = (const struct proto_bool *) at;
	const struct proto_int *i = (const struct proto_int *) at;
	const struct proto_float *f = (const struct proto_float *) at;

	switch (p->type) {
	case PROTO_TYPE_BOOL:
		return b->given || p->required ? json_object_new_boolean(b->value) : NULL;
	case PROTO_TYPE_INT:
		return i->given || p->required ? json_object_new_int64(i->value) : NULL;
	case PROTO_TYPE_FLOAT:
		return f->given || p->required ? json_object_new_double(f->value) : NULL;
	case PROTO_TYPE_STRING:
		return *(const char *const *) at ? json_object_new_string(*(const char *const *) at) :
		       NULL;
	case PROTO_TYPE_OBJECT:
	case PROTO_TYPE_ARRAY:
		return json_object_get(*(struct json_object *const *) at);
	case _PROTO_TYPE_MAX:
		break;
	}
	return NULL;
}

struct json_object *proto_typed_build(const struct proto_param *table, const void *s)
{
	struct json_object *o = json_object_new_object();

	for (const struct proto_param *p = table; o && p->name; p++) {
		struct json_object *v = field_value(p, (const char *) s + p->offset);

		if (v || !p->omit)
			json_object_object_add(o, p->name, v);
	}
	return o;
}

struct json_object *proto_typed_array(const struct proto_param *table, const void *items,
				      size_t n, size_t size)
{
	struct json_object *a = json_object_new_array();

	for (size_t i = 0; a && i < n; i++) {
		struct json_object *o = proto_typed_build(table, (const char *) items + i * size);

		if (!o || json_object_array_add(a, o) < 0) {
			json_object_put(o);
			json_object_put(a);
			return NULL;
		}
	}
	return a;
}

/* ---- reading records ---- */

static struct json_object *value_at(struct json_object *o, const char *key, enum proto_type type)
{
	struct json_object *v = NULL;

	if (!o || !json_object_object_get_ex(o, key, &v) || !v || !type_check[type](v))
		return NULL;
	return v;
}

const char *proto_typed_string_at(struct json_object *o, const char *key)
{
	struct json_object *v = value_at(o, key, PROTO_TYPE_STRING);

	return v ? json_object_get_string(v) : NULL;
}

struct proto_int proto_typed_int_at(struct json_object *o, const char *key)
{
	struct json_object *v = value_at(o, key, PROTO_TYPE_INT);

	return v ? (struct proto_int){ json_object_get_int64(v), true } : (struct proto_int){ 0 };
}

struct proto_bool proto_typed_bool_at(struct json_object *o, const char *key)
{
	struct json_object *v = value_at(o, key, PROTO_TYPE_BOOL);

	return v ? (struct proto_bool){ json_object_get_boolean(v), true } :
	       (struct proto_bool){ 0 };
}
