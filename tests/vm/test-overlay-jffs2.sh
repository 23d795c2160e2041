#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# vm-module: mtdram total_size=16384 erase_size=64 --mtdparts=mtdram:6m(rootfs),-(data)
#
# Documents today's kernel behaviour of overlayfs with a JFFS2 upper layer
# (Debian 6.1): JFFS2 has no RENAME_WHITEOUT, so overlayfs mounts with a
# warning; create, modify (copy-up) and delete (whiteout) of lower files
# work and persist across a remount; renaming a lower file fails with
# EINVAL. The lower is a squashfs on NOR read through mtdblock, the upper
# JFFS2 on NOR, as on a flashd board. If a kernel ever supports the rename,
# this test fails on purpose: the limit is gone and the docs must change.
. "$top_srcdir/tests/lib/vm.sh"
vm_need_module mtdblock squashfs jffs2 overlay
vm_run modprobe mtdblock

rootfs=$(vm_mtd_by_name rootfs) data=$(vm_mtd_by_name data)
rootblk=/dev/mtdblock${rootfs#/dev/mtd} datablk=/dev/mtdblock${data#/dev/mtd}

mkdir -p /tmp/src/etc/keep /tmp/lower /tmp/upper /tmp/merged
echo original >/tmp/src/etc/config
echo doomed >/tmp/src/etc/obsolete
echo rename-me >/tmp/src/etc/oldname
echo kept >/tmp/src/etc/keep/file
vm_run mksquashfs /tmp/src /tmp/root.sqfs -quiet -noappend -comp xz
vm_run flashcp /tmp/root.sqfs "$rootfs"
vm_run flash_erase -q -j "$data" 0 0

mount_all() {
	vm_run mount -t squashfs -o ro "$rootblk" /tmp/lower
	vm_run mount -t jffs2 "$datablk" /tmp/upper
	mkdir -p /tmp/upper/upper /tmp/upper/work
	vm_run mount -t overlay overlay \
		-o lowerdir=/tmp/lower,upperdir=/tmp/upper/upper,workdir=/tmp/upper/work /tmp/merged
}
umount_all() {
	vm_run umount /tmp/merged
	vm_run umount /tmp/upper
	vm_run umount /tmp/lower
}

vm_mark
mount_all
if ! vm_dmesg_since_mark | grep -q 'upper fs does not support RENAME_WHITEOUT'; then
	vm_dmesg_since_mark
	vm_fail "overlayfs no longer warns 'upper fs does not support RENAME_WHITEOUT' for a JFFS2 upper on $(uname -r): the kernel limit may be gone; check the rename below, then update docs/harness.md and the overlay documentation"
fi

echo new >/tmp/merged/etc/created || vm_fail "create on the overlay failed"
echo changed >/tmp/merged/etc/config || vm_fail "modify (copy-up) of a lower file failed"
rm /tmp/merged/etc/obsolete || vm_fail "delete (whiteout) of a lower file failed"
mv /tmp/merged/etc/created /tmp/merged/etc/created2 || vm_fail "rename of an upper-only file failed"

# The limit: renaming a file that exists in the lower layer needs a
# whiteout at the old name, atomically with the rename.
if out=$(mv /tmp/merged/etc/oldname /tmp/merged/etc/newname 2>&1); then
	vm_fail "mv of a lower file on overlayfs with a JFFS2 upper SUCCEEDED on kernel $(uname -r): the RENAME_WHITEOUT limit is gone; update docs/harness.md, the overlay documentation and flashd's overlay check"
fi
echo "expected failure: $out"
[ -e /tmp/merged/etc/oldname ] || vm_fail "the failed mv removed etc/oldname from the merged view"
[ -e /tmp/merged/etc/newname ] && vm_fail "the failed mv left a half-done etc/newname"

umount_all
mount_all
vm_expect_eq "$(cat /tmp/merged/etc/created2 2>&1)" new "created (then renamed) file after remount"
vm_expect_eq "$(cat /tmp/merged/etc/config 2>&1)" changed "modified lower file after remount"
[ -e /tmp/merged/etc/obsolete ] && vm_fail "deleted lower file is back after remount (whiteout lost)"
vm_expect_eq "$(cat /tmp/merged/etc/keep/file 2>&1)" kept "untouched lower file"
vm_expect_eq "$(cat /tmp/lower/etc/config)" original "lower layer itself (read-only squashfs)"
umount_all
echo "overlayfs on JFFS2: create/modify/delete persist, rename of a lower file fails (kernel limit still present)"
