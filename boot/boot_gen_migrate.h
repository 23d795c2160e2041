/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Overlay generations: the keep-list migration on a generation's first boot. */
#pragma once
#include "boot_gen.h"
#include "error.h"

/* Copy the keep paths (globs allowed) from old_upper to new_upper: files,
 * symlinks, directories (recursively) and whiteouts, with owner, mode,
 * times and xattrs of any size (overlayfs' own trusted.overlay.* except
 * opaque are left behind: they point into the old image). Missing paths
 * are skipped (unchanged from the image). The walk opens one name at a
 * time below a directory fd with O_NOFOLLOW: a glob never matches "." or
 * "..", a symlink in the old upper is copied as a symlink but never
 * followed (not as a parent either), nothing outside the two uppers is
 * read or written, and a copy whose source and destination are one inode
 * fails with -ELOOP. Returns the number of entries copied. */
int boot_gen_migrate(const char *old_upper, const char *new_upper,
		     const struct boot_gen_list *keep, struct error *err);
