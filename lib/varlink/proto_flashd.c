/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The io.flashd method table (include/proto_flashd.h) and its text. */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <zlib.h>

#include "cleanup.h"
#include "proto_flashd.h"

static const struct proto_param params_install[] = {
	{ "fd", PROTO_TYPE_INT, false },
	{ "path", PROTO_TYPE_STRING, false },
	{ "url", PROTO_TYPE_STRING, false },
	{ "slot", PROTO_TYPE_STRING, false },
	{ "activate", PROTO_TYPE_BOOL, false },
	{ NULL },
};
static const struct proto_param params_slot_optional[] = {
	{ "slot", PROTO_TYPE_STRING, false },
	{ NULL },
};
static const struct proto_param params_slot[] = {
	{ "slot", PROTO_TYPE_STRING, true },
	{ NULL },
};
static const struct proto_param params_get_env[] = {
	{ "name", PROTO_TYPE_STRING, true },
	{ NULL },
};
static const struct proto_param params_set_env[] = {
	{ "name", PROTO_TYPE_STRING, true },
	{ "value", PROTO_TYPE_STRING, false },
	{ "force", PROTO_TYPE_BOOL, false },
	{ NULL },
};
static const struct proto_param params_flash_info[] = {
	{ "partition", PROTO_TYPE_STRING, false },
	{ NULL },
};

#define M(id, name, flags, params) \
	[id] = { PROTO_FLASHD_INTERFACE, name, NULL, flags, params }
#define AUTH PROTO_NEEDS_AUTH

/* Every method that changes the board needs authorization; none streams
 * (Install sends progress only to callers that ask for "more"). */
const struct proto_method proto_flashd_methods[_PROTO_FLASHD_METHOD_MAX + 1] = {
	M(PROTO_FLASHD_GET_STATUS, "GetStatus", 0, proto_params_none),
	M(PROTO_FLASHD_INSTALL, "Install", AUTH | PROTO_TAKES_FDS, params_install),
	M(PROTO_FLASHD_CANCEL, "Cancel", AUTH, proto_params_none),
	M(PROTO_FLASHD_MARK_GOOD, "MarkGood", AUTH, params_slot_optional),
	M(PROTO_FLASHD_MARK_BAD, "MarkBad", AUTH, params_slot_optional),
	M(PROTO_FLASHD_ACTIVATE, "Activate", AUTH, params_slot),
	M(PROTO_FLASHD_ROLLBACK, "Rollback", AUTH, params_slot_optional),
	M(PROTO_FLASHD_OVERLAY_RESET, "OverlayReset", AUTH, proto_params_none),
	M(PROTO_FLASHD_OVERLAY_STATUS, "OverlayStatus", 0, proto_params_none),
	M(PROTO_FLASHD_GET_ENV, "GetEnv", 0, params_get_env),
	M(PROTO_FLASHD_SET_ENV, "SetEnv", AUTH, params_set_env),
	M(PROTO_FLASHD_LIST_ENV, "ListEnv", 0, proto_params_none),
	M(PROTO_FLASHD_FLASH_INFO, "FlashInfo", 0, params_flash_info),
	M(PROTO_FLASHD_SLOT_STATUS, "SlotStatus", 0, proto_params_none),
	[_PROTO_FLASHD_METHOD_MAX] = { NULL },
};

void proto_flashd_bind(struct proto_method ret[_PROTO_FLASHD_METHOD_MAX + 1],
		       const proto_method_fn handlers[_PROTO_FLASHD_METHOD_MAX])
{
	for (size_t i = 0; i <= _PROTO_FLASHD_METHOD_MAX; i++) {
		ret[i] = proto_flashd_methods[i];
		if (i < _PROTO_FLASHD_METHOD_MAX)
			ret[i].handler = handlers[i];
	}
}

const char *const proto_flashd_errors[] = {
	PROTO_ERROR_BUSY, PROTO_ERROR_DENIED, PROTO_ERROR_INSTALL_FAILED,
	PROTO_ERROR_INVALID_BUNDLE, PROTO_ERROR_NO_SUCH_SLOT, PROTO_ERROR_NO_ROLLBACK,
	PROTO_ERROR_SLOT_REFUSED, PROTO_ERROR_FORCE_REQUIRED,
	PROTO_ERROR_NO_SUCH_PARTITION, PROTO_ERROR_ENV_REFUSED, PROTO_ERROR_CANCELLED,
	PROTO_ERROR_PROTOCOL, PROTO_ERROR_INTERNAL, NULL,
};

