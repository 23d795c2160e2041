/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Unit tests of the board's operation lock (lib/board/oplock.c) on a
 * simulated target: where the lock lives, that a second taker is refused
 * at once and told who holds it, that a forked child keeps the lock after
 * its parent let go, and that the lock frees when the last holder exits. */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "cleanup.h"
#include "oplock.h"
#include "testlib.h"

static char dir[] = "/tmp/flashd-test-oplock-XXXXXX";
static char target[128];

static int setup(void **state)
{
	assert_non_null(mkdtemp(dir));
	snprintf(target, sizeof(target), "sim:%s/board.sim", dir);
	return 0;
}

static int teardown(void **state)
{
	char p[160];

	snprintf(p, sizeof(p), "%s/board.sim.oplock", dir);
	unlink(p);
	snprintf(p, sizeof(p), "%s/flashd.oplock", dir);
	unlink(p);
	rmdir(dir);
	return 0;
}

TEST(test_path)
{
	_cleanup_free_ char *p = NULL, *q = NULL, *s = NULL;
	char want[160];

	assert_int_equal(oplock_path(target, &p), 0);
	snprintf(want, sizeof(want), "%s/board.sim.oplock", dir);
	assert_string_equal(p, want);
	/* a simulator directory keeps the lock inside it */
	snprintf(want, sizeof(want), "sim:%s", dir);
	assert_int_equal(oplock_path(want, &q), 0);
	snprintf(want, sizeof(want), "%s/flashd.oplock", dir);
	assert_string_equal(q, want);
	assert_int_equal(oplock_path("system", &s), 0);
	assert_string_equal(s, OPLOCK_SYSTEM_FILE);
	assert_int_equal(oplock_path("sim:", &p), -EINVAL);
	assert_int_equal(oplock_path("/dev/mtd0", &p), -EINVAL);
}

TEST(test_busy_names_holder)
{
	_cleanup_oplock_ struct oplock *a = NULL;
	struct oplock *b = NULL;
	struct oplock_holder h;
	char buf[96];

	assert_int_equal(oplock_acquire(target, "first writer", &a, NULL), 0);
	/* a second open file is refused at once, and told who holds it */
	assert_int_equal(oplock_acquire(target, "second", &b, &h), -EBUSY);
	assert_null(b);
	assert_int_equal(h.pid, getpid());
	assert_string_equal(h.what, "first writer");
	oplock_holder_describe(&h, buf, sizeof(buf));
	assert_non_null(strstr(buf, "(first writer)"));
	oplock_release(TAKE_PTR(a));
	assert_int_equal(oplock_acquire(target, "second", &b, NULL), 0);
	oplock_release(b);
}

/* The daemon's pattern: take, fork, the child names itself, the parent
 * lets go; the lock stays taken until the child exits. */
TEST(test_child_keeps_lock)
{
	struct oplock *l = NULL, *other = NULL;
	struct oplock_holder h;
	int p[2], status;
	pid_t pid;
	char c;

	assert_int_equal(oplock_acquire(target, "parent", &l, NULL), 0);
	assert_int_equal(pipe(p), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(p[1]);
		oplock_set_holder(l, getpid(), "child");
		(void) !read(p[0], &c, 1); /* until the parent says so */
		_exit(0);
	}
	close(p[0]);
	oplock_release(l);
	/* wait until the child named itself */
	for (int i = 0; i < 200; i++) {
		assert_int_equal(oplock_acquire(target, "x", &other, &h), -EBUSY);
		if (h.pid == pid)
			break;
		usleep(10000);
	}
	assert_int_equal(h.pid, pid);
	assert_string_equal(h.what, "child");
	close(p[1]); /* the child exits */
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_int_equal(oplock_acquire(target, "after", &other, NULL), 0);
	oplock_release(other);
}

TEST_GROUP(setup, teardown);
