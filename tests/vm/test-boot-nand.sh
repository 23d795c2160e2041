#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# vm-layout: layouts/nandsim-128m.json
# vm-nandsim-extra: badblocks=45
# vm-timeout: 600
#
# flashd boot on raw NAND: layouts/nandsim-128m.json's board (nandsim
# 128 MiB, 128 KiB blocks; nandsim's parts=, named by vm-load-board's
# sysfs view as mtdparts= names them on a real board). rootfs-a
# starts at block 42; block 45 (the image's 4th block) is bad, so the
# squashfs written around it only mounts through the dm-linear map.
#  - --no-exec assembly: root via dm-linear (content identical to the
#    image), JFFS2 overlay formatted on first boot, probe (no
#    RENAME_WHITEOUT on JFFS2), state file; a written file survives
#    unmount and re-assembly
#  - an overlay reset requested and cancelled (flashctl overlay reset --yes,
#    --cancel, offline): the next boot keeps the overlay's changes
#  - factory reset (FLASHD_OVERLAY_RESET=1): overlay emptied, image intact,
#    flag cleared
#  - garbage in rootfs_data: tmpfs fallback, recorded
#  - initramfs mode for real: a busybox initramfs (tmpfs, own mount
#    namespace) whose /init runs flashd boot; after switch_root the image's
#    /sbin/init sees the union, /rom, /overlay, the state in /run, and the
#    initramfs deleted; its write lands on JFFS2
. "$top_srcdir/tests/lib/vm.sh"
. "$top_srcdir/tests/lib/vm-boot.sh"
boot_nand_board
vm_expect_eq "$(vm_sysfs "${rootfs#/dev/}" bad_blocks)" 1 "bad blocks in rootfs-a (nandsim badblocks=45)"

# ---- the image ------------------------------------------------------------
boot_image /tmp/img
echo original >/tmp/img/etc/config
echo "image A" >/tmp/img/etc/issue
head -c $((1536 * 1024)) /dev/urandom >/tmp/img/etc/random.bin   # spans the bad block
cat >/tmp/img/sbin/init <<'EOT'
#!/bin/sh
echo "init: running as $0 in the new root"
echo "init: config=$(cat /etc/config)"
grep -q ' / overlay ' /proc/mounts && echo "init: / is overlay"
grep -q ' /rom squashfs ' /proc/mounts && echo "init: /rom is squashfs"
grep -q ' /overlay jffs2 ' /proc/mounts && echo "init: /overlay is jffs2"
[ -s /run/flashd/boot.json ] && echo "init: state file present"
[ -e /init ] || [ -e /flashd ] || echo "init: initramfs deleted"
echo "written by init" >/etc/init-was-here && echo "init: wrote /etc/init-was-here"
EOT
chmod 755 /tmp/img/sbin/init
vm_mksquashfs /tmp/img /tmp/a.sqfs -all-root
[ "$(stat -c %s /tmp/a.sqfs)" -gt $((4 * 131072)) ] || vm_fail "image too small to cross block 45"
vm_flashctl flash write "$rootfs" /tmp/a.sqfs
echo "console=ttyS0 flashd.slot=A" >/tmp/cmdline
# A legacy env on the real chip (what RAUC left: BOOT_ORDER and counters,
# no FLASHD_*): flashctl's offline activate of B holds the env open
# (libubootenv's lock); the check that B is legacy opened it again, waited
# 10 s for that lock and refused B (fixed in 2190c14)
vm_run "$FLASHCTL" env init --force --layout "$L" FLASHD_ENV= "BOOT_ORDER=A B" BOOT_A_LEFT=3 BOOT_B_LEFT=3
vm_run "$FLASHCTL" slot activate B --offline --layout "$L" --cmdline /tmp/cmdline
order=$("$FLASHCTL" env get -n --layout "$L" BOOT_ORDER) || vm_fail "env get BOOT_ORDER"
[ "$order" = "B A" ] || vm_fail "offline activate of the legacy slot B: BOOT_ORDER='$order', expected 'B A'"
echo "offline activate of the legacy slot B: BOOT_ORDER=$order"
vm_run "$FLASHCTL" env init --force --layout "$L" FLASHD_A_VERSION=1.0
# slot init trusts the running slot (A here) and what it reads, not records
vm_run "$FLASHCTL" slot init --layout "$L" --cmdline /tmp/cmdline
vm_run flash_erase -q "$data" 0 0     # blank, no cleanmarkers: first boot

# ---- first boot (--no-exec) ---------------------------------------------
vm_log "first boot: dm-linear root, JFFS2 formatted"
st=$(boot_assemble --mode initramfs --layout "$L" --cmdline /tmp/cmdline)
boot_json_parse "$st"
vm_expect_eq "$(boot_json "$st" .slot)" A "booted slot"
vm_expect_eq "$(boot_json "$st" .root.kind)" dm-linear "root device kind (bad block inside the image)"
vm_expect_eq "$(boot_json "$st" .root.bad_blocks_skipped)" 1 "bad blocks stepped over by the map"
vm_expect_eq "$(boot_json "$st" .overlay.state)" mounted "overlay state"
vm_expect_eq "$(boot_json "$st" .overlay.fstype)" jffs2 "overlay fstype"
vm_expect_eq "$(boot_json "$st" .overlay.formatted)" true "first boot formats the blank partition"
vm_expect_eq "$(boot_json "$st" .overlay.probe.whiteout)" true "probe: whiteouts on JFFS2"
vm_expect_eq "$(boot_json "$st" .overlay.rename_whiteout)" false "probe: RENAME_WHITEOUT on mainline JFFS2"
vm_expect_eq "$(boot_json "$st" .overlay.generation.name)" gen-A-1.0 "generation"
vm_expect_eq "$(jq -r .overlay.generation.name /tmp/st.json)" gen-A-1.0 "state file /tmp/st.json"
grep -q ' /tmp/st/root overlay ' /proc/mounts || vm_fail "no overlay union on /tmp/st/root: $(grep /tmp/st /proc/mounts)"
cmp /tmp/img/etc/random.bin /tmp/st/root/etc/random.bin || vm_fail "random.bin through the dm map differs from the image"
dev=$(boot_json "$st" .root.device)
cmp -n "$(stat -c %s /tmp/a.sqfs)" /tmp/a.sqfs "$dev" || vm_fail "$dev differs from the squashfs image"
vm_expect_eq "$(cat /tmp/st/root/etc/config)" original "image file through the union"
echo changed >/tmp/st/root/etc/config
echo hello >/tmp/st/root/etc/new-file
rm /tmp/st/root/etc/issue
[ -e /tmp/st/root/overlay/gen-A-1.0/upper/etc/new-file ] || vm_fail "the new file is not in the JFFS2 upper (/overlay/gen-A-1.0/upper)"
boot_teardown

vm_log "second boot: changes persisted, nothing formatted"
st=$(boot_assemble --mode initramfs --layout "$L" --cmdline /tmp/cmdline)
boot_json_parse "$st"
vm_expect_eq "$(boot_json "$st" .overlay.formatted)" false "second boot formats nothing"
vm_expect_eq "$(cat /tmp/st/root/etc/config)" changed "modified file after re-assembly"
vm_expect_eq "$(cat /tmp/st/root/etc/new-file)" hello "new file after re-assembly"
[ -e /tmp/st/root/etc/issue ] && vm_fail "deleted image file is back after re-assembly"
boot_teardown

# ---- a reset requested, then cancelled: the next boot keeps the changes ----
vm_log "overlay reset cancelled before the boot"
vm_run "$FLASHCTL" overlay reset --yes --layout "$L"
vm_expect_eq "$("$FLASHCTL" env get -n --layout "$L" FLASHD_OVERLAY_RESET)" 1 "reset requested offline"
vm_run "$FLASHCTL" overlay reset --cancel --layout "$L"
st=$(boot_assemble --mode initramfs --layout "$L" --cmdline /tmp/cmdline)
boot_json_parse "$st"
vm_expect_eq "$(boot_json "$st" .overlay.reset_done)" false "no reset after --cancel"
vm_expect_eq "$(cat /tmp/st/root/etc/config)" changed "modified file kept after a cancelled reset"
vm_expect_eq "$(cat /tmp/st/root/etc/new-file)" hello "new file kept after a cancelled reset"
boot_teardown

# ---- factory reset -------------------------------------------------------
vm_log "factory reset"
boot_factory_reset --mode initramfs --layout "$L" --cmdline /tmp/cmdline
vm_expect_eq "$(cat /tmp/st/root/etc/config)" original "config after reset (image version)"
vm_expect_eq "$(cat /tmp/st/root/etc/issue)" "image A" "deleted image file back after reset"
[ -e /tmp/st/root/etc/new-file ] && vm_fail "user file survived the factory reset"
cmp /tmp/img/etc/random.bin /tmp/st/root/etc/random.bin || vm_fail "image content changed by the reset"
"$FLASHCTL" env get -n --layout "$L" FLASHD_OVERLAY_RESET >/dev/null 2>&1 &&
	vm_fail "FLASHD_OVERLAY_RESET still set after the reset: $("$FLASHCTL" env get -n --layout "$L" FLASHD_OVERLAY_RESET 2>&1)"
boot_teardown

# ---- initramfs mode, for real --------------------------------------------
vm_log "initramfs: busybox initramfs runs flashd boot, switch_root, image init"
boot_image /tmp/ird
boot_add_flashd /tmp/ird
cp "$L" "/tmp/ird$BOOT_LAYOUT"
cp /tmp/cmdline /tmp/ird/cmdline
# nandsim cannot name its partitions; vm-load-board's named sysfs view
# stands in for mtdparts= (a real board's initramfs needs nothing here)
[ -d /run/vm-mtd-names ] && cp -a /run/vm-mtd-names /tmp/ird/mtd-names
cat >/tmp/ird/init <<'EOT'
#!/bin/sh
if [ -d /mtd-names ]; then
	mkdir -p /sys && mount -t sysfs sysfs /sys && mount --bind /mtd-names /sys/class/mtd
fi
echo "initramfs: starting flashd boot"
exec /usr/sbin/flashd boot --mode initramfs --cmdline /cmdline
EOT
chmod 755 /tmp/ird/init
mkdir -p /tmp/ird-root
out=$(unshare -m --propagation private sh -c '
	mount -t tmpfs -o mode=0755 initramfs /tmp/ird-root && cp -a /tmp/ird/. /tmp/ird-root/ &&
	exec chroot /tmp/ird-root /init' 2>&1 < /dev/null) || vm_fail "initramfs run failed: $out"
printf '%s\n' "$out"
for want in "init: config=original" "init: / is overlay" "init: /rom is squashfs" \
	    "init: /overlay is jffs2" "init: state file present" "init: initramfs deleted" \
	    "init: wrote /etc/init-was-here"; do
	# a whole line of the output (grep -qxF, without a process per line wanted)
	[[ $'\n'$out$'\n' == *$'\n'"$want"$'\n'* ]] || vm_fail "after switch_root: missing '$want'"
done
# the namespace is gone; the write is on flash
mkdir -p /tmp/j
vm_run mount -t jffs2 "mtd${data#/dev/mtd}" /tmp/j
vm_expect_eq "$(cat /tmp/j/gen-A-1.0/upper/etc/init-was-here 2>&1)" "written by init" "init's file on JFFS2"
vm_run umount /tmp/j

# ---- garbage in the overlay partition: tmpfs fallback ---------------------
vm_log "garbage in rootfs_data: tmpfs fallback"
vm_run flash_erase -q "$data" 0 0
head -c $((256 * 1024)) /dev/urandom >/tmp/garbage
vm_run nandwrite -q -p "$data" /tmp/garbage
st=$(boot_assemble --mode initramfs --layout "$L" --cmdline /tmp/cmdline)
boot_json_parse "$st"
vm_expect_eq "$(boot_json "$st" .overlay.state)" tmpfs "overlay state with garbage"
vm_expect_eq "$(boot_json "$st" .overlay.fallback)" true "fallback recorded"
vm_expect_eq "$(boot_json "$st" .overlay.medium)" foreign "what the partition held"
boot_json "$st" .overlay.fallback_reason | grep -q "not JFFS2" || vm_fail "fallback reason: $(boot_json "$st" .overlay.fallback_reason)"
boot_json "$st" '.warnings[]' | grep -q "NOT PERSISTENT" || vm_fail "no loud warning in the state: $st"
dmesg | grep -q "flashd-boot: .*NOT PERSISTENT" || vm_fail "no warning in the kernel log"
echo x >/tmp/st/root/etc/volatile || vm_fail "cannot write on the tmpfs fallback union"
boot_teardown
vm_run nanddump -q --bb=skipbad -l 4096 -f /tmp/gback "$data"
cmp -n 4096 /tmp/garbage /tmp/gback ||
	vm_fail "the foreign data in $data was touched"
echo "flashd boot on NAND: dm-linear root, JFFS2 overlay, reset, fallback, initramfs switch_root ok"
