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

/* Typed replies (proto_reply_typed()), for the methods whose reply is
 * made from one; the others build their reply as JSON and the reply
 * check holds it to the IDL all the same. */
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

