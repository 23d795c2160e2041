# SPDX-License-Identifier: LGPL-2.1-or-later
# shellcheck shell=bash
# Helpers shared by tests/vm/test-boot-*.sh (sourced after tests/lib/vm.sh):
# root images, flashd boot --no-exec and its state; the daemon of
# tests/lib/daemon.sh for the tests that install through it.
. "$TEST_LIB/daemon.sh"
[ -x "$FLASHD" ] || vm_fail "$FLASHD: not built"
# where this build's flashd boot reads the layout and, in the root images,
# the keep-lists (configure's sysconfdir: /etc/flashd on a device)
BOOT_LAYOUT=$(flashd_path layout)
BOOT_KEEP_DIR=$(flashd_path keep-dir)

# boot_image DIR: a root image tree with busybox (the image's shell) and
# the mount points flashd boot and the init need.
boot_image() {
	local d=$1
	mkdir -p "$d"/{bin,sbin,etc,proc,sys,dev,run,tmp,rom,overlay,mnt} "$d$BOOT_KEEP_DIR" \
		"$d$(dirname "$BOOT_LAYOUT")"
	cp /bin/busybox "$d/bin/busybox"
	for a in sh cat grep echo ls mount mv rm; do ln -sf busybox "$d/bin/$a"; done
}

# boot_add_flashd DIR: flashd and its shared libraries (ldd), as an
# initramfs or a preinit root needs them.
boot_add_flashd() {
	local d=$1 lib
	mkdir -p "$d/usr/sbin"
	cp "$FLASHD" "$d/usr/sbin/flashd"
	for lib in $(ldd "$FLASHD" | sed -n 's/.*=> \(\/[^ ]*\).*/\1/p; s/^\t\(\/[^ ]*\) .*/\1/p'); do
		mkdir -p "$d$(dirname "$lib")"
		cp -L "$lib" "$d$lib"
	done
}

# boot_assemble ARGS...: flashd boot --no-exec into /tmp/st; the state
# JSON on stdout (the test's log gets flashd's messages).
boot_assemble() {
	local out rc
	out=$("$FLASHD" boot --stage /tmp/st --state /tmp/st.json --no-exec "$@" 2>/tmp/boot.err); rc=$?
	cat /tmp/boot.err >&2
	[ $rc = 0 ] || vm_fail "flashd boot $* exited $rc: $(cat /tmp/boot.err)"
	printf '%s\n' "$out"
}

# boot_teardown: unmount what boot_assemble mounted (the union, the
# layers moved into it, the image).
boot_teardown() {
	local m
	for m in $(awk '$2 ~ "^/tmp/st(/|$)" {print $2}' /proc/mounts | sort -r); do
		umount "$m" || vm_fail "umount $m: $(grep " $m " /proc/mounts)"
	done
}

boot_json() { # STATE FILTER (false is a value; only a missing field fails)
	local v
	v=$(jq -r "$2" <<<"$1" 2>/dev/null) && [ "$v" != null ] || vm_fail "boot state has no $2: $1"
	printf '%s\n' "$v"
}

# boot_nand_board: the boot tests' board, layouts/nandsim-128m.json on
# nandsim with the drivers flashd boot needs; $L, $rootfs (rootfs-a) and
# $data (rootfs_data).
boot_nand_board() {
	vm_need_module mtdblock squashfs jffs2 overlay dm-mod
	vm_run modprobe mtdblock
	vm_run modprobe dm-mod
	L=$top_srcdir/layouts/nandsim-128m.json
	rootfs=$(vm_mtd_by_name rootfs-a) data=$(vm_mtd_by_name rootfs_data)
}

# boot_factory_reset ARGS...: FLASHD_OVERLAY_RESET=1 in the env, then
# boot_assemble ARGS; the reset is done and its flag cleared ($st: the state).
boot_factory_reset() {
	vm_run "$FLASHCTL" env set --force --layout "$L" FLASHD_OVERLAY_RESET=1
	st=$(boot_assemble "$@")
	vm_expect_eq "$(boot_json "$st" .overlay.reset_done)" true "reset done"
	vm_expect_eq "$(boot_json "$st" .reset_cleared)" true "reset flag cleared"
}
