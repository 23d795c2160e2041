#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# vm-layout: layouts/nandsim-128m.json
# vm-nandsim-extra: badblocks=50
# vm-boots: 2
# vm-timeout: 400
#
# Non-volatile flash across VM power cycles (nandsim/nvflash.c, vm-run
# --boots/--flash): the chip saved at power-off of boot 1 is what boot 2
# finds after the restore, byte for byte with OOB, bad blocks included.
#  boot 1: a random pattern nandwritten over rootfs-a (mtd4) across the
#          load-time bad block 50 (= mtd4 block 8), a JFFS2 file on
#          rootfs_data (mtd7), block 3 of rootfs-b (mtd6) marked bad at run
#          time; raw dumps (data + OOB) and bad block lists go to $VM_OUT.
#  boot 2: a fresh nandsim (RAM, erased), restored by the harness before
#          the test: the raw dumps and bad block lists are equal, the file
#          reads back from JFFS2, and nvflash's timings are in the log.
. "$top_srcdir/tests/lib/vm.sh"
vm_need_flashctl flash markbad

# dumps: raw (data + OOB, bad blocks included) of what the test wrote
dumps() {
	nanddump -q --noecc --oob --bb=dumpbad -l $((12 * 131072)) -f /tmp/mtd4.raw /dev/mtd4 &&
	nanddump -q --noecc --oob --bb=dumpbad -l $((6 * 131072)) -f /tmp/mtd6.raw /dev/mtd6 &&
	nanddump -q --noecc --oob --bb=dumpbad -l $((40 * 131072)) -f /tmp/mtd7.raw /dev/mtd7 ||
		vm_fail "nanddump failed"
	md5sum /tmp/mtd4.raw /tmp/mtd6.raw /tmp/mtd7.raw | cut -d' ' -f1
}
# (one jq run for the eight devices: jq costs 0.3 s under TCG)
bad_lists() {
	local d j all=
	for d in 0 1 2 3 4 5 6 7; do
		j=$("$FLASHCTL" --json flash info /dev/mtd$d) || vm_fail "flashctl flash info /dev/mtd$d: $j"
		all+="{\"mtd$d\": $j}"
	done
	jq -r 'to_entries[] | "\(.key): \(.value.bad_blocks | map(tostring) | join(" "))"' <<<"$all" ||
		vm_fail "flashctl flash info: not JSON: $all"
}

case "$VM_BOOT" in
1)
	vm_log "boot 1: write a pattern, a JFFS2 file, mark a block bad"
	head -c $((2 * 1024 * 1024)) /dev/urandom >/tmp/pattern
	vm_run nandwrite -q -p /dev/mtd4 /tmp/pattern
	vm_run "$FLASHCTL" flash erase --jffs2 /dev/mtd7
	mkdir -p /tmp/data
	vm_run mount -t jffs2 mtd7 /tmp/data
	cp /tmp/pattern /tmp/data/user-file && echo "persistent" >/tmp/data/note ||
		vm_fail "cannot write to JFFS2"
	vm_run umount /tmp/data
	vm_run "$FLASHCTL" flash markbad /dev/mtd6 $((3 * 131072))
	bad_lists >"$VM_OUT/bad.1"
	grep -qx "mtd4: 8" "$VM_OUT/bad.1" || vm_fail "load-time bad block 50 is not mtd4 block 8: $(cat "$VM_OUT/bad.1")"
	grep -qx "mtd6: 3" "$VM_OUT/bad.1" || vm_fail "markbad of mtd6 block 3 not seen: $(cat "$VM_OUT/bad.1")"
	dumps >"$VM_OUT/sums.1"
	md5sum </tmp/pattern | cut -d' ' -f1 >"$VM_OUT/pattern.md5"
	cat "$VM_OUT/bad.1"
	;;
2)
	vm_log "boot 2: the restored chip equals boot 1's"
	[ -s "$VM_OUT/sums.1" ] || vm_fail "boot 1 left no dumps"
	grep -q "nvflash: restored" "$VM_OUT/output" || vm_fail "the harness did not restore the chip"
	bad_lists >"$VM_OUT/bad.2"
	cat "$VM_OUT/bad.2"
	diff "$VM_OUT/bad.1" "$VM_OUT/bad.2" || vm_fail "bad blocks differ after the power cycle"
	dumps >"$VM_OUT/sums.2"
	diff "$VM_OUT/sums.1" "$VM_OUT/sums.2" || vm_fail "raw flash (data + OOB) differs after the power cycle"
	# nandwrite skipped the bad block: the pattern is in the good blocks
	nanddump -q --bb=skipbad -l $((2 * 1024 * 1024)) -f /tmp/back /dev/mtd4 || vm_fail "nanddump mtd4"
	vm_expect_eq "$(md5sum </tmp/back | cut -d' ' -f1)" "$(cat "$VM_OUT/pattern.md5")" "pattern on mtd4"
	mkdir -p /tmp/data
	vm_mark
	vm_run mount -t jffs2 mtd7 /tmp/data
	vm_expect_eq "$(md5sum </tmp/data/user-file | cut -d' ' -f1)" "$(cat "$VM_OUT/pattern.md5")" "JFFS2 file"
	vm_expect_eq "$(cat /tmp/data/note)" persistent "JFFS2 note"
	vm_run umount /tmp/data
	if vm_dmesg_since_mark | grep -E 'jffs2.*(cleanmarker|Empty flash|Magic bitmask|CRC failed|not found at)'; then
		vm_fail "the JFFS2 scan complained after the restore"
	fi
	echo "non-volatile flash: pattern, OOB, JFFS2 and bad blocks survived the power cycle"
	;;
*) vm_fail "unexpected VM_BOOT=$VM_BOOT" ;;
esac
