/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* version_compare(): Debian's order (deb-version(7)), the cases dpkg's own
 * test suite (t-version.c) and deb-version(7) give. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <cmocka.h>

#include "cleanup.h"
#include "version.h"
#include "testlib.h"

static int sign(int v)
{
	return (v > 0) - (v < 0);
}

/* a against b is want, and b against a the opposite */
static void check(const char *a, const char *b, int want)
{
	int got = sign(version_compare(a, b)), back = sign(version_compare(b, a));

	if (got != want || back != -want)
		fail_msg("version_compare(\"%s\", \"%s\") = %d (back %d), want %d", a, b, got,
			 back, want);
}

TEST(test_version_equal)
{
	static const char *const pairs[][2] = {
		{ "1.0", "1.0" }, { "0", "0" }, { "1.0", "1.00" }, { "01", "1" },
		{ "0:1.0", "1.0" }, { "1.0-0", "1.0" }, { "", "" }, { "1.0-", "1.0" },
		{ "2.0~rc1", "2.0~rc1" }, { "a", "a" },
	};

	for (size_t i = 0; i < ELEMENTSOF(pairs); i++)
		check(pairs[i][0], pairs[i][1], 0);
}

TEST(test_version_order)
{
	/* each sorts before the next */
	static const char *const chain[] = {
		"0.9", "1.0~~", "1.0~~a", "1.0~", "1.0~rc1", "1.0~rc2", "1.0", "1.0-1",
		"1.0-1.1", "1.0-2", "1.0-10", "1.0a", "1.0a+", "1.0+", "1.0.0", "1.0.1",
		"1.2", "1.9", "1.10", "1.10.0~beta", "1.10.0", "2", "2.0", "10.0",
		"20260101", "1:0.1", "1:0.2", "2:0",
	};

	for (size_t i = 0; i + 1 < ELEMENTSOF(chain); i++)
		for (size_t j = i + 1; j < ELEMENTSOF(chain); j++)
			check(chain[i], chain[j], -1);
}

TEST(test_version_cases)
{
	/* numbers as numbers, not as text */
	check("1.10", "1.9", 1);
	check("1.0.10", "1.0.9", 1);
	check("99999999999999999999", "99999999999999999998", 1);
	/* letters before other characters, '~' before the end */
	check("1.0a", "1.0+", -1);
	check("1.0", "1.0~", 1);
	/* the revision is the part after the last '-' */
	check("1.0-1-2", "1.0-1-1", 1);
	check("1.0-rc1", "1.0", 1);
	/* the epoch wins, and is a number */
	check("1:1.0", "2.0", 1);
	check("10:1", "9:9", 1);
	/* not an epoch: compared as text */
	check("x:1", "x:2", -1);
	/* the board's own style, a date */
	check("2026.12.06", "2026.11.30", 1);
}

TEST(test_version_is_debian)
{
	assert_true(version_is_debian("1.0"));
	assert_true(version_is_debian("2:1.0-3"));
	assert_false(version_is_debian("v1.0"));
	assert_false(version_is_debian(""));
}
