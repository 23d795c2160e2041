/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The flash backend of the U-Boot env (env.h, env_backend.h), for "sim:"
 * targets: U-Boot's env format implemented over struct flash, so that every
 * env store is an erase and page programs on the simulated chip, cut, torn
 * and counted like any other flash operation. The bytes and the copy
 * selection are those of U-Boot and of libubootenv on a file. */
#include <endian.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "board.h"
#include "cleanup.h"
#include "env.h"
#include "env_backend.h"
#include "util.h"

static void env_flash_detach(struct env *e)
{
	for (size_t i = 0; i < ENV_MAX_COPIES; i++) {
		flash_close(e->copies[i].f);
		flash_close(e->copies[i].dev);
		e->copies[i].f = e->copies[i].dev = NULL;
	}
}

/* Open the copies' partitions on the simulator, read-only (reads leave the
 * chip file as it is: no counters change) or writable (for a store). The
 * env keeps no pointer into the layout: callers may free it once opened. */
static int env_flash_attach(struct env *e, bool writable, struct error *err)
{
	env_flash_detach(e);
	for (size_t i = 0; i < e->n_devs; i++) {
		struct env_copy *c = &e->copies[i];
		_cleanup_free_ char *spec = NULL;
		int r;

		if (asprintf(&spec, "%s%s", BOARD_TARGET_SIM_PREFIX, e->paths[i]) < 0)
			return -ENOMEM;
		r = flash_open(spec, writable, &c->dev);
		if (r >= 0 && (c->dev->info.size != c->chip.size ||
			       c->dev->info.erasesize != c->chip.erasesize ||
			       c->dev->info.type != c->chip.type))
			r = -EMEDIUMTYPE;
		if (r >= 0)
			r = flash_open_window(c->dev, c->part_name, c->part_offset, c->part_size,
					      &c->f);
		if (r < 0)
			return error_set(err, r, "env partition %s: simulator %s: %s", c->part_name,
					e->paths[i], r == -EMEDIUMTYPE ?
					"not the chip the layout describes" : strerror(-r));
	}
	e->writable = writable;
	return 0;
}

static void env_flash_drop(struct env *e)
{
	for (size_t i = 0; i < e->n_vars; i++) {
		free(e->vars[i].name);
		free(e->vars[i].value);
	}
	free(e->vars);
	e->vars = NULL;
	e->n_vars = 0;
}

static void env_flash_close(struct env *e)
{
	env_flash_drop(e);
	env_flash_detach(e);
	for (size_t i = 0; i < ENV_MAX_COPIES; i++)
		free(e->copies[i].part_name);
}

/* Index of name in the sorted variables, or where it would go (found false). */
static size_t env_flash_find(const struct env *e, const char *name, bool *found)
{
	size_t lo = 0, hi = e->n_vars;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		int c = strcmp(e->vars[mid].name, name);
		if (c == 0) {
			*found = true;
			return mid;
		}
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	*found = false;
	return lo;
}

static char *env_flash_get(struct env *e, const char *name)
{
	bool found;
	size_t i = env_flash_find(e, name, &found);

	return found ? strdup(e->vars[i].value) : NULL;
}

static void *env_flash_next(struct env *e, void *it, const char **ret_name,
			    const char **ret_value)
{
	struct env_pair *p = it ? (struct env_pair *)it + 1 : e->vars;

	if (!e->vars || p >= e->vars + e->n_vars)
		return NULL;
	*ret_name = p->name;
	*ret_value = p->value;
	return p;
}

/* Like libubootenv: names without '=', NULL deletes. */
static int env_flash_set(struct env *e, const char *name, const char *value)
{
	bool found;
	size_t i;
	char *v, *n;

	if (!*name || strchr(name, '='))
		return -EINVAL;
	i = env_flash_find(e, name, &found);
	if (!value) {
		if (found) {
			free(e->vars[i].name);
			free(e->vars[i].value);
			memmove(e->vars + i, e->vars + i + 1, (e->n_vars - i - 1) * sizeof(*e->vars));
			e->n_vars--;
		}
		return 0;
	}
	v = strdup(value);
	if (!v)
		return -ENOMEM;
	if (found) {
		free(e->vars[i].value);
		e->vars[i].value = v;
		return 0;
	}
	struct env_pair *nv = realloc(e->vars, (e->n_vars + 1) * sizeof(*nv));
	n = strdup(name);
	if (!nv || !n) {
		if (nv)
			e->vars = nv;
		free(v);
		free(n);
		return -ENOMEM;
	}
	e->vars = nv;
	memmove(e->vars + i + 1, e->vars + i, (e->n_vars - i) * sizeof(*e->vars));
	e->vars[i] = (struct env_pair){ n, v };
	e->n_vars++;
	return 0;
}

