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
#include "proto_slot.h"
#include "record.h"
#include "testlib.h"
#include "util.h"

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
	assert_string_equal(field(json_object_array_get_idx(arr, 0), "version"), "1.102");
	assert_string_equal(field(json_object_array_get_idx(arr, 0), "slot"), "A");
	assert_null(field(json_object_array_get_idx(arr, 0), "error"));
	assert_string_equal(field(json_object_array_get_idx(arr, RECORD_MAX - 1), "version"), "1.3");
}

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static char *read_text(const char *path)
{
	char *text = NULL;

	assert_int_equal(util_read_file(path, 1 << 20, &text, NULL), 0);
	return text;
}

/* A torn or truncated file: the next install's record starts a new one,
 * the damaged one is kept aside byte for byte, and the record names it. */
TEST(test_damaged_file)
{
	static const char *const damaged[] = { "{ torn", "[ { \"started\": 1, \"res", "",
					       "{\"an\": \"object\"}" };

	for (size_t i = 0; i < ELEMENTSOF(damaged); i++) {
		char dir[] = "/tmp/flashd-test-record-XXXXXX";
		_cleanup_free_ char *path = NULL, *aside = NULL, *kept = NULL;
		_cleanup_json_ struct json_object *arr = NULL;
		struct record r = { .finished = 1765000000, .group = "rootfs", .slot = "B",
				    .version = "2", .result = "success" };
		const char *note;

		assert_non_null(mkdtemp(dir));
		assert_true(asprintf(&path, "%s/%s", dir, RECORD_FILE) > 0);
		write_file(path, damaged[i]);
		assert_int_equal(record_load(dir, &arr), -EBADMSG);
		assert_int_equal(record_append(dir, &r), 0);
		assert_int_equal(record_load(dir, &arr), 0);
		assert_int_equal(json_object_array_length(arr), 1);
		assert_string_equal(field(json_object_array_get_idx(arr, 0), "result"), "success");
		/* 1765000000 is 2025-12-06 05:46:40 UTC */
		assert_true(asprintf(&aside, "%s.damaged-20251206T054640Z", path) > 0);
		kept = read_text(aside);
		assert_string_equal(kept, damaged[i]);
		note = field(json_object_array_get_idx(arr, 0), "history_reset");
		assert_non_null(note);
		assert_non_null(strstr(note, aside));
		/* the reset is said once, on the record that started the new file */
		r.version = "3";
		assert_int_equal(record_append(dir, &r), 0);
		json_object_put(TAKE_PTR(arr));
		assert_int_equal(record_load(dir, &arr), 0);
		assert_int_equal(json_object_array_length(arr), 2);
		assert_null(field(json_object_array_get_idx(arr, 0), "history_reset"));
		assert_non_null(field(json_object_array_get_idx(arr, 1), "history_reset"));
	}
}

/* A second damaged history set aside in the same second keeps the first. */
TEST(test_damaged_twice_same_second)
{
	char dir[] = "/tmp/flashd-test-record-XXXXXX";
	_cleanup_free_ char *path = NULL, *first = NULL, *second = NULL, *k1 = NULL, *k2 = NULL;
	struct record r = { .finished = 1765000000, .group = "rootfs", .slot = "B",
			    .version = "2", .result = "success" };

	assert_non_null(mkdtemp(dir));
	assert_true(asprintf(&path, "%s/%s", dir, RECORD_FILE) > 0);
	write_file(path, "{ first damage");
	assert_int_equal(record_append(dir, &r), 0);
	write_file(path, "{ second damage");
	assert_int_equal(record_append(dir, &r), 0);
	assert_true(asprintf(&first, "%s.damaged-20251206T054640Z", path) > 0);
	assert_true(asprintf(&second, "%s.damaged-20251206T054640Z-1", path) > 0);
	k1 = read_text(first);
	k2 = read_text(second);
	assert_string_equal(k1, "{ first damage");
	assert_string_equal(k2, "{ second damage");
}

/* A hand-edited element: what has the wrong type is left out, an element
 * that is not an object is dropped; never more than RECORD_MAX. */
