#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# vm-layout: layouts/nandsim-128m.json
# vm-timeout: 600
#
# Overlay generations across an update (docs/boot.md "Generations") on
# layouts/nandsim-128m.json's board (nandsim, JFFS2 overlay). Every boot
# is what the board does: `flashctl slot boot-select` (the boot script:
# pick, decrement, save) writes the kernel command line, then flashd boot
# --no-exec assembles the union. Both images carry
# keep.d/test (in the build's keep-dir, /etc/flashd/keep.d on a device) listing /etc/keepme and /etc/motd.
#  1. provision v1 into A; boot A: gen-A-1.0; the user writes /etc/keepme,
#     /etc/dropme, deletes /etc/motd
#  2. flashd (target=system) installs v2 into B; boot B: gen-B-2.0 made
#     from gen-A-1.0 with keepme and the deletion of motd migrated, dropme
#     not, the new image's files shown; gen-A-1.0 untouched
#  3. B on trial reboots without mark-good (tries max-2): nothing removed
#  4. rollback to A; boot A: gen-A-1.0's upper exactly as A left it; A was
#     booted before and has max-1 tries = good, so the other generation
#     (gen-B-2.0) is removed, as the rule says
#  5. activate B; boot B: gen-B-2.0 made again from gen-A-1.0, gen-A-1.0
#     kept (first boot of the generation); mark-good; boot B: gen-A-1.0
#     removed, only gen-B-2.0 left, the user's kept file still there
. "$top_srcdir/tests/lib/vm.sh"
. "$top_srcdir/tests/lib/vm-boot.sh"
vm_need_module mtdblock squashfs jffs2 overlay
vm_run modprobe mtdblock
L=$top_srcdir/layouts/nandsim-128m.json
T=/tmp/gen
rm -rf $T; mkdir -p $T/keyring $T/state
export FLASHD_SOCKET=$T/flashd.sock
FLASHD_DIR=$T
trap stop_daemon EXIT

mkimg() { # VERSION
	local d=$T/img-$1
	boot_image "$d"
	echo "VERSION_ID=$1" >"$d/etc/os-release"
	echo "motd of $1" >"$d/etc/motd"
	printf '# test keep-list\n/etc/keepme\n/etc/motd\n' >"$d$BOOT_KEEP_DIR/test"
	vm_mksquashfs "$d" "$T/$1.sqfs" -all-root
	vm_run "$FLASHCTL" -q bundle create --layout "$L" --version "$1" \
		--image rootfs="$T/$1.sqfs" --key $T/k.key -o "$T/$1.bundle"
}
# boot: the boot script's choice into the command line, then the assembly
boot() { # EXPECTED-SLOT
	local sel
	sel=$("$FLASHCTL" slot boot-select --layout "$L" --target system) ||
		vm_fail "boot-select: $sel"
	vm_expect_eq "$sel" "flashd.slot=$1" "boot script's choice"
	echo "console=ttyS0 $sel" >$T/cmdline
	st=$(boot_assemble --mode initramfs --layout "$L" --cmdline $T/cmdline)
	boot_json_parse "$st"
	vm_expect_eq "$(boot_json "$st" .slot)" "$1" "booted slot"
	vm_expect_eq "$(boot_json "$st" .overlay.fstype)" jffs2 "overlay fstype"
}
# the generation directories, sorted, each followed by a space (a glob,
# not ls | tr: process start-up is slow under TCG)
gens() {
	local g out=
	for g in /tmp/st/root/overlay/gen-*; do
		[ -e "$g" ] || [ -L "$g" ] && out+="${g##*/} "
	done
	printf '%s' "$out"
}
union=/tmp/st/root
gen_upper() { echo "/tmp/st/root/overlay/$1/upper"; }
# a listing of an upper layer: every entry with type, mode, size, content hash
upper_list() {
	(cd "$1" && find . -printf '%y %m %s %p %l\n' | sort &&
		find . -type f -exec md5sum {} + | sort -k2)
}

vm_run "$FLASHCTL" -q bundle keygen --out $T/k
cp $T/k.pub $T/keyring/
mkimg 1.0
mkimg 2.0

