/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Block devices for the read-only layers (see boot_root.h). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <linux/loop.h>
#include <mtd/ubi-user.h>

#include "boot_dm.h"
#include "boot_root.h"
#include "cleanup.h"
#include "flash.h"
#include "flash_ubi.h"
#include "flashio.h"
#include "squashfs.h"
#include "util.h"

static const char *const boot_root_kind_table[] = { BOOT_ROOT_KIND_LIST(STRING_TABLE_NAME) };
DEFINE_STRING_TABLE_TO(boot_root_kind, enum boot_root_kind)

void boot_root_done(struct boot_root *r)
{
	if (!r)
		return;
	free(r->dm_table);
	r->dm_table = NULL;
	if (r->hold_fd >= 0)
		close(r->hold_fd);
	r->hold_fd = -1;
}

/* devtmpfs makes nodes asynchronously to the ioctl that creates them */
static int wait_node(const char *path, struct stat *st)
{
	for (int i = 0; i < 200; i++) {
		if (stat(path, st) == 0)
			return 0;
		usleep(10000);
	}
	return -errno;
}

int boot_root_mtd_dev(const struct layout_partition *p, char *buf, size_t len, struct error *err)
{
	return flash_mtd_find_partition(FLASH_MTD_SYSFS, p->name, buf, len, NULL, err);
}

static int mtdblock_of(const char *mtd, char *buf, size_t len, struct stat *st, struct error *err)
{
	int r;

	snprintf(buf, len, "/dev/mtdblock%s", mtd + strlen("/dev/mtd"));
	r = wait_node(buf, st);
	if (r < 0 || !S_ISBLK(st->st_mode))
		return error_set(err, r < 0 ? r : -ENOTBLK,
			    "%s: %s (is the mtdblock driver loaded?)", buf,
			    r < 0 ? strerror(-r) : "not a block device");
	return 0;
}

/* Bytes the squashfs at the start of the logical stream of f uses. */
static int image_size(struct flash *f, const char *what, uint64_t *ret, struct error *err)
{
	_cleanup_flashio_reader_ struct flashio_reader *rd = NULL;
	uint8_t sb[SQUASHFS_SUPERBLOCK_SIZE];
	struct squashfs_info info;
	size_t got = 0;
	int r;

	r = flashio_reader_new(f, &rd);
	if (r < 0)
		return error_set(err, r, "%s: %s", what, strerror(-r));
	while (got < sizeof(sb)) {
		ssize_t n = flashio_reader_read(rd, sb + got, sizeof(sb) - got);
		if (n == -EUCLEAN)
			continue;
		if (n <= 0)
			return error_set(err, n < 0 ? (int)n : -ENODATA,
				    "%s: reading the squashfs superblock: %s", what,
				    n < 0 ? strerror((int)-n) : "no good block");
		got += (size_t)n;
	}
	r = squashfs_check_superblock(sb, sizeof(sb), f->info.size, &info, err);
	if (r < 0)
		return error_prefix(err, r, "%s: no usable squashfs in the slot", what);
	*ret = info.bytes_used;
	return 0;
}

static int setup_mtd(const struct layout_image_target *t, const char *dm_name,
		     struct boot_root *ret, struct error *err)
{
	_cleanup_flash_ struct flash *f = NULL;
	_cleanup_free_ uint8_t *bad = NULL;
	struct boot_dm_plan plan = { 0 };
	char mtd[64];
	struct stat st;
	uint64_t n, need;
	bool bad_in_image = false;
	int r;

	r = boot_root_mtd_dev(t->part, mtd, sizeof(mtd), err);
	if (r < 0)
		return r;
	snprintf(ret->source, sizeof(ret->source), "%s", mtd);
	r = mtdblock_of(mtd, ret->device, sizeof(ret->device), &st, err);
	if (r < 0)
		return r;
	ret->kind = BOOT_ROOT_MTDBLOCK;
	if (t->storage == LAYOUT_STORAGE_NOR)
		return 0;

