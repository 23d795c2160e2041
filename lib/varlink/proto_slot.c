/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* What io.flashd says of the A/B slots, made once for the daemon and for
 * flashctl's offline path (include/proto_slot.h): a separate module so
 * that the method table (proto_flashd.c, the fuzzer's) needs no slot logic. */
#include "cleanup_json.h"
#include "proto_flashd.h"
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

static const char *slot_name(const struct slot_env *st, int i)
{
	return i >= 0 ? st->slots[i].name : NULL;
}

/* SlotStatus's slots[], SlotTries each. */
static struct json_object *slot_tries(const struct slot_env *st, int booted,
				      bool install_running)
{
	struct proto_flashd_slot_tries items[SLOT_MAX];
	size_t n = st->n_slots < SLOT_MAX ? st->n_slots : SLOT_MAX;

	for (size_t i = 0; i < n; i++)
		items[i] = (struct proto_flashd_slot_tries){
			.name = st->slots[i].name,
			.tries_left.value = st->slots[i].left,
			.state = slot_state_to_string(slot_state_of(st, i, install_running)),
			.booted.value = (int)i == booted,
		};
	return proto_typed_array(proto_flashd_slot_tries_fields, items, n, sizeof(items[0]));
}

struct json_object *proto_slot_status(const struct slot_env *st, const char *group,
				      const char *env_desc, int booted, const char *booted_by,
				      bool install_running)
{
	_cleanup_json_ struct json_object *slots = NULL;
	struct slot_decision ss;
	char order[128];

	slot_decide(st, booted, booted_by, &ss);
	slot_order_string(st, order, sizeof(order));
	slots = slot_tries(st, ss.booted, install_running);
	if (!slots)
		return NULL;
	return proto_typed_build(proto_flashd_methods[PROTO_FLASHD_SLOT_STATUS].reply,
		&(struct proto_flashd_slot_status_reply){
			.group = group, .env = env_desc, .boot_order = order,
			.boot_order_set.value = st->order_set, .max_tries.value = st->max_tries,
			.booted = slot_name(st, ss.booted), .booted_by = ss.booted_by,
			.primary = slot_name(st, ss.primary), .next_boot = slot_name(st, ss.next_boot),
			.on_trial.value = ss.on_trial, .fell_back.value = ss.fell_back,
			.needs_health_check.value = ss.needs_health_check,
			.next_after_reset.value = ss.next_after_reset, .degraded.value = ss.degraded,
			.last_good = slot_name(st, ss.last_good), .slots = slots });
}