# ---- 1. provision v1 into A, first boot ---------------------------------
vm_log "1. provision v1, boot A"
# the factory's records go to the state dir flashd uses below: a rollback
# onto A reads A against the signed index its provision recorded
vm_run "$FLASHCTL" provision --layout "$L" --bundle $T/1.0.bundle --keyring $T/keyring \
	--state-dir $T/state system
boot A
vm_expect_eq "$(boot_json "$st" .version)" 1.0 "version of A"
vm_expect_eq "$(boot_json "$st" .overlay.generation.name)" gen-A-1.0 "generation"
vm_expect_eq "$(boot_json "$st" .overlay.generation.created)" true "gen-A-1.0 created"
vm_expect_eq "$(boot_json "$st" .overlay.generation.slot_good)" false "first boot is no proof of good"
vm_expect_eq "$(cat $union/etc/os-release)" VERSION_ID=1.0 "image A in the union"
echo "kept in A" >$union/etc/keepme
echo "dropped in A" >$union/etc/dropme
rm $union/etc/motd
upper_list "$(gen_upper gen-A-1.0)" >$T/a-upper.list
grep -q ' ./etc/keepme ' $T/a-upper.list || vm_fail "keepme not in gen-A-1.0's upper: $(cat $T/a-upper.list)"
boot_teardown

# ---- 2. install v2 into B through the daemon, boot B ---------------------
vm_log "2. flashd installs v2 into B; boot B"
LAYOUT=$L TARGET=system
flashd_conf
start_daemon
"$FLASHCTL" install $T/2.0.bundle >$T/install.out 2>&1 ||
	vm_fail "flashctl install failed: $(cat $T/install.out) $(cat $T/flashd.log)"
grep -q "Installed version 2.0 into slot B" $T/install.out || vm_fail "install output: $(cat $T/install.out)"
stop_daemon

boot B
vm_expect_eq "$(boot_json "$st" .version)" 2.0 "version of B"
vm_expect_eq "$(boot_json "$st" .tries_left)" 2 "B's tries after the boot script"
vm_expect_eq "$(boot_json "$st" .overlay.generation.name)" gen-B-2.0 "generation of B"
vm_expect_eq "$(boot_json "$st" .overlay.generation.created)" true "gen-B-2.0 created"
vm_expect_eq "$(boot_json "$st" .overlay.generation.previous)" gen-A-1.0 "migrated from"
vm_expect_eq "$(boot_json "$st" .overlay.generation.migrated)" 2 "entries migrated (keepme, motd's whiteout)"
vm_expect_eq "$(boot_json "$st" .overlay.generation.slot_good)" false "B on its first boot"
vm_expect_eq "$(cat $union/etc/os-release)" VERSION_ID=2.0 "image B in the union"
vm_expect_eq "$(cat $union/etc/keepme 2>&1)" "kept in A" "keep-listed file migrated"
[ -e $union/etc/dropme ] && vm_fail "/etc/dropme (not in the keep-list) was migrated"
[ -e $union/etc/motd ] && vm_fail "the deletion of the keep-listed /etc/motd was not migrated"
vm_expect_eq "$(gens)" "gen-A-1.0 gen-B-2.0 " "generations after B's first boot"
upper_list "$(gen_upper gen-A-1.0)" | cmp -s - $T/a-upper.list ||
	vm_fail "gen-A-1.0 changed by B's first boot"
echo "written in B" >$union/etc/b-file
boot_teardown

# ---- 3. B on trial reboots without mark-good ---------------------------
vm_log "3. B reboots on trial (no mark-good): old generation kept"
boot B
vm_expect_eq "$(boot_json "$st" .tries_left)" 1 "B's tries on its second trial boot"
vm_expect_eq "$(boot_json "$st" .overlay.generation.created)" false "gen-B-2.0 reused"
vm_expect_eq "$(boot_json "$st" .overlay.generation.boots_before)" 1 "gen-B-2.0 booted before"
vm_expect_eq "$(boot_json "$st" .overlay.generation.slot_good)" false "B on trial (tries max-2)"
vm_expect_eq "$(gens)" "gen-A-1.0 gen-B-2.0 " "generations while B is on trial"
vm_expect_eq "$(cat $union/etc/b-file)" "written in B" "B's own file"
boot_teardown

