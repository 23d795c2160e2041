/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* _cleanup_ for json-c objects and the few accessors everyone wrote
 * again; kept apart so that only users of json-c pull its header in. */
#pragma once
#include <stdbool.h>
#include <stdint.h>
#include <json-c/json.h>
#include "cleanup.h"

static inline void json_object_putp(struct json_object **j)
{
	if (*j)
		json_object_put(*j);
}
#define _cleanup_json_ _cleanup_(json_object_putp)

/* A JSON string, or JSON null for NULL (json_object_object_add() takes
 * NULL as null). */
static inline struct json_object *json_string_or_null(const char *s)
{
	return s ? json_object_new_string(s) : NULL;
}

static inline void json_add_u64(struct json_object *o, const char *k, uint64_t v)
{
	json_object_object_add(o, k, json_object_new_uint64(v));
}

/* Member k of o (o may be NULL): NULL when o or k is absent or null. */
static inline struct json_object *json_get_object(struct json_object *o, const char *k)
{
	struct json_object *v;

	return o && json_object_object_get_ex(o, k, &v) ? v : NULL;
}

/* Its string; NULL when absent or null. */
static inline const char *json_get_string(struct json_object *o, const char *k)
{
	struct json_object *v = json_get_object(o, k);

	return v ? json_object_get_string(v) : NULL;
}

/* Its string for printing: "-" when absent or null (a reply from an older
 * or hostile daemon may lack it; printf("%s", NULL) is undefined). */
static inline const char *json_str(struct json_object *o, const char *k)
{
	const char *s = json_get_string(o, k);

	return s ? s : "-";
}

/* Its integer; -1 when absent or null. */
static inline int64_t json_get_int(struct json_object *o, const char *k)
{
	struct json_object *v = json_get_object(o, k);

	return v ? json_object_get_int64(v) : -1;
}

/* Its truth; false when absent or null. */
static inline bool json_get_bool(struct json_object *o, const char *k)
{
	return json_object_get_boolean(json_get_object(o, k));
}
