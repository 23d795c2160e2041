/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The io.flashd method table (include/proto_flashd.h) and its text. */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <zlib.h>

#include "cleanup.h"
#include "proto_flashd.h"

#define IN(type, field) offsetof(struct proto_flashd_##type, field)
static const struct proto_param params_install[] = {
	{ "fd", PROTO_TYPE_INT, false, IN(install, fd) },
	{ "path", PROTO_TYPE_STRING, false, IN(install, path) },
	{ "url", PROTO_TYPE_STRING, false, IN(install, url) },
	{ "slot", PROTO_TYPE_STRING, false, IN(install, slot) },
	{ "activate", PROTO_TYPE_BOOL, false, IN(install, activate) },
	{ "allow_downgrade", PROTO_TYPE_BOOL, false, IN(install, allow_downgrade) },
	{ NULL },
};
static const struct proto_param params_slot_optional[] = {
	{ "slot", PROTO_TYPE_STRING, false, IN(slot, slot) },
	{ NULL },
};
static const struct proto_param params_slot[] = {
	{ "slot", PROTO_TYPE_STRING, true, IN(slot, slot) },
	{ NULL },
};
static const struct proto_param params_get_env[] = {
	{ "name", PROTO_TYPE_STRING, true, IN(get_env, name) },
	{ NULL },
};
static const struct proto_param params_set_env[] = {
	{ "name", PROTO_TYPE_STRING, true, IN(set_env, name) },
	{ "value", PROTO_TYPE_STRING, false, IN(set_env, value) },
	{ "force", PROTO_TYPE_BOOL, false, IN(set_env, force) },
	{ NULL },
};
static const struct proto_param params_overlay_reset[] = {
	{ "cancel", PROTO_TYPE_BOOL, false, IN(overlay_reset, cancel) },
	{ NULL },
};
static const struct proto_param params_flash_info[] = {
	{ "partition", PROTO_TYPE_STRING, false, IN(flash_info, partition) },
	{ NULL },
};
#undef IN

/* The replies, field by field as io.flashd.varlink declares them (a
 * nested type is an object or an array here: the check is of the top
 * level). test-proto-idl holds them to the IDL. The typed ones place each
 * field in their reply struct (proto_flashd.h). */
#define OUT(type, field) offsetof(struct proto_flashd_##type##_reply, field)
static const struct proto_param reply_get_status[] = {
	{ "layout", PROTO_TYPE_STRING, true, 0 },
	{ "board", PROTO_TYPE_STRING, true, 0 },
	{ "compatible", PROTO_TYPE_STRING, true, 0 },
	{ "slots", PROTO_TYPE_ARRAY, true, 0 },
	{ "booted", PROTO_TYPE_STRING, false, 0 },
	{ "booted_unknown", PROTO_TYPE_STRING, false, 0 },
	{ "on_trial", PROTO_TYPE_BOOL, true, 0 },
	{ "fell_back", PROTO_TYPE_BOOL, true, 0 },
	{ "switch_pending", PROTO_TYPE_BOOL, true, 0 },
	{ "next_boot", PROTO_TYPE_STRING, false, 0 },
	{ "next_after_reset", PROTO_TYPE_BOOL, true, 0 },
	{ "degraded", PROTO_TYPE_BOOL, true, 0 },
	{ "last_good", PROTO_TYPE_STRING, false, 0 },
	{ "last_install", PROTO_TYPE_OBJECT, false, 0 },
	{ "overlay", PROTO_TYPE_OBJECT, true, 0 },
	{ "flash", PROTO_TYPE_ARRAY, true, 0 },
	{ "allow_unsigned", PROTO_TYPE_BOOL, true, 0 },
	{ "operation", PROTO_TYPE_STRING, false, 0 },
	{ "installing_elsewhere", PROTO_TYPE_STRING, false, 0 },
	{ "progress", PROTO_TYPE_OBJECT, false, 0 },
	{ "env", PROTO_TYPE_OBJECT, true, 0 },
	{ NULL },
};
static const struct proto_param reply_install[] = {
	{ "percent", PROTO_TYPE_INT, true, 0 },
	{ "bytes_done", PROTO_TYPE_INT, true, 0 },
	{ "bytes_total", PROTO_TYPE_INT, true, 0 },
	{ "step", PROTO_TYPE_STRING, true, 0 },
	{ "image", PROTO_TYPE_STRING, false, 0 },
	{ "slot", PROTO_TYPE_STRING, false, 0 },
	{ "version", PROTO_TYPE_STRING, false, 0 },
	{ "bytes_downloaded", PROTO_TYPE_INT, false, 0 },
	{ NULL },
};
static const struct proto_param reply_cancel[] = {
	{ "cancelled", PROTO_TYPE_BOOL, true, OUT(cancel, cancelled) },
	{ NULL },
};
static const struct proto_param reply_slot[] = {
	{ "slot", PROTO_TYPE_STRING, true, OUT(slot, slot) },
	{ NULL },
};
static const struct proto_param reply_slot_status[] = {
	{ "group", PROTO_TYPE_STRING, true, 0 },
	{ "env", PROTO_TYPE_STRING, true, 0 },
	{ "boot_order", PROTO_TYPE_STRING, true, 0 },
	{ "boot_order_set", PROTO_TYPE_BOOL, true, 0 },
	{ "max_tries", PROTO_TYPE_INT, true, 0 },
	{ "booted", PROTO_TYPE_STRING, false, 0 },
	{ "booted_by", PROTO_TYPE_STRING, false, 0 },
	{ "primary", PROTO_TYPE_STRING, false, 0 },
	{ "next_boot", PROTO_TYPE_STRING, false, 0 },
	{ "on_trial", PROTO_TYPE_BOOL, true, 0 },
	{ "fell_back", PROTO_TYPE_BOOL, true, 0 },
	{ "needs_health_check", PROTO_TYPE_BOOL, true, 0 },
	{ "next_after_reset", PROTO_TYPE_BOOL, true, 0 },
	{ "degraded", PROTO_TYPE_BOOL, true, 0 },
	{ "last_good", PROTO_TYPE_STRING, false, 0 },
	{ "slots", PROTO_TYPE_ARRAY, true, 0 },
	{ NULL },
};
static const struct proto_param reply_overlay_reset[] = {
	{ "overlay", PROTO_TYPE_OBJECT, true, OUT(overlay, overlay) },
	{ "changed", PROTO_TYPE_BOOL, true, OUT(overlay, changed) },
	{ NULL },
};
static const struct proto_param reply_overlay_status[] = {
	{ "overlay", PROTO_TYPE_OBJECT, true, OUT(overlay, overlay) },
	{ NULL },
};
static const struct proto_param reply_get_env[] = {
	{ "name", PROTO_TYPE_STRING, true, OUT(get_env, name) },
	{ "value", PROTO_TYPE_STRING, false, OUT(get_env, value) },
	{ NULL },
};
static const struct proto_param reply_list_env[] = {
	{ "variables", PROTO_TYPE_OBJECT, true, OUT(list_env, variables) },
	{ NULL },
};
static const struct proto_param reply_flash_info[] = {
	{ "partitions", PROTO_TYPE_ARRAY, true, OUT(flash_info, partitions) },
	{ NULL },
};
static const struct proto_param reply_get_history[] = {
	{ "installs", PROTO_TYPE_ARRAY, true, 0 },
	{ "error", PROTO_TYPE_STRING, false, 0 },
	{ NULL },
};

