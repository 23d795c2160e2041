/* flashd boot: the early-boot union assembly (see include/boot.h and
 * docs/boot.md). This file is the command's main: it logs (stderr and the
 * kernel log) and decides; the boot_* modules do the work and only return
 * errors. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
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
#include "boot_gen.h"
#include "boot_overlay.h"
#include "boot_root.h"
#include "cleanup.h"
#include "cleanup_json.h"
#include "env.h"
#include "layout.h"
#include "slot.h"
#include "util.h"

/* <linux/magic.h> clashes with squashfs.h's SQUASHFS_MAGIC */
#define BOOT_RAMFS_MAGIC 0x858458f6
#define BOOT_TMPFS_MAGIC 0x01021994

enum boot_mode {
	BOOT_MODE_INITRAMFS,
	BOOT_MODE_PREINIT,
	_BOOT_MODE_MAX,
};

static const char *const mode_names[_BOOT_MODE_MAX] = {
	[BOOT_MODE_INITRAMFS] = "initramfs",
	[BOOT_MODE_PREINIT] = "preinit",
};

#define MAX_LAYERS 8

struct layer {
	const struct layout_overlay *ov;
	char mnt[PATH_MAX];            /* where the writable fs is mounted (staging) */
	char final[PATH_MAX];          /* where it ends up in the new root ("" = stays) */
	struct boot_overlay_result res;
	struct boot_gen_result gen;
	bool gen_ok;
	char gen_error[512];           /* why the generation could not be used */
	char vol[PATH_MAX];            /* tmpfs stand-in upper when it could not ("" = none) */
	struct boot_gen_list removed;
	bool gc_done;
	bool reset_earlier;            /* factory reset found done by an earlier boot */
};

struct boot {
	enum boot_mode mode;
	const char *layout_path, *cmdline, *slot_arg, *root_dev, *stage, *state_path, *init;
	bool no_exec, dry_run;
	struct layout *l;
	const struct layout_slot_group *g;
	int slot;
	const char *booted_by;
	char version[128];
	bool env_ok, reset_pending, reset_cleared;
	char env_error[512];
	bool read_only;                /* the union has no writable upper */
	unsigned left, max_tries;
	char rom[PATH_MAX], root[PATH_MAX];
	struct boot_root rootdev;
	bool have_rootdev;
	struct boot_root lowers[MAX_LAYERS];
	char lower_mnt[MAX_LAYERS][PATH_MAX];
	size_t n_lowers;
	struct layer layers[MAX_LAYERS];
	size_t n_layers;
	struct json_object *warnings;
	struct timespec t0;
	double ms_root, ms_overlay, ms_total;
};

/* ---- logging: stderr and the kernel log (the console may be gone) ---- */

/* The first error of this run: the state file says why it failed. */
static char first_error[1024];

static void blog(int level, const char *fmt, ...) _printf_(2, 3);
static void blog(int level, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;
	int fd;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	fprintf(stderr, "flashd boot: %s\n", msg);
	if (level <= 3 && !first_error[0])
		snprintf(first_error, sizeof(first_error), "%s", msg);
	/* the kernel rate-limits /dev/kmsg writers (10 per 5 s): keep its
	 * budget for warnings and errors, which must not be lost */
	if (level > 4)
		return;
	fd = open("/dev/kmsg", O_WRONLY | O_CLOEXEC | O_NOCTTY);
	if (fd >= 0) {
		/* one write() per record; dprintf() cannot be used here: glibc
		 * seeks (SEEK_CUR) first and /dev/kmsg answers EINVAL */
		char rec[1100];
		int n = snprintf(rec, sizeof(rec), "<%d>flashd-boot: %s\n", level, msg);
		if (n > 0)
			(void)!write(fd, rec, MIN((size_t)n, sizeof(rec) - 1));
		close(fd);
	}
}
#define log_err(...) blog(3, __VA_ARGS__)
#define log_warn(...) blog(4, __VA_ARGS__)
#define log_info(...) blog(6, __VA_ARGS__)

static void warn_state(struct boot *b, const char *fmt, ...) _printf_(2, 3);
static void warn_state(struct boot *b, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	log_warn("%s", msg);
	json_object_array_add(b->warnings, json_object_new_string(msg));
}

static void fmt(char *buf, size_t len, const char *f, ...) _printf_(3, 4);
static void fmt(char *buf, size_t len, const char *f, ...)
{
	va_list ap;

	va_start(ap, f);
	vsnprintf(buf, len, f, ap);
	va_end(ap);
}

static double ms_since(const struct timespec *t0)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (t.tv_sec - t0->tv_sec) * 1e3 + (t.tv_nsec - t0->tv_nsec) / 1e6;
}

static bool is_mountpoint(const char *path)
{
	struct stat a, b;
	char parent[PATH_MAX];

	if (stat(path, &a) < 0)
		return false;
	fmt(parent, sizeof(parent), "%s/..", path);
	if (stat(parent, &b) < 0)
		return false;
	return a.st_dev != b.st_dev || a.st_ino == b.st_ino;
}

/* ---- env: version, factory reset flag, tries ---- */

static void read_env(struct boot *b)
{
	_cleanup_env_ struct env *e = NULL;
	struct error eerr = {};
	struct slot_state st;
	struct error serr = {};
	char var[64];
	char *v;
	int r;

	util_mkdir_p("/var/lock", 0755); /* libubootenv's lock file lives there */
	r = env_open_layout(b->l, "system", NULL, 0, &e, &eerr);
	if (r < 0) {
		fmt(b->env_error, sizeof(b->env_error), "%s", eerr.msg[0] ? eerr.msg : strerror(-r));
		return;
	}
	b->env_ok = true;
	slot_version_var(b->g->slots[b->slot].name, var, sizeof(var));
	v = env_get_dup(e, var);
	fmt(b->version, sizeof(b->version), "%s", v ? v : "");
	free(v);
	v = env_get_dup(e, SLOT_OVERLAY_RESET_VAR);
	b->reset_pending = v && !strcmp(v, "1");
	free(v);
	if (slot_state_load_group(&st, b->g, env_get_dup, e, &serr) >= 0) {
		b->left = st.slots[b->slot].left;
		b->max_tries = st.max_tries;
	}
}

