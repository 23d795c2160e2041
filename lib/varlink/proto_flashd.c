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
	{ "allow_downgrade", PROTO_TYPE_BOOL, false },
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
static const struct proto_param params_overlay_reset[] = {
	{ "cancel", PROTO_TYPE_BOOL, false },
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
	M(PROTO_FLASHD_OVERLAY_RESET, "OverlayReset", AUTH, params_overlay_reset),
	M(PROTO_FLASHD_OVERLAY_STATUS, "OverlayStatus", 0, proto_params_none),
	M(PROTO_FLASHD_GET_ENV, "GetEnv", 0, params_get_env),
	M(PROTO_FLASHD_SET_ENV, "SetEnv", AUTH, params_set_env),
	M(PROTO_FLASHD_LIST_ENV, "ListEnv", 0, proto_params_none),
	M(PROTO_FLASHD_FLASH_INFO, "FlashInfo", 0, params_flash_info),
	M(PROTO_FLASHD_SLOT_STATUS, "SlotStatus", 0, proto_params_none),
	M(PROTO_FLASHD_GET_HISTORY, "GetHistory", 0, proto_params_none),
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
	PROTO_ERROR_DOWNGRADE_REFUSED,
	PROTO_ERROR_PROTOCOL, PROTO_ERROR_INTERNAL, NULL,
};

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
