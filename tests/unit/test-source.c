/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "cleanup.h"
#include "source.h"
#include "testlib.h"

/* A regular file: random access, sequential reads and preads do not
 * disturb each other, every byte read is counted. */
TEST(test_file)
{
	_cleanup_(testlib_unlinkp) char *path = testlib_tmp_file("source-file");
	_cleanup_close_ int fd = -1;
	_cleanup_source_ struct source *s = NULL;
	struct error err = { 0 };
	char buf[16];

	(void)state;
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "0123456789", 10), 10);
	assert_int_equal(source_new_fd(fd, &s, &err), 0);
	assert_string_equal(s->ops->kind, "file");
	assert_true(source_can_pread(s));
	assert_int_equal(s->size, 10);
	assert_int_equal(source_read(s, buf, 4, &err), 4);
	assert_memory_equal(buf, "0123", 4);
	assert_int_equal(source_pread(s, buf, 3, 7, &err), 3);
	assert_memory_equal(buf, "789", 3);
	/* short only at the end */
	assert_int_equal(source_pread(s, buf, 8, 6, &err), 4);
	assert_int_equal(source_read(s, buf, 16, &err), 6);
	assert_memory_equal(buf, "456789", 6);
	assert_int_equal(source_read(s, buf, 16, &err), 0);
	assert_int_equal(s->fetched, 4 + 3 + 4 + 6);
	/* a plan is harmless where there is nothing to coalesce */
	assert_int_equal(source_plan(s, &(struct source_range){ 0, 4 }, 1, &err), 0);
}

/* A pipe: a stream, no pread (refused with a message, not a crash). */
TEST(test_stream)
{
	_cleanup_source_ struct source *s = NULL;
	struct error err = { 0 };
	int p[2];
	char buf[8];

	(void)state;
	assert_int_equal(pipe2(p, O_CLOEXEC), 0);
	assert_int_equal(write(p[1], "abc", 3), 3);
	close(p[1]);
	assert_int_equal(source_new_fd(p[0], &s, &err), 0);
	assert_string_equal(s->ops->kind, "stream");
	assert_false(source_can_pread(s));
	assert_int_equal(s->size, 0);
	assert_int_equal(source_pread(s, buf, 1, 0, &err), -ESPIPE);
	assert_non_null(strstr(err.msg, "no random access"));
	assert_int_equal(source_read(s, buf, sizeof(buf), &err), 3);
	assert_int_equal(source_read(s, buf, sizeof(buf), &err), 0);
	assert_int_equal(s->fetched, 3);
	close(p[0]);
}
