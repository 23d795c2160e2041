/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Scope-bound cleanup helpers (systemd/ell style). Every destructor used
 * here accepts NULL / -1 so a variable may be cleaned up in any state. */
#pragma once
#include <stdlib.h>
#include <unistd.h>
#include <errno.h>
#include <stdio.h>
#include <dirent.h>
#include <string.h>
#include <sys/stat.h>

#define _cleanup_(f) __attribute__((cleanup(f)))
#define _unused_ __attribute__((unused))
#define _printf_(a, b) __attribute__((format(printf, a, b)))

static inline void freep(void *p) { free(*(void **)p); }
static inline void closep(const int *fd)
{
	if (*fd >= 0) {
		int saved = errno;
		close(*fd);
		errno = saved;
	}
}
static inline void fclosep(FILE **f) { if (*f) fclose(*f); }
static inline void closedirp(DIR **d) { if (*d) closedir(*d); }

#define _cleanup_free_ _cleanup_(freep)
#define _cleanup_close_ _cleanup_(closep)
#define _cleanup_fclose_ _cleanup_(fclosep)
#define _cleanup_closedir_ _cleanup_(closedirp)

/* Define foo_freep() for a NULL-safe foo_free(). */
#define DEFINE_TRIVIAL_CLEANUP_FUNC(type, func)         \
	static inline void func##p(type *p) { func(*p); }

/* Hand ownership out of a _cleanup_ variable. */
#define TAKE_PTR(p) ({ __typeof__(p) _t = (p); (p) = NULL; _t; })
#define TAKE_FD(fd) ({ int _t = (fd); (fd) = -1; _t; })

#define ELEMENTSOF(a) (sizeof(a) / sizeof((a)[0]))
#define MIN(a, b) ((a) < (b) ? (a) : (b))
#define MAX(a, b) ((a) > (b) ? (a) : (b))
#define DIV_ROUND_UP(a, b) (((a) + (b) - 1) / (b))
#define IS_ALIGNED(x, a) (((x) % (a)) == 0)

/* Index of s in a table of names (NULL entries skipped), or -EINVAL. */
static inline int string_table_lookup(const char *const *table, size_t n, const char *s)
{
	for (size_t i = 0; s && i < n; i++)
		if (table[i] && strcmp(table[i], s) == 0)
			return (int)i;
	return -EINVAL;
}

/* An enum and its names come from one list, so neither can lack the other:
 *   #define SLOT_TRIES_LIST(X) X(SLOT_TRIES_FULL, "good") X(SLOT_TRIES_OUT, "bad")
 *   enum slot_tries { SLOT_TRIES_LIST(STRING_TABLE_ENUM) _SLOT_TRIES_MAX };
 * and in the module
 *   static const char *const slot_tries_table[] = { SLOT_TRIES_LIST(STRING_TABLE_NAME) };
 * A list may carry more columns (X(value, name, ...)): the macros take the
 * first two. */
#define STRING_TABLE_ENUM(v, s, ...) v,
#define STRING_TABLE_NAME(v, s, ...) [v] = s,

/* enum <-> string from a table of names indexed by the enum:
 *   static const char *const slot_op_table[_SLOT_OP_MAX] = { [SLOT_OP_X] = "x", ... };
 *   DEFINE_STRING_TABLE(slot_op, enum slot_op)
 * defines slot_op_to_string(v) (NULL when out of range) and
 * slot_op_from_string(s) (the value, or -EINVAL when unknown);
 * DEFINE_STRING_TABLE_TO only the first. */
#define DEFINE_STRING_TABLE_TO(name, type)                                      \
	const char *name##_to_string(type v)                                   \
	{                                                                      \
		return (size_t)v < ELEMENTSOF(name##_table) ? name##_table[v] : NULL; \
	}
#define DEFINE_STRING_TABLE(name, type)                                         \
	DEFINE_STRING_TABLE_TO(name, type)                                     \
	int name##_from_string(const char *s)                                  \
	{                                                                      \
		return string_table_lookup(name##_table, ELEMENTSOF(name##_table), s); \
	}