TEST(test_typed_fields)
{
	char dir[] = "/tmp/flashd-test-record-XXXXXX";
	_cleanup_free_ char *path = NULL;
	_cleanup_json_ struct json_object *arr = NULL;
	struct json_object *e, *v;

	assert_non_null(mkdtemp(dir));
	assert_true(asprintf(&path, "%s/%s", dir, RECORD_FILE) > 0);
	write_file(path, "[ { \"started\": \"yesterday\", \"version\": 7, \"slot\": \"B\", "
		   "\"result\": \"success\", \"bytes\": 10, \"extra\": 1 }, 42, \"x\" ]");
	assert_int_equal(record_load(dir, &arr), 0);
	assert_int_equal(json_object_array_length(arr), 1);
	e = json_object_array_get_idx(arr, 0);
	assert_false(json_object_object_get_ex(e, "started", &v));
	assert_false(json_object_object_get_ex(e, "version", &v));
	assert_false(json_object_object_get_ex(e, "extra", &v));
	assert_string_equal(field(e, "slot"), "B");
	assert_true(json_object_object_get_ex(e, "bytes", &v));
	assert_int_equal(json_object_get_int64(v), 10);
}

/* Integers out of range (a hostile or damaged file) are dropped like a
 * wrong type, so no client overflows on them or prints a time the C
 * library cannot break down; the interface's duration is never < 0. */
TEST(test_int_ranges)
{
	char dir[] = "/tmp/flashd-test-record-XXXXXX";
	_cleanup_free_ char *path = NULL;
	_cleanup_json_ struct json_object *arr = NULL, *recs = NULL, *hist = NULL;
	struct json_object *e, *v;
	char why[256];

	assert_non_null(mkdtemp(dir));
	assert_true(asprintf(&path, "%s/%s", dir, RECORD_FILE) > 0);
	write_file(path, "[ { \"started\": 9223372036854775807, \"finished\": -9223372036854775807, "
		   "\"result\": \"success\", \"bytes\": -1, \"erases\": 1125899906842625 }, "
		   "{ \"started\": 100, \"finished\": 50, \"result\": \"failed\" } ]");
	assert_int_equal(record_load(dir, &arr), 0);
	e = json_object_array_get_idx(arr, 0);
	assert_false(json_object_object_get_ex(e, "started", &v));
	assert_false(json_object_object_get_ex(e, "finished", &v));
	assert_false(json_object_object_get_ex(e, "bytes", &v));
	assert_false(json_object_object_get_ex(e, "erases", &v));
	assert_int_equal(record_history(dir, NULL, &recs, why, sizeof(why)), 0);
	assert_string_equal(why, "");
	assert_int_equal(json_object_array_length(recs), 2);
	/* GetHistory leaves out the one without times */
	assert_int_equal(proto_history(dir, NULL, &hist), 0);
	assert_true(json_object_object_get_ex(hist, "installs", &v));
	assert_int_equal(json_object_array_length(v), 1);
	e = json_object_array_get_idx(v, 0);
	assert_true(json_object_object_get_ex(e, "duration", &v));
	assert_int_equal(json_object_get_int64(v), 0);
}

/* Every field an install records comes back. */
TEST(test_fields_round_trip)
{
	char dir[] = "/tmp/flashd-test-record-XXXXXX";
	_cleanup_json_ struct json_object *arr = NULL;
	struct record r = { .started = 5, .finished = 9, .group = "rootfs", .slot = "A",
			    .version = "1.0", .result = "failed", .error_name =
			    "io.flashd.DowngradeRefused", .error = "older", .source =
			    "https://example.com/fw.bundle?***", .bytes_fetched = 123,
			    .running_version = "2.0", .downgrade = "refused" };
	struct json_object *e, *v;

	assert_non_null(mkdtemp(dir));
	assert_int_equal(record_append(dir, &r), 0);
	assert_int_equal(record_load(dir, &arr), 0);
	e = json_object_array_get_idx(arr, 0);
	assert_string_equal(field(e, "error_name"), "io.flashd.DowngradeRefused");
	assert_string_equal(field(e, "source"), "https://example.com/fw.bundle?***");
	assert_string_equal(field(e, "running_version"), "2.0");
	assert_string_equal(field(e, "downgrade"), "refused");
	assert_true(json_object_object_get_ex(e, "bytes_fetched", &v));
	assert_int_equal(json_object_get_int64(v), 123);
}
