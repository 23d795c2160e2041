/* Scope-bound cleanup helpers (systemd/ell style). Every destructor used
 * here accepts NULL / -1 so a variable may be cleaned up in any state. */
#pragma once
#include <stdlib.h>
#include <unistd.h>
#include <errno.h>
#include <stdio.h>

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

#define _cleanup_free_ _cleanup_(freep)
#define _cleanup_close_ _cleanup_(closep)
#define _cleanup_fclose_ _cleanup_(fclosep)

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
