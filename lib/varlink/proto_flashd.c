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
	{ "fd", PROTO_TYPE_INT, false, IN(install, fd), NULL, false },
	{ "path", PROTO_TYPE_STRING, false, IN(install, path), NULL, false },
	{ "url", PROTO_TYPE_STRING, false, IN(install, url), NULL, false },
	{ "slot", PROTO_TYPE_STRING, false, IN(install, slot), NULL, false },
	{ "activate", PROTO_TYPE_BOOL, false, IN(install, activate), NULL, false },
	{ "allow_downgrade", PROTO_TYPE_BOOL, false, IN(install, allow_downgrade), NULL, false },
	{ NULL },
};
static const struct proto_param params_slot_optional[] = {
	{ "slot", PROTO_TYPE_STRING, false, IN(slot, slot), NULL, false },
	{ NULL },
};
static const struct proto_param params_slot[] = {
	{ "slot", PROTO_TYPE_STRING, true, IN(slot, slot), NULL, false },
	{ NULL },
};
static const struct proto_param params_get_env[] = {
	{ "name", PROTO_TYPE_STRING, true, IN(get_env, name), NULL, false },
	{ NULL },
};
static const struct proto_param params_set_env[] = {
	{ "name", PROTO_TYPE_STRING, true, IN(set_env, name), NULL, false },
	{ "value", PROTO_TYPE_STRING, false, IN(set_env, value), NULL, false },
	{ "force", PROTO_TYPE_BOOL, false, IN(set_env, force), NULL, false },
	{ NULL },
};
static const struct proto_param params_overlay_reset[] = {
	{ "cancel", PROTO_TYPE_BOOL, false, IN(overlay_reset, cancel), NULL, false },
	{ NULL },
};
static const struct proto_param params_flash_info[] = {
	{ "partition", PROTO_TYPE_STRING, false, IN(flash_info, partition), NULL, false },
	{ NULL },
};
#undef IN

/* The IDL's types, field by field as io.flashd.varlink declares them (an
 * enum is a string, [string]T a map: "*"); test-proto-idl holds each to
 * the IDL. Where a reply is built from a struct (proto_flashd.h), the
 * table places each field in it. */
