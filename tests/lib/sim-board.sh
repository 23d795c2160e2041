# SPDX-License-Identifier: LGPL-2.1-or-later
# shellcheck shell=bash
# The host tests' board: a simulated 128 MiB NAND (lib/sim/nsim.c) in a
# temp dir of its own ($T), with keyring, socket and state dir, so tests
# run in parallel. flashd is stopped and $T removed on exit (KEEP_TMP=1
# keeps $T for a look after a failure).
#
#   . "$(dirname "$0")/../lib/sim-board.sh"
#   setup_board            # keys, sim board with a fresh env, flashd.conf
#   make_bundle v1 1.0 4   # $T/v1.bundle: version 1.0, 4 MiB random squashfs
#   start_daemon           # waits until the socket answers
#   fctl --json status > $T/st.json; expect_json $T/st.json slots.0.state good

. "${TEST_LIB:-$(dirname "$0")/../lib}/common.sh"
. "$TEST_LIB/check.sh"
. "$TEST_LIB/daemon.sh"

LAYOUT=$top_srcdir/layouts/nandsim-128m.json

[ -n "$PY" ] || skip "python3 is not installed"
need mksquashfs
[ -x "$FLASHD" ] || fail "$FLASHD not built"
[ -x "$FLASHCTL" ] || fail "$FLASHCTL not built"

T=$(mktemp -d "${TMPDIR:-/tmp}/flashd-$TEST_NAME.XXXXXX") || exit 1
FLASHD_DIR=$T
FAIL_LOG=$T/flashd.log
SOCK=$T/flashd.sock
SIM=$T/board.sim
TARGET=sim:$SIM
export FLASHD_SOCKET=$SOCK

# Background helpers a test started: "BG_PIDS="$BG_PIDS $!"" after each "&".
BG_PIDS=

