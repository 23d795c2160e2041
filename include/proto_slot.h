/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* io.flashd and the A/B slots: the error of a refused slot change,
 * SlotStatus's and GetHistory's replies, one definition for flashd and
 * flashctl offline. */
#pragma once
#include <stdbool.h>
#include <json-c/json.h>
#include "proto.h"
#include "slot_change.h"

/* The io.flashd error of a slot change refused (slot_change.h): one name
 * for the daemon's reply and flashctl's offline message alike, so that
 * both give the same exit code. NULL for SLOT_CHANGE_OK and _ENV (an
 * errno: io.flashd.InternalError). */
const char *proto_slot_error(enum slot_change_fail kind, bool forcible);

/* SlotStatus's reply for the slot env st of group in the env env_desc:
 * made once for the daemon and for flashctl's offline 'slot status'. */
struct json_object *proto_slot_status(const struct slot_env *st, const char *group,
				      const char *env_desc, int booted, const char *booted_by,
				      bool install_running);

/* One install record (record_load(), record_to_json()) as InstallRecord;
 * NULL when it lacks what the type requires (a known result, its times)
 * or without memory. */
struct json_object *proto_install_record(struct json_object *r);
/* GetHistory's reply for the state dir dir (record_history()), unsaved
 * (the record the state dir could not keep, or NULL) first: made once
 * for the daemon and flashctl's offline 'history'. -ENOMEM only. */
int proto_history(const char *dir, struct json_object *unsaved, struct json_object **ret);
