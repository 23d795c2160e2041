/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The NAND chip ids nandsim can simulate: the kernel's id table for 8-bit
 * chips, its generic id decoding, and the id bytes that reproduce a layout
 * device. Used by the parser (validation), the model (MTD names) and the
 * kernel views (nandsim parameters). */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "layout_nand.h"
#include "util.h"


/* The 8-bit chips of the kernel's nand_ids.c that nandsim can simulate:
 * legacy small-page ids carry their geometry, extended ids take page,
 * OOB and erase size from the 4th id byte. */
struct nand_chip_id {
	uint8_t dev_id;
	uint32_t size_mib;
	uint32_t erasesize;   /* 0 = from the extended id byte */
	const char *name;     /* kernel chip name = MTD name of the master */
};

static const struct nand_chip_id nand_chip_ids[] = {
	{ 0x33, 16, 16384, "NAND 16MiB 1,8V 8-bit" },
	{ 0x73, 16, 16384, "NAND 16MiB 3,3V 8-bit" },
	{ 0x35, 32, 16384, "NAND 32MiB 1,8V 8-bit" },
	{ 0x75, 32, 16384, "NAND 32MiB 3,3V 8-bit" },
	{ 0x36, 64, 16384, "NAND 64MiB 1,8V 8-bit" },
	{ 0x76, 64, 16384, "NAND 64MiB 3,3V 8-bit" },
	{ 0x78, 128, 16384, "NAND 128MiB 1,8V 8-bit" },
	{ 0x39, 128, 16384, "NAND 128MiB 1,8V 8-bit" },
	{ 0x79, 128, 16384, "NAND 128MiB 3,3V 8-bit" },
	{ 0x71, 256, 16384, "NAND 256MiB 3,3V 8-bit" },
	{ 0xa2, 64, 0, "NAND 64MiB 1,8V 8-bit" },
	{ 0xa0, 64, 0, "NAND 64MiB 1,8V 8-bit" },
	{ 0xf2, 64, 0, "NAND 64MiB 3,3V 8-bit" },
	{ 0xd0, 64, 0, "NAND 64MiB 3,3V 8-bit" },
	{ 0xf0, 64, 0, "NAND 64MiB 3,3V 8-bit" },
	{ 0xa1, 128, 0, "NAND 128MiB 1,8V 8-bit" },
	{ 0xf1, 128, 0, "NAND 128MiB 3,3V 8-bit" },
	{ 0xd1, 128, 0, "NAND 128MiB 3,3V 8-bit" },
	{ 0xaa, 256, 0, "NAND 256MiB 1,8V 8-bit" },
	{ 0xda, 256, 0, "NAND 256MiB 3,3V 8-bit" },
	{ 0xac, 512, 0, "NAND 512MiB 1,8V 8-bit" },
	{ 0xdc, 512, 0, "NAND 512MiB 3,3V 8-bit" },
	{ 0xa3, 1024, 0, "NAND 1GiB 1,8V 8-bit" },
	{ 0xd3, 1024, 0, "NAND 1GiB 3,3V 8-bit" },
	{ 0xa5, 2048, 0, "NAND 2GiB 1,8V 8-bit" },
	{ 0xd5, 2048, 0, "NAND 2GiB 3,3V 8-bit" },
};

static const struct nand_chip_id *nand_chip_by_id(uint8_t dev_id)
{
	for (size_t i = 0; i < ELEMENTSOF(nand_chip_ids); i++)
		if (nand_chip_ids[i].dev_id == dev_id)
			return &nand_chip_ids[i];
	return NULL;
}

int layout_nand_parse_id(const char *s, uint8_t id[8], size_t *ret_n)
{
	size_t n = 0;

	memset(id, 0xff, 8);
	while (*s) {
		char *end;
		unsigned long v;

		if (n == 8 || !isxdigit((unsigned char)*s))
			return -EINVAL;
		errno = 0;
		v = strtoul(s, &end, 0);
		if (errno || end == s || v > 0xff)
			return -EINVAL;
		id[n++] = (uint8_t)v;
		s = end;
		if (*s == ',')
			s++;
		else if (*s)
			return -EINVAL;
	}
	if (n < 2)
		return -EINVAL;
	*ret_n = n;
	return 0;
}