cleanup() {
	rc=$?
	touch "$T/abort"   # releases every gated_cat
	stop_daemon
	# the replies' IDL check (replies_check) notes failures after the test's end
	[ $rc -eq 0 ] && [ "$CHECK_FAILS" -ne 0 ] && rc=1
	for p in $BG_PIDS; do kill -9 "$p" 2>/dev/null; done
	if [ "${KEEP_TMP:-0}" = 1 ] || { [ $rc -ne 0 ] && [ $rc -ne 77 ] && [ -n "${KEEP_TMP_ON_FAIL:-}" ]; }; then
		say "kept $T"
	else
		rm -rf "$T"
	fi
	exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Keys, a simulated 128 MiB NAND with an initialised env (BOOT_ORDER="A B",
# 3 tries each) booted from slot A, flashd.conf (health command: $HEALTH_COMMAND).
setup_board() {
	"$FLASHCTL" -q bundle keygen --out "$T/rel" >/dev/null || fail "bundle keygen"
	mkdir -p "$T/keyring" "$T/state"
	cp "$T/rel.pub" "$T/keyring/"
	"$FLASHCTL" -q flash sim-create "$SIM" --type nand --size 128MiB --erase-block 128KiB \
		--page 2048 --oob 64 >/dev/null || fail "flash sim-create"
	# provisioned: BOOT_ORDER="A B", full tries, both recorded good, as a
	# factory image's env has it ('slot init' trusts only what it reads:
	# these slots hold no image to read)
	"$FLASHCTL" -q env init --layout "$LAYOUT" --target "$TARGET" "BOOT_ORDER=A B" \
		BOOT_A_LEFT=3 BOOT_B_LEFT=3 FLASHD_A_STATE=good FLASHD_B_STATE=good >/dev/null ||
		fail "env init"
	echo "flashd.slot=A" > "$T/cmdline"
	flashd_conf "${HEALTH_COMMAND:-}"
}

# factory_a BUNDLE: slot A holds BUNDLE's image and its signed index is
# recorded in the state dir, as a factory provision leaves it (so a
# rollback onto A, or activate, can read it); then the fixture's env again
factory_a() {
	"$FLASHCTL" provision --layout "$LAYOUT" --bundle "$1" --keyring "$T/keyring" \
		--state-dir "$T/state" "$TARGET" > "$T/factory.out" 2>&1 ||
		fail "provision of A: $(tail -n 3 "$T/factory.out")"
	"$FLASHCTL" -q env init --force --layout "$LAYOUT" --target "$TARGET" "BOOT_ORDER=A B" \
		BOOT_A_LEFT=3 BOOT_B_LEFT=3 FLASHD_A_STATE=good FLASHD_B_STATE=good >/dev/null ||
		fail "env init after the provision"
}

# make_squashfs NAME VERSION BYTES: $T/NAME.sqfs, a root whose
# /etc/os-release says VERSION and /payload is BYTES of random
# (incompressible) data.
make_squashfs() {
	local d=$T/$1.root
	mkdir -p "$d/etc"
	echo "VERSION=$2" > "$d/etc/os-release"
	head -c "$3" /dev/urandom > "$d/payload"
	mksquashfs "$d" "$T/$1.sqfs" -noappend -quiet -no-progress >/dev/null || fail "mksquashfs"
	rm -rf "$d"
}

# make_bundle NAME VERSION MIB [bundle create options]: $T/NAME.bundle, a
# signed bundle whose rootfs is a squashfs holding MIB MiB of random data.
make_bundle() {
	local name=$1 version=$2 mib=$3
	shift 3
	make_squashfs "$name" "$version" $((mib * 1024 * 1024))
	"$FLASHCTL" -q bundle create --layout "$LAYOUT" --version "$version" "$@" \
		--image "rootfs=$T/$name.sqfs" --key "$T/rel.key" -o "$T/$name.bundle" >/dev/null ||
		fail "bundle create $name"
}

# rebuilt_bundle NAME FROM VERSION OFFSET: $T/NAME.bundle, a rebuild of
# $T/FROM.sqfs reusing VERSION with the byte at OFFSET changed (one block
# differs, the version string does not): $T/NAME.sqfs is its image
rebuilt_bundle() {
	"$PY" - "$T/$2.sqfs" "$T/$1.sqfs" "$4" <<'PYEOF'
import sys
b = bytearray(open(sys.argv[1], 'rb').read())
b[int(sys.argv[3])] ^= 0xff
open(sys.argv[2], 'wb').write(b)
PYEOF
	"$FLASHCTL" -q bundle create --layout "$LAYOUT" --version "$3" --image "rootfs=$T/$1.sqfs" \
		--key "$T/rel.key" -o "$T/$1.bundle" >/dev/null || fail "bundle create $1"
}

# The U-Boot env as "name=value" lines, sorted (offline, through flashctl).
env_dump() {
	"$FLASHCTL" env list --layout "$LAYOUT" --target "$TARGET" | sort
}

env_var() {
	"$FLASHCTL" env get -n --layout "$LAYOUT" --target "$TARGET" "$1" 2>/dev/null
}

# "Reboot" the simulated board: stop flashd, run the boot script's choice
# (pick, decrement, save), boot that slot, start flashd again.
reboot_board() {
	local sel
	stop_daemon
	sel=$("$FLASHCTL" slot boot-select --layout "$LAYOUT" --target "$TARGET") ||
		fail "slot boot-select failed"
	echo "$sel" > "$T/cmdline"
	BOOTED=${sel#flashd.slot=}
	say "reboot: boot-select chose $sel"
	start_daemon
}

# Clients of other uids (the socket-group and rights tests): needs root and
# setpriv (skips otherwise); NOBODY, GROUP (a group that exists), GID;
# as_nobody runs a command as nobody, as_member as nobody in GROUP.
setup_other_users() {
	[ "$(id -u)" = 0 ] || skip "needs root to run a client as another uid"
	need setpriv
	NOBODY=65534
	GROUP=users
	getent group "$GROUP" >/dev/null || skip "no group '$GROUP'"
	GID=$(getent group "$GROUP" | cut -d: -f3)
}
as_nobody() { setpriv --reuid="$NOBODY" --regid="$NOBODY" --clear-groups "$@"; }
as_member() { setpriv --reuid="$NOBODY" --regid="$GID" --clear-groups "$@"; }
# ---- what is on the flash (layouts/nandsim-128m.json) ----
EB=131072

# slot_offset X: the flash offset of slot X's rootfs partition
slot_offset() {
	case $1 in
	A) echo $((0x540000)) ;;
	B) echo $((0x3140000)) ;;
	*) fail "slot_offset: no slot '$1'" ;;
	esac
}

