/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* _cleanup_ for json-c objects; kept apart so that only users of json-c
 * pull its header in. */
#pragma once
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
