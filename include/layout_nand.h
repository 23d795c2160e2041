/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The NAND chips nandsim can simulate (the kernel's 8-bit id table) and
 * the id bytes reproducing a layout device. */
#pragma once
#include <stddef.h>
#include <stdint.h>

#include "layout.h"

/* What the kernel's nand_detect() makes of an id. */
struct layout_nand_geom {
	uint64_t size;
	uint32_t erasesize, writesize, oobsize;
	const char *name;     /* kernel chip name = MTD name of the master */
};

/* Parse "0x20,0xaa,0x00,0x15" (2..8 bytes, the rest 0xff). */
int layout_nand_parse_id(const char *s, uint8_t id[8], size_t *ret_n);
/* Generic decoding as for nandsim's default manufacturer 0x20 (ST Micro):
 * -ENOENT unknown device id, -ENODATA an extended id without its 4th byte,
 * -EOPNOTSUPP a 16-bit bus chip. */
int layout_nand_decode_id(const uint8_t id[8], size_t n, struct layout_nand_geom *g);
/* The id bytes (d->nandsim_id, else synthesized) and overridesize (0 =
 * none) giving device d; -EOPNOTSUPP when nandsim cannot make it. */
int layout_nand_id_for(const struct layout_device *d, uint8_t id[8], size_t *ret_n,
		       unsigned *ret_override, const char **ret_name);
