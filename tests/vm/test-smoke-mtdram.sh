#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# vm-module: mtdram total_size=16384 erase_size=64 --mtdparts=mtdram:256k(env),6m(rootfs),-(data)
#
# NOR through the harness with mtd-utils only: mtdram has no parts=, and
# Debian's kernel has no cmdlinepart, so vm-load-board adds the partitions
# with mtdpart (BLKPG on the master). Checks the partition table, a
# squashfs written with flashcp mounted through mtdblock, and JFFS2 on
# mtdblock after flash_erase -j without cleanmarker complaints.
. "$top_srcdir/tests/lib/vm.sh"

env=$(vm_mtd_by_name env) rootfs=$(vm_mtd_by_name rootfs) data=$(vm_mtd_by_name data)
vm_expect_eq "$(vm_sysfs "${rootfs#/dev/}" size)" $((6 * 1024 * 1024)) "rootfs partition size"
vm_expect_eq "$(vm_sysfs "${rootfs#/dev/}" erasesize)" 65536 "rootfs erasesize"
vm_expect_eq "$(vm_sysfs "${data#/dev/}" size)" $(((16384 - 256 - 6144) * 1024)) "data partition size (the rest)"
vm_expect_eq "$(vm_sysfs "${env#/dev/}" offset)" 0 "env offset"
vm_expect_eq "$(vm_sysfs "${rootfs#/dev/}" offset)" 262144 "rootfs offset"

vm_need_module mtdblock squashfs jffs2
vm_run modprobe mtdblock

mkdir -p /tmp/src/etc /tmp/m
seq 1 20000 >/tmp/src/etc/numbers
echo lower >/tmp/src/etc/hostname
vm_run mksquashfs /tmp/src /tmp/root.sqfs -quiet -noappend -comp xz
vm_run flashcp /tmp/root.sqfs "$rootfs"
vm_run mount -t squashfs -o ro "/dev/mtdblock${rootfs#/dev/mtd}" /tmp/m
cmp /tmp/src/etc/numbers /tmp/m/etc/numbers || vm_fail "file read from squashfs on $rootfs differs"
vm_run umount /tmp/m

vm_run flash_erase -q -j "$data" 0 0
datablk=/dev/mtdblock${data#/dev/mtd}
vm_jffs2_mount_leaves_flash_alone "$data" "$datablk"
vm_run mount -t jffs2 "$datablk" /tmp/m
echo persisted >/tmp/m/f
vm_run umount /tmp/m
vm_run mount -t jffs2 "$datablk" /tmp/m
vm_expect_eq "$(cat /tmp/m/f)" persisted "JFFS2 file after remount"
vm_run umount /tmp/m
echo "mtdram smoke test ok"
