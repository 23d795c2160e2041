/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* What a block device is on the flash, through sysfs (flash_blockdev.h):
 * the one place that knows how /sys/dev/block names MTD and UBI block
 * devices and the stacks (dm) built on them. */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cleanup.h"
#include "flash.h"
#include "flash_blockdev.h"
#include "flash_ubi.h"
#include "util.h"

static const char *const flash_blockdev_kind_table[] = {
	FLASH_BLOCKDEV_KIND_LIST(STRING_TABLE_NAME)
};
DEFINE_STRING_TABLE_TO(flash_blockdev_kind, enum flash_blockdev_kind)

/* stacks deeper than this (dm on dm on dm ...) are not followed */
#define STACK_DEPTH 4

static void leaf_mtd(const char *sys, unsigned mtd, struct flash_blockdev *b)
{
	char class[PATH_MAX], path[PATH_MAX + 16];

	b->mtd = mtd;
	util_snprintf(class, sizeof(class), "%s/class/mtd", sys);
	util_snprintf(path, sizeof(path), "%s/mtd%u/name", class, mtd);
	b->kind = util_read_line(path, b->mtd_name, sizeof(b->mtd_name)) < 0 ?
		  FLASH_BLOCKDEV_UNKNOWN : FLASH_BLOCKDEV_MTD;
}

static void leaf_ubi(const char *sys, int ubi, int vol, struct flash_blockdev *b)
{
	char path[PATH_MAX];
	uint64_t mtd;

	b->kind = FLASH_BLOCKDEV_UNKNOWN;
	b->ubi = ubi;
	b->vol_id = vol;
	util_snprintf(path, sizeof(path), "%s/class/ubi/ubi%d/mtd_num", sys, ubi);
	if (util_read_u64(path, &mtd) < 0 || mtd > UINT_MAX)
		return;
	util_snprintf(path, sizeof(path), "%s/class/ubi/ubi%d/ubi%d_%d/name", sys, ubi, ubi, vol);
	if (util_read_line(path, b->vol_name, sizeof(b->vol_name)) < 0)
		return;
	leaf_mtd(sys, (unsigned)mtd, b);
	if (b->kind == FLASH_BLOCKDEV_MTD)
		b->kind = FLASH_BLOCKDEV_UBI;
}

static int leaves(const char *sys, unsigned major, unsigned minor, struct flash_blockdev *ret,
		  size_t max, size_t *n, unsigned depth);

/* A device sysfs calls name (under dir, /sys/dev/block/MAJ:MIN): flash,
 * a stack over slaves/, a loop device or a disk. */
static int leaves_of(const char *sys, const char *dir, const char *name, struct flash_blockdev *ret,
		     size_t max, size_t *n, unsigned depth)
{
	struct flash_blockdev *b = &ret[*n];
	_cleanup_closedir_ DIR *d = NULL;
	char path[PATH_MAX + 300], dev[32];
	unsigned a, c, maj, min;
	struct dirent *de;
	bool stacked = false;
	int r;

	if (*n >= max)
		return -ENOBUFS;
	*b = (struct flash_blockdev){ .kind = FLASH_BLOCKDEV_OTHER };
	util_snprintf(b->dev, sizeof(b->dev), "%s", name);
	if (!strncmp(name, "mtdblock", 8) && name[8] &&
	    strspn(name + 8, "0123456789") == strlen(name + 8)) {
		leaf_mtd(sys, (unsigned)strtoul(name + 8, NULL, 10), b);
		(*n)++;
		return 0;
	}
	if (sscanf(name, "ubiblock%u_%u", &a, &c) == 2) {
		leaf_ubi(sys, (int)a, (int)c, b);
		(*n)++;
		return 0;
	}
	if (!strncmp(name, "loop", 4)) {
		/* its backing file could be anywhere, even on the flash */
		b->kind = FLASH_BLOCKDEV_UNKNOWN;
		(*n)++;
		return 0;
	}
	util_snprintf(path, sizeof(path), "%s/slaves", dir);
	d = opendir(path);
	while (d && (de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		util_snprintf(path, sizeof(path), "%s/slaves/%s/dev", dir, de->d_name);
		if (util_read_line(path, dev, sizeof(dev)) < 0 || sscanf(dev, "%u:%u", &maj, &min) != 2)
			return -EIO;
		r = leaves(sys, maj, min, ret, max, n, depth + 1);
		if (r < 0)
			return r;
		stacked = true;
	}
	if (!stacked)
		(*n)++; /* a device of its own: not flash */
	return 0;
}

static int leaves(const char *sys, unsigned major, unsigned minor, struct flash_blockdev *ret,
		  size_t max, size_t *n, unsigned depth)
{
	char dir[PATH_MAX], link[PATH_MAX];
	const char *name;
	ssize_t len;

	if (depth > STACK_DEPTH || *n >= max)
		return -ENOBUFS;
	if (major == FLASH_BLOCKDEV_MTD_MAJOR) {
		/* JFFS2 mounted by mtdN has this number without mtdblock loaded */
		ret[*n] = (struct flash_blockdev){ 0 };
		util_snprintf(ret[*n].dev, sizeof(ret[*n].dev), "mtdblock%u", minor);
		leaf_mtd(sys, minor, &ret[(*n)++]);
		return 0;
	}
	util_snprintf(dir, sizeof(dir), "%s/dev/block/%u:%u", sys, major, minor);
	len = readlink(dir, link, sizeof(link) - 1);
	if (len < 0) {
		ret[*n] = (struct flash_blockdev){ .kind = FLASH_BLOCKDEV_UNKNOWN };
		util_snprintf(ret[*n].dev, sizeof(ret[*n].dev), "%u:%u", major, minor);
		(*n)++;
		return 0;
	}
	link[len] = '\0';
	name = strrchr(link, '/') ? strrchr(link, '/') + 1 : link;
	return leaves_of(sys, dir, name, ret, max, n, depth);
}

int flash_blockdev_leaves(const char *sys, unsigned major, unsigned minor,
			  struct flash_blockdev *ret, size_t max)
{
	size_t n = 0;
	int r = leaves(sys ? sys : FLASH_BLOCKDEV_SYSFS, major, minor, ret, max, &n, 0);

	return r < 0 ? r : (int)n;
}

void flash_blockdev_ubifs(const char *sys, const char *source, struct flash_blockdev *ret)
{
	struct flash_ubi_volume v;
	const char *name = NULL;
	char class[PATH_MAX];
	int ubi = 0, vol, off = 0;

	sys = sys ? sys : FLASH_BLOCKDEV_SYSFS;
	*ret = (struct flash_blockdev){ .kind = FLASH_BLOCKDEV_UNKNOWN };
	util_snprintf(ret->dev, sizeof(ret->dev), "%s", source);
	if (sscanf(source, "ubi%d_%d%n", &ubi, &vol, &off) == 2 && !source[off]) {
		leaf_ubi(sys, ubi, vol, ret);
		return;
	}
	if (!strncmp(source, "ubi:", 4))
		name = source + 4;
	else if (sscanf(source, "ubi%d:%n", &ubi, &off) == 1 && off)
		name = source + off;
	util_snprintf(class, sizeof(class), "%s/class/ubi", sys);
	if (name && *name && flash_ubi_volume_find(class, ubi, name, &v) >= 0)
		leaf_ubi(sys, ubi, v.id, ret);
}