static int env_flash_import(struct env *e, const char *path)
{
	_cleanup_fclose_ FILE *f = fopen(path, "re");
	_cleanup_free_ char *line = NULL;
	size_t cap = 0;
	ssize_t len;

	if (!f)
		return -errno;
	while ((len = getline(&line, &cap, f)) >= 0) {
		char *value;
		int r;

		while (len && (line[len - 1] == '\n' || line[len - 1] == '\r'))
			line[--len] = '\0';
		if (!len || line[0] == '#' || !(value = strchr(line, '=')))
			continue;
		*value++ = '\0';
		r = env_flash_set(e, line, *value ? value : NULL);
		if (r < 0 && r != -EINVAL)
			return r;
	}
	return 0;
}

/* The copy's erase units, bad ones skipped (like U-Boot's env on NAND):
 * calls fn for each good block with the block's offset and the part of
 * the env it holds. */
static int env_flash_blocks(struct env_copy *c, size_t size,
			    int (*fn)(struct env_copy *c, uint64_t off, size_t pos, size_t len,
				      void *userdata),
			    void *userdata)
{
	uint64_t eb;
	size_t pos = 0;

	/* an attach that failed part-way (a simulator whose lock was held)
	 * leaves copies without a device: unreadable, not a crash */
	if (!c->f)
		return -EBADF;
	eb = c->f->info.erasesize;
	for (uint64_t off = c->offset; pos < size && off < c->offset + c->span; off += eb) {
		int r = flash_block_isbad(c->f, off);
		if (r < 0)
			return r;
		if (r > 0)
			continue;
		r = fn(c, off, pos, MIN(eb, size - pos), userdata);
		if (r < 0)
			return r;
		pos += MIN(eb, size - pos);
	}
	return pos == size ? 0 : -ENOSPC;
}

static int env_flash_read_block(struct env_copy *c, uint64_t off, size_t pos, size_t len,
				void *buf)
{
	int r = flash_read(c->f, off, (uint8_t *)buf + pos, len);

	return r == -EUCLEAN ? 0 : r;
}

/* Erase, then program the block's part of the image (padded with 0xff to
 * whole pages: NAND programs pages). */
static int env_flash_write_block(struct env_copy *c, uint64_t off, size_t pos, size_t len,
				 void *image)
{
	size_t ws = MAX(c->f->info.writesize, 1u), full = DIV_ROUND_UP(len, ws) * ws;
	_cleanup_free_ uint8_t *pad = NULL;
	const uint8_t *src = (const uint8_t *)image + pos;
	int r;

	r = flash_erase_block(c->f, off);
	if (r >= 0 && full != len) {
		pad = malloc(full);
		if (!pad)
			return -ENOMEM;
		memset(pad, 0xff, full);
		memcpy(pad, src, len);
		src = pad;
	}
	if (r >= 0)
		r = flash_write(c->f, off, src, full);
	/* a NAND block whose erase or program fails is bad (U-Boot and
	 * nandwrite mark it so): the copy's next read skips it */
	if (r == -EIO)
		(void)flash_block_markbad(c->f, off);
	return r;
}

static uint32_t env_crc(const uint8_t *data, size_t len)
{
	return (uint32_t)crc32(0, data, (uInt)len);
}

/* Copy i's state from its bytes. */
void env_flash_copy_classify(struct env *e, size_t i, const uint8_t *buf)
{
	struct env_copy *c = &e->copies[i];
	size_t size = e->devs[i].size, hdr = env_header_size(e);
	uint32_t crc;

	memcpy(&crc, buf, 4);
	c->flags = hdr == 5 ? buf[4] : 0;
	if (le32toh(crc) == env_crc(buf + hdr, size - hdr))
		c->state = ENV_COPY_VALID;
	else
		c->state = util_mem_is(buf, 0xff, size) ? ENV_COPY_ERASED : ENV_COPY_BAD_CRC;
}

