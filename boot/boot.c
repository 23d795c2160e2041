/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* flashd boot: the early-boot union assembly (see boot/boot.h and
 * docs/boot.md). This file is the command: main, options, the logger
 * (stderr and the kernel log) and the order of the steps; the work is in
 * boot_assemble.c (env, slot, mounts, switching) and boot_state.c (the
 * state record), which log through boot_log(); the other boot_* modules
 * only return errors. */
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
#include "boot_assemble.h"
#include "boot_gen.h"
#include "boot_state.h"
#include "cleanup.h"
#include "cleanup_json.h"
#include "env.h"
#include "layout.h"
#include "slot.h"
#include "util.h"

static const char *const boot_mode_table[] = { BOOT_MODE_LIST(STRING_TABLE_NAME) };
DEFINE_STRING_TABLE_TO(boot_mode, enum boot_mode)

/* What differs between the modes (boot_assemble.h). */
static const struct boot_mode_info {
	const char *stage;            /* default --stage */
	const char *root;             /* default --root (NULL: STAGE/root, not an option) */
	bool initramfs;               /* an initramfs: API filesystems, the squashfs on STAGE/rom */
	int (*enter)(struct boot *b); /* the switch; NULL: flashd exits, the caller switches */
	const char *then;             /* what --dry-run says comes after the assembly */
} boot_modes[_BOOT_MODE_MAX] = {
	[BOOT_MODE_INITRAMFS] = { "/flashd", NULL, true, boot_assemble_switch_root,
				  "switch_root, exec init" },
	[BOOT_MODE_INITRAMFS_TOOLS] = { "/flashd", "/root", true, NULL,
				  "exit 0: initramfs-tools' /init runs init-bottom and run-init" },
	[BOOT_MODE_PREINIT] = { "/tmp", NULL, false, boot_assemble_pivot, "pivot_root, exec init" },
};

/* ---- logging: stderr and the kernel log (the console may be gone) ---- */

/* The first error of this run: the state file says why it failed. */
static char first_error[1024];

void boot_log(int level, const char *fmt, ...)
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
const char *boot_log_first_error(void)
{
	return first_error;
}

void boot_warn(struct boot *b, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	boot_log_warn("%s", msg);
	json_object_array_add(b->warnings, json_object_new_string(msg));
}

double boot_ms_since(uint64_t t0_usec)
{
	return (double)(util_now_usec() - t0_usec) / 1e3;
}

bool boot_is_mountpoint(const char *path)
{
	struct stat a, b;
	char parent[PATH_MAX];

	if (stat(path, &a) < 0)
		return false;
	util_snprintf(parent, sizeof(parent), "%s/..", path);
	if (stat(parent, &b) < 0)
		return false;
	return a.st_dev != b.st_dev || a.st_ino == b.st_ino;
}
/* ---- main ---- */

static void usage(FILE *out)
{
	fprintf(out,
		"Usage: flashd boot --mode initramfs|initramfs-tools|preinit [OPTIONS]\n"
		"\n"
		"Assemble the root: the booted slot's squashfs, the writable overlay (generation of\n"
		"this image), the overlayfs union; then switch_root (initramfs) or pivot_root with\n"
		"the old root at /rom (preinit) and exec the init; initramfs-tools: mount the union\n"
		"on --root and exit, initramfs-tools' /init switches.\n"
		"\n"
		"  --mode MODE        initramfs, initramfs-tools or preinit\n"
		"  --layout FILE      board layout (default %s)\n"
		"  --cmdline FILE     kernel command line naming the slot (default /proc/cmdline)\n"
		"  --slot X           the booted slot, instead of the command line\n"
		"  --root-dev DEV     block device of the squashfs root (initramfs), instead of the layout's\n"
		"  --stage DIR        where to assemble (default /flashd, preinit: /tmp on a new tmpfs)\n"
		"  --root DIR         initramfs-tools: mount the union here (${rootmnt}, default /root)\n"
		"  --state FILE       state record (default %s)\n"
		"  --init PATH        what to exec in the new root (default " BOOT_DEFAULT_INIT ")\n"
		"  --no-exec          assemble in DIR/root, write and print the state, do not switch\n"
		"  --dry-run          print what would be done, touch nothing\n"
		"  -h, --help         this help\n", BOOT_DEFAULT_LAYOUT, BOOT_STATE_PATH);
}

