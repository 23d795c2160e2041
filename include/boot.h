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
#include "layout.h"

#define BOOT_STATE_PATH "/run/flashd/boot.json"
#define BOOT_DEFAULT_LAYOUT LAYOUT_DEFAULT_PATH /* include/layout.h */
#define BOOT_DEFAULT_INIT "/sbin/init"

/* The "flashd boot" command: argv[0] = "boot". Returns the exit status
 * (0 ok, 1 failed, 2 usage); does not return when it execs the init. */
int boot_main(int argc, char **argv);
