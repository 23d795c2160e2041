/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* What io.flashd says of the A/B slots, made once for the daemon and for
 * flashctl's offline path (include/proto_slot.h): a separate module so
 * that the method table (proto_flashd.c, the fuzzer's) needs no slot logic. */
#include "cleanup_json.h"
#include "proto_slot.h"

const char *proto_slot_error(enum slot_change_fail kind, bool forcible)
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

static struct json_object *slot_name_json(const struct slot_env *st, int i)
{
	return i >= 0 ? json_object_new_string(st->slots[i].name) : NULL;
}

struct json_object *proto_slot_status(const struct slot_env *st, const char *group,
				      const char *env_desc, int booted, const char *booted_by,
				      bool install_running)
{
	struct json_object *j = json_object_new_object(), *slots = json_object_new_array();
	struct slot_decision ss;
	char order[128];

	slot_decide(st, booted, booted_by, &ss);
	slot_order_string(st, order, sizeof(order));
	json_object_object_add(j, "group", json_object_new_string(group));
	json_object_object_add(j, "env", json_object_new_string(env_desc));
	json_object_object_add(j, "boot_order", json_object_new_string(order));
	json_object_object_add(j, "boot_order_set", json_object_new_boolean(st->order_set));
	json_object_object_add(j, "max_tries", json_object_new_int(st->max_tries));
	json_object_object_add(j, "booted", slot_name_json(st, ss.booted));
	json_object_object_add(j, "booted_by", json_string_or_null(ss.booted_by));
	json_object_object_add(j, "primary", slot_name_json(st, ss.primary));
	json_object_object_add(j, "next_boot", slot_name_json(st, ss.next_boot));
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
			slot_state_to_string(slot_state_of(st, i, install_running))));
		json_object_object_add(o, "booted", json_object_new_boolean((int)i == ss.booted));
		json_object_array_add(slots, o);
	}
	json_object_object_add(j, "slots", slots);
	return j;
}
