/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A fake board layout for the slot tests (test-slot, test-slot-boot): two
 * slots A and B on NOR partitions or UBI volumes, slot B with a kernel. */
#pragma once
#include <stdbool.h>
#include <string.h>
#include "layout.h"

static const char *const AB[] = { "A", "B" };

struct fake_layout {
	struct layout l;
	struct layout_device d[2];
	struct layout_partition p[4];
	struct layout_ubi ubi;
	struct layout_ubi_volume vols[3];
	struct layout_slot slots[2];
	struct layout_slot_group g;
};

static void fake_layout(struct fake_layout *f, bool ubi)
{
	memset(f, 0, sizeof(*f));
	f->d[0] = (struct layout_device){ .name = "nor0", .type = FLASH_NOR, .size = 0x1000000,
					  .erasesize = 0x10000, .writesize = 1 };
	f->d[1] = (struct layout_device){ .name = "nand0", .type = FLASH_NAND, .size = 0x8000000,
					  .erasesize = 0x20000, .writesize = 2048 };
	/* deliberately not in offset order in the file */
	f->p[0] = (struct layout_partition){ .name = "rootfs_b", .dev = &f->d[0], .offset = 0x800000 };
	f->p[1] = (struct layout_partition){ .name = "u-boot", .dev = &f->d[0], .offset = 0 };
	f->p[2] = (struct layout_partition){ .name = "rootfs_a", .dev = &f->d[0], .offset = 0x100000 };
	f->p[3] = (struct layout_partition){ .name = "ubi", .dev = &f->d[1], .offset = 0 };
	f->vols[0] = (struct layout_ubi_volume){ .name = "data" };
	f->vols[1] = (struct layout_ubi_volume){ .name = "rootfs_a" };
	f->vols[2] = (struct layout_ubi_volume){ .name = "rootfs_b" };
	f->ubi = (struct layout_ubi){ .part = &f->p[3], .volumes = f->vols, .n_volumes = 3 };
	for (int i = 0; i < 2; i++) {
		f->slots[i].name = (char *)AB[i];
		if (ubi)
			f->slots[i].rootfs = (struct layout_image_target){
				.storage = LAYOUT_STORAGE_UBI, .part = &f->p[3],
				.ubi_volume = f->vols[1 + i].name };
		else
			f->slots[i].rootfs = (struct layout_image_target){
				.storage = LAYOUT_STORAGE_NOR, .part = &f->p[i ? 0 : 2] };
	}
	f->slots[1].has_kernel = true;
	f->slots[1].kernel = (struct layout_image_target){ .storage = LAYOUT_STORAGE_NOR,
							   .part = &f->p[1] };
	f->g = (struct layout_slot_group){ .name = "rootfs", .max_tries = 3, .slots = f->slots,
					   .n_slots = 2 };
	f->l = (struct layout){ .path = "fake.json", .board = "fake board", .devices = f->d,
				.n_devices = 2, .partitions = f->p, .n_partitions = 4,
				.ubis = &f->ubi, .n_ubis = 1, .groups = &f->g, .n_groups = 1 };
}
