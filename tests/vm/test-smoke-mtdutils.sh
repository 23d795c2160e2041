#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# vm-module: nandsim id_bytes=0x20,0xaa,0x00,0x15 parts=16,64
# vm-nandsim-extra: badblocks=3
#
# The harness itself, with mtd-utils only: a 128 MiB nandsim (128 KiB
# blocks, 2 KiB pages) with two partitions and block 3 bad; erase, write,
# read back, JFFS2 mount with cleanmarkers.
. "$top_srcdir/tests/lib/vm.sh"

vm_expect_eq "$(vm_sysfs mtd0 type)" nand "mtd0 type"
vm_expect_eq "$(vm_sysfs mtd0 erasesize)" 131072 "mtd0 erasesize"
vm_expect_eq "$(vm_sysfs mtd0 writesize)" 2048 "mtd0 writesize"
vm_expect_eq "$(vm_sysfs mtd0 size)" $((16 * 131072)) "mtd0 size (parts=16)"
vm_expect_eq "$(vm_sysfs mtd1 size)" $((64 * 131072)) "mtd1 size (parts=64)"
vm_expect_eq "$(vm_sysfs mtd0 bad_blocks)" 1 "mtd0 bad_blocks (badblocks=3)"
mtdinfo /dev/mtd0 | grep -q 'Amount of eraseblocks: *16 ' || vm_fail "mtdinfo /dev/mtd0 disagrees: $(mtdinfo /dev/mtd0)"

# 1 MiB of random data over the bad block: nandwrite skips it, nanddump
# --bb=skipbad skips it the same way, the data comes back identical.
head -c $((1024 * 1024)) /dev/urandom >/tmp/data
vm_run flash_erase -q /dev/mtd0 0 16
vm_run nandwrite -q -p /dev/mtd0 /tmp/data
vm_run nanddump -q --bb=skipbad -l $((1024 * 1024)) -f /tmp/back /dev/mtd0
cmp -n $((1024 * 1024)) /tmp/data /tmp/back || vm_fail "nanddump read back differs from what nandwrite wrote"

# JFFS2 on mtd1 after flash_erase -j: the kernel finds cleanmarkers
# everywhere and leaves the flash alone; a file persists across remount.
vm_run flash_erase -q -j /dev/mtd1 0 0
vm_jffs2_mount_leaves_flash_alone /dev/mtd1 mtd1
vm_run mount -t jffs2 mtd1 /mnt
echo hello >/mnt/f
vm_run umount /mnt
vm_run mount -t jffs2 mtd1 /mnt
vm_expect_eq "$(cat /mnt/f)" hello "file content after remount"
vm_run umount /mnt
echo "smoke test ok"