/* After the erase: ONE store clears the flag. A power cut before it
 * repeats the reset on the next boot, never skips it. */
static int clear_reset(struct boot *b, struct error *err)
{
	_cleanup_env_ struct env *e = NULL;
	_cleanup_env_txn_ struct env_txn *t = NULL;
	int r;

	r = env_open_layout(b->l, "system", NULL, 0, &e, err);
	if (r >= 0)
		r = env_txn_new(e, &t);
	if (r >= 0)
		r = env_txn_set(t, SLOT_OVERLAY_RESET_VAR, NULL);
	if (r >= 0)
		r = env_txn_commit(t, err);
	if (r < 0 && !error_is_set(err))
		error_set(err, r, "%s", strerror(-r));
	return r;
}

/* ---- which slot ---- */

static int booted_slot(struct boot *b, struct error *serr)
{
	_cleanup_free_ char *text = NULL;
	const char *path = b->cmdline ? b->cmdline : SLOT_DEFAULT_CMDLINE;
	/* "--" and empty values: slot_booted_from_cmdline, shared with the daemon */
	int r = util_read_file(path, 64 * 1024, &text, NULL);

	if (r < 0) {
		fmt(serr->msg, sizeof(serr->msg), "%s: %s", path, strerror(-r));
		return r;
	}
	return slot_booted_from_cmdline(text, b->l, b->g, &b->booted_by, serr);
}

/* preinit: the kernel mounted "/" from its root=; the generation and the
 * env's version are the named slot's, so "/" must be that slot's image.
 * Checked where the device can be told (NOR/NAND: the mtdblock, or a dm
 * map over it); elsewhere the state says it was not checked. */
