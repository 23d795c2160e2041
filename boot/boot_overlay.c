/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Writable layer: format, reset, mount with tmpfs fallback, probe. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>
#include <mtd/ubi-user.h>

#include "boot_overlay.h"
#include "boot_root.h"
#include "cleanup.h"
#include "jffs2.h"
#include "util.h"

static const char *const boot_overlay_medium_table[] = {
	BOOT_OVERLAY_MEDIUM_LIST(STRING_TABLE_NAME)
};
DEFINE_STRING_TABLE_TO(boot_overlay_medium, enum boot_overlay_medium)

static bool jffs2_magic(const uint8_t *b)
{
	/* host-endian nodes; accept both orders like the kernel's scan */
	return (b[0] == 0x85 && b[1] == 0x19) || (b[0] == 0x19 && b[1] == 0x85);
}

static int read_head(struct flash *f, uint64_t off, uint8_t *buf, size_t len)
{
	int r = flash_read(f, off, buf, len);
	return r == -EUCLEAN ? 0 : r;
}

/* What one good block starts with. */
static int classify_block(struct flash *f, uint64_t off, uint8_t *buf, size_t page,
			  enum boot_overlay_medium *ret)
{
	int r = jffs2_block_is_clean(f, off);

	if (r < 0 && r != -EUCLEAN && r != -EBADMSG)
		return r;
	if (r == 1) {
		*ret = BOOT_OVERLAY_MEDIUM_JFFS2;
		return 0;
	}
	r = read_head(f, off, buf, page);
	if (r < 0 && r != -EBADMSG)
		return r;
	if (r >= 0 && jffs2_magic(buf))
		*ret = BOOT_OVERLAY_MEDIUM_JFFS2;
	else if (r >= 0 && util_mem_is(buf, 0xff, page))
		*ret = BOOT_OVERLAY_MEDIUM_ERASED;
	else
		*ret = BOOT_OVERLAY_MEDIUM_FOREIGN;
	return 0;
}

/* Every good block is looked at, as the kernel's mount scan would: one
 * block carrying JFFS2 (cleanmarker or node) makes the partition JFFS2,
 * whatever the others hold (an erase interrupted by a power cut or by
 * JFFS2's own garbage collection leaves one block of garbage, and the
 * kernel simply erases it again). FOREIGN only when no block does. */
int boot_overlay_classify(struct flash *f, enum boot_overlay_medium *ret)
{
	uint32_t es = f->info.erasesize;
	size_t page = f->info.writesize > 1 ? f->info.writesize : 4096;
	_cleanup_free_ uint8_t *buf = NULL;
	bool any_good = false, foreign = false;
	int r;

	page = MIN(page, (size_t)es);
	buf = malloc(page);
	if (!buf)
		return -ENOMEM;
	for (uint64_t off = 0; off < f->info.size; off += es) {
		enum boot_overlay_medium m;

		r = flash_block_isbad(f, off);
		if (r < 0)
			return r;
		if (r)
			continue;
		any_good = true;
		r = classify_block(f, off, buf, page, &m);
		if (r < 0)
			return r;
		if (m == BOOT_OVERLAY_MEDIUM_JFFS2) {
			*ret = m;
			return 0;
		}
		foreign |= m == BOOT_OVERLAY_MEDIUM_FOREIGN;
	}
	if (!any_good)
		return -ENOSPC;
	*ret = foreign ? BOOT_OVERLAY_MEDIUM_FOREIGN : BOOT_OVERLAY_MEDIUM_ERASED;
	return 0;
}

