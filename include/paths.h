/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Where flashd's files are, from configure's directories as make sees them
 * (lib/base/paths.c.in). Every path flashd names outside /proc, /sys and
 * /dev comes from here, except the conventions of other programs:
 * libubootenv's /etc/fw_env.config and /var/lock/fw_printenv.lock (env.h),
 * and the API file systems flashd boot mounts (/run among them).
 * `flashd --paths` prints them. */
#pragma once

/* the configuration (sysconfdir/flashd) */
extern const char paths_conf[], paths_layout[], paths_keyring[];
/* flashd boot reads the keep-lists at this path inside the root images,
 * which install the same flashd */
extern const char paths_keep_dir[];
/* the install records (localstatedir/lib/flashd) */
extern const char paths_state_dir[];
/* runtime (runstatedir/flashd; configure's default runstatedir is /run):
 * flashd boot's record must be on the tmpfs it moves into the new root;
 * the system lock's root-only directory and file (oplock.h) */
extern const char paths_run_dir[], paths_socket[], paths_boot_state[];
extern const char paths_lock_dir[], paths_board_lock[];
/* the example board layouts (pkgdatadir/layouts) */
extern const char paths_layouts_dir[];
/* the programs (the initramfs hook copies flashd from here) */
extern const char paths_sbindir[];