static int parse_args(struct boot *b, int argc, char **argv)
{
	enum { O_MODE = 0x100, O_LAYOUT, O_CMDLINE, O_SLOT, O_ROOTDEV, O_STAGE, O_ROOT, O_STATE,
	       O_INIT, O_NOEXEC, O_DRYRUN };
	static const struct option opts[] = {
		{ "mode", required_argument, NULL, O_MODE },
		{ "layout", required_argument, NULL, O_LAYOUT },
		{ "cmdline", required_argument, NULL, O_CMDLINE },
		{ "slot", required_argument, NULL, O_SLOT },
		{ "root-dev", required_argument, NULL, O_ROOTDEV },
		{ "stage", required_argument, NULL, O_STAGE },
		{ "root", required_argument, NULL, O_ROOT },
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
				if (!strcmp(optarg, boot_mode_table[i]))
					mode = i;
			if (mode < 0) {
				fprintf(stderr, "flashd boot: --mode %s: expected initramfs, "
					"initramfs-tools or preinit\n", optarg);
				return -EINVAL;
			}
			break;
		case O_LAYOUT: b->layout_path = optarg; break;
		case O_CMDLINE: b->cmdline = optarg; break;
		case O_SLOT: b->slot_arg = optarg; break;
		case O_ROOTDEV: b->root_dev = optarg; break;
		case O_STAGE: b->stage = optarg; break;
		case O_ROOT: b->root_arg = optarg; break;
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
	if (!boot_modes[mode].initramfs && b->root_dev) {
		fprintf(stderr, "flashd boot: --root-dev is for initramfs mode (preinit uses the mounted /)\n");
		return -EINVAL;
	}
	if (!boot_modes[mode].root && b->root_arg) {
		fprintf(stderr, "flashd boot: --root is for initramfs-tools mode (%s switches itself)\n",
			boot_mode_to_string(mode));
		return -EINVAL;
	}
	if (!b->stage)
		b->stage = boot_modes[mode].stage;
	if (!b->root_arg)
		b->root_arg = boot_modes[mode].root;
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
		if (boot_is_mountpoint(fs[i].path))
			continue;
		mkdir(fs[i].path, 0755);
		if (mount(fs[i].type, fs[i].path, fs[i].type, fs[i].flags, fs[i].opts) < 0)
			boot_log_warn("mount %s on %s: %s", fs[i].type, fs[i].path, strerror(errno));
	}
	(void)b;
}

