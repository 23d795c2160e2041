/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The slots' seals on flash (include/slot_seal.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "flash.h"
#include "slot_seal.h"
#include "util.h"

uint64_t slot_seal_offset(const struct layout_slot *s)
{
	const struct layout_partition *p = s->rootfs.part;

	return p->size - p->dev->erasesize;
}

uint32_t slot_seal_read_len(const struct layout_slot *s)
{
	return MAX(s->rootfs.part->dev->writesize, 16u);
}

static int open_part(struct board *b, const struct layout_slot *s, struct flash **ret,
		     struct error *err)
{
	int r = board_open_partition(b, s->rootfs.part, ret);

	if (r < 0)
		return error_set(err, r, "seal of slot %s: partition '%s': %s", s->name,
				 s->rootfs.part->name, strerror(-r));
	return 0;
}

int slot_seal_get(struct board *b, const struct layout_slot *s, struct error *err)
{
	_cleanup_flash_ struct flash *f = NULL;
	uint8_t buf[SLOT_SEAL_MAGIC_LEN];
	uint64_t off = slot_seal_offset(s);
	int r = open_part(b, s, &f, err);

	if (r < 0)
		return r;
	/* U-Boot's mtd read skips a bad block: the offset is then past the end */
	if (flash_block_isbad(f, off) > 0)
		return 0;
	r = flash_read(f, off, buf, sizeof(buf));
	if (r < 0 && r != -EUCLEAN)
		return 0;
	return !memcmp(buf, SLOT_SEAL_MAGIC, SLOT_SEAL_MAGIC_LEN);
}

int slot_seal_set(struct board *b, const struct layout_slot *s, bool sealed, struct error *err)
{
	_cleanup_flash_ struct flash *f = NULL;
	_cleanup_free_ uint8_t *page = NULL;
	uint64_t off = slot_seal_offset(s);
	size_t len;
	int r = open_part(b, s, &f, err);

	if (r < 0)
		return r;
	r = flash_erase_block(f, off);
	if (r < 0)
		return error_set(err, r, "seal of slot %s: erasing partition '%s' at 0x%llx: %s",
				 s->name, s->rootfs.part->name, (unsigned long long)off,
				 strerror(-r));
	if (!sealed)
		return 0;
	/* one NAND page; NOR programs byte by byte: the magic alone */
	len = MAX((size_t)f->info.writesize, (size_t)SLOT_SEAL_MAGIC_LEN);
	page = malloc(len);
	if (!page)
		return -ENOMEM;
	memset(page, 0xff, len);
	memcpy(page, SLOT_SEAL_MAGIC, SLOT_SEAL_MAGIC_LEN);
	r = flash_write(f, off, page, len);
	if (r < 0)
		return error_set(err, r, "seal of slot %s: programming partition '%s' at 0x%llx: "
				 "%s", s->name, s->rootfs.part->name, (unsigned long long)off,
				 strerror(-r));
	return 0;
}

int slot_seal_load(struct board *b, const struct layout_slot_group *g, struct slot_env *st)
{
	bool sealed[SLOT_MAX] = { false };

	if (!g->seal)
		return 0;
	for (size_t i = 0; i < g->n_slots && i < SLOT_MAX; i++)
		sealed[i] = slot_seal_get(b, &g->slots[i], NULL) > 0;
	slot_env_seal(st, sealed);
	return 0;
}
