/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The board: the target string parsed in one place, simulator files per
 * device, partition windows and the file offsets libubootenv is given. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "board.h"
#include "cleanup.h"
#include "flash.h"
#include "layout.h"
#include "layout_parse.h"
#include "nsim.h"
#include "oplock.h"
#include "util.h"
#include "testlib.h"

#define ES (128u * 1024)

/* Two NOR chips of 2 MiB: partitions "a" and "b" on the first (b at 1 MiB),
 * "c" on the second. */
static const char two_devices[] =
	"{\"board\": \"b\", \"compatible\": \"c\", \"devices\": ["
	"{\"name\": \"nor0\", \"type\": \"nor\", \"size\": \"2MiB\", \"erase_block\": \"128KiB\"},"
	"{\"name\": \"nor1\", \"type\": \"nor\", \"size\": \"2MiB\", \"erase_block\": \"128KiB\"}],"
	"\"partitions\": ["
	"{\"name\": \"a\", \"device\": \"nor0\", \"offset\": 0, \"size\": \"1MiB\"},"
	"{\"name\": \"b\", \"device\": \"nor0\", \"offset\": \"1MiB\", \"size\": \"1MiB\"},"
	"{\"name\": \"c\", \"device\": \"nor1\", \"offset\": 0, \"size\": \"2MiB\"}],"
	"\"slots\": [{\"name\": \"rootfs\", \"slots\": {"
	"\"A\": {\"rootfs\": {\"storage\": \"nor\", \"partition\": \"a\"}},"
	"\"B\": {\"rootfs\": {\"storage\": \"nor\", \"partition\": \"b\"}}}}],"
	"\"overlays\": [{\"type\": \"tmpfs\"}]}";

struct fx {
	char dir[64];
	char target[80];
	struct layout *l;
};

/* The simulator of device dev in the board directory (a NOR chip of size) */
static void make_chip(struct fx *fx, const char *dev, uint64_t size)
{
	struct nsim_geometry g = { NSIM_NOR, size, ES, 1, 0 };
	_cleanup_free_ char *path = testlib_asprintf("%s/%s.sim", fx->dir, dev);

	assert_int_equal(nsim_create(path, &g, NSIM_CREATE_FORCE), 0);
}

static int setup(void **state)
{
	struct fx *fx = calloc(1, sizeof(*fx));
	struct error err = {};

	assert_non_null(fx);
	snprintf(fx->dir, sizeof(fx->dir), "/tmp/test-board-XXXXXX");
	assert_non_null(mkdtemp(fx->dir));
	snprintf(fx->target, sizeof(fx->target), "sim:%s", fx->dir);
	if (layout_parse(two_devices, "two.json", &fx->l, &err) < 0)
		fail_msg("%s", err.msg);
	for (size_t i = 0; i < fx->l->n_devices; i++)
		make_chip(fx, fx->l->devices[i].name, 2u << 20);
	*state = fx;
	return 0;
}

static int teardown(void **state)
{
	struct fx *fx = *state;

	testlib_rm_rf(fx->dir); /* the chips, the oplock */
	layout_free(fx->l);
	free(fx);
	return 0;
}

TEST(test_target_parse)
{
	static const struct {
		const char *target;
		int kind;
		const char *path;
	} cases[] = {
		{ NULL, BOARD_TARGET_SYSTEM, NULL },
		{ "", BOARD_TARGET_SYSTEM, NULL },
		{ "system", BOARD_TARGET_SYSTEM, NULL },
		{ "sim:/x/y.sim", BOARD_TARGET_SIM, "/x/y.sim" },
		{ "sim:rel", BOARD_TARGET_SIM, "rel" },
		{ "sim:", -EINVAL, NULL },
		{ "sim", -EINVAL, NULL },
		{ "System", -EINVAL, NULL },
		{ "system ", -EINVAL, NULL },
		{ "simx:/a", -EINVAL, NULL },
		{ "/dev/mtd0", -EINVAL, NULL },
		{ "image:/tmp/x", -EINVAL, NULL },
	};

	(void)state;
	for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
		const char *path = "untouched";
		int r = board_target_parse(cases[i].target, &path);

		if (r != cases[i].kind)
			fail_msg("'%s': %d, expected %d", cases[i].target ? cases[i].target : "(null)",
				 r, cases[i].kind);
		if (cases[i].path)
			assert_string_equal(path, cases[i].path);
		else
			assert_null(path);
	}
	/* the path points into the string: no copy to free */
	const char *t = "sim:/p", *p;
	assert_int_equal(board_target_parse(t, &p), BOARD_TARGET_SIM);
	assert_ptr_equal(p, t + 4);
	assert_int_equal(board_target_parse(t, NULL), BOARD_TARGET_SIM);
}

/* board_open, board_sim_device_path and oplock_path agree on what a
 * target is (they parsed it three ways before). */
TEST_FIXTURE(test_target_users_agree, setup, teardown)
{
	struct fx *fx = *state;
	static const char *const bad[] = { "sim:", "bogus", "sim", "System" };
	_cleanup_free_ char *lock = NULL, *path = NULL;
	struct board *b = NULL;

	for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
		char *p = NULL;

		assert_int_equal(board_open(fx->l, bad[i], false, &b), -EINVAL);
		assert_null(b);
		assert_int_equal(oplock_path(bad[i], &p), -EINVAL);
		assert_int_equal(board_sim_device_path(bad[i], fx->l, &fx->l->devices[0], &p),
				 -EINVAL);
		assert_null(p);
	}
	assert_int_equal(board_sim_device_path("system", fx->l, &fx->l->devices[0], &path),
			 -EINVAL);
	assert_int_equal(oplock_path(fx->target, &lock), 0);
	assert_true(!strncmp(lock, fx->dir, strlen(fx->dir)));
}

