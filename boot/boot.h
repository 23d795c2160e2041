/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* flashd boot: early-boot union assembly (docs/boot.md).
 *
 *   flashd boot --mode initramfs|preinit [--layout FILE] [--cmdline FILE]
 *               [--slot X] [--root-dev DEV] [--stage DIR] [--state FILE]
 *               [--init PATH] [--no-exec] [--dry-run]
 *
 * initramfs: set up the slot's read-only root (mtdblock, dm-linear around
 * NAND bad blocks, ubiblock, loop), the writable layer (JFFS2 formatted on
 * first boot / after a factory reset, UBIFS, tmpfs; tmpfs fallback), the
 * overlay generation of the booted image, the overlayfs union, then
 * switch_root to /sbin/init (move /dev /proc /sys /run, delete the
 * initramfs, chroot, exec).
 * preinit: the kernel mounted the squashfs as / already: writable layer,
 * union over /, pivot_root with the old root at /rom, exec the init.
 *
 * Everything is recorded in /run/flashd/boot.json for the daemon's status.
 * Only syscalls and ioctls are used: it works with the kernel, flashd and
 * its shared libraries alone. */
#pragma once
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "layout.h"
#include "paths.h"

#define BOOT_STATE_PATH paths_boot_state
#define BOOT_DEFAULT_LAYOUT LAYOUT_DEFAULT_PATH /* include/layout.h */
#define BOOT_DEFAULT_INIT "/sbin/init"

/* The "flashd boot" command: argv[0] = "boot". Returns the exit status
 * (0 ok, 1 failed, 2 usage); does not return when it execs the init. */
int boot_main(int argc, char **argv);

struct boot;

/* The logger of flashd boot: stderr, and the kernel log for warnings and
 * errors (the console may be gone). The first error is kept for the state. */
void boot_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
#define boot_log_err(...) boot_log(3, __VA_ARGS__)
#define boot_log_warn(...) boot_log(4, __VA_ARGS__)
#define boot_log_info(...) boot_log(6, __VA_ARGS__)
const char *boot_log_first_error(void);
/* A warning: logged and recorded in the state's "warnings". */
void boot_warn(struct boot *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
double boot_ms_since(uint64_t t0_usec);
bool boot_is_mountpoint(const char *path);