	r = flash_open(mtd, false, &f);
	if (r < 0)
		return error_set(err, r, "%s (%s): %s", mtd, t->part->name, strerror(-r));
	n = flash_blocks(f);
	bad = calloc(n ? n : 1, 1);
	if (!bad)
		return -ENOMEM;
	for (uint64_t i = 0; i < n; i++) {
		r = flash_block_isbad(f, i * f->info.erasesize);
		if (r < 0)
			return error_set(err, r, "%s: bad-block check of block %llu: %s", mtd,
				    (unsigned long long)i, strerror(-r));
		bad[i] = r > 0;
		ret->bad_blocks += bad[i];
	}
	r = image_size(f, mtd, &ret->image_bytes, err);
	if (r < 0)
		return r;
	need = DIV_ROUND_UP(ret->image_bytes, f->info.erasesize);
	for (uint64_t i = 0; i < need && i < n; i++)
		bad_in_image |= bad[i];
	if (!bad_in_image)
		return 0;

	r = boot_dm_plan(bad, n, f->info.erasesize, ret->image_bytes, &plan);
	if (r < 0)
		return error_set(err, r, "%s: %s", mtd,
			    r == -ENOSPC ? "the good blocks are fewer than the image needs"
					 : strerror(-r));
	ret->bad_inside = plan.bad_inside;
	boot_dm_remove(dm_name); /* a leftover from an earlier attempt */
	r = boot_dm_plan_format(&plan, st.st_rdev, &ret->dm_table);
	if (r >= 0)
		r = boot_dm_create(dm_name, st.st_rdev, &plan, ret->device, sizeof(ret->device),
				   NULL, err);
	boot_dm_plan_done(&plan);
	if (r < 0)
		return r;
	snprintf(ret->dm_name, sizeof(ret->dm_name), "%s", dm_name);
	ret->kind = BOOT_ROOT_DM_LINEAR;
	return 0;
}

int boot_root_ubi_attach(const struct layout *l, const struct layout_partition *p,
			 struct error *err)
{
	char mtd[64];
	unsigned n;
	int r;

	(void)l;
	r = flash_mtd_find_partition(FLASH_MTD_SYSFS, p->name, mtd, sizeof(mtd), &n, err);
	if (r < 0)
		return r;
	r = flash_ubi_attach(BOOT_ROOT_UBI_SYSFS, n, err);
	return r < 0 ? error_prefix(err, r, "partition %s", p->name) : r;
}

int boot_root_ubi_volume(int ubi_num, const char *name)
{
	struct flash_ubi_volume v;
	int r = flash_ubi_volume_find(BOOT_ROOT_UBI_SYSFS, ubi_num, name, &v);

	return r < 0 ? r : v.id;
}

static int setup_ubi(const struct layout *l, const struct layout_image_target *t,
		     struct boot_root *ret, struct error *err)
{
	_cleanup_close_ int fd = -1;
	struct ubi_blkcreate_req req = { 0 };
	struct flash_ubi_volume v;
	const char *why;
	char vol[64];
	struct stat st;
	int ubi, id, r;

	ubi = boot_root_ubi_attach(l, t->part, err);
	if (ubi < 0)
		return ubi;
	r = flash_ubi_volume_find(BOOT_ROOT_UBI_SYSFS, ubi, t->ubi_volume, &v);
	if (r < 0)
		return error_set(err, r, "ubi%d (%s): no volume named %s", ubi, t->part->name,
			    t->ubi_volume);
	/* an interrupted volume update leaves part of an image: never mounted */
	why = flash_ubi_volume_broken(&v);
	if (why)
		return error_set(err, -EBADMSG, "ubi%d:%s: %s: not bootable", ubi, t->ubi_volume, why);
	id = v.id;
	snprintf(ret->source, sizeof(ret->source), "ubi%d:%s", ubi, t->ubi_volume);
	snprintf(vol, sizeof(vol), "/dev/ubi%d_%d", ubi, id);
	if (wait_node(vol, &st) < 0 || (fd = open(vol, O_RDONLY | O_CLOEXEC)) < 0)
		return error_set(err, -errno, "%s: %s", vol, strerror(errno));
	if (ioctl(fd, UBI_IOCVOLCRBLK, &req) < 0 && errno != EEXIST)
		return error_set(err, -errno, "UBI_IOCVOLCRBLK on %s: %s (kernel without CONFIG_MTD_UBI_BLOCK?)",
			    vol, strerror(errno));
	snprintf(ret->device, sizeof(ret->device), "/dev/ubiblock%d_%d", ubi, id);
	r = wait_node(ret->device, &st);
	if (r < 0)
		return error_set(err, r, "%s: %s", ret->device, strerror(-r));
	ret->kind = BOOT_ROOT_UBIBLOCK;
	return 0;
}

