/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The standalone tools' error line, "PROG: message" on stderr (nsimctl,
 * nvflash; flashctl has cli_error). Header only: nvflash needs the C
 * library alone. The library never prints. */
#pragma once
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "cleanup.h"

/* Returns EXIT_FAILURE, for "return tool_fail(...);" in a command. */
static inline int tool_fail(const char *prog, const char *fmt, ...) _printf_(2, 3);
static inline int tool_fail(const char *prog, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return EXIT_FAILURE;
}
