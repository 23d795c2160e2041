# SPDX-License-Identifier: LGPL-2.1-or-later
# shellcheck shell=bash
# Host-driven boots of the harness kernel (tests/initramfs/): the test
# builds its own initramfs and root, provisions the board in the harness
# VM (nandsim/vm-run --flash) and powers qemu on itself, as the appliance
# runner does. Sourced after common.sh.
#
#   vmhost_kernel              fetch the harness kernel (vm-run --prepare);
#                              sets KDIR (kernel, root/lib/modules) and KVER
#   vmhost_workdir NAME        a work dir the harness guest can read (not
#                              /tmp), removed at exit; sets W
#   vmhost_provision LAYOUT BUNDLE CHIP
#                              flashctl provision of a blank board in the
#                              harness VM; the chip saved to CHIP
#   vmhost_boot INITRD APPEND DIR [TIMEOUT]
#                              power on with DIR as the 9p share "out"
#                              (the board set-up restores DIR/flash.nv);
#                              the serial console in DIR/console; sets rc

vmhost_kernel() {
	local ready
	ready=$("$top_srcdir/nandsim/vm-run" --prepare 2>&1 | tail -n 1) || fail "vm-run --prepare: $ready"
	KDIR=$(echo "$ready" | sed -n 's/^vm-run: ready: \(.*\) (.*)$/\1/p')
	[ -d "$KDIR/root/lib/modules" ] || fail "no harness kernel: $ready"
	KVER=$(basename "$KDIR")
}

vmhost_workdir() {
	W=$(mktemp -d "$KDIR/../$1.XXXXXX")
	# shellcheck disable=SC2064
	trap "rm -rf '$W'" EXIT
}

vmhost_provision() {
	"$top_srcdir/nandsim/vm-run" -q --flash "$3" -l "$1" "$top_srcdir/nandsim/appliance/provision.sh" \
		"$1" "$2" >"$3.log" 2>&1 || { cat "$3.log"; fail "provisioning failed"; }
}

vmhost_boot() {
	rc=0
	# FLASHD_VM_TIMEOUT_SCALE: as nandsim/vm-run
	timeout -k 10 "$(( ${4:-${FLASHD_VM_TIMEOUT:-300}} * ${FLASHD_VM_TIMEOUT_SCALE:-1} ))" qemu-system-x86_64 \
		-accel tcg -cpu max -m "${FLASHD_VM_MEM:-768}" -smp "${FLASHD_VM_SMP:-2}" \
		-nodefaults -display none -monitor none -no-reboot -serial "file:$3/console" \
		-kernel "$KDIR/kernel" -initrd "$1" -append "console=ttyS0 panic=-1 no_timer_check loglevel=4 $2" \
		-virtfs "local,path=$3,mount_tag=out,security_model=none,multidevs=remap" \
		</dev/null >"$3/qemu.log" 2>&1 || rc=$?
}
