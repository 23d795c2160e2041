/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* UBI through the kernel ABI (see include/flash_ubi.h). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <mtd/ubi-user.h>

#include "cleanup.h"
#include "flash_ubi.h"
#include "util.h"

int flash_ubi_find(const char *sysroot, unsigned mtd_num)
{
	_cleanup_closedir_ DIR *d = opendir(sysroot);
	struct dirent *de;
	char path[512];

	if (!d)
		return errno == ENOENT ? -ENODEV : -errno;
	while ((de = readdir(d))) {
		unsigned ubi;
		uint64_t v;

		/* ubiN is a device, ubiN_M one of its volumes */
		if (sscanf(de->d_name, "ubi%u", &ubi) != 1 || strchr(de->d_name, '_'))
			continue;
		snprintf(path, sizeof(path), "%s/%s/mtd_num", sysroot, de->d_name);
		if (util_read_u64(path, &v) >= 0 && v == mtd_num)
			return (int)ubi;
	}
	return -ENODEV;
}

static int ctrl_ioctl(unsigned long req, void *arg, const char *what, unsigned mtd_num,
		      struct error *err)
{
	_cleanup_close_ int fd = open(FLASH_UBI_CTRL, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return error_set(err, -errno, "%s: %s (is the ubi driver loaded?)", FLASH_UBI_CTRL,
				 strerror(errno));
	if (ioctl(fd, req, arg) < 0)
		return error_set(err, -errno, "%s /dev/mtd%u: %s", what, mtd_num, strerror(errno));
	return 0;
}

int flash_ubi_attach(const char *sysroot, unsigned mtd_num, struct error *err)
{
	struct ubi_attach_req req = { .ubi_num = UBI_DEV_NUM_AUTO, .mtd_num = (int)mtd_num };
	int r = flash_ubi_find(sysroot, mtd_num);

	if (r >= 0)
		return r;
	r = ctrl_ioctl(UBI_IOCATT, &req, "attaching UBI to", mtd_num, err);
	return r < 0 ? r : req.ubi_num;
}

int flash_ubi_detach(const char *sysroot, unsigned mtd_num, struct error *err)
{
	int32_t ubi = flash_ubi_find(sysroot, mtd_num);

	if (ubi == -ENODEV)
		return 0;
	if (ubi < 0)
		return error_set(err, ubi, "%s: %s", sysroot, strerror(-ubi));
	return ctrl_ioctl(UBI_IOCDET, &ubi, "detaching UBI from", mtd_num, err);
}

static int read_attr(const char *sysroot, int ubi, int id, const char *attr, uint64_t *ret)
{
	char path[512];

	snprintf(path, sizeof(path), "%s/ubi%d/ubi%d_%d/%s", sysroot, ubi, ubi, id, attr);
	return util_read_u64(path, ret);
}

int flash_ubi_volume_read(const char *sysroot, int ubi, int id, struct flash_ubi_volume *ret)
{
	struct flash_ubi_volume v = { .ubi = ubi, .id = id };
	char path[512], type[16];
	uint64_t leb, upd, cor;
	int r;

	snprintf(path, sizeof(path), "%s/ubi%d/ubi%d_%d/name", sysroot, ubi, ubi, id);
	if ((r = util_read_line(path, v.name, sizeof(v.name))) < 0)
		return r;
	snprintf(path, sizeof(path), "%s/ubi%d/ubi%d_%d/type", sysroot, ubi, ubi, id);
	if ((r = util_read_line(path, type, sizeof(type))) < 0 ||
	    (r = read_attr(sysroot, ubi, id, "usable_eb_size", &leb)) < 0 ||
	    (r = read_attr(sysroot, ubi, id, "reserved_ebs", &v.reserved_ebs)) < 0 ||
	    (r = read_attr(sysroot, ubi, id, "data_bytes", &v.data_bytes)) < 0 ||
	    (r = read_attr(sysroot, ubi, id, "upd_marker", &upd)) < 0 ||
	    (r = read_attr(sysroot, ubi, id, "corrupted", &cor)) < 0)
		return r;
	v.is_static = !strcmp(type, "static");
	v.leb_size = (uint32_t)leb;
	v.upd_marker = upd;
	v.corrupted = cor;
	snprintf(v.dev, sizeof(v.dev), "/dev/ubi%d_%d", ubi, id);
	*ret = v;
	return 0;
}

int flash_ubi_volume_find(const char *sysroot, int ubi, const char *name,
			  struct flash_ubi_volume *ret)
{
	_cleanup_closedir_ DIR *d = NULL;
	char path[512], buf[128];
	struct dirent *de;

