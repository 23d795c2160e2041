/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The one error type of flashd: the errno of a failure and a message that
 * says what failed and where, built from the inside out as the error
 * travels up ("slot A: rootfs: read at 0x20000: Input/output error"), in
 * the manner of sd_bus_error_set_errnof() or GError.
 *
 * A function that can fail with more to say than an errno takes a
 * `struct error *err` (NULL: the caller wants only the code), records the
 * failure with error_set() and returns its -errno; a caller that adds
 * context calls error_prefix() on the same struct: messages are never
 * copied from one error into another. */
#pragma once
#include <stdarg.h>
#include <stdbool.h>
#include "cleanup.h"

#define ERROR_MSG_MAX 512

struct error {
	int code;                  /* positive errno of the failure, 0: none */
	char msg[ERROR_MSG_MAX];   /* outermost context first; "" when none */
};

/* Record the failure r (a -errno) with a message; returns r. Replaces a
 * message already set. e may be NULL. */
int error_set(struct error *e, int r, const char *fmt, ...) _printf_(3, 4);
int error_setv(struct error *e, int r, const char *fmt, va_list ap) _printf_(3, 0);
/* Put "WHAT: " before the message as the error travels up; when no
 * message was set yet, the message becomes "WHAT: strerror(r)". Returns r. */
int error_prefix(struct error *e, int r, const char *fmt, ...) _printf_(3, 4);
/* Hand a kept error over whole (a failure saved to be told again later):
 * dst becomes src, code and message. dst may be NULL. */
void error_copy(struct error *dst, const struct error *src);
/* The message, or strerror of the code when none was set ("" when neither). */
const char *error_message(const struct error *e);
static inline bool error_is_set(const struct error *e) { return e && (e->code || e->msg[0]); }
static inline void error_clear(struct error *e)
{
	if (e) {
		e->code = 0;
		e->msg[0] = 0;
	}
}
