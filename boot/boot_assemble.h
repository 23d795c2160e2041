/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* flashd boot's work, the steps boot_main() runs in order (boot/boot_assemble.c),
 * and the state of one run they share with the state record (boot_state.h).
 * Each step logs its errors (boot_log_err) and returns -errno; what leaves
 * a usable root is a warning in the state (boot_warn). */
#pragma once
#include <limits.h>
#include <stdbool.h>
#include <time.h>

#include "boot_gen.h"
#include "boot_overlay.h"
#include "boot_root.h"
#include "layout.h"

/* initramfs: flashd is PID 1 of an initramfs and switch_roots itself;
 * initramfs-tools: the union is mounted at --root (${rootmnt}) and flashd
 * exits: initramfs-tools' /init runs init-bottom, moves /run, /sys, /proc
 * and run-init switches, as for every other boot= method;
 * preinit: the kernel mounted the squashfs as /. */
#define BOOT_MODE_LIST(X) X(BOOT_MODE_INITRAMFS, "initramfs") \
	X(BOOT_MODE_INITRAMFS_TOOLS, "initramfs-tools") X(BOOT_MODE_PREINIT, "preinit")

enum boot_mode {
	BOOT_MODE_LIST(STRING_TABLE_ENUM)
	_BOOT_MODE_MAX,
};

#define BOOT_MAX_LAYERS 8

struct boot_layer {
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
	const char *root_arg;          /* --root: the union's mount point (NULL: STAGE/root) */
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
	struct boot_root lowers[BOOT_MAX_LAYERS];
	char lower_mnt[BOOT_MAX_LAYERS][PATH_MAX];
	size_t n_lowers;
	struct boot_layer layers[BOOT_MAX_LAYERS];
	size_t n_layers;
	struct json_object *warnings;
	uint64_t t0;                  /* util_now_usec() at the start */
	double ms_root, ms_overlay, ms_total;
};

const char *boot_mode_to_string(enum boot_mode m); /* boot.c */

/* The env's version, factory reset flag and tries (b->env_ok false and
 * b->env_error set when the env cannot be read). */
void boot_assemble_read_env(struct boot *b);
/* The booted slot's index from the kernel command line (b->cmdline). */
int boot_assemble_booted_slot(struct boot *b, struct error *serr);
/* preinit: refuse (-EXDEV) when / is not the named slot's image. */
int boot_assemble_check_preinit_root(struct boot *b);
int boot_assemble_root(struct boot *b);
int boot_assemble_lowers(struct boot *b);
int boot_assemble_layers(struct boot *b);
void boot_assemble_generations(struct boot *b);
int boot_assemble_union(struct boot *b);
void boot_assemble_move_into_root(struct boot *b, const char *from, const char *to);
/* Hand over to b->init; return only on failure. */
int boot_assemble_switch_root(struct boot *b);
int boot_assemble_pivot(struct boot *b);