static int check_preinit_root(struct boot *b)
{
	const struct layout_slot *s = &b->g->slots[b->slot];
	char sys[96], link[PATH_MAX], mtd[64], want[64];
	struct error err = {};
	const char *name;
	struct stat st;
	ssize_t n;

	if (s->rootfs.storage != LAYOUT_STORAGE_NOR && s->rootfs.storage != LAYOUT_STORAGE_NAND) {
		warn_state(b, "preinit: not checked that / is slot %s's image (%s storage)", s->name,
			   layout_storage_to_string(s->rootfs.storage));
		return 0;
	}
	if (stat("/", &st) < 0 || major(st.st_dev) == 0 ||
	    boot_root_mtd_dev(s->rootfs.part, mtd, sizeof(mtd), &err) < 0) {
		warn_state(b, "preinit: cannot check that / is slot %s's image (%s)", s->name,
			   err.msg[0] ? err.msg : "/ is on no block device");
		return 0;
	}
	fmt(want, sizeof(want), "mtdblock%s", mtd + strlen("/dev/mtd"));
	fmt(sys, sizeof(sys), "/sys/dev/block/%u:%u", major(st.st_dev), minor(st.st_dev));
	n = readlink(sys, link, sizeof(link) - 1);
	if (n < 0) {
		warn_state(b, "preinit: cannot check that / is slot %s's image: %s: %s", s->name, sys,
			   strerror(errno));
		return 0;
	}
	link[n] = '\0';
	name = strrchr(link, '/') ? strrchr(link, '/') + 1 : link;
	if (!strcmp(name, want))
		return 0;
	fmt(sys + strlen(sys), sizeof(sys) - strlen(sys), "/slaves/%s", want);
	if (!strncmp(name, "dm-", 3) && access(sys, F_OK) == 0)
		return 0;
	log_err("preinit: / is %s, but slot %s (%s) is %s (partition %s): refusing to put slot %s's "
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

static int setup_root(struct boot *b)
{
	const struct layout_slot *s = &b->g->slots[b->slot];
	struct error err = {};
	char dm[64];
	int r;

	if (b->mode == BOOT_MODE_PREINIT) {
		fmt(b->rom, sizeof(b->rom), "/");
		return 0;
	}
	fmt(b->rom, sizeof(b->rom), "%s/rom", b->stage);
	if (b->root_dev) {
		b->rootdev = (struct boot_root){ .kind = BOOT_ROOT_DEVICE, .hold_fd = -1 };
		fmt(b->rootdev.device, sizeof(b->rootdev.device), "%s", b->root_dev);
		fmt(b->rootdev.source, sizeof(b->rootdev.source), "%s", b->root_dev);
	} else {
		fmt(dm, sizeof(dm), "flashd-%s-%s", b->g->name, s->name);
		r = boot_root_setup(b->l, &s->rootfs, dm, &b->rootdev, &err);
		if (r < 0) {
			log_err("slot %s: read-only root: %s", s->name, error_message(&err));
			return r;
		}
	}
	b->have_rootdev = true;
	r = mount_squashfs(b->rootdev.device, b->rom);
	if (r < 0) {
		log_err("slot %s: mount -t squashfs %s (%s, from %s) on %s: %s", s->name,
			b->rootdev.device, boot_root_kind_to_string(b->rootdev.kind),
			b->rootdev.source, b->rom, strerror(-r));
		return r;
	}
	if (b->rootdev.hold_fd >= 0)
		close(TAKE_FD(b->rootdev.hold_fd));
	log_info("slot %s: root %s (%s from %s)%s", s->name, b->rootdev.device,
		 boot_root_kind_to_string(b->rootdev.kind), b->rootdev.source,
		 b->rootdev.bad_inside ? ", stepping over bad blocks" : "");
	return 0;
}

static int setup_lowers(struct boot *b)
{
	for (size_t i = 0; i < b->l->n_lowers && i < MAX_LAYERS; i++) {
		const struct layout_lower *lo = &b->l->lowers[i];
		struct error err = {};
		char dm[80];
		int r;

		fmt(dm, sizeof(dm), "flashd-lower-%s", lo->name);
		fmt(b->lower_mnt[i], sizeof(b->lower_mnt[i]), "%s/lower-%s", b->stage, lo->name);
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
			log_err("lower layer %s: %s", lo->name, error_message(&err));
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

	fmt(p, sizeof(p), "%s/" RESET_MARK, mnt);
	return lstat(p, &st) == 0;
}

static int reset_mark(const char *mnt, bool on)
{
	char p[PATH_MAX];
	int fd;

	fmt(p, sizeof(p), "%s/" RESET_MARK, mnt);
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
static int mount_layer(struct boot *b, struct layer *ly, struct error *err)
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
		warn_state(b, "overlay %s: factory reset done, but marking it done failed (%s): "
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
		const struct layer *ly = &b->layers[i];

		if ((ly->res.reset_done || ly->reset_earlier) && !ly->res.fallback)
			done++;
		else
			warn_state(b, "overlay %s: factory reset pending but not done (%s): "
				   "it is tried again next boot", ly->ov->path,
				   ly->res.fallback ? ly->res.fallback_reason.msg : "not mounted");
	}
	if (!b->n_layers || done < b->n_layers)
		return;
	b->reset_cleared = clear_reset(b, &why) >= 0;
	if (!b->reset_cleared) {
		warn_state(b, "factory reset done, but clearing %s failed (%s): every layer is marked "
			   "done, the erase is not repeated; the flag is cleared on a later boot",
			   SLOT_OVERLAY_RESET_VAR, why.msg);
		return;
	}
	for (size_t i = 0; i < b->n_layers; i++)
		reset_mark(b->layers[i].mnt, false);
}

static int setup_layers(struct boot *b)
{
	const struct layout_overlay *ovs[MAX_LAYERS];
	size_t n = MIN(b->l->n_overlays, (size_t)MAX_LAYERS);
	int r;

	for (size_t i = 0; i < n; i++)
		ovs[i] = &b->l->overlays[i];
	qsort(ovs, n, sizeof(*ovs), cmp_overlay);
	for (size_t i = 0; i < n; i++) {
		struct layer *ly = &b->layers[i];
		struct error err = {};

		ly->ov = ovs[i];
		if (!strcmp(ly->ov->path, "/")) {
			fmt(ly->mnt, sizeof(ly->mnt), "%s/overlay", b->stage);
			fmt(ly->final, sizeof(ly->final), "/overlay");
		} else {
			char tail[PATH_MAX];

			fmt(tail, sizeof(tail), "%s", ly->ov->path + 1);
			for (char *p = tail; *p; p++)
				if (*p == '/')
					*p = '-';
			fmt(ly->mnt, sizeof(ly->mnt), "%s/overlay-%s", b->stage, tail);
			fmt(ly->final, sizeof(ly->final), "/overlay-%s", tail);
		}
		r = util_mkdir_p(ly->mnt, 0755);
		if (r < 0) {
			log_err("mkdir %s: %s", ly->mnt, strerror(-r));
			return r;
		}
		r = mount_layer(b, ly, &err);
		if (r < 0) {
			log_err("overlay %s: %s", ly->ov->path, error_message(&err));
			return r;
		}
		b->n_layers = i + 1;
		if (ly->res.fallback)
			warn_state(b, "overlay %s: CHANGES ARE NOT PERSISTENT (tmpfs in RAM): %s",
				   ly->ov->path, ly->res.fallback_reason.msg);
		else
			log_info("overlay %s: %s %s%s%s", ly->ov->path, ly->res.fstype, ly->res.source,
				 ly->res.formatted ? " (formatted on first boot)" : "",
				 ly->res.reset_done ? " (factory reset done)" :
				 ly->reset_earlier ? " (factory reset done by an earlier boot)" : "");
		if (!ly->res.fallback && ly->ov->type == LAYOUT_OVERLAY_TMPFS)
			warn_state(b, "overlay %s: tmpfs by layout: changes are lost at reboot",
				   ly->ov->path);
		if (ly->res.probe.done && !ly->res.probe.rename_whiteout)
			warn_state(b, "overlay %s: the upper filesystem (%s) has no RENAME_WHITEOUT: "
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
static void volatile_upper(struct boot *b, struct layer *ly, const char *gen)
{
	char up[PATH_MAX + 16];
	int r;

	fmt(ly->vol, sizeof(ly->vol), "%s-volatile", ly->mnt);
	r = util_mkdir_p(ly->vol, 0755);
	if (r >= 0 && mount("tmpfs", ly->vol, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755") < 0)
		r = -errno;
	if (r >= 0) {
		fmt(up, sizeof(up), "%s/upper", ly->vol);
		r = mkdir(up, 0755) < 0 ? -errno : 0;
		fmt(up, sizeof(up), "%s/work", ly->vol);
		if (r >= 0 && mkdir(up, 0700) < 0)
			r = -errno;
	}
	if (r < 0) {
		ly->vol[0] = '\0';
		warn_state(b, "overlay %s: generation %s: %s; and no tmpfs could stand in (%s): "
			   "%s IS READ-ONLY", ly->ov->path, gen, ly->gen_error, strerror(-r),
			   ly->ov->path);
		return;
	}
	ly->res.fallback = true;
	ly->res.state = "tmpfs";
	error_set(&ly->res.fallback_reason, -EIO, "generation %s: %s", gen,
		  ly->gen_error);
	warn_state(b, "overlay %s: CHANGES ARE NOT PERSISTENT (tmpfs in RAM): generation %s could "
		   "not be made: %s; the data on %s (%s) is untouched, the next boot tries again",
		   ly->ov->path, gen, ly->gen_error, ly->res.source, ly->final);
}

static void setup_generations(struct boot *b)
{
	char gen[BOOT_GEN_NAME_MAX];
	const char *rom = b->rom;
	int r;

	r = boot_gen_name(b->g->slots[b->slot].name, b->version, gen, sizeof(gen));
	for (size_t i = 0; i < b->n_layers; i++) {
		struct layer *ly = &b->layers[i];
		struct error err = {};
		bool good;

		if (r < 0)
			error_set(&err, r, "no generation name for slot %s version %s: %s",
				  b->g->slots[b->slot].name, b->version, strerror(-r));
		else if (boot_gen_prepare(ly->mnt, gen, rom, ly->ov->path, &ly->gen, &err) >= 0)
			ly->gen_ok = true;
		if (!ly->gen_ok) {
			fmt(ly->gen_error, sizeof(ly->gen_error), "%s", error_message(&err));
			volatile_upper(b, ly, r < 0 ? "(none)" : gen);
			continue;
		}
		if (ly->gen.note[0])
			warn_state(b, "overlay %s: generation %s: %s", ly->ov->path, gen, ly->gen.note);
		if (ly->gen.created)
			log_info("overlay %s: new generation %s%s%s (%d entries migrated)",
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
			warn_state(b, "overlay %s: removing old generations: %s", ly->ov->path,
				   error_message(&err));
		else if (r > 0)
			log_info("overlay %s: slot %s is good: removed %d old generation(s)",
				 ly->ov->path, b->g->slots[b->slot].name, r);
	}
}

static void append(char *buf, size_t len, const char *sep, const char *s)
{
	size_t n = strlen(buf);
	fmt(buf + n, len - n, "%s%s", n ? sep : "", s);
}

/* lowerdir for the subtree path ("/" or "/etc"): the image, then lowers */
static void lowerdirs(struct boot *b, const char *path, char *buf, size_t len)
{
	char p[PATH_MAX];

	buf[0] = '\0';
	fmt(p, sizeof(p), "%s%s", strcmp(b->rom, "/") ? b->rom : "", strcmp(path, "/") ? path : "");
	append(buf, len, ":", p[0] ? p : "/");
	for (size_t i = 0; i < b->n_lowers; i++) {
		struct stat st;

		fmt(p, sizeof(p), "%s%s", b->lower_mnt[i], strcmp(path, "/") ? path : "");
		if (stat(p, &st) == 0 && S_ISDIR(st.st_mode))
			append(buf, len, ":", p);
	}
}

/* upperdir/workdir of a layer: its generation, or the tmpfs stand-in */
static bool layer_upper(const struct layer *ly, char *opts, size_t len)
{
	if (ly->gen_ok)
		fmt(opts, len, "upperdir=%s/%s/upper,workdir=%s/%s/work", ly->mnt, ly->gen.name,
		    ly->mnt, ly->gen.name);
	else if (ly->vol[0])
		fmt(opts, len, "upperdir=%s/upper,workdir=%s/work", ly->vol, ly->vol);
	else
		return false;
	return true;
}

static int mount_union(struct boot *b)
{
	struct layer *root_layer = NULL;
	char lower[4096], opts[8192], upper[2 * PATH_MAX + 64];
	int r;

	fmt(b->root, sizeof(b->root), "%s/root", b->stage);
	r = util_mkdir_p(b->root, 0755);
	if (r < 0) {
		log_err("mkdir %s: %s", b->root, strerror(-r));
		return r;
	}
	for (size_t i = 0; i < b->n_layers; i++)
		if (!strcmp(b->layers[i].ov->path, "/"))
			root_layer = &b->layers[i];
	lowerdirs(b, "/", lower, sizeof(lower));
	if (root_layer && layer_upper(root_layer, upper, sizeof(upper))) {
		fmt(opts, sizeof(opts), "lowerdir=%s,%s", lower, upper);
		r = mount("overlay", b->root, "overlay", MS_NOATIME, opts);
	} else if (strchr(lower, ':')) {
		fmt(opts, sizeof(opts), "lowerdir=%s", lower);
		r = mount("overlay", b->root, "overlay", MS_RDONLY, opts);
	} else {
		r = mount(lower, b->root, NULL, MS_BIND, NULL);
		fmt(opts, sizeof(opts), "bind %s", lower);
	}
	if (r < 0) {
		r = -errno;
		log_err("mounting the union on %s (%s): %s", b->root, opts, strerror(-r));
		return r;
	}
	if (root_layer && !root_layer->gen_ok && !root_layer->vol[0])
		b->read_only = true;
	for (size_t i = 0; i < b->n_layers; i++) {
		struct layer *ly = &b->layers[i];
		char target[PATH_MAX];

		if (ly == root_layer)
			continue;
		if (!layer_upper(ly, upper, sizeof(upper))) {
			b->read_only = true;
			continue;
		}
		lowerdirs(b, ly->ov->path, lower, sizeof(lower));
		fmt(target, sizeof(target), "%s%s", b->root, ly->ov->path);
		fmt(opts, sizeof(opts), "lowerdir=%s,%s", lower, upper);
		if (mount("overlay", target, "overlay", MS_NOATIME, opts) < 0) {
			r = -errno;
			log_err("mounting the overlay for %s on %s (%s): %s", ly->ov->path, target,
				opts, strerror(-r));
			return r;
		}
	}
	return 0;
}

/* Make the layers reachable in the new root: /rom, /overlay, /overlay-etc. */
static void move_into_root(struct boot *b, const char *from, const char *to)
{
	char target[PATH_MAX];

	fmt(target, sizeof(target), "%s%s", b->root, to);
	if (mkdir(target, 0755) < 0 && errno != EEXIST) {
		warn_state(b, "%s stays out of the new root: mkdir %s: %s", from, target,
			   strerror(errno));
		return;
	}
	if (mount(from, target, NULL, MS_MOVE, NULL) < 0)
		warn_state(b, "%s stays out of the new root: moving it to %s: %s", from, target,
			   strerror(errno));
}

/* ---- state file ---- */

static struct json_object *jstr(const char *s)
{
	return s ? json_object_new_string(s) : NULL;
}

static struct json_object *root_json(const struct boot_root *r)
{
	struct json_object *o = json_object_new_object();

	json_object_object_add(o, "kind", jstr(boot_root_kind_to_string(r->kind)));
	json_object_object_add(o, "device", jstr(r->device));
	json_object_object_add(o, "source", jstr(r->source));
	json_object_object_add(o, "image_bytes", json_object_new_int64((int64_t)r->image_bytes));
	json_object_object_add(o, "bad_blocks", json_object_new_int64((int64_t)r->bad_blocks));
	json_object_object_add(o, "bad_blocks_skipped", json_object_new_int64((int64_t)r->bad_inside));
	if (r->dm_name[0]) {
		json_object_object_add(o, "dm_name", jstr(r->dm_name));
		json_object_object_add(o, "dm_table", jstr(r->dm_table));
	}
	return o;
}

static struct json_object *layer_json(struct boot *b, const struct layer *ly)
{
	struct json_object *o = json_object_new_object(), *p, *g, *rm;
	const struct boot_overlay_result *r = &ly->res;

	json_object_object_add(o, "path", jstr(ly->ov->path));
	json_object_object_add(o, "state", jstr(r->state));
	json_object_object_add(o, "layout_type", jstr(layout_overlay_type_to_string(ly->ov->type)));
	json_object_object_add(o, "fstype", jstr(r->fstype));
	json_object_object_add(o, "partition", jstr(ly->ov->part ? ly->ov->part->name : NULL));
	json_object_object_add(o, "source", jstr(r->source));
	json_object_object_add(o, "mountpoint", jstr(ly->final[0] ? ly->final : ly->mnt));
	json_object_object_add(o, "size", json_object_new_int64((int64_t)r->size));
	json_object_object_add(o, "used", json_object_new_int64((int64_t)r->used));
	json_object_object_add(o, "persistent", json_object_new_boolean(!strcmp(r->state, "mounted") &&
									 ly->gen_ok));
	json_object_object_add(o, "fallback", json_object_new_boolean(r->fallback));
	json_object_object_add(o, "fallback_reason", r->fallback ? jstr(r->fallback_reason.msg) : NULL);
	json_object_object_add(o, "medium", jstr(r->medium));
	json_object_object_add(o, "formatted", json_object_new_boolean(r->formatted));
	json_object_object_add(o, "reset_done", json_object_new_boolean(r->reset_done));
	json_object_object_add(o, "reset_done_earlier", json_object_new_boolean(ly->reset_earlier));
	json_object_object_add(o, "generation_error", ly->gen_ok ? NULL : jstr(ly->gen_error));
	json_object_object_add(o, "writable", json_object_new_boolean(ly->gen_ok || ly->vol[0]));
	json_object_object_add(o, "rename_whiteout", json_object_new_boolean(r->probe.rename_whiteout));
	p = json_object_new_object();
	json_object_object_add(p, "whiteout", json_object_new_boolean(r->probe.whiteout));
	json_object_object_add(p, "rename_whiteout", json_object_new_boolean(r->probe.rename_whiteout));
	json_object_object_add(p, "xattr_trusted", json_object_new_boolean(r->probe.xattr_trusted));
	json_object_object_add(p, "xattr_user", json_object_new_boolean(r->probe.xattr_user));
	json_object_object_add(p, "tmpfile", json_object_new_boolean(r->probe.tmpfile));
	json_object_object_add(o, "probe", p);
	if (ly->gen_ok) {
		g = json_object_new_object();
		json_object_object_add(g, "name", jstr(ly->gen.name));
		json_object_object_add(g, "created", json_object_new_boolean(ly->gen.created));
		json_object_object_add(g, "boots_before", json_object_new_int((int)ly->gen.boots));
		json_object_object_add(g, "previous", ly->gen.previous[0] ? jstr(ly->gen.previous) : NULL);
		json_object_object_add(g, "migrated", json_object_new_int(ly->gen.migrated));
		json_object_object_add(g, "keep_entries", json_object_new_int((int)ly->gen.keep_entries));
		json_object_object_add(g, "keep_rejected", json_object_new_int((int)ly->gen.keep_rejected));
		json_object_object_add(g, "slot_good", json_object_new_boolean(ly->gc_done));
		rm = json_object_new_array();
		for (size_t i = 0; i < ly->removed.n; i++)
			json_object_array_add(rm, jstr(ly->removed.v[i]));
		json_object_object_add(g, "removed", rm);
		json_object_object_add(o, "generation", g);
	}
	(void)b;
	return o;
}

/* Something the user would not expect: a layer in RAM instead of flash,
 * or a path of the union without a writable upper. */
static bool degraded(const struct boot *b)
{
	if (b->read_only)
		return true;
	for (size_t i = 0; i < b->n_layers; i++)
		if (b->layers[i].res.fallback)
			return true;
	return false;
}

static struct json_object *state_json(struct boot *b, const char *result)
{
	struct json_object *o = json_object_new_object(), *arr, *lo;

	if (!strcmp(result, "ok") && degraded(b))
		result = "degraded";
	json_object_object_add(o, "result", jstr(result));
	json_object_object_add(o, "mode", jstr(mode_names[b->mode]));
	json_object_object_add(o, "layout", jstr(b->layout_path));
	json_object_object_add(o, "group", jstr(b->g ? b->g->name : NULL));
	json_object_object_add(o, "slot", b->g && b->slot >= 0 ? jstr(b->g->slots[b->slot].name) : NULL);
	json_object_object_add(o, "booted_by", jstr(b->booted_by));
	json_object_object_add(o, "version", b->version[0] ? jstr(b->version) : NULL);
	json_object_object_add(o, "env", b->env_ok ? jstr("ok") : jstr(b->env_error));
	json_object_object_add(o, "tries_left", b->env_ok ? json_object_new_int((int)b->left) : NULL);
	json_object_object_add(o, "root", b->have_rootdev ? root_json(&b->rootdev) : NULL);
	json_object_object_add(o, "rom", jstr(b->mode == BOOT_MODE_PREINIT ? "/" : b->rom));
	json_object_object_add(o, "union", jstr(b->root[0] ? b->root : NULL));
	arr = json_object_new_array();
	for (size_t i = 0; i < b->n_lowers; i++) {
		lo = root_json(&b->lowers[i]);
		json_object_object_add(lo, "name", jstr(b->l->lowers[i].name));
		json_object_array_add(arr, lo);
	}
	json_object_object_add(o, "lowers", arr);
	arr = json_object_new_array();
	for (size_t i = 0; i < b->n_layers; i++)
		json_object_array_add(arr, layer_json(b, &b->layers[i]));
	json_object_object_add(o, "overlays", arr);
	/* "overlay": the "/" one, else the layout's first (the one whose
	 * partition the daemon names); "overlays" has them all */
	for (size_t i = 0; i < b->n_layers; i++)
		if (!strcmp(b->layers[i].ov->path, "/") || b->layers[i].ov == &b->l->overlays[0]) {
			json_object_object_add(o, "overlay", layer_json(b, &b->layers[i]));
			break;
		}
	json_object_object_add(o, "degraded", json_object_new_boolean(degraded(b)));
	json_object_object_add(o, "read_only", json_object_new_boolean(b->read_only));
	json_object_object_add(o, "error", strcmp(result, "failed") ? NULL :
			       jstr(first_error[0] ? first_error : "unknown"));
	json_object_object_add(o, "reset_pending", json_object_new_boolean(b->reset_pending));
	json_object_object_add(o, "reset_cleared", json_object_new_boolean(b->reset_cleared));
	json_object_object_add(o, "warnings", json_object_get(b->warnings));
	json_object_object_add(o, "ms_root", json_object_new_double(b->ms_root));
	json_object_object_add(o, "ms_overlay", json_object_new_double(b->ms_overlay));
	json_object_object_add(o, "ms_total", json_object_new_double(ms_since(&b->t0)));
	json_object_object_add(o, "time", json_object_new_int64((int64_t)time(NULL)));
	return o;
}

static int write_state(struct boot *b, const char *result, bool print)
{
	_cleanup_json_ struct json_object *o = state_json(b, result);
	const char *text = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY |
							  JSON_C_TO_STRING_NOSLASHESCAPE);
	char dir[PATH_MAX], tmp[PATH_MAX + 8];
	_cleanup_close_ int fd = -1;
	char *slash;

	if (print)
		printf("%s\n", text);
	fmt(dir, sizeof(dir), "%s", b->state_path);
	slash = strrchr(dir, '/');
	if (slash && slash != dir) {
		*slash = '\0';
		util_mkdir_p(dir, 0755);
	}
	fmt(tmp, sizeof(tmp), "%s.new", b->state_path);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0 || util_write_full(fd, text, strlen(text)) < 0 ||
	    util_write_full(fd, "\n", 1) < 0 || rename(tmp, b->state_path) < 0) {
		log_err("writing the state file %s: %s", b->state_path, strerror(errno));
		return -errno;
	}
	return 0;
}

/* ---- switching ---- */

static const char *const api_mounts[] = { "/dev", "/proc", "/sys", "/run" };

static void move_api_mounts(const char *from_prefix, const char *to_prefix)
{
	for (size_t i = 0; i < ELEMENTSOF(api_mounts); i++) {
		char from[PATH_MAX], to[PATH_MAX];

		fmt(from, sizeof(from), "%s%s", from_prefix, api_mounts[i]);
		fmt(to, sizeof(to), "%s%s", to_prefix, api_mounts[i]);
		if (!is_mountpoint(from))
			continue;
		mkdir(to, 0755);
		if (mount(from, to, NULL, MS_MOVE, NULL) < 0) {
			log_warn("moving %s to %s failed (%s): detaching it", from, to, strerror(errno));
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
	log_err("exec %s: %s", b->init, strerror(errno));
	return -errno;
}

static int switch_root(struct boot *b)
{
	struct statfs sfs;
	struct stat st;
	int fd;

	move_api_mounts("", b->root);
	if (chdir(b->root) < 0) {
		log_err("chdir %s: %s", b->root, strerror(errno));
		return -errno;
	}
	/* only ever delete an initramfs (ramfs/tmpfs), never a real root */
	if (statfs("/", &sfs) == 0 && (sfs.f_type == BOOT_RAMFS_MAGIC || sfs.f_type == BOOT_TMPFS_MAGIC) &&
	    stat("/", &st) == 0) {
		fd = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (fd >= 0)
			delete_contents(fd, st.st_dev);
	} else {
		log_warn("/ is not an initramfs (ramfs/tmpfs): not deleting its contents");
	}
	if (mount(".", "/", NULL, MS_MOVE, NULL) < 0) {
		log_err("moving %s to /: %s", b->root, strerror(errno));
		return -errno;
	}
	if (chroot(".") < 0 || chdir("/") < 0) {
		log_err("chroot into the new root: %s", strerror(errno));
		return -errno;
	}
	return exec_init(b);
}

static int pivot(struct boot *b)
{
	char rom[PATH_MAX];

	fmt(rom, sizeof(rom), "%s/rom", b->root);
	if (mkdir(rom, 0755) < 0 && errno != EEXIST) {
		log_err("mkdir %s: %s", rom, strerror(errno));
		return -errno;
	}
	if (syscall(SYS_pivot_root, b->root, rom) < 0) {
		log_err("pivot_root %s %s: %s", b->root, rom, strerror(errno));
		return -errno;
	}
	if (chdir("/") < 0)
		return -errno;
	move_api_mounts("/rom", "");
	/* the staging tmpfs, emptied by the moves */
	fmt(rom, sizeof(rom), "/rom%s", b->stage);
	if (umount2(rom, MNT_DETACH) < 0)
		log_warn("detaching the staging tmpfs %s: %s", rom, strerror(errno));
	return exec_init(b);
}

/* ---- main ---- */

static void usage(FILE *out)
{
	fprintf(out,
		"Usage: flashd boot --mode initramfs|preinit [OPTIONS]\n"
		"\n"
		"Assemble the root: the booted slot's squashfs, the writable overlay (generation of\n"
		"this image), the overlayfs union; then switch_root (initramfs) or pivot_root with\n"
		"the old root at /rom (preinit) and exec the init.\n"
		"\n"
		"  --mode MODE        initramfs or preinit\n"
		"  --layout FILE      board layout (default " BOOT_DEFAULT_LAYOUT ")\n"
		"  --cmdline FILE     kernel command line naming the slot (default /proc/cmdline)\n"
		"  --slot X           the booted slot, instead of the command line\n"
		"  --root-dev DEV     block device of the squashfs root (initramfs), instead of the layout's\n"
		"  --stage DIR        where to assemble (default /flashd, preinit: /tmp on a new tmpfs)\n"
		"  --state FILE       state record (default " BOOT_STATE_PATH ")\n"
		"  --init PATH        what to exec in the new root (default " BOOT_DEFAULT_INIT ")\n"
		"  --no-exec          assemble in DIR/root, write and print the state, do not switch\n"
		"  --dry-run          print what would be done, touch nothing\n"
		"  -h, --help         this help\n");
}

static int parse_args(struct boot *b, int argc, char **argv)
{
	enum { O_MODE = 0x100, O_LAYOUT, O_CMDLINE, O_SLOT, O_ROOTDEV, O_STAGE, O_STATE, O_INIT,
	       O_NOEXEC, O_DRYRUN };
	static const struct option opts[] = {
		{ "mode", required_argument, NULL, O_MODE },
		{ "layout", required_argument, NULL, O_LAYOUT },
		{ "cmdline", required_argument, NULL, O_CMDLINE },
		{ "slot", required_argument, NULL, O_SLOT },
		{ "root-dev", required_argument, NULL, O_ROOTDEV },
		{ "stage", required_argument, NULL, O_STAGE },
		{ "state", required_argument, NULL, O_STATE },
		{ "init", required_argument, NULL, O_INIT },
		{ "no-exec", no_argument, NULL, O_NOEXEC },
		{ "dry-run", no_argument, NULL, O_DRYRUN },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c, mode = -1;

	optind = 1;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) >= 0) {
		switch (c) {
		case O_MODE:
			for (int i = 0; i < _BOOT_MODE_MAX; i++)
				if (!strcmp(optarg, mode_names[i]))
					mode = i;
			if (mode < 0) {
				fprintf(stderr, "flashd boot: --mode %s: expected initramfs or preinit\n", optarg);
				return -EINVAL;
			}
			break;
		case O_LAYOUT: b->layout_path = optarg; break;
		case O_CMDLINE: b->cmdline = optarg; break;
		case O_SLOT: b->slot_arg = optarg; break;
		case O_ROOTDEV: b->root_dev = optarg; break;
		case O_STAGE: b->stage = optarg; break;
		case O_STATE: b->state_path = optarg; break;
		case O_INIT: b->init = optarg; break;
		case O_NOEXEC: b->no_exec = true; break;
		case O_DRYRUN: b->dry_run = true; break;
		case 'h': usage(stdout); return 1;
		default: usage(stderr); return -EINVAL;
		}
	}
	if (optind < argc || mode < 0) {
		fprintf(stderr, "flashd boot: %s\n", mode < 0 ? "--mode is required" : "unexpected argument");
		usage(stderr);
		return -EINVAL;
	}
	b->mode = mode;
	if (b->mode == BOOT_MODE_PREINIT && b->root_dev) {
		fprintf(stderr, "flashd boot: --root-dev is for initramfs mode (preinit uses the mounted /)\n");
		return -EINVAL;
	}
	if (!b->stage)
		b->stage = b->mode == BOOT_MODE_PREINIT ? "/tmp" : "/flashd";
	return 0;
}

/* The API filesystems an initramfs may not have yet (flashd as the first
 * program). */
static void api_filesystems(struct boot *b)
{
	static const struct { const char *path, *type; unsigned long flags; const char *opts; } fs[] = {
		{ "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL },
		{ "/sys", "sysfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL },
		{ "/dev", "devtmpfs", MS_NOSUID, "mode=0755" },
		{ "/run", "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755" },
	};

	for (size_t i = 0; i < ELEMENTSOF(fs); i++) {
		if (is_mountpoint(fs[i].path))
			continue;
		mkdir(fs[i].path, 0755);
		if (mount(fs[i].type, fs[i].path, fs[i].type, fs[i].flags, fs[i].opts) < 0)
			log_warn("mount %s on %s: %s", fs[i].type, fs[i].path, strerror(errno));
	}
	(void)b;
}

static int dry_run(struct boot *b)
{
	const struct layout_slot *s = &b->g->slots[b->slot];
	char gen[BOOT_GEN_NAME_MAX];

	boot_gen_name(s->name, b->version, gen, sizeof(gen));
	printf("mode %s, slot %s (%s), version %s\n", mode_names[b->mode], s->name,
	       b->booted_by ? b->booted_by : "--slot", b->version[0] ? b->version : "(unknown)");
	if (b->mode == BOOT_MODE_INITRAMFS)
		printf("root: %s %s%s%s -> %s/rom\n", layout_storage_to_string(s->rootfs.storage),
		       s->rootfs.part ? s->rootfs.part->name : s->rootfs.file,
		       s->rootfs.ubi_volume ? ":" : "", s->rootfs.ubi_volume ? s->rootfs.ubi_volume : "",
		       b->stage);
	else
		printf("root: / (mounted by the kernel), to /rom after pivot_root\n");
	for (size_t i = 0; i < b->l->n_lowers; i++)
		printf("lower %s: %s\n", b->l->lowers[i].name,
		       layout_storage_to_string(b->l->lowers[i].target.storage));
	for (size_t i = 0; i < b->l->n_overlays; i++)
		printf("overlay %s: %s%s%s, generation %s%s\n", b->l->overlays[i].path,
		       layout_overlay_type_to_string(b->l->overlays[i].type),
		       b->l->overlays[i].part ? " on " : "",
		       b->l->overlays[i].part ? b->l->overlays[i].part->name : "", gen,
		       b->reset_pending ? " (factory reset first)" : "");
	printf("then: %s\n", b->no_exec ? "stop (--no-exec)" :
	       b->mode == BOOT_MODE_INITRAMFS ? "switch_root, exec init" : "pivot_root, exec init");
	return 0;
}

int boot_main(int argc, char **argv)
{
	struct boot b = { .layout_path = BOOT_DEFAULT_LAYOUT, .state_path = BOOT_STATE_PATH,
			  .init = BOOT_DEFAULT_INIT, .slot = -1 };
	struct error lerr = {};
	struct error serr = {};
	char stagefs[PATH_MAX];
	int r, ret = 1;

	clock_gettime(CLOCK_MONOTONIC, &b.t0);
	r = parse_args(&b, argc, argv);
	if (r != 0)
		return r > 0 ? 0 : 2;
	b.warnings = json_object_new_array();
	for (size_t i = 0; i < MAX_LAYERS; i++)
		b.lowers[i].hold_fd = -1;
	b.rootdev.hold_fd = -1;

	if (!b.dry_run && b.mode == BOOT_MODE_INITRAMFS)
		api_filesystems(&b);
	/* an earlier run's record must not be read as this boot's */
	if (!b.dry_run && unlink(b.state_path) < 0 && errno != ENOENT)
		log_warn("removing the old state %s: %s", b.state_path, strerror(errno));
	r = layout_load(b.layout_path, &b.l, &lerr);
	if (r < 0) {
		log_err("layout: %s", lerr.msg);
		goto fail;
	}
	if (b.l->n_groups == 0) {
		log_err("%s: no slot group: nothing to boot", b.layout_path);
		goto fail;
	}
	b.g = &b.l->groups[0];
	if (b.slot_arg) {
		r = -ENOENT;
		for (size_t i = 0; i < b.g->n_slots; i++)
			if (!strcmp(b.g->slots[i].name, b.slot_arg))
				r = (int)i;
		if (r < 0) {
			log_err("--slot %s: the layout's group %s has no such slot", b.slot_arg, b.g->name);
			goto fail;
		}
		b.booted_by = "--slot";
	} else {
		r = booted_slot(&b, &serr);
		if (r < 0) {
			/* -ENOENT with a message: the command line file itself is missing */
			log_err("which slot booted: %s", r == -ENOENT && !serr.msg[0] ?
				"the kernel command line has no flashd.slot=, rauc.slot= or root= naming a slot" :
				serr.msg);
			goto fail;
		}
	}
	b.slot = r;
	if (b.mode == BOOT_MODE_PREINIT && !b.dry_run && check_preinit_root(&b) < 0)
		goto fail;
	read_env(&b);
	if (!b.env_ok)
		warn_state(&b, "U-Boot env not readable (%s): no version, reset flag or tries: "
			   "generation named by slot only, no cleanup of old generations", b.env_error);
	if (b.dry_run) {
		ret = dry_run(&b) < 0;
		goto out;
	}

	r = util_mkdir_p(b.stage, 0755);
	if (r < 0) {
		log_err("mkdir %s: %s", b.stage, strerror(-r));
		goto out;
	}
	if (b.mode == BOOT_MODE_PREINIT && !b.no_exec) {
		/* the root is read-only squashfs: assemble on a tmpfs */
		if (mount("tmpfs", b.stage, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755") < 0) {
			log_err("mount tmpfs on %s: %s", b.stage, strerror(errno));
			goto out;
		}
		fmt(stagefs, sizeof(stagefs), "/run");
		if (!is_mountpoint(stagefs) &&
		    mount("tmpfs", stagefs, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755") < 0)
			log_warn("mount tmpfs on /run: %s", strerror(errno));
	}
	if (setup_root(&b) < 0 || setup_lowers(&b) < 0)
		goto fail;
	b.ms_root = ms_since(&b.t0);
	if (setup_layers(&b) < 0)
		goto fail;
	setup_generations(&b);
	b.ms_overlay = ms_since(&b.t0) - b.ms_root;
	if (mount_union(&b) < 0)
		goto fail;
	if (b.mode == BOOT_MODE_INITRAMFS)
		move_into_root(&b, b.rom, "/rom");
	for (size_t i = 0; i < b.n_layers; i++)
		move_into_root(&b, b.layers[i].mnt, b.layers[i].final);
	write_state(&b, "ok", b.no_exec);
	if (degraded(&b))
		log_warn("slot %s assembled DEGRADED in %.0f ms (see the warnings in %s)",
			 b.g->slots[b.slot].name, ms_since(&b.t0), b.state_path);
	else
		log_info("slot %s assembled in %.0f ms", b.g->slots[b.slot].name, ms_since(&b.t0));
	if (b.no_exec) {
		ret = 0;
		goto out;
	}
	fflush(NULL);
	r = b.mode == BOOT_MODE_INITRAMFS ? switch_root(&b) : pivot(&b);
	log_err("could not start %s in the new root (%s)", b.init, strerror(-r));
	goto out;
fail:
	if (!b.dry_run)
		write_state(&b, "failed", b.no_exec);
out:
	boot_root_done(&b.rootdev);
	for (size_t i = 0; i < MAX_LAYERS; i++)
		boot_root_done(&b.lowers[i]);
	for (size_t i = 0; i < b.n_layers; i++)
		boot_gen_list_done(&b.layers[i].removed);
	json_object_put(b.warnings);
	layout_free(b.l);
	return ret;
}
