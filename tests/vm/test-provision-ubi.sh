#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# vm-layout: layouts/nand-ubi.json
# vm-nandsim-extra: badblocks=100
# vm-timeout: 600
#
# A UBI board end to end on the kernel's nandsim + UBI (issue 19),
# layouts/nand-ubi.json with erase block 100 (inside the "ubi" partition,
# blocks 24-2047) bad:
#  - provision --dry-run lists the UBI partition's plan and changes nothing;
#    with a volume of that UBI mounted, the dry run and the real run both
#    refuse ("in use") and the env partition is unchanged
#  - flashctl provision ... system: ubiformat (erase counters kept: a
#    second provision raises max_ec), UBI attached, the layout's volumes
#    (static images, dynamic overlay) with the images of slot A, the bad
#    block counted by UBI; the env boots A
#  - flashd boot for A: ubiblock + squashfs root, UBIFS overlay; a file
#    written in the union
#  - flashd (target system) installs v2 streamed over its socket into
#    slot B's volumes (kernel_b, rootfs_b): status says B next with 2.0, the
#    volumes hold the images (upd_marker 0); the booted slot A is refused
#  - flashd boot for B: ubiblock of rootfs_b mounts v2; the UBIFS overlay
#    still holds the file written under A
. "$top_srcdir/tests/lib/vm.sh"
. "$top_srcdir/tests/lib/vm-boot.sh"
. "$top_srcdir/tests/lib/vm-ubi.sh"
ubi_setup
L=$UBI_LAYOUT
ubi_workdir /tmp/pu
export FLASHD_SOCKET=$T/flashd.sock
trap '[ -n "$UBI_DAEMON" ] && kill $UBI_DAEMON 2>/dev/null' EXIT
ubimtd=$UBI_MTD
envmtd=$(vm_mtd_by_name u-boot-env)

env_sum() { nanddump -q -f - "$envmtd" 2>/dev/null | sha256sum; }

ubi_bundle 1.0 3
ubi_bundle 2.0 4

# ---- dry run, and refusals before anything is erased -------------------------
vm_log "provision --dry-run"
out=$("$FLASHCTL" provision --dry-run --layout "$L" --bundle $T/1.0.bundle --keyring $T/keyring \
	system 2>&1) || vm_fail "dry run failed: $out"
echo "$out"
grep -q "^ubi .*ubiformat (erase counters kept), 5 volumes" <<<"$out" ||
	grep -q "ubi.*ubi.*ubiformat (erase counters kept), 5 volumes" <<<"$out" ||
	vm_fail "dry run does not list the UBI plan: $out"
grep -q "rootfs of slot A into rootfs_a: version 1.0" <<<"$out" || vm_fail "dry run: no image for rootfs_a: $out"
[ -z "$(ubi_num)" ] || vm_fail "the dry run attached UBI"

vm_log "a mounted volume of the UBI refuses the dry run and the run alike"
vm_run ubiformat -q -y "$ubimtd"
vm_run ubiattach -p "$ubimtd"
vm_run ubimkvol "/dev/ubi$(ubi_num)" -N data -s 4MiB
mkdir -p /tmp/m
vm_run mount -t ubifs "ubi$(ubi_num):data" /tmp/m
before=$(env_sum)
for dry in --dry-run ""; do
	# shellcheck disable=SC2086
	out=$("$FLASHCTL" provision $dry --layout "$L" --bundle $T/1.0.bundle --keyring $T/keyring \
		system 2>&1) && vm_fail "provision ${dry:-(real)} with ubi mounted succeeded: $out"
	grep -q "is in use" <<<"$out" || vm_fail "provision ${dry:-(real)}: $out"
done
vm_expect_eq "$(env_sum)" "$before" "env partition after the refusals"
vm_run umount /tmp/m
vm_run ubidetach -p "$ubimtd"

