/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* lib/base: the one error type (error_set / error_prefix), the enum<->string
 * table macro (util: test-util). */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "cleanup.h"
#include "cleanup_json.h"
#include "error.h"
#include "hash.h"
#include "util.h"
#include "testlib.h"

enum color { COLOR_RED, COLOR_GREEN, COLOR_BLUE, _COLOR_MAX };
const char *color_to_string(enum color v);
int color_from_string(const char *s);
static const char *const color_table[_COLOR_MAX] = {
	[COLOR_RED] = "red", [COLOR_GREEN] = "green", [COLOR_BLUE] = "blue",
};
DEFINE_STRING_TABLE(color, enum color)

static int inner(struct error *err)
{
	return error_set(err, -EIO, "read at 0x%x", 0x20000);
}

static int outer(struct error *err)
{
	int r = inner(err);

	return r < 0 ? error_prefix(err, r, "slot %s", "A") : r;
}

TEST(test_set_and_prefix)
{
	struct error err = {};

	(void)state;
	assert_false(error_is_set(&err));
	assert_string_equal(error_message(&err), "");
	assert_int_equal(outer(&err), -EIO);
	assert_true(error_is_set(&err));
	assert_int_equal(err.code, EIO);
	assert_string_equal(err.msg, "slot A: read at 0x20000");
	assert_int_equal(error_prefix(&err, -EIO, "install"), -EIO);
	assert_string_equal(error_message(&err), "install: slot A: read at 0x20000");
	error_clear(&err);
	assert_false(error_is_set(&err));
	/* NULL: the caller wants only the code */
	assert_int_equal(outer(NULL), -EIO);
}

TEST(test_prefix_without_message)
{
	struct error err = {};

	(void)state;
	assert_int_equal(error_prefix(&err, -ENOENT, "keyring %s", "/etc/keys"), -ENOENT);
	assert_int_equal(err.code, ENOENT);
	assert_string_equal(err.msg, "keyring /etc/keys: No such file or directory");
}

TEST(test_copy)
{
	struct error saved = {}, out = {};

	(void)state;
	error_set(&saved, -EBADMSG, "manifest: signature of %s", "key A");
	error_set(&out, -EIO, "an older message, longer than the copied one is");
	error_copy(&out, &saved);
	assert_int_equal(out.code, EBADMSG);
	assert_string_equal(out.msg, "manifest: signature of key A");
	error_copy(NULL, &saved); /* a caller that wants only the code */
	error_copy(&saved, &saved);
	assert_string_equal(saved.msg, "manifest: signature of key A");
}

TEST(test_json_string_or_null)
{
	_cleanup_json_ struct json_object *s = json_string_or_null("A");

	(void)state;
	assert_non_null(s);
	assert_string_equal(json_object_get_string(s), "A");
	assert_null(json_string_or_null(NULL));
}

TEST(test_prefix_truncates_inside)
{
	struct error err = {};
	char big[2 * ERROR_MSG_MAX];

	(void)state;
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = 0;
	error_set(&err, -EINVAL, "%s", big);
	assert_int_equal(strlen(err.msg), ERROR_MSG_MAX - 1);
	error_prefix(&err, -EINVAL, "what");
	assert_int_equal(strlen(err.msg), ERROR_MSG_MAX - 1);
	assert_memory_equal(err.msg, "what: xxx", 9);
	/* a prefix longer than the buffer still leaves a terminated string */
	error_prefix(&err, -EINVAL, "%s", big);
	assert_int_equal(strlen(err.msg), ERROR_MSG_MAX - 1);
}

/* FIPS 180-2's vectors; fed in pieces of every split, and hash_final
 * starting over (the readers hash block after block in one struct). */
TEST(test_hash)
{
	static const char abc[] = "abc";
	static const char two[] = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
	char hex[2 * HASH_SIZE + 1];
	uint8_t md[HASH_SIZE], again[HASH_SIZE];
	struct hash h;

	hash_buf(abc, 3, md);
	util_hex(md, HASH_SIZE, hex);
	assert_string_equal(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
	hash_buf(two, strlen(two), md);
	util_hex(md, HASH_SIZE, hex);
	assert_string_equal(hex, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
	hash_init(&h);
	for (size_t cut = 0; cut <= strlen(two); cut++) {
		hash_update(&h, two, cut);
		hash_update(&h, two + cut, strlen(two) - cut);
		hash_final(&h, again);
		assert_memory_equal(md, again, HASH_SIZE);
	}
}

TEST(test_string_table)
{
	(void)state;
	assert_string_equal(color_to_string(COLOR_GREEN), "green");
	assert_null(color_to_string(_COLOR_MAX));
	assert_null(color_to_string((enum color)-1));
	assert_int_equal(color_from_string("blue"), COLOR_BLUE);
	assert_int_equal(color_from_string("purple"), -EINVAL);
	assert_int_equal(color_from_string(NULL), -EINVAL);
}
