#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# vm-layout: layouts/nand-ubi.json
# vm-timeout: 600
#
# flashd boot on UBI: layouts/nand-ubi.json's board (nandsim 256 MiB,
# 128 KiB blocks; the whole "ubi" partition is one UBI device holding
# static volumes for the A/B images and a dynamic UBIFS overlay volume).
#  - the test lays the UBI device out with mtd-utils as the layout says
#    (ubiformat, ubimkvol: static rootfs_a sized to the image, the others
#    at the layout's sizes), writes the squashfs with ubiupdatevol, then
#    detaches UBI: flashd boot attaches it itself (UBI_IOCATT)
#  - --no-exec assembly: root via ubiblock, the block device's content is
#    exactly the image, the union shows the image's files; overlay is
#    UBIFS on ubiX:overlay; the probe reports RENAME_WHITEOUT
#  - `mv` of a file (and a directory) from the image works on UBIFS (on
#    mainline JFFS2 it fails, tests/vm/test-overlay-jffs2.sh)
#  - a file written in the union lands on UBIFS (seen with a plain
#    mount -t ubifs) and survives teardown + re-assembly, as do the renames
#  - factory reset on UBIFS (0-byte volume update): user changes gone, the
#    image's files back, the image and the kernel_a volume untouched
. "$top_srcdir/tests/lib/vm.sh"
. "$top_srcdir/tests/lib/vm-boot.sh"
vm_need_module ubi ubifs squashfs overlay
vm_run modprobe ubi
vm_run modprobe ubifs
[ -e /dev/ubi_ctrl ] || vm_skip "ubi loaded but /dev/ubi_ctrl is missing"
L=$top_srcdir/layouts/nand-ubi.json
ubimtd=$(vm_mtd_by_name ubi)

# ---- the image ------------------------------------------------------------
boot_image /tmp/img
echo original >/tmp/img/etc/config
echo "image A" >/tmp/img/etc/issue
mkdir -p /tmp/img/etc/app.d
echo one >/tmp/img/etc/app.d/one.conf
echo two >/tmp/img/etc/app.d/two.conf
head -c $((1536 * 1024)) /dev/urandom >/tmp/img/etc/random.bin   # several LEBs
vm_mksquashfs /tmp/img /tmp/a.sqfs -all-root
isz=$(stat -c %s /tmp/a.sqfs)

# ---- the UBI device, as the layout describes it ---------------------------
vm_log "ubiformat $ubimtd, volumes from the layout, image into rootfs_a"
vm_run ubiformat -q -y "$ubimtd"
out=$(ubiattach -p "$ubimtd" 2>&1) || vm_fail "ubiattach -p $ubimtd: $out"
ubi=$(sed -n 's/.*UBI device number \([0-9]*\),.*/\1/p' <<<"$out")
[ -n "$ubi" ] || vm_fail "no UBI device number in: $out"
vols=$(jq -r '.ubi[0].volumes[] | "\(.name) \(.size) \(.type)"' "$L")
while read -r name size type; do
	# static image volumes are sized to the image they hold (as an
	# installer would); the others get the layout's size
	[ "$name" = rootfs_a ] && size=$isz
	vm_run ubimkvol "/dev/ubi$ubi" -N "$name" -s "$size" -t "$type"
