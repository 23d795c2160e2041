# SPDX-License-Identifier: LGPL-2.1-or-later
# shellcheck shell=bash
# Helpers for the UBI board's VM tests (layouts/nand-ubi.json on nandsim),
# sourced after tests/lib/vm.sh.
FLASHD=${FLASHD:-$top_builddir/flashd}
UBI_LAYOUT=$top_srcdir/layouts/nand-ubi.json
UBI_DAEMON=

# ubi_setup: the ubi and ubifs modules, /dev/ubi_ctrl and ubiformat, or skip.
ubi_setup() {
	vm_need_module ubi ubifs squashfs overlay
	vm_run modprobe -a ubi ubifs
	[ -e /dev/ubi_ctrl ] || vm_skip "ubi loaded but /dev/ubi_ctrl is missing"
	command -v ubiformat >/dev/null || vm_skip "ubiformat (mtd-utils) missing"
	UBI_MTD=$(vm_mtd_by_name ubi)
}

# ubi_workdir DIR: T=DIR, made afresh, with a signing key $T/k.key whose
# public half is the only key of $T/keyring.
ubi_workdir() {
	T=$1
	rm -rf "$T"
	mkdir -p "$T/keyring"
	vm_run "$FLASHCTL" -q bundle keygen --out "$T/k"
	cp "$T/k.pub" "$T/keyring/"
}

# ubi_num: the UBI device number of the layout's "ubi" partition, "" when not attached.
ubi_num() {
	local d
	for d in /sys/class/ubi/ubi[0-9]*; do
		[[ ${d##*/} == *_* ]] || [ ! -e "$d/mtd_num" ] && continue
		[ "$(<"$d/mtd_num")" = "${UBI_MTD#/dev/mtd}" ] && { echo "${d##*/ubi}"; return; }
	done
}

ubi_vol() { # NAME: /dev/ubiN_M
	local u d; u=$(ubi_num)
	for d in /sys/class/ubi/ubi$u/ubi${u}_*; do
		[ "$(<"$d/name")" = "$1" ] && { echo "/dev/${d##*/}"; return; }
	done
	vm_fail "no UBI volume $1 on ubi$u"
}

# NAME ATTR (bash's $(<), ${##}: no cat, no basename: a process costs ~0.2 s under TCG)
ubi_vattr() { local v; v=$(ubi_vol "$1") && printf '%s\n' "$(<"/sys/class/ubi/${v##*/}/$2")"; }

# ubi_daemon_conf DIR: DIR/flashd.conf for flashd on the system's UBI board,
# cmdline DIR/cmdline, socket $FLASHD_SOCKET.
ubi_daemon_conf() {
	mkdir -p "$1/state"
	cat >"$1/flashd.conf" <<CONF
[flashd]
layout=$UBI_LAYOUT
target=system
keyring=$1/keyring
socket=$FLASHD_SOCKET
state-dir=$1/state
cmdline=$1/cmdline
CONF
}

ubi_start_daemon() { # DIR
	rm -f "$FLASHD_SOCKET"
	"$FLASHD" -c "$1/flashd.conf" >>"$1/flashd.log" 2>&1 &
	UBI_DAEMON=$!
	for _ in $(seq 100); do
		"$FLASHCTL" status >/dev/null 2>&1 && return 0
		kill -0 $UBI_DAEMON 2>/dev/null || vm_fail "flashd exited at start: $(tail -n 20 "$1/flashd.log")"
		sleep 0.1
	done
	vm_fail "flashd does not answer: $(tail -n 20 "$1/flashd.log")"
}

ubi_stop_daemon() { kill $UBI_DAEMON 2>/dev/null; wait $UBI_DAEMON 2>/dev/null; UBI_DAEMON=; }

# ubi_bundle VERSION MIB: $T/VERSION.{sqfs,kernel,bundle}: a bootable root
# with MIB MiB of random payload and a kernel stand-in, signed with $T/k.key
# for layout $L
ubi_bundle() {
	boot_image $T/$1
	echo "VERSION_ID=$1" >$T/$1/etc/os-release
	head -c $(($2 * 1024 * 1024)) /dev/urandom >$T/$1/payload
	vm_mksquashfs $T/$1 $T/$1.sqfs -all-root
	head -c $((300 * 1024 + $2)) /dev/urandom >$T/$1.kernel
	vm_run "$FLASHCTL" -q bundle create --layout "$L" --version "$1" \
		--image rootfs=$T/$1.sqfs --image kernel=$T/$1.kernel --key $T/k.key -o $T/$1.bundle
}

# ubi_holds VOLUME FILE [WHAT]: the volume is complete (no update marker)
# and holds exactly FILE
ubi_holds() {
	local w=${3:+$3: }
	vm_expect_eq "$(ubi_vattr "$1" upd_marker)" 0 "${w}update marker of $1"
	vm_expect_eq "$(ubi_vattr "$1" data_bytes)" "$(stat -c %s "$2")" "${w}data bytes of $1"
	cmp "$(ubi_vol "$1")" "$2" || vm_fail "${w}volume $1 differs from $2"
	echo "ok: ${w}$1 holds $(basename "$2")"
}
