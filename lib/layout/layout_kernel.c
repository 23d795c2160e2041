/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The kernel's views of a layout: the mtdparts= argument, the nandsim or
 * mtdram module parameters reproducing a device, and the comparison with
 * the running kernel's MTD table in sysfs. */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "layout.h"
#include "layout_kernel.h"
#include "layout_nand.h"
#include "util.h"

#define NANDSIM_MAX_PARTS 32       /* CONFIG_NANDSIM_MAX_PARTS */

/* Partitions of dev in offset order (n returned, caller frees). */
static int sorted_partitions(const struct layout *l, const struct layout_device *dev,
			     const struct layout_partition ***ret)
{
	const struct layout_partition **v = calloc(l->n_partitions + 1, sizeof(*v));
	size_t n = 0;

	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < l->n_partitions; i++) {
		const struct layout_partition *p = &l->partitions[i];
		size_t j;

		if (p->dev != dev)
			continue;
		for (j = n; j > 0 && v[j - 1]->offset > p->offset; j--)
			v[j] = v[j - 1];
		v[j] = p;
		n++;
	}
	*ret = v;
	return (int)n;
}


/* ---------- mtdparts ---------- */

/* cmdlinepart's memparse(): plain number or k/m/g suffix */
static void mtdsize(char *buf, size_t len, uint64_t v)
{
	if (v && !(v % (1024 * 1024 * 1024ull)))
		util_snprintf(buf, len, "%" PRIu64 "g", v >> 30);
	else if (v && !(v % (1024 * 1024)))
		util_snprintf(buf, len, "%" PRIu64 "m", v >> 20);
	else if (v && !(v % 1024))
		util_snprintf(buf, len, "%" PRIu64 "k", v >> 10);
	else
		util_snprintf(buf, len, "%" PRIu64, v);
}

static int append(char **s, size_t *len, const char *fmt, ...) _printf_(3, 4);
static int append(char **s, size_t *len, const char *fmt, ...)
{
	va_list ap;
	char *n;
	int k;

	va_start(ap, fmt);
	k = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	n = realloc(*s, *len + k + 1);
	if (!n)
		return -ENOMEM;
	va_start(ap, fmt);
	vsnprintf(n + *len, k + 1, fmt, ap);
	va_end(ap);
	*s = n;
	*len += k;
	return 0;
}

static int mtdparts_dev(const struct layout *l, const struct layout_device *dev, char **s,
			size_t *len, bool *first)
{
	_cleanup_free_ const struct layout_partition **v = NULL;
	char sz[32], off[32];
	int n = sorted_partitions(l, dev, &v), r;

	if (n <= 0)
		return n;
	if ((r = append(s, len, "%s%s:", *first ? "" : ";", layout_device_mtd_id(dev))) < 0)
		return r;
	*first = false;
	for (int i = 0; i < n; i++) {
		mtdsize(sz, sizeof(sz), v[i]->size);
		mtdsize(off, sizeof(off), v[i]->offset);
		if ((r = append(s, len, "%s%s@%s(%s)%s", i ? "," : "", sz, off, v[i]->name,
				v[i]->readonly ? "ro" : "")) < 0)
			return r;
	}
	return 0;
}

static int mtdparts_of(const struct layout *l, const struct layout_device *only, char **ret)
{
	_cleanup_free_ char *s = NULL;
	size_t len = 0;
	bool first = true;
	int r;

	if ((r = append(&s, &len, "mtdparts=")) < 0)
		return r;
	for (size_t i = 0; i < l->n_devices; i++) {
		if (only && &l->devices[i] != only)
			continue;
		if ((r = mtdparts_dev(l, &l->devices[i], &s, &len, &first)) < 0)
			return r;
	}
	*ret = TAKE_PTR(s);
	return 0;
}

int layout_kernel_mtdparts(const struct layout *l, char **ret)
{
	return mtdparts_of(l, NULL, ret);
}

int layout_kernel_mtdparts_device(const struct layout *l, const struct layout_device *dev,
				   char **ret)
{
	if (!dev || dev < l->devices || dev >= l->devices + l->n_devices)
		return -EINVAL;
	return mtdparts_of(l, dev, ret);
}

/* ---------- nandsim / mtdram ---------- */

