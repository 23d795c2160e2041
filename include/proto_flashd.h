/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* io.flashd: the one table of its methods (name, flags, typed parameters).
 *
 * lib/varlink/io.flashd.varlink is what clients read; this table is what the
 * dispatcher enforces. The daemon, the fuzzer and the unit tests bind their
 * handlers to this table instead of writing their own, and tests/unit/
 * test-proto-idl checks it against the IDL (methods, parameters, errors). */
#pragma once
#include "proto.h"

enum proto_flashd_method {
	PROTO_FLASHD_GET_STATUS,
	PROTO_FLASHD_INSTALL,
	PROTO_FLASHD_CANCEL,
	PROTO_FLASHD_MARK_GOOD,
	PROTO_FLASHD_MARK_BAD,
	PROTO_FLASHD_ACTIVATE,
	PROTO_FLASHD_ROLLBACK,
	PROTO_FLASHD_OVERLAY_RESET,
	PROTO_FLASHD_OVERLAY_STATUS,
	PROTO_FLASHD_GET_ENV,
	PROTO_FLASHD_SET_ENV,
	PROTO_FLASHD_LIST_ENV,
	PROTO_FLASHD_FLASH_INFO,
	PROTO_FLASHD_SLOT_STATUS,
	PROTO_FLASHD_GET_HISTORY,
	_PROTO_FLASHD_METHOD_MAX,
};

/* The typed parameters of the methods that have any, filled by the
 * dispatcher before the handler runs (struct proto_param in proto.h):
 * const struct proto_flashd_install *in = proto_call_input(call);
 * Declared once, here and in the table's field lists of proto_flashd.c,
 * which test-proto-idl holds to io.flashd.varlink's inputs. */
struct proto_flashd_install {
	struct proto_int fd;          /* index among the passed descriptors */
	const char *path, *url, *slot;
	struct proto_bool activate;   /* default true */
	struct proto_bool allow_downgrade;
};
/* MarkGood, MarkBad, Rollback (slot optional), Activate (slot required) */
struct proto_flashd_slot {
	const char *slot;
};
struct proto_flashd_get_env {
	const char *name;
};
struct proto_flashd_set_env {
	const char *name;
	const char *value;            /* NULL: delete the variable */
	struct proto_bool force;
};
struct proto_flashd_overlay_reset {
	struct proto_bool cancel;
};
struct proto_flashd_flash_info {
	const char *partition;        /* NULL: all */
};

/* The IDL's types, as typed structs where a reply is built from one
 * (proto_typed_build(), proto_typed_array() with the type's fields below);
 * nested values are placed in them as struct json_object *. */
struct proto_flashd_slot_info {     /* Slot */
	const char *name, *partition, *state, *version, *health;
	struct proto_int tries_left, priority;
	struct proto_bool booted;
};
struct proto_flashd_slot_tries {    /* SlotTries */
	const char *name;
	struct proto_int tries_left;
	const char *state;
	struct proto_bool booted;
};
struct proto_flashd_progress {      /* Progress, and Install's reply */
	struct proto_int percent, bytes_done, bytes_total;
	const char *step, *image, *slot, *version;
	struct proto_int bytes_downloaded;
};
struct proto_flashd_partition {     /* Partition */
	const char *name;
	const char *device;             /* left out when NULL (not known) */
	const char *type;
	struct proto_int size, erase_size, write_size, oob_size, bad_blocks;
	struct proto_int ecc_corrected, ecc_failed;
	const char *error;              /* left out when NULL */
};
struct proto_flashd_overlay {       /* Overlay */
	const char *state, *partition, *fstype;
	struct proto_int size, used;
	struct proto_bool rename_whiteout, degraded;
	struct json_object *layers;     /* []OverlayLayer */
};
struct proto_flashd_overlay_layer { /* OverlayLayer */
	const char *path, *state, *fstype, *partition;
	struct proto_bool persistent, fallback;
	const char *fallback_reason, *generation, *generation_error;
};
struct proto_flashd_install_record { /* InstallRecord */
	const char *slot, *version, *bundle_sha256, *result, *reason;
	struct proto_int started, finished, bytes, erases, blocks_skipped;
	const char *signer, *source;
	struct proto_int bytes_fetched, duration;
	const char *error_name, *running_version, *running_version_from, *downgrade;
	const char *history_reset, *record_error;
};
struct proto_flashd_env_copy {      /* EnvCopy */
	const char *state, *error;
};
struct proto_flashd_malformed_var { /* MalformedVar */
	const char *name, *value, *effect;
};
struct proto_flashd_env_status {    /* EnvStatus */
	struct proto_bool readable;
	const char *device;
	struct json_object *copies;  /* []EnvCopy */
	struct proto_int dead_copy;
	const char *next_boot;
	struct json_object *malformed; /* []MalformedVar */
};

