/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* flashd boot's work (boot_assemble.h): read the env (version, factory
 * reset flag, tries), find the booted slot, mount the root, the lowers and
 * the writable layers, pick the overlay generation, build the union and
 * switch into it. Problems that leave a usable root are warnings recorded
 * in the state (boot_warn()); the rest are errors for boot_main(). */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <dirent.h>
#include <json-c/json.h>

#include "boot.h"
#include "boot_assemble.h"
#include "boot_gen.h"
#include "boot_overlay.h"
#include "boot_root.h"
#include "cleanup.h"
#include "cleanup_json.h"
#include "env.h"
#include "layout.h"
#include "slot.h"
#include "slot_boot.h"
#include "util.h"

/* <linux/magic.h> clashes with squashfs.h's SQUASHFS_MAGIC */
/* <linux/magic.h> clashes with squashfs.h's SQUASHFS_MAGIC */
#define BOOT_RAMFS_MAGIC 0x858458f6
#define BOOT_TMPFS_MAGIC 0x01021994

/* ---- env: version, factory reset flag, tries ---- */

void boot_assemble_read_env(struct boot *b)
{
	_cleanup_env_ struct env *e = NULL;
	struct error eerr = {};
	struct slot_env st;
	struct error serr = {};
	char var[64];
	char *v;
	int r;

	util_mkdir_p("/var/lock", 0755); /* libubootenv's lock file lives there */
	r = env_open_layout(b->l, "system", NULL, 0, &e, &eerr);
	if (r < 0) {
		util_snprintf(b->env_error, sizeof(b->env_error), "%s", eerr.msg[0] ? eerr.msg : strerror(-r));
		return;
	}
	b->env_ok = true;
	slot_version_var(b->g->slots[b->slot].name, var, sizeof(var));
	v = env_get_dup(e, var);
	util_snprintf(b->version, sizeof(b->version), "%s", v ? v : "");
	free(v);
	v = env_get_dup(e, SLOT_OVERLAY_RESET_VAR);
	b->reset_pending = v && !strcmp(v, "1");
	free(v);
	if (slot_env_load_group(&st, b->g, env_get_dup, e, &serr) >= 0) {
		b->left = st.slots[b->slot].left;
		b->max_tries = st.max_tries;
	}
}

/* After the erase: ONE store clears the flag. A power cut before it
 * repeats the reset on the next boot, never skips it. */
static int clear_reset(struct boot *b, struct error *err)
{
	_cleanup_env_ struct env *e = NULL;
	int r;

	r = env_open_layout(b->l, "system", NULL, 0, &e, err);
	if (r >= 0)
		r = env_store_var(e, SLOT_OVERLAY_RESET_VAR, NULL, err);
	if (r < 0 && !error_is_set(err))
		error_set(err, r, "%s", strerror(-r));
	return r;
}

/* ---- which slot ---- */

int boot_assemble_booted_slot(struct boot *b, struct error *serr)
{
	_cleanup_free_ char *text = NULL;
	const char *path = b->cmdline ? b->cmdline : SLOT_DEFAULT_CMDLINE;
	/* "--" and empty values: slot_booted_from_cmdline, shared with the daemon */
	int r = util_read_file(path, 64 * 1024, &text, NULL);

	if (r < 0) {
		util_snprintf(serr->msg, sizeof(serr->msg), "%s: %s", path, strerror(-r));
		return r;
	}
	return slot_booted_from_cmdline(text, b->l, b->g, &b->booted_by, serr);
}

/* preinit: the kernel mounted "/" from its root=; the generation and the
 * env's version are the named slot's, so "/" must be that slot's image.
 * Checked where the device can be told (NOR/NAND: the mtdblock, or a dm
 * map over it); elsewhere the state says it was not checked. */
