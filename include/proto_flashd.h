/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* io.flashd: the one table of its methods (name, flags, typed parameters).
 *
 * lib/varlink/io.flashd.varlink is what clients read; this table is what the
 * dispatcher enforces. The daemon, the fuzzer and the unit tests bind their
 * handlers to this table instead of writing their own, and tests/unit/
 * test-proto checks it against the IDL (methods, parameters, errors). */
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

