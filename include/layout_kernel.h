/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The kernel's views of a layout: mtdparts=, nandsim/mtdram parameters,
 * and the comparison with the running kernel's MTD table. */
#pragma once
#include "error.h"
#include "layout.h"

/* Kernel "mtdparts=" argument reproducing the partitions (malloc'd). */
int layout_kernel_mtdparts(const struct layout *l, char **ret);
/* "mtdparts=<mtd-id>:<size>@<offset>(<name>)[ro],..." for one device only
 * (the part vm-load-board and cmdlinepart.mtdparts= take). */
int layout_kernel_mtdparts_device(const struct layout *l, const struct layout_device *dev,
				  char **ret);
/* nandsim (NAND) or mtdram (NOR) module name and parameters reproducing
 * device dev (NULL = first device), e.g. "nandsim" +
 * "id_bytes=0x20,0xaa,0x00,0x15 parts=8,4,..." (malloc'd). */
int layout_kernel_nandsim(const struct layout *l, const struct layout_device *dev,
			  const char **ret_module, char **ret_params);
/* Compare with the running kernel's MTD table (sysfs root configurable for
 * tests, normally "/sys/class/mtd"). On mismatch: -ENODEV/-EINVAL and err
 * names the partition and the differing field. */
int layout_kernel_check_system(const struct layout *l, const char *sysfs_root, struct error *err);