# ---- 4. roll back to A ----------------------------------------------------
vm_log "4. rollback to A"
vm_run "$FLASHCTL" slot rollback --layout "$L" --target system --cmdline $T/cmdline \
	--config "$FLASHD_DIR/flashd.conf"
boot A
vm_expect_eq "$(boot_json "$st" .overlay.generation.name)" gen-A-1.0 "generation after rollback"
vm_expect_eq "$(boot_json "$st" .overlay.generation.created)" false "gen-A-1.0 reused"
upper_list "$(gen_upper gen-A-1.0)" | diff $T/a-upper.list - ||
	vm_fail "gen-A-1.0's upper is not as A left it (diff above)"
vm_expect_eq "$(cat $union/etc/keepme)" "kept in A" "A's keepme after rollback"
vm_expect_eq "$(cat $union/etc/dropme)" "dropped in A" "A's dropme after rollback"
[ -e $union/etc/motd ] && vm_fail "A's deletion of /etc/motd undone by the rollback"
[ -e $union/etc/b-file ] && vm_fail "B's file visible in A"
vm_expect_eq "$(cat $union/etc/os-release)" VERSION_ID=1.0 "image A after rollback"
# A booted before and, re-activated with full tries, reads max-1: good
vm_expect_eq "$(boot_json "$st" .tries_left)" 2 "A's tries after rollback + boot script"
vm_expect_eq "$(boot_json "$st" .overlay.generation.slot_good)" true "A (booted before, max-1 tries) is good"
vm_expect_eq "$(boot_json "$st" '.overlay.generation.removed | join(" ")')" gen-B-2.0 "removed at A's boot"
vm_expect_eq "$(gens)" "gen-A-1.0 " "generations after the rollback boot"
boot_teardown

# ---- 5. B again, mark-good ---------------------------------------------
vm_log "5. activate B again; boot; mark-good; boot"
vm_run "$FLASHCTL" slot activate B --layout "$L" --target system --cmdline $T/cmdline \
	--config "$FLASHD_DIR/flashd.conf" # its state dir holds the signed index B is read against
boot B
vm_expect_eq "$(boot_json "$st" .overlay.generation.created)" true "gen-B-2.0 made again"
vm_expect_eq "$(boot_json "$st" .overlay.generation.previous)" gen-A-1.0 "migrated from"
vm_expect_eq "$(boot_json "$st" .overlay.generation.slot_good)" false "B's first boot of the generation"
vm_expect_eq "$(gens)" "gen-A-1.0 gen-B-2.0 " "generations after B's first boot"
vm_expect_eq "$(cat $union/etc/keepme)" "kept in A" "keepme migrated again"
[ -e $union/etc/dropme ] && vm_fail "/etc/dropme migrated"
[ -e $union/etc/b-file ] && vm_fail "b-file of the removed generation is back"
echo "kept in B" >$union/etc/keepme
boot_teardown
vm_run "$FLASHCTL" slot mark-good --layout "$L" --target system --cmdline $T/cmdline
boot B
vm_expect_eq "$(boot_json "$st" .tries_left)" 2 "B's tries after mark-good + boot script"
vm_expect_eq "$(boot_json "$st" .overlay.generation.slot_good)" true "B marked good"
vm_expect_eq "$(boot_json "$st" '.overlay.generation.removed | join(" ")')" gen-A-1.0 "removed at B's boot"
vm_expect_eq "$(gens)" "gen-B-2.0 " "generations after mark-good"
vm_expect_eq "$(cat $union/etc/keepme)" "kept in B" "B's data after the clean-up"
boot_teardown
# one more boot: nothing left to remove
boot B
vm_expect_eq "$(boot_json "$st" '.overlay.generation.removed | length')" 0 "removed on the next boot"
vm_expect_eq "$(gens)" "gen-B-2.0 " "generations"
boot_teardown
echo "overlay generations: keep-list migration, rollback intact, clean-up after mark-good ok"
