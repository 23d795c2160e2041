/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "cleanup_json.h"
#include "record.h"
#include "testlib.h"

static const char *field(struct json_object *o, const char *k)
{
	struct json_object *v;

	return json_object_object_get_ex(o, k, &v) ? json_object_get_string(v) : NULL;
}

TEST(test_empty_and_append)
{
	char dir[] = "/tmp/flashd-test-record-XXXXXX";
	_cleanup_free_ char *sub = NULL;
	_cleanup_json_ struct json_object *arr = NULL;

	assert_non_null(mkdtemp(dir));
	assert_true(asprintf(&sub, "%s/state/flashd", dir) > 0);
	assert_int_equal(record_load(sub, &arr), 0);
	assert_int_equal(json_object_array_length(arr), 0);
	json_object_put(TAKE_PTR(arr));

	for (int i = 0; i < RECORD_MAX + 3; i++) {
		char ver[16];
		struct record r = { .started = 1000 + i, .finished = 1010 + i, .group = "rootfs",
				    .slot = i % 2 ? "B" : "A", .version = ver,
				    .result = i == 1 ? "failed" : "success",
				    .error = i == 1 ? "hash mismatch" : NULL, .bytes = 4096 * i };
		snprintf(ver, sizeof(ver), "1.%d", i);
		assert_int_equal(record_append(sub, &r), 0);
	}
	assert_int_equal(record_load(sub, &arr), 0);
	/* bounded, newest first */
	assert_int_equal(json_object_array_length(arr), RECORD_MAX);
	assert_string_equal(field(json_object_array_get_idx(arr, 0), "version"), "1.18");
	assert_string_equal(field(json_object_array_get_idx(arr, 0), "slot"), "A");
	assert_null(field(json_object_array_get_idx(arr, 0), "error"));
	assert_string_equal(field(json_object_array_get_idx(arr, RECORD_MAX - 1), "version"), "1.3");
}

TEST(test_damaged_file)
{
	char dir[] = "/tmp/flashd-test-record-XXXXXX";
	_cleanup_free_ char *path = NULL;
	_cleanup_json_ struct json_object *arr = NULL;
	struct record r = { .group = "rootfs", .slot = "B", .version = "2", .result = "success" };
	FILE *f;

	assert_non_null(mkdtemp(dir));
	assert_true(asprintf(&path, "%s/%s", dir, RECORD_FILE) > 0);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs("{ torn", f);
	fclose(f);
	assert_int_equal(record_load(dir, &arr), -EBADMSG);
	/* the next install replaces the damaged file */
	assert_int_equal(record_append(dir, &r), 0);
	assert_int_equal(record_load(dir, &arr), 0);
	assert_int_equal(json_object_array_length(arr), 1);
	assert_string_equal(field(json_object_array_get_idx(arr, 0), "result"), "success");
}
