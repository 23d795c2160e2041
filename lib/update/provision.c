/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Provisioning (include/provision.h): the run. Its UBI pass and its
 * factory-image export are parts of their own (provision-internal.h). */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "board.h"
#include "block_record.h"
#include "bundle.h"
#include "bundle_reader.h"
#include "env.h"
#include "flashio.h"
#include "install.h"
#include "jffs2.h"
#include "layout_kernel.h"
#include "nsim.h"
#include "provision-internal.h"
#include "provision.h"
#include "provision_ubi.h"
#include "slot.h"
#include "slot_boot.h"
#include "util.h"

static const char *const provision_action_table[] = { PROVISION_ACTION_LIST(STRING_TABLE_NAME) };
DEFINE_STRING_TABLE_TO(provision_action, enum provision_action)

static bool is_system(const struct prov *pv)
{
	return board_target_parse(pv->p->target, NULL) == BOARD_TARGET_SYSTEM;
}

static const char *mtd_sysfs(const struct prov *pv)
{
	return pv->p->sysfs ? pv->p->sysfs : FLASH_MTD_SYSFS;
}

/* Without the kernel's UBI (simulators, factory images) UBI partitions
 * get the UBI image ubinize would make, slot images inside. */
static bool ubi_factory(const struct prov *pv)
{
	return pv->l->n_ubis && !is_system(pv);
}

bool provision_slot_installed(const struct prov *pv, size_t i)
{
	return i == 0 || pv->p->both_slots;
}

static bool manifest_has(const struct prov *pv, const char *member)
{
	for (size_t i = 0; i < pv->man.n_images; i++)
		if (!strcmp(pv->man.images[i].slot, member))
			return true;
	return false;
}

/* ---- plan: what happens to each partition ---- */

/* UBI volumes share their partition's region: its detail lists them. */
static void plan_ubi_member(struct prov *pv, const struct layout_image_target *t, size_t slot,
			    const char *member)
{
	char *d = pv->details[t->part - pv->l->partitions];
	size_t len = strlen(d);

	if (pv->regions[t->part - pv->l->partitions].action != PROVISION_UBI &&
	    pv->regions[t->part - pv->l->partitions].action != PROVISION_UBI_IMAGE)
		return;
	if (provision_slot_installed(pv, slot) && manifest_has(pv, member))
		snprintf(d + len, PROVISION_DETAIL_MAX - len, "; %s of slot %s into %s: version %s",
			 member, pv->g->slots[slot].name, t->ubi_volume, pv->man.version);
	else
		snprintf(d + len, PROVISION_DETAIL_MAX - len, "; %s left empty", t->ubi_volume);
}

static void plan_slot_member(struct prov *pv, const struct layout_image_target *t, size_t slot,
			     const char *member)
{
	struct provision_region *r;
	size_t idx;

	if (t->part && t->storage == LAYOUT_STORAGE_UBI) {
		plan_ubi_member(pv, t, slot, member);
		return;
	}
	if (!t->part || (t->storage != LAYOUT_STORAGE_NOR && t->storage != LAYOUT_STORAGE_NAND))
		return;
	idx = t->part - pv->l->partitions;
	r = &pv->regions[idx];
	if (provision_slot_installed(pv, slot) && manifest_has(pv, member)) {
		r->action = PROVISION_IMAGE;
		snprintf(pv->details[idx], sizeof(pv->details[idx]), "%s of slot %s: version %s",
			 member, pv->g->slots[slot].name, pv->man.version);
	} else {
		snprintf(pv->details[idx], sizeof(pv->details[idx]), "%s of slot %s: left empty",
			 member, pv->g->slots[slot].name);
	}
}