#undef OUT

#define M(id, name, flags, params, in, reply, out) \
	[id] = { PROTO_FLASHD_INTERFACE, name, NULL, flags, params, in, reply, out }
#define AUTH PROTO_NEEDS_AUTH
#define NONE proto_params_none
#define IN(type) sizeof(struct proto_flashd_##type)
#define OUT(type) sizeof(struct proto_flashd_##type##_reply)

/* Every method that changes the board needs authorization; none streams
 * (Install sends progress only to callers that ask for "more"). */
const struct proto_method proto_flashd_methods[_PROTO_FLASHD_METHOD_MAX + 1] = {
	M(PROTO_FLASHD_GET_STATUS, "GetStatus", 0, NONE, 0, reply_get_status, 0),
	M(PROTO_FLASHD_INSTALL, "Install", AUTH | PROTO_TAKES_FDS, params_install, IN(install),
	  reply_install, 0),
	M(PROTO_FLASHD_CANCEL, "Cancel", AUTH, NONE, 0, reply_cancel, OUT(cancel)),
	M(PROTO_FLASHD_MARK_GOOD, "MarkGood", AUTH, params_slot_optional, IN(slot), reply_slot,
	  OUT(slot)),
	M(PROTO_FLASHD_MARK_BAD, "MarkBad", AUTH, params_slot_optional, IN(slot), reply_slot,
	  OUT(slot)),
	M(PROTO_FLASHD_ACTIVATE, "Activate", AUTH, params_slot, IN(slot), NONE, 0),
	M(PROTO_FLASHD_ROLLBACK, "Rollback", AUTH, params_slot_optional, IN(slot), reply_slot,
	  OUT(slot)),
	M(PROTO_FLASHD_OVERLAY_RESET, "OverlayReset", AUTH, params_overlay_reset, IN(overlay_reset),
	  reply_overlay_reset, OUT(overlay)),
	M(PROTO_FLASHD_OVERLAY_STATUS, "OverlayStatus", 0, NONE, 0, reply_overlay_status,
	  OUT(overlay)),
	M(PROTO_FLASHD_GET_ENV, "GetEnv", 0, params_get_env, IN(get_env), reply_get_env,
	  OUT(get_env)),
	M(PROTO_FLASHD_SET_ENV, "SetEnv", AUTH, params_set_env, IN(set_env), NONE, 0),
	M(PROTO_FLASHD_LIST_ENV, "ListEnv", 0, NONE, 0, reply_list_env, OUT(list_env)),
	M(PROTO_FLASHD_FLASH_INFO, "FlashInfo", 0, params_flash_info, IN(flash_info),
	  reply_flash_info, OUT(flash_info)),
	M(PROTO_FLASHD_SLOT_STATUS, "SlotStatus", 0, NONE, 0, reply_slot_status, 0),
	M(PROTO_FLASHD_GET_HISTORY, "GetHistory", 0, NONE, 0, reply_get_history, 0),
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
