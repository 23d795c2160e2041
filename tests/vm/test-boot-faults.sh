#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# vm-layout: layouts/nandsim-128m.json
# vm-timeout: 900
# vm-alone: long (5 min and more under load): a boot of its own keeps the pool balanced
#
# flashd boot under faults, on nandsim-128m's JFFS2 overlay (issue 14):
#  1. a factory reset whose env store fails (the env partitions seen
#     through their read-only /dev/mtdNro nodes in a private namespace):
#     the erase is done once, marked on the layer, the state warns; the
#     next boot with the flag still set does NOT erase the user's new
#     data; a boot with a writable env clears the flag (14.5)
#  2. the overlay fills up during a migration, at two fill levels: the
#     union stays writable (tmpfs upper), result degraded with the reason,
#     no .tmp left, the old generation byte for byte; once space is freed
#     the next boot migrates (14.3)
#  3. flashd boot killed (SIGKILL) at growing delays during a migration
#     of 400 kept files: after each kill the old generation is unchanged;
#     the next complete boot has every kept file (the .tmp is redone)
. "$top_srcdir/tests/lib/vm.sh"
. "$top_srcdir/tests/lib/vm-boot.sh"
boot_nand_board
env1=$(vm_mtd_by_name u-boot-env) env2=$(vm_mtd_by_name u-boot-env-redund)

boot_image /tmp/img
echo "image A" >/tmp/img/etc/issue
printf '/etc/big\n/etc/many\n/etc/keep\n' >"/tmp/img$BOOT_KEEP_DIR/test"
vm_mksquashfs /tmp/img /tmp/a.sqfs -all-root
vm_flashctl flash write "$rootfs" /tmp/a.sqfs
vm_run "$FLASHCTL" env init --layout "$L" FLASHD_A_VERSION=1.0
echo "console=ttyS0 flashd.slot=A" >/tmp/cmdline
# slot init trusts the running slot (A here) and what it reads, not records
vm_run "$FLASHCTL" slot init --layout "$L" --cmdline /tmp/cmdline
vm_run flash_erase -q "$data" 0 0
union=/tmp/st/root
assemble() { boot_assemble --mode initramfs --layout "$L" --cmdline /tmp/cmdline; }
# boot: assemble, its state in $st and its fields in bs_* (one jq run for them all)
boot() { st=$(assemble) || vm_fail "flashd boot failed"; vm_json_leaves bs "$st"; }
listing() { (cd "$1" && find . -printf '%y %m %s %p %l\n' | sort && find . -type f -exec md5sum {} + | sort -k2); }

# ro_env_boot SCRIPT: flashd boot with the env partitions read-only (their
# mtdNro nodes bound over the rw ones), then SCRIPT, in one namespace
ro_env_boot() {
	unshare -m --propagation private bash -c '
		set -e
		mount --bind '"${env1}ro ${env1}"'; mount --bind '"${env2}ro ${env2}"'
		'"$FLASHD"' boot --mode initramfs --layout '"$L"' --cmdline /tmp/cmdline \
			--stage /tmp/st --state /tmp/st.json --no-exec >/dev/null 2>/tmp/boot.err ||
			{ cat /tmp/boot.err; exit 1; }
		cat /tmp/boot.err >&2
		'"$1"
}

# ---- 1. factory reset with a failing env store --------------------------
vm_log "1. factory reset, env store fails"
boot
vm_expect_eq "$bs_result" ok "first boot"
echo "before reset" >$union/etc/u1
boot_teardown
vm_run "$FLASHCTL" env set --force --layout "$L" FLASHD_OVERLAY_RESET=1
out=$(ro_env_boot 'echo "after reset" >/tmp/st/root/etc/u2; ls /tmp/st/root/etc/u1 2>&1 || true') ||
	vm_fail "boot with a read-only env: $out"
printf '%s\n' "$out"
vm_json_leaves bs "$(</tmp/st.json)"
vm_expect_eq "$bs_overlay_reset_done" true "reset done"
vm_expect_eq "$bs_reset_cleared" false "flag not cleared (env read-only)"
grep -q "the erase is not repeated" <<<"$bs_warnings" ||
	vm_fail "no warning about the uncleared flag: $bs_warnings"
grep -q "No such file" <<<"$out" || vm_fail "u1 survived the reset"
vm_expect_eq "$("$FLASHCTL" env get -n --layout "$L" FLASHD_OVERLAY_RESET 2>&1)" 1 "flag still set"

vm_log "1b. next boot, flag still set, env still read-only: no second erase"
out=$(ro_env_boot 'cat /tmp/st/root/etc/u2') || vm_fail "second boot with a read-only env: $out"
vm_expect_eq "$(tail -n 1 <<<"$out")" "after reset" "data written after the reset survives"
vm_json_leaves bs "$(</tmp/st.json)"
vm_expect_eq "$bs_overlay_reset_done" false "no second erase"
vm_expect_eq "$bs_overlay_reset_done_earlier" true "reset found done"

vm_log "1c. env writable again: the flag is cleared, nothing erased"
boot
vm_expect_eq "$bs_reset_cleared" true "flag cleared"
vm_expect_eq "$bs_overlay_reset_done" false "still no second erase"
vm_expect_eq "$(<$union/etc/u2)" "after reset" "u2 still there"
[ -e $union/overlay/.flashd-reset-done ] && vm_fail "reset mark left after the flag was cleared"
"$FLASHCTL" env get -n --layout "$L" FLASHD_OVERLAY_RESET >/dev/null 2>&1 && vm_fail "flag still set"

