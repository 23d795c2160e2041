# shellcheck shell=bash
# Helpers for the fault-injection and crash tests (tests/vm/test-faults-*.sh,
# tests/vm/test-crash-*.sh), sourced after nandsim/vm/testlib.sh inside the
# harness VM. The board is layouts/nandsim-128m.json on the kernel's
# nandsim, its partitions made with mtdpart so that they carry the
# layout's names (flashd finds partitions by MTD name; nandsim's parts=
# would name them "NAND simulator partition N").
#
# Erase blocks (128 KiB) of the board: u-boot 0-7, u-boot-env 8,
# u-boot-env-redund 9, kernel-a 10-41, rootfs-a 42-361, kernel-b 362-393,
# rootfs-b 394-713, rootfs_data 714-1023; 64 pages of 2 KiB per block.
FLASHD=${FLASHD:-$top_builddir/flashd}
[ -x "$FLASHD" ] || vm_fail "$FLASHD: not built"
FL=$top_srcdir/layouts/nandsim-128m.json
FW=/tmp/fw
export FLASHD_SOCKET=$FW/flashd.sock
DAEMON_PID=

fw_mtdparts() {
	local s
	s=$(jq -r .mtdparts <<<"$("$FLASHCTL" --json layout nandsim "$FL")") ||
		vm_fail "flashctl layout nandsim $FL"
	echo "${s#*:}"
}
FW_NANDSIM_ID=id_bytes=0x20,0xf1,0x00,0x15
FW_MTDPARTS=$(fw_mtdparts)

# fw_load_board [NANDSIM FAULT PARAMS...]: a fresh simulated chip.
fw_load_board() {
	fw_stop_daemon
	vm-load-board -m nandsim "$FW_NANDSIM_ID" "$@" --mtdparts "$FW_MTDPARTS" >/tmp/fw-load.log 2>&1 ||
		vm_fail "vm-load-board nandsim $* failed: $(cat /tmp/fw-load.log)"
}

# fw_keys_and_bundles: signing key, keyring, v1.bundle (2 MiB) and v2.bundle
# (3 MiB, incompressible) with their squashfs images in $FW.
fw_keys_and_bundles() {
	rm -rf "$FW"
	mkdir -p "$FW/keyring" "$FW/state"
	vm_run "$FLASHCTL" -q bundle keygen --out "$FW/rel"
	cp "$FW/rel.pub" "$FW/keyring/"
	local v mib
	for v in 1 2; do
		mib=$((v + 1))
		mkdir -p "$FW/root$v/etc"
		echo "VERSION_ID=$v.0" >"$FW/root$v/etc/os-release"
		head -c $((mib * 1024 * 1024)) /dev/urandom >"$FW/root$v/payload"
		vm_run mksquashfs "$FW/root$v" "$FW/v$v.sqfs" -noappend -quiet -no-progress
		vm_run "$FLASHCTL" -q bundle create --layout "$FL" --version "$v.0" \
			--image "rootfs=$FW/v$v.sqfs" --key "$FW/rel.key" -o "$FW/v$v.bundle"
	done
}

# fw_provision: the blank chip gets v1 in slot A, env, overlay (flashctl provision).
fw_provision() {
	"$FLASHCTL" provision --layout "$FL" --bundle "$FW/v1.bundle" --keyring "$FW/keyring" \
		system >/tmp/fw-prov.log 2>&1 || vm_fail "flashctl provision system failed: $(tail -n 20 /tmp/fw-prov.log)"
	echo "flashd.slot=A" >"$FW/cmdline"
	cat >"$FW/flashd.conf" <<CONF
[flashd]
layout=$FL
target=system
keyring=$FW/keyring
socket=$FLASHD_SOCKET
state-dir=$FW/state
cmdline=$FW/cmdline
[health]
timeout=20
reboot-on-failure=no
CONF
}

fw_start_daemon() {
	local i
	rm -f "$FLASHD_SOCKET"
	"$FLASHD" -c "$FW/flashd.conf" >>"$FW/flashd.log" 2>&1 &
	DAEMON_PID=$!
	for i in $(seq 100); do
		"$FLASHCTL" status >/dev/null 2>&1 && return 0
		kill -0 "$DAEMON_PID" 2>/dev/null || vm_fail "flashd exited at start: $(tail -n 20 "$FW/flashd.log")"
		sleep 0.2
	done
	vm_fail "flashd does not answer: $(tail -n 20 "$FW/flashd.log")"
}

fw_stop_daemon() {
	[ -n "$DAEMON_PID" ] || return 0
	kill -TERM "$DAEMON_PID" 2>/dev/null
	wait "$DAEMON_PID" 2>/dev/null
	DAEMON_PID=
}

fw_env() { "$FLASHCTL" --json env list --layout "$FL" | jq -S .variables; }

# fw_slot_sha MTD-NAME LENGTH: sha256 of the first LENGTH good bytes
fw_slot_sha() {
	"$FLASHCTL" flash read --length "$2" "mtd:$1" /tmp/fw-read.bin >/dev/null 2>&1 || return 1
	sha256sum </tmp/fw-read.bin | cut -d' ' -f1
}

fw_file_sha() { sha256sum <"$1" | cut -d' ' -f1; }

# fw_info_vars PREFIX MTD-NAME: PREFIX_corrected, PREFIX_failed, PREFIX_bad
fw_info_vars() {
	local j
	j=$("$FLASHCTL" --json flash info "mtd:$2") || vm_fail "flashctl flash info mtd:$2: $j"
	printf -v "$1_corrected" '%s' "$(jq -r .ecc.corrected <<<"$j")"
	printf -v "$1_failed" '%s' "$(jq -r .ecc.failed <<<"$j")"
	printf -v "$1_bad" '%s' "$(jq -r '.bad_blocks | map(tostring) | join(" ")' <<<"$j")"
}