static void plan(struct prov *pv)
{
	const struct layout *l = pv->l;

	for (size_t i = 0; i < l->n_partitions; i++) {
		pv->regions[i] = (struct provision_region){ .part = &l->partitions[i],
							    .action = PROVISION_ERASE,
							    .detail = pv->details[i] };
		snprintf(pv->details[i], sizeof(pv->details[i]), "unused by the layout");
	}
	if (l->bootloader) {
		size_t i = l->bootloader - l->partitions;
		pv->regions[i].action = pv->p->include_bootloader ? PROVISION_ERASE : PROVISION_KEEP;
		snprintf(pv->details[i], sizeof(pv->details[i]), "bootloader%s",
			 pv->p->include_bootloader ? " (erased: --include-bootloader)" : "");
	}
	for (size_t c = 0; c < l->env.n_copies; c++) {
		size_t i = l->env.copies[c].part - l->partitions;
		pv->regions[i].action = PROVISION_ENV;
		snprintf(pv->details[i], sizeof(pv->details[i]), "U-Boot env copy %zu of %zu", c + 1,
			 l->env.n_copies);
	}
	for (size_t u = 0; u < l->n_ubis; u++) {
		size_t i = l->ubis[u].part - l->partitions;
		pv->regions[i].action = is_system(pv) ? PROVISION_UBI : PROVISION_UBI_IMAGE;
		provision_ubi_describe(&l->ubis[u], !is_system(pv), pv->details[i],
				       sizeof(pv->details[i]));
	}
	for (size_t s = 0; s < pv->g->n_slots; s++) {
		plan_slot_member(pv, &pv->g->slots[s].rootfs, s, "rootfs");
		if (pv->g->slots[s].has_kernel)
			plan_slot_member(pv, &pv->g->slots[s].kernel, s, "kernel");
	}
	for (size_t o = 0; o < l->n_overlays; o++) {
		const struct layout_overlay *ov = &l->overlays[o];
		size_t i;
		if (ov->type != LAYOUT_OVERLAY_JFFS2 || !ov->part)
			continue;
		i = ov->part - l->partitions;
		pv->regions[i].action = PROVISION_OVERLAY;
		snprintf(pv->details[i], sizeof(pv->details[i]), "JFFS2 overlay for %s: empty, "
			 "cleanmarkers", ov->path);
	}
}

/* ---- the bundle is checked completely before flash is touched ---- */

/* Room and image type per slot member, over the slots that get an image:
 * the smallest partition holding the member; the root filesystem must be
 * of the group's image type. */
static size_t member_limits(const struct prov *pv, struct bundle_slot_limit *lim, size_t max)
{
	static const char *const members[] = { "rootfs", "kernel" };
	size_t n = 0;

	for (size_t m = 0; m < ELEMENTSOF(members) && n < max; m++) {
		struct bundle_slot_limit l = { members[m], UINT64_MAX, NULL };
		bool has = false;

		if (m == 0)
			l.image_type = pv->g->image_type;
		for (size_t s = 0; s < pv->g->n_slots; s++) {
			const struct layout_slot *sl = &pv->g->slots[s];
			const struct layout_image_target *t = m == 0 ? &sl->rootfs : &sl->kernel;
			if (m == 1 && !sl->has_kernel)
				continue;
			has = true;
			if (provision_slot_installed(pv, s) && t->part)
				l.max_size = MIN(l.max_size, layout_target_size(pv->l, t));
		}
		if (has)
			lim[n++] = l;
	}
	return n;
}

void provision_bundle_policy_of(const struct prov *pv, struct bundle_slot_limit lim[2],
				struct bundle_policy *ret)
{
	*ret = (struct bundle_policy){
		.keyring = pv->p->keyring,
		.allow_unsigned = pv->p->allow_unsigned,
		.compatible = pv->l->compatible,
		.slots = lim,
		.n_slots = member_limits(pv, lim, 2),
	};
}

