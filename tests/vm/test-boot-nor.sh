#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# vm-module: mtdram total_size=32768 erase_size=64 --mtdparts=mtdram:64k(u-boot-env),64k(u-boot-env-redund),12m(rootfs-a),12m(rootfs-b),-(rootfs_data)
# vm-timeout: 240
#
# flashd boot in preinit mode on NOR (mtdram, 64 KiB blocks): the image
# (busybox, flashd and its libraries, the layout) is mounted from slot A
# through mtdblock as the root of a child mount namespace, as the kernel
# would with root=/dev/mtdblockN; flashd boot --mode preinit mounts the
# JFFS2 overlay, builds the union over /, pivot_root's into it with the
# old root at /rom and execs the image's /sbin/init, which checks the
# union. Run twice: the second init finds the first one's file (it
# survived the teardown of everything). Then the tmpfs-by-layout and
# read-only cases are not exercised here (see test-boot-nand.sh).
# The layout is written by the test (the image with flashd's libraries
# needs more than nor-router-16m's 5 MiB slots).
. "$top_srcdir/tests/lib/vm.sh"
. "$top_srcdir/tests/lib/vm-boot.sh"
vm_need_module mtdblock squashfs jffs2 overlay
vm_run modprobe mtdblock
L=/tmp/nor32.json
cat >$L <<'EOT'
{
	"board": "32 MiB NOR (mtdram) for the preinit test",
	"compatible": "flashd,test-nor32",
	"devices": [ { "name": "nor0", "type": "nor", "size": "32MiB", "erase_block": "64KiB",
		       "mtd_id": "mtdram test device" } ],
	"partitions": [
		{ "name": "u-boot-env",        "offset": "0x0000000", "size": "64KiB" },
		{ "name": "u-boot-env-redund", "offset": "0x0010000", "size": "64KiB" },
		{ "name": "rootfs-a",          "offset": "0x0020000", "size": "12MiB" },
		{ "name": "rootfs-b",          "offset": "0x0c20000", "size": "12MiB" },
		{ "name": "rootfs_data",       "offset": "0x1820000", "size": "-" }
	],
	"env": { "copies": [
		{ "partition": "u-boot-env",        "offset": "0", "size": "0x10000" },
		{ "partition": "u-boot-env-redund", "offset": "0", "size": "0x10000" } ] },
	"slots": [ { "name": "rootfs", "image": "squashfs", "slots": {
		"A": { "rootfs": { "storage": "nor", "partition": "rootfs-a" } },
		"B": { "rootfs": { "storage": "nor", "partition": "rootfs-b" } } } } ],
	"overlays": [ { "path": "/", "type": "jffs2", "partition": "rootfs_data" } ]
}
EOT
vm_run "$FLASHCTL" layout check "$L"
rootfs=$(vm_mtd_by_name rootfs-a) data=$(vm_mtd_by_name rootfs_data)
rootblk=/dev/mtdblock${rootfs#/dev/mtd}

boot_image /tmp/img
boot_add_flashd /tmp/img
cp "$L" "/tmp/img$BOOT_LAYOUT"
echo original >/tmp/img/etc/config
cat >/tmp/img/sbin/init <<'EOT'
#!/bin/sh
echo "init: config=$(cat /etc/config)"
grep -q ' / overlay ' /proc/mounts && echo "init: / is overlay"
grep -q ' /rom squashfs ' /proc/mounts && echo "init: /rom is squashfs"
grep -q ' /overlay jffs2 ' /proc/mounts && echo "init: /overlay is jffs2"
[ -s /run/flashd/boot.json ] && echo "init: state file present"
[ -e /etc/from-first-boot ] && echo "init: found $(cat /etc/from-first-boot)"
echo "first boot" >/etc/from-first-boot
echo changed >/etc/config
rm /etc/doomed && echo "init: deleted an image file"
mv /etc/doomed2 /etc/renamed 2>/dev/null && echo "init: renamed an image file" ||
	echo "init: rename of an image file failed"
echo "init: done"
EOT
chmod 755 /tmp/img/sbin/init
echo bye >/tmp/img/etc/doomed
echo bye >/tmp/img/etc/doomed2
vm_mksquashfs /tmp/img /tmp/a.sqfs -all-root
vm_log "image $(stat -c %s /tmp/a.sqfs) bytes"
vm_flashctl flash write "$rootfs" /tmp/a.sqfs
# libubootenv 0.3.2 refuses mtdram's MTD_RAM type ("Invalid argument"),
# so this board has no usable env: flashd boot must carry on without it
# (generation named by the slot only, no cleanup of old generations).
vm_run flash_erase -q "$data" 0 0

mkdir -p /tmp/pre
preinit_boot() {
	unshare -m --propagation private sh -c "
		mount -t squashfs -o ro $rootblk /tmp/pre &&
		mount -t proc proc /tmp/pre/proc && mount -t sysfs sysfs /tmp/pre/sys &&
		mount -t devtmpfs devtmpfs /tmp/pre/dev &&
		exec chroot /tmp/pre /usr/sbin/flashd boot --mode preinit --slot A" 2>&1 </dev/null
}

vm_log "preinit with / from slot A's partition but slot B named: refused (issue 14.8)"
out=$(unshare -m --propagation private sh -c "
	mount -t squashfs -o ro $rootblk /tmp/pre &&
	mount -t proc proc /tmp/pre/proc && mount -t sysfs sysfs /tmp/pre/sys &&
	mount -t devtmpfs devtmpfs /tmp/pre/dev &&
	exec chroot /tmp/pre /usr/sbin/flashd boot --mode preinit --slot B --state /dev/boot.json" 2>&1 </dev/null) &&
	vm_fail "preinit assembled slot B over slot A's image: $out"
grep -q "refusing to put slot B's generation over another image" <<<"$out" ||
	vm_fail "preinit mismatch: no clear refusal: $out"

vm_log "preinit boot 1"
out=$(preinit_boot) || vm_fail "preinit boot failed: $out"
printf '%s\n' "$out"
for want in "init: config=original" "init: / is overlay" "init: /rom is squashfs" \
	    "init: /overlay is jffs2" "init: state file present" "init: deleted an image file" \
	    "init: rename of an image file failed" "init: done"; do
	grep -qxF "$want" <<<"$out" || vm_fail "preinit boot 1: missing '$want'"
done
grep -q "RENAME_WHITEOUT" <<<"$out" || vm_fail "flashd boot did not warn about RENAME_WHITEOUT on JFFS2"
grep -q "U-Boot env not readable" <<<"$out" || vm_fail "flashd boot did not say that the env is unusable"

vm_log "preinit boot 2"
out=$(preinit_boot) || vm_fail "preinit boot 2 failed: $out"
printf '%s\n' "$out"
for want in "init: config=changed" "init: found first boot" "init: done"; do
	grep -qxF "$want" <<<"$out" || vm_fail "preinit boot 2: missing '$want'"
done
grep -q "init: deleted an image file" <<<"$out" && vm_fail "deleted image file came back"

mkdir -p /tmp/j
vm_run mount -t jffs2 "mtd${data#/dev/mtd}" /tmp/j
vm_expect_eq "$(cat /tmp/j/gen-A-unknown/upper/etc/from-first-boot 2>&1)" "first boot" "file on JFFS2"
vm_expect_eq "$(cat /tmp/j/gen-A-unknown/flashd-gen | sed -n 's/^boots=//p')" 2 "boots of generation gen-A-unknown"
vm_run umount /tmp/j
echo "flashd boot preinit on NOR: pivot_root into the JFFS2 union ok"