done <<<"$vols"
avol=
for d in /sys/class/ubi/ubi${ubi}_*; do [ "$(cat "$d/name")" = rootfs_a ] && avol=/dev/${d##*/}; done
[ -n "$avol" ] || vm_fail "no volume rootfs_a on ubi$ubi after ubimkvol"
vm_expect_eq "$(cat "/sys/class/ubi/${avol#/dev/}/type")" static "rootfs_a volume type ($avol)"
vm_run ubiupdatevol "$avol" /tmp/a.sqfs
kvol=/dev/ubi${ubi}_0
vm_expect_eq "$(cat "/sys/class/ubi/ubi${ubi}_0/name")" kernel_a "volume 0"
head -c $((512 * 1024)) /dev/urandom >/tmp/kernel.bin    # stands in for a kernel: the reset must not touch it
vm_run ubiupdatevol "$kvol" /tmp/kernel.bin
vm_run ubidetach -p "$ubimtd"
[ -e "/sys/class/ubi/ubi$ubi" ] && vm_fail "ubi$ubi still attached after ubidetach"

vm_run "$FLASHCTL" env init --layout "$L" FLASHD_A_VERSION=1.0
echo "console=ttyS0 flashd.slot=A" >/tmp/cmdline
# slot init trusts the running slot (A here) and what it reads, not records
vm_run "$FLASHCTL" slot init --layout "$L" --cmdline /tmp/cmdline

# ---- first boot (--no-exec) ---------------------------------------------
vm_log "first boot: flashd attaches UBI, ubiblock root, UBIFS overlay"
st=$(boot_assemble --mode initramfs --layout "$L" --cmdline /tmp/cmdline)
boot_json_parse "$st"
printf '%s\n' "$st"
vm_expect_eq "$(boot_json "$st" .result)" ok "result"
vm_expect_eq "$(boot_json "$st" .slot)" A "booted slot"
vm_expect_eq "$(boot_json "$st" .root.kind)" ubiblock "root device kind"
ubi=$(for d in /sys/class/ubi/ubi[0-9]*; do
	[[ ${d##*/} == *_* ]] && continue
	[ "$(cat "$d/mtd_num")" = "${ubimtd#/dev/mtd}" ] && echo "${d##*/ubi}"
done)
[ -n "$ubi" ] || vm_fail "flashd boot did not attach UBI to $ubimtd: $(ls /sys/class/ubi)"
vm_expect_eq "$(boot_json "$st" .root.source)" "ubi$ubi:rootfs_a" "root source"
dev=$(boot_json "$st" .root.device)
[[ $dev == /dev/ubiblock${ubi}_* ]] || vm_fail "root device $dev is no ubiblock of ubi$ubi"
vm_expect_eq "$(blockdev --getsize64 "$dev")" "$isz" "size of $dev (static volume = image)"
cmp /tmp/a.sqfs "$dev" || vm_fail "$dev differs from the squashfs image"
grep -q "^$dev /tmp/st/root/rom squashfs \|^$dev /tmp/st/rom squashfs " /proc/mounts ||
	vm_fail "$dev is not mounted as squashfs under /tmp/st: $(grep /tmp/st /proc/mounts)"
vm_expect_eq "$(boot_json "$st" .overlay.state)" mounted "overlay state"
vm_expect_eq "$(boot_json "$st" .overlay.fstype)" ubifs "overlay fstype"
vm_expect_eq "$(boot_json "$st" .overlay.source)" "ubi$ubi:overlay" "overlay source"
vm_expect_eq "$(boot_json "$st" .overlay.persistent)" true "overlay persistent"
vm_expect_eq "$(boot_json "$st" .overlay.fallback)" false "no tmpfs fallback"
vm_expect_eq "$(boot_json "$st" .overlay.probe.whiteout)" true "probe: whiteouts on UBIFS"
vm_expect_eq "$(boot_json "$st" .overlay.rename_whiteout)" true "probe: RENAME_WHITEOUT on UBIFS"
vm_expect_eq "$(boot_json "$st" .overlay.probe.rename_whiteout)" true "probe{}: RENAME_WHITEOUT on UBIFS"
vm_expect_eq "$(boot_json "$st" .overlay.generation.name)" gen-A-1.0 "generation"
jq -r '.warnings[]?' <<<"$st" | grep -qi "rename" &&
	vm_fail "a RENAME_WHITEOUT warning on UBIFS: $(jq -c .warnings <<<"$st")"
grep -q " /tmp/st/root overlay " /proc/mounts || vm_fail "no overlay union on /tmp/st/root: $(grep /tmp/st /proc/mounts)"
grep -q "^ubi$ubi:overlay /tmp/st/root/overlay ubifs " /proc/mounts ||
	vm_fail "ubi$ubi:overlay not mounted at /tmp/st/root/overlay: $(grep /tmp/st /proc/mounts)"

# the union shows exactly the image
(cd /tmp/st/root && find . -path ./overlay -prune -o -path ./rom -prune -o -print | sort) >/tmp/union.list
(cd /tmp/img && find . -path ./overlay -prune -o -path ./rom -prune -o -print | sort) >/tmp/img.list
diff /tmp/img.list /tmp/union.list || vm_fail "the union's file list differs from the image's (diff above)"
for f in etc/config etc/issue etc/random.bin etc/app.d/one.conf bin/busybox; do
	cmp "/tmp/img/$f" "/tmp/st/root/$f" || vm_fail "/$f in the union differs from the image"
done

vm_log "writes and renames in the union"
echo changed >/tmp/st/root/etc/config
echo hello >/tmp/st/root/etc/new-file
rm /tmp/st/root/etc/random.bin
mv /tmp/st/root/etc/issue /tmp/st/root/etc/issue.renamed ||
	vm_fail "mv of a file from the image failed on a UBIFS upper"
mv /tmp/st/root/etc/app.d /tmp/st/root/etc/app.moved ||
	vm_fail "mv of a directory from the image failed on a UBIFS upper"
[ -e /tmp/st/root/etc/issue ] && vm_fail "/etc/issue still visible after mv"
vm_expect_eq "$(cat /tmp/st/root/etc/issue.renamed)" "image A" "renamed image file"
vm_expect_eq "$(cat /tmp/st/root/etc/app.moved/two.conf)" two "file in the moved directory"
[ -e /tmp/st/root/etc/app.d ] && vm_fail "/etc/app.d still visible after mv"
up=/tmp/st/root/overlay/gen-A-1.0/upper
[ -f $up/etc/new-file ] || vm_fail "the new file is not in the UBIFS upper ($up)"
[ -c $up/etc/issue ] || vm_fail "no whiteout for the renamed /etc/issue in $up: $(ls -la $up/etc)"
sync
boot_teardown
grep -q " /tmp/st" /proc/mounts && vm_fail "still mounted after teardown: $(grep /tmp/st /proc/mounts)"

# the bytes are on UBIFS, not in some page cache of the union
mkdir -p /tmp/u
vm_run mount -t ubifs "ubi$ubi:overlay" /tmp/u
vm_expect_eq "$(cat /tmp/u/gen-A-1.0/upper/etc/new-file 2>&1)" hello "new file on UBIFS (plain mount)"
vm_expect_eq "$(cat /tmp/u/gen-A-1.0/upper/etc/config 2>&1)" changed "modified file on UBIFS (plain mount)"
vm_run umount /tmp/u

vm_log "second boot: everything persisted"
st=$(boot_assemble --mode initramfs --layout "$L" --cmdline /tmp/cmdline)
boot_json_parse "$st"
vm_expect_eq "$(boot_json "$st" .root.kind)" ubiblock "root device kind (second boot)"
vm_expect_eq "$(boot_json "$st" .overlay.fstype)" ubifs "overlay fstype (second boot)"
vm_expect_eq "$(boot_json "$st" .overlay.generation.boots_before)" 1 "generation boots before"
vm_expect_eq "$(cat /tmp/st/root/etc/config)" changed "modified file after re-assembly"
vm_expect_eq "$(cat /tmp/st/root/etc/new-file)" hello "new file after re-assembly"
[ -e /tmp/st/root/etc/random.bin ] && vm_fail "deleted image file is back after re-assembly"
[ -e /tmp/st/root/etc/issue ] && vm_fail "renamed image file is back under its old name after re-assembly"
vm_expect_eq "$(cat /tmp/st/root/etc/issue.renamed)" "image A" "renamed file after re-assembly"
vm_expect_eq "$(cat /tmp/st/root/etc/app.moved/one.conf)" one "moved directory after re-assembly"
[ -e /tmp/st/root/etc/app.d ] && vm_fail "moved directory is back under its old name after re-assembly"
cmp /tmp/a.sqfs "$(boot_json "$st" .root.device)" || vm_fail "the image changed"
boot_teardown

# ---- factory reset on UBIFS: a 0-byte volume update, UBIFS formats at mount
vm_log "factory reset (FLASHD_OVERLAY_RESET=1) on the UBIFS volume"
boot_factory_reset --mode initramfs --layout "$L" --cmdline /tmp/cmdline
vm_expect_eq "$(boot_json "$st" .overlay.fstype)" ubifs "overlay fstype after the reset"
vm_expect_eq "$(boot_json "$st" .overlay.fallback)" false "no fallback after the reset"
vm_expect_eq "$(boot_json "$st" .overlay.generation.created)" true "generation made again on the empty volume"
vm_expect_eq "$(cat /tmp/st/root/etc/config)" original "config after reset (image version)"
vm_expect_eq "$(cat /tmp/st/root/etc/issue)" "image A" "renamed image file back after reset"
vm_expect_eq "$(cat /tmp/st/root/etc/app.d/one.conf)" one "moved directory back after reset"
[ -e /tmp/st/root/etc/new-file ] && vm_fail "user file survived the factory reset"
[ -e /tmp/st/root/etc/issue.renamed ] && vm_fail "renamed name survived the factory reset"
cmp /tmp/img/etc/random.bin /tmp/st/root/etc/random.bin || vm_fail "deleted image file not back after the reset"
cmp /tmp/a.sqfs "$(boot_json "$st" .root.device)" || vm_fail "the reset changed the image"
"$FLASHCTL" env get -n --layout "$L" FLASHD_OVERLAY_RESET >/dev/null 2>&1 &&
	vm_fail "FLASHD_OVERLAY_RESET still set after the reset"
boot_teardown
cmp -n "$(stat -c %s /tmp/kernel.bin)" /tmp/kernel.bin "$kvol" || vm_fail "the reset touched kernel_a ($kvol)"
vm_expect_eq "$(cat "/sys/class/ubi/ubi${ubi}_0/data_bytes")" "$(stat -c %s /tmp/kernel.bin)" "kernel_a data size after the reset"
echo "flashd boot on UBI: ubiblock root, UBIFS overlay with RENAME_WHITEOUT, renames and writes persist, factory reset ok"
