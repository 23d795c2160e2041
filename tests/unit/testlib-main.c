/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* main() of every unit test: runs the tests registered with TEST() and
 * friends (testlib.h) in source order. Its own archive member, so it is
 * linked only into a program that has no main() of its own. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>

#include "testlib.h"

extern const struct testlib_case *const __start_testlib_tests[];
extern const struct testlib_case *const __stop_testlib_tests[];
extern const struct testlib_group testlib_group __attribute__((weak));

static int by_line(const void *a, const void *b)
{
	const struct testlib_case *x = *(const struct testlib_case *const *)a;
	const struct testlib_case *y = *(const struct testlib_case *const *)b;

	return (x->line > y->line) - (x->line < y->line);
}

int main(void)
{
	size_t n = (size_t)(__stop_testlib_tests - __start_testlib_tests);
	const struct testlib_case **sorted = calloc(n ? n : 1, sizeof(*sorted));
	struct CMUnitTest *tests = calloc(n ? n : 1, sizeof(*tests));
	const struct testlib_group *g = &testlib_group;
	int r;

	if (!sorted || !tests)
		return 1;
	for (size_t i = 0; i < n; i++)
		sorted[i] = __start_testlib_tests[i];
	qsort(sorted, n, sizeof(*sorted), by_line);
	for (size_t i = 0; i < n; i++)
		tests[i] = sorted[i]->test;
	r = _cmocka_run_group_tests("tests", tests, n,
				    g ? g->setup : NULL, g ? g->teardown : NULL);
	free(tests);
	free(sorted);
	return r;
}
