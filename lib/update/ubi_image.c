/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Image targets on UBI volumes (see include/ubi_image.h). */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cleanup.h"
#include "flash.h"
#include "ubi_image.h"
#include "util.h"

struct ubi_image {
	struct flash_ubi_volume vol;
	int fd;                 /* the volume, open for reading */
	int upd_fd;             /* open for writing from ubi_image_open, the update's fd */
	bool started;
	uint64_t written;
	char what[192];         /* "UBI volume rootfs_b (/dev/ubi0_3)" */
};

static int mtd_num(const char *sysroot, const struct layout_partition *p, unsigned *ret,
		   struct error *err)
{
	char dev[64];

	return flash_mtd_find_partition(sysroot, p->name, dev, sizeof(dev), ret, err);
}

int ubi_image_open(struct board *b, const struct layout_image_target *t,
		   struct ubi_image **ret, struct error *err)
{
	_cleanup_(ubi_image_freep) struct ubi_image *u = NULL;
	unsigned mtd;
	int ubi, r;

	if (board_is_sim(b))
		return error_set(err, -EOPNOTSUPP, "UBI volume %s: the simulator has no UBI; UBI "
				 "volumes are written on the running system (target system)",
				 t->ubi_volume);
	r = mtd_num(FLASH_MTD_SYSFS, t->part, &mtd, err);
	if (r < 0)
		return r;
	ubi = flash_ubi_attach(FLASH_UBI_SYSFS, mtd, err);
	if (ubi < 0)
		return error_prefix(err, ubi, "UBI partition %s", t->part->name);
	u = calloc(1, sizeof(*u));
	if (!u)
		return -ENOMEM;
	u->fd = u->upd_fd = -1;
	r = flash_ubi_volume_find(FLASH_UBI_SYSFS, ubi, t->ubi_volume, &u->vol);
	if (r < 0)
		return error_set(err, r, "ubi%d (partition %s): no volume \"%s\"%s", ubi, t->part->name,
				 t->ubi_volume, r == -ENOENT ? " (provision the board first)" : "");
	snprintf(u->what, sizeof(u->what), "UBI volume %s (%s)", u->vol.name, u->vol.dev);
	/* opened now, before the slot is marked bad: a volume another writer
	 * holds refuses the install with the env unchanged */
	u->upd_fd = flash_ubi_volume_open_rw(u->vol.dev, err);
	if (u->upd_fd < 0)
		return error_prefix(err, u->upd_fd, "%s", u->what);
	*ret = TAKE_PTR(u);
	return 0;
}

void ubi_image_free(struct ubi_image *u)
{
	if (!u)
		return;
	if (u->fd >= 0)
		close(u->fd);
	if (u->upd_fd >= 0)
		close(u->upd_fd);
	free(u);
}

const struct flash_ubi_volume *ubi_image_volume(const struct ubi_image *u) { return &u->vol; }

static int start(struct ubi_image *u, uint64_t total, struct error *err)
{
	int r;

	if (u->started)
		return 0;
	if (total > flash_ubi_volume_size(&u->vol))
		return error_set(err, -EFBIG, "%s holds %" PRIu64 " bytes, the image has %" PRIu64,
				 u->what, flash_ubi_volume_size(&u->vol), total);
	r = flash_ubi_update_start(u->upd_fd, u->vol.dev, total, err);
	if (r < 0)
		return r;
	u->started = true;
	return 0;
}

int ubi_image_write(struct ubi_image *u, uint64_t total, const void *buf, size_t len,
		    struct error *err)
{
	int r = start(u, total, err);

	if (r < 0)
		return r;
	if (u->written + len > total)
		return error_set(err, -EFBIG, "%s: more data than the %" PRIu64 " bytes of the update",
				 u->what, total);
	if (util_write_full(u->upd_fd, buf, len) < 0)
		return error_set(err, -errno, "%s: writing at %" PRIu64 ": %s", u->what, u->written,
				 strerror(errno));
	u->written += len;
	return 0;
}

int ubi_image_finish(struct ubi_image *u, uint64_t total, struct error *err)
{
	const char *why;
	int r = start(u, total, err);

	if (r < 0)
		return r;
	if (u->written != total)
		return error_set(err, -EIO, "%s: the update got %" PRIu64 " of %" PRIu64 " bytes",
				 u->what, u->written, total);
	/* the kernel ends the update with the last byte; closing commits nothing more */
	close(u->upd_fd);
	u->upd_fd = -1;
	r = flash_ubi_volume_read(FLASH_UBI_SYSFS, u->vol.ubi, u->vol.id, &u->vol);
	if (r < 0)
		return error_set(err, r, "%s: reading its state: %s", u->what, strerror(-r));
	why = flash_ubi_volume_broken(&u->vol);
	if (why)
		return error_set(err, -EIO, "%s after the update: %s", u->what, why);
	if (u->vol.is_static && u->vol.data_bytes != total)
		return error_set(err, -EIO, "%s holds %" PRIu64 " bytes after an update of %" PRIu64,
				 u->what, u->vol.data_bytes, total);
	return 0;
}

ssize_t ubi_image_read(struct ubi_image *u, uint64_t off, void *buf, size_t len)
{
	ssize_t n;

	if (u->fd < 0) {
		u->fd = open(u->vol.dev, O_RDONLY | O_CLOEXEC);
		if (u->fd < 0)
			return -errno;
	}
	n = pread(u->fd, buf, len, (off_t)off);
	return n < 0 ? -errno : n;
}

const char *ubi_image_target_broken(const struct layout_image_target *t, const char *mtd_sysfs,
				    const char *ubi_sysfs)
{
	struct flash_ubi_volume v;
	struct error err = {};
	unsigned mtd;
	int ubi;

	if (t->storage != LAYOUT_STORAGE_UBI || mtd_num(mtd_sysfs, t->part, &mtd, &err) < 0)
		return NULL;
	ubi = flash_ubi_find(ubi_sysfs, mtd);
	if (ubi < 0 || flash_ubi_volume_find(ubi_sysfs, ubi, t->ubi_volume, &v) < 0)
		return NULL;
	return flash_ubi_volume_broken(&v);
}

void ubi_image_mark_unfinished(struct slot_env *st, const struct layout_slot_group *g,
			       const char *mtd_sysfs, const char *ubi_sysfs)
{
	for (size_t i = 0; i < g->n_slots && i < st->n_slots; i++) {
		const struct layout_slot *s = &g->slots[i];

		st->slots[i].unfinished = ubi_image_target_broken(&s->rootfs, mtd_sysfs, ubi_sysfs) ||
			(s->has_kernel && ubi_image_target_broken(&s->kernel, mtd_sysfs, ubi_sysfs));
	}
}