int boot_assemble_check_preinit_root(struct boot *b)
{
	const struct layout_slot *s = &b->g->slots[b->slot];
	char sys[96], link[PATH_MAX], mtd[64], want[64];
	struct error err = {};
	const char *name;
	struct stat st;
	ssize_t n;

	if (s->rootfs.storage != LAYOUT_STORAGE_NOR && s->rootfs.storage != LAYOUT_STORAGE_NAND) {
		boot_warn(b, "preinit: not checked that / is slot %s's image (%s storage)", s->name,
			   layout_storage_to_string(s->rootfs.storage));
		return 0;
	}
	if (stat("/", &st) < 0 || major(st.st_dev) == 0 ||
	    boot_root_mtd_dev(s->rootfs.part, mtd, sizeof(mtd), &err) < 0) {
		boot_warn(b, "preinit: cannot check that / is slot %s's image (%s)", s->name,
			   err.msg[0] ? err.msg : "/ is on no block device");
		return 0;
	}
	util_snprintf(want, sizeof(want), "mtdblock%s", mtd + strlen("/dev/mtd"));
	util_snprintf(sys, sizeof(sys), "/sys/dev/block/%u:%u", major(st.st_dev), minor(st.st_dev));
	n = readlink(sys, link, sizeof(link) - 1);
	if (n < 0) {
		boot_warn(b, "preinit: cannot check that / is slot %s's image: %s: %s", s->name, sys,
			   strerror(errno));
		return 0;
	}
	link[n] = '\0';
	name = strrchr(link, '/') ? strrchr(link, '/') + 1 : link;
	if (!strcmp(name, want))
		return 0;
	util_snprintf(sys + strlen(sys), sizeof(sys) - strlen(sys), "/slaves/%s", want);
	if (!strncmp(name, "dm-", 3) && access(sys, F_OK) == 0)
		return 0;
	boot_log_err("preinit: / is %s, but slot %s (%s) is %s (partition %s): refusing to put slot %s's "
		"generation over another image", name, s->name, b->booted_by ? b->booted_by : "--slot",
		want, s->rootfs.part->name, s->name);
	return -EXDEV;
}

/* ---- assembly ---- */

static int mount_squashfs(const char *dev, const char *mnt)
{
	if (util_mkdir_p(mnt, 0755) < 0)
		return -errno;
	if (mount(dev, mnt, "squashfs", MS_RDONLY | MS_NODEV, NULL) < 0)
		return -errno;
	return 0;
}

int boot_assemble_root(struct boot *b)
{
	const struct layout_slot *s = &b->g->slots[b->slot];
	struct error err = {};
	char dm[64];
	int r;

	if (b->mode == BOOT_MODE_PREINIT) {
		util_snprintf(b->rom, sizeof(b->rom), "/");
		return 0;
	}
	util_snprintf(b->rom, sizeof(b->rom), "%s/rom", b->stage);
	if (b->root_dev) {
		b->rootdev = (struct boot_root){ .kind = BOOT_ROOT_DEVICE, .hold_fd = -1 };
		util_snprintf(b->rootdev.device, sizeof(b->rootdev.device), "%s", b->root_dev);
		util_snprintf(b->rootdev.source, sizeof(b->rootdev.source), "%s", b->root_dev);
	} else {
		util_snprintf(dm, sizeof(dm), "flashd-%s-%s", b->g->name, s->name);
		r = boot_root_setup(b->l, &s->rootfs, dm, &b->rootdev, &err);
		if (r < 0) {
			boot_log_err("slot %s: read-only root: %s", s->name, error_message(&err));
			return r;
		}
	}
	b->have_rootdev = true;
	r = mount_squashfs(b->rootdev.device, b->rom);
	if (r < 0) {
		boot_log_err("slot %s: mount -t squashfs %s (%s, from %s) on %s: %s", s->name,
			b->rootdev.device, boot_root_kind_to_string(b->rootdev.kind),
			b->rootdev.source, b->rom, strerror(-r));
		return r;
	}
	if (b->rootdev.hold_fd >= 0)
		close(TAKE_FD(b->rootdev.hold_fd));
	boot_log_info("slot %s: root %s (%s from %s)%s", s->name, b->rootdev.device,
		 boot_root_kind_to_string(b->rootdev.kind), b->rootdev.source,
		 b->rootdev.bad_inside ? ", stepping over bad blocks" : "");
	return 0;
}

