/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* boot/boot_root: the block device flashd boot mounts for a slot. Here:
 * every kind has a name (the state file's "root.kind"), a slot whose
 * storage cannot be found fails with a message naming the partition,
 * volume or file and where it was looked for, leaving the result alone,
 * and (as root, with the loop driver) a file slot becomes a read-only,
 * auto-clearing loop device holding the image. MTD, dm-linear and
 * ubiblock on real devices: tests/vm/test-boot-*.sh. */
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

#include "boot/boot_root.h"
#include "cleanup.h"
#include "testlib.h"
#include "util.h"

/* a name no MTD partition of a test machine has */
static struct layout_partition nowhere = { .name = (char *)"flashd-test-no-such-mtd" };

TEST(test_kind_names)
{
	static const char *const want[_BOOT_ROOT_KIND_MAX] = {
		[BOOT_ROOT_MTDBLOCK] = "mtdblock", [BOOT_ROOT_DM_LINEAR] = "dm-linear",
		[BOOT_ROOT_UBIBLOCK] = "ubiblock", [BOOT_ROOT_LOOP] = "loop",
		[BOOT_ROOT_DEVICE] = "device",
	};

	(void)state;
	for (int k = 0; k < _BOOT_ROOT_KIND_MAX; k++) {
		assert_non_null(want[k]); /* a new kind needs its name here and in docs/boot.md */
		assert_string_equal(boot_root_kind_to_string(k), want[k]);
	}
	assert_null(boot_root_kind_to_string(_BOOT_ROOT_KIND_MAX));
}

/* setup_fails TARGET WANT-ERRNO MESSAGE-PARTS...: refused, *ret untouched */
static void setup_fails(const struct layout_image_target *t, int want, const char *const *parts)
{
	struct boot_root res;
	struct error err = {};
	int r;

	memset(&res, 0x5a, sizeof(res));
	r = boot_root_setup(NULL, t, "flashd-test", &res, &err);
	assert_int_equal(r, want);
	assert_int_equal(err.code, -want);
	for (; *parts; parts++)
		if (!strstr(error_message(&err), *parts))
			fail_msg("\"%s\" does not say \"%s\"", error_message(&err), *parts);
	for (size_t i = 0; i < sizeof(res); i++)
		assert_int_equal(((uint8_t *)&res)[i], 0x5a);
}

TEST(test_missing_storage)
{
	const struct layout_image_target nand = { LAYOUT_STORAGE_NAND, &nowhere, NULL, NULL };
	const struct layout_image_target nor = { LAYOUT_STORAGE_NOR, &nowhere, NULL, NULL };
	const struct layout_image_target ubi = { LAYOUT_STORAGE_UBI, &nowhere, (char *)"rootfs_a", NULL };
	const struct layout_image_target file = { LAYOUT_STORAGE_FILE, NULL, NULL,
						  (char *)"/nonexistent/flashd-test/a.sqfs" };
	static const char *const mtd_msg[] = { "partition flashd-test-no-such-mtd",
					       FLASH_MTD_SYSFS, NULL };
	static const char *const file_msg[] = { "image file /nonexistent/flashd-test/a.sqfs",
						"No such file", NULL };

	(void)state;
	setup_fails(&nand, -ENODEV, mtd_msg);
	setup_fails(&nor, -ENODEV, mtd_msg);
	setup_fails(&ubi, -ENODEV, mtd_msg); /* UBI is attached to its MTD partition first */
	setup_fails(&file, -ENOENT, file_msg);
}

TEST(test_missing_ubi_volume)
{
	(void)state;
	/* no such UBI device */
	assert_int_equal(boot_root_ubi_volume(987, "rootfs_a"), -ENOENT);
}

TEST(test_done_is_idempotent)
{
	struct boot_root r = { .hold_fd = open("/dev/null", O_RDONLY | O_CLOEXEC) };

	(void)state;
	assert_true(r.hold_fd >= 0);
	r.dm_table = strdup("0 8 linear 31:4 0");
	boot_root_done(&r);
	assert_int_equal(r.hold_fd, -1);
	assert_null(r.dm_table);
	boot_root_done(&r);
	boot_root_done(NULL);
}

TEST(test_file_slot_on_loop)
{
	_cleanup_unlink_ char *img = testlib_tmp_file("boot-root");
	_cleanup_free_ char *sys = NULL;
	_cleanup_close_ int fd = -1;
	struct layout_image_target t = { LAYOUT_STORAGE_FILE, NULL, NULL, img };
	struct boot_root res = { .hold_fd = -1 };
	struct error err = {};
	char data[8192], back[sizeof(data)];
	struct stat st;

	(void)state;
	if (geteuid() != 0 || access("/dev/loop-control", R_OK | W_OK) < 0)
		skip(); /* the harness and test-boot-state run it where it can */
	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = (char)(i ^ 0x3c);
	fd = open(img, O_WRONLY | O_CLOEXEC);
	assert_int_equal(util_write_full(fd, data, sizeof(data)), (ssize_t)sizeof(data));
	close(TAKE_FD(fd));

	if (boot_root_setup(NULL, &t, "flashd-test", &res, &err) < 0)
		fail_msg("loop setup of %s: %s", img, error_message(&err));
	assert_int_equal(res.kind, BOOT_ROOT_LOOP);
	assert_string_equal(res.source, img);
	assert_int_equal(strncmp(res.device, "/dev/loop", 9), 0);
	assert_true(res.hold_fd >= 0);
	assert_int_equal(stat(res.device, &st), 0);
	assert_true(S_ISBLK(st.st_mode));

	/* the image, read-only */
	fd = open(res.device, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(util_read_full(fd, back, sizeof(back)), (ssize_t)sizeof(back));
	assert_memory_equal(back, data, sizeof(data));
	close(TAKE_FD(fd));
	sys = testlib_asprintf("/sys/block/%s/ro", res.device + strlen("/dev/"));
	assert_int_equal(util_read_line(sys, back, sizeof(back)), 0);
	assert_string_equal(back, "1");
	free(sys);

	/* auto-clear: once the last holder closes, the device lets go of the file */
	sys = testlib_asprintf("/sys/block/%s/loop/backing_file", res.device + strlen("/dev/"));
	assert_int_equal(access(sys, F_OK), 0);
	boot_root_done(&res);
	for (int i = 0; i < 100 && access(sys, F_OK) == 0; i++)
		usleep(10000);
	assert_int_not_equal(access(sys, F_OK), 0);
}
