/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* UBI through the kernel's ABI (<mtd/ubi-user.h> ioctls on /dev/ubi_ctrl
 * and /dev/ubiN[_M], sysfs /sys/class/ubi): attach/detach an MTD
 * partition, volumes by name, make volumes, stream a volume update
 * (UBI_IOCVOLUP), and what UBI says about a volume's content. libubi is
 * not used: mtd-utils builds it as a static helper of its own tools and
 * Debian ships no library or header for it; the ioctls are few and stable.
 *
 * sysroot arguments are the UBI class directory (FLASH_UBI_SYSFS; a fake
 * tree in tests). Functions return 0/positive or -errno. */
#pragma once
#include <stdbool.h>
#include <stdint.h>
#include "error.h"

#define FLASH_UBI_SYSFS "/sys/class/ubi"
#define FLASH_UBI_CTRL "/dev/ubi_ctrl"

struct flash_ubi_volume {
	int ubi;                  /* UBI device number */
	int id;                   /* volume id */
	char name[128];
	bool is_static;
	uint32_t leb_size;        /* usable bytes per LEB */
	uint64_t reserved_ebs;
	uint64_t data_bytes;      /* static: bytes the last update wrote */
	bool upd_marker;          /* an update was started and never finished */
	bool corrupted;           /* static volume whose data fails UBI's CRC check */
	char dev[32];             /* /dev/ubiN_M */
};

/* UBI device number the MTD device mtd_num is attached as, -ENODEV when not. */
int flash_ubi_find(const char *sysroot, unsigned mtd_num);
/* Attached as (finds it, or attaches with UBI_IOCATT). */
int flash_ubi_attach(const char *sysroot, unsigned mtd_num, struct error *err);
/* Detach when attached (-EBUSY while a volume is open or mounted). */
int flash_ubi_detach(const char *sysroot, unsigned mtd_num, struct error *err);

/* The volume called name on ubi (-ENOENT when it has none). */
int flash_ubi_volume_find(const char *sysroot, int ubi, const char *name,
			  struct flash_ubi_volume *ret);
/* Volume id on ubi from sysfs, filled into ret. */
int flash_ubi_volume_read(const char *sysroot, int ubi, int id, struct flash_ubi_volume *ret);
/* Bytes the volume can hold. */
static inline uint64_t flash_ubi_volume_size(const struct flash_ubi_volume *v)
{
	return v->reserved_ebs * v->leb_size;
}
/* Why UBI says its content is not whole ("update interrupted", "corrupted"),
 * or NULL when it is. */
const char *flash_ubi_volume_broken(const struct flash_ubi_volume *v);

/* UBI_IOCMKVOL: volume vol_id (or UBI_VOL_NUM_AUTO) of bytes (rounded up to LEBs by the
 * kernel); returns the volume id. */
int flash_ubi_mkvol(int ubi, int vol_id, const char *name, bool is_static, uint64_t bytes,
		    struct error *err);

/* The volume open for writing (O_CLOEXEC): nothing changes yet; -EBUSY
 * when another writer has it. */
int flash_ubi_volume_open_rw(const char *dev, struct error *err);
/* Start a volume update of exactly bytes on fd (UBI_IOCVOLUP): from this
 * call UBI has unmapped the volume's LEBs and marks it "update in
 * progress" until bytes were written through fd. 0 bytes empties it. */
int flash_ubi_update_start(int fd, const char *dev, uint64_t bytes, struct error *err);
