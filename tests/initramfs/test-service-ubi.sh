#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# flashd.service with its real sandboxing installs into a UBI board
# (issue 34 item 6): the reference appliance's root (systemd as PID 1,
# flashd.socket, the shipped flashd.service; nandsim/appliance/mkrootfs)
# for layouts/nand-ubi.json, provisioned with v1 in the harness VM, booted
# by flashd-mkinitramfs' image (what ships) on the harness kernel; in it
# the appliance agent runs `flashctl install v2.bundle` through the
# socket-activated daemon, which writes the UBI volume of slot B through
# /dev/ubi0 and /dev/ubi0_N under DevicePolicy=closed and the unit's
# DeviceAllow= list. The checks: the install succeeds, the kernel's names
# in /proc/devices (what DeviceAllow=char-NAME globs match), the unit's
# device rules as systemd resolved them, no EPERM in the daemon's journal.
#
#   tests/initramfs/test-service-ubi.sh [FLASHD.SERVICE]
#
# FLASHD.SERVICE: a unit file to install in the image instead of the built
# one (to see an older unit fail). Host-driven (root, qemu, the host's
# systemd package, the harness kernel); ~6-10 min under TCG: not in make
# check, run with `make initramfs-tools-check`.
. "$(dirname "$0")/../lib/common.sh"
. "$TEST_LIB/vm-host.sh"

need qemu-system-x86_64 mksquashfs jq
[ "$(id -u)" = 0 ] || skip "needs root (make install DESTDIR into the image)"
dpkg-query -W -f='${Status}' systemd 2>/dev/null | grep -q 'install ok installed' ||
	skip "the appliance root is assembled from the host's systemd package"
unit=${1:+$(readlink -f "$1")}
layout="$top_srcdir/layouts/nand-ubi.json"
A="$top_srcdir/nandsim/appliance"

vmhost_kernel
kdir=$KDIR kver=$KVER
vmhost_workdir svc-ubi

# ---- images v1, v2 (the unit under test in both), bundles
if [ -n "$unit" ]; then
	printf '#!/bin/sh\nfor d in "$1"/usr/local/lib/systemd/system "$1"/lib/systemd/system; do\n\t[ -f "$d/flashd.service" ] && cp %s "$d/flashd.service"\ndone\nexit 0\n' \
		"$unit" >"$W/unit.sh"
	chmod +x "$W/unit.sh"
	extra=(-x "$W/unit.sh")
else
	extra=()
fi
# zstd at level 3, as the appliance's: the test is the unit's sandbox, not
# the compressor; an image takes 0.5 s where xz takes 13 s
for v in 1 2; do
	"$A/mkrootfs" -l "$layout" "${extra[@]}" -C "zstd -Xcompression-level 3" -v $v "$W/v$v.squashfs" >"$W/mkrootfs.log" 2>&1 ||
		{ cat "$W/mkrootfs.log"; fail "mkrootfs v$v"; }
	"$FLASHCTL" -q bundle create -o "$W/v$v.bundle" --layout "$layout" --version $v \
		--image "rootfs=$W/v$v.squashfs" --no-sign || fail "bundle create v$v"
done
ok "root images v1, v2 ($(stat -c %s "$W/v2.squashfs") bytes) with systemd and flashd.service${unit:+ ($unit)}"

vmhost_provision "$layout" "$W/v1.bundle" "$W/chip.nv"
ok "v1 provisioned on the UBI board"

# ---- the initramfs: flashd-mkinitramfs' defaults (UBI) + the harness board
json=$("$FLASHCTL" --json layout nandsim "$layout") || fail "flashctl layout nandsim"
names=$("$FLASHCTL" --json layout show "$layout" | jq -r '.partitions | sort_by(.offset)[] | .name' | tr '\n' ' ')
printf 'NANDSIM_PARAMS="%s"\nPART_NAMES="%s"\n' "$(jq -r .params <<<"$json")" "$names" >"$W/board.conf"
"$top_srcdir/tools/flashd-mkinitramfs" -k "$kdir/root" -K "$kver" -f "$FLASHD" -l "$layout" \
	-m mtdblock -m dm-mod -m squashfs -m overlay -m ubi -m ubifs \
	-m virtio_pci -m 9pnet_virtio -m 9p -M nandsim -s "$A/board-setup" \
	-a "$top_builddir/nandsim/nvflash:/usr/sbin/nvflash" -a "$FLASHCTL:/usr/bin/flashctl" \
	-a "$W/board.conf:/etc/flashd/board.conf" \
	-a "$A/agent:/etc/flashd/agent" -a "$A/vm-agent.service:/etc/flashd/vm-agent.service" \
	-o "--init /lib/systemd/systemd" "$W/initrd.gz" >"$W/mkinitramfs.log" 2>&1 ||
	{ cat "$W/mkinitramfs.log"; fail "flashd-mkinitramfs"; }

# ---- power on: systemd, flashd.socket; the agent installs v2
B="$W/boot"
mkdir -p "$B"
cp "$W/chip.nv" "$B/flash.nv"
ln "$W/v2.bundle" "$B/v2.bundle"
cat >"$B/agent.cmd" <<'EOF'
cat /proc/devices >/run/vm-out/devices
ls -l /dev/ubi* >/run/vm-out/dev-ubi 2>&1
flashctl install /run/vm-out/v2.bundle >/run/vm-out/install.log 2>&1
echo $? >/run/vm-out/install.rc
systemctl show -p DevicePolicy -p DeviceAllow -p ProtectSystem flashd.service >/run/vm-out/unit
journalctl -b -u flashd.service -u flashd.socket --no-pager >/run/vm-out/journal 2>&1
flashctl --json status >/run/vm-out/status.json
EOF
vmhost_boot "$W/initrd.gz" "flashd.slot=A systemd.show_status=1" "$B" 900
[ -s "$B/agent.status" ] || { tail -n 60 "$B/console"; fail "the agent never ran (qemu exit $rc)"; }
say "/proc/devices: $(tr '\n' ' ' <"$B/devices" | tr -s ' ')"
say "flashd.service: $(tr '\n' ' ' <"$B/unit")"
grep -Ei 'not permitted|denied' "$B/journal" | head -n 5 >&2
sed 's/^/install: /' "$B/install.log" | tr '\r' '\n' | grep -v '^install: *$' | tail -n 4 >&2
check "the kernel names the UBI char device ubi0 (matched by char-ubi*)" \
	grep -Eq '^ *[0-9]+ ubi0$' "$B/devices"
check "ubi_ctrl is a misc device (major 10), not a /proc/devices group" \
	grep -q '^crw.* 10, *[0-9]* .*/dev/ubi_ctrl$' "$B/dev-ubi"
check "the unit in the image allows char-ubi* (systemctl show)" grep -q "DeviceAllow=char-ubi\* rw" "$B/unit"
check "flashctl install v2 through flashd.service: exit 0" test "$(cat "$B/install.rc")" = 0
check "no EPERM from the device cgroup in flashd's journal" \
	sh -c "! grep -Eqi 'operation not permitted|permission denied' '$B/journal'"
check "slot B holds v2 and is next" test "$(jq -r '.slots[] | select(.name == "B") | .version' "$B/status.json")" = 2
check_done
