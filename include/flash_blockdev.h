/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* What a block device is on the flash, as sysfs says it: the device
 * numbers stat() and /proc/self/mountinfo give, resolved through
 * /sys/dev/block to an MTD partition (mtdblockN, or major 31 for a JFFS2
 * mount), a UBI volume (ubiblockX_Y), or the devices a stack (dm-verity,
 * dm-linear) is built on (slaves/). The sys arguments are the sysfs root
 * ("/sys"; a fake tree in tests). Functions return 0/positive or -errno. */
#pragma once
#include <stddef.h>
#include "cleanup.h"
#include "error.h"

#define FLASH_BLOCKDEV_SYSFS "/sys"
/* the kernel's MTD_BLOCK_MAJOR: mtdblockN and JFFS2 mounts of mtdN */
#define FLASH_BLOCKDEV_MTD_MAJOR 31u

#define FLASH_BLOCKDEV_KIND_LIST(X)                                                          \
	X(FLASH_BLOCKDEV_MTD, "mtd")          /* an MTD partition: mtd, mtd_name */          \
	X(FLASH_BLOCKDEV_UBI, "ubi")          /* a UBI volume: ubi, vol_id, vol_name, and    \
					       * the MTD it is attached to */                \
	X(FLASH_BLOCKDEV_OTHER, "other")      /* a device that is not flash (a disk) */      \
	X(FLASH_BLOCKDEV_UNKNOWN, "unknown")  /* what sysfs does not tell (a loop device,     \
					       * a number sysfs does not know) */
enum flash_blockdev_kind { FLASH_BLOCKDEV_KIND_LIST(STRING_TABLE_ENUM) _FLASH_BLOCKDEV_KIND_MAX };
const char *flash_blockdev_kind_to_string(enum flash_blockdev_kind k);

struct flash_blockdev {
	enum flash_blockdev_kind kind;
	char dev[32];          /* sysfs name: "mtdblock3", "ubiblock0_1", "sda1", "31:4" */
	unsigned mtd;          /* MTD: the partition's N; UBI: the MTD it is attached to */
	char mtd_name[64];
	int ubi, vol_id;
	char vol_name[128];
};

/* the devices a stack may stand on, at most */
#define FLASH_BLOCKDEV_MAX 4

/* The devices major:minor stands on: itself, or the leaves of the stack
 * it tops (each kind MTD, UBI, OTHER or UNKNOWN) into ret (room for max);
 * returns how many. -ENOBUFS for a deeper or wider stack. */
int flash_blockdev_leaves(const char *sys, unsigned major, unsigned minor,
			  struct flash_blockdev *ret, size_t max);
/* The UBI volume a UBIFS mount's source names ("ubi0_1", "ubi0:rootfs",
 * "ubi:rootfs" = on ubi0), as a leaf; kind UNKNOWN when sysfs does not
 * know it. */
void flash_blockdev_ubifs(const char *sys, const char *source, struct flash_blockdev *ret);