int layout_kernel_nandsim(const struct layout *l, const struct layout_device *dev,
			  const char **ret_module, char **ret_params)
{
	_cleanup_free_ const struct layout_partition **v = NULL;
	_cleanup_free_ char *s = NULL;
	size_t len = 0;
	uint8_t id[8];
	size_t nid;
	unsigned override, nparts = 0;
	uint64_t pos = 0;
	int n, r;

	if (!dev)
		dev = l->n_devices ? &l->devices[0] : NULL;
	if (!dev || dev < l->devices || dev >= l->devices + l->n_devices)
		return -EINVAL;
	if (dev->type == FLASH_NOR) {
		/* mtdram: sizes in KiB; partitions come from mtdparts= */
		if (dev->size % 1024 || dev->erasesize % 1024)
			return -EOPNOTSUPP;
		if (asprintf(&s, "total_size=%" PRIu64 " erase_size=%" PRIu32, dev->size / 1024,
			     dev->erasesize / 1024) < 0)
			return -ENOMEM;
		*ret_module = "mtdram";
		*ret_params = TAKE_PTR(s);
		return 0;
	}
	r = layout_nand_id_for(dev, id, &nid, &override, NULL);
	if (r < 0)
		return r;
	if ((r = append(&s, &len, "id_bytes=")) < 0)
		return r;
	for (size_t i = 0; i < nid; i++)
		if ((r = append(&s, &len, "%s0x%02x", i ? "," : "", id[i])) < 0)
			return r;
	if (override && (r = append(&s, &len, " overridesize=%u", override)) < 0)
		return r;
	n = sorted_partitions(l, dev, &v);
	if (n < 0)
		return n;
	/* nandsim lays parts= out back to back from 0 and adds the rest as
	 * one more partition: gaps become filler partitions */
	for (int i = 0; i < n; i++) {
		if (v[i]->offset > pos) {
			if ((r = append(&s, &len, "%s%" PRIu64, nparts ? "," : " parts=",
					(v[i]->offset - pos) / dev->erasesize)) < 0)
				return r;
			nparts++;
		}
		if ((r = append(&s, &len, "%s%" PRIu64, nparts ? "," : " parts=",
				v[i]->size / dev->erasesize)) < 0)
			return r;
		nparts++;
		pos = v[i]->offset + v[i]->size;
	}
	if (nparts + (pos < dev->size ? 1 : 0) > NANDSIM_MAX_PARTS)
		return -E2BIG;
	*ret_module = "nandsim";
	*ret_params = TAKE_PTR(s);
	return 0;
}

/* ---------- comparison with the running kernel ---------- */

struct sys_mtd {
	char dir[64];
	char name[128];
	char type[32];
	uint64_t size, erasesize, writesize, oobsize, offset;
	bool has_offset;
};

/* sysfs "type" strings (drivers/mtd/mtdcore.c) -> our flash type */
static const struct {
	const char *sys;
	enum flash_type type;
} sys_types[] = {
	{ "nor", FLASH_NOR }, { "ram", FLASH_NOR }, { "rom", FLASH_NOR }, { "dataflash", FLASH_NOR },
	{ "nand", FLASH_NAND }, { "mlc-nand", FLASH_NAND },
};

static int read_sys_mtd(const char *root, const char *entry, struct sys_mtd *m)
{
	char path[1024];
	int r;

	util_snprintf(m->dir, sizeof(m->dir), "%s", entry);
#define RD_LINE(f, buf) (util_snprintf(path, sizeof(path), "%s/%s/%s", root, entry, f), \
			 util_read_line(path, buf, sizeof(buf)))
#define RD_U64(f, v) (util_snprintf(path, sizeof(path), "%s/%s/%s", root, entry, f), util_read_u64(path, v))
	if ((r = RD_LINE("name", m->name)) < 0 || (r = RD_LINE("type", m->type)) < 0 ||
	    (r = RD_U64("size", &m->size)) < 0 || (r = RD_U64("erasesize", &m->erasesize)) < 0)
		return r;
	if (RD_U64("writesize", &m->writesize) < 0)
		m->writesize = 0;
	if (RD_U64("oobsize", &m->oobsize) < 0)
		m->oobsize = 0;
	m->has_offset = RD_U64("offset", &m->offset) >= 0;
#undef RD_LINE
#undef RD_U64
	return 0;
}