int boot_assemble_lowers(struct boot *b)
{
	for (size_t i = 0; i < b->l->n_lowers && i < BOOT_MAX_LAYERS; i++) {
		const struct layout_lower *lo = &b->l->lowers[i];
		struct error err = {};
		char dm[80];
		int r;

		util_snprintf(dm, sizeof(dm), "flashd-lower-%s", lo->name);
		util_snprintf(b->lower_mnt[i], sizeof(b->lower_mnt[i]), "%s/lower-%s", b->stage, lo->name);
		r = boot_root_setup(b->l, &lo->target, dm, &b->lowers[i], &err);
		if (r >= 0) {
			b->n_lowers = i + 1;
			r = mount_squashfs(b->lowers[i].device, b->lower_mnt[i]);
			if (r < 0)
				error_set(&err, r, "mount -t squashfs %s on %s: %s",
					  b->lowers[i].device, b->lower_mnt[i], strerror(-r));
			if (b->lowers[i].hold_fd >= 0)
				close(TAKE_FD(b->lowers[i].hold_fd));
		}
		if (r < 0) {
			boot_log_err("lower layer %s: %s", lo->name, error_message(&err));
			return r;
		}
	}
	return 0;
}

/* "/" first, then shallower paths before deeper ones */
static int cmp_overlay(const void *a, const void *c)
{
	const struct layout_overlay *x = *(const struct layout_overlay *const *)a;
	const struct layout_overlay *y = *(const struct layout_overlay *const *)c;
	return strcmp(x->path, y->path);
}

/* A factory reset done on a layer is marked on the layer itself until
 * the env flag is cleared: when clearing it fails (or another layer's
 * reset failed and the flag stays), the next boot does not erase the
 * user's new data again. */
#define RESET_MARK ".flashd-reset-done"

static bool reset_marked(const char *mnt)
{
	char p[PATH_MAX];
	struct stat st;

	util_snprintf(p, sizeof(p), "%s/" RESET_MARK, mnt);
	return lstat(p, &st) == 0;
}

