/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* An image target on a UBI volume ("storage": "ubi" in a slot), as the
 * install engine writes it: one volume update (UBI_IOCVOLUP) of exactly
 * the manifest's size, streamed; read back through the volume. A volume
 * update always rewrites the whole volume (UBI unmaps every LEB when it
 * starts), so nothing is skipped as unchanged; UBI does the bad-block
 * handling and wear levelling below. Only on the running system's UBI
 * (target "system"): the simulator has no UBI. */
#pragma once
#include <stdint.h>
#include <sys/types.h>
#include "board.h"
#include "error.h"
#include "flash_ubi.h"
#include "layout.h"
#include "slot.h"

struct ubi_image;

/* Find the volume (UBI attached first if it is not); nothing is written. */
int ubi_image_open(struct board *b, const struct layout_image_target *t,
		   struct ubi_image **ret, struct error *err);
void ubi_image_free(struct ubi_image *u);
static inline void ubi_image_freep(struct ubi_image **u) { if (*u) ubi_image_free(*u); }
#define _cleanup_ubi_image_ __attribute__((cleanup(ubi_image_freep)))

const struct flash_ubi_volume *ubi_image_volume(const struct ubi_image *u);
/* Stream: the first call starts the volume update of total bytes. */
int ubi_image_write(struct ubi_image *u, uint64_t total, const void *buf, size_t len,
		    struct error *err);
/* All total bytes written (an empty image starts and ends the update
 * here); UBI must report the volume whole and holding total bytes. */
int ubi_image_finish(struct ubi_image *u, uint64_t total, struct error *err);
/* Read back from the volume at off; 0 at the end of its data. */
ssize_t ubi_image_read(struct ubi_image *u, uint64_t off, void *buf, size_t len);

/* Why UBI says target t's volume is not whole (update interrupted,
 * corrupted), NULL when it is or when t is no UBI volume or its UBI is
 * not attached (nothing to tell without touching the flash). */
const char *ubi_image_target_broken(const struct layout_image_target *t, const char *mtd_sysfs,
				    const char *ubi_sysfs);
/* Set st's slot_vars.unfinished for the slots of g whose rootfs or kernel
 * volume UBI says is not whole: every status (the daemon's GetStatus and
 * SlotStatus, offline flashctl) then calls them "interrupted" through
 * slot_state_of(). */
void ubi_image_mark_unfinished(struct slot_env *st, const struct layout_slot_group *g,
			       const char *mtd_sysfs, const char *ubi_sysfs);
