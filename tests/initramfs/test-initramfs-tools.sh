#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# boot=flashd in a real initramfs-tools image (issue 34): Debian's
# mkinitramfs builds it with the shipped hook and boot script (and udev's
# hooks), Debian's kernel boots it in qemu on a nandsim board provisioned
# with slot A, and the booted root reports what happened in its initramfs:
#  - mountroot left the union mounted on ${rootmnt} and returned: a marker
#    in init-bottom (after udev's) saw ${rootmnt} mounted, and udev's
#    init-bottom moved /dev into it (/dev became a symlink to ${rootmnt}/dev);
#  - /init's run-init switched: / is the overlay, /rom the squashfs,
#    /overlay the JFFS2 layer, /dev the devtmpfs udev ran on, and
#    /run/flashd/boot.json says initramfs-tools mode, result ok.
#
#   tests/initramfs/test-initramfs-tools.sh [LAYOUT]
#
# LAYOUT: a nandsim board (default layouts/nandsim-128m.json, JFFS2
# overlay; layouts/nand-ubi.json: ubiblock root, UBIFS overlay, which
# also needs the zstd module in the image). Host-driven (root, qemu,
# initramfs-tools, the harness kernel of nandsim/vm-run --prepare); ~4 min
# under TCG: not in make check, run with `make initramfs-tools-check`.
. "$(dirname "$0")/../lib/common.sh"
. "$TEST_LIB/vm-host.sh"

need qemu-system-x86_64 mksquashfs jq unshare
[ -x /usr/sbin/mkinitramfs ] || skip "mkinitramfs missing (apt-get install initramfs-tools)"
[ "$(id -u)" = 0 ] || skip "needs root (mkinitramfs in a private mount namespace)"
file -L /bin/busybox 2>/dev/null | grep -q 'statically linked' || skip "no static busybox (busybox-static)"
hook="$top_builddir/dist/initramfs-tools/hooks/flashd"
[ -x "$hook" ] || fail "$hook not built"
layout=$(readlink -f "${1:-$top_srcdir/layouts/nandsim-128m.json}")
ovtype=$(jq -r '.overlays[] | select(.path == "/") | .type' "$layout") || fail "$layout: no layout"

vmhost_kernel
kdir=$KDIR kver=$KVER
vmhost_workdir itools

# ---- the root image: a static busybox whose init reports and powers off
R="$W/rootfs"
mkdir -p "$R"/{bin,sbin,dev,proc,sys,run,tmp,rom,overlay,etc,root}
cp /bin/busybox "$R/bin/busybox"
cat >"$R/sbin/init" <<'EOF'
#!/bin/busybox sh
B=/bin/busybox
o=/run/vm-out
$B cat /run/itools-marker >$o/marker 2>&1
$B cat /proc/mounts >$o/mounts
$B cp /run/flashd/boot.json $o/boot.json
$B ls /dev/char >$o/dev-char 2>&1
echo done >$o/status
$B sync
$B poweroff -f
EOF
chmod 0755 "$R/sbin/init"
mksquashfs "$R" "$W/v1.squashfs" -noappend -quiet -comp gzip >/dev/null || fail "mksquashfs"
"$FLASHCTL" -q bundle create -o "$W/v1.bundle" --layout "$layout" --version 1 \
	--image "rootfs=$W/v1.squashfs" --no-sign || fail "bundle create"

# ---- the factory: flashctl provision in the harness VM, chip saved
vmhost_provision "$layout" "$W/v1.bundle" "$W/chip.nv"
ok "slot A provisioned ($(stat -c %s "$W/chip.nv") bytes of chip)"