int boot_overlay_probe(const char *dir, struct boot_overlay_probe *ret)
{
	struct boot_overlay_probe p = { .done = true };
	_cleanup_free_ char *d = NULL, *a = NULL, *b = NULL;
	int fd;

	if (asprintf(&d, "%s/.flashd-probe", dir) < 0 || asprintf(&a, "%s/a", d) < 0 ||
	    asprintf(&b, "%s/b", d) < 0)
		return -ENOMEM;
	rmdir(d);
	if (mkdir(d, 0700) < 0)
		return -errno;
	p.whiteout = mknod(a, S_IFCHR | 0000, makedev(0, 0)) == 0;
	unlink(a);
	fd = open(a, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
	if (fd >= 0) {
		close(fd);
		p.rename_whiteout = renameat2(AT_FDCWD, a, AT_FDCWD, b, RENAME_WHITEOUT) == 0;
		unlink(a);
		unlink(b);
	}
	p.xattr_trusted = setxattr(d, "trusted.flashd.probe", "y", 1, 0) == 0;
	p.xattr_user = setxattr(d, "user.flashd.probe", "y", 1, 0) == 0;
	fd = open(d, O_TMPFILE | O_WRONLY | O_CLOEXEC, 0600);
	p.tmpfile = fd >= 0;
	if (fd >= 0)
		close(fd);
	if (rmdir(d) < 0)
		return -errno;
	*ret = p;
	return 0;
}

/* ---- factory reset and first-boot format ---- */

static int jffs2_format(const char *mtd, struct flashio_stats *st, struct error *err)
{
	_cleanup_flash_ struct flash *f = NULL;
	int r = flash_open(mtd, true, &f);

	if (r < 0)
		return error_set(err, r, "%s: %s", mtd, strerror(-r));
	r = jffs2_erase_partition(f, FLASHIO_MARK_BAD, st);
	if (r < 0)
		return error_set(err, r, "erasing %s with cleanmarkers: %s", mtd, strerror(-r));
	return 0;
}

static int ubi_wipe(const char *vol, struct error *err)
{
	_cleanup_close_ int fd = open(vol, O_RDWR | O_CLOEXEC);
	int64_t bytes = 0;

	if (fd < 0)
		return error_set(err, -errno, "%s: %s", vol, strerror(errno));
	/* an update of 0 bytes empties the volume; UBIFS formats it at mount */
	if (ioctl(fd, UBI_IOCVOLUP, &bytes) < 0)
		return error_set(err, -errno, "UBI_IOCVOLUP 0 on %s: %s", vol, strerror(errno));
	return 0;
}

static void fill_usage(const char *mnt, struct boot_overlay_result *res)
{
	struct statvfs sv;

	if (statvfs(mnt, &sv) == 0) {
		res->size = (uint64_t)sv.f_blocks * sv.f_frsize;
		res->used = (uint64_t)(sv.f_blocks - sv.f_bfree) * sv.f_frsize;
	}
}

static int mount_tmpfs(const char *mnt, uint64_t size, struct boot_overlay_result *res)
{
	char opts[64] = "mode=0755";

	if (size)
		snprintf(opts, sizeof(opts), "mode=0755,size=%llu", (unsigned long long)size);
	if (mount("tmpfs", mnt, "tmpfs", MS_NOSUID | MS_NODEV, opts) < 0)
		return -errno;
	res->state = "tmpfs";
	res->fstype = "tmpfs";
	snprintf(res->source, sizeof(res->source), "tmpfs");
	return 0;
}

static int mount_jffs2(const struct layout_overlay *ov, const char *mnt, bool reset,
		       struct boot_overlay_result *res, struct error *why)
{
	_cleanup_flash_ struct flash *f = NULL;
	enum boot_overlay_medium m;
	int r;

	r = boot_root_mtd_dev(ov->part, res->device, sizeof(res->device), why);
	if (r < 0)
		return r;
	snprintf(res->source, sizeof(res->source), "mtd%s", res->device + strlen("/dev/mtd"));
	if (reset) {
		r = jffs2_format(res->device, NULL, why);
		if (r < 0)
			return r;
		res->reset_done = true;
	}
	r = flash_open(res->device, false, &f);
	if (r < 0)
		return error_set(why, r, "%s: %s", res->device, strerror(-r));
	r = boot_overlay_classify(f, &m);
	flash_close(TAKE_PTR(f));
	if (r < 0)
		return error_set(why, r, "%s: reading the partition: %s", res->device, strerror(-r));
	res->medium = boot_overlay_medium_to_string(m);
	switch (m) {
	case BOOT_OVERLAY_MEDIUM_ERASED:
		/* mainline JFFS2 would erase every block at mount: do it
		 * here, once, with cleanmarkers */
		r = jffs2_format(res->device, NULL, why);
		if (r < 0)
			return r;
		res->formatted = true;
		break;
	case BOOT_OVERLAY_MEDIUM_JFFS2:
		break;
	case BOOT_OVERLAY_MEDIUM_FOREIGN:
		return error_set(why, -EMEDIUMTYPE,
			    "%s (%s) holds data that is not JFFS2 (no block carries a cleanmarker or node); "
			    "not mounting it "
			    "(the kernel would erase it). Check that the layout names the right partition; "
			    "only if what it holds is not needed, a factory reset (flashctl overlay reset) "
			    "erases and formats it",
			    ov->part->name, res->device);
	case _BOOT_OVERLAY_MEDIUM_MAX:
		break;
	}
	if (mount(res->source, mnt, "jffs2", MS_NOATIME | MS_NOSUID | MS_NODEV, NULL) < 0)
		return error_set(why, -errno, "mount -t jffs2 %s (%s) on %s: %s", res->source,
			    ov->part->name, mnt, strerror(errno));
	res->state = "mounted";
	res->fstype = "jffs2";
	return 0;
}

static int mount_ubifs(const struct layout *l, const struct layout_overlay *ov, const char *mnt,
		       bool reset, struct boot_overlay_result *res, struct error *why)
{
	int ubi, id, r;

	ubi = boot_root_ubi_attach(l, ov->part, why);
	if (ubi < 0)
		return ubi;
	id = boot_root_ubi_volume(ubi, ov->ubi_volume);
	if (id < 0)
		return error_set(why, id, "ubi%d (%s): no volume named %s", ubi, ov->part->name,
			    ov->ubi_volume);
	snprintf(res->device, sizeof(res->device), "/dev/ubi%d_%d", ubi, id);
	snprintf(res->source, sizeof(res->source), "ubi%d:%s", ubi, ov->ubi_volume);
	if (reset) {
		r = ubi_wipe(res->device, why);
		if (r < 0)
			return r;
		res->reset_done = true;
	}
	if (mount(res->source, mnt, "ubifs", MS_NOATIME | MS_NOSUID | MS_NODEV, NULL) < 0)
		return error_set(why, -errno, "mount -t ubifs %s on %s: %s", res->source, mnt,
			    strerror(errno));
	res->state = "mounted";
	res->fstype = "ubifs";
	return 0;
}

int boot_overlay_mount(const struct layout *l, const struct layout_overlay *ov, const char *mnt,
		       bool reset, struct boot_overlay_result *ret, struct error *err)
{
	struct boot_overlay_result res = { .medium = NULL };
	int r = 0;

	switch (ov->type) {
	case LAYOUT_OVERLAY_JFFS2:
		r = mount_jffs2(ov, mnt, reset, &res, &res.fallback_reason);
		break;
	case LAYOUT_OVERLAY_UBIFS:
		r = mount_ubifs(l, ov, mnt, reset, &res, &res.fallback_reason);
		break;
	case LAYOUT_OVERLAY_TMPFS:
		r = mount_tmpfs(mnt, ov->tmpfs_size, &res);
		if (r < 0)
			return error_set(err, r, "mount tmpfs on %s: %s", mnt, strerror(-r));
		res.reset_done = reset;
		break;
	case _LAYOUT_OVERLAY_MAX:
		break;
	}
	if (r < 0) {
		res.fallback = true;
		r = mount_tmpfs(mnt, 0, &res);
		if (r < 0)
			return error_set(err, r, "%s; and the tmpfs fallback on %s failed too: %s",
				    res.fallback_reason.msg, mnt, strerror(-r));
	}
	fill_usage(mnt, &res);
	boot_overlay_probe(mnt, &res.probe);
	*ret = res;
	return 0;
}
