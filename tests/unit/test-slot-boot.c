/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* slot_boot: the booted slot from a fake /proc/cmdline, a flashd.slot file
 * and the mounted root (a fake /sys and mountinfo), and the boot script. */
#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "cleanup.h"
#include "slot.h"
#include "slot_boot.h"
#include "slot-fake.h"
#include "testlib.h"
#include "util.h"

static int booted(const struct fake_layout *f, const char *cmdline, const char **by)
{
	struct error err = {};

	*by = NULL;
	return slot_booted_from_cmdline(cmdline, &f->l, &f->g, by, &err);
}

TEST(test_booted_cmdline)
{
	struct fake_layout f;
	struct error err = {};
	const char *by;

	fake_layout(&f, false);
	assert_int_equal(booted(&f, "console=ttyS0 flashd.slot=B quiet\n", &by), 1);
	assert_string_equal(by, "flashd.slot");
	assert_int_equal(booted(&f, "rauc.slot=A root=/dev/mtdblock3", &by), 0);
	assert_string_equal(by, "rauc.slot");
	/* flashd.slot wins over rauc.slot and root; the last occurrence counts */
	assert_int_equal(booted(&f, "flashd.slot=A rauc.slot=B flashd.slot=B", &by), 1);
	/* partitions count by offset: u-boot=0, rootfs_a=1, rootfs_b=2 */
	assert_int_equal(booted(&f, "root=/dev/mtdblock2 rootfstype=squashfs", &by), 1);
	assert_string_equal(by, "root");
	assert_int_equal(booted(&f, "root=/dev/mtdblock1", &by), 0);
	assert_int_equal(booted(&f, "x=\"a b\" root=mtd:rootfs_b", &by), 1);
	/* a root the layout does not know could be a slot: unknown, not none */
	assert_int_equal(slot_booted_from_cmdline("root=/dev/mtdblock0", &f.l, &f.g, &by, &err),
			 SLOT_BOOTED_UNKNOWN);
	assert_non_null(strstr(err.msg, "names no slot"));
	assert_int_equal(booted(&f, "root=31:4", &by), SLOT_BOOTED_UNKNOWN);
	assert_int_equal(booted(&f, "root=PARTUUID=0a1b2c3d-02", &by), SLOT_BOOTED_UNKNOWN);
	assert_int_equal(booted(&f, "ubi.mtd=4 ubi.block=0,1", &by), SLOT_BOOTED_UNKNOWN);
	assert_int_equal(booted(&f, "console=ttyS0 quiet", &by), -ENOENT);
	assert_int_equal(slot_booted_from_cmdline("flashd.slot=C", &f.l, &f.g, &by, &err),
			 -EBADMSG);
	assert_non_null(strstr(err.msg, "flashd.slot=C"));
	/* a quoted value with a space is one word */
	assert_int_equal(booted(&f, "foo=\"flashd.slot=A x\" flashd.slot=B", &by), 1);
	/* words after "--" are init's: the daemon must see the slot flashd
	 * boot mounted, or it would install into the running root */
	assert_int_equal(booted(&f, "flashd.slot=A -- flashd.slot=B", &by), 0);
	assert_int_equal(booted(&f, "root=/dev/mtdblock1 -- rauc.slot=B", &by), 0);
	assert_string_equal(by, "root");
	/* an empty flashd.slot= names no slot: rauc.slot= decides */
	assert_int_equal(booted(&f, "flashd.slot= rauc.slot=B", &by), 1);
	assert_string_equal(by, "rauc.slot");
	assert_int_equal(booted(&f, "flashd.slot=A flashd.slot=\"\"", &by), 0);

	fake_layout(&f, true);
	assert_int_equal(booted(&f, "ubi.mtd=ubi ubi.block=0,rootfs_b root=/dev/ubiblock0_2", &by), 1);
	assert_int_equal(booted(&f, "root=ubi0:rootfs_a", &by), 0);
	assert_int_equal(booted(&f, "root=/dev/ubiblock0_0", &by), SLOT_BOOTED_UNKNOWN);
}

