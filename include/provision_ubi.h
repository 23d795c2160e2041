/* Provisioning a UBI partition of the layout on the running system:
 * format it for UBI keeping the erase counters (ubiformat from mtd-utils),
 * attach it (UBI_IOCATT), create the layout's volumes (UBI_IOCMKVOL:
 * static for images, dynamic for the UBIFS overlay, which the kernel
 * formats at its first mount), read the volume table back. Images are
 * then written by the install engine (ubi_image.h).
 *
 * Why ubiformat and not our own writer of EC headers: it reads every
 * PEB's erase counter and writes it back + 1 (the mean for unreadable
 * ones), skips and marks bad blocks, places the VID header by the
 * sub-page size and picks the image sequence number as the kernel
 * expects -- wear information a hand-rolled eraser would lose; Debian
 * ships it (mtd-utils) but no libubi to call. */
#pragma once
#include <stdint.h>
#include "error.h"
#include "layout.h"

struct provision_ubi_plan {
	uint64_t pebs;           /* erase blocks of the partition */
	uint64_t bad_pebs;       /* found bad */
	uint64_t bad_limit;      /* the kernel's reserve for bad blocks (20 per 1024 of the chip) */
	uint64_t leb_size;       /* estimate (layout_ubi_capacity) */
	uint64_t lebs_avail;     /* for volumes, after the reserves and bad blocks beyond the limit */
	uint64_t lebs_needed;    /* the volume table, each volume rounded up to LEBs */
};

/* Does the layout's volume table fit the partition with bad_pebs bad
 * blocks? -ENOSPC naming the partition and the numbers when not. */
int provision_ubi_plan(const struct layout_ubi *u, uint64_t bad_pebs,
		       struct provision_ubi_plan *ret, struct error *err);
/* "ubiformat (erase counters kept), 5 volumes: kernel_a 8 MiB static, ..." */
void provision_ubi_describe(const struct layout_ubi *u, char *buf, size_t len);

/* What a run needs, checked before anything is erased (and by dry runs):
 * the ubi driver, ubiformat, the partition's UBI not mounted (mounts: a
 * /proc/mounts file). */
int provision_ubi_check_system(const struct layout_ubi *u, const char *mtd_sysfs,
			       const char *mounts, struct error *err);
/* Detach the partition's UBI if attached (first, before any erase). */
int provision_ubi_detach(const struct layout_ubi *u, const char *mtd_sysfs, struct error *err);
/* ubiformat, attach, make the volumes; the UBI device number. */
int provision_ubi_format(const struct layout_ubi *u, const char *mtd_sysfs, struct error *err);
/* The attached volume table is the layout's: names, types, sizes, none broken. */
int provision_ubi_check(const struct layout_ubi *u, const char *mtd_sysfs, struct error *err);
