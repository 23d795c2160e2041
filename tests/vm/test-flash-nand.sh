#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# vm-module: nandsim id_bytes=0x20,0xaa,0x00,0x15 parts=16,128,64
# vm-nandsim-extra: badblocks=20,21,40
#
# flashctl's MTD backend on the kernel's nandsim (256 MiB, 128 KiB blocks,
# 2 KiB pages, 64 B OOB). mtd1 (128 blocks) has blocks 4, 5 and 24 bad.
#  - `flashctl flash info --json` geometry and bad blocks = mtdinfo/kernel
#  - a squashfs written by `flashctl flash write` over the bad blocks reads
#    back identical through nanddump --bb=skipbad and mounts (loop)
#  - `flashctl flash markbad` is seen by the kernel (sysfs, MEMGETBADBLOCK)
#  - after `flashctl flash erase --jffs2` the kernel mounts JFFS2 without
#    re-erasing anything, also on the partition with bad blocks
. "$top_srcdir/tests/lib/vm.sh"
for c in info write markbad erase; do vm_need_flashctl flash "$c"; done

# ---- info vs mtdinfo --------------------------------------------------
for dev in /dev/mtd0 /dev/mtd1 /dev/mtd2; do
	vm_expect_flash_info "$dev" nand
	sys=/sys/class/mtd/${dev#/dev/}
	kbad=$(vm_kernel_bad_blocks "$dev" | tr '\n' ' ')
	vm_expect_eq "$f_bad_blocks" "${kbad% }" "$dev: flashctl bad blocks vs the kernel's"
	set -- $f_bad_blocks
	vm_expect_eq "$#" "$(<"$sys/bad_blocks")" "$dev: flashctl bad block count vs sysfs"
done
vm_expect_eq "$(jq -r '.bad_blocks | map(tostring) | join(" ")' <<<"$("$FLASHCTL" --json flash info /dev/mtd1)")" "4 5 24" \
	"mtd1 bad blocks (nandsim badblocks=20,21,40, partition starts at block 16)"

# ---- squashfs over bad blocks ---------------------------------------------
vm_need_module loop squashfs jffs2
vm_run modprobe loop
mkdir -p /tmp/src
cp -r "$top_srcdir/include" "$top_srcdir/daemon" /tmp/src/ 2>/dev/null
head -c $((4 * 1024 * 1024)) /dev/urandom >/tmp/src/random.bin   # spans blocks 4, 5, 24
vm_mksquashfs /tmp/src /tmp/root.sqfs
size=$(stat -c %s /tmp/root.sqfs)
[ "$size" -gt $((25 * 131072)) ] || vm_fail "test image only $size bytes: it must cross bad block 24"
vm_flashctl flash write /dev/mtd1 /tmp/root.sqfs
vm_run nanddump -q --bb=skipbad -f /tmp/back /dev/mtd1
cmp -n "$size" /tmp/root.sqfs /tmp/back ||
	vm_fail "nanddump --bb=skipbad of /dev/mtd1 differs from the image flashctl wrote ($size bytes)"
head -c "$size" /tmp/back >/tmp/back.sqfs
mkdir -p /tmp/m
vm_run mount -t squashfs -o loop,ro /tmp/back.sqfs /tmp/m
cmp /tmp/src/random.bin /tmp/m/random.bin || vm_fail "random.bin in the read-back squashfs differs"
vm_run umount /tmp/m
# The bad blocks themselves were not written: nandsim still reports them.
vm_expect_eq "$(vm_sysfs mtd1 bad_blocks)" 3 "mtd1 bad blocks after the write"

# ---- markbad -------------------------------------------------------------
vm_flashctl flash markbad /dev/mtd1 $((100 * 131072 + 4096))
vm_expect_eq "$(vm_sysfs mtd1 bad_blocks)" 4 "sysfs bad_blocks of mtd1 after flashctl flash markbad"
vm_expect_eq "$(vm_kernel_bad_blocks /dev/mtd1 | tr '\n' ' ' | sed 's/ $//')" "4 5 24 100" \
	"bad blocks the kernel skips (MEMGETBADBLOCK) after markbad of block 100"
vm_expect_eq "$(jq -r '.bad_blocks | map(tostring) | join(" ")' <<<"$("$FLASHCTL" --json flash info /dev/mtd1)")" "4 5 24 100" \
	"flashctl flash info after markbad"

# ---- erase --jffs2 ------------------------------------------------------
for dev in /dev/mtd2 /dev/mtd1; do
	vm_flashctl flash erase --jffs2 "$dev"
	vm_jffs2_mount_leaves_flash_alone "$dev" "mtd${dev#/dev/mtd}"
	vm_jffs2_keeps_file "mtd${dev#/dev/mtd}" "mtd${dev#/dev/mtd}" "$dev"
done
echo "flashctl on kernel nandsim: info, write over bad blocks, markbad, erase --jffs2 ok"