static int setup_loop(const char *file, struct boot_root *ret, struct error *err)
{
	_cleanup_close_ int img = -1, ctl = -1, dev = -1;
	struct loop_config cfg = { 0 };
	struct stat st;
	int n, r;

	snprintf(ret->source, sizeof(ret->source), "%s", file);
	img = open(file, O_RDONLY | O_CLOEXEC);
	if (img < 0)
		return error_set(err, -errno, "image file %s: %s", file, strerror(errno));
	ctl = open("/dev/loop-control", O_RDWR | O_CLOEXEC);
	if (ctl < 0)
		return error_set(err, -errno, "/dev/loop-control: %s (is the loop driver loaded?)",
			    strerror(errno));
	for (int attempt = 0; attempt < 8; attempt++) {
		n = ioctl(ctl, LOOP_CTL_GET_FREE);
		if (n < 0)
			return error_set(err, -errno, "LOOP_CTL_GET_FREE: %s", strerror(errno));
		snprintf(ret->device, sizeof(ret->device), "/dev/loop%d", n);
		r = wait_node(ret->device, &st);
		if (r < 0)
			return error_set(err, r, "%s: %s", ret->device, strerror(-r));
		dev = open(ret->device, O_RDONLY | O_CLOEXEC);
		if (dev < 0)
			return error_set(err, -errno, "%s: %s", ret->device, strerror(errno));
		cfg.fd = (unsigned)img;
		cfg.info.lo_flags = LO_FLAGS_READ_ONLY | LO_FLAGS_AUTOCLEAR;
		snprintf((char *)cfg.info.lo_file_name, sizeof(cfg.info.lo_file_name), "%s", file);
		if (ioctl(dev, LOOP_CONFIGURE, &cfg) == 0)
			break;
		if (errno == EINVAL || errno == ENOTTY) {
			/* kernels before 5.8 */
			if (ioctl(dev, LOOP_SET_FD, img) == 0) {
				if (ioctl(dev, LOOP_SET_STATUS64, &cfg.info) < 0) {
					r = -errno;
					ioctl(dev, LOOP_CLR_FD, 0);
					return error_set(err, r, "LOOP_SET_STATUS64 %s: %s",
						    ret->device, strerror(-r));
				}
				break;
			}
		}
		if (errno != EBUSY)
			return error_set(err, -errno, "LOOP_CONFIGURE %s with %s: %s", ret->device,
				    file, strerror(errno));
		close(TAKE_FD(dev)); /* raced with another user: take the next one */
	}
	if (dev < 0)
		return error_set(err, -EBUSY, "no free loop device for %s", file);
	ret->hold_fd = TAKE_FD(dev);
	ret->kind = BOOT_ROOT_LOOP;
	return 0;
}

int boot_root_setup(const struct layout *l, const struct layout_image_target *t,
		    const char *dm_name, struct boot_root *ret, struct error *err)
{
	struct boot_root res = { .hold_fd = -1 };
	int r = -EINVAL;

	switch (t->storage) {
	case LAYOUT_STORAGE_NOR:
	case LAYOUT_STORAGE_NAND:
		r = setup_mtd(t, dm_name, &res, err);
		break;
	case LAYOUT_STORAGE_UBI:
		r = setup_ubi(l, t, &res, err);
		break;
	case LAYOUT_STORAGE_FILE:
		r = setup_loop(t->file, &res, err);
		break;
	case _LAYOUT_STORAGE_MAX:
		break;
	}
	if (r < 0) {
		boot_root_done(&res);
		return r;
	}
	*ret = res;
	return 0;
}
