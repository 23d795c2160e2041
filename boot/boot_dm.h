/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Device-mapper for the read-only root: a linear map that lays a squashfs
 * written nandwrite-style (bad blocks stepped over) on raw NAND out as one
 * contiguous block device, so the kernel's squashfs can mount it.
 *
 * boot_dm_plan() is pure (unit-tested): from the bad-block flags of the
 * partition and the bytes the image needs, the table in 512-byte sectors.
 * boot_dm_create() loads it with the DM ioctls of <linux/dm-ioctl.h>
 * (no dmsetup, no udev) and returns the new device. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "error.h"

#define BOOT_DM_CONTROL "/dev/mapper/control"

/* One "linear" target: sectors [start, start+len) of the new device are
 * sectors [offset, offset+len) of the underlying device. */
struct boot_dm_target {
	uint64_t start;
	uint64_t len;
	uint64_t offset;
};

struct boot_dm_plan {
	struct boot_dm_target *targets;   /* runs of consecutive good blocks */
	size_t n_targets;
	uint64_t sectors;                 /* size of the mapped device */
	size_t blocks;                    /* good blocks mapped */
	size_t bad_inside;                /* bad blocks stepped over inside the map */
};

/* bad[i] != 0: erase block i of the partition is bad. Maps good blocks in
 * order until need_bytes are covered (need_bytes 0 = every good block).
 * -ENOSPC when the good blocks hold fewer than need_bytes; -EINVAL on an
 * erasesize that is not a multiple of 512. */
int boot_dm_plan(const uint8_t *bad, size_t n_blocks, uint32_t erasesize, uint64_t need_bytes,
		 struct boot_dm_plan *ret);
void boot_dm_plan_done(struct boot_dm_plan *p);

/* The table as dmsetup would print it: "0 256 linear 31:4 0\n..." (malloc'd). */
int boot_dm_plan_format(const struct boot_dm_plan *p, dev_t dev, char **ret);

/* Create the read-only device name from plan p over block device dev,
 * activate it, and fill the device node path (/dev/dm-N, or a node made in
 * /dev/mapper when devtmpfs did not make one) and its dev_t. On failure
 * the half-made device is removed and err says which ioctl failed. */
int boot_dm_create(const char *name, dev_t dev, const struct boot_dm_plan *p,
		   char *ret_path, size_t path_len, dev_t *ret_dev, struct error *err);
/* Remove device name (-ENXIO when it does not exist). */
int boot_dm_remove(const char *name);
