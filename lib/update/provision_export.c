/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The factory image for a flash programmer: the provisioned simulator
 * copied out block by block (NAND: page+OOB interleaved as nandwrite -o
 * takes it) with a report of every region and its sha256 (see
 * include/provision.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cleanup_json.h"
#include "hash.h"
#include "nsim.h"
#include "provision-internal.h"
#include "util.h"

static int hex(const uint8_t *b, size_t n, char *out)
{
	for (size_t i = 0; i < n; i++)
		sprintf(out + 2 * i, "%02x", b[i]);
	return 0;
}

struct export {
	struct nsim *s;
	struct nsim_info info;
	int data_fd, oob_fd;
	struct json_object *good;      /* blocks that must be good (NAND) */
};

/* Copy one erase block to the image files; returns 1 when it holds data. */
static int export_block(struct export *x, uint64_t blk, uint8_t *buf, uint8_t *oob,
			struct hash *md)
{
	uint32_t eb = x->info.geo.erasesize, ws = x->info.geo.writesize;
	uint64_t off = blk * eb;
	bool used = false;
	int r = nsim_read(x->s, off, buf, eb);

	if (r < 0 && r != -EUCLEAN)
		memset(buf, 0xff, eb); /* a bad block: the programmer skips it */
	used = !util_mem_is(buf, 0xff, eb);
	if (md)
		hash_update(md, buf, eb);
	if (util_write_full(x->data_fd, buf, eb) < 0)
		return -errno;
	if (x->oob_fd < 0)
		return used;
	for (uint32_t p = 0; p < eb / ws; p++) {
		if (nsim_read_oob_raw(x->s, off + (uint64_t)p * ws, oob, x->info.geo.oobsize) < 0)
			memset(oob, 0xff, x->info.geo.oobsize);
		used = used || !util_mem_is(oob, 0xff, x->info.geo.oobsize);
		if (util_write_full(x->oob_fd, buf + (size_t)p * ws, ws) < 0 ||
		    util_write_full(x->oob_fd, oob, x->info.geo.oobsize) < 0)
			return -errno;
	}
	return used;
}

/* A UBI partition's image alone and how it was made: the partition's
 * PEBs may go onto the chip in any good blocks (UBI finds them by their
 * headers), the geometry must be the chip's. */
static void export_ubi_info(const struct prov *pv, const struct provision_region *reg,
			    struct json_object *o)
{
	const struct layout_device *d = reg->part->dev;
	char *path = NULL;

	if (asprintf(&path, "%s.%s.ubi", pv->image_prefix, reg->part->name) < 0)
		return;
	json_object_object_add(o, "ubi_image", json_object_new_string(path));
	json_object_object_add(o, "ubi_pebs",
			       json_object_new_int64((int64_t)pv->ubi_pebs[reg->part - pv->l->partitions]));
	json_object_object_add(o, "ubi_min_io_size",
			       json_object_new_int64(d->type == FLASH_NAND ? d->writesize : 1));
	json_object_object_add(o, "ubi_subpage_size",
			       json_object_new_int64(d->type == FLASH_NAND ? d->subpage : 1));
	free(path);
}

int provision_export_image(struct prov *pv)
{
	_cleanup_free_ char *data = NULL, *oobf = NULL, *rep = NULL;
	_cleanup_free_ uint8_t *buf = NULL, *oob = NULL;
	_cleanup_json_ struct json_object *j = json_object_new_object();
	struct json_object *parts = json_object_new_array();
	struct export x = { .data_fd = -1, .oob_fd = -1, .good = json_object_new_array() };
	bool nand;
	int r;

	r = nsim_open(provision_sim_file(pv), false, &x.s);
	if (r < 0)
		return error_set(pv->err, r, "reopening %s: %s", provision_sim_file(pv), strerror(-r));
	nsim_get_info(x.s, &x.info);
	nand = x.info.geo.type == NSIM_NAND;
	buf = malloc(x.info.geo.erasesize);
	oob = malloc(x.info.geo.oobsize + 1);
	if (asprintf(&data, "%s.bin", pv->image_prefix) < 0 ||
	    asprintf(&oobf, "%s.oob.bin", pv->image_prefix) < 0 ||
	    asprintf(&rep, "%s.json", pv->image_prefix) < 0 || !buf || !oob) {
		r = -ENOMEM;
		goto out;
	}
	x.data_fd = open(data, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (nand)
		x.oob_fd = open(oobf, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (x.data_fd < 0 || (nand && x.oob_fd < 0)) {
		r = error_set(pv->err, -errno, "cannot write the factory image %s: %s", data, strerror(errno));
		goto out;
	}
	for (size_t i = 0; i < pv->l->n_partitions; i++) {
		struct provision_region *reg = &pv->regions[i];
		struct hash md;
		uint64_t first = reg->part->offset / x.info.geo.erasesize;
		uint64_t n = reg->part->size / x.info.geo.erasesize;
		struct json_object *o = json_object_new_object();
		char h[65];

		hash_init(&md);
		for (uint64_t b = first; b < first + n; b++) {
			r = export_block(&x, b, buf, oob, &md);
			if (r < 0) {
				json_object_put(o);
				error_set(pv->err, r, "writing the factory image: %s", strerror(-r));
				goto out;
			}
			/* a UBI image's PEBs go into any good blocks of their partition */
			if (r == 1 && nand && reg->action != PROVISION_UBI_IMAGE)
				json_object_array_add(x.good, json_object_new_int64(b));
		}
		hash_final(&md, reg->sha256);
		reg->has_sha256 = true;
		hex(reg->sha256, 32, h);
		json_object_object_add(o, "name", json_object_new_string(reg->part->name));
		json_object_object_add(o, "offset", json_object_new_int64(reg->part->offset));
		json_object_object_add(o, "size", json_object_new_int64(reg->part->size));
		json_object_object_add(o, "action",
				       json_object_new_string(provision_action_to_string(reg->action)));
		json_object_object_add(o, "detail", json_object_new_string(reg->detail));
		json_object_object_add(o, "sha256", json_object_new_string(h));
		if (reg->action == PROVISION_UBI_IMAGE)
			export_ubi_info(pv, reg, o);
		json_object_array_add(parts, o);
	}
	json_object_object_add(j, "board", json_object_new_string(pv->l->board ? pv->l->board : ""));
	json_object_object_add(j, "compatible", json_object_new_string(pv->l->compatible ? pv->l->compatible : ""));
	json_object_object_add(j, "type", json_object_new_string(nand ? "nand" : "nor"));
	json_object_object_add(j, "size", json_object_new_int64(x.info.geo.size));
	json_object_object_add(j, "erase_block", json_object_new_int64(x.info.geo.erasesize));
	json_object_object_add(j, "page", json_object_new_int64(x.info.geo.writesize));
	json_object_object_add(j, "oob", json_object_new_int64(x.info.geo.oobsize));
	json_object_object_add(j, "data_image", json_object_new_string(data));
	json_object_object_add(j, "oob_image", nand ? json_object_new_string(oobf) : NULL);
	json_object_object_add(j, "bundle_version", json_object_new_string(pv->man.version));
	json_object_object_add(j, "partitions", parts);
	parts = NULL;
	/* NAND: blocks with content must be good on the target chip */
	json_object_object_add(j, "must_be_good", nand ? json_object_get(x.good) : NULL);
	r = json_object_to_file_ext(rep, j, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE) < 0 ? -EIO : 0;
	if (r < 0)
		error_set(pv->err, r, "cannot write %s", rep);
out:
	json_object_put(parts);
	json_object_put(x.good);
	if (x.data_fd >= 0)
		close(x.data_fd);
	if (x.oob_fd >= 0)
		close(x.oob_fd);
	nsim_close(x.s);
	return r;
}