# ---- 2. the overlay fills up during the migration -----------------------
vm_log "2. overlay full during migration"
head -c $((6 * 1024 * 1024)) /dev/urandom >$union/etc/big
echo "kept" >$union/etc/keep
mkdir -p $union/etc/many
# 400 files of 2 KiB (f001 ... f400) from one read: a process each costs
# 0.1-0.3 s under TCG
head -c $((400 * 2048)) /dev/urandom | split -b 2048 -a 3 --numeric-suffixes=1 - $union/etc/many/f
sync
listing $union/overlay/gen-A-1.0/upper >/tmp/a1.list
boot_teardown
v=10
for free_kib in 3072 64; do
	# fill /overlay (beside the generations) up to FREE KiB left
	vm_run "$FLASHCTL" env set --force --layout "$L" FLASHD_A_VERSION=1.0
	st=$(assemble)
	avail=$(df -k --output=avail $union/overlay | tail -n 1)
	fill=$((avail - free_kib))
	# the filler stored as it is (compr=none, on this mount only; the
	# next boot mounts with the defaults): zeros then take their whole
	# size, where random data cost JFFS2's three compressors' tries,
	# 6 s of 75 under TCG
	vm_run mount -o remount,compr=none $union/overlay
	[ $fill -gt 0 ] && head -c $((fill * 1024)) /dev/zero >$union/overlay/filler 2>/dev/null
	sync
	vm_log "filled: $(df -k --output=avail $union/overlay | tail -n 1) KiB free"
	boot_teardown
	v=$((v + 1))
	vm_run "$FLASHCTL" env set --force --layout "$L" FLASHD_A_VERSION=$v.0
	boot
	vm_expect_eq "$bs_result" degraded "[$free_kib KiB free] result"
	vm_expect_eq "$bs_overlay_fallback" true "[$free_kib KiB free] fallback"
	vm_expect_eq "$bs_overlay_persistent" false "[$free_kib KiB free] not persistent"
	grep -q "No space left" <<<"$bs_overlay_generation_error" ||
		vm_fail "[$free_kib KiB free] reason: $bs_overlay_generation_error"
	grep -q "NOT PERSISTENT" <<<"$bs_warnings" || vm_fail "[$free_kib KiB free] no warning: $bs_warnings"
	echo writable >$union/etc/probe || vm_fail "[$free_kib KiB free] union not writable"
	ls -d $union/overlay/*.tmp 2>/dev/null && vm_fail "[$free_kib KiB free] .tmp left"
	vm_expect_eq "$(<$union/overlay/.flashd-last)" gen-A-1.0 "[$free_kib KiB free] last generation"
	listing $union/overlay/gen-A-1.0/upper | cmp -s - /tmp/a1.list ||
		vm_fail "[$free_kib KiB free] gen-A-1.0 changed"
	rm -f $union/overlay/filler
	boot_teardown
done
vm_log "2b. space freed: the migration is done"
vm_run "$FLASHCTL" env set --force --layout "$L" FLASHD_A_VERSION=2.0
boot
vm_expect_eq "$bs_result" ok "after freeing space"
vm_expect_eq "$bs_overlay_generation_name" gen-A-2.0 "generation"
vm_expect_eq "$bs_overlay_generation_previous" gen-A-1.0 "migrated from"
cmp $union/etc/big $union/overlay/gen-A-1.0/upper/etc/big || vm_fail "big file not migrated"
vm_expect_eq "$(ls $union/etc/many | wc -l)" 400 "many files migrated"
listing $union/overlay/gen-A-2.0/upper/etc >/tmp/a2-etc.list
boot_teardown

# ---- 3. killed during a migration ---------------------------------------
vm_log "3. flashd boot killed during the migration"
vm_run "$FLASHCTL" env set --force --layout "$L" FLASHD_A_VERSION=3.0
kills=0
for delay in 0.05 0.1 0.2 0.3 0.5 0.8 1.2 1.8 2.5 3.5 5 7 10; do
	"$FLASHD" boot --mode initramfs --layout "$L" --cmdline /tmp/cmdline --stage /tmp/st \
		--state /tmp/st.json --no-exec >/dev/null 2>/tmp/boot.err &
	pid=$!
	sleep $delay
	if ! kill -9 $pid 2>/dev/null; then
		wait $pid
		vm_log "finished before ${delay}s: $kills kills"
		break
	fi
	wait $pid 2>/dev/null
	kills=$((kills + 1))
	boot_teardown
	mkdir -p /tmp/j && vm_run mount -t jffs2 "mtd${data#/dev/mtd}" /tmp/j
	listing /tmp/j/gen-A-2.0/upper/etc | cmp -s - /tmp/a2-etc.list ||
		vm_fail "killed after ${delay}s: gen-A-2.0 changed"
	last=$(</tmp/j/.flashd-last)
	[ "$last" = gen-A-2.0 ] || [ "$last" = gen-A-3.0 ] ||
		vm_fail "killed after ${delay}s: .flashd-last is '$last'"
	vm_run umount /tmp/j
done
[ $kills -ge 2 ] || vm_fail "only $kills kills landed during the migration"
boot_teardown
boot
vm_expect_eq "$bs_result" ok "boot after $kills kills"
vm_expect_eq "$bs_overlay_generation_name" gen-A-3.0 "generation after the kills"
listing $union/overlay/gen-A-3.0/upper/etc >/tmp/a3-etc.list
diff /tmp/a2-etc.list /tmp/a3-etc.list >/dev/null ||
	vm_fail "kept files differ after the kills: $(diff /tmp/a2-etc.list /tmp/a3-etc.list | head)"
ls -d $union/overlay/*.tmp 2>/dev/null && vm_fail ".tmp left after the complete boot"
echo writable >$union/etc/probe || vm_fail "union not writable"
boot_teardown
echo "flashd boot under faults: reset with a failing env store, full overlay at 2 levels, $kills kills during a migration: ok"
