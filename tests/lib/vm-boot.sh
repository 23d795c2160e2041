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
		"$d${BOOT_LAYOUT%/*}"
	cp /bin/busybox "$d/bin/busybox"
	for a in sh cat grep echo ls mount mv rm; do ln -sf busybox "$d/bin/$a"; done
}

# boot_add_flashd DIR: flashd and its shared libraries (ldd), as an
# initramfs or a preinit root needs them.
boot_add_flashd() {
	local d=$1 libs
	mkdir -p "$d/usr/sbin"
	cp "$FLASHD" "$d/usr/sbin/flashd"
	libs=$(ldd "$FLASHD" | sed -n 's/.*=> \(\/[^ ]*\).*/\1/p; s/^\t\(\/[^ ]*\) .*/\1/p')
	# one cp for all (--parents makes the directories): a process costs ~0.2 s under TCG
	# shellcheck disable=SC2086
	[ -z "$libs" ] || cp -L --parents $libs "$d/" || vm_fail "cannot copy flashd's libraries into $d"
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
	# a plain .a.b path of the state boot_json_parse read: no jq run
	if [ "$1" = "$BOOT_JSON_OF" ] && [[ $2 =~ ^(\.[A-Za-z_][A-Za-z0-9_]*)+$ ]] &&
		[ -n "${BOOT_JSON_V[$2]+set}" ]; then
		printf '%s\n' "${BOOT_JSON_V[$2]}"
		return 0
	fi
	v=$(jq -r "$2" <<<"$1" 2>/dev/null) && [ "$v" != null ] || vm_fail "boot state has no $2: $1"
	printf '%s\n' "$v"
}

# boot_json_parse STATE: one jq run reads every scalar of STATE (not
# null) for the boot_json calls on it that follow: jq starts in ~0.3 s
# under TCG, and a boot's state is read a dozen times. Call it in the
# test's shell (not in a $(...)), after st=$(boot_assemble ...).
declare -A BOOT_JSON_V=()
BOOT_JSON_OF=
boot_json_parse() {
	local assigns
	BOOT_JSON_V=() BOOT_JSON_OF=
	assigns=$(jq -r 'paths as $p | getpath($p) as $v
		| select(($v | type) != "object" and ($v | type) != "array" and $v != null and $v != "null")
		| select($p | all(type == "string"))
		| "BOOT_JSON_V[" + ("." + ($p | join(".")) | @sh) + "]=" + ($v | tostring | @sh)' <<<"$1" 2>/dev/null) ||
		return 0    # not JSON: boot_json's jq says so
	eval "$assigns"
	BOOT_JSON_OF=$1
}

# boot_nand_board: the boot tests' board, layouts/nandsim-128m.json on
# nandsim with the drivers flashd boot needs; $L, $rootfs (rootfs-a) and
# $data (rootfs_data).
boot_nand_board() {
	vm_need_module mtdblock squashfs jffs2 overlay dm-mod
	vm_run modprobe -a mtdblock dm-mod
	L=$top_srcdir/layouts/nandsim-128m.json
	rootfs=$(vm_mtd_by_name rootfs-a) data=$(vm_mtd_by_name rootfs_data)
}

# boot_factory_reset ARGS...: FLASHD_OVERLAY_RESET=1 in the env, then
# boot_assemble ARGS; the reset is done and its flag cleared ($st: the state).
boot_factory_reset() {
	vm_run "$FLASHCTL" env set --force --layout "$L" FLASHD_OVERLAY_RESET=1
	st=$(boot_assemble "$@")
	boot_json_parse "$st"
	vm_expect_eq "$(boot_json "$st" .overlay.reset_done)" true "reset done"
	vm_expect_eq "$(boot_json "$st" .reset_cleared)" true "reset flag cleared"
}
