/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Overlay generations: each root image gets its own upper/work pair in
 * the writable layer, OVERLAY/gen-<slot>-<version>/{upper,work}, so that a
 * rollback finds the user's data exactly as the old image left it.
 *
 * On the first boot of a new generation the paths of the keep-list
 * (OpenWrt sysupgrade.conf style: one absolute path or glob per line,
 * '#' comments, read from the files in /etc/flashd/keep.d of the new image and of
 * the previous generation's upper) are copied from the previous
 * generation's upper layer (what the user changed). The new generation is
 * built as gen-X.tmp and renamed into place, so a power cut during the
 * migration re-does it on the next boot.
 *
 * Old generations are removed at boot once the booted slot is known to
 * be good: the generation has booted before and the slot's tries counter
 * is back at max-1 (the boot script decrements before every boot and only
 * mark-good restores the maximum; a slot on trial that reboots without
 * mark-good shows max-2 or less). See docs/boot.md.
 *
 * Everything here works on plain directories; nothing prints. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include "error.h"
#include "paths.h"

#define BOOT_GEN_PREFIX "gen-"
#define BOOT_GEN_META "flashd-gen"
#define BOOT_GEN_LAST ".flashd-last"
#define BOOT_GEN_KEEP_DIR paths_keep_dir
#define BOOT_GEN_NAME_MAX 128

struct boot_gen_list {
	char **v;
	size_t n;
};
void boot_gen_list_done(struct boot_gen_list *l);

/* "gen-A-2.0": characters outside [A-Za-z0-9._+-] become '_'; an empty
 * version is "unknown". When the version had to be changed (sanitised,
 * shortened to fit, or ending in ".tmp", the half-built generation's
 * suffix) "-" and 8 hex digits of a hash of the real version are
 * appended, so two versions never share a generation. -ENAMETOOLONG
 * when not even that fits len. */
int boot_gen_name(const char *slot, const char *version, char *buf, size_t len);
/* A name boot_gen_name can produce: "gen-" + [A-Za-z0-9._+-], no ".tmp"
 * suffix, shorter than BOOT_GEN_NAME_MAX (so never "/" or ".."). */
bool boot_gen_name_valid(const char *name);

/* Append the entries of one keep file's text: trimmed lines, '#' comments
 * and blank lines dropped, "//" and a trailing "/" folded. Entries must be
 * absolute and free of "." and ".." components: -EINVAL with *ret_line
 * set to the first offending line number (the valid lines are added). */
int boot_gen_keep_parse(const char *text, struct boot_gen_list *l, unsigned *ret_line);
/* Add a copy of s to l. */
int boot_gen_list_add(struct boot_gen_list *l, const char *s);
/* Sort l by name (strcmp order). */
void boot_gen_list_sort(struct boot_gen_list *l);
/* Every regular file in each directory (missing ones are fine), in name
 * order, each parsed; duplicates dropped. Invalid lines are skipped:
 * returns how many (err names the first one's file and line), or -errno
 * when a file cannot be read. */
int boot_gen_keep_load(const char *const *dirs, size_t n_dirs, struct boot_gen_list *ret,
		       struct error *err);

struct boot_gen_result {
	char name[BOOT_GEN_NAME_MAX];        /* the generation in use */
	bool created;                        /* first boot of this generation */
	unsigned boots;                      /* boots of it before this one */
	char previous[BOOT_GEN_NAME_MAX];    /* migrated from ("" = none) */
	int migrated;                        /* entries migrated */
	size_t keep_entries;                 /* keep-list lines applied */
	unsigned keep_rejected;              /* invalid keep-list lines skipped */
	char note[512];                      /* something the caller should warn about */
};

/* Make OVERLAY/name ready (create + migrate on first boot, count the boot)
 * and record it as the last booted one. On failure a half-built NAME.tmp
 * is removed and the previous generation and .flashd-last are unchanged
 * (the next boot tries again). A .flashd-last that is no valid name is
 * ignored (res.note says so). rom = the new image's root (for
 * its keep.d; NULL = none); prefix = the path the overlay covers ("/", or
 * "/etc" for a per-subtree overlay: keep entries outside it are ignored,
 * the others taken relative to it). Returns 0, fills ret. */
int boot_gen_prepare(const char *overlay, const char *name, const char *rom, const char *prefix,
		     struct boot_gen_result *ret, struct error *err);

/* The rule above: left = BOOT_x_LEFT now (after the script's decrement). */
bool boot_gen_slot_good(unsigned left, unsigned max_tries, unsigned boots_before);

/* Generation directories in OVERLAY (sorted), including leftover .tmp. */
int boot_gen_list(const char *overlay, struct boot_gen_list *ret);
/* Remove every generation but keep (and leftovers); fills removed (may be
 * NULL). Returns the number removed. */
int boot_gen_gc(const char *overlay, const char *keep, struct boot_gen_list *removed,
		struct error *err);
/* rm -rf that stays on one filesystem and never follows symlinks. */
int boot_gen_rmtree(const char *path);
