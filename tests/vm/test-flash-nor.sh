#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# vm-module: mtdram total_size=16384 erase_size=64 --mtdparts=mtdram:256k(env),8m(rootfs),-(data)
#
# flashctl's MTD backend on NOR-like flash: the kernel's mtdram (16 MiB,
# 64 KiB blocks), partitioned by vm-load-board through mtdpart.
#  - `flashctl flash info --json` geometry = mtdinfo/sysfs
#  - a squashfs written by `flashctl flash write` to the rootfs partition
#    mounts through mtdblock and has the same files
#  - `flashctl flash erase --jffs2` writes the in-band cleanmarker
#    (0x1985/0x2003/12) at every block start; the kernel mounts JFFS2 on
#    it through mtdblock and directly without re-erasing anything
. "$top_srcdir/tests/lib/vm.sh"
for c in info write erase; do vm_need_flashctl flash "$c"; done
vm_need_module mtdblock squashfs jffs2
vm_run modprobe mtdblock

env=$(vm_mtd_by_name env) rootfs=$(vm_mtd_by_name rootfs) data=$(vm_mtd_by_name data)

# ---- info vs mtdinfo --------------------------------------------------
for dev in "$env" "$rootfs" "$data"; do
	# mtdram registers as MTD_RAM ("ram"); flashd treats it as NOR.
	vm_expect_flash_info "$dev" nor
	vm_expect_eq "$f_bad_blocks" "" "$dev: bad blocks on NOR"
done
vm_expect_eq "$(vm_json_get "$("$FLASHCTL" --json flash info "mtd:rootfs")" .size)" $((8 * 1024 * 1024)) \
	"flashctl flash info mtd:rootfs (lookup by name)"

# ---- squashfs through mtdblock --------------------------------------------
mkdir -p /tmp/src /tmp/m
cp -r "$top_srcdir/include" "$top_srcdir/daemon" /tmp/src/ 2>/dev/null
head -c $((2 * 1024 * 1024)) /dev/urandom >/tmp/src/random.bin
vm_mksquashfs /tmp/src /tmp/root.sqfs
# Leave garbage behind the image so that a write that does not erase
# (or writes the wrong range) is noticed by the squashfs read.
head -c $((8 * 1024 * 1024)) /dev/urandom >/tmp/junk
vm_run flashcp /tmp/junk "$rootfs"
vm_flashctl flash write "$rootfs" /tmp/root.sqfs
size=$(stat -c %s /tmp/root.sqfs)
cmp -n "$size" /tmp/root.sqfs "$rootfs" || vm_fail "$rootfs does not hold the image flashctl wrote"
vm_run mount -t squashfs -o ro "/dev/mtdblock${rootfs#/dev/mtd}" /tmp/m
diff -r /tmp/src /tmp/m || vm_fail "squashfs mounted from mtdblock${rootfs#/dev/mtd} differs from its source"
vm_run umount /tmp/m

# ---- erase --jffs2 ------------------------------------------------------
head -c "$(vm_sysfs "${data#/dev/}" size)" /dev/urandom >/tmp/junk2
vm_run flashcp /tmp/junk2 "$data"
vm_flashctl flash erase --jffs2 "$data"
es=$(vm_sysfs "${data#/dev/}" erasesize) n=$(( $(vm_sysfs "${data#/dev/}" size) / es ))
# Expected: every block = the 12-byte cleanmarker of block 0 + 0xFF.
cat "$data" >/tmp/data.raw
hdr=$(head -c 12 /tmp/data.raw | od -An -tx1 | tr -d ' \n')
case "$hdr" in
851903200c000000????????) ;;
*) vm_fail "$data block 0: no JFFS2 cleanmarker (magic 1985, type 2003, totlen 12) at its start: $hdr" ;;
esac
{ head -c 12 /tmp/data.raw; head -c $((es - 12)) /dev/zero | tr '\0' '\377'; } >/tmp/block
for ((b = 0; b < n; b++)); do echo /tmp/block; done | xargs cat >/tmp/data.expected
if ! first=$(cmp /tmp/data.raw /tmp/data.expected); then
	off=$(cmp /tmp/data.raw /tmp/data.expected | sed -n 's/.* byte \([0-9]*\).*/\1/p')
	vm_fail "$data: block $(( (off - 1) / es )) differs from cleanmarker + erased ($first)"
fi
datablk=/dev/mtdblock${data#/dev/mtd}
vm_jffs2_mount_leaves_flash_alone "$data" "$datablk"
vm_jffs2_mount_leaves_flash_alone "$data" "mtd${data#/dev/mtd}"
vm_jffs2_keeps_file "$datablk" "mtd${data#/dev/mtd}" "$data"
echo "flashctl on kernel mtdram: info, squashfs write + mtdblock mount, erase --jffs2 ok"
