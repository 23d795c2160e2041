/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The writable layer of flashd boot: JFFS2 on a raw partition (formatted
 * in user space on first boot: erase + cleanmarkers), UBIFS on a UBI
 * volume, or tmpfs. A pending factory reset is done before mounting. If
 * JFFS2/UBIFS cannot be mounted, or the partition holds something that is
 * not JFFS2 (which the kernel would silently erase), a tmpfs takes its
 * place and the result says so (fallback + reason).
 *
 * The probe checks what overlayfs needs of an upper filesystem: whiteouts
 * (mknod c 0 0), RENAME_WHITEOUT (renaming files that come from the
 * image), trusted.* xattrs (opaque directories, redirects), O_TMPFILE. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "flash.h"
#include "layout.h"

#define BOOT_OVERLAY_MEDIUM_LIST(X)                                     \
	/* all 0xFF, no cleanmarkers: never formatted */                \
	X(BOOT_OVERLAY_MEDIUM_ERASED, "erased")                         \
	/* cleanmarkers or JFFS2 nodes */                               \
	X(BOOT_OVERLAY_MEDIUM_JFFS2, "jffs2")                           \
	/* something else: left alone */                                \
	X(BOOT_OVERLAY_MEDIUM_FOREIGN, "foreign")

enum boot_overlay_medium {
	BOOT_OVERLAY_MEDIUM_LIST(STRING_TABLE_ENUM)
	_BOOT_OVERLAY_MEDIUM_MAX,
};

struct boot_overlay_probe {
	bool done;
	bool whiteout;
	bool rename_whiteout;
	bool xattr_trusted;
	bool xattr_user;
	bool tmpfile;
};

struct boot_overlay_result {
	const char *state;            /* "mounted" (on flash) or "tmpfs" */
	const char *fstype;           /* what is mounted: jffs2, ubifs, tmpfs */
	char source[96];              /* mtd3, ubi0:overlay, tmpfs */
	char device[64];              /* /dev/mtd3, /dev/ubi0_4 */
	bool formatted;               /* first boot: erased with cleanmarkers */
	bool reset_done;              /* factory reset carried out */
	bool fallback;                /* tmpfs instead of the layout's filesystem */
	struct error fallback_reason;
	const char *medium;           /* JFFS2: what the partition held */
	uint64_t size, used;          /* statvfs of the mount */
	struct boot_overlay_probe probe;
};

const char *boot_overlay_medium_to_string(enum boot_overlay_medium m);

/* What a JFFS2 partition holds, from the start of every good block
 * (cleanmarker, node magic, erased, other): JFFS2 as soon as one block
 * carries JFFS2, FOREIGN only when none does and some block holds
 * something else, ERASED when all are erased. -ENOSPC: no good block. */
int boot_overlay_classify(struct flash *f, enum boot_overlay_medium *ret);

/* Mount the writable filesystem of overlay ov at mnt (an existing
 * directory); reset = a factory reset is pending (the caller clears the
 * env flag after success). Returns 0 also on a tmpfs fallback (see
 * ret->fallback); < 0 only when not even tmpfs could be mounted. */
int boot_overlay_mount(const struct layout *l, const struct layout_overlay *ov, const char *mnt,
		       bool reset, struct boot_overlay_result *ret, struct error *err);

/* Probe dir (on the upper filesystem); leaves nothing behind. */
int boot_overlay_probe(const char *dir, struct boot_overlay_probe *ret);