/* The fields of each IDL type, one table per type: what replies are
 * built from and checked against at every depth (test-proto-idl holds
 * each to its IDL type). */
extern const struct proto_param proto_flashd_slot_fields[];
extern const struct proto_param proto_flashd_install_record_fields[];
extern const struct proto_param proto_flashd_partition_fields[];
extern const struct proto_param proto_flashd_overlay_fields[];
extern const struct proto_param proto_flashd_overlay_layer_fields[];
extern const struct proto_param proto_flashd_slot_tries_fields[];
extern const struct proto_param proto_flashd_progress_fields[];
extern const struct proto_param proto_flashd_env_copy_fields[];
extern const struct proto_param proto_flashd_malformed_var_fields[];
extern const struct proto_param proto_flashd_env_status_fields[];

/* Every IDL type by its IDL name, then a { NULL } entry; size: of the
 * struct it is built from, 0 for one made as JSON. */
struct proto_flashd_type {
	const char *name;
	const struct proto_param *fields;
	size_t size;
};
extern const struct proto_flashd_type proto_flashd_types[];

/* Typed replies (proto_reply_typed(), or proto_typed_build() with the
 * method's reply table), one per method with a reply: every io.flashd
 * reply is built from one. */
struct proto_flashd_status_reply {
	const char *layout, *board, *compatible;
	struct json_object *slots;      /* []Slot */
	const char *booted, *booted_unknown;
	struct proto_bool on_trial, fell_back, switch_pending;
	const char *next_boot;
	struct proto_bool next_after_reset, degraded;
	const char *last_good;
	struct json_object *last_install, *overlay, *flash;
	struct proto_bool allow_unsigned;
	const char *operation, *installing_elsewhere;
	struct json_object *progress;   /* left out when NULL, not null */
	struct json_object *env;
};
struct proto_flashd_slot_status_reply {
	const char *group, *env, *boot_order;
	struct proto_bool boot_order_set;
	struct proto_int max_tries;
	const char *booted, *booted_by, *primary, *next_boot;
	struct proto_bool on_trial, fell_back, needs_health_check, next_after_reset, degraded;
	const char *last_good;
	struct json_object *slots;      /* []SlotTries */
};
struct proto_flashd_history_reply {
	struct json_object *installs;   /* []InstallRecord */
	const char *error;
};
struct proto_flashd_cancel_reply {
	struct proto_bool cancelled;
};
/* MarkGood, MarkBad, Rollback */
struct proto_flashd_slot_reply {
	const char *slot;
};
struct proto_flashd_get_env_reply {
	const char *name;
	const char *value;            /* NULL: not set */
};
/* OverlayReset (both), OverlayStatus (overlay) */
struct proto_flashd_overlay_reply {
	struct json_object *overlay;
	struct proto_bool changed;
};
struct proto_flashd_list_env_reply {
	struct json_object *variables;
};
struct proto_flashd_flash_info_reply {
	struct json_object *partitions;
};

/* Indexed by enum proto_flashd_method, then a { NULL } entry; no handlers. */
extern const struct proto_method proto_flashd_methods[_PROTO_FLASHD_METHOD_MAX + 1];

/* A server's method table: proto_flashd_methods with handlers[i] for
 * method i. A method without a handler (NULL) is answered with
 * org.varlink.service.MethodNotImplemented. ret[_PROTO_FLASHD_METHOD_MAX]
 * is the { NULL } end. */
void proto_flashd_bind(struct proto_method ret[_PROTO_FLASHD_METHOD_MAX + 1],
		       const proto_method_fn handlers[_PROTO_FLASHD_METHOD_MAX]);

/* The errors of io.flashd (PROTO_ERROR_* of proto.h), NULL-terminated. */
extern const char *const proto_flashd_errors[];

