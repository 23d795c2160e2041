/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* "/dev/mtdN" and "mtd:NAME" backend: Linux MTD character devices through
 * the ioctl ABI of <mtd/mtd-user.h>. Sizes come from sysfs when present
 * (MEMGETINFO's size is 32-bit). Plain read() on mtdchar hides ECC results,
 * so NAND reads compare ECCGETSTATS before and after (like nanddump). */
#include <dirent.h>
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
#include <mtd/mtd-user.h>

#include "cleanup.h"
#include "error.h"
#include "flash.h"
#include "util.h"

#define MTD_CHAR_MAJOR 90

struct mtd_priv {
	int fd;
	unsigned index;
};

static const struct {
	const char *sysfs;
	int type; /* enum flash_type, or -EMEDIUMTYPE */
} mtd_types[] = {
	{ "nor", FLASH_NOR },
	{ "ram", FLASH_NOR },       /* mtdram: byte-writable, no OOB */
	{ "rom", FLASH_NOR },
	{ "dataflash", FLASH_NOR },
	{ "nand", FLASH_NAND },
	{ "mlc-nand", FLASH_NAND },
	{ "ubi", -EMEDIUMTYPE },    /* a UBI volume is not raw flash */
	{ "absent", -EMEDIUMTYPE },
};

/* MEMGETINFO's numeric types (MTD_RAM, ...) to the same classes. */
static const struct {
	unsigned char mtd;
	int type;
} mtd_ioctl_types[] = {
	{ MTD_NORFLASH, FLASH_NOR },
	{ MTD_RAM, FLASH_NOR },
	{ MTD_ROM, FLASH_NOR },
	{ MTD_DATAFLASH, FLASH_NOR },
	{ MTD_NANDFLASH, FLASH_NAND },
	{ MTD_MLCNANDFLASH, FLASH_NAND },
};

int flash_mtd_type_from_sysfs(const char *type)
{
	for (size_t i = 0; i < ELEMENTSOF(mtd_types); i++)
		if (!strcmp(type, mtd_types[i].sysfs))
			return mtd_types[i].type;
	return -EMEDIUMTYPE;
}

static int type_from_ioctl(unsigned char t)
{
	for (size_t i = 0; i < ELEMENTSOF(mtd_ioctl_types); i++)
		if (mtd_ioctl_types[i].mtd == t)
			return mtd_ioctl_types[i].type;
	return -EMEDIUMTYPE;
}

/* "mtd12" -> 12; -EINVAL for "mtd12ro" and anything else */
int flash_mtd_parse_dirname(const char *n, unsigned *ret)
{
	char *end;
	unsigned long v;

	if (strncmp(n, "mtd", 3) || n[3] < '0' || n[3] > '9')
		return -EINVAL;
	v = strtoul(n + 3, &end, 10);
	if (*end || v > 0xffff)
		return -EINVAL;
	*ret = v;
	return 0;
}

static int find_by_name(const char *sysroot, const char *name, char *ret_dev, size_t len,
			unsigned *ret_index)
{
	_cleanup_closedir_ DIR *d = NULL;
	struct dirent *de;

	d = opendir(sysroot);
	if (!d)
		return errno == ENOENT ? -ENODEV : -errno;
	while ((de = readdir(d))) {
		char path[512], line[128];
		unsigned idx;

		if (flash_mtd_parse_dirname(de->d_name, &idx) < 0)
			continue;
		snprintf(path, sizeof(path), "%s/%s/name", sysroot, de->d_name);
		if (util_read_line(path, line, sizeof(line)) < 0 || strcmp(line, name))
			continue;
		if ((size_t)snprintf(ret_dev, len, "/dev/mtd%u", idx) >= len)
			return -ENAMETOOLONG;
		*ret_index = idx;
		return 0;
	}
	return -ENODEV;
}

int flash_mtd_find_by_name(const char *sysroot, const char *name, char *ret_dev, size_t len)
{
	unsigned idx;

	return find_by_name(sysroot, name, ret_dev, len, &idx);
}

int flash_mtd_find_partition(const char *sysroot, const char *name, char *ret_dev, size_t len,
			     unsigned *ret_index, struct error *err)
{
	unsigned idx;
	int r = find_by_name(sysroot, name, ret_dev, len, &idx);

	if (r < 0)
		return error_set(err, r, "partition %s: no MTD device of that name in %s (%s)", name,
				 sysroot, strerror(-r));
	if (ret_index)
		*ret_index = idx;
	return 0;
}

int flash_mtd_find_by_name_dup(const char *sysroot, const char *name, char **ret_dev)
{
	char dev[64];
	int r = flash_mtd_find_by_name(sysroot, name, dev, sizeof(dev));

	if (r < 0)
		return r;
	*ret_dev = strdup(dev);
	return *ret_dev ? 0 : -ENOMEM;
}

static int read_attr_u64(const char *sysroot, unsigned idx, const char *attr, uint64_t *ret)
{
	char path[512];

	snprintf(path, sizeof(path), "%s/mtd%u/%s", sysroot, idx, attr);
	return util_read_u64(path, ret);
}

int flash_mtd_read_sysfs(const char *sysroot, unsigned index, struct flash_mtd_sysfs *ret)
{
	struct flash_mtd_sysfs s = { .index = index };
	/* mandatory attributes, present since the first sysfs MTD class */
	const struct {
		const char *attr;
		uint64_t *u64;
		uint32_t *u32;
	} must[] = {
		{ "size", &s.size, NULL },
		{ "erasesize", NULL, &s.erasesize },
		{ "writesize", NULL, &s.writesize },
		{ "oobsize", NULL, &s.oobsize },
		{ "flags", NULL, &s.flags },
	}, ecc[] = {
		{ "bad_blocks", &s.bad_blocks, NULL },
		{ "bbt_blocks", &s.bbt_blocks, NULL },
		{ "corrected_bits", &s.corrected_bits, NULL },
		{ "ecc_failures", &s.ecc_failures, NULL },
		{ "ecc_strength", NULL, &s.ecc_strength },
		{ "bitflip_threshold", NULL, &s.bitflip_threshold },
	};
	char path[512];
	uint64_t v;
	int r;

	snprintf(path, sizeof(path), "%s/mtd%u/name", sysroot, index);
	r = util_read_line(path, s.name, sizeof(s.name));
	if (r < 0)
		return r == -ENOENT ? -ENODEV : r;
	snprintf(path, sizeof(path), "%s/mtd%u/type", sysroot, index);
	r = util_read_line(path, s.type, sizeof(s.type));
	if (r < 0)
		return r;
	for (size_t i = 0; i < ELEMENTSOF(must); i++) {
		r = read_attr_u64(sysroot, index, must[i].attr, &v);
		if (r < 0)
			return r;
		if (must[i].u64)
			*must[i].u64 = v;
		else if (v > UINT32_MAX)
			return -ERANGE;
		else
			*must[i].u32 = v;
	}
	if (read_attr_u64(sysroot, index, "offset", &v) >= 0)
		s.offset = v;
	if (read_attr_u64(sysroot, index, "oobavail", &v) >= 0 && v <= UINT32_MAX)
		s.oobavail = v;
	s.have_ecc = true;
	for (size_t i = 0; i < ELEMENTSOF(ecc); i++) {
		r = read_attr_u64(sysroot, index, ecc[i].attr, &v);
		if (r < 0) {
			s.have_ecc = false;
			continue;
		}
		if (ecc[i].u64)
			*ecc[i].u64 = v;
		else
			*ecc[i].u32 = (uint32_t)MIN(v, (uint64_t)UINT32_MAX);
	}
	*ret = s;
	return 0;
}

static struct mtd_priv *priv(struct flash *f)
{
	return f->priv;
}

static int mtd_open(struct flash *f, const char *spec, bool writable)
{
	_cleanup_close_ int fd = -1;
	_cleanup_free_ struct mtd_priv *p = NULL;
	struct flash_mtd_sysfs sys;
	struct mtd_info_user mi;
	char dev[64];
	struct stat st;
	int r, type;

	if (spec[0] != '/') {
		r = flash_mtd_find_by_name(FLASH_MTD_SYSFS, spec, dev, sizeof(dev));
		if (r < 0)
			return r;
		spec = dev;
	}
	fd = open(spec, (writable ? O_RDWR : O_RDONLY) | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0)
		return -errno;
	if (!S_ISCHR(st.st_mode) || major(st.st_rdev) != MTD_CHAR_MAJOR)
		return -ENOTTY; /* not an MTD character device (mtdblock?) */
	if ((minor(st.st_rdev) & 1) && writable)
		return -EROFS; /* /dev/mtdNro */
	if (ioctl(fd, MEMGETINFO, &mi) < 0)
		return -errno;
	type = type_from_ioctl(mi.type);
	if (type < 0)
		return type;
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->index = minor(st.st_rdev) / 2;
	f->info.type = type;
	f->info.size = mi.size;
	f->info.erasesize = mi.erasesize;
	f->info.writesize = mi.writesize ? mi.writesize : 1;
	f->info.oobsize = mi.oobsize;
	f->info.oobavail = type == FLASH_NAND ? 8 : 0;
	snprintf(f->info.name, sizeof(f->info.name), "mtd%u", p->index);
	if (flash_mtd_read_sysfs(FLASH_MTD_SYSFS, p->index, &sys) >= 0) {
		f->info.size = sys.size; /* 64-bit, unlike mtd_info_user */
		snprintf(f->info.name, sizeof(f->info.name), "%s", sys.name);
		if (sys.oobavail)
			f->info.oobavail = sys.oobavail;
	}
	if (type == FLASH_NOR)
		f->info.oobavail = 0;
	p->fd = TAKE_FD(fd);
	f->priv = TAKE_PTR(p);
	return 0;
}

static void mtd_close(struct flash *f)
{
	if (!f->priv)
		return;
	close(priv(f)->fd);
	free(f->priv);
	f->priv = NULL;
}

static int mtd_get_ecc(struct flash *f, struct flash_stats *st)
{
	struct mtd_ecc_stats e;

	if (ioctl(priv(f)->fd, ECCGETSTATS, &e) < 0)
		return errno == ENOTTY || errno == EOPNOTSUPP ? 0 : -errno;
	st->corrected = e.corrected;
	st->failed = e.failed;
	st->badblocks = e.badblocks;
	return 0;
}

static int mtd_read(struct flash *f, uint64_t off, void *buf, size_t len)
{
	struct mtd_ecc_stats before, after;
	bool ecc = f->info.type == FLASH_NAND;
	ssize_t n;

	if (ecc && ioctl(priv(f)->fd, ECCGETSTATS, &before) < 0)
		ecc = false;
	n = util_pread_full(priv(f)->fd, buf, len, off);
	if (n < 0)
		return n;
	if ((size_t)n != len)
		return -EIO;
	if (ecc && ioctl(priv(f)->fd, ECCGETSTATS, &after) >= 0) {
		/* counters are per master device: another reader may race us,
		 * which can only make us report a flip too many */
		if (after.failed != before.failed)
			return -EBADMSG;
		if (after.corrected != before.corrected)
			return -EUCLEAN;
	}
	return 0;
}

static int mtd_write(struct flash *f, uint64_t off, const void *buf, size_t len)
{
	ssize_t n = util_pwrite_full(priv(f)->fd, buf, len, off);

	return n < 0 ? (int)n : 0;
}

static int mtd_erase(struct flash *f, uint64_t off)
{
	struct erase_info_user64 ei = { .start = off, .length = f->info.erasesize };

	return ioctl(priv(f)->fd, MEMERASE64, &ei) < 0 ? -errno : 0;
}

static int mtd_isbad(struct flash *f, uint64_t off)
{
	loff_t o = off;
	int r = ioctl(priv(f)->fd, MEMGETBADBLOCK, &o);

	if (r < 0)
		return errno == EOPNOTSUPP ? 0 : -errno; /* NOR: no bad blocks */
	return r > 0;
}

static int mtd_markbad(struct flash *f, uint64_t off)
{
	loff_t o = off;

	return ioctl(priv(f)->fd, MEMSETBADBLOCK, &o) < 0 ? -errno : 0;
}

static int mtd_read_oob(struct flash *f, uint64_t off, void *buf, size_t len)
{
	struct mtd_read_req req = {
		.start = off,
		.ooblen = len,
		.usr_oob = (uintptr_t)buf,
		.mode = MTD_OPS_AUTO_OOB,
	};

	if (ioctl(priv(f)->fd, MEMREAD, &req) < 0)
		return errno == ENOTTY ? -ENOTSUP : -errno; /* MEMREAD needs Linux 5.18 */
	if (req.ecc_stats.uncorrectable_errors)
		return -EBADMSG;
	return 0;
}

static int mtd_write_oob(struct flash *f, uint64_t off, const void *buf, size_t len)
{
	struct mtd_write_req req = {
		.start = off,
		.ooblen = len,
		.usr_oob = (uintptr_t)buf,
		.mode = MTD_OPS_AUTO_OOB,
	};

	return ioctl(priv(f)->fd, MEMWRITE, &req) < 0 ? -errno : 0;
}

static int mtd_unlock(struct flash *f, uint64_t off, uint64_t len)
{
	struct erase_info_user ei = { .start = off, .length = len };

	if (f->info.type != FLASH_NOR)
		return 0;
	if (off > UINT32_MAX || len > UINT32_MAX)
		return -EOVERFLOW;
	/* chips without lock bits answer EOPNOTSUPP: nothing to unlock */
	if (ioctl(priv(f)->fd, MEMUNLOCK, &ei) < 0 && errno != EOPNOTSUPP && errno != ENOTTY)
		return -errno;
	return 0;
}

const struct flash_ops flash_mtd_ops = {
	.name = "mtd",
	.open = mtd_open,
	.close = mtd_close,
	.read = mtd_read,
	.write = mtd_write,
	.erase = mtd_erase,
	.block_isbad = mtd_isbad,
	.block_markbad = mtd_markbad,
	.read_oob = mtd_read_oob,
	.write_oob = mtd_write_oob,
	.get_ecc = mtd_get_ecc,
	.unlock = mtd_unlock,
};

int flash_mtd_get_sysfs(struct flash *f, struct flash_mtd_sysfs *ret)
{
	if (!f || f->root->ops != &flash_mtd_ops)
		return -ENOTTY;
	return flash_mtd_read_sysfs(FLASH_MTD_SYSFS, priv(f->root)->index, ret);
}
