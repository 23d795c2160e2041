#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# flashctl provision refuses before it erases: every refusal (geometry, a
# simulator path that is not a regular file, an image larger than its UBI
# volume, a system without MTD or
# booted from a slot, an image larger than its slot or than the slot's
# good blocks, an image of the wrong type, CramFS) is given by the real run
# and by --dry-run alike, with the same exit code (3) and message, and the
# target is byte-identical afterwards.
. "$(dirname "$0")/../lib/common.sh"
top=$top_srcdir
fc=$FLASHCTL
need mksquashfs
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
L=$top/layouts/nandsim-128m.json
NAND=(--type nand --size 128MiB --erase-block 128KiB --page 2048 --oob 64)

mkdir -p "$T/root/etc" "$T/keyring"
echo "VERSION_ID=1.0" >"$T/root/etc/os-release"
head -c 100000 /dev/urandom >"$T/root/data"
mksquashfs "$T/root" "$T/root.sqfs" -noappend -quiet >/dev/null
$fc bundle keygen --out "$T/k" >/dev/null && cp "$T/k.pub" "$T/keyring/"
C=flashd,nandsim-128m
mk() { # NAME IMAGE-ARGS...: a bundle made with --compatible (no layout checks at create)
	local n=$1; shift
	$fc -q bundle create --compatible $C --version 1.0 "$@" --key "$T/k.key" -o "$T/$n.bundle" ||
		check_fail "bundle create $n"
}
mk good --image rootfs="$T/root.sqfs"
head -c 6M /dev/urandom >"$T/big.bin"
mk big --image rootfs="$T/root.sqfs" --image kernel="$T/big.bin"
head -c $((4 * 1024 * 1024 - 4096)) /dev/urandom >"$T/kernel.bin"
mk kernel --image rootfs="$T/root.sqfs" --image kernel="$T/kernel.bin"
mk raw --image rootfs:raw="$T/root.sqfs"
head -c 9M /dev/urandom >"$T/ubibig.bin"

# sims: the right chip, a wrong one, one with bad blocks in kernel-a
$fc -q flash sim-create "$T/good.sim" "${NAND[@]}"
$fc -q flash sim-create "$T/small.sim" --type nand --size 64MiB --erase-block 128KiB
ka=$(( 0x140000 / 131072 ))
$fc -q flash sim-create "$T/badblk.sim" "${NAND[@]}" --bad-blocks "$((ka + 3)),$((ka + 9))"
mkfifo "$T/fifo"

# a sysfs MTD table matching the layout, for "system"
mkdir "$T/sysfs"
$fc --json layout show "$L" | python3 -c '
import json, os, sys
l = json.load(sys.stdin); d = l["devices"][0]
for p in l["partitions"]:
    m = os.path.join(sys.argv[1], "mtd%d" % p["mtd_index"]); os.mkdir(m)
    for k, v in (("name", p["name"]), ("type", "nand"), ("size", p["size"]),
                 ("erasesize", d["erase_block"]), ("writesize", d["page"]),
                 ("oobsize", d["oob"]), ("offset", p["offset"])):
        open(os.path.join(m, k), "w").write("%s\n" % v)' "$T/sysfs"
echo "console=ttyS0 flashd.slot=A root=/dev/mtdblock4" >"$T/cmdline-booted"

# refused WHAT TARGET-FILE MESSAGE-REGEX ARGS...: both runs exit 3 with the
# message and leave TARGET-FILE (- for none) as it was
refused() {
	local what=$1 file=$2 msg=$3 before after rc; shift 3
	before=$( [ "$file" != - ] && [ -f "$file" ] && sha256sum <"$file")
	for dry in "" --dry-run; do
		timeout 60 $fc provision $dry "$@" >"$T/out" 2>&1 </dev/null
		rc=$?
		after=$( [ "$file" != - ] && [ -f "$file" ] && sha256sum <"$file")
		if [ $rc != 3 ]; then
			check_fail "$what ${dry:-(real run)}: exit $rc, expected 3: $(tail -n 3 "$T/out")"
		elif ! grep -qE "$msg" "$T/out"; then
			check_fail "$what ${dry:-(real run)}: message does not match '$msg': $(cat "$T/out")"
		elif [ "$before" != "$after" ]; then
			check_fail "$what ${dry:-(real run)}: $file changed"
		else
			ok "$what ${dry:-(real run)}: exit 3, nothing written"
		fi
	done
}
K=(--keyring "$T/keyring")

