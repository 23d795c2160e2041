/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Fixtures shared by the unit tests (tests/unit/libtestlib.a): paths in
 * the source tree and in /tmp, simulated chips, layouts. Every helper
 * fails the running cmocka test (fail_msg) instead of returning an
 * error: a fixture that cannot be made is the test's failure. */
#pragma once
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

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
/* layouts/NAME.json (NAME with or without .json) of the source tree, or
 * the file at that path from the top of the source tree when NAME holds a
 * "/"; or the layout JSON text */
struct layout *testlib_layout_load(const char *name);
struct layout *testlib_layout_parse(const char *json);

/* Overwrite the byte at off of the file path with byte (a corruption). */
void testlib_poke(const char *path, uint64_t off, uint8_t byte);

/* Remove a directory tree, not following symlinks (rm -rf); fails the
 * running test when something stays behind. */
void testlib_rm_rf(const char *path);

/* unlink and free a path (for _cleanup_) */
void testlib_unlinkp(char **path);
#define _cleanup_unlink_ __attribute__((cleanup(testlib_unlinkp)))

/* Tests register themselves, in the manner of systemd's TEST(): a file
 * defines its tests with
 *   TEST(test_name) { ... }                        no fixture
 *   TEST_FIXTURE(test_name, setup, teardown) { ... }
 * (the body sees `void **state`), and `TEST_CASE(name, fn, setup, teardown)`
 * registers a function that runs under more than one fixture. An optional
 * TEST_GROUP(setup, teardown) gives the group fixture. testlib's main()
 * (testlib-main.c) runs every registered test in the order of the source,
 * so a test cannot be written and then forgotten in a list. The entries
 * are pointers in the section "testlib_tests" (pointer-sized, so the
 * linker packs them without gaps; ASan does not pad variables in named
 * sections). */
struct testlib_case {
	struct CMUnitTest test;
	unsigned line; /* source order */
};

struct testlib_group {
	CMFixtureFunction setup;
	CMFixtureFunction teardown;
};

#define TESTLIB_REGISTER_(id, name, fn, setup, teardown)                                  \
	static const struct testlib_case testlib_case_##id = {                            \
		{ name, fn, setup, teardown, NULL }, __LINE__                             \
	};                                                                                \
	static const struct testlib_case *const testlib_entry_##id                       \
		__attribute__((used, section("testlib_tests"), aligned(sizeof(void *)))) = \
			&testlib_case_##id

#define TEST_CASE(name, fn, setup, teardown) \
	TESTLIB_REGISTER_(name, #name, fn, setup, teardown)

#define TEST_FIXTURE(fn, setup, teardown)                     \
	static void fn(void **state);                         \
	TESTLIB_REGISTER_(fn, #fn, fn, setup, teardown); \
	static void fn(void **state)

#define TEST(fn) TEST_FIXTURE(fn, NULL, NULL)

#define TEST_GROUP(setup_fn, teardown_fn) \
	const struct testlib_group testlib_group = { setup_fn, teardown_fn }