/* Read copy i and check its CRC; fills the copy's state. */
static int env_flash_read_copy(struct env *e, size_t i, uint8_t *buf)
{
	struct env_copy *c = &e->copies[i];
	int r;

	r = env_flash_blocks(c, e->devs[i].size, env_flash_read_block, buf);
	if (r < 0) {
		/* -ENOSPC: no good block left to hold the copy */
		c->state = r == -ENOSPC ? ENV_COPY_DEAD : ENV_COPY_UNREADABLE;
		c->error = r;
		return r;
	}
	c->error = 0;
	env_flash_copy_classify(e, i, buf);
	return 0;
}

/* U-Boot's choice between two valid copies (env_import_redund(), and
 * libubootenv's for NAND and files): the higher serial wins, and 0
 * follows 0xff (wrap-around). */
static size_t env_pick_redundant(uint8_t f0, uint8_t f1)
{
	if (f0 == 0xff && f1 == 0)
		return 1;
	if (f0 == 0 && f1 == 0xff)
		return 0;
	return f1 > f0 ? 1 : 0;
}

/* "name=value\0...\0" into the variables; U-Boot skips lines without '='. */
static int env_flash_parse(struct env *e, const char *data, size_t len)
{
	const char *p = data, *end = data + len;

	while (p < end && *p) {
		const char *nul = memchr(p, '\0', end - p), *eq;
		_cleanup_free_ char *name = NULL;
		int r;

		if (!nul)
			break; /* runs off the end: what follows is not the env */
		eq = memchr(p, '=', nul - p);
		if (eq && eq > p) {
			name = strndup(p, eq - p);
			if (!name)
				return -ENOMEM;
			r = env_flash_set(e, name, eq + 1);
			if (r < 0)
				return r;
		}
		p = nul + 1;
	}
	return 0;
}

static int env_flash_load(struct env *e)
{
	size_t size = e->devs[0].size, hdr = env_header_size(e);
	_cleanup_free_ uint8_t *buf = malloc(size * e->n_devs);
	bool valid[ENV_MAX_COPIES] = { false, false };

	if (!buf)
		return -ENOMEM;
	env_flash_drop(e);
	for (size_t i = 0; i < e->n_devs; i++) {
		int q = env_flash_read_copy(e, i, buf + i * size);
		valid[i] = q >= 0 && e->copies[i].state == ENV_COPY_VALID;
	}
	if (e->n_devs == 2 && valid[0] && valid[1])
		e->current = env_pick_redundant(e->copies[0].flags, e->copies[1].flags);
	else
		e->current = e->n_devs == 2 && valid[1] ? 1 : 0;
	if (!valid[e->current])
		/* no valid copy: U-Boot would use its default env; the copies'
		 * states say why (env_copy_state()) */
		return -ENODATA;
	return env_flash_parse(e, (const char *)buf + e->current * size + hdr, size - hdr);
}

/* The image of a copy: crc32 (little endian), the serial on a redundant
 * env, the variables, zero-filled. */
static int env_flash_image(struct env *e, uint8_t serial, uint8_t **ret)
{
	size_t size = e->devs[0].size, hdr = env_header_size(e), pos = hdr;
	uint8_t *img = calloc(1, size);
	uint32_t crc;

	if (!img)
		return -ENOMEM;
	for (size_t i = 0; i < e->n_vars; i++) {
		size_t nl = strlen(e->vars[i].name), vl = strlen(e->vars[i].value);
		if (pos + nl + vl + 2 >= size) { /* keeps the closing empty string */
			free(img);
			return -ENOSPC;
		}
		memcpy(img + pos, e->vars[i].name, nl);
		img[pos + nl] = '=';
		memcpy(img + pos + nl + 1, e->vars[i].value, vl);
		pos += nl + vl + 2;
	}
	if (hdr == 5)
		img[4] = serial;
	crc = htole32(env_crc(img + hdr, size - hdr));
	memcpy(img, &crc, 4);
	*ret = img;
	return 0;
}

