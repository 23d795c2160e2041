#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# vm-timeout: 600
#
# Provisioning and installs on the kernel's flash drivers (issues 5, 6, 10):
#  NAND (nandsim, layouts/nandsim-128m.json, a bad block inside rootfs-b):
#   - flashctl provision ... system lays the board out through /dev/mtd*;
#     nanddump --bb=skipbad of slot A equals the image; JFFS2 mounts on the
#     overlay without re-erasing anything; fw_printenv reads the env
#   - flashd (target=system) installs a bundle streamed through
#     `flashctl install -`; nanddump of slot B (over its bad block) equals
#     the image; the boot script's choice is B
#  NOR (mtdram, layouts/nor-router-16m.json):
#   - the factory image from `provision image:` written to the whole chip
#     with flashcp; the layout's partitions added (mtdpart); the slot reads
#     back identical, squashfs mounts through mtdblock, JFFS2 mounts
#     cleanly, flashd boot assembles the union from it
#  NAND factory image: data+OOB written with nandwrite -o to the whole
#   chip (nandsim without parts=); the slot and the cleanmarkers read back.
. "$top_srcdir/tests/lib/vm.sh"
. "$TEST_LIB/daemon.sh"
vm_need_module nandsim mtdram squashfs jffs2 overlay
FLASHD=$top_builddir/flashd
T=/tmp/pi
rm -rf $T; mkdir -p $T/keyring $T/state
export FLASHD_SOCKET=$T/flashd.sock
FLASHD_DIR=$T
trap stop_daemon EXIT

mkimg() { # NAME MIB
	mkdir -p $T/$1/etc
	echo "VERSION_ID=$1" >$T/$1/etc/os-release
	head -c $(($2 * 1024 * 1024)) /dev/urandom >$T/$1/payload
	vm_mksquashfs $T/$1 $T/$1.sqfs
}
bundle() { # NAME LAYOUT
	vm_run "$FLASHCTL" -q bundle create --layout "$2" --version "$1" \
		--image rootfs=$T/$1.sqfs --key $T/k.key -o "$T/$1-$(b=${2##*/}; echo "${b%.json}").bundle"
}
same_as_image() { # DEVICE IMAGE WHAT
	local n; n=$(stat -c %s "$2")
	# NAND through nanddump, over its bad blocks; NOR (mtdram: "ram") as
	# it is: nanddump reads NOR a write size, one byte, per read(2), which
	# took 21 s for 3 MiB under TCG
	case "$(cat "/sys/class/mtd/${1#/dev/}/type")" in
	*nand) nanddump -q --bb=skipbad -l "$n" -f $T/dump "$1" || vm_fail "$3: nanddump $1" ;;
	*) head -c "$n" "$1" >$T/dump ;;
	esac
	cmp -s -n "$n" $T/dump "$2" || vm_fail "$3: $1 does not hold the image"
	echo "ok: $3"
}

vm_run "$FLASHCTL" -q bundle keygen --out $T/k
cp $T/k.pub $T/keyring/
mkimg 1.0 3
mkimg 2.0 4
NL=$top_srcdir/layouts/nandsim-128m.json
OL=$top_srcdir/layouts/nor-router-16m.json
bundle 1.0 "$NL"; bundle 2.0 "$NL"; bundle 1.0 "$OL"

# ---- NAND: provision through /dev/mtd*, then install through flashd --------
vm_log "NAND: provision system, block 400 (inside rootfs-b) bad"
vm-load-board "$NL" badblocks=400 >/dev/null || vm_fail "vm-load-board"
vm_run "$FLASHCTL" provision --layout "$NL" --bundle $T/1.0-nandsim-128m.bundle \
	--keyring $T/keyring system
same_as_image "$(vm_mtd_by_name rootfs-a)" $T/1.0.sqfs "provisioned slot A (nanddump)"
data=$(vm_mtd_by_name rootfs_data)
vm_jffs2_mount_leaves_flash_alone "$data" "mtd${data#/dev/mtd}"
echo "ok: JFFS2 overlay mounts with no re-erase"
printf '%s 0x0 0x20000\n%s 0x0 0x20000\n' "$(vm_mtd_by_name u-boot-env)" \
	"$(vm_mtd_by_name u-boot-env-redund)" >$T/fw_env.config
vm_expect_eq "$(fw_printenv -c $T/fw_env.config -n BOOT_ORDER)" A "fw_printenv BOOT_ORDER"

echo flashd.slot=A >$T/cmdline
LAYOUT=$NL TARGET=system
flashd_conf
start_daemon
vm_log "install streamed through flashctl install -"
cat $T/2.0-nandsim-128m.bundle | "$FLASHCTL" install - >$T/install.out 2>&1 ||
	vm_fail "flashctl install - failed: $(cat $T/install.out) $(cat $T/flashd.log)"
grep -q "Installed version 2.0 into slot B" $T/install.out || vm_fail "install output: $(cat $T/install.out)"
st=$("$FLASHCTL" --json status) || vm_fail "status"
# the three fields in one jq run (process start-up is slow under TCG)
{ read -r b_version; read -r next_boot; read -r b_bad; } <<<"$(jq -r '
	([.slots[] | select(.name=="B") | .version] | map(tostring) | join(" ")),
	.next_boot,
	([.flash[] | select(.name=="rootfs-b") | .bad_blocks] | map(tostring) | join(" "))' <<<"$st")"