int layout_nand_decode_id(const uint8_t id[8], size_t n, struct layout_nand_geom *g)
{
	const struct nand_chip_id *c = nand_chip_by_id(id[1]);

	if (!c)
		return -ENOENT;
	g->size = (uint64_t)c->size_mib << 20;
	g->name = c->name;
	if (c->erasesize) {
		g->erasesize = c->erasesize;
		g->writesize = 512;
		g->oobsize = 16;
		return 0;
	}
	if (n < 4)
		return -ENODATA; /* extended ids need the 4th byte */
	if (id[3] & 0x40)
		return -EOPNOTSUPP; /* 16-bit bus */
	g->writesize = 1024u << (id[3] & 3);
	g->oobsize = (8u << ((id[3] >> 2) & 1)) * (g->writesize >> 9);
	g->erasesize = (64u * 1024) << ((id[3] >> 4) & 3);
	return 0;
}

int layout_nand_id_for(const struct layout_device *d, uint8_t id[8], size_t *ret_n,
		       unsigned *ret_override, const char **ret_name)
{
	struct layout_nand_geom g;
	int pg, oobper, er, sh;

	if (d->nandsim_id) {
		if (layout_nand_parse_id(d->nandsim_id, id, ret_n) < 0 || layout_nand_decode_id(id, *ret_n, &g) < 0)
			return -EINVAL; /* validation rejects these */
	} else {
		/* synthesize: ST Micro, a chip of this size if one exists */
		memset(id, 0xff, 8);
		id[0] = 0x20;
		id[2] = 0x00;
		if (d->writesize == 512 && d->erasesize == 16384 && d->oobsize == 16) {
			id[1] = 0x71;
			for (size_t i = 0; i < ELEMENTSOF(nand_chip_ids); i++)
				if (nand_chip_ids[i].erasesize &&
				    ((uint64_t)nand_chip_ids[i].size_mib << 20) == d->size)
					id[1] = nand_chip_ids[i].dev_id;
			*ret_n = 2;
		} else {
			pg = util_log2_exact(d->writesize / 1024);
			oobper = d->writesize >= 512 ? (int)(d->oobsize / (d->writesize / 512)) : 0;
			er = util_log2_exact(d->erasesize / (64 * 1024));
			if (d->writesize < 1024 || pg < 0 || pg > 3 || er < 0 || er > 3 ||
			    (oobper != 8 && oobper != 16) || d->erasesize % (64 * 1024))
				return -EOPNOTSUPP;
			id[1] = 0xf1;
			for (size_t i = 0; i < ELEMENTSOF(nand_chip_ids); i++)
				if (!nand_chip_ids[i].erasesize &&
				    ((uint64_t)nand_chip_ids[i].size_mib << 20) == d->size) {
					id[1] = nand_chip_ids[i].dev_id;
					break;
				}
			id[3] = (uint8_t)(pg | (oobper == 16 ? 4 : 0) | (er << 4));
			*ret_n = 4;
		}
		if (layout_nand_decode_id(id, *ret_n, &g) < 0)
			return -EOPNOTSUPP;
	}
	/* nandsim itself handles 512, 2048 and 4096 byte pages only */
	if (g.writesize != 512 && g.writesize != 2048 && g.writesize != 4096)
		return -EOPNOTSUPP;
	if (g.writesize != d->writesize || g.erasesize != d->erasesize || g.oobsize != d->oobsize)
		return -EINVAL;
	*ret_override = 0;
	if (g.size != d->size) {
		sh = util_log2_exact(d->size / d->erasesize);
		if (sh < 0 || (uint64_t)d->erasesize << sh != d->size)
			return -EOPNOTSUPP;
		*ret_override = (unsigned)sh;
	}
	if (ret_name)
		*ret_name = g.name;
	return 0;
}