/* Erase and program copy i with img (serial inside). */
static int env_flash_write_copy(struct env *e, size_t i, uint8_t serial, uint8_t *img)
{
	struct env_copy *c = &e->copies[i];
	int r;

	c->state = ENV_COPY_BAD_CRC; /* until the last page is in */
	r = env_flash_blocks(c, e->devs[i].size, env_flash_write_block, img);
	if (r < 0)
		return r;
	c->state = ENV_COPY_VALID;
	c->flags = serial;
	e->current = i;
	return 0;
}

/* The flash refused the copy (a failed erase or program, no good block
 * left): not a power cut (-ESHUTDOWN), not a bug. */
static bool env_flash_copy_failed(int r)
{
	return r == -EIO || r == -ENOSPC;
}

/* One store: the copy not in use (the only one on a single env) is erased
 * and programmed with the next serial. A cut leaves that copy invalid and
 * the other one as it was. When that copy is dead (its block is bad, its
 * erase or program fails), the store goes to the valid copy, in place:
 * a cut during it can lose the env, but a board whose every store fails
 * could neither install, nor mark a slot bad, nor activate one. */
static int env_flash_store(struct env *e)
{
	size_t target = env_is_redundant(e) ? !e->current : 0;
	uint8_t serial = (uint8_t)(e->copies[e->current].flags + 1);
	_cleanup_free_ uint8_t *img = NULL;
	int r;

	r = env_flash_image(e, serial, &img);
	if (r < 0)
		return r;
	if (!e->writable) {
		r = env_flash_attach(e, true, NULL);
		if (r < 0)
			return r;
	}
	r = e->copies[target].state == ENV_COPY_DEAD ? e->copies[target].error :
	    env_flash_write_copy(e, target, serial, img);
	if (r >= 0 || !env_is_redundant(e) || !env_flash_copy_failed(r) ||
	    e->copies[!target].state != ENV_COPY_VALID)
		return r;
	e->copies[target].state = ENV_COPY_DEAD;
	e->copies[target].error = r;
	return env_flash_write_copy(e, !target, serial, img);
}

const struct env_backend env_flash_backend = {
	.name = "flash",
	.load = env_flash_load,
	.close = env_flash_close,
	.get = env_flash_get,
	.next = env_flash_next,
	.set = env_flash_set,
	.import = env_flash_import,
	.store = env_flash_store,
};

/* Where copy i of the layout's env is: devs[i], and what env_flash_attach()
 * needs (copied: the layout may go away). */
static int env_flash_copy_locate(struct env *e, const struct layout *l, const char *target,
				 size_t i, struct error *err)
{
	const struct layout_env_copy *lc = &l->env.copies[i];
	const struct layout_partition *p = lc->part;
	struct env_copy *c = &e->copies[i];
	uint64_t span = lc->sector_size ? lc->sector_size : p->dev->erasesize;
	char *path = NULL;
	int r;

	r = board_sim_device_path(target, l, p->dev, &path);
	if (r < 0)
		return error_set(err, r, "env partition %s: no simulator file for device %s in %s: %s",
				p->name, p->dev->name, target, strerror(-r));
	e->paths[i] = path;
	e->n_devs = i + 1;
	e->devs[i] = (struct env_device){ .path = path, .offset = p->offset + lc->offset,
					  .size = lc->size, .sector_size = span, .sectors = 1 };
	c->part_name = strdup(p->name);
	if (!c->part_name)
		return -ENOMEM;
	c->part_offset = p->offset;
	c->part_size = p->size;
	c->chip = (struct flash_info){ .type = p->dev->type, .size = p->dev->size,
				       .erasesize = p->dev->erasesize };
	c->offset = lc->offset;
	c->span = span;
	return 0;
}

int env_flash_locate(struct env *e, const struct layout *l, const char *target, struct error *err)
{
	int r = 0;

	for (size_t i = 0; r >= 0 && i < l->env.n_copies; i++)
		r = env_flash_copy_locate(e, l, target, i, err);
	return r < 0 ? r : env_flash_attach(e, false, err);
}
