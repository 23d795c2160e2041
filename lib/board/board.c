/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "board.h"
#include "cleanup.h"
#include "nsim.h"
#include "util.h"

struct board {
	const struct layout *layout;
	char *target;
	bool sim;
	bool writable;
	struct flash **devs;   /* sim: one root device per layout device, opened lazily */
};

int board_target_parse(const char *target, const char **ret_sim_path)
{
	const size_t n = strlen(BOARD_TARGET_SIM_PREFIX);

	if (ret_sim_path)
		*ret_sim_path = NULL;
	if (!target || !*target || !strcmp(target, BOARD_TARGET_SYSTEM_NAME))
		return BOARD_TARGET_SYSTEM;
	if (strncmp(target, BOARD_TARGET_SIM_PREFIX, n) || !target[n])
		return -EINVAL;
	if (ret_sim_path)
		*ret_sim_path = target + n;
	return BOARD_TARGET_SIM;
}

int board_sim_side_path(const char *target, const char *name, char **ret)
{
	const char *sim;
	struct stat st;

	if (board_target_parse(target, &sim) != BOARD_TARGET_SIM)
		return -EINVAL;
	if (asprintf(ret, "%s%s%s", sim, stat(sim, &st) == 0 && S_ISDIR(st.st_mode) ?
		     "/flashd." : ".", name) < 0)
		return -ENOMEM;
	return 0;
}

bool board_is_sim(const struct board *b) { return b->sim; }
const struct layout *board_layout(const struct board *b) { return b->layout; }

int board_open(const struct layout *l, const char *target, bool writable, struct board **ret)
{
	_cleanup_(board_closep) struct board *b = calloc(1, sizeof(*b));

	int kind = board_target_parse(target, NULL);

	if (!b)
		return -ENOMEM;
	if (kind < 0)
		return kind;
	if (!target || !*target)
		target = BOARD_TARGET_SYSTEM_NAME;
	b->sim = kind == BOARD_TARGET_SIM;
	b->layout = l;
	b->writable = writable;
	b->target = strdup(target);
	b->devs = calloc(l->n_devices ? l->n_devices : 1, sizeof(*b->devs));
	if (!b->target || !b->devs)
		return -ENOMEM;
	*ret = TAKE_PTR(b);
	return 0;
}

void board_close(struct board *b)
{
	if (!b)
		return;
	for (size_t i = 0; b->devs && i < b->layout->n_devices; i++)
		flash_close(b->devs[i]);
	free(b->devs);
	free(b->target);
	free(b);
}

int board_sim_device_path(const char *target, const struct layout *l,
			  const struct layout_device *d, char **ret)
{
	const char *path;
	struct stat st;
	char *p;

	if (board_target_parse(target, &path) != BOARD_TARGET_SIM)
		return -EINVAL;
	/* a directory holds one file per device; a plain path is the only device */
	if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
		if (asprintf(&p, "%s/%s.sim", path, d->name) < 0)
			return -ENOMEM;
	} else {
		/* several devices need a directory: say whether it is missing
		 * or a file stands in its place */
		if (l->n_devices > 1)
			return stat(path, &st) < 0 ? -errno : -ENOTDIR;
		p = strdup(path);
		if (!p)
			return -ENOMEM;
	}
	*ret = p;
	return 0;
}

static int sim_device(struct board *b, const struct layout_device *d, struct flash **ret)
{
	size_t i = d - b->layout->devices;
	_cleanup_free_ char *path = NULL, *spec = NULL;
	int r;

	if (!b->devs[i]) {
		r = board_sim_device_path(b->target, b->layout, d, &path);
		if (r < 0)
			return r;
		if (asprintf(&spec, "sim:%s", path) < 0)
			return -ENOMEM;
		r = flash_open(spec, b->writable, &b->devs[i]);
		if (r < 0)
			return r;
		/* the simulator must be the chip the layout describes */
		if (b->devs[i]->info.size != d->size || b->devs[i]->info.erasesize != d->erasesize ||
		    b->devs[i]->info.type != d->type) {
			flash_close(b->devs[i]);
			b->devs[i] = NULL;
			return -EMEDIUMTYPE;
		}
	}
	*ret = b->devs[i];
	return 0;
}

int board_open_partition(struct board *b, const struct layout_partition *p, struct flash **ret)
{
	_cleanup_free_ char *spec = NULL;
	struct flash *dev;
	int r;

	if (b->sim) {
		r = sim_device(b, p->dev, &dev);
		if (r < 0)
			return r;
		return flash_open_window(dev, p->name, p->offset, p->size, ret);
	}
	if (asprintf(&spec, "mtd:%s", p->name) < 0)
		return -ENOMEM;
	return flash_open(spec, b->writable && !p->readonly, ret);
}

int board_open_partition_by_name(struct board *b, const char *name, struct flash **ret)
{
	const struct layout_partition *p = layout_find_partition(b->layout, name);

	if (!p)
		return -ENOENT;
	return board_open_partition(b, p, ret);
}

int board_partition_path(struct board *b, const struct layout_partition *p, char **ret_path,
			 uint64_t *ret_offset)
{
	int r;

	if (!b->sim) {
		r = flash_mtd_find_by_name_dup(FLASH_MTD_SYSFS, p->name, ret_path);
		if (r >= 0)
			*ret_offset = 0;
		return r;
	}
	r = board_sim_device_path(b->target, b->layout, p->dev, ret_path);
	if (r >= 0)
		*ret_offset = nsim_data_offset() + p->offset;
	return r;
}
