/* SPDX-License-Identifier: LGPL-2.1-or-later */
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
#include <stdbool.h>
#include <stdint.h>
#include "flash.h"
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
/* "ubiformat (erase counters kept), 5 volumes: kernel_a 8 MiB static, ..."
 * (factory: the UBI image written onto the erased partition instead) */
void provision_ubi_describe(const struct layout_ubi *u, bool factory, char *buf, size_t len);

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

/* Factory images and simulators (no kernel UBI): the partition gets the
 * UBI image ubinize would make for the layout's volume table (ubinize.h;
 * vol_id = layout index, static/dynamic, autoresize), PEB n in the n-th
 * good erase block of the erased partition f. image_sizes[i]: bytes that
 * volume i gets (0: empty). The erase counters start at 0: a factory chip
 * has no wear history to keep (on "system", ubiformat keeps it). */
struct provision_ubi_image;
int provision_ubi_image_new(const struct layout_ubi *u, struct flash *f,
			    const uint64_t *image_sizes, uint32_t image_seq,
			    struct provision_ubi_image **ret, struct error *err);
void provision_ubi_image_free(struct provision_ubi_image *pi);
static inline void provision_ubi_image_freep(struct provision_ubi_image **pi)
{
	provision_ubi_image_free(*pi);
}
/* The next bytes of volume vol's image. */
int provision_ubi_image_write(struct provision_ubi_image *pi, size_t vol, const void *buf,
			      size_t len, struct error *err);
/* Every image complete: the volume table. */
int provision_ubi_image_finish(struct provision_ubi_image *pi, struct error *err);
/* Read back volume vol through its UBI headers against the image's sha256. */
int provision_ubi_image_verify(struct provision_ubi_image *pi, size_t vol,
			       const uint8_t sha256[32], struct error *err);
uint64_t provision_ubi_image_pebs(const struct provision_ubi_image *pi);
/* Write the UBI image alone (ubinize's output) to fd. */
int provision_ubi_image_export(struct provision_ubi_image *pi, int fd, struct error *err);
