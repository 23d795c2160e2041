/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Board layouts: the model built by the parser (layout_parse.c), its
 * lookups, the roles of a partition and the UBI capacity estimate. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "layout.h"
#include "layout_nand.h"
#include "layout_parse.h"
#include "util.h"

#define LAYOUT_MAX_FILE (1024 * 1024)
#define UBI_BEB_LIMIT_PER1024 20   /* CONFIG_MTD_UBI_BEB_LIMIT default */

/* ---------- string tables ---------- */

const char *const layout_storage_table[_LAYOUT_STORAGE_MAX] = {
	LAYOUT_STORAGE_LIST(STRING_TABLE_NAME)
};
DEFINE_STRING_TABLE_TO(layout_storage, enum layout_storage)
const char *const layout_overlay_type_table[_LAYOUT_OVERLAY_MAX] = {
	LAYOUT_OVERLAY_TYPE_LIST(STRING_TABLE_NAME)
};
DEFINE_STRING_TABLE_TO(layout_overlay_type, enum layout_overlay_type)
const char *const layout_ubi_vol_type_table[_LAYOUT_UBI_MAX] = {
	LAYOUT_UBI_VOL_TYPE_LIST(STRING_TABLE_NAME)
};
DEFINE_STRING_TABLE_TO(layout_ubi_vol_type, enum layout_ubi_vol_type)

const char *layout_device_mtd_id(const struct layout_device *d)
{
	uint8_t id[8];
	size_t n;
	struct layout_nand_geom g;

	if (d->mtd_id)
		return d->mtd_id;
	if (d->type == FLASH_NAND && d->nandsim_id &&
	    layout_nand_parse_id(d->nandsim_id, id, &n) == 0 && layout_nand_decode_id(id, n, &g) == 0)
		return g.name;
	return d->name;
}

int layout_load(const char *path, struct layout **ret, struct error *err)
{
	_cleanup_free_ char *buf = NULL;
	size_t len;
	int r;

	r = util_read_file(path, LAYOUT_MAX_FILE, &buf, &len);
	if (r < 0)
		return error_set(err, r, "%s: cannot read: %s", path, strerror(-r));
	if (strlen(buf) != len)
		return error_set(err, -EINVAL, "%s: contains a NUL byte (not a JSON text file)",
				 path);
	return layout_parse(buf, path, ret, err);
}

static void free_target(struct layout_image_target *t)
{
	free(t->ubi_volume);
	free(t->file);
}

void layout_free(struct layout *l)
{
	if (!l)
		return;
	for (size_t i = 0; l->devices && i < l->n_devices; i++) {
		free(l->devices[i].name);
		free(l->devices[i].nandsim_id);
		free(l->devices[i].mtd_id);
	}
	free(l->devices);
	for (size_t i = 0; l->partitions && i < l->n_partitions; i++)
		free(l->partitions[i].name);
	free(l->partitions);
	for (size_t i = 0; l->ubis && i < l->n_ubis; i++) {
		for (size_t j = 0; j < l->ubis[i].n_volumes; j++)
			free(l->ubis[i].volumes[j].name);
		free(l->ubis[i].volumes);
	}
	free(l->ubis);
	for (size_t i = 0; l->groups && i < l->n_groups; i++) {
		struct layout_slot_group *g = &l->groups[i];

		for (size_t j = 0; g->slots && j < g->n_slots; j++) {
			free(g->slots[j].name);
			free_target(&g->slots[j].rootfs);
			free_target(&g->slots[j].kernel);
		}
		free(g->slots);
		free(g->name);
		free(g->image_type);
	}
	free(l->groups);
	for (size_t i = 0; l->overlays && i < l->n_overlays; i++) {
		free(l->overlays[i].path);
		free(l->overlays[i].ubi_volume);
	}
	free(l->overlays);
	for (size_t i = 0; l->lowers && i < l->n_lowers; i++) {
		free(l->lowers[i].name);
		free_target(&l->lowers[i].target);
	}
	free(l->lowers);
	free(l->path);
	free(l->board);
	free(l->compatible);
	free(l);
}

/* ---------- lookups ---------- */

struct layout_ubi *layout_find_ubi(const struct layout *l, const char *name)
{
	for (size_t i = 0; i < l->n_ubis; i++)
		if (!strcmp(l->ubis[i].part->name, name))
			return &l->ubis[i];
	return NULL;
}

struct layout_ubi_volume *layout_find_ubi_volume(const struct layout_ubi *u, const char *name)
{
	for (size_t i = 0; i < u->n_volumes; i++)
		if (!strcmp(u->volumes[i].name, name))
			return &u->volumes[i];
	return NULL;
}

struct layout_partition *layout_find_partition(const struct layout *l, const char *name)
{
	for (size_t i = 0; l->partitions && i < l->n_partitions; i++)
		if (l->partitions[i].name && !strcmp(l->partitions[i].name, name))
			return &l->partitions[i];
	return NULL;
}

struct layout_device *layout_find_device(const struct layout *l, const char *name)
{
	for (size_t i = 0; l->devices && i < l->n_devices; i++)
		if (l->devices[i].name && !strcmp(l->devices[i].name, name))
			return &l->devices[i];
	return NULL;
}

