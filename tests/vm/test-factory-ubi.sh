#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# vm-layout: tests/vm/layouts/nand-ubi-64m-factory.json
# vm-nandsim-extra: badblocks=14
# vm-timeout: 600
#
# A factory image of a UBI board on the kernel's nandsim (issue 19): a
# 64 MiB chip (the image and the chip must fit the guest's RAM) with erase
# block 14 bad -- PEB 2 of the "ubi" partition (blocks 12-511), inside
# kernel_a's LEBs of the UBI image.
#  - flashctl provision --both-slots image:PREFIX makes the data+OOB image
#    (the UBI image with ubinize semantics inside, tests/cli/test-provision-ubi-image)
#  - the env copies and the UBI partition's PEBs (the report's ubi_pebs)
#    written with nandwrite -o, partition by partition; nandwrite skips the
#    bad block and UBI finds its PEBs wherever they landed
#  - ubiattach: 5 volumes with the layout's ids and types, the bad block
#    counted, both slots' volumes hold the images, the overlay grew at
#    attach (autoresize); detached again
#  - the env boots A; flashd boot attaches the UBI itself, mounts rootfs_a
#    through ubiblock as squashfs and the UBIFS overlay (formatted at its
#    first mount); a file written in the union is on UBIFS afterwards
. "$top_srcdir/tests/lib/vm.sh"
. "$top_srcdir/tests/lib/vm-boot.sh"
. "$top_srcdir/tests/lib/vm-ubi.sh"
UBI_LAYOUT=$top_srcdir/tests/vm/layouts/nand-ubi-64m-factory.json
L=$UBI_LAYOUT
ubi_setup
command -v nandwrite >/dev/null || vm_skip "nandwrite (mtd-utils) missing"
ubi_workdir /tmp/fu
EB=131072
OOB_EB=$((EB / 2048 * (2048 + 64)))    # an erase block in the data+OOB image

# part NAME FIELD: a field of the report's partition (null: none); the
# report is read once by part_read (jq starts in ~0.3 s under TCG)
declare -A PART=()
part_read() {
	local assigns
	assigns=$(jq -r '.partitions[] | .name as $n | to_entries[]
		| select(.value | type != "object" and type != "array")
		| "PART[" + ("\($n).\(.key)" | @sh) + "]=" + (.value | tostring | @sh)' $T/f.json) ||
		vm_fail "the report $T/f.json: $(cat $T/f.json)"
	eval "$assigns"
}
part() { echo "${PART[$1.$2]-null}"; }
# nandwrite -o N erase blocks of the data+OOB image from the partition's start
program() { # PARTITION BLOCKS
	dd if=$T/f.oob.bin of=$T/part.oob bs=$OOB_EB skip=$(( $(part "$1" offset) / EB )) count="$2" \
		2>/dev/null || vm_fail "dd $1"
	vm_run nandwrite -q -o "$(vm_mtd_by_name "$1")" $T/part.oob
	rm -f $T/part.oob
}

ubi_bundle 1.0 3

vm_log "factory image: provision --both-slots image:"
vm_run "$FLASHCTL" provision --both-slots --layout "$L" --bundle $T/1.0.bundle --keyring $T/keyring \
	image:$T/f
rm -f $T/f.bin $T/f.*.ubi
part_read
pebs=$(part ubi ubi_pebs)
[ "$pebs" -gt 2 ] || vm_fail "the report has no ubi_pebs for the UBI partition: $(cat $T/f.json)"
jq -e '[.must_be_good[] | select(. >= 12)] | length == 0' $T/f.json >/dev/null ||
	vm_fail "must_be_good lists blocks of the UBI partition (UBI places its PEBs itself)"

vm_log "nandwrite -o: the env copies, then the UBI image's $pebs PEBs over the bad block"
for p in u-boot-env u-boot-env-redund; do program $p $(( $(part $p size) / EB )); done
program ubi "$pebs"
rm -f $T/f.oob.bin

vm_log "ubiattach"
vm_run ubiattach -p "$UBI_MTD"
u=$(ubi_num)
[ -n "$u" ] || vm_fail "UBI not attached"
vm_expect_eq "$(cat /sys/class/ubi/ubi$u/volumes_count)" 5 "volumes"
vm_expect_eq "$(cat /sys/class/ubi/ubi$u/bad_peb_count)" 1 "UBI's bad PEB count (block 14)"
i=0
for v in kernel_a rootfs_a kernel_b rootfs_b overlay; do
	vm_expect_eq "$(basename "$(ubi_vol $v)")" "ubi${u}_$i" "volume id of $v (the layout's index)"
	i=$((i + 1))
done
for v in kernel_a rootfs_a kernel_b rootfs_b; do vm_expect_eq "$(ubi_vattr $v type)" static "type of $v"; done
vm_expect_eq "$(ubi_vattr overlay type)" dynamic "type of overlay"
ubi_holds kernel_a $T/1.0.kernel
ubi_holds rootfs_a $T/1.0.sqfs
ubi_holds kernel_b $T/1.0.kernel
ubi_holds rootfs_b $T/1.0.sqfs
lebs=$(ubi_vattr overlay reserved_ebs)
[ "$lebs" -gt 67 ] || vm_fail "overlay: $lebs LEBs, the autoresize flag did not grow it beyond 8 MiB (67)"
echo "ok: overlay grew to $lebs LEBs at attach (autoresize)"
dmesg | grep -E "ubi[0-9]* (error|warning)|bad (EC|VID) header|bad image sequence" &&
	vm_fail "UBI complained at attach"
dmesg | grep -q "ubi$u: good PEBs: 499, bad PEBs: 1, corrupted PEBs: 0" ||
	vm_fail "UBI's scan: $(dmesg | grep "ubi$u: good PEBs")"
vm_run ubidetach -p "$UBI_MTD"

vm_log "first boot: the env's choice, flashd boot attaches UBI and assembles the root"
sel=$("$FLASHCTL" slot boot-select --layout "$L" --target system)
vm_expect_eq "$sel" flashd.slot=A "boot choice of the factory env"
echo "$sel" >$T/cmdline
st=$(boot_assemble --mode initramfs --layout "$L" --cmdline $T/cmdline)
boot_json_parse "$st"
u=$(ubi_num)
vm_expect_eq "$(boot_json "$st" .root.kind)" ubiblock "root kind"
vm_expect_eq "$(boot_json "$st" .root.source)" "ubi$u:rootfs_a" "root source"
vm_expect_eq "$(boot_json "$st" .overlay.fstype)" ubifs "overlay fstype"
cmp /tmp/st/root/payload $T/1.0/payload || vm_fail "the union's payload is not 1.0's"
echo "written at the first boot" >/tmp/st/root/etc/user-file || vm_fail "union not writable"
sync
boot_teardown
mkdir -p /tmp/u
vm_run mount -t ubifs "ubi$u:overlay" /tmp/u
grep -rqs "written at the first boot" /tmp/u || vm_fail "the file written in the union is not on UBIFS"
vm_run umount /tmp/u
echo "UBI factory image: nandwrite -o over a bad block, attached, booted slot A with the UBIFS overlay"
