/* Fixtures shared by the unit tests (tests/unit/libtestlib.a): paths in
 * the source tree and in /tmp, simulated chips, layouts. Every helper
 * fails the running cmocka test (fail_msg) instead of returning an
 * error: a fixture that cannot be made is the test's failure. */
#pragma once
#include <stddef.h>

#include "layout.h"
#include "nsim.h"

char *testlib_asprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* $top_srcdir/rel (the source tree when run outside make check) */
char *testlib_src_path(const char *rel);
/* A new empty file /tmp/test-NAME-XXXXXX (malloc'd path) */
char *testlib_tmp_file(const char *name);
/* A new directory /tmp/test-NAME-XXXXXX (malloc'd path) */
char *testlib_tmp_dir(const char *name);
/* A fresh simulator file of geometry g with factory bad blocks bad[] */
char *testlib_sim_new(const char *name, const struct nsim_geometry *g, const unsigned *bad,
		      size_t n_bad);
/* The simulator geometry of layout device d */
struct nsim_geometry testlib_sim_geometry(const struct layout_device *d);
/* layouts/NAME.json of the source tree, or the layout JSON text */
struct layout *testlib_layout_load(const char *name);
struct layout *testlib_layout_parse(const char *json);

/* unlink and free a path (for _cleanup_) */
void testlib_unlinkp(char **path);
#define _cleanup_unlink_ __attribute__((cleanup(testlib_unlinkp)))