#define T(type, field) offsetof(struct proto_flashd_##type, field)
const struct proto_param proto_flashd_slot_fields[] = {
	{ "name", PROTO_TYPE_STRING, true, T(slot_info, name), NULL, false },
	{ "partition", PROTO_TYPE_STRING, true, T(slot_info, partition), NULL, false },
	{ "state", PROTO_TYPE_STRING, true, T(slot_info, state), NULL, false },
	{ "version", PROTO_TYPE_STRING, false, T(slot_info, version), NULL, false },
	{ "health", PROTO_TYPE_STRING, false, T(slot_info, health), NULL, false },
	{ "tries_left", PROTO_TYPE_INT, true, T(slot_info, tries_left), NULL, false },
	{ "priority", PROTO_TYPE_INT, false, T(slot_info, priority), NULL, false },
	{ "booted", PROTO_TYPE_BOOL, true, T(slot_info, booted), NULL, false },
	{ NULL },
};
#define R(field) T(install_record, field)
const struct proto_param proto_flashd_install_record_fields[] = {
	{ "slot", PROTO_TYPE_STRING, false, R(slot), NULL, false },
	{ "version", PROTO_TYPE_STRING, false, R(version), NULL, false },
	{ "bundle_sha256", PROTO_TYPE_STRING, false, R(bundle_sha256), NULL, false },
	{ "result", PROTO_TYPE_STRING, true, R(result), NULL, false },
	{ "reason", PROTO_TYPE_STRING, false, R(reason), NULL, false },
	{ "started", PROTO_TYPE_INT, true, R(started), NULL, false },
	{ "finished", PROTO_TYPE_INT, true, R(finished), NULL, false },
	{ "bytes", PROTO_TYPE_INT, false, R(bytes), NULL, false },
	{ "erases", PROTO_TYPE_INT, false, R(erases), NULL, false },
	{ "blocks_skipped", PROTO_TYPE_INT, false, R(blocks_skipped), NULL, false },
	{ "signer", PROTO_TYPE_STRING, false, R(signer), NULL, false },
	{ "source", PROTO_TYPE_STRING, false, R(source), NULL, false },
	{ "bytes_fetched", PROTO_TYPE_INT, false, R(bytes_fetched), NULL, false },
	{ "duration", PROTO_TYPE_INT, false, R(duration), NULL, false },
	{ "error_name", PROTO_TYPE_STRING, false, R(error_name), NULL, false },
	{ "running_version", PROTO_TYPE_STRING, false, R(running_version), NULL, false },
	{ "running_version_from", PROTO_TYPE_STRING, false, R(running_version_from), NULL, false },
	{ "downgrade", PROTO_TYPE_STRING, false, R(downgrade), NULL, false },
	{ "history_reset", PROTO_TYPE_STRING, false, R(history_reset), NULL, false },
	{ "record_error", PROTO_TYPE_STRING, false, R(record_error), NULL, false },
	{ NULL },
};
#undef R
const struct proto_param proto_flashd_overlay_layer_fields[] = {
	{ "path", PROTO_TYPE_STRING, true, T(overlay_layer, path), NULL, false },
	{ "state", PROTO_TYPE_STRING, false, T(overlay_layer, state), NULL, false },
	{ "fstype", PROTO_TYPE_STRING, false, T(overlay_layer, fstype), NULL, false },
	{ "partition", PROTO_TYPE_STRING, false, T(overlay_layer, partition), NULL, false },
	{ "persistent", PROTO_TYPE_BOOL, false, T(overlay_layer, persistent), NULL, false },
	{ "fallback", PROTO_TYPE_BOOL, false, T(overlay_layer, fallback), NULL, false },
	{ "fallback_reason", PROTO_TYPE_STRING, false, T(overlay_layer, fallback_reason), NULL,
	  false },
	{ "generation", PROTO_TYPE_STRING, false, T(overlay_layer, generation), NULL, false },
	{ "generation_error", PROTO_TYPE_STRING, false, T(overlay_layer, generation_error), NULL,
	  false },
	{ NULL },
};
const struct proto_param proto_flashd_overlay_fields[] = {
	{ "state", PROTO_TYPE_STRING, true, T(overlay, state), NULL, false },
	{ "partition", PROTO_TYPE_STRING, false, T(overlay, partition), NULL, false },
	{ "fstype", PROTO_TYPE_STRING, false, T(overlay, fstype), NULL, false },
	{ "size", PROTO_TYPE_INT, false, T(overlay, size), NULL, false },
	{ "used", PROTO_TYPE_INT, false, T(overlay, used), NULL, false },
	{ "rename_whiteout", PROTO_TYPE_BOOL, true, T(overlay, rename_whiteout), NULL, false },
	{ "degraded", PROTO_TYPE_BOOL, false, T(overlay, degraded), NULL, false },
	{ "layers", PROTO_TYPE_ARRAY, false, T(overlay, layers),
	  proto_flashd_overlay_layer_fields, false },
	{ NULL },
};
/* device and error are left out, not null, where they were before */
const struct proto_param proto_flashd_partition_fields[] = {
	{ "name", PROTO_TYPE_STRING, true, T(partition, name), NULL, false },
	{ "device", PROTO_TYPE_STRING, true, T(partition, device), NULL, true },
	{ "type", PROTO_TYPE_STRING, true, T(partition, type), NULL, false },
	{ "size", PROTO_TYPE_INT, true, T(partition, size), NULL, false },
	{ "erase_size", PROTO_TYPE_INT, true, T(partition, erase_size), NULL, false },
	{ "write_size", PROTO_TYPE_INT, true, T(partition, write_size), NULL, false },
	{ "oob_size", PROTO_TYPE_INT, true, T(partition, oob_size), NULL, false },
	{ "bad_blocks", PROTO_TYPE_INT, true, T(partition, bad_blocks), NULL, false },
	{ "ecc_corrected", PROTO_TYPE_INT, false, T(partition, ecc_corrected), NULL, false },
	{ "ecc_failed", PROTO_TYPE_INT, false, T(partition, ecc_failed), NULL, false },
	{ "error", PROTO_TYPE_STRING, false, T(partition, error), NULL, true },
	{ NULL },
};
const struct proto_param proto_flashd_progress_fields[] = {
	{ "percent", PROTO_TYPE_INT, true, T(progress, percent), NULL, false },
	{ "bytes_done", PROTO_TYPE_INT, true, T(progress, bytes_done), NULL, false },
	{ "bytes_total", PROTO_TYPE_INT, true, T(progress, bytes_total), NULL, false },
	{ "step", PROTO_TYPE_STRING, true, T(progress, step), NULL, false },
	{ "image", PROTO_TYPE_STRING, false, T(progress, image), NULL, false },
	{ "slot", PROTO_TYPE_STRING, false, T(progress, slot), NULL, false },
	{ "version", PROTO_TYPE_STRING, false, T(progress, version), NULL, false },
	{ "bytes_downloaded", PROTO_TYPE_INT, false, T(progress, bytes_downloaded), NULL, false },
	{ NULL },
};
const struct proto_param proto_flashd_env_copy_fields[] = {
	{ "state", PROTO_TYPE_STRING, true, T(env_copy, state), NULL, false },
	{ "error", PROTO_TYPE_STRING, false, T(env_copy, error), NULL, false },
	{ NULL },
};
const struct proto_param proto_flashd_malformed_var_fields[] = {
	{ "name", PROTO_TYPE_STRING, true, T(malformed_var, name), NULL, false },
	{ "value", PROTO_TYPE_STRING, true, T(malformed_var, value), NULL, false },
	{ "effect", PROTO_TYPE_STRING, true, T(malformed_var, effect), NULL, false },
	{ NULL },
};
const struct proto_param proto_flashd_env_status_fields[] = {
	{ "readable", PROTO_TYPE_BOOL, true, T(env_status, readable), NULL, false },
	{ "device", PROTO_TYPE_STRING, true, T(env_status, device), NULL, false },
	{ "copies", PROTO_TYPE_ARRAY, true, T(env_status, copies),
	  proto_flashd_env_copy_fields, false },
	{ "dead_copy", PROTO_TYPE_INT, false, T(env_status, dead_copy), NULL, false },
	{ "next_boot", PROTO_TYPE_STRING, false, T(env_status, next_boot), NULL, false },
	{ "malformed", PROTO_TYPE_ARRAY, true, T(env_status, malformed),
	  proto_flashd_malformed_var_fields, false },
	{ NULL },
};
const struct proto_param proto_flashd_slot_tries_fields[] = {
	{ "name", PROTO_TYPE_STRING, true, T(slot_tries, name), NULL, false },
	{ "tries_left", PROTO_TYPE_INT, true, T(slot_tries, tries_left), NULL, false },
	{ "state", PROTO_TYPE_STRING, true, T(slot_tries, state), NULL, false },
	{ "booted", PROTO_TYPE_BOOL, true, T(slot_tries, booted), NULL, false },
	{ NULL },
};
static const struct proto_param string_map_fields[] = {
	{ "*", PROTO_TYPE_STRING, true, 0, NULL, false },
	{ NULL },
};
#undef T