# slot_read X LENGTH OUT: the first LENGTH bytes of slot X's rootfs (its
# good blocks, as an install writes them) into OUT
slot_read() {
	"$FLASHCTL" flash read --offset "$(slot_offset "$1")" --size 40MiB --length "$2" "$TARGET" \
		"$3" >/dev/null 2>"$3.err" || fail "reading slot $1: $(cat "$3.err")"
}

# slot_is X IMAGE WHAT: slot X reads back equal to IMAGE byte for byte
slot_is() {
	slot_read "$1" "$(stat -c %s "$2")" "$T/slot-$1.img"
	cmp -s "$2" "$T/slot-$1.img" ||
		fail "$3: slot $1 differs from $(basename "$2"): $(cmp "$2" "$T/slot-$1.img")"
}

# refused_downgrade BUNDLE VERSION RUNNING OUT: installing BUNDLE (VERSION)
# into slot A is refused as a downgrade from RUNNING: flashctl exits 5
# (its output in OUT), io.flashd.Install answers DowngradeRefused naming
# both; slot A ($T/a-before.img) and the env read as before
refused_downgrade() {
	slot_read A $((4 * EB)) "$T/a-before.img"
	env_dump > "$T/env-before"
	fctl install "$1" > "$4" 2>&1
	rc=$?
	[ $rc = 5 ] || fail "installing $2 over a running $3 exited $rc, expected 5: $(cat "$4")"
	grep -q "$2.*$3" "$4" || fail "the refusal does not name both versions: $(cat "$4")"
	vcall_error "$T/vr" io.flashd.DowngradeRefused io.flashd.Install "{\"path\":\"$1\"}"
	expect_fields "$T/vr.last" "DowngradeRefused" <<EOF
parameters {KEYS} slot version running_version reason
parameters.slot A
parameters.version $2
parameters.running_version $3
EOF
	slot_read A $((4 * EB)) "$T/a-after.img"
	cmp -s "$T/a-before.img" "$T/a-after.img" || fail "a refused downgrade wrote slot A"
	env_dump > "$T/env-after"
	cmp -s "$T/env-before" "$T/env-after" ||
		fail "a refused downgrade changed the env: $(diff "$T/env-before" "$T/env-after")"
}

# sim_flip_bit OFFSET: one bit of the flash at OFFSET flipped in the
# simulator's data (after its 4096-byte header), behind flashd's back, as
# NAND does over time
sim_flip_bit() {
	"$PY" - "$SIM" $((4096 + $1)) <<'PYEOF'
import sys
with open(sys.argv[1], 'r+b') as f:
    f.seek(int(sys.argv[2])); c = f.read(1)[0]
    f.seek(int(sys.argv[2])); f.write(bytes([c ^ 0x08]))
PYEOF
}

# lose_env: both env copies corrupted (the daemon stopped first), then
# U-Boot's default env back ('env init'), as after an env loss
lose_env() {
	stop_daemon
	printf 'garbage that is no env' | dd of="$SIM" bs=1 seek=$((4096 + 0x100000 + 100)) conv=notrunc status=none
	dd if=/dev/zero of="$SIM" bs=4096 seek=$(((4096 + 0x120000) / 4096)) count=1 conv=notrunc status=none
	"$FLASHCTL" -q env init --layout "$LAYOUT" --target "$TARGET" > "$T/ei.out" 2>&1 ||
		fail "env init: $(cat "$T/ei.out")"
}