# ---- the initramfs-tools configuration (mkinitramfs -d)
C="$W/conf"
mkdir -p "$C"/{conf.d,hooks,scripts/local-top,scripts/init-bottom}
printf 'MODULES=list\nBUSYBOX=y\nCOMPRESS=gzip\n' >"$C/initramfs.conf"
# (none in conf/modules: /init would load nandsim without the board's parameters)
: >"$C/modules"
# the shipped boot script as is; the hook with this build's flashd and the layout
cp "$top_srcdir/dist/initramfs-tools/scripts/flashd" "$C/scripts/flashd"
sed -e "s|^FLASHD=.*|FLASHD=$FLASHD|" -e "s|^LAYOUT=.*|LAYOUT=$layout|" "$hook" >"$C/hooks/flashd"
json=$("$FLASHCTL" --json layout nandsim "$layout") || fail "flashctl layout nandsim"
params=$(jq -r .params <<<"$json")
names=$("$FLASHCTL" --json layout show "$layout" | jq -r '.partitions | sort_by(.offset)[] | .name' | tr '\n' ' ')
cat >"$C/hooks/itools-board" <<EOF
#!/bin/sh
[ "\$1" = prereqs ] && exit 0
. /usr/share/initramfs-tools/hook-functions
copy_exec "$top_builddir/nandsim/nvflash" /usr/sbin/nvflash
manual_add_modules nandsim virtio_pci 9pnet_virtio 9p
EOF
# the board: nandsim with the layout's partitions, named as a device tree
# would (a view of /sys/class/mtd, as the harness's vm-load-board does),
# the chip restored from the factory run, the result share on /run/vm-out
cat >"$C/scripts/local-top/itools-board" <<EOF
#!/bin/sh
[ "\$1" = prereqs ] && exit 0
modprobe -a virtio_pci 9pnet_virtio 9p
mkdir -p /run/vm-out
mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144 out /run/vm-out || exit 1
modprobe nandsim $params || exit 1
V=/run/itools-mtd; mkdir -p \$V; i=0; devs=""
for n in $names; do
	real=\$(readlink -f /sys/class/mtd/mtd\$i); mkdir \$V/mtd\$i
	for a in "\$real"/*; do [ "\${a##*/}" = name ] || ln -s "\$a" "\$V/mtd\$i/\${a##*/}"; done
	echo "\$n" >\$V/mtd\$i/name; devs="\$devs /dev/mtd\$i"; i=\$((i + 1))
done
for d in /sys/class/mtd/*; do [ -e "\$V/\${d##*/}" ] || ln -s "\$(readlink -f "\$d")" "\$V/\${d##*/}"; done
mount --bind \$V /sys/class/mtd || exit 1
/usr/sbin/nvflash restore /run/vm-out/flash.nv \$devs >/run/vm-out/restore.log 2>&1
EOF
# runs after udev's init-bottom: was the root mounted, did udev move /dev?
cat >"$C/scripts/init-bottom/itools-marker" <<'EOF'
#!/bin/sh
[ "$1" = prereqs ] && { echo udev; exit 0; }
if grep -q " ${rootmnt} " /proc/mounts; then echo "rootmnt=mounted"; else echo "rootmnt=empty"; fi >/run/itools-marker
if [ -L /dev ]; then echo "dev=moved"; else echo "dev=stayed"; fi >>/run/itools-marker
EOF
chmod 0755 "$C"/hooks/* "$C"/scripts/local-top/* "$C"/scripts/init-bottom/*

# mkinitramfs reads /lib/modules/KVER (= /usr/lib/modules here) and
# /boot/config-KVER: the harness kernel's appear there in a private mount
# namespace only
mkdir -p "$W/usr/lib/modules/$kver"
unshare -m sh -c "mount -t overlay overlay -o lowerdir=$W/usr:/usr /usr &&
	mount --bind $kdir/root/lib/modules/$kver /usr/lib/modules/$kver &&
	mount --bind $kdir/root/boot /boot &&
	mkinitramfs -d $C -o $W/initrd.img $kver" >"$W/mkinitramfs.log" 2>&1 ||
	{ cat "$W/mkinitramfs.log"; fail "mkinitramfs failed"; }
lsinitramfs "$W/initrd.img" >"$W/initrd.list" 2>/dev/null
for f in usr/sbin/flashd "$(flashd_path layout | cut -c2-)" scripts/flashd scripts/init-bottom/udev; do
	grep -qx "$f" "$W/initrd.list" || fail "the initramfs has no $f"
done
ok "mkinitramfs: $(stat -c %s "$W/initrd.img") bytes, with flashd, the layout, the boot script, udev"

# ---- power on: boot=flashd
B="$W/boot"
mkdir -p "$B"
cp "$W/chip.nv" "$B/flash.nv"
vmhost_boot "$W/initrd.img" "boot=flashd flashd.slot=A" "$B"
[ -s "$B/status" ] || { tail -n 60 "$B/console"; fail "the root's init never ran (qemu exit $rc)"; }
say "initramfs saw: $(tr '\n' ' ' <"$B/marker")"
check "init-bottom ran with the root mounted on \${rootmnt}" grep -qx rootmnt=mounted "$B/marker"
check "udev's init-bottom moved /dev into the root" grep -qx dev=moved "$B/marker"
check "/ is the overlay union" grep -q '^overlay / overlay ' "$B/mounts"
check "/rom is slot A's squashfs" grep -q ' /rom squashfs ' "$B/mounts"
check "/overlay is the $ovtype layer" grep -q " /overlay $ovtype " "$B/mounts"
check "/dev is the initramfs' devtmpfs" grep -q '^udev /dev devtmpfs ' "$B/mounts"
check "udev's /dev/char links came along" test -s "$B/dev-char"
check "boot.json: initramfs-tools mode" test "$(jq -r .mode "$B/boot.json")" = initramfs-tools
check "boot.json: result ok, slot A" test "$(jq -r '.result + .slot' "$B/boot.json")" = okA
check "boot.json: the env read, version 1" test "$(jq -r '.env + .version' "$B/boot.json")" = ok1
check "boot.json: the overlay persistent" test "$(jq -r .overlay.persistent "$B/boot.json")" = true
check_done