TEST(test_booted_file)
{
	struct fake_layout f;
	struct error err = {};
	char path[] = "/tmp/flashd-test-cmdline-XXXXXX";
	int fd = mkstemp(path);
	const char *by = NULL;
	static const char text[] = "BOOT_IMAGE=/vmlinuz root=/dev/mtdblock2 flashd.slot=A ro\n";

	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	fake_layout(&f, false);
	assert_int_equal(slot_booted(&(struct slot_boot_where){ .cmdline = path,
								 .target = "sim:/x.sim" },
				     &f.l, &f.g, &by, &err), 0);
	assert_string_equal(by, "flashd.slot");
	unlink(path);
	assert_int_equal(slot_booted(&(struct slot_boot_where){ .cmdline = path,
								 .target = "sim:/x.sim" },
				     &f.l, &f.g, &by, &err), -ENOENT);
	assert_non_null(strstr(err.msg, path));
}

/* ---- the mounted root, in a fake /proc and /sys ---- */

/* root/rel with text in it, its directories made */
static void put(const char *root, const char *rel, const char *text)
{
	_cleanup_free_ char *path = testlib_asprintf("%s/%s", root, rel);
	FILE *f;

	*strrchr(path, '/') = '\0';
	assert_int_equal(util_mkdir_p(path, 0755), 0);
	path[strlen(path)] = '/';
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

/* /sys/dev/block/MAJ:MIN -> ../../devices/test/NAME, as the kernel links it */
static void blockdev(const char *root, const char *majmin, const char *name)
{
	_cleanup_free_ char *dev = testlib_asprintf("sys/devices/test/%s/dev", name);
	_cleanup_free_ char *link = testlib_asprintf("%s/sys/dev/block/%s", root, majmin);
	_cleanup_free_ char *to = testlib_asprintf("../../devices/test/%s", name);

	put(root, dev, majmin);
	put(root, "sys/dev/block/.keep", "");
	assert_int_equal(symlink(to, link), 0);
}

/* the fake system: MTD partitions 1 u-boot, 2 rootfs_a, 3 rootfs_b, 4 ubi
 * (attached as ubi0: volumes 1 rootfs_a, 2 rootfs_b), their block devices,
 * a dm-verity map over mtdblock3, a loop device and a disk */
static char *fake_system(void)
{
	static const char *const mtd[] = { NULL, "u-boot", "rootfs_a", "rootfs_b", "ubi" };
	char *root = testlib_tmp_dir("booted-sys");

	for (int i = 1; i <= 4; i++) {
		_cleanup_free_ char *rel = testlib_asprintf("sys/class/mtd/mtd%d/name", i);
		_cleanup_free_ char *majmin = testlib_asprintf("31:%d", i);
		_cleanup_free_ char *name = testlib_asprintf("mtdblock%d", i);
		put(root, rel, mtd[i]);
		blockdev(root, majmin, name);
	}
	put(root, "sys/class/ubi/ubi0/mtd_num", "4\n");
	for (int v = 1; v <= 2; v++) {
		static const char *const attr[][2] = { { "type", "static" },
			{ "usable_eb_size", "126976" }, { "reserved_ebs", "10" },
			{ "data_bytes", "1000" }, { "upd_marker", "0" }, { "corrupted", "0" } };
		_cleanup_free_ char *rel = testlib_asprintf("sys/class/ubi/ubi0/ubi0_%d/name", v);
		_cleanup_free_ char *majmin = testlib_asprintf("254:%d", v);
		_cleanup_free_ char *name = testlib_asprintf("ubiblock0_%d", v);
		put(root, rel, v == 1 ? "rootfs_a\n" : "rootfs_b\n");
		for (size_t a = 0; a < ELEMENTSOF(attr); a++) {
			_cleanup_free_ char *r2 = testlib_asprintf("sys/class/ubi/ubi0/ubi0_%d/%s", v,
								   attr[a][0]);
			put(root, r2, attr[a][1]);
		}
		blockdev(root, majmin, name);
	}
	blockdev(root, "253:0", "dm-0");
	put(root, "sys/devices/test/dm-0/slaves/mtdblock3/dev", "31:3\n");
	blockdev(root, "7:0", "loop0");
	blockdev(root, "8:1", "sda1");
	return root;
}

/* slot_booted() of the fake system with mountinfo lines and a command line */
static int booted_sys(const struct fake_layout *f, const char *root, const char *mounts,
		      const char *cmdline, const char **by, struct error *err)
{
	_cleanup_free_ char *proc = testlib_asprintf("%s/proc", root);
	_cleanup_free_ char *sys = testlib_asprintf("%s/sys", root);
	_cleanup_free_ char *cl = testlib_asprintf("%s/cmdline", root);

	put(root, "proc/self/mountinfo", mounts);
	put(root, "cmdline", cmdline);
	*by = NULL;
	*err = (struct error){ 0 };
	return slot_booted(&(struct slot_boot_where){ .cmdline = cl, .target = "system",
						     .proc = proc, .sys = sys },
			   &f->l, &f->g, by, err);
}

#define MI_PROC "22 1 0:5 / /proc rw - proc proc rw\n"

TEST(test_booted_mount)
{
	struct fake_layout f;
	struct error err;
	const char *by;
	char *root = fake_system();

	fake_layout(&f, false);
	/* the root's device, not the command line: root=31:4 or a stale
	 * flashd.slot= do not name what runs */
	assert_int_equal(booted_sys(&f, root, "1 0 31:2 / / ro - squashfs /dev/root ro\n" MI_PROC,
				    "root=31:2 flashd.slot=B", &by, &err), 0);
	assert_string_equal(by, "mounted root");
	/* flashd boot's union: the image at /rom, here under dm-verity */
	assert_int_equal(booted_sys(&f, root, "1 0 0:30 / / rw - overlay overlay rw,lowerdir=/st/rom\n"
				    "40 1 253:0 / /rom ro - squashfs /dev/dm-0 ro\n", "root=PARTUUID=x",
				    &by, &err), 1);
	/* a union without the image at /rom: unknown, unless the command line names it */
	assert_int_equal(booted_sys(&f, root, "1 0 0:30 / / rw - overlay overlay rw\n", "root=31:4",
				    &by, &err), SLOT_BOOTED_UNKNOWN);
	assert_non_null(strstr(err.msg, "/rom"));
	assert_non_null(strstr(err.msg, "flashd.slot=NAME"));
	assert_int_equal(booted_sys(&f, root, "1 0 0:30 / / rw - overlay overlay rw\n",
				    "flashd.slot=A", &by, &err), 0);
	assert_string_equal(by, "flashd.slot");
	/* a loop device or a number sysfs does not know: unknown */
	assert_int_equal(booted_sys(&f, root, "1 0 7:0 / / ro - squashfs /dev/loop0 ro\n", "",
				    &by, &err), SLOT_BOOTED_UNKNOWN);
	assert_non_null(strstr(err.msg, "loop0"));
	assert_int_equal(booted_sys(&f, root, "1 0 179:2 / / ro - squashfs /dev/root ro\n", "",
				    &by, &err), SLOT_BOOTED_UNKNOWN);
	assert_non_null(strstr(err.msg, "179:2"));
	/* on no slot: a disk, the network, another partition of the flash */
	assert_int_equal(booted_sys(&f, root, "1 0 8:1 / / rw - ext4 /dev/sda1 rw\n", "root=31:2",
				    &by, &err), -ENOENT);
	assert_int_equal(booted_sys(&f, root, "1 0 0:31 / / rw - 9p host rw\n", "", &by, &err),
			 -ENOENT);
	assert_int_equal(booted_sys(&f, root, "1 0 31:1 / / ro - jffs2 mtd:u-boot ro\n", "", &by,
				    &err), -ENOENT);
	/* ... where a slot that the command line names counts as running */
	assert_int_equal(booted_sys(&f, root, "1 0 0:31 / / rw - 9p host rw\n", "flashd.slot=B",
				    &by, &err), 1);
	/* no mountinfo: unknown */
	assert_int_equal(booted_sys(&f, root, "", "", &by, &err), SLOT_BOOTED_UNKNOWN);

	fake_layout(&f, true);
	assert_int_equal(booted_sys(&f, root, "1 0 254:2 / / ro - squashfs /dev/ubiblock0_2 ro\n",
				    "flashd.slot=A", &by, &err), 1);
	assert_int_equal(booted_sys(&f, root, "1 0 0:20 / / rw - ubifs ubi0:rootfs_a rw\n", "",
				    &by, &err), 0);
	assert_int_equal(booted_sys(&f, root, "1 0 0:20 / / rw - ubifs ubi0_2 rw\n", "", &by, &err),
			 1);
	/* a squashfs on the UBI partition's mtdblock is no slot's volume */
	assert_int_equal(booted_sys(&f, root, "1 0 31:4 / / ro - squashfs /dev/mtdblock4 ro\n", "",
				    &by, &err), -ENOENT);
	testlib_rm_rf(root);
	free(root);
}

TEST(test_bootscript)
{
	struct fake_layout f;
	char *buf = NULL;
	size_t len = 0;
	FILE *out;

	fake_layout(&f, false);
	out = open_memstream(&buf, &len);
	assert_int_equal(slot_bootscript(&f.l, out), 0);
	fclose(out);
	static const char *const want[] = {
		"test -n \"${BOOT_ORDER}\" || setenv BOOT_ORDER \"A B\"\n",
		"test -n \"${BOOT_B_LEFT}\" || setenv BOOT_B_LEFT 3\n",
		"for s in ${BOOT_ORDER}; do\n",
		"test \"${s}\" = \"B\" && test ${BOOT_B_LEFT} -gt 0; then\n",
		"setexpr BOOT_B_LEFT ${BOOT_B_LEFT} - 1\n",
		"setenv flashd_root \"root=/dev/mtdblock2 rootfstype=squashfs ro\"\n",
		"setenv flashd_kernel_load 'mtd read u-boot ${kernel_addr_r}'\n",
		/* none left: only the slots in BOOT_ORDER get their tries back */
		"  for s in ${BOOT_ORDER}; do\n"
		"    if test \"${s}\" = \"A\"; then setenv BOOT_A_LEFT 3; fi\n"
		"    if test \"${s}\" = \"B\"; then setenv BOOT_B_LEFT 3; fi\n"
		"  done\n  saveenv\n  reset\n",
		"flashd.slot=${flashd_slot}\"\n",
		"run flashd_boot_cmd\n",
	};
	for (size_t i = 0; i < ELEMENTSOF(want); i++)
		if (!strstr(buf, want[i]))
			fail_msg("boot script lacks '%s':\n%s", want[i], buf);
	free(buf);

	/* UBI: squashfs needs the volume's block device (root=ubiN:vol is
	 * UBIFS only), named by the volume id the layout's index gives it */
	fake_layout(&f, true);
	out = open_memstream(&buf, &len);
	assert_int_equal(slot_bootscript(&f.l, out), 0);
	fclose(out);
	if (!strstr(buf, "ubi.block=0,rootfs_b root=/dev/ubiblock0_2 rootfstype=squashfs ro"))
		fail_msg("boot script lacks slot B's ubiblock root:\n%s", buf);
	assert_null(strstr(buf, "root=ubi0:"));
	free(buf);

	f.g.max_tries = 12;
	out = open_memstream(&buf, &len);
	assert_int_equal(slot_bootscript(&f.l, out), -EINVAL);
	fclose(out);
	free(buf);
}

/* ---- issue 13: the install record and the invariants ---- */