static int dry_run(struct boot *b)
{
	const struct layout_slot *s = &b->g->slots[b->slot];
	char gen[BOOT_GEN_NAME_MAX];

	boot_gen_name(s->name, b->version, gen, sizeof(gen));
	printf("mode %s, slot %s (%s), version %s\n", boot_mode_to_string(b->mode), s->name,
	       b->booted_by ? b->booted_by : "--slot", b->version[0] ? b->version : "(unknown)");
	if (boot_modes[b->mode].initramfs)
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
	if (b->root_arg)
		printf("union: %s\n", b->root_arg);
	printf("then: %s\n", b->no_exec ? "stop (--no-exec)" : boot_modes[b->mode].then);
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

	b.t0 = util_now_usec();
	r = parse_args(&b, argc, argv);
	if (r != 0)
		return r > 0 ? 0 : 2;
	b.warnings = json_object_new_array();
	for (size_t i = 0; i < BOOT_MAX_LAYERS; i++)
		b.lowers[i].hold_fd = -1;
	b.rootdev.hold_fd = -1;

	if (!b.dry_run && boot_modes[b.mode].initramfs)
		api_filesystems(&b);
	/* an earlier run's record must not be read as this boot's */
	if (!b.dry_run && unlink(b.state_path) < 0 && errno != ENOENT)
		boot_log_warn("removing the old state %s: %s", b.state_path, strerror(errno));
	r = layout_load(b.layout_path, &b.l, &lerr);
	if (r < 0) {
		boot_log_err("layout: %s", lerr.msg);
		goto fail;
	}
	if (b.l->n_groups == 0) {
		boot_log_err("%s: no slot group: nothing to boot", b.layout_path);
		goto fail;
	}
	b.g = &b.l->groups[0];
	if (b.slot_arg) {
		r = -ENOENT;
		for (size_t i = 0; i < b.g->n_slots; i++)
			if (!strcmp(b.g->slots[i].name, b.slot_arg))
				r = (int)i;
		if (r < 0) {
			boot_log_err("--slot %s: the layout's group %s has no such slot", b.slot_arg, b.g->name);
			goto fail;
		}
		b.booted_by = "--slot";
	} else {
		r = boot_assemble_booted_slot(&b, &serr);
		if (r < 0) {
			/* -ENOENT with a message: the command line file itself is missing */
			boot_log_err("which slot booted: %s", r == -ENOENT && !serr.msg[0] ?
				"the kernel command line has no flashd.slot=, rauc.slot= or root= naming a slot" :
				serr.msg);
			goto fail;
		}
	}
	b.slot = r;
	if (b.mode == BOOT_MODE_PREINIT && !b.dry_run && boot_assemble_check_preinit_root(&b) < 0)
		goto fail;
	boot_assemble_read_env(&b);
	if (!b.env_ok)
		boot_warn(&b, "U-Boot env not readable (%s): no version, reset flag or tries: "
			   "generation named by slot only, no cleanup of old generations", b.env_error);
	if (b.dry_run) {
		ret = dry_run(&b) < 0;
		goto out;
	}

	r = util_mkdir_p(b.stage, 0755);
	if (r < 0) {
		boot_log_err("mkdir %s: %s", b.stage, strerror(-r));
		goto out;
	}
	if (b.mode == BOOT_MODE_PREINIT && !b.no_exec) {
		/* the root is read-only squashfs: assemble on a tmpfs */
		if (mount("tmpfs", b.stage, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755") < 0) {
			boot_log_err("mount tmpfs on %s: %s", b.stage, strerror(errno));
			goto out;
		}
		util_snprintf(stagefs, sizeof(stagefs), "/run");
		if (!boot_is_mountpoint(stagefs) &&
		    mount("tmpfs", stagefs, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755") < 0)
			boot_log_warn("mount tmpfs on /run: %s", strerror(errno));
	}
	if (boot_assemble_root(&b) < 0 || boot_assemble_lowers(&b) < 0)
		goto fail;
	b.ms_root = boot_ms_since(b.t0);
	if (boot_assemble_layers(&b) < 0)
		goto fail;
	boot_assemble_generations(&b);
	b.ms_overlay = boot_ms_since(b.t0) - b.ms_root;
	if (boot_assemble_union(&b) < 0)
		goto fail;
	if (boot_modes[b.mode].initramfs)
		boot_assemble_move_into_root(&b, b.rom, "/rom");
	for (size_t i = 0; i < b.n_layers; i++)
		boot_assemble_move_into_root(&b, b.layers[i].mnt, b.layers[i].final);
	boot_state_write(&b, "ok", b.no_exec);
	if (boot_state_degraded(&b))
		boot_log_warn("slot %s assembled DEGRADED in %.0f ms (see the warnings in %s)",
			 b.g->slots[b.slot].name, boot_ms_since(b.t0), b.state_path);
	else
		boot_log_info("slot %s assembled in %.0f ms", b.g->slots[b.slot].name, boot_ms_since(b.t0));
	if (b.no_exec || !boot_modes[b.mode].enter) {
		ret = 0;
		goto out;
	}
	fflush(NULL);
	r = boot_modes[b.mode].enter(&b);
	boot_log_err("could not start %s in the new root (%s)", b.init, strerror(-r));
	goto out;
fail:
	if (!b.dry_run)
		boot_state_write(&b, "failed", b.no_exec);
out:
	boot_root_done(&b.rootdev);
	for (size_t i = 0; i < BOOT_MAX_LAYERS; i++)
		boot_root_done(&b.lowers[i]);
	for (size_t i = 0; i < b.n_layers; i++)
		boot_gen_list_done(&b.layers[i].removed);
	json_object_put(b.warnings);
	layout_free(b.l);
	return ret;
}