const char *proto_flashd_slot_error(enum slot_change_fail kind, bool forcible)
{
	switch (kind) {
	case SLOT_CHANGE_NO_SLOT:
		return PROTO_ERROR_NO_SUCH_SLOT;
	case SLOT_CHANGE_NO_ROLLBACK:
		return PROTO_ERROR_NO_ROLLBACK;
	case SLOT_CHANGE_REFUSED:
		return forcible ? PROTO_ERROR_FORCE_REQUIRED : PROTO_ERROR_SLOT_REFUSED;
	case SLOT_CHANGE_OK:
	case SLOT_CHANGE_ENV:
		break;
	}
	return NULL;
}

static struct json_object *slot_name_json(const struct slot_state *st, int i)
{
	return i >= 0 ? json_object_new_string(st->slots[i].name) : NULL;
}

struct json_object *proto_flashd_slot_status(const struct slot_state *st, const char *group,
					     const char *env_desc, int booted,
					     const char *booted_by, bool install_running)
{
	struct json_object *j = json_object_new_object(), *slots = json_object_new_array();
	struct slot_status ss;
	char order[128];

	slot_status_compute(st, booted, booted_by, &ss);
	slot_order_string(st, order, sizeof(order));
	json_object_object_add(j, "group", json_object_new_string(group));
	json_object_object_add(j, "env", json_object_new_string(env_desc));
	json_object_object_add(j, "boot_order", json_object_new_string(order));
	json_object_object_add(j, "boot_order_set", json_object_new_boolean(st->order_set));
	json_object_object_add(j, "max_tries", json_object_new_int(st->max_tries));
	json_object_object_add(j, "booted", slot_name_json(st, ss.booted));
	json_object_object_add(j, "booted_by", ss.booted_by ? json_object_new_string(ss.booted_by) :
			       NULL);
	json_object_object_add(j, "primary", slot_name_json(st, ss.primary));
	json_object_object_add(j, "next_boot", slot_name_json(st, ss.next));
	json_object_object_add(j, "on_trial", json_object_new_boolean(ss.on_trial));
	json_object_object_add(j, "fell_back", json_object_new_boolean(ss.fell_back));
	json_object_object_add(j, "needs_health_check",
			       json_object_new_boolean(ss.needs_health_check));
	json_object_object_add(j, "next_after_reset", json_object_new_boolean(ss.next_after_reset));
	json_object_object_add(j, "degraded", json_object_new_boolean(ss.degraded));
	json_object_object_add(j, "last_good", slot_name_json(st, ss.last_good));
	for (size_t i = 0; i < st->n_slots; i++) {
		struct json_object *o = json_object_new_object();

		json_object_object_add(o, "name", json_object_new_string(st->slots[i].name));
		json_object_object_add(o, "tries_left", json_object_new_int(st->slots[i].left));
		json_object_object_add(o, "state", json_object_new_string(
			slot_view_to_string(slot_view_of(st, i, install_running))));
		json_object_object_add(o, "booted", json_object_new_boolean((int)i == ss.booted));
		json_object_array_add(slots, o);
	}
	json_object_object_add(j, "slots", slots);
	return j;
}

/* The gzip member's trailer ends with the text's length (ISIZE, mod 2^32:
 * the IDL is far below that), so the text is inflated in one call. */
int proto_flashd_description(char **ret)
{
	const unsigned char *gz = proto_flashd_idl_gz;
	size_t n = proto_flashd_idl_gz_size;
	_cleanup_free_ char *text = NULL;
	z_stream z = { 0 };
	uint32_t len;
	int r;

	if (n < 18)
		return -EBADMSG;
	len = gz[n - 4] | gz[n - 3] << 8 | gz[n - 2] << 16 | (uint32_t)gz[n - 1] << 24;
	text = malloc((size_t)len + 1);
	if (!text)
		return -ENOMEM;
	if (inflateInit2(&z, 15 + 16) != Z_OK) /* gzip wrapper only */
		return -ENOMEM;
	z.next_in = (unsigned char *)gz;
	z.avail_in = n;
	z.next_out = (unsigned char *)text;
	z.avail_out = len;
	r = inflate(&z, Z_FINISH);
	inflateEnd(&z);
	if (r != Z_STREAM_END || z.avail_out)
		return -EBADMSG;
	text[len] = 0;
	*ret = TAKE_PTR(text);
	return 0;
}