refused "oversized image" "$T/good.sim" 'refused, nothing was written: .*"kernel": 6291456 bytes, larger than the slot' \
	--layout "$L" --bundle "$T/big.bundle" "${K[@]}" "sim:$T/good.sim"
refused "image larger than the slot's good blocks" "$T/badblk.sim" \
	'"kernel" \(4190208 bytes\) does not fit in partition kernel-a of slot A: 3932160 bytes in good blocks' \
	--layout "$L" --bundle "$T/kernel.bundle" "${K[@]}" "sim:$T/badblk.sim"
refused "rootfs of type raw into a squashfs slot" "$T/good.sim" '"rootfs" is of type raw; the layout.s slots take a squashfs' \
	--layout "$L" --bundle "$T/raw.bundle" "${K[@]}" "sim:$T/good.sim"
refused "wrong geometry" "$T/small.sim" "geometry does not match" \
	--layout "$L" --bundle "$T/good.bundle" "${K[@]}" "sim:$T/small.sim"
refused "sim:/dev/zero" - "/dev/zero is not a regular file" \
	--layout "$L" --bundle "$T/good.bundle" "${K[@]}" sim:/dev/zero
refused "sim:FIFO" - "is not a regular file" \
	--layout "$L" --bundle "$T/good.bundle" "${K[@]}" "sim:$T/fifo"
# a UBI slot's room is its volume (8 MiB kernel_a), not the UBI partition
C=flashd,nand-ubi mk ubibig --image rootfs="$T/root.sqfs" --image kernel="$T/ubibig.bin"
refused "UBI volume smaller than the image" - '"kernel": 9437184 bytes, larger than the slot' \
	--layout "$top/layouts/nand-ubi.json" --bundle "$T/ubibig.bundle" "${K[@]}" "sim:$T/ubi.sim"
[ -e "$T/ubi.sim" ] && check_fail "UBI layout: the simulator was created"
refused "system without MTD" - "no MTD support" \
	--layout "$L" --bundle "$T/good.bundle" "${K[@]}" --sysfs "$T/no-such-sysfs" system
refused "system booted from slot A" - "running system booted slot A \(flashd.slot\).*erases every slot" \
	--layout "$L" --bundle "$T/good.bundle" "${K[@]}" --sysfs "$T/sysfs" \
	--cmdline "$T/cmdline-booted" system
refused "unknown target" - "unknown target 'tape:x'" \
	--layout "$L" --bundle "$T/good.bundle" "${K[@]}" tape:x
refused "bundle is a FIFO" "$T/good.sim" "is not a regular file" \
	--layout "$L" --bundle "$T/fifo" "${K[@]}" "sim:$T/good.sim"

# CramFS by name: a cramfs superblock as a raw rootfs / kernel
python3 - "$T/root.cramfs" <<'EOF'
import struct, sys
hdr = struct.pack("<IIII16s", 0x28cd3d45, 4096, 0, 0, b"Compressed ROMFS")
open(sys.argv[1], "wb").write(hdr + bytes(4096 - len(hdr)))
EOF
$fc bundle create --compatible $C --version 1.0 --image kernel="$T/root.cramfs" --image rootfs="$T/root.sqfs" \
	--key "$T/k.key" -o "$T/cramfs.bundle" >"$T/out" 2>&1
rc=$?
[ $rc = 3 ] && grep -q "CramFS image (magic 0x28cd3d45): the reference kernel has no cramfs" "$T/out" &&
	[ ! -e "$T/cramfs.bundle" ] && ok "bundle create refuses CramFS by name" ||
	check_fail "bundle create CramFS: exit $rc: $(cat "$T/out")"

# and a good provision still works after all that, on the refused sims
$fc -q provision --layout "$L" --bundle "$T/good.bundle" "${K[@]}" "sim:$T/good.sim" &&
	ok "good bundle provisions" || check_fail "good bundle does not provision"
[ "$($fc slot boot-select --layout "$L" --target "sim:$T/good.sim")" = flashd.slot=A ] &&
	ok "boots A" || check_fail "boot selection after provisioning"

check_done
say "all provisioning refusals checked"
