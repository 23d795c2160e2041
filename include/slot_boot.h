/* What the bootloader and the kernel see of the slots: the booted slot
 * from the kernel command line, and the U-Boot boot script. */
#pragma once
#include <stdio.h>

#include "error.h"
#include "layout.h"
#include "slot.h"

/* Which slot of g the kernel booted: flashd.slot=X, else rauc.slot=X, else
 * root= matching a slot's rootfs (/dev/mtdblockN, mtd:NAME, ubiX:VOL,
 * /dev/ubiblockX_Y). Returns the index, -ENOENT when nothing names a slot,
 * -EBADMSG when flashd.slot/rauc.slot names a slot that does not exist. */
int slot_booted_from_cmdline(const char *cmdline, const struct layout *l,
			     const struct layout_slot_group *g, const char **ret_by,
			     struct error *err);
/* Same, reading path (NULL = /proc/cmdline). */
int slot_booted(const char *path, const struct layout *l, const struct layout_slot_group *g,
		const char **ret_by, struct error *err);

/* The U-Boot hush boot script for layout l's first slot group (see
 * docs/boot-contract.md): picks the first slot in BOOT_ORDER with tries
 * left, decrements, saveenv, sets flashd_slot/flashd_root and bootargs
 * (flashd.slot=X) and runs flashd_boot_cmd; with none left it restores
 * the counters and resets. */
int slot_bootscript(const struct layout *l, FILE *out);
