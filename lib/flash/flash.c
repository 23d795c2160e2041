/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Generic flash layer: backend table, windows, checked wrappers, counters. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "flash.h"
#include "util.h"

static const struct {
	const char *prefix;
	bool strip; /* pass the spec without the prefix to open() */
	const struct flash_ops *ops;
} backends[] = {
#if FLASHD_HOST_TOOLS /* a device build has no simulator */
	{ "sim:", true, &flash_sim_ops },
#endif
	{ "mtd:", true, &flash_mtd_ops },
	{ "/dev/mtd", false, &flash_mtd_ops },
};

const char *const flash_type_table[_FLASH_TYPE_MAX] = { FLASH_TYPE_LIST(STRING_TABLE_NAME) };
DEFINE_STRING_TABLE(flash_type, enum flash_type)

int flash_spec_split(const char *spec, char **ret_base, uint64_t *ret_off, uint64_t *ret_size)
{
	const char *at = strrchr(spec, '@');
	_cleanup_free_ char *suffix = NULL;
	uint64_t off, size = 0;
	char *plus, *base;
	int r;

	/* an '@' inside a directory name is not a window */
	if (!at || strchr(at, '/'))
		return 0;
	suffix = strdup(at + 1);
	if (!suffix)
		return -ENOMEM;
	plus = strchr(suffix, '+');
	if (plus)
		*plus++ = '\0';
	r = util_parse_size(suffix, &off);
	if (r < 0)
		return -EINVAL;
	if (plus) {
		r = util_parse_size(plus, &size);
		if (r < 0 || size == 0)
			return -EINVAL;
	}
	base = strndup(spec, at - spec);
	if (!base)
		return -ENOMEM;
	*ret_base = base;
	*ret_off = off;
	*ret_size = size;
	return 1;
}

static int open_root(const char *spec, bool writable, struct flash **ret)
{
	_cleanup_free_ struct flash *f = NULL;
	int r;

	for (size_t i = 0; i < ELEMENTSOF(backends); i++) {
		size_t n = strlen(backends[i].prefix);

		if (strncmp(spec, backends[i].prefix, n))
			continue;
		if (!spec[n])
			return -EINVAL;
		f = calloc(1, sizeof(*f));
		if (!f)
			return -ENOMEM;
		f->ops = backends[i].ops;
		f->root = f;
		f->refs = 1;
		f->writable = writable;
		r = f->ops->open(f, backends[i].strip ? spec + n : spec, writable);
		if (r < 0)
			return r;
		if (!f->info.erasesize || !f->info.writesize || f->info.size % f->info.erasesize) {
			f->ops->close(f);
			return -EMEDIUMTYPE;
		}
		*ret = TAKE_PTR(f);
		return 0;
	}
	return -EPROTONOSUPPORT;
}

int flash_open(const char *spec, bool writable, struct flash **ret)
{
	_cleanup_free_ char *base = NULL;
	_cleanup_flash_ struct flash *root = NULL;
	struct flash *w;
	uint64_t off, size;
	int r;

	if (!spec || !*spec)
		return -EINVAL;
	r = flash_spec_split(spec, &base, &off, &size);
	if (r < 0)
		return r;
	r = open_root(r ? base : spec, writable, &root);
	if (r < 0)
		return r;
	if (!base) {
		*ret = TAKE_PTR(root);
		return 0;
	}
	if (off > root->info.size)
		return -EINVAL;
	r = flash_open_window(root, NULL, off, size ? size : root->info.size - off, &w);
	if (r < 0)
		return r;
	*ret = w; /* the window holds the root; ours is dropped by the cleanup */
	return 0;
}

int flash_open_window(struct flash *parent, const char *name, uint64_t off, uint64_t size,
		      struct flash **ret)
{
	struct flash *w;

	if (!parent || !size || off % parent->info.erasesize || size % parent->info.erasesize)
		return -EINVAL;
	if (off > parent->info.size || size > parent->info.size - off)
		return -ERANGE;
	w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	w->ops = parent->ops;
	w->info = parent->info;
	w->info.size = size;
	if (name)
		snprintf(w->info.name, sizeof(w->info.name), "%s", name);
	w->base = parent->base + off;
	w->writable = parent->writable;
	w->root = parent->root;
	w->root->refs++;
	*ret = w;
	return 0;
}

void flash_close(struct flash *f)
{
	if (!f)
		return;
	if (f->root != f) {
		struct flash *root = f->root;
		free(f);
		f = root;
	}
	if (--f->refs > 0)
		return;
	f->ops->close(f);
	free(f);
}

