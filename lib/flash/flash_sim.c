/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* "sim:PATH" backend: the userspace simulator in nandsim/. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "flash.h"
#include "nsim.h"

static const enum flash_type sim_types[_NSIM_TYPE_MAX] = {
	[NSIM_NOR] = FLASH_NOR,
	[NSIM_NAND] = FLASH_NAND,
};

static int sim_open(struct flash *f, const char *spec, bool writable)
{
	struct nsim *s;
	struct nsim_info i;
	const char *base = strrchr(spec, '/');
	int r;

	r = nsim_open(spec, writable, &s);
	if (r < 0)
		return r;
	r = nsim_get_info(s, &i);
	if (r < 0) {
		nsim_close(s);
		return r;
	}
	f->priv = s;
	f->info.type = sim_types[i.geo.type];
	f->info.size = i.geo.size;
	f->info.erasesize = i.geo.erasesize;
	f->info.writesize = i.geo.writesize;
	f->info.oobsize = i.geo.oobsize;
	f->info.oobavail = i.oobfree_len;
	snprintf(f->info.name, sizeof(f->info.name), "%s", base ? base + 1 : spec);
	return 0;
}

static void sim_close(struct flash *f)
{
	nsim_close(f->priv);
	f->priv = NULL;
}

static int sim_read(struct flash *f, uint64_t off, void *buf, size_t len)
{
	return nsim_read(f->priv, off, buf, len);
}

static int sim_write(struct flash *f, uint64_t off, const void *buf, size_t len)
{
	return nsim_write(f->priv, off, buf, len);
}

static int sim_erase(struct flash *f, uint64_t off)
{
	return nsim_erase(f->priv, off);
}

static int sim_isbad(struct flash *f, uint64_t off)
{
	return nsim_block_isbad(f->priv, off);
}

static int sim_markbad(struct flash *f, uint64_t off)
{
	return nsim_block_markbad(f->priv, off);
}

static int sim_read_oob(struct flash *f, uint64_t off, void *buf, size_t len)
{
	return nsim_read_oob(f->priv, off, buf, len);
}

static int sim_write_oob(struct flash *f, uint64_t off, const void *buf, size_t len)
{
	return nsim_write_oob(f->priv, off, buf, len);
}

static int sim_get_ecc(struct flash *f, struct flash_stats *st)
{
	struct nsim_info i;
	int r = nsim_get_info(f->priv, &i);

	if (r < 0)
		return r;
	st->corrected = i.cnt.corrected;
	st->failed = i.cnt.failed;
	st->badblocks = i.bad_blocks;
	return 0;
}

const struct flash_ops flash_sim_ops = {
	.name = "sim",
	.open = sim_open,
	.close = sim_close,
	.read = sim_read,
	.write = sim_write,
	.erase = sim_erase,
	.block_isbad = sim_isbad,
	.block_markbad = sim_markbad,
	.read_oob = sim_read_oob,
	.write_oob = sim_write_oob,
	.get_ecc = sim_get_ecc,
	.unlock = NULL, /* the simulated NOR has no lock bits */
};

#if FLASHD_HOST_TOOLS
struct nsim *flash_sim_nsim(struct flash *f)
{
	return f && f->root->ops == &flash_sim_ops ? f->root->priv : NULL;
}

void flash_sim_set_lock_wait(uint64_t usec)
{
	nsim_set_lock_wait(usec);
}
#endif