int layout_kernel_check_system(const struct layout *l, const char *sysfs_root, struct error *err)
{
	struct sys_mtd *mtds = NULL;
	size_t n = 0;
	DIR *d;
	struct dirent *de;
	char pp[32];
	int r = 0;

	if (!sysfs_root)
		sysfs_root = FLASH_MTD_SYSFS;
	d = opendir(sysfs_root);
	if (!d) {
		int e = errno;

		return error_set(err, e == ENOENT ? -ENODEV : -e,
			       "%s: cannot open (%s); the running kernel has no MTD support", sysfs_root,
			       strerror(e));
	}
	while ((de = readdir(d))) {
		struct sys_mtd *nm;

		if (flash_mtd_parse_dirname(de->d_name, &(unsigned){ 0 }) < 0)
			continue;
		nm = realloc(mtds, (n + 1) * sizeof(*mtds));
		if (!nm) {
			r = -ENOMEM;
			break;
		}
		mtds = nm;
		memset(&mtds[n], 0, sizeof(mtds[n]));
		r = read_sys_mtd(sysfs_root, de->d_name, &mtds[n]);
		if (r < 0) {
			r = error_set(err, r, "%s/%s: cannot read its attributes: %s", sysfs_root,
				    de->d_name, strerror(-r));
			break;
		}
		n++;
	}
	closedir(d);
	for (size_t i = 0; r >= 0 && i < l->n_partitions; i++) {
		const struct layout_partition *p = &l->partitions[i];
		const struct sys_mtd *m = NULL;
		int t = -1;

		util_snprintf(pp, sizeof(pp), "partitions[%zu]", i);
		for (size_t j = 0; j < n; j++)
			if (!strcmp(mtds[j].name, p->name))
				m = &mtds[j];
		if (!m) {
			r = error_set(err, -ENODEV,
				    "partition \"%s\" (%s: %s): no MTD device of that name in %s (%zu MTD "
				    "devices there; is mtdparts= set?)", p->name, l->path, pp, sysfs_root, n);
			break;
		}
		for (size_t k = 0; k < ELEMENTSOF(sys_types); k++)
			if (!strcmp(m->type, sys_types[k].sys))
				t = (int)sys_types[k].type;
		if (t != (int)p->dev->type)
			r = error_set(err, -EINVAL, "partition \"%s\" (%s: %s): %s/%s is of type \"%s\", "
				    "the layout says %s", p->name, l->path, pp, sysfs_root, m->dir, m->type,
				    flash_type_to_string(p->dev->type));
		else if (m->size != p->size)
			r = error_set(err, -EINVAL, "partition \"%s\" (%s: %s): size 0x%" PRIx64
				    " in the layout, 0x%" PRIx64 " in %s/%s", p->name, l->path, pp,
				    p->size, m->size, sysfs_root, m->dir);
		else if (m->erasesize != p->dev->erasesize)
			r = error_set(err, -EINVAL, "partition \"%s\" (%s: %s): erase size 0x%" PRIx32
				    " in the layout, 0x%" PRIx64 " in %s/%s", p->name, l->path, pp,
				    p->dev->erasesize, m->erasesize, sysfs_root, m->dir);
		else if (p->dev->type == FLASH_NAND && m->writesize && m->writesize != p->dev->writesize)
			r = error_set(err, -EINVAL, "partition \"%s\" (%s: %s): page size %" PRIu32
				    " in the layout, %" PRIu64 " in %s/%s", p->name, l->path, pp,
				    p->dev->writesize, m->writesize, sysfs_root, m->dir);
		else if (p->dev->type == FLASH_NAND && m->oobsize && m->oobsize != p->dev->oobsize)
			r = error_set(err, -EINVAL, "partition \"%s\" (%s: %s): OOB size %" PRIu32
				    " in the layout, %" PRIu64 " in %s/%s", p->name, l->path, pp,
				    p->dev->oobsize, m->oobsize, sysfs_root, m->dir);
		else if (m->has_offset && m->offset != p->offset)
			r = error_set(err, -EINVAL, "partition \"%s\" (%s: %s): offset 0x%" PRIx64
				    " in the layout, 0x%" PRIx64 " in %s/%s", p->name, l->path, pp,
				    p->offset, m->offset, sysfs_root, m->dir);
	}
	free(mtds);
	return r < 0 ? r : 0;
}
