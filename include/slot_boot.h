/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* What the bootloader and the kernel see of the slots: the booted slot
 * from the kernel command line, and the U-Boot boot script. */
#pragma once
#include <errno.h>
#include <stdio.h>

#include "error.h"
#include "layout.h"
#include "slot.h"

/* The booted slot cannot be told: no slot that could be running may be
 * written (fail closed). */
#define SLOT_BOOTED_UNKNOWN (-ENOMEDIUM)

/* Which slot of g the kernel command line names: flashd.slot=X, else
 * rauc.slot=X, else root= matching a slot's rootfs (/dev/mtdblockN,
 * mtd:NAME, ubiX:VOL, /dev/ubiblockX_Y). Returns the index; -ENOENT when
 * nothing names a slot; -EBADMSG when flashd.slot/rauc.slot names a slot
 * that does not exist; SLOT_BOOTED_UNKNOWN when root= (or ubi.block=)
 * names a root the layout does not know (root=31:4, root=PARTUUID=...). */
int slot_booted_from_cmdline(const char *cmdline, const struct layout *l,
			     const struct layout_slot_group *g, const char **ret_by,
			     struct error *err);

/* Where slot_booted() looks. */
struct slot_boot_where {
	const char *cmdline;  /* the kernel command line; NULL = /proc/cmdline */
	const char *target;   /* the board: "system" (or NULL) is this system's flash,
			       * where the mounted root decides; on a simulator
			       * ("sim:PATH") its command line file does */
	const char *proc;     /* NULL = /proc; fake trees in tests */
	const char *sys;      /* NULL = /sys */
};

/* The running slot of g. On the system: the image mounted as the root (at
 * /rom under an overlayfs union, as flashd boot leaves it), its device
 * resolved through sysfs to an MTD partition or UBI volume, then to the
 * slot whose rootfs it is ("mounted root" in ret_by). When / shows no
 * slot, a slot that flashd.slot= or rauc.slot= names counts as running.
 * Else -ENOENT when / is on no slot (a disk, the network, RAM, another
 * partition), SLOT_BOOTED_UNKNOWN when that cannot be told. On a
 * simulator: slot_booted_from_cmdline() of its command line file. */
int slot_booted(const struct slot_boot_where *w, const struct layout *l,
		const struct layout_slot_group *g, const char **ret_by, struct error *err);

/* The U-Boot hush boot script for layout l's first slot group (see
 * docs/boot-contract.md): picks the first slot in BOOT_ORDER with tries
 * left, decrements, saveenv, sets flashd_slot/flashd_root and bootargs
 * (flashd.slot=X) and runs flashd_boot_cmd; with none left it restores
 * the counters and resets. */
int slot_bootscript(const struct layout *l, FILE *out);
