#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# flashctl provision of the UBI board (layouts/nand-ubi.json) without the
# kernel's UBI: the factory image (image:) holds the UBI image that ubinize
# makes for the layout's volume table and the bundle's images, byte for
# byte (PREFIX.ubi.ubi and inside PREFIX.bin at the partition's offset);
# a simulator (sim:) with bad blocks in the UBI partition gets the same
# PEBs in its good blocks; the env boots slot A with the images verified;
# the dry run says so and writes nothing.
. "$(dirname "$0")/../lib/common.sh"
top=$top_srcdir
fc=$FLASHCTL
need mksquashfs ubinize
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
L=$top/layouts/nand-ubi.json
EB=131072
UBI_OFF=$((0x300000))

mkdir -p "$T/root/etc" "$T/keyring"
echo "VERSION_ID=1.0" >"$T/root/etc/os-release"
head -c 2500000 /dev/urandom >"$T/root/data"
mksquashfs "$T/root" "$T/root.sqfs" -noappend -quiet >/dev/null
head -c 300017 /dev/urandom >"$T/kernel"
$fc bundle keygen --out "$T/k" >/dev/null && cp "$T/k.pub" "$T/keyring/"
$fc -q bundle create --layout "$L" --version 1.0 --image rootfs="$T/root.sqfs" \
	--image kernel="$T/kernel" --key "$T/k.key" -o "$T/b.bundle" || fail "bundle create"
K=(--layout "$L" --bundle "$T/b.bundle" --keyring "$T/keyring")

# ---- dry run -----------------------------------------------------------------
$fc provision --dry-run --both-slots "${K[@]}" "image:$T/f" >"$T/dry" 2>&1
check "dry run: exit 0" [ $? = 0 ]
check "dry run: the UBI partition gets the UBI image" \
	grep -qE "^  ubi .*ubi-image UBI image \(ubinize semantics\).*rootfs of slot B into rootfs_b" "$T/dry"
check "dry run: nothing written" test ! -e "$T/f.bin" -a ! -e "$T/f.ubi.ubi"

# ---- factory image against ubinize ------------------------------------------
$fc provision --both-slots "${K[@]}" "image:$T/f" >"$T/out" 2>&1 ||
	fail "provision image: $(cat "$T/out")"
check "factory image: done, slot A first" grep -q "^Done: slot A boots first" "$T/out"
seq=$(od -An -tu4 --endian=big -j24 -N4 "$T/f.ubi.ubi" | tr -d ' ')
{
	i=0
	for v in kernel_a:static:8MiB:kernel rootfs_a:static:96MiB:root.sqfs \
		 kernel_b:static:8MiB:kernel rootfs_b:static:96MiB:root.sqfs overlay:dynamic:24MiB:; do
		IFS=: read -r name type size img <<<"$v"
		printf '[%s]\nmode=ubi\nvol_id=%d\nvol_type=%s\nvol_name=%s\nvol_size=%s\n' \
			"$name" $i "$type" "$name" "$size"
		[ -n "$img" ] && echo "image=$T/$img"
		i=$((i + 1))
	done
} >"$T/ubi.ini"
ubinize -o "$T/ref.ubi" -p 128KiB -m 2048 -s 512 -Q "$seq" "$T/ubi.ini" >/dev/null 2>&1 ||
	fail "ubinize failed"
check "factory image: PREFIX.ubi.ubi is ubinize's image byte for byte" cmp "$T/ref.ubi" "$T/f.ubi.ubi"
pebs=$(( $(stat -c %s "$T/ref.ubi") / EB ))
check "factory image: the report gives the UBI image's PEBs" \
	[ "$(jq -r '.partitions[] | select(.name=="ubi") | .ubi_pebs' "$T/f.json")" = "$pebs" ]
check "factory image: the data image holds it at the partition's offset" \
	cmp -n $((pebs * EB)) "$T/ref.ubi" <(tail -c +$((UBI_OFF + 1)) "$T/f.bin")
check "factory image: the rest of the partition is erased" \
	cmp -s <(tail -c +$((UBI_OFF + pebs * EB + 1)) "$T/f.bin") \
	       <(head -c $((256 * 1024 * 1024 - UBI_OFF - pebs * EB)) /dev/zero | tr '\0' '\377')
# the same bundle and layout make the same image (image_seq from the bundle)
$fc provision --both-slots "${K[@]}" "image:$T/g" >/dev/null 2>&1 || fail "second provision"
check "factory image: reproducible" cmp "$T/f.bin" "$T/g.bin"
rm -f "$T"/g.*

# ---- simulator with bad blocks in the UBI partition -------------------------
# blocks 25 and 30: PEB 1 (the second volume table copy) and PEB 6 of the image
S=$T/s.sim
$fc -q flash sim-create "$S" --type nand --size 256MiB --erase-block 128KiB --page 2048 --oob 64 \
	--bad-blocks 25,30 || fail "sim-create"
$fc provision --both-slots "${K[@]}" "sim:$S" >"$T/out" 2>&1 || fail "provision sim: $(cat "$T/out")"
check "sim: the bad blocks are reported" grep -qE "^  ubi .*\[2 bad\]" "$T/out"
# the good blocks of the partition, in order (nanddump --bb=skipbad), hold
# the UBI image's PEBs
$fc -q flash read --offset $UBI_OFF --length $((pebs * EB)) "sim:$S" "$T/good-blocks" ||
	fail "flash read"
check "sim: the UBI image's PEBs are in the partition's good blocks" \
	cmp -n $((pebs * EB)) "$T/ref.ubi" "$T/good-blocks"
$fc --json slot status --layout "$L" --target "sim:$S" >"$T/slots.json" || fail "slot status"
check "sim: both slots verified, A boots first" python3 -c 'import json,sys
s=json.load(open(sys.argv[1]))
assert s["next_boot"] == "A" and s["boot_order"] == "A B", s
assert [x["state"] for x in s["slots"]] == ["pending", "pending"], s' "$T/slots.json"
check_done