#define TYPE(name, fields, type) { name, fields, sizeof(struct proto_flashd_##type) }
const struct proto_flashd_type proto_flashd_types[] = {
	TYPE("Slot", proto_flashd_slot_fields, slot_info),
	TYPE("InstallRecord", proto_flashd_install_record_fields, install_record),
	TYPE("Overlay", proto_flashd_overlay_fields, overlay),
	TYPE("OverlayLayer", proto_flashd_overlay_layer_fields, overlay_layer),
	TYPE("Partition", proto_flashd_partition_fields, partition),
	TYPE("Progress", proto_flashd_progress_fields, progress),
	TYPE("EnvCopy", proto_flashd_env_copy_fields, env_copy),
	TYPE("EnvStatus", proto_flashd_env_status_fields, env_status),
	TYPE("MalformedVar", proto_flashd_malformed_var_fields, malformed_var),
	TYPE("SlotTries", proto_flashd_slot_tries_fields, slot_tries),
	{ NULL, NULL, 0 },
};
#undef TYPE

/* The replies, field by field as the IDL declares them, each placed in
 * its reply struct (proto_flashd.h); a nested type names its type's
 * fields, which the check goes into. */
#define OUT(type, field) offsetof(struct proto_flashd_##type##_reply, field)
static const struct proto_param reply_get_status[] = {
	{ "layout", PROTO_TYPE_STRING, true, OUT(status, layout), NULL, false },
	{ "board", PROTO_TYPE_STRING, true, OUT(status, board), NULL, false },
	{ "compatible", PROTO_TYPE_STRING, true, OUT(status, compatible), NULL, false },
	{ "slots", PROTO_TYPE_ARRAY, true, OUT(status, slots), proto_flashd_slot_fields, false },
	{ "booted", PROTO_TYPE_STRING, false, OUT(status, booted), NULL, false },
	{ "booted_unknown", PROTO_TYPE_STRING, false, OUT(status, booted_unknown), NULL, false },
	{ "on_trial", PROTO_TYPE_BOOL, true, OUT(status, on_trial), NULL, false },
	{ "fell_back", PROTO_TYPE_BOOL, true, OUT(status, fell_back), NULL, false },
	{ "switch_pending", PROTO_TYPE_BOOL, true, OUT(status, switch_pending), NULL, false },
	{ "next_boot", PROTO_TYPE_STRING, false, OUT(status, next_boot), NULL, false },
	{ "next_after_reset", PROTO_TYPE_BOOL, true, OUT(status, next_after_reset), NULL, false },
	{ "degraded", PROTO_TYPE_BOOL, true, OUT(status, degraded), NULL, false },
	{ "last_good", PROTO_TYPE_STRING, false, OUT(status, last_good), NULL, false },
	{ "last_install", PROTO_TYPE_OBJECT, false, OUT(status, last_install),
	  proto_flashd_install_record_fields, false },
	{ "overlay", PROTO_TYPE_OBJECT, true, OUT(status, overlay),
	  proto_flashd_overlay_fields, false },
	{ "flash", PROTO_TYPE_ARRAY, true, OUT(status, flash),
	  proto_flashd_partition_fields, false },
	{ "allow_unsigned", PROTO_TYPE_BOOL, true, OUT(status, allow_unsigned), NULL, false },
	{ "operation", PROTO_TYPE_STRING, false, OUT(status, operation), NULL, false },
	{ "installing_elsewhere", PROTO_TYPE_STRING, false, OUT(status, installing_elsewhere),
	  NULL, false },
	{ "progress", PROTO_TYPE_OBJECT, false, OUT(status, progress),
	  proto_flashd_progress_fields, true },
	{ "env", PROTO_TYPE_OBJECT, true, OUT(status, env), proto_flashd_env_status_fields, false },
	{ NULL },
};
static const struct proto_param reply_cancel[] = {
	{ "cancelled", PROTO_TYPE_BOOL, true, OUT(cancel, cancelled), NULL, false },
	{ NULL },
};
static const struct proto_param reply_slot[] = {
	{ "slot", PROTO_TYPE_STRING, true, OUT(slot, slot), NULL, false },
	{ NULL },
};
static const struct proto_param reply_slot_status[] = {
	{ "group", PROTO_TYPE_STRING, true, OUT(slot_status, group), NULL, false },
	{ "env", PROTO_TYPE_STRING, true, OUT(slot_status, env), NULL, false },
	{ "boot_order", PROTO_TYPE_STRING, true, OUT(slot_status, boot_order), NULL, false },
	{ "boot_order_set", PROTO_TYPE_BOOL, true, OUT(slot_status, boot_order_set), NULL, false },
	{ "max_tries", PROTO_TYPE_INT, true, OUT(slot_status, max_tries), NULL, false },
	{ "booted", PROTO_TYPE_STRING, false, OUT(slot_status, booted), NULL, false },
	{ "booted_by", PROTO_TYPE_STRING, false, OUT(slot_status, booted_by), NULL, false },
	{ "primary", PROTO_TYPE_STRING, false, OUT(slot_status, primary), NULL, false },
	{ "next_boot", PROTO_TYPE_STRING, false, OUT(slot_status, next_boot), NULL, false },
	{ "on_trial", PROTO_TYPE_BOOL, true, OUT(slot_status, on_trial), NULL, false },
	{ "fell_back", PROTO_TYPE_BOOL, true, OUT(slot_status, fell_back), NULL, false },
	{ "needs_health_check", PROTO_TYPE_BOOL, true, OUT(slot_status, needs_health_check),
	  NULL, false },
	{ "next_after_reset", PROTO_TYPE_BOOL, true, OUT(slot_status, next_after_reset),
	  NULL, false },
	{ "degraded", PROTO_TYPE_BOOL, true, OUT(slot_status, degraded), NULL, false },
	{ "last_good", PROTO_TYPE_STRING, false, OUT(slot_status, last_good), NULL, false },
	{ "slots", PROTO_TYPE_ARRAY, true, OUT(slot_status, slots),
	  proto_flashd_slot_tries_fields, false },
	{ NULL },
};
static const struct proto_param reply_overlay_reset[] = {
	{ "overlay", PROTO_TYPE_OBJECT, true, OUT(overlay, overlay),
	  proto_flashd_overlay_fields, false },
	{ "changed", PROTO_TYPE_BOOL, true, OUT(overlay, changed), NULL, false },
	{ NULL },
};
static const struct proto_param reply_overlay_status[] = {
	{ "overlay", PROTO_TYPE_OBJECT, true, OUT(overlay, overlay),
	  proto_flashd_overlay_fields, false },
	{ NULL },
};
static const struct proto_param reply_get_env[] = {
	{ "name", PROTO_TYPE_STRING, true, OUT(get_env, name), NULL, false },
	{ "value", PROTO_TYPE_STRING, false, OUT(get_env, value), NULL, false },
	{ NULL },
};
static const struct proto_param reply_list_env[] = {
	{ "variables", PROTO_TYPE_OBJECT, true, OUT(list_env, variables),
	  string_map_fields, false },
	{ NULL },
};
static const struct proto_param reply_flash_info[] = {
	{ "partitions", PROTO_TYPE_ARRAY, true, OUT(flash_info, partitions),
	  proto_flashd_partition_fields, false },
	{ NULL },
};
static const struct proto_param reply_get_history[] = {
	{ "installs", PROTO_TYPE_ARRAY, true, OUT(history, installs),
	  proto_flashd_install_record_fields, false },
	{ "error", PROTO_TYPE_STRING, false, OUT(history, error), NULL, false },
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
	M(PROTO_FLASHD_GET_STATUS, "GetStatus", 0, NONE, 0, reply_get_status, OUT(status)),
	/* its replies are Progress */
	M(PROTO_FLASHD_INSTALL, "Install", AUTH | PROTO_TAKES_FDS, params_install, IN(install),
	  proto_flashd_progress_fields, sizeof(struct proto_flashd_progress)),
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
	M(PROTO_FLASHD_SLOT_STATUS, "SlotStatus", 0, NONE, 0, reply_slot_status,
	  OUT(slot_status)),
	M(PROTO_FLASHD_GET_HISTORY, "GetHistory", 0, NONE, 0, reply_get_history, OUT(history)),
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