	snprintf(path, sizeof(path), "%s/ubi%d", sysroot, ubi);
	d = opendir(path);
	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		int a, b;

		if (sscanf(de->d_name, "ubi%d_%d", &a, &b) != 2 || a != ubi)
			continue;
		snprintf(path, sizeof(path), "%s/ubi%d/%s/name", sysroot, ubi, de->d_name);
		if (util_read_line(path, buf, sizeof(buf)) >= 0 && !strcmp(buf, name))
			return flash_ubi_volume_read(sysroot, ubi, b, ret);
	}
	return -ENOENT;
}

const char *flash_ubi_volume_broken(const struct flash_ubi_volume *v)
{
	if (v->upd_marker)
		return "volume update interrupted (UBI update marker set)";
	if (v->corrupted)
		return "volume corrupted (UBI data CRC mismatch)";
	return NULL;
}

int flash_ubi_mkvol(int ubi, int vol_id, const char *name, bool is_static, uint64_t bytes,
		    struct error *err)
{
	struct ubi_mkvol_req req = {
		.vol_id = vol_id,
		.alignment = 1,
		.bytes = (int64_t)bytes,
		.vol_type = is_static ? UBI_STATIC_VOLUME : UBI_DYNAMIC_VOLUME,
		.name_len = (int16_t)strlen(name),
	};
	_cleanup_close_ int fd = -1;
	char dev[32];

	if (strlen(name) > UBI_MAX_VOLUME_NAME)
		return error_set(err, -ENAMETOOLONG, "UBI volume name \"%s\" longer than %d", name,
				 UBI_MAX_VOLUME_NAME);
	memcpy(req.name, name, strlen(name) + 1);
	snprintf(dev, sizeof(dev), "/dev/ubi%d", ubi);
	fd = open(dev, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return error_set(err, -errno, "%s: %s", dev, strerror(errno));
	if (ioctl(fd, UBI_IOCMKVOL, &req) < 0)
		return error_set(err, -errno, "making UBI volume \"%s\" (%s, %llu bytes) on %s: %s",
				 name, is_static ? "static" : "dynamic", (unsigned long long)bytes,
				 dev, strerror(errno));
	return req.vol_id;
}

/* devtmpfs makes nodes asynchronously to the ioctl that creates them */
static int open_node(const char *dev, int flags)
{
	for (int i = 0; i < 200; i++) {
		int fd = open(dev, flags | O_CLOEXEC);
		if (fd >= 0 || errno != ENOENT)
			return fd < 0 ? -errno : fd;
		usleep(10000);
	}
	return -ENOENT;
}

int flash_ubi_volume_open_rw(const char *dev, struct error *err)
{
	int fd = open_node(dev, O_RDWR);

	/* UBI lets one writer at a time open a volume: a busy one says so here */
	if (fd < 0)
		return error_set(err, fd, "%s: %s%s", dev, strerror(-fd),
				 fd == -EBUSY ? " (another writer has the volume open)" : "");
	return fd;
}

int flash_ubi_update_start(int fd, const char *dev, uint64_t bytes, struct error *err)
{
	int64_t n = (int64_t)bytes;

	if (ioctl(fd, UBI_IOCVOLUP, &n) < 0)
		return error_set(err, -errno, "starting the update of %s (UBI_IOCVOLUP, %llu bytes): %s",
				 dev, (unsigned long long)bytes, strerror(errno));
	return 0;
}
