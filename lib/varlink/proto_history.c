/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* GetHistory's reply, made once for the daemon and flashctl's offline
 * read (include/proto_slot.h) from the typed description of the method. */
#include <errno.h>
#include <limits.h>

#include "cleanup_json.h"
#include "proto_flashd.h"
#include "proto_slot.h"
#include "record.h"

int proto_history(const char *dir, struct json_object *unsaved, struct json_object **ret)
{
	_cleanup_json_ struct json_object *installs = NULL;
	char why[PATH_MAX + 256];
	int r = record_history(dir, unsaved, &installs, why, sizeof(why));

	if (r < 0)
		return r;
	*ret = proto_typed_build(proto_flashd_methods[PROTO_FLASHD_GET_HISTORY].reply,
				 &(struct proto_flashd_history_reply){
					 .installs = installs, .error = why[0] ? why : NULL });
	return *ret ? 0 : -ENOMEM;
}