# ---- provision ------------------------------------------------------------
vm_log "provision system"
t0=$(date +%s%N)
vm_run "$FLASHCTL" provision --layout "$L" --bundle $T/1.0.bundle --keyring $T/keyring system
echo "provision (ubiformat, 5 volumes, 2 images) took $(( ($(date +%s%N) - t0) / 1000000 )) ms"
u=$(ubi_num)
[ -n "$u" ] || vm_fail "UBI not attached after provisioning"
vm_expect_eq "$(cat /sys/class/ubi/ubi$u/volumes_count)" 5 "volumes"
vm_expect_eq "$(cat /sys/class/ubi/ubi$u/bad_peb_count)" 1 "UBI's bad PEB count (block 100)"
for v in kernel_a rootfs_a kernel_b rootfs_b; do vm_expect_eq "$(ubi_vattr $v type)" static "type of $v"; done
vm_expect_eq "$(ubi_vattr overlay type)" dynamic "type of overlay"
# the boot script's root= (what a kernel without flashd boot mounts) names
# each slot's volume by its id: /dev/ubiblock<u>_<id> must be that volume
"$FLASHCTL" slot bootscript --layout "$L" >$T/boot.scr || vm_fail "flashctl slot bootscript"
for s in a b; do
	id=$(sed -n "s|.*ubi\.block=$u,rootfs_$s root=/dev/ubiblock${u}_\([0-9]*\) .*|\1|p" $T/boot.scr | head -n 1)
	[ -n "$id" ] || vm_fail "the boot script has no root=/dev/ubiblock${u}_<id> for rootfs_$s: $(grep flashd_root $T/boot.scr)"
	vm_expect_eq "$(cat /sys/class/ubi/ubi${u}_$id/name)" "rootfs_$s" "the volume the boot script mounts for slot $s"
done
ubi_holds rootfs_a $T/1.0.sqfs "provisioned"
ubi_holds kernel_a $T/1.0.kernel "provisioned"
vm_expect_eq "$(ubi_vattr rootfs_b data_bytes)" 0 "rootfs_b empty"
ec1=$(cat /sys/class/ubi/ubi$u/max_ec)
vm_expect_eq "$("$FLASHCTL" slot boot-select --layout "$L" --target system)" flashd.slot=A "boot choice"

vm_log "provision again: ubiformat keeps the erase counters"
vm_run "$FLASHCTL" provision --layout "$L" --bundle $T/1.0.bundle --keyring $T/keyring system
u=$(ubi_num)
ec2=$(cat /sys/class/ubi/ubi$u/max_ec)
[ "$ec2" -gt "$ec1" ] || vm_fail "max_ec $ec1 -> $ec2: the erase counters were not kept"
echo "ok: max_ec $ec1 -> $ec2 over a second provision"
ubi_holds rootfs_a $T/1.0.sqfs "re-provisioned"

# ---- boot A --------------------------------------------------------------
echo "flashd.slot=A" >$T/cmdline
st=$(boot_assemble --mode initramfs --layout "$L" --cmdline $T/cmdline)
boot_json_parse "$st"
vm_expect_eq "$(boot_json "$st" .root.kind)" ubiblock "A: root kind"
vm_expect_eq "$(boot_json "$st" .root.source)" "ubi$u:rootfs_a" "A: root source"
vm_expect_eq "$(boot_json "$st" .overlay.fstype)" ubifs "A: overlay fstype"
cmp /tmp/st/root/payload $T/1.0/payload || vm_fail "A: the union's payload is not 1.0's"
echo "kept across the update" >/tmp/st/root/etc/user-file
sync
boot_teardown

# ---- install v2 over the socket -------------------------------------------
ubi_daemon_conf $T
ubi_start_daemon $T
vm_log "the booted slot is refused"
out=$("$FLASHCTL" install --slot A $T/2.0.bundle 2>&1) && vm_fail "install into the booted slot A: $out"
grep -q "booted slot" <<<"$out" || vm_fail "refusal of slot A: $out"
ubi_holds rootfs_a $T/1.0.sqfs "after the refusal"
vm_log "a target volume another writer holds refuses the install, env unchanged"
mkfifo $T/busy.fifo
ubiupdatevol -s $((1024 * 1024)) "$(ubi_vol rootfs_b)" $T/busy.fifo &
bpid=$!
exec 4>$T/busy.fifo
head -c 4096 /dev/zero >&4
for _ in $(seq 500); do [ "$(ubi_vattr rootfs_b upd_marker)" = 1 ] && break; sleep 0.02; done
before=$(env_sum)
out=$("$FLASHCTL" install $T/2.0.bundle 2>&1) && vm_fail "install into a volume held by ubiupdatevol: $out"
grep -q "another writer has the volume open" <<<"$out" || vm_fail "busy volume refusal: $out"
vm_expect_eq "$(env_sum)" "$before" "env partition after the busy-volume refusal"
kill -KILL $bpid; wait $bpid 2>/dev/null
exec 4>&-
echo "ok: a busy target volume is refused before the env changes"
vm_log "install v2 streamed over the socket"
t0=$(date +%s%N)
"$FLASHCTL" install - <$T/2.0.bundle >$T/install.out 2>&1 ||
	vm_fail "install failed: $(cat $T/install.out) $(tail -n 20 $T/flashd.log)"
