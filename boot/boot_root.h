/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The read-only root (and extra lower layers) of flashd boot: the block
 * device that holds a slot's squashfs, made from what the layout says:
 *   NOR                mtdblock of the partition
 *   NAND, image clean  mtdblock (no bad block among the image's blocks)
 *   NAND, bad blocks   a device-mapper linear map over the mtdblock that
 *                      steps over the bad blocks (boot_dm.h), the same
 *                      skipping flashd's writer (and nandwrite) used
 *   UBI volume         ubiblock (UBI attached first if needed)
 *   file               a read-only loop device
 * Only syscalls and ioctls: no mtd-utils, no losetup, no dmsetup. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "error.h"
#include "layout.h"

#define BOOT_ROOT_UBI_SYSFS "/sys/class/ubi"

#define BOOT_ROOT_KIND_LIST(X)                       \
	X(BOOT_ROOT_MTDBLOCK, "mtdblock")            \
	X(BOOT_ROOT_DM_LINEAR, "dm-linear")          \
	X(BOOT_ROOT_UBIBLOCK, "ubiblock")            \
	X(BOOT_ROOT_LOOP, "loop")                    \
	/* given on the command line (--root-dev) */ \
	X(BOOT_ROOT_DEVICE, "device")

enum boot_root_kind {
	BOOT_ROOT_KIND_LIST(STRING_TABLE_ENUM)
	_BOOT_ROOT_KIND_MAX,
};

struct boot_root {
	enum boot_root_kind kind;
	char device[128];      /* block device to mount */
	char source[160];      /* what it is made from: /dev/mtd4, ubi0:rootfs_a, /data/a.sqfs */
	uint64_t image_bytes;  /* squashfs bytes_used (0 = not read) */
	uint64_t bad_blocks;   /* bad blocks inside the partition */
	uint64_t bad_inside;   /* bad blocks stepped over by the dm map */
	char dm_name[64];
	char *dm_table;        /* dmsetup-style table (malloc'd) */
	int hold_fd;           /* loop: keeps the autoclear device until mounted */
};

const char *boot_root_kind_to_string(enum boot_root_kind k);

/* Set up the device for target t (a slot's rootfs or a lower). dm_name
 * names the device-mapper device if one is needed. err says what failed
 * and where. ret->hold_fd must be closed (boot_root_done) after mounting. */
int boot_root_setup(const struct layout *l, const struct layout_image_target *t,
		    const char *dm_name, struct boot_root *ret, struct error *err);
void boot_root_done(struct boot_root *r);

/* UBI device number the MTD partition p is attached as; attaches it
 * (UBI_IOCATT on /dev/ubi_ctrl) when it is not. */
int boot_root_ubi_attach(const struct layout *l, const struct layout_partition *p,
			 struct error *err);
/* Volume id of name on UBI device ubi_num, from sysfs; -ENOENT. */
int boot_root_ubi_volume(int ubi_num, const char *name);
/* "/dev/mtdN" of partition p (looked up by MTD name in sysfs). */
int boot_root_mtd_dev(const struct layout_partition *p, char *buf, size_t len, struct error *err);
