/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* UBI partitions without the kernel's UBI (simulators, factory images): the
 * image ubinize would make, slot images inside, written from one pass over
 * the bundle (see provision-internal.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "board.h"
#include "bundle_reader.h"
#include "env.h"
#include "provision-internal.h"
#include "provision_ubi.h"
#include "slot.h"
#include "slot_change.h"
#include "ubinize.h"
#include "util.h"

#define UBI_DESTS (2 * SLOT_MAX)

struct ubi_pass {
	struct prov *pv;
	struct flash **f;                     /* per layout UBI: its partition */
	struct provision_ubi_image **pi;      /* per layout UBI: its image */
};

static void ubi_pass_done(struct ubi_pass *up)
{
	for (size_t u = 0; up->pi && up->f && u < up->pv->l->n_ubis; u++) {
		provision_ubi_image_free(up->pi[u]);
		flash_close(up->f[u]);
	}
	free(up->pi);
	free(up->f);
}

/* The volumes a bundle image goes into: one per installed slot holding the
 * member in UBI (ubi[i], vol[i]: layout indexes). */
static size_t ubi_dests(const struct prov *pv, const char *member, size_t *ubi, size_t *vol)
{
	size_t n = 0;

	for (size_t s = 0; s < pv->g->n_slots; s++) {
		const struct layout_slot *sl = &pv->g->slots[s];
		const struct layout_image_target *t = !strcmp(member, "rootfs") ? &sl->rootfs :
			!strcmp(member, "kernel") && sl->has_kernel ? &sl->kernel : NULL;

		if (!provision_slot_installed(pv, s) || !t || t->storage != LAYOUT_STORAGE_UBI)
			continue;
		for (size_t u = 0; u < pv->l->n_ubis && n < UBI_DESTS; u++) {
			const struct layout_ubi_volume *v =
				layout_find_ubi_volume(&pv->l->ubis[u], t->ubi_volume);
			if (pv->l->ubis[u].part != t->part || !v)
				continue;
			ubi[n] = u;
			vol[n++] = (size_t)(v - pv->l->ubis[u].volumes);
		}
	}
	return n;
}

static int ubi_on_data(void *userdata, const struct bundle_image *img, const void *buf,
		       size_t len, struct error *err)
{
	struct ubi_pass *up = userdata;
	size_t ubi[UBI_DESTS], vol[UBI_DESTS], n = ubi_dests(up->pv, img->slot, ubi, vol);
	int r;

	for (size_t i = 0; i < n; i++)
		if ((r = provision_ubi_image_write(up->pi[ubi[i]], vol[i], buf, len, err)) < 0)
			return error_prefix(err, r, "image \"%s\"", img->slot);
	return 0;
}

/* The same image in every UBI volume it goes to: reproducible factory images. */
static uint32_t ubi_image_seq(const struct prov *pv)
{
	uint32_t crc = 0xffffffffu;

	for (size_t i = 0; i < pv->man.n_images; i++)
		crc = ubinize_crc32(crc, pv->man.images[i].sha256, 32);
	return crc ? crc : 1;
}

static int ubi_pass_open(struct ubi_pass *up, struct board *b)
{
	struct prov *pv = up->pv;
	int r;

	up->f = calloc(pv->l->n_ubis, sizeof(*up->f));
	up->pi = calloc(pv->l->n_ubis, sizeof(*up->pi));
	if (!up->f || !up->pi)
		return -ENOMEM;
	for (size_t u = 0; u < pv->l->n_ubis; u++) {
		const struct layout_ubi *ubi = &pv->l->ubis[u];
		_cleanup_free_ uint64_t *sizes = calloc(ubi->n_volumes, sizeof(*sizes));

		if (!sizes)
			return -ENOMEM;
		for (size_t i = 0; i < pv->man.n_images; i++) {
			size_t du[UBI_DESTS], dv[UBI_DESTS];
			size_t n = ubi_dests(pv, pv->man.images[i].slot, du, dv);
			for (size_t d = 0; d < n; d++)
				if (du[d] == u)
					sizes[dv[d]] = pv->man.images[i].size;
		}
		r = board_open_partition(b, ubi->part, &up->f[u]);
		if (r < 0)
			return error_set(pv->err, r, "partition %s: %s", ubi->part->name, strerror(-r));
		r = provision_ubi_image_new(ubi, up->f[u], sizes, ubi_image_seq(pv), &up->pi[u],
					    pv->err);
		if (r < 0)
			return r;
	}
	return 0;
}

/* The install engine's last store, without its writer. */
static int slot_store(struct prov *pv, size_t slot, enum slot_op op, const char *version)
{
	_cleanup_env_ struct env *e = NULL;
	struct slot_change_result res;
	char var[64];
	int r;

	slot_version_var(pv->g->slots[slot].name, var, sizeof(var));
	r = env_open_layout(pv->l, pv->target, pv->p->sysfs, 0, &e, pv->err);
	if (r >= 0)
		r = slot_change(e, pv->g, &(struct slot_change) {
				.op = op, .slot = (int)slot, .booted = -1,
				.extra_name = var, .extra_value = version }, &res, pv->err);
	return r < 0 ? error_prefix(pv->err, r, "U-Boot env, slot %s", pv->g->slots[slot].name) : 0;
}

static int ubi_stream(struct ubi_pass *up)
{
	struct prov *pv = up->pv;
	_cleanup_(bundle_reader_freep) struct bundle_reader *r = NULL;
	_cleanup_close_ int fd = open(pv->p->bundle, O_RDONLY | O_CLOEXEC);
	static const struct bundle_reader_ops ops = { .image_data = ubi_on_data };
	struct bundle_slot_limit lim[2];
	struct bundle_policy pol;
	int ret;

	if (fd < 0)
		return error_set(pv->err, -errno, "bundle %s: %s", pv->p->bundle, strerror(errno));
	provision_bundle_policy_of(pv, lim, &pol);
	ret = bundle_reader_new(&pol, &ops, up, &r);
	if (ret >= 0)
		ret = bundle_reader_read_fd(r, fd, pv->err);
	for (size_t u = 0; ret >= 0 && u < pv->l->n_ubis; u++)
		ret = provision_ubi_image_finish(up->pi[u], pv->err);
	return ret < 0 ? error_prefix(pv->err, ret, "UBI image from bundle %s", pv->p->bundle) : 0;
}

static int ubi_verify(struct ubi_pass *up)
{
	struct prov *pv = up->pv;

	for (size_t i = 0; i < pv->man.n_images; i++) {
		size_t ubi[UBI_DESTS], vol[UBI_DESTS];
		size_t n = ubi_dests(pv, pv->man.images[i].slot, ubi, vol);
		for (size_t d = 0; d < n; d++) {
			int r = provision_ubi_image_verify(up->pi[ubi[d]], vol[d],
							   pv->man.images[i].sha256, pv->err);
			if (r < 0)
				return r;
		}
	}
	return 0;
}

static int ubi_export(struct ubi_pass *up)
{
	struct prov *pv = up->pv;

	for (size_t u = 0; u < pv->l->n_ubis; u++) {
		const struct layout_partition *part = pv->l->ubis[u].part;
		_cleanup_free_ char *path = NULL;
		_cleanup_close_ int fd = -1;
		int r;

		pv->ubi_pebs[part - pv->l->partitions] = provision_ubi_image_pebs(up->pi[u]);
		if (!pv->image_prefix)
			continue;
		if (asprintf(&path, "%s.%s.ubi", pv->image_prefix, part->name) < 0)
			return -ENOMEM;
		fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		if (fd < 0)
			return error_set(pv->err, -errno, "cannot write the UBI image %s: %s", path,
					 strerror(errno));
		if ((r = provision_ubi_image_export(up->pi[u], fd, pv->err)) < 0)
			return error_prefix(pv->err, r, "%s", path);
	}
	return 0;
}

/* Every UBI image written from one pass over the bundle and read back
 * through its headers against the manifest, while the env partitions are
 * still erased: an interrupted run leaves no slot env at all, never a
 * slot recorded good before its image verified (the env comes after). */
int provision_ubi_pass_write(struct prov *pv, struct board *b)
{
	struct ubi_pass up = { .pv = pv };
	int r = ubi_pass_open(&up, b);

	if (r >= 0)
		r = ubi_stream(&up);
	if (r >= 0)
		r = ubi_verify(&up);
	if (r >= 0)
		r = ubi_export(&up);
	ubi_pass_done(&up);
	return r;
}

/* After init_env: each slot holding verified images recorded and activated,
 * the last one (A) first in BOOT_ORDER, as the installs do. */
int provision_ubi_pass_activate(struct prov *pv)
{
	int r = 0;

	for (size_t s = pv->g->n_slots; r >= 0 && s-- > 0;)
		if (provision_slot_installed(pv, s))
			r = slot_store(pv, s, SLOT_OP_INSTALL_ACTIVATE, pv->man.version);
	return r;
}