static int check_range(const struct flash *f, uint64_t off, uint64_t len)
{
	return off <= f->info.size && len <= f->info.size - off ? 0 : -ERANGE;
}

int flash_read(struct flash *f, uint64_t off, void *buf, size_t len)
{
	int r = check_range(f, off, len);

	if (r < 0)
		return r;
	if (!len)
		return 0;
	r = f->ops->read(f->root, f->base + off, buf, len);
	if (r >= 0 || r == -EUCLEAN || r == -EBADMSG)
		f->stats.reads += len;
	if (r == -EUCLEAN)
		f->stats.read_corrected++;
	else if (r == -EBADMSG)
		f->stats.read_failed++;
	return r;
}

int flash_write(struct flash *f, uint64_t off, const void *buf, size_t len)
{
	int r;

	if (!f->writable)
		return -EROFS;
	r = check_range(f, off, len);
	if (r < 0)
		return r;
	if (off % f->info.writesize || len % f->info.writesize)
		return -EINVAL;
	if (!len)
		return 0;
	r = f->ops->write(f->root, f->base + off, buf, len);
	if (r >= 0)
		f->stats.writes += len;
	return r;
}

int flash_erase_block(struct flash *f, uint64_t off)
{
	int r;

	if (!f->writable)
		return -EROFS;
	if (off % f->info.erasesize)
		return -EINVAL;
	r = check_range(f, off, f->info.erasesize);
	if (r < 0)
		return r;
	r = f->ops->erase(f->root, f->base + off);
	if (r >= 0)
		f->stats.erases++;
	return r;
}

int flash_block_isbad(struct flash *f, uint64_t off)
{
	if (off >= f->info.size)
		return -ERANGE;
	if (!f->ops->block_isbad)
		return 0;
	off -= off % f->info.erasesize;
	return f->ops->block_isbad(f->root, f->base + off);
}

int flash_block_markbad(struct flash *f, uint64_t off)
{
	if (!f->writable)
		return -EROFS;
	if (off >= f->info.size)
		return -ERANGE;
	if (!f->ops->block_markbad)
		return -ENOTSUP;
	off -= off % f->info.erasesize;
	return f->ops->block_markbad(f->root, f->base + off);
}

static int check_oob(const struct flash *f, uint64_t off, size_t len)
{
	if (f->info.type != FLASH_NAND || !f->info.oobsize)
		return -ENOTSUP;
	if (off % f->info.writesize || len > f->info.oobavail)
		return -EINVAL;
	return off < f->info.size ? 0 : -ERANGE;
}

int flash_read_oob(struct flash *f, uint64_t off, void *buf, size_t len)
{
	int r = check_oob(f, off, len);

	if (r < 0)
		return r;
	if (!f->ops->read_oob)
		return -ENOTSUP;
	return f->ops->read_oob(f->root, f->base + off, buf, len);
}

int flash_write_oob(struct flash *f, uint64_t off, const void *buf, size_t len)
{
	int r;

	if (!f->writable)
		return -EROFS;
	r = check_oob(f, off, len);
	if (r < 0)
		return r;
	if (!f->ops->write_oob)
		return -ENOTSUP;
	return f->ops->write_oob(f->root, f->base + off, buf, len);
}

int flash_unlock(struct flash *f)
{
	if (!f->writable)
		return -EROFS;
	if (!f->ops->unlock)
		return 0;
	return f->ops->unlock(f->root, f->base, f->info.size);
}

int flash_count_bad(struct flash *f)
{
	int n = 0;

	for (uint64_t off = 0; off < f->info.size; off += f->info.erasesize) {
		int r = flash_block_isbad(f, off);
		if (r < 0)
			return r;
		n += r > 0;
	}
	return n;
}

int flash_get_stats(struct flash *f, struct flash_stats *ret)
{
	struct flash_stats st = f->stats, dev = { 0 };
	int r;

	if (f->ops->get_ecc) {
		r = f->ops->get_ecc(f->root, &dev);
		if (r < 0)
			return r;
		/* ECC counters are per chip: MTD keeps no per-range numbers */
		st.corrected = dev.corrected;
		st.failed = dev.failed;
	}
	/* the backend counts a whole device (an MTD partition is one) without
	 * a query per block; a window onto a chip is scanned */
	if (f->ops->get_ecc && f->base == 0 && f->info.size == f->root->info.size) {
		st.badblocks = dev.badblocks;
	} else {
		r = flash_count_bad(f);
		if (r < 0)
			return r;
		st.badblocks = r;
	}
	*ret = st;
	return 0;
}
