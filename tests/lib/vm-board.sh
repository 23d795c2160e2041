# SPDX-License-Identifier: LGPL-2.1-or-later
# shellcheck shell=bash
# The VM tests' flashd board (tests/vm/test-faults-*.sh,
# tests/vm/test-crash-*.sh), sourced after tests/lib/vm.sh inside the
# harness VM; the daemon is tests/lib/daemon.sh's (dir $FW). The board is layouts/nandsim-128m.json on the kernel's
# nandsim with parts= from the layout. flashd and flashctl find partitions
# by MTD name under /sys/class/mtd, but nandsim names them "NAND simulator
# partition N", and Debian's kernel can neither rename them nor re-create
# them with names (no cmdlinepart, no partitioned master: mtdpart on
# nandsim's mtd0 is EINVAL). So fw_load_board bind-mounts a copy of
# /sys/class/mtd over it in which mtdN/name is the layout's name of
# partition N (kernel order) and every other attribute is a symlink to
# the live sysfs file (counters, bad blocks stay real); /dev/mtdN are the
# real devices.
#
# Erase blocks (128 KiB) of the board: u-boot 0-7, u-boot-env 8,
# u-boot-env-redund 9, kernel-a 10-41, rootfs-a 42-361, kernel-b 362-393,
# rootfs-b 394-713, rootfs_data 714-1023; 64 pages of 2 KiB per block.
. "$TEST_LIB/daemon.sh"
[ -x "$FLASHD" ] || vm_fail "$FLASHD: not built"
FL=$top_srcdir/layouts/nandsim-128m.json
FW=/tmp/fw
LAYOUT=$FL
TARGET=system
FLASHD_DIR=$FW
export FLASHD_SOCKET=$FW/flashd.sock

FW_NANDSIM=$(jq -r .params <<<"$("$FLASHCTL" --json layout nandsim "$FL")") ||
	vm_fail "flashctl layout nandsim $FL"
# partition names in kernel order (by offset)
mapfile -t FW_PARTS < <(jq -r '.partitions[].name' "$FL")  # listed in offset order
FW_SYSFS=/tmp/fw-sysfs-mtd

fw_unname() {
	while grep -q " /sys/class/mtd " /proc/mounts; do umount /sys/class/mtd || break; done
}

# A process costs 0.1-0.3 s under TCG: the view is made with one readlink
# for every entry and one ln per directory, not one per attribute.
fw_name_partitions() {
	local n real i=0
	local -a entries reals
	fw_unname
	rm -rf "$FW_SYSFS"
	mkdir -p "$FW_SYSFS"
	entries=(/sys/class/mtd/*)
	mapfile -t reals < <(readlink -f "${entries[@]}")
	[ ${#reals[@]} = ${#entries[@]} ] || vm_fail "readlink -f of /sys/class/mtd/*: ${reals[*]}"
	for n in "${entries[@]##*/}"; do
		real=${reals[i++]}
		if [[ $n =~ ^mtd([0-9]+)$ ]] && [ "${BASH_REMATCH[1]}" -lt ${#FW_PARTS[@]} ]; then
			mkdir "$FW_SYSFS/$n"
			ln -s "$real"/* "$FW_SYSFS/$n/" || vm_fail "cannot link $real's attributes"
			rm "$FW_SYSFS/$n/name"
			echo "${FW_PARTS[${BASH_REMATCH[1]}]}" >"$FW_SYSFS/$n/name"
		else
			ln -s "$real" "$FW_SYSFS/$n"
		fi
	done
	mount --bind "$FW_SYSFS" /sys/class/mtd || vm_fail "cannot bind-mount the named sysfs view"
}

# fw_load_board [NANDSIM FAULT PARAMS...]: a fresh simulated chip, named.
fw_load_board() {
	stop_daemon
	fw_unname
	# shellcheck disable=SC2086
	vm-load-board -m nandsim $FW_NANDSIM "$@" >/tmp/fw-load.log 2>&1 ||
		vm_fail "vm-load-board nandsim $* failed: $(cat /tmp/fw-load.log)"
	fw_name_partitions
	[ "$(vm_mtd_by_name rootfs-b)" = /dev/mtd6 ] || vm_fail "partition naming: rootfs-b is not mtd6"
}

# fw_keys_and_bundles: signing key, keyring, v1.bundle and v2.bundle
# ($FW_V1_MIB / $FW_V2_MIB MiB of incompressible data, default 2 and 3)
# with their squashfs images in $FW.
fw_keys_and_bundles() {
	rm -rf "$FW"
	mkdir -p "$FW/keyring" "$FW/state"
	vm_run "$FLASHCTL" -q bundle keygen --out "$FW/rel"
	cp "$FW/rel.pub" "$FW/keyring/"
	local v mib
	for v in 1 2; do
		mib=${FW_V1_MIB:-2}
		[ $v = 2 ] && mib=${FW_V2_MIB:-3}
		mkdir -p "$FW/root$v/etc"
		echo "VERSION_ID=$v.0" >"$FW/root$v/etc/os-release"
		head -c $((mib * 1024 * 1024)) /dev/urandom >"$FW/root$v/payload"
		# -noD: random data does not compress; trying costs seconds under TCG
		vm_run mksquashfs "$FW/root$v" "$FW/v$v.sqfs" -noappend -quiet -no-progress -noD
		vm_run "$FLASHCTL" -q bundle create --layout "$FL" --version "$v.0" \
			--image "rootfs=$FW/v$v.sqfs" --key "$FW/rel.key" -o "$FW/v$v.bundle"
	done
}

# fw_provision: the blank chip gets v1 in slot A, env, overlay (flashctl provision).
fw_provision() {
	"$FLASHCTL" provision --layout "$FL" --bundle "$FW/v1.bundle" --keyring "$FW/keyring" \
		system >/tmp/fw-prov.log 2>&1 || vm_fail "flashctl provision system failed: $(tail -n 20 /tmp/fw-prov.log)"
	echo "flashd.slot=A" >"$FW/cmdline"
	flashd_conf
}

# fw_slot_sha MTD-NAME LENGTH: sha256 of the first LENGTH good bytes
fw_slot_sha() {
	"$FLASHCTL" flash read --length "$2" "mtd:$1" /tmp/fw-read.bin >/dev/null 2>&1 || return 1
	fw_file_sha /tmp/fw-read.bin
}

# (the hash cut from sha256sum's line by the shell: no cut process)
fw_file_sha() { local h; h=$(sha256sum <"$1") && echo "${h%% *}"; }

# fw_info_vars PREFIX MTD-NAME: PREFIX_corrected, PREFIX_failed, PREFIX_bad
fw_info_vars() {
	local j
	j=$("$FLASHCTL" --json flash info "mtd:$2") || vm_fail "flashctl flash info mtd:$2: $j"
	vm_json_leaves fw_info "$j"  # one jq run, not one a field
	printf -v "$1_corrected" '%s' "$fw_info_ecc_corrected"
	printf -v "$1_failed" '%s' "$fw_info_ecc_failed"
	printf -v "$1_bad" '%s' "${fw_info_bad_blocks//$'\n'/ }"
}
