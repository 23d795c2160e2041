/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Device-mapper linear maps around NAND bad blocks, through the DM ioctls. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include <linux/dm-ioctl.h>

#include "boot_dm.h"
#include "cleanup.h"

#define SECTOR 512u

int boot_dm_plan(const uint8_t *bad, size_t n_blocks, uint32_t erasesize, uint64_t need_bytes,
		 struct boot_dm_plan *ret)
{
	struct boot_dm_plan p = { 0 };
	uint64_t bs, covered = 0;
	size_t i;

	if (erasesize == 0 || erasesize % SECTOR)
		return -EINVAL;
	bs = erasesize / SECTOR;
	for (i = 0; i < n_blocks && (need_bytes == 0 || covered < need_bytes); i++) {
		struct boot_dm_target *t;

		if (bad[i]) {
			if (p.blocks)
				p.bad_inside++;
			continue;
		}
		t = p.n_targets ? &p.targets[p.n_targets - 1] : NULL;
		if (t && t->offset + t->len == i * bs) {
			t->len += bs;
		} else {
			t = realloc(p.targets, (p.n_targets + 1) * sizeof(*t));
			if (!t) {
				boot_dm_plan_done(&p);
				return -ENOMEM;
			}
			p.targets = t;
			t = &p.targets[p.n_targets++];
			*t = (struct boot_dm_target){ .start = p.sectors, .len = bs, .offset = i * bs };
		}
		p.sectors += bs;
		p.blocks++;
		covered += erasesize;
	}
	/* bad blocks before the first good one are not "inside" either */
	if ((need_bytes && covered < need_bytes) || p.blocks == 0) {
		boot_dm_plan_done(&p);
		return -ENOSPC;
	}
	*ret = p;
	return 0;
}

void boot_dm_plan_done(struct boot_dm_plan *p)
{
	if (!p)
		return;
	free(p->targets);
	*p = (struct boot_dm_plan){ 0 };
}

int boot_dm_plan_format(const struct boot_dm_plan *p, dev_t dev, char **ret)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f)
		return -ENOMEM;
	for (size_t i = 0; i < p->n_targets; i++)
		fprintf(f, "%" PRIu64 " %" PRIu64 " linear %u:%u %" PRIu64 "\n", p->targets[i].start,
			p->targets[i].len, major(dev), minor(dev), p->targets[i].offset);
	if (fclose(f) != 0) {
		free(buf);
		return -ENOMEM;
	}
	*ret = buf;
	return 0;
}

/* Version 4.0.0: every 4.x kernel accepts it (it refuses a newer minor). */
static void dm_init(struct dm_ioctl *io, size_t size, const char *name)
{
	memset(io, 0, size);
	io->version[0] = DM_VERSION_MAJOR;
	io->data_size = size;
	io->data_start = sizeof(*io);
	if (name)
		snprintf(io->name, sizeof(io->name), "%s", name);
}

static int dm_control(void)
{
	int fd = open(BOOT_DM_CONTROL, O_RDWR | O_CLOEXEC);

	return fd < 0 ? -errno : fd;
}

int boot_dm_remove(const char *name)
{
	_cleanup_close_ int fd = dm_control();
	struct dm_ioctl io;

	if (fd < 0)
		return fd;
	dm_init(&io, sizeof(io), name);
	if (ioctl(fd, DM_DEV_REMOVE, &io) < 0)
		return -errno;
	return 0;
}

static size_t align8(size_t v)
{
	return (v + 7) & ~(size_t)7;
}

static int load_table(int fd, const char *name, dev_t dev, const struct boot_dm_plan *p)
{
	_cleanup_free_ char *buf = NULL;
	struct dm_ioctl *io;
	size_t size = sizeof(struct dm_ioctl), pos;
	char params[64];

	for (size_t i = 0; i < p->n_targets; i++)
		size += sizeof(struct dm_target_spec) + align8(sizeof(params));
	buf = calloc(1, size);
	if (!buf)
		return -ENOMEM;
	io = (struct dm_ioctl *)buf;
	dm_init(io, size, name);
	io->target_count = p->n_targets;
	io->flags = DM_READONLY_FLAG;
	pos = sizeof(*io);
	for (size_t i = 0; i < p->n_targets; i++) {
		struct dm_target_spec *t = (struct dm_target_spec *)(buf + pos);
		size_t plen;

		t->sector_start = p->targets[i].start;
		t->length = p->targets[i].len;
		snprintf(t->target_type, sizeof(t->target_type), "linear");
		plen = (size_t)snprintf(params, sizeof(params), "%u:%u %" PRIu64, major(dev), minor(dev),
					p->targets[i].offset) + 1;
		memcpy(buf + pos + sizeof(*t), params, plen);
		t->next = sizeof(*t) + align8(plen);
		pos += t->next;
	}
	io->data_size = pos;
	if (ioctl(fd, DM_TABLE_LOAD, io) < 0)
		return -errno;
	return 0;
}

int boot_dm_create(const char *name, dev_t dev, const struct boot_dm_plan *p,
		   char *ret_path, size_t path_len, dev_t *ret_dev, struct error *err)
{
	_cleanup_close_ int fd = dm_control();
	struct dm_ioctl io;
	const char *step;
	char path[128];
	struct stat st;
	dev_t newdev;
	int r;

	if (fd < 0)
		return error_set(err, fd, "%s: %s (is dm-mod loaded?)", BOOT_DM_CONTROL, strerror(-fd));
	dm_init(&io, sizeof(io), name);
	if (ioctl(fd, DM_DEV_CREATE, &io) < 0) {
		r = -errno;
		return error_set(err, r, "DM_DEV_CREATE %s: %s", name, strerror(-r));
	}
	newdev = (dev_t)io.dev;
	step = "DM_TABLE_LOAD";
	r = load_table(fd, name, dev, p);
	if (r >= 0) {
		step = "DM_DEV_SUSPEND (resume)";
		dm_init(&io, sizeof(io), name);
		r = ioctl(fd, DM_DEV_SUSPEND, &io) < 0 ? -errno : 0;
	}
	if (r < 0) {
		error_set(err, r, "%s %s: %s", step, name, strerror(-r));
		boot_dm_remove(name);
		return r;
	}
	/* devtmpfs makes /dev/dm-N; without it make our own node */
	snprintf(path, sizeof(path), "/dev/dm-%u", minor(newdev));
	for (int i = 0; i < 50 && stat(path, &st) < 0; i++)
		usleep(10000);
	if (stat(path, &st) < 0 || st.st_rdev != newdev) {
		snprintf(path, sizeof(path), "/dev/mapper/%s", name);
		unlink(path);
		if (mknod(path, S_IFBLK | 0600, newdev) < 0) {
			r = -errno;
			error_set(err, r, "mknod %s: %s", path, strerror(-r));
			boot_dm_remove(name);
			return r;
		}
	}
	snprintf(ret_path, path_len, "%s", path);
	if (ret_dev)
		*ret_dev = newdev;
	return 0;
}