static int reset_mark(const char *mnt, bool on)
{
	char p[PATH_MAX];
	int fd;

	util_snprintf(p, sizeof(p), "%s/" RESET_MARK, mnt);
	if (!on)
		return unlink(p) < 0 && errno != ENOENT ? -errno : 0;
	fd = open(p, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return -errno;
	if (fsync(fd) < 0) {
		close(fd);
		return -errno;
	}
	close(fd);
	return 0;
}

/* Mount one layer; with a pending reset, first look whether an earlier
 * boot already did it (the mark), and erase only if not. */
static int mount_layer(struct boot *b, struct boot_layer *ly, struct error *err)
{
	bool reset = b->reset_pending && ly->ov->type != LAYOUT_OVERLAY_TMPFS;
	int r;

	if (reset) {
		r = boot_overlay_mount(b->l, ly->ov, ly->mnt, false, &ly->res, err);
		if (r < 0)
			return r;
		if (!ly->res.fallback && reset_marked(ly->mnt)) {
			ly->reset_earlier = true;
			return 0;
		}
		if (umount2(ly->mnt, 0) < 0)
			return error_set(err, -errno, "umount %s before the reset: %s", ly->mnt,
					   strerror(errno));
	}
	r = boot_overlay_mount(b->l, ly->ov, ly->mnt, b->reset_pending, &ly->res, err);
	if (r < 0)
		return r;
	if (reset && ly->res.reset_done && !ly->res.fallback && (r = reset_mark(ly->mnt, true)) < 0)
		boot_warn(b, "overlay %s: factory reset done, but marking it done failed (%s): "
			   "if the flag cannot be cleared it is done again", ly->ov->path, strerror(-r));
	if (!b->reset_pending && !ly->res.fallback)
		reset_mark(ly->mnt, false); /* a stale mark would skip a later reset */
	return 0;
}

static void finish_reset(struct boot *b)
{
	struct error why = {};
	size_t done = 0;

	for (size_t i = 0; i < b->n_layers; i++) {
		const struct boot_layer *ly = &b->layers[i];

		if ((ly->res.reset_done || ly->reset_earlier) && !ly->res.fallback)
			done++;
		else
			boot_warn(b, "overlay %s: factory reset pending but not done (%s): "
				   "it is tried again next boot", ly->ov->path,
				   ly->res.fallback ? ly->res.fallback_reason.msg : "not mounted");
	}
	if (!b->n_layers || done < b->n_layers)
		return;
	b->reset_cleared = clear_reset(b, &why) >= 0;
	if (!b->reset_cleared) {
		boot_warn(b, "factory reset done, but clearing %s failed (%s): every layer is marked "
			   "done, the erase is not repeated; the flag is cleared on a later boot",
			   SLOT_OVERLAY_RESET_VAR, why.msg);
		return;
	}
	for (size_t i = 0; i < b->n_layers; i++)
		reset_mark(b->layers[i].mnt, false);
}

int boot_assemble_layers(struct boot *b)
{
	const struct layout_overlay *ovs[BOOT_MAX_LAYERS];
	size_t n = MIN(b->l->n_overlays, (size_t)BOOT_MAX_LAYERS);
	int r;

	for (size_t i = 0; i < n; i++)
		ovs[i] = &b->l->overlays[i];
	qsort(ovs, n, sizeof(*ovs), cmp_overlay);
	for (size_t i = 0; i < n; i++) {
		struct boot_layer *ly = &b->layers[i];
		struct error err = {};

		ly->ov = ovs[i];
		if (!strcmp(ly->ov->path, "/")) {
			util_snprintf(ly->mnt, sizeof(ly->mnt), "%s/overlay", b->stage);
			util_snprintf(ly->final, sizeof(ly->final), "/overlay");
		} else {
			char tail[PATH_MAX];

			util_snprintf(tail, sizeof(tail), "%s", ly->ov->path + 1);
			for (char *p = tail; *p; p++)
				if (*p == '/')
					*p = '-';
			util_snprintf(ly->mnt, sizeof(ly->mnt), "%s/overlay-%s", b->stage, tail);
			util_snprintf(ly->final, sizeof(ly->final), "/overlay-%s", tail);
		}
		r = util_mkdir_p(ly->mnt, 0755);
		if (r < 0) {
			boot_log_err("mkdir %s: %s", ly->mnt, strerror(-r));
			return r;
		}
		r = mount_layer(b, ly, &err);
		if (r < 0) {
			boot_log_err("overlay %s: %s", ly->ov->path, error_message(&err));
			return r;
		}
		b->n_layers = i + 1;
		if (ly->res.fallback)
			boot_warn(b, "overlay %s: CHANGES ARE NOT PERSISTENT (tmpfs in RAM): %s",
				   ly->ov->path, ly->res.fallback_reason.msg);
		else
			boot_log_info("overlay %s: %s %s%s%s", ly->ov->path, ly->res.fstype, ly->res.source,
				 ly->res.formatted ? " (formatted on first boot)" : "",
				 ly->res.reset_done ? " (factory reset done)" :
				 ly->reset_earlier ? " (factory reset done by an earlier boot)" : "");
		if (!ly->res.fallback && ly->ov->type == LAYOUT_OVERLAY_TMPFS)
			boot_warn(b, "overlay %s: tmpfs by layout: changes are lost at reboot",
				   ly->ov->path);
		if (ly->res.probe.done && !ly->res.probe.rename_whiteout)
			boot_warn(b, "overlay %s: the upper filesystem (%s) has no RENAME_WHITEOUT: "
				   "renaming files or directories that come from the image fails "
				   "(mainline JFFS2); use UBIFS for full overlay semantics",
				   ly->ov->path, ly->res.fstype);
	}
	if (b->reset_pending)
		finish_reset(b);
	return 0;
}

/* The generation could not be made or used (overlay full during the
 * migration, ...): the union must still be writable. A tmpfs upper
 * stands in for this boot; the user's data stays where it is (the
 * previous generation is untouched) and the next boot tries again. */
static void volatile_upper(struct boot *b, struct boot_layer *ly, const char *gen)
{
	char up[PATH_MAX + 16];
	int r;

	util_snprintf(ly->vol, sizeof(ly->vol), "%s-volatile", ly->mnt);
	r = util_mkdir_p(ly->vol, 0755);
	if (r >= 0 && mount("tmpfs", ly->vol, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755") < 0)
		r = -errno;
	if (r >= 0) {
		util_snprintf(up, sizeof(up), "%s/upper", ly->vol);
		r = mkdir(up, 0755) < 0 ? -errno : 0;
		util_snprintf(up, sizeof(up), "%s/work", ly->vol);
		if (r >= 0 && mkdir(up, 0700) < 0)
			r = -errno;
	}
	if (r < 0) {
		ly->vol[0] = '\0';
		boot_warn(b, "overlay %s: generation %s: %s; and no tmpfs could stand in (%s): "
			   "%s IS READ-ONLY", ly->ov->path, gen, ly->gen_error, strerror(-r),
			   ly->ov->path);
		return;
	}
	ly->res.fallback = true;
	ly->res.state = "tmpfs";
	error_set(&ly->res.fallback_reason, -EIO, "generation %s: %s", gen,
		  ly->gen_error);
	boot_warn(b, "overlay %s: CHANGES ARE NOT PERSISTENT (tmpfs in RAM): generation %s could "
		   "not be made: %s; the data on %s (%s) is untouched, the next boot tries again",
		   ly->ov->path, gen, ly->gen_error, ly->res.source, ly->final);
}

void boot_assemble_generations(struct boot *b)
{
	char gen[BOOT_GEN_NAME_MAX];
	const char *rom = b->rom;
	int r;

	r = boot_gen_name(b->g->slots[b->slot].name, b->version, gen, sizeof(gen));
	for (size_t i = 0; i < b->n_layers; i++) {
		struct boot_layer *ly = &b->layers[i];
		struct error err = {};
		bool good;

		if (r < 0)
			error_set(&err, r, "no generation name for slot %s version %s: %s",
				  b->g->slots[b->slot].name, b->version, strerror(-r));
		else if (boot_gen_prepare(ly->mnt, gen, rom, ly->ov->path, &ly->gen, &err) >= 0)
			ly->gen_ok = true;
		if (!ly->gen_ok) {
			util_snprintf(ly->gen_error, sizeof(ly->gen_error), "%s", error_message(&err));
			volatile_upper(b, ly, r < 0 ? "(none)" : gen);
			continue;
		}
		if (ly->gen.note[0])
			boot_warn(b, "overlay %s: generation %s: %s", ly->ov->path, gen, ly->gen.note);
		if (ly->gen.created)
			boot_log_info("overlay %s: new generation %s%s%s (%d entries migrated)",
				 ly->ov->path, gen, ly->gen.previous[0] ? " from " : "",
				 ly->gen.previous, ly->gen.migrated);
		/* a volatile layer's generations are not the user's to remove */
		good = b->env_ok && boot_gen_slot_good(b->left, b->max_tries, ly->gen.boots) &&
		       !ly->res.fallback;
		if (!good)
			continue;
		ly->gc_done = true;
		r = boot_gen_gc(ly->mnt, gen, &ly->removed, &err);
		if (r < 0)
			boot_warn(b, "overlay %s: removing old generations: %s", ly->ov->path,
				   error_message(&err));
		else if (r > 0)
			boot_log_info("overlay %s: slot %s is good: removed %d old generation(s)",
				 ly->ov->path, b->g->slots[b->slot].name, r);
	}
}

static void append(char *buf, size_t len, const char *sep, const char *s)
{
	size_t n = strlen(buf);
	util_snprintf(buf + n, len - n, "%s%s", n ? sep : "", s);
}

/* lowerdir for the subtree path ("/" or "/etc"): the image, then lowers */
static void lowerdirs(struct boot *b, const char *path, char *buf, size_t len)
{
	char p[PATH_MAX];

	buf[0] = '\0';
	util_snprintf(p, sizeof(p), "%s%s", strcmp(b->rom, "/") ? b->rom : "", strcmp(path, "/") ? path : "");
	append(buf, len, ":", p[0] ? p : "/");
	for (size_t i = 0; i < b->n_lowers; i++) {
		struct stat st;

		util_snprintf(p, sizeof(p), "%s%s", b->lower_mnt[i], strcmp(path, "/") ? path : "");
		if (stat(p, &st) == 0 && S_ISDIR(st.st_mode))
			append(buf, len, ":", p);
	}
}

/* upperdir/workdir of a layer: its generation, or the tmpfs stand-in */
static bool layer_upper(const struct boot_layer *ly, char *opts, size_t len)
{
	if (ly->gen_ok)
		util_snprintf(opts, len, "upperdir=%s/%s/upper,workdir=%s/%s/work", ly->mnt, ly->gen.name,
		    ly->mnt, ly->gen.name);
	else if (ly->vol[0])
		util_snprintf(opts, len, "upperdir=%s/upper,workdir=%s/work", ly->vol, ly->vol);
	else
		return false;
	return true;
}

int boot_assemble_union(struct boot *b)
{
	struct boot_layer *root_layer = NULL;
	char lower[4096], opts[8192], upper[2 * PATH_MAX + 64];
	int r;

	if (b->root_arg)
		util_snprintf(b->root, sizeof(b->root), "%s", b->root_arg);
	else
		util_snprintf(b->root, sizeof(b->root), "%s/root", b->stage);
	r = util_mkdir_p(b->root, 0755);
	if (r < 0) {
		boot_log_err("mkdir %s: %s", b->root, strerror(-r));
		return r;
	}
	for (size_t i = 0; i < b->n_layers; i++)
		if (!strcmp(b->layers[i].ov->path, "/"))
			root_layer = &b->layers[i];
	lowerdirs(b, "/", lower, sizeof(lower));
	if (root_layer && layer_upper(root_layer, upper, sizeof(upper))) {
		util_snprintf(opts, sizeof(opts), "lowerdir=%s,%s", lower, upper);
		r = mount("overlay", b->root, "overlay", MS_NOATIME, opts);
	} else if (strchr(lower, ':')) {
		util_snprintf(opts, sizeof(opts), "lowerdir=%s", lower);
		r = mount("overlay", b->root, "overlay", MS_RDONLY, opts);
	} else {
		r = mount(lower, b->root, NULL, MS_BIND, NULL);
		util_snprintf(opts, sizeof(opts), "bind %s", lower);
	}
	if (r < 0) {
		r = -errno;
		boot_log_err("mounting the union on %s (%s): %s", b->root, opts, strerror(-r));
		return r;
	}
	if (root_layer && !root_layer->gen_ok && !root_layer->vol[0])
		b->read_only = true;
	for (size_t i = 0; i < b->n_layers; i++) {
		struct boot_layer *ly = &b->layers[i];
		char target[PATH_MAX];

		if (ly == root_layer)
			continue;
		if (!layer_upper(ly, upper, sizeof(upper))) {
			b->read_only = true;
			continue;
		}
		lowerdirs(b, ly->ov->path, lower, sizeof(lower));
		util_snprintf(target, sizeof(target), "%s%s", b->root, ly->ov->path);
		util_snprintf(opts, sizeof(opts), "lowerdir=%s,%s", lower, upper);
		if (mount("overlay", target, "overlay", MS_NOATIME, opts) < 0) {
			r = -errno;
			boot_log_err("mounting the overlay for %s on %s (%s): %s", ly->ov->path, target,
				opts, strerror(-r));
			return r;
		}
	}
	return 0;
}

/* Make the layers reachable in the new root: /rom, /overlay, /overlay-etc. */
void boot_assemble_move_into_root(struct boot *b, const char *from, const char *to)
{
	char target[PATH_MAX];

	util_snprintf(target, sizeof(target), "%s%s", b->root, to);
	if (mkdir(target, 0755) < 0 && errno != EEXIST) {
		boot_warn(b, "%s stays out of the new root: mkdir %s: %s", from, target,
			   strerror(errno));
		return;
	}
	if (mount(from, target, NULL, MS_MOVE, NULL) < 0)
		boot_warn(b, "%s stays out of the new root: moving it to %s: %s", from, target,
			   strerror(errno));
}

/* ---- switching ---- */

static const char *const api_mounts[] = { "/dev", "/proc", "/sys", "/run" };

static void move_api_mounts(const char *from_prefix, const char *to_prefix)
{
	for (size_t i = 0; i < ELEMENTSOF(api_mounts); i++) {
		char from[PATH_MAX], to[PATH_MAX];

		util_snprintf(from, sizeof(from), "%s%s", from_prefix, api_mounts[i]);
		util_snprintf(to, sizeof(to), "%s%s", to_prefix, api_mounts[i]);
		if (!boot_is_mountpoint(from))
			continue;
		mkdir(to, 0755);
		if (mount(from, to, NULL, MS_MOVE, NULL) < 0) {
			boot_log_warn("moving %s to %s failed (%s): detaching it", from, to, strerror(errno));
			umount2(from, MNT_DETACH);
		}
	}
}

/* busybox switch_root's delete: everything on the initramfs' device */
static void delete_contents(int dfd, dev_t rootdev)
{
	_cleanup_closedir_ DIR *d = fdopendir(dfd);
	struct dirent *de;

	if (!d) {
		close(dfd);
		return;
	}
	while ((de = readdir(d))) {
		struct stat st;
		int sub;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || st.st_dev != rootdev)
			continue;
		if (S_ISDIR(st.st_mode)) {
			sub = openat(dirfd(d), de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (sub >= 0)
				delete_contents(sub, rootdev);
			unlinkat(dirfd(d), de->d_name, AT_REMOVEDIR);
		} else {
			unlinkat(dirfd(d), de->d_name, 0);
		}
	}
}

static int exec_init(struct boot *b)
{
	char *const argv[] = { (char *)b->init, NULL };

	execv(b->init, argv);
	boot_log_err("exec %s: %s", b->init, strerror(errno));
	return -errno;
}

int boot_assemble_switch_root(struct boot *b)
{
	struct statfs sfs;
	struct stat st;
	int fd;

	move_api_mounts("", b->root);
	if (chdir(b->root) < 0) {
		boot_log_err("chdir %s: %s", b->root, strerror(errno));
		return -errno;
	}
	/* only ever delete an initramfs (ramfs/tmpfs), never a real root */
	if (statfs("/", &sfs) == 0 && (sfs.f_type == BOOT_RAMFS_MAGIC || sfs.f_type == BOOT_TMPFS_MAGIC) &&
	    stat("/", &st) == 0) {
		fd = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (fd >= 0)
			delete_contents(fd, st.st_dev);
	} else {
		boot_log_warn("/ is not an initramfs (ramfs/tmpfs): not deleting its contents");
	}
	if (mount(".", "/", NULL, MS_MOVE, NULL) < 0) {
		boot_log_err("moving %s to /: %s", b->root, strerror(errno));
		return -errno;
	}
	if (chroot(".") < 0 || chdir("/") < 0) {
		boot_log_err("chroot into the new root: %s", strerror(errno));
		return -errno;
	}
	return exec_init(b);
}

int boot_assemble_pivot(struct boot *b)
{
	char rom[PATH_MAX];

	util_snprintf(rom, sizeof(rom), "%s/rom", b->root);
	if (mkdir(rom, 0755) < 0 && errno != EEXIST) {
		boot_log_err("mkdir %s: %s", rom, strerror(errno));
		return -errno;
	}
	if (syscall(SYS_pivot_root, b->root, rom) < 0) {
		boot_log_err("pivot_root %s %s: %s", b->root, rom, strerror(errno));
		return -errno;
	}
	if (chdir("/") < 0)
		return -errno;
	move_api_mounts("/rom", "");
	/* the staging tmpfs, emptied by the moves */
	util_snprintf(rom, sizeof(rom), "/rom%s", b->stage);
	if (umount2(rom, MNT_DETACH) < 0)
		boot_log_warn("detaching the staging tmpfs %s: %s", rom, strerror(errno));
	return exec_init(b);
}