struct layout_slot_group *layout_find_group(const struct layout *l, const char *name)
{
	for (size_t i = 0; i < l->n_groups; i++)
		if (!strcmp(l->groups[i].name, name))
			return &l->groups[i];
	return NULL;
}

struct layout_slot *layout_find_slot(struct layout_slot_group *g, const char *name)
{
	for (size_t i = 0; i < g->n_slots; i++)
		if (!strcmp(g->slots[i].name, name))
			return &g->slots[i];
	return NULL;
}

int layout_partition_index(const struct layout *l, const struct layout_partition *p)
{
	int idx = 0;

	if (!p || p < l->partitions || p >= l->partitions + l->n_partitions)
		return -ENOENT;
	for (size_t d = 0; d < l->n_devices; d++) {
		const struct layout_device *dev = &l->devices[d];

		for (size_t i = 0; i < l->n_partitions; i++) {
			const struct layout_partition *q = &l->partitions[i];

			if (q->dev != dev)
				continue;
			if (dev == p->dev && q->offset < p->offset)
				idx++;
			else if (dev != p->dev && dev < p->dev)
				idx++;
		}
	}
	return idx;
}

/* ---------- UBI ---------- */

int layout_ubi_capacity(const struct layout_ubi *u, uint64_t *ret_leb_size, uint64_t *ret_lebs)
{
	const struct layout_device *d = u->part->dev;
	uint64_t pebs = u->part->size / d->erasesize, reserve, hdr;

	hdr = d->type == FLASH_NAND ? 2ull * d->writesize : 128;
	reserve = LAYOUT_UBI_LAYOUT_PEBS + LAYOUT_UBI_RESERVED_PEBS;
	if (d->type == FLASH_NAND)
		reserve += DIV_ROUND_UP(d->size / d->erasesize * UBI_BEB_LIMIT_PER1024, 1024);
	if (d->erasesize <= hdr)
		return -EINVAL;
	*ret_leb_size = d->erasesize - hdr;
	*ret_lebs = pebs > reserve ? pebs - reserve : 0;
	return 0;
}

uint64_t layout_target_size(const struct layout *l, const struct layout_image_target *t)
{
	switch (t->storage) {
	case LAYOUT_STORAGE_NOR:
	case LAYOUT_STORAGE_NAND:
		return t->part ? t->part->size : 0;
	case LAYOUT_STORAGE_UBI:
		for (size_t i = 0; t->part && i < l->n_ubis; i++)
			if (l->ubis[i].part == t->part) {
				const struct layout_ubi_volume *v =
					layout_find_ubi_volume(&l->ubis[i], t->ubi_volume);
				return v ? v->size : 0;
			}
		return 0;
	case LAYOUT_STORAGE_FILE:
	case _LAYOUT_STORAGE_MAX:
		break;
	}
	return 0;
}

/* ---------- roles ---------- */

static void add_role(char *buf, size_t len, int *n, const char *fmt, ...) _printf_(4, 5);
static void add_role(char *buf, size_t len, int *n, const char *fmt, ...)
{
	size_t o = strlen(buf);
	va_list ap;

	if (o + 2 >= len)
		return;
	if (*n)
		o += util_snprintf(buf + o, len - o, ", ");
	va_start(ap, fmt);
	vsnprintf(buf + o, len - o, fmt, ap);
	va_end(ap);
	(*n)++;
}

int layout_partition_roles(const struct layout *l, const struct layout_partition *p, char *buf,
			   size_t len)
{
	int n = 0;

	if (!len)
		return 0;
	buf[0] = '\0';
	if (l->bootloader == p)
		add_role(buf, len, &n, "bootloader");
	for (size_t i = 0; i < l->env.n_copies; i++)
		if (l->env.copies[i].part == p) {
			add_role(buf, len, &n, l->env.n_copies == 2 ? "env copy %zu" : "env", i + 1);
		}
	for (size_t i = 0; i < l->n_ubis; i++)
		if (l->ubis[i].part == p)
			add_role(buf, len, &n, "ubi (%zu volumes)", l->ubis[i].n_volumes);
	for (size_t i = 0; i < l->n_groups; i++)
		for (size_t j = 0; j < l->groups[i].n_slots; j++) {
			const struct layout_slot *s = &l->groups[i].slots[j];

			if (s->rootfs.storage != LAYOUT_STORAGE_UBI && s->rootfs.part == p)
				add_role(buf, len, &n, "slot %s.%s rootfs", l->groups[i].name, s->name);
			if (s->has_kernel && s->kernel.storage != LAYOUT_STORAGE_UBI && s->kernel.part == p)
				add_role(buf, len, &n, "slot %s.%s kernel", l->groups[i].name, s->name);
		}
	for (size_t i = 0; i < l->n_overlays; i++)
		if (l->overlays[i].type == LAYOUT_OVERLAY_JFFS2 && l->overlays[i].part == p)
			add_role(buf, len, &n, "overlay %s (jffs2)", l->overlays[i].path);
	for (size_t i = 0; i < l->n_lowers; i++)
		if (l->lowers[i].target.storage != LAYOUT_STORAGE_UBI && l->lowers[i].target.part == p)
			add_role(buf, len, &n, "lower %s", l->lowers[i].name);
	return n;
}
