/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The one error type (include/error.h). */
#include <stdio.h>
#include <string.h>
#include "error.h"

int error_setv(struct error *e, int r, const char *fmt, va_list ap)
{
	if (!e)
		return r;
	e->code = r < 0 ? -r : r;
	vsnprintf(e->msg, sizeof(e->msg), fmt, ap);
	return r;
}

int error_set(struct error *e, int r, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	error_setv(e, r, fmt, ap);
	va_end(ap);
	return r;
}

int error_prefix(struct error *e, int r, const char *fmt, ...)
{
	char what[ERROR_MSG_MAX];
	size_t wl, keep, room = sizeof(e->msg) - 1;
	va_list ap;

	if (!e)
		return r;
	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	if (!e->code)
		e->code = r < 0 ? -r : r;
	if (!e->msg[0])
		snprintf(e->msg, sizeof(e->msg), "%s", strerror(e->code));
	/* in place: "WHAT: " then as much of the inner message as fits */
	wl = MIN(strlen(what), room - 2);
	keep = MIN(strlen(e->msg), room - wl - 2);
	memmove(e->msg + wl + 2, e->msg, keep);
	memcpy(e->msg, what, wl);
	e->msg[wl] = ':';
	e->msg[wl + 1] = ' ';
	e->msg[wl + 2 + keep] = '\0';
	return r;
}

void error_copy(struct error *dst, const struct error *src)
{
	if (dst && dst != src)
		*dst = *src;
}

const char *error_message(const struct error *e)
{
	if (!e)
		return "";
	if (e->msg[0])
		return e->msg;
	return e->code ? strerror(e->code) : "";
}