static int verify_bundle(struct prov *pv)
{
	_cleanup_(bundle_reader_freep) struct bundle_reader *r = NULL;
	_cleanup_close_ int fd = open(pv->p->bundle, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	struct bundle_slot_limit lim[2];
	struct bundle_policy pol;
	struct stat st;
	int ret;

	if (fd < 0)
		return error_set(pv->err, -errno, "bundle %s: %s", pv->p->bundle, strerror(errno));
	if (fstat(fd, &st) < 0)
		return error_set(pv->err, -errno, "bundle %s: %s", pv->p->bundle, strerror(errno));
	/* it is read twice (checked here, installed later): a pipe cannot be */
	if (!S_ISREG(st.st_mode))
		return error_set(pv->err, -EINVAL, "bundle %s is not a regular file", pv->p->bundle);
	if (fcntl(fd, F_SETFL, 0) < 0)
		return error_set(pv->err, -errno, "bundle %s: %s", pv->p->bundle, strerror(errno));
	provision_bundle_policy_of(pv, lim, &pol);
	ret = bundle_reader_new(&pol, NULL, NULL, &r);
	if (ret >= 0)
		ret = bundle_reader_read_fd(r, fd, pv->err);
	if (ret < 0)
		return error_prefix(pv->err, ret, "bundle %s refused", pv->p->bundle);
	pv->man = *bundle_reader_manifest(r);
	return 0;
}

/* ---- target checks (nothing is created or written) ---- */

/* The directory that will hold a file we create must exist and be writable. */
static int check_dir_of(struct prov *pv, const char *path, const char *what)
{
	_cleanup_free_ char *dir = strdup(path);
	char *slash;

	if (!dir)
		return -ENOMEM;
	slash = strrchr(dir, '/');
	if (!slash)
		strcpy(dir, ".");
	else if (slash == dir)
		dir[1] = '\0';
	else
		*slash = '\0';
	if (access(dir, W_OK) < 0)
		return error_set(pv->err, -errno, "%s %s: cannot create it in %s: %s", what, path, dir,
			    strerror(errno));
	return 0;
}

/* An existing simulator must be a regular file holding the chip the
 * layout describes (a FIFO or /dev/zero is refused, not opened). */
static int check_sim(struct prov *pv, const char *path, const struct layout_device *d)
{
	_cleanup_flash_ struct flash *f = NULL;
	_cleanup_free_ char *spec = NULL;
	char a[32], b[32], c[32], e[32];
	struct stat st;
	int r;

	if (stat(path, &st) < 0)
		return error_set(pv->err, -errno, "simulator %s: %s", path, strerror(errno));
	if (!S_ISREG(st.st_mode))
		return error_set(pv->err, -EMEDIUMTYPE, "simulator %s is not a regular file (a simulator is "
			    "a file made by 'flashctl flash sim-create' or created here)", path);
	if (asprintf(&spec, "sim:%s", path) < 0)
		return -ENOMEM;
	r = flash_open(spec, false, &f);
	if (r < 0)
		return error_set(pv->err, r, "simulator %s: %s", path, r == -EMEDIUMTYPE ?
			    "not a simulator file" : strerror(-r));
	if (f->info.type == d->type && f->info.size == d->size && f->info.erasesize == d->erasesize)
		return 0;
	return error_set(pv->err, -EMEDIUMTYPE, "simulator %s is a %s %s chip with %s erase blocks; the "
		    "layout's device %s is a %s %s chip with %s erase blocks: the geometry does "
		    "not match", path, util_format_size(f->info.size, a, sizeof(a)),
		    flash_type_to_string(f->info.type), util_format_size(f->info.erasesize, b, sizeof(b)),
		    d->name, util_format_size(d->size, c, sizeof(c)), flash_type_to_string(d->type),
		    util_format_size(d->erasesize, e, sizeof(e)));
}

static int check_sim_target(struct prov *pv, const char *path)
{
	if (pv->l->n_devices != 1)
		return error_set(pv->err, -EOPNOTSUPP, "simulator targets take one-device layouts; %s has %zu",
			    pv->l->path, pv->l->n_devices);
	if (access(path, F_OK) == 0)
		return check_sim(pv, path, &pv->l->devices[0]);
	return check_dir_of(pv, path, "simulator");
}

/* The simulator file of a sim: target (pv->target after check_target). */
const char *provision_sim_file(const struct prov *pv)
{
	const char *path = NULL;

	board_target_parse(pv->target, &path);
	return path ? path : "";
}

/* Provisioning erases every slot: never from a system running on one. */
static int check_not_booted(struct prov *pv)
{
	const char *by = NULL;
	const struct slot_boot_where w = { .cmdline = pv->p->cmdline, .target = pv->p->target };
	int r = slot_booted(&w, pv->l, pv->g, &by, pv->err);

	if (r == -ENOENT) {
		error_clear(pv->err); /* not booted from a slot: what provisioning wants */
		return 0;
	}
	if (r < 0)
		return error_prefix(pv->err, r, "cannot tell whether the running system booted from a slot");
	return error_set(pv->err, -EBUSY, "the running system booted slot %s (%s): provisioning erases "
		    "every slot, including the running root; provision from a rescue system or "
		    "another boot medium, or update with 'flashctl install'", pv->g->slots[r].name,
		    by ? by : "kernel command line");
}

static int check_target(struct prov *pv)
{
	const char *t = pv->p->target, *sim;
	int r, kind = board_target_parse(t, &sim);

	if (kind == BOARD_TARGET_SIM) {
		snprintf(pv->target, sizeof(pv->target), "%s", t);
		return check_sim_target(pv, sim);
	}
	if (!strncmp(t, "image:", 6)) {
		pv->image_prefix = strdup(t + 6);
		if (!pv->image_prefix)
			return -ENOMEM;
		snprintf(pv->target, sizeof(pv->target), BOARD_TARGET_SIM_PREFIX "%s.sim.tmp", t + 6);
		if (pv->l->n_devices != 1)
			return error_set(pv->err, -EOPNOTSUPP, "factory images take one-device layouts; %s "
				    "has %zu", pv->l->path, pv->l->n_devices);
		return check_dir_of(pv, pv->image_prefix, "factory image");
	}
	if (kind == BOARD_TARGET_SYSTEM) {
		snprintf(pv->target, sizeof(pv->target), BOARD_TARGET_SYSTEM_NAME);
		r = layout_kernel_check_system(pv->l, pv->p->sysfs, pv->err);
		if (r < 0)
			return error_prefix(pv->err, r, "the running system's flash does not match the layout");
		for (size_t u = 0; u < pv->l->n_ubis; u++)
			if ((r = provision_ubi_check_system(&pv->l->ubis[u], mtd_sysfs(pv), "/proc/mounts",
							    pv->err)) < 0)
				return r;
		return check_not_booted(pv);
	}
	return error_set(pv->err, -EINVAL, "unknown target '%s' (system, sim:PATH or image:PREFIX)", t);
}

/* What the layout asks for that this version cannot lay out. */
static int check_layout(struct prov *pv)
{
	for (size_t i = 0; i < pv->l->n_partitions; i++)
		if (pv->regions[i].action == PROVISION_UNSUPPORTED)
			return error_set(pv->err, -EOPNOTSUPP, "partition %s: %s", pv->regions[i].part->name,
				    pv->regions[i].detail);
	if (!pv->l->env.n_copies)
		return error_set(pv->err, -ENOENT, "layout %s has no U-Boot env to initialise", pv->l->path);
	for (size_t s = 0; s < pv->g->n_slots; s++) {
		const struct layout_slot *sl = &pv->g->slots[s];
		if (!provision_slot_installed(pv, s))
			continue;
		for (int k = 0; k < 1 + sl->has_kernel; k++) {
			const struct layout_image_target *t = k ? &sl->kernel : &sl->rootfs;
			if (t->storage != LAYOUT_STORAGE_NOR && t->storage != LAYOUT_STORAGE_NAND &&
			    t->storage != LAYOUT_STORAGE_UBI)
				return error_set(pv->err, -EOPNOTSUPP, "slot %s: %s storage is not written by "
					    "this version", sl->name,
					    layout_storage_to_string(t->storage));
			/* the UBI image is written from the bundle in one pass of its own */
			if (ubi_factory(pv) && t->storage != LAYOUT_STORAGE_UBI)
				return error_set(pv->err, -EOPNOTSUPP, "slot %s: a board with UBI gets its "
					    "slot images only into UBI volumes on simulators and factory "
					    "images; %s is in %s storage", sl->name, k ? "kernel" : "rootfs",
					    layout_storage_to_string(t->storage));
		}
	}
	if (pv->p->initial_env && access(pv->p->initial_env, R_OK) < 0)
		return error_set(pv->err, -errno, "initial env %s: %s", pv->p->initial_env, strerror(errno));
	return 0;
}

/* The volume table against the UBI partition's bad blocks. */
static int check_ubi_room(struct prov *pv, struct board *b)
{
	for (size_t u = 0; u < pv->l->n_ubis; u++) {
		_cleanup_flash_ struct flash *f = NULL;
		struct provision_ubi_plan plan;
		int r = board_open_partition(b, pv->l->ubis[u].part, &f);

		if (r < 0)
			return error_set(pv->err, r, "partition %s: %s", pv->l->ubis[u].part->name,
				    strerror(-r));
		r = flash_count_bad(f);
		if (r < 0)
			return error_set(pv->err, r, "partition %s: counting bad blocks: %s",
				    pv->l->ubis[u].part->name, strerror(-r));
		r = provision_ubi_plan(&pv->l->ubis[u], (uint64_t)r, &plan, pv->err);
		if (r < 0)
			return r;
	}
	return 0;
}

/* On a target that exists, an image must also fit in the partition's
 * good blocks (factory bad blocks are skipped when writing). */
static int check_room(struct prov *pv)
{
	_cleanup_board_ struct board *b = NULL;
	const char *sim;
	int r;

	if (pv->image_prefix || (board_target_parse(pv->target, &sim) == BOARD_TARGET_SIM &&
				 access(sim, F_OK)))
		return 0; /* created blank */
	r = board_open(pv->l, pv->target, false, &b);
	if (r < 0)
		return error_set(pv->err, r, "target %s: %s", pv->target, strerror(-r));
	for (size_t s = 0; s < pv->g->n_slots; s++) {
		const struct layout_slot *sl = &pv->g->slots[s];
		if (!provision_slot_installed(pv, s))
			continue;
		for (size_t i = 0; i < pv->man.n_images; i++) {
			const struct bundle_image *img = &pv->man.images[i];
			const struct layout_image_target *t = !strcmp(img->slot, "rootfs") ?
				&sl->rootfs : sl->has_kernel ? &sl->kernel : NULL;
			_cleanup_flash_ struct flash *f = NULL;
			uint64_t good = 0;

			if (!t || !t->part)
				continue;
			if (t->storage == LAYOUT_STORAGE_UBI) {
				/* the volume's size; UBI keeps bad blocks out of it */
				if (img->size > layout_target_size(pv->l, t))
					return error_set(pv->err, -EFBIG, "image \"%s\" (%" PRIu64 " bytes) does "
						    "not fit in UBI volume %s of slot %s (%" PRIu64 " bytes)",
						    img->slot, img->size, t->ubi_volume, sl->name,
						    layout_target_size(pv->l, t));
				continue;
			}
			r = board_open_partition(b, t->part, &f);
			if (r < 0)
				return error_set(pv->err, r, "partition %s: %s", t->part->name, strerror(-r));
			for (uint64_t off = 0; off < f->info.size; off += f->info.erasesize)
				if (flash_block_isbad(f, off) != 1)
					good += f->info.erasesize;
			if (img->size > good)
				return error_set(pv->err, -EFBIG, "image \"%s\" (%" PRIu64 " bytes) does not fit in "
					    "partition %s of slot %s: %" PRIu64 " bytes in good blocks",
					    img->slot, img->size, t->part->name, sl->name, good);
		}
	}
	return check_ubi_room(pv, b);
}

/* ---- target set-up (after every check passed) ---- */

static int prepare_target(struct prov *pv)
{
	const struct layout_device *d = &pv->l->devices[0];
	struct nsim_geometry geo = {
		.type = d->type == FLASH_NAND ? NSIM_NAND : NSIM_NOR,
		.size = d->size,
		.erasesize = d->erasesize,
		.writesize = d->type == FLASH_NAND ? d->writesize : 1,
		.oobsize = d->type == FLASH_NAND ? d->oobsize : 0,
	};
	const char *path;
	int r;

	if (board_target_parse(pv->target, &path) != BOARD_TARGET_SIM)
		return 0;
	if (pv->image_prefix)
		unlink(path);
	else if (access(path, F_OK) == 0)
		return 0;
	r = nsim_create(path, &geo, 0);
	if (r < 0)
		return error_set(pv->err, r, "cannot create simulator %s: %s", path, strerror(-r));
	return 0;
}

/* ---- the steps ---- */

static int erase_regions(struct prov *pv, struct board *b)
{
	for (size_t i = 0; i < pv->l->n_partitions; i++) {
		struct provision_region *r = &pv->regions[i];
		_cleanup_flash_ struct flash *f = NULL;
		struct flashio_stats st = { 0 };
		int ret;

		if (r->action == PROVISION_KEEP || r->action == PROVISION_UNSUPPORTED ||
		    r->action == PROVISION_UBI)
			continue;
		ret = board_open_partition(b, r->part, &f);
		if (ret < 0)
			return error_set(pv->err, ret, "partition %s: %s", r->part->name, strerror(-ret));
		/* an overlay gets JFFS2 clean markers */
		ret = flashio_erase_each(f, r->action == PROVISION_OVERLAY ? jffs2_erase_block :
					 flashio_erase_block, FLASHIO_MARK_BAD, &st);
		r->erased = st.erases;
		r->bad = st.blocks_bad_skipped + st.blocks_marked_bad;
		if (ret < 0)
			return error_set(pv->err, ret, "erasing partition %s: %s", r->part->name, strerror(-ret));
	}
	return 0;
}

/* Before the first erase: a UBI that cannot be detached refuses the run
 * while the board is still as it was. */
static int detach_ubis(struct prov *pv)
{
	for (size_t u = 0; is_system(pv) && u < pv->l->n_ubis; u++) {
		int r = provision_ubi_detach(&pv->l->ubis[u], mtd_sysfs(pv), pv->err);
		if (r < 0)
			return r;
	}
	return 0;
}

static int format_ubis(struct prov *pv, struct board *b)
{
	for (size_t u = 0; u < pv->l->n_ubis; u++) {
		const struct layout_ubi *ubi = &pv->l->ubis[u];
		struct provision_region *reg = &pv->regions[ubi->part - pv->l->partitions];
		_cleanup_flash_ struct flash *f = NULL;
		int r = board_open_partition(b, ubi->part, &f);

		if (r >= 0)
			r = flash_count_bad(f);
		if (r < 0)
			return error_set(pv->err, r, "partition %s: %s", ubi->part->name, strerror(-r));
		reg->bad = (uint64_t)r;
		reg->erased = flash_blocks(f) - reg->bad;
		flash_close(TAKE_PTR(f)); /* ubiformat opens the MTD device itself */
		r = provision_ubi_format(ubi, mtd_sysfs(pv), pv->err);
		if (r < 0)
			return r;
	}
	return 0;
}

/* Fresh env: U-Boot's defaults plus every slot in BOOT_ORDER with full
 * tries; the installs then mark-bad/activate as in the field. */
static int init_env(struct prov *pv)
{
	_cleanup_env_ struct env *e = NULL;
	struct env_var vars[SLOT_MAX + 1];
	char order[SLOT_MAX * (SLOT_NAME_MAX + 1)] = "", names[SLOT_MAX][SLOT_NAME_MAX + 16];
	char tries[8];
	size_t n = 0;
	int r;

	if (!pv->l->env.n_copies)
		return error_set(pv->err, -ENOENT, "layout %s has no U-Boot env", pv->l->path);
	snprintf(tries, sizeof(tries), "%u", pv->g->max_tries);
	for (size_t i = 0; i < pv->g->n_slots && i < SLOT_MAX; i++) {
		size_t len = strlen(order);
		snprintf(order + len, sizeof(order) - len, "%s%s", i ? " " : "", pv->g->slots[i].name);
		slot_left_var(pv->g->slots[i].name, names[i], sizeof(names[i]));
		vars[n++] = (struct env_var){ names[i], tries };
	}
	vars[n++] = (struct env_var){ SLOT_ORDER_VAR, order };
	r = env_open_layout(pv->l, pv->target, pv->p->sysfs, ENV_OPEN_ALLOW_BLANK, &e, pv->err);
	if (r >= 0)
		r = env_init_default(e, pv->p->initial_env, vars, n, true, pv->err);
	if (r < 0)
		return error_prefix(pv->err, r, "initial U-Boot env");
	return 0;
}

static int install_slot(struct prov *pv, struct board *b, const char *slot)
{
	_cleanup_install_ struct install *in = NULL;
	_cleanup_close_ int fd = open(pv->p->bundle, O_RDONLY | O_CLOEXEC);
	struct install_params ip = {
		.board = b,
		.target = pv->target,
		.group = pv->g,
		.slot = slot,
		.keyring = pv->p->keyring,
		.allow_unsigned = pv->p->allow_unsigned,
		.activate = true,
		.state_dir = pv->p->state_dir,
	};
	int r;

	if (fd < 0)
		return error_set(pv->err, -errno, "bundle %s: %s", pv->p->bundle, strerror(errno));
	r = install_new(&ip, &in);
	if (r >= 0)
		r = install_run_fd(in, fd, NULL, pv->err);
	if (r < 0)
		return error_prefix(pv->err, r, "installing into slot %s", slot);
	return 0;
}


/* Slots left empty go out of BOOT_ORDER (one store each). */
static int retire_empty_slots(struct prov *pv)
{
	for (size_t i = 0; i < pv->g->n_slots; i++) {
		_cleanup_env_ struct env *e = NULL;
		struct slot_env st, nst;
		struct slot_changes ch;
		int r;

		if (provision_slot_installed(pv, i))
			continue;
		r = env_open_layout(pv->l, pv->target, pv->p->sysfs, 0, &e, pv->err);
		if (r < 0)
			return error_prefix(pv->err, r, "U-Boot env");
		r = slot_env_load_group(&st, pv->g, env_get_dup, e, pv->err);
		if (r >= 0)
			r = slot_compute(&st, SLOT_OP_RETIRE, i, 0, &nst, &ch, pv->err);
		if (r < 0)
			return error_prefix(pv->err, r, "slot env");
		r = slot_apply(e, &ch, pv->err);
		if (r < 0)
			return error_prefix(pv->err, r, "U-Boot env");
	}
	return 0;
}

/* A cleanmarker sits in OOB bytes no ECC covers: one read may see a bit
 * flipped that the next does not (the kernel's JFFS2 would erase such a
 * block again, nothing is lost). Missing from three reads: not there. */
static int overlay_block_clean(struct flash *f, uint64_t off)
{
	int r = 0;

	for (int i = 0; i < 3 && r == 0; i++)
		r = jffs2_block_is_clean(f, off);
	return r;
}

/* Read back what provisioning promised: the env boots slot A, the overlay
 * blocks carry cleanmarkers (images were verified by the installs). */
static int check_board(struct prov *pv, struct board *b)
{
	_cleanup_env_ struct env *e = NULL;
	struct slot_env st;
	int r;

	r = env_open_layout(pv->l, pv->target, pv->p->sysfs, 0, &e, pv->err);
	if (r < 0)
		return error_prefix(pv->err, r, "reading back the U-Boot env");
	r = slot_env_load_group(&st, pv->g, env_get_dup, e, pv->err);
	if (r < 0 || slot_next_boot(&st) != 0)
		return error_set(pv->err, -EIO, "reading back the U-Boot env: slot %s would not boot first",
			    pv->g->slots[0].name);
	for (size_t i = 0; i < pv->l->n_partitions; i++) {
		_cleanup_flash_ struct flash *f = NULL;
		if (pv->regions[i].action != PROVISION_OVERLAY)
			continue;
		r = board_open_partition(b, pv->regions[i].part, &f);
		for (uint64_t off = 0; r >= 0 && off < f->info.size; off += f->info.erasesize) {
			if (flash_block_isbad(f, off) == 1)
				continue;
			r = overlay_block_clean(f, off);
			if (r == 0)
				r = -EIO;
		}
		if (r < 0)
			return error_set(pv->err, r, "reading back the overlay %s: a block lacks its cleanmarker",
				    pv->regions[i].part->name);
	}
	for (size_t u = 0; is_system(pv) && u < pv->l->n_ubis; u++)
		if ((r = provision_ubi_check(&pv->l->ubis[u], mtd_sysfs(pv), pv->err)) < 0)
			return error_prefix(pv->err, r, "reading back the UBI volumes");
	return 0;
}

/* ---- the whole job ---- */

static void report_all(struct prov *pv)
{
	for (size_t i = 0; pv->p->report && i < pv->l->n_partitions; i++)
		pv->p->report(pv->p->userdata, &pv->regions[i]);
}

/* The plan: what happens to each region, and every check that can refuse.
 * A dry run stops here; a real run starts erasing only after it passed,
 * so both refuse exactly the same things and a refusal changes nothing. */
static int plan_and_check(struct prov *pv)
{
	int r;

	plan(pv);
	r = check_layout(pv);
	if (r >= 0)
		r = check_target(pv);
	if (r >= 0)
		r = verify_bundle(pv);
	if (r < 0)
		return r;
	plan(pv); /* again: which slot members the bundle fills is known now */
	return check_room(pv);
}

static int run(struct prov *pv)
{
	_cleanup_board_ struct board *b = NULL;
	int r;

	r = plan_and_check(pv);
	if (r < 0)
		return r;
	if (pv->p->dry_run) {
		report_all(pv);
		return 0;
	}
	r = prepare_target(pv);
	if (r < 0)
		return r;
	r = board_open(pv->l, pv->target, true, &b);
	if (r < 0)
		return error_set(pv->err, r, "target %s: %s", pv->target, r == -EMEDIUMTYPE ?
			    "the simulator's geometry does not match the layout" : strerror(-r));
	r = detach_ubis(pv);
	if (r < 0)
		return r;
	*pv->written = true;
	r = erase_regions(pv, b);
	if (r >= 0 && is_system(pv))
		r = format_ubis(pv, b);
	if (r >= 0 && ubi_factory(pv))
		r = provision_ubi_pass_write(pv, b);
	if (r >= 0)
		r = init_env(pv);
	if (r >= 0 && ubi_factory(pv))
		r = provision_ubi_pass_activate(pv);
	/* the last install activates slot A, so A boots first */
	for (size_t i = pv->g->n_slots; r >= 0 && !ubi_factory(pv) && i-- > 0;)
		if (provision_slot_installed(pv, i))
			r = install_slot(pv, b, pv->g->slots[i].name);
	if (r >= 0)
		r = retire_empty_slots(pv);
	if (r >= 0)
		r = check_board(pv, b);
	board_close(TAKE_PTR(b));
	if (r >= 0 && pv->image_prefix)
		r = provision_export_image(pv);
	if (r >= 0)
		report_all(pv);
	return r;
}

/* Before anything is erased: no record (nor kept manifest) may describe
 * a slot that provisioning rewrites. One that cannot be deleted refuses
 * the run. */
static int drop_records(struct prov *pv)
{
	static const char *const members[] = { "rootfs", "kernel" };

	for (size_t i = 0; i < pv->g->n_slots; i++) {
		const char *slot = pv->g->slots[i].name;
		int r = block_record_manifest_drop(pv->p->state_dir, pv->g->name, slot);

		if (r < 0)
			return error_set(pv->err, r, "cannot delete the kept manifest of slot %s in "
					 "%s (nothing was erased): %s", slot, pv->p->state_dir,
					 strerror(-r));
		for (size_t k = 0; k < ELEMENTSOF(members); k++) {
			r = block_record_drop(pv->p->state_dir, pv->g->name, slot, members[k]);
			if (r < 0)
				return error_set(pv->err, r, "cannot delete the block record of %s "
						 "of slot %s in %s (nothing was erased): %s",
						 members[k], slot, pv->p->state_dir, strerror(-r));
		}
	}
	return 0;
}

int provision_run(const struct provision_params *p, bool *ret_written, struct error *err)
{
	bool written = false;
	struct prov pv = { .p = p, .err = err, .written = ret_written ? ret_written : &written,
			   .l = p->layout };
	int r;

	if (!p->layout->n_groups)
		return error_set(pv.err, -EINVAL, "layout %s has no slot group", p->layout->path);
	pv.g = &p->layout->groups[0];
	pv.regions = calloc(p->layout->n_partitions, sizeof(*pv.regions));
	pv.details = calloc(p->layout->n_partitions, sizeof(*pv.details));
	pv.ubi_pebs = calloc(p->layout->n_partitions, sizeof(*pv.ubi_pebs));
	if (!pv.regions || !pv.details || !pv.ubi_pebs) {
		r = -ENOMEM;
		goto out;
	}
	*pv.written = false;
	r = p->dry_run || !p->state_dir ? 0 : drop_records(&pv);
	if (r >= 0)
		r = run(&pv);
	if (pv.image_prefix && !p->dry_run)
		unlink(provision_sim_file(&pv));
out:
	free(pv.image_prefix);
	free(pv.regions);
	free(pv.details);
	free(pv.ubi_pebs);
	return r;
}