TEST_FIXTURE(test_sim_device_path, setup, teardown)
{
	struct fx *fx = *state;
	_cleanup_free_ char *p0 = NULL, *p1 = NULL, *target = NULL;
	char *p = NULL;
	char want[128];

	assert_int_equal(board_sim_device_path(fx->target, fx->l, &fx->l->devices[1], &p1), 0);
	snprintf(want, sizeof(want), "%s/nor1.sim", fx->dir);
	assert_string_equal(p1, want);
	/* a plain file names the only device: a two-device layout refuses it */
	assert_true(asprintf(&target, "sim:%s/nor0.sim", fx->dir) > 0);
	assert_int_equal(board_sim_device_path(target, fx->l, &fx->l->devices[0], &p), -ENOTDIR);
	assert_null(p);
	/* a directory that is not there is missing, not "a directory" */
	free(target);
	assert_true(asprintf(&target, "sim:%s/nowhere", fx->dir) > 0);
	assert_int_equal(board_sim_device_path(target, fx->l, &fx->l->devices[0], &p), -ENOENT);
	assert_null(p);
	free(target);
	assert_true(asprintf(&target, "sim:%s/nor0.sim", fx->dir) > 0);
	fx->l->n_devices = 1;
	assert_int_equal(board_sim_device_path(target, fx->l, &fx->l->devices[0], &p0), 0);
	fx->l->n_devices = 2;
	assert_string_equal(p0, target + 4);
}

/* A write through partition b's window lands at b's offset on nor0, and
 * the file offset handed to libubootenv reaches the same bytes. */
TEST_FIXTURE(test_partition_window_and_path, setup, teardown)
{
	struct fx *fx = *state;
	_cleanup_board_ struct board *b = NULL;
	_cleanup_free_ char *path = NULL;
	_cleanup_close_ int fd = -1;
	struct flash *f = NULL;
	struct nsim *s = NULL;
	uint8_t buf[16], got[16];
	uint64_t off = 0;
	char chip[128];

	memcpy(buf, "board-test-bytes", sizeof(buf));
	assert_int_equal(board_open(fx->l, fx->target, true, &b), 0);
	assert_true(board_is_sim(b));
	assert_int_equal(board_open_partition_by_name(b, "nope", &f), -ENOENT);
	assert_int_equal(board_open_partition_by_name(b, "b", &f), 0);
	assert_int_equal(f->info.size, 1u << 20);
	assert_int_equal(flash_erase_block(f, ES), 0);
	assert_int_equal(flash_write(f, ES, buf, sizeof(buf)), 0);
	flash_close(f);

	snprintf(chip, sizeof(chip), "%s/nor0.sim", fx->dir);
	assert_int_equal(nsim_open(chip, false, &s), 0);
	assert_int_equal(nsim_read(s, (1u << 20) + ES, got, sizeof(got)), 0);
	nsim_close(s);
	assert_memory_equal(got, buf, sizeof(buf));

	assert_int_equal(board_partition_path(b, layout_find_partition(fx->l, "b"), &path, &off), 0);
	assert_int_equal(off, nsim_data_offset() + (1u << 20));
	fd = open(path, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	memset(got, 0, sizeof(got));
	assert_int_equal(util_pread_full(fd, got, sizeof(got), off + ES), (ssize_t)sizeof(got));
	assert_memory_equal(got, buf, sizeof(buf));
}

/* A simulator of another geometry than the layout's device is refused
 * before anything is written. */
TEST_FIXTURE(test_wrong_chip_refused, setup, teardown)
{
	struct fx *fx = *state;
	_cleanup_board_ struct board *b = NULL;
	struct flash *f = NULL;

	make_chip(fx, "nor1", 4u << 20);
	assert_int_equal(board_open(fx->l, fx->target, true, &b), 0);
	assert_int_equal(board_open_partition_by_name(b, "c", &f), -EMEDIUMTYPE);
	assert_null(f);
	/* the other chip is still usable */
	assert_int_equal(board_open_partition_by_name(b, "a", &f), 0);
	flash_close(f);
}

/* A board opened read-only hands out windows that refuse writes and
 * erases; a simulator file that is not there is -ENOENT at first use. */
TEST_FIXTURE(test_read_only_and_missing, setup, teardown)
{
	struct fx *fx = *state;
	_cleanup_board_ struct board *b = NULL, *gone = NULL;
	struct flash *f = NULL;
	uint8_t buf[16] = { 0 };

	assert_int_equal(board_open(fx->l, fx->target, false, &b), 0);
	assert_int_equal(board_open_partition_by_name(b, "a", &f), 0);
	assert_int_equal(flash_read(f, 0, buf, sizeof(buf)), 0);
	assert_true(flash_write(f, 0, buf, sizeof(buf)) < 0);
	assert_true(flash_erase_block(f, 0) < 0);
	flash_close(f);
	f = NULL;

	/* (one device: a plain path names its file) */
	fx->l->n_devices = 1;
	assert_int_equal(board_open(fx->l, "sim:/nonexistent/flashd-test.sim", false, &gone), 0);
	assert_int_equal(board_open_partition_by_name(gone, "a", &f), -ENOENT);
	board_close(TAKE_PTR(gone));
	fx->l->n_devices = 2;
	assert_null(f);
}