vm_expect_eq "$b_version" 2.0 "status: B version"
vm_expect_eq "$next_boot" B "status: next boot"
vm_expect_eq "$b_bad" 1 "status: the kernel's bad block in rootfs-b"
stop_daemon
same_as_image "$(vm_mtd_by_name rootfs-b)" $T/2.0.sqfs "installed slot B over its bad block (nanddump)"
vm_expect_eq "$("$FLASHCTL" slot boot-select --layout "$NL" --target system)" flashd.slot=B \
	"boot script's choice after the install"
vm-load-board --unload

# ---- NOR factory image into mtdram, then boot assembly ----------------------
vm_log "NOR: factory image -> flashcp -> partitions -> flashd boot"
vm_run "$FLASHCTL" provision --layout "$OL" --bundle $T/1.0-nor-router-16m.bundle \
	--keyring $T/keyring image:$T/nor
jq -e '.partitions | length == 8' $T/nor.json >/dev/null || vm_fail "NOR report: $(cat $T/nor.json)"
vm-load-board -m mtdram total_size=16384 erase_size=64 >/dev/null || vm_fail "mtdram"
vm_run flashcp $T/nor.bin /dev/mtd0
mtdparts=$(jq -r .mtdparts <<<"$("$FLASHCTL" --json layout nandsim "$OL")")
spec=${mtdparts#mtdparts=}; spec=${spec#*:}
off=0; IFS=, read -ra parts <<<"$spec"
for p in "${parts[@]}"; do
	[[ $p =~ ^([0-9]+[kKmM]?|-)(@([0-9]+[kKmM]?))?\(([^\)]+)\) ]] || vm_fail "mtdparts '$p'"
	to_b() { local v=$1; case $v in *[kK]) echo $((${v%?} * 1024));; *[mM]) echo $((${v%?} << 20));; *) echo "$v";; esac; }
	[ -n "${BASH_REMATCH[3]}" ] && off=$(to_b "${BASH_REMATCH[3]}")
	if [ "${BASH_REMATCH[1]}" = - ]; then size=$((16 * 1024 * 1024 - off)); else size=$(to_b "${BASH_REMATCH[1]}"); fi
	vm_run mtdpart add /dev/mtd0 "${BASH_REMATCH[4]}" "$off" "$size"
	off=$((off + size))
done
same_as_image "$(vm_mtd_by_name rootfs-a)" $T/1.0.sqfs "NOR factory image: slot A"
data=$(vm_mtd_by_name rootfs_data)
vm_run modprobe mtdblock
vm_jffs2_mount_leaves_flash_alone "$data" "/dev/mtdblock${data#/dev/mtd}"
echo "ok: NOR factory image: JFFS2 overlay clean"
echo flashd.slot=A >$T/cmdline
out=$("$FLASHD" boot --mode initramfs --layout "$OL" --cmdline $T/cmdline --stage /tmp/st \
	--state $T/boot.json --no-exec 2>&1) || vm_fail "flashd boot on the factory image: $out"
cmp -s /tmp/st/root/payload $T/1.0/payload || vm_fail "union: image content differs"
echo written >/tmp/st/root/etc/local || vm_fail "union not writable"
vm_expect_eq "$(jq -r .overlay.state $T/boot.json)" mounted "factory image: overlay mounted"
echo "ok: NOR factory image boots into the union"
for m in $(awk '$2 ~ "^/tmp/st(/|$)" {print $2}' /proc/mounts | sort -r); do umount "$m"; done
vm-load-board --unload

# ---- NAND factory image with nandwrite -o -----------------------------------
# A small board (tests/vm/layouts/nand-32m-factory.json): the images and
# the simulator they come from must fit the guest's RAM.
vm_log "NAND: factory data+OOB image -> nandwrite -o on the whole chip"
FL=$top_srcdir/tests/vm/layouts/nand-32m-factory.json
bundle 1.0 "$FL"
rm -f $T/nor.bin
vm_run "$FLASHCTL" provision --layout "$FL" --bundle $T/1.0-nand-32m-factory.bundle \
	--keyring $T/keyring image:$T/nand
vm_expect_eq "$(stat -c %s $T/nand.oob.bin)" $((32 * 1024 * 1024 / 512 * 528)) "page+OOB image size"
vm_json_vars fl "$("$FLASHCTL" --json layout nandsim "$FL")"
id=; [[ $fl_params =~ (id_bytes=[^ ]*) ]] && id=${BASH_REMATCH[1]}
vm-load-board -m nandsim "$id" >/dev/null || vm_fail "nandsim without parts"
vm_run nandwrite -q -o /dev/mtd0 $T/nand.oob.bin
# both offsets in one jq run
{ read -r ra; read -r od; } <<<"$(jq -r '. as $j | ("rootfs-a", "rootfs_data") as $n
	| [$j.partitions[] | select(.name==$n) | .offset] | map(tostring) | join(" ")' $T/nand.json)"
n=$(stat -c %s $T/1.0.sqfs)
nanddump -q --bb=skipbad -s "$ra" -l "$n" -f $T/dump /dev/mtd0 || vm_fail nanddump
cmp -s -n "$n" $T/dump $T/1.0.sqfs || vm_fail "NAND factory image: slot A differs"
echo "ok: NAND factory image: slot A"
# the JFFS2 cleanmarker of the overlay's first block, in its OOB (nanddump -o)
nanddump -q -o -s "$od" -l 512 -f $T/oob /dev/mtd0 || vm_fail "nanddump -o"
tail -c 16 $T/oob | od -An -tx1 | tr -d ' \n' | grep -q 85190320 ||
	vm_fail "NAND factory image: no cleanmarker in the overlay's OOB: $(tail -c 16 $T/oob | od -An -tx1)"
echo "ok: NAND factory image: overlay cleanmarkers in OOB"
echo "provisioning and installs on kernel flash: all checks passed"