echo "install of v2 ($(stat -c %s $T/2.0.sqfs) + $(stat -c %s $T/2.0.kernel) bytes) into UBI volumes took $(( ($(date +%s%N) - t0) / 1000000 )) ms"
cat $T/install.out
grep -q "Installed version 2.0 into slot B" $T/install.out || vm_fail "install output: $(cat $T/install.out)"
st=$("$FLASHCTL" --json status) || vm_fail "status"
vm_expect_eq "$(jq -r '.slots[] | select(.name=="B") | .version' <<<"$st")" 2.0 "status: B version"
vm_expect_eq "$(jq -r '.next_boot' <<<"$st")" B "status: next boot"
vm_log "the same v2 again: a volume update rewrites the whole image, nothing is skipped"
t0=$(date +%s%N)
"$FLASHCTL" install $T/2.0.bundle >$T/install2.out 2>&1 ||
	vm_fail "second install failed: $(cat $T/install2.out)"
echo "re-install of the same v2 took $(( ($(date +%s%N) - t0) / 1000000 )) ms"
ubi_stop_daemon
ubi_holds rootfs_b $T/2.0.sqfs "installed"
ubi_holds kernel_b $T/2.0.kernel "installed"
ubi_holds rootfs_a $T/1.0.sqfs "the booted slot after the install"
sel=$("$FLASHCTL" slot boot-select --layout "$L" --target system)
vm_expect_eq "$sel" flashd.slot=B "boot choice after the install"

# ---- boot B -----------------------------------------------------------------
echo "$sel" >$T/cmdline
st=$(boot_assemble --mode initramfs --layout "$L" --cmdline $T/cmdline)
boot_json_parse "$st"
vm_expect_eq "$(boot_json "$st" .slot)" B "B: slot"
vm_expect_eq "$(boot_json "$st" .root.kind)" ubiblock "B: root kind"
vm_expect_eq "$(boot_json "$st" .root.source)" "ubi$u:rootfs_b" "B: root source"
cmp /tmp/st/root/payload $T/2.0/payload || vm_fail "B: the union's payload is not 2.0's"
vm_expect_eq "$(cat /tmp/st/root/etc/os-release)" "VERSION_ID=2.0" "B: os-release"
boot_teardown
mkdir -p /tmp/u
vm_run mount -t ubifs "ubi$u:overlay" /tmp/u
vm_expect_eq "$(cat /tmp/u/gen-A-1.0/upper/etc/user-file 2>&1)" "kept across the update" \
	"the file written under A, on UBIFS"
vm_run umount /tmp/u
echo "UBI board: provisioned (bad block, erase counters kept), installed over the socket, booted A and B"

# ---- a volume update interrupted behind flashd's back ---------------------------
# The env still says A is good; UBI's update marker alone says it is not.
vm_log "an interrupted ubiupdatevol of rootfs_a: status and flashd boot see it"
a=$(ubi_vol rootfs_a)
# 1 MiB of a 3 MiB update through a FIFO held open, then SIGKILL
mkfifo $T/upd.fifo
ubiupdatevol -s $((3 * 1024 * 1024)) "$a" $T/upd.fifo &
upid=$!
exec 3>$T/upd.fifo
head -c $((1024 * 1024)) /dev/urandom >&3
for _ in $(seq 500); do [ "$(ubi_vattr rootfs_a upd_marker)" = 1 ] && break; sleep 0.02; done
sleep 0.5
kill -KILL $upid; wait $upid 2>/dev/null
exec 3>&-
vm_expect_eq "$(ubi_vattr rootfs_a upd_marker)" 1 "rootfs_a update marker after the kill"
ubi_start_daemon $T
st=$("$FLASHCTL" --json status) || vm_fail "status"
ss=$("$FLASHCTL" --json slot status) || vm_fail "slot status through flashd"
ubi_stop_daemon
off=$("$FLASHCTL" --json slot status --layout "$L" --target system) || vm_fail "slot status offline"
# every status says it, through flashd or offline (slot_state_of, issue 36)
vm_expect_eq "$(jq -r '.slots[] | select(.name=="A") | .state' <<<"$st")" interrupted "status: slot A"
vm_expect_eq "$(jq -r '.slots[] | select(.name=="A") | .state' <<<"$ss")" interrupted \
	"slot status (flashd's SlotStatus): slot A"
vm_expect_eq "$(jq -r '.slots[] | select(.name=="A") | .state' <<<"$off")" interrupted \
	"slot status offline: slot A"
out=$("$FLASHD" boot --slot A --mode initramfs --layout "$L" --stage /tmp/st --state $T/boot.json \
	--no-exec 2>&1) && vm_fail "flashd boot mounted the interrupted rootfs_a: $out"
grep -q "volume update interrupted" <<<"$out" || vm_fail "flashd boot --slot A: $out"
echo "ok: status and flashd boot: slot A's interrupted volume is not bootable"
boot_teardown
echo "UBI board: interrupted volume updates are seen by status and flashd boot"
