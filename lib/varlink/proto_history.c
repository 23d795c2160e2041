/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* GetHistory's reply and InstallRecord, made once for the daemon and
 * flashctl's offline read (include/proto_slot.h) from the typed
 * descriptions of proto_flashd.c. */
#include <errno.h>
#include <limits.h>

#include "cleanup_json.h"
#include "proto_flashd.h"
#include "proto_slot.h"
#include "record.h"

struct json_object *proto_install_record(struct json_object *r)
{
	struct proto_int started = proto_typed_int_at(r, "started");
	struct proto_int finished = proto_typed_int_at(r, "finished");
	const char *result = proto_typed_string_at(r, "result");
	const char *downgrade = proto_typed_string_at(r, "downgrade");
	const char *version_from = proto_typed_string_at(r, "running_version_from");

	if (!record_result_known(result) || !started.given || !finished.given)
		return NULL;
	return proto_typed_build(proto_flashd_install_record_fields,
		&(struct proto_flashd_install_record){
			.slot = proto_typed_string_at(r, "slot"),
			.version = proto_typed_string_at(r, "version"),
			.result = result,
			.reason = proto_typed_string_at(r, "error"),
			.started = started, .finished = finished,
			.bytes = proto_typed_int_at(r, "bytes"),
			.erases = proto_typed_int_at(r, "erases"),
			.blocks_skipped = proto_typed_int_at(r, "blocks_skipped"),
			.signer = proto_typed_string_at(r, "signer"),
			.source = proto_typed_string_at(r, "source"),
			.bytes_fetched = proto_typed_int_at(r, "bytes_fetched"),
			/* both in range (record_load); a clock set back gives 0, not < 0 */
			.duration = { finished.value > started.value ?
				      finished.value - started.value : 0, true },
			.error_name = proto_typed_string_at(r, "error_name"),
			.running_version = proto_typed_string_at(r, "running_version"),
			.running_version_from = record_version_from_known(version_from) ?
						version_from : NULL,
			/* an unknown word is no decision the interface can name */
			.downgrade = record_downgrade_known(downgrade) ? downgrade : NULL,
			.history_reset = proto_typed_string_at(r, "history_reset"),
			.record_error = proto_typed_string_at(r, "record_error") });
}

/* Each record as InstallRecord (those lacking what the type requires
 * left out). */
static struct json_object *installs_of(struct json_object *records)
{
	_cleanup_json_ struct json_object *installs = json_object_new_array();

	for (size_t i = 0; installs && i < json_object_array_length(records); i++) {
		struct json_object *e = proto_install_record(json_object_array_get_idx(records, i));

		if (e && json_object_array_add(installs, e) < 0) {
			json_object_put(e);
			return NULL;
		}
	}
	return TAKE_PTR(installs);
}

int proto_history(const char *dir, struct json_object *unsaved, struct json_object **ret)
{
	_cleanup_json_ struct json_object *records = NULL, *installs = NULL;
	char why[PATH_MAX + 256];
	int r = record_history(dir, unsaved, &records, why, sizeof(why));

	if (r < 0)
		return r;
	installs = installs_of(records);
	if (!installs)
		return -ENOMEM;
	*ret = proto_typed_build(proto_flashd_methods[PROTO_FLASHD_GET_HISTORY].reply,
				 &(struct proto_flashd_history_reply){
					 .installs = installs, .error = why[0] ? why : NULL });
	return *ret ? 0 : -ENOMEM;
}
