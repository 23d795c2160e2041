#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# What is read before a slot is trusted (issue 31 items 4 and 5):
# - 'slot init' (the recovery after an env loss) puts a slot into
#   BOOT_ORDER only when it reads as the signed index its last verified
#   install recorded, or when it is the running one; an interrupted slot,
#   whatever the records said, is unknown and out of BOOT_ORDER;
# - 'slot activate' of a slot that is not running reads it first: a
#   record forced to "verified" is no proof, a slot that differs from its
#   signed image is refused.
. "$(dirname "$0")/../lib/sim-board.sh"

need dd
setup_board
make_bundle v1 1.0 4
make_bundle v2 2.0 4
start_daemon
C="--config $T/flashd.conf --cmdline $T/cmdline"
B="--layout $LAYOUT --target $TARGET"

# ---- a verified install survives an env loss: read, good ----
fctl -q install "$T/v1.bundle" > "$T/i1.out" 2>&1 || fail "install v1: $(cat "$T/i1.out")"
lose_env
fctl slot init $C --offline > "$T/si1.out" 2>&1 || fail "slot init: $(cat "$T/si1.out")"
[ "$(env_var BOOT_ORDER)" = "A B" ] || fail "slot init after a verified install: BOOT_ORDER '$(env_var BOOT_ORDER)', expected 'A B'"
[ "$(env_var FLASHD_B_STATE)" = good ] || fail "B read against its index is not recorded good: $(env_var FLASHD_B_STATE)"

# ---- an interrupted install, then the env lost: B is unknown, out ----
start_daemon
start_gated_install "$T/v2.bundle" 2097152 one
kill -9 "$WORKER"
wait_for 20 daemon_idle || fail "the daemon did not notice the killed worker"
lose_env
# the running slot unknown (no --cmdline): nothing read, nothing trusted
fctl slot init --config "$T/flashd.conf" --offline > "$T/si0.out" 2>&1
case " $(env_var BOOT_ORDER) " in
*" B "*) fail "slot init put the half-written B into BOOT_ORDER: '$(env_var BOOT_ORDER)'" ;;
esac
fctl slot init $C --offline > "$T/si2.out" 2>&1 || fail "slot init: $(cat "$T/si2.out")"
[ "$(env_var BOOT_ORDER)" = A ] || fail "slot init after an interrupted install: BOOT_ORDER '$(env_var BOOT_ORDER)', expected 'A'"
[ "$(env_var FLASHD_B_STATE)" = unknown ] || fail "the half-written B is recorded '$(env_var FLASHD_B_STATE)', expected unknown"
[ "$(env_var BOOT_B_LEFT)" = 0 ] || fail "the half-written B has tries: $(env_var BOOT_B_LEFT)"
grep -q "slot B is not bootable" "$T/si2.out" || fail "slot init does not say why B is left out: $(cat "$T/si2.out")"
# the boot script's choice: A, and never B
for i in 1 2 3; do
	sel=$(fctl slot boot-select $B) || fail "boot-select"
	[ "$sel" = flashd.slot=A ] || fail "boot-select chose $sel after slot init"
done

# ---- a record forced to verified is no proof for activate ----
fctl -q env set --force $B FLASHD_B_STATE=verified 2>/dev/null || fail "root's forced record"
fctl slot activate B $C --offline > "$T/a1.out" 2>&1 && fail "slot activate B accepted on a forced record"
grep -q "not read back as its signed image" "$T/a1.out" || fail "activate B does not say why: $(cat "$T/a1.out")"
[ "$(env_var BOOT_ORDER)" = A ] || fail "a refused activate changed BOOT_ORDER: $(env_var BOOT_ORDER)"

# the daemon reads it too (in a worker), and refuses the same
start_daemon
vcall_error "$T/da" io.flashd.SlotRefused io.flashd.Activate '{"slot":"B"}'
grep -q "not read back as its signed image" "$T/da.last" || fail "Activate B: $(cat "$T/da.last")"
[ "$(env_var BOOT_ORDER)" = A ] || fail "a refused Activate changed BOOT_ORDER: $(env_var BOOT_ORDER)"

# ---- a verified slot whose bytes changed since: refused ----
fctl -q install --no-activate "$T/v1.bundle" > "$T/i3.out" 2>&1 || fail "install v1 again: $(cat "$T/i3.out")"
stop_daemon
fctl slot activate B $C --offline > "$T/a2.out" 2>&1 || fail "activate of a verified, unchanged B: $(cat "$T/a2.out")"
fctl -q slot init $C --offline > /dev/null 2>&1 || fail "slot init"
head -c 2048 /dev/urandom | dd of="$SIM" bs=1 seek=$((4096 + 0x3140000 + 3 * 131072)) conv=notrunc status=none
fctl slot mark-bad B $C --offline --force > /dev/null 2>&1 || fail "mark-bad B"
fctl slot activate B $C --offline > "$T/a3.out" 2>&1 && fail "slot activate B accepted while B differs from its image"
grep -q "block 3 of partition rootfs-b differs" "$T/a3.out" || fail "activate B does not name the block: $(cat "$T/a3.out")"

# ---- the state dir lost too: slot init reads against a bundle given ----
start_daemon
fctl -q install --no-activate "$T/v2.bundle" > "$T/i4.out" 2>&1 || fail "install v2: $(cat "$T/i4.out")"
rm -f "$T"/state/blocks-*
lose_env
fctl slot init $C --offline > "$T/si4.out" 2>&1 || fail "slot init: $(cat "$T/si4.out")"
[ "$(env_var BOOT_ORDER)" = A ] || fail "slot init without records: BOOT_ORDER '$(env_var BOOT_ORDER)'"
fctl slot init $C --offline --bundle "$T/v1.bundle" > "$T/si5.out" 2>&1 || fail "slot init --bundle v1: $(cat "$T/si5.out")"
[ "$(env_var BOOT_ORDER)" = A ] || fail "slot init --bundle of another image took B: '$(env_var BOOT_ORDER)'"
grep -q "differs from the signed image" "$T/si5.out" || fail "slot init --bundle v1 does not say why: $(cat "$T/si5.out")"
fctl slot init $C --offline --bundle "$T/v2.bundle" > "$T/si6.out" 2>&1 || fail "slot init --bundle v2: $(cat "$T/si6.out")"
[ "$(env_var BOOT_ORDER)" = "A B" ] || fail "slot init --bundle of B's image: BOOT_ORDER '$(env_var BOOT_ORDER)'"
[ "$(env_var FLASHD_B_STATE)" = good ] || fail "slot init --bundle: B recorded $(env_var FLASHD_B_STATE)"

# ---- mark-good and rollback onto a slot that is not running: read first ----
start_daemon
# B verified, after the booted A in BOOT_ORDER: what a rollback goes back to
fctl -q install --slot B "$T/v2.bundle" > "$T/i5.out" 2>&1 || fail "install v2 into B: $(cat "$T/i5.out")"
fctl -q slot activate A > "$T/a5.out" 2>&1 || fail "activate the booted A: $(cat "$T/a5.out")"
[ "$(env_var BOOT_ORDER)" = "A B" ] || fail "BOOT_ORDER '$(env_var BOOT_ORDER)', expected 'A B' before the rollback"
sim_flip_bit $((0x3140000 + 5 * 131072 + 77))
order=$(env_var BOOT_ORDER) states="$(env_var FLASHD_A_STATE) $(env_var FLASHD_B_STATE)"
vcall_error "$T/mg" io.flashd.SlotRefused io.flashd.MarkGood '{"slot":"B"}'
grep -q "not read back as its signed image" "$T/mg.last" || fail "MarkGood B: $(cat "$T/mg.last")"
vcall_error "$T/rb" io.flashd.SlotRefused io.flashd.Rollback '{}'
grep -q "not read back as its signed image" "$T/rb.last" || fail "Rollback onto B: $(cat "$T/rb.last")"
stop_daemon
fctl slot mark-good B $C --offline > "$T/mg2.out" 2>&1 && fail "offline mark-good B accepted while B differs"
grep -q "not read back as its signed image" "$T/mg2.out" || fail "offline mark-good B: $(cat "$T/mg2.out")"
fctl slot rollback $C --offline > "$T/rb2.out" 2>&1 && fail "offline rollback onto B accepted while B differs"
grep -q "not read back as its signed image" "$T/rb2.out" || fail "offline rollback: $(cat "$T/rb2.out")"
[ "$(env_var BOOT_ORDER)" = "$order" ] || fail "a refused mark-good/rollback changed BOOT_ORDER: '$order' -> '$(env_var BOOT_ORDER)'"
[ "$(env_var FLASHD_A_STATE) $(env_var FLASHD_B_STATE)" = "$states" ] ||
	fail "a refused mark-good/rollback changed the records: '$states' -> '$(env_var FLASHD_A_STATE) $(env_var FLASHD_B_STATE)'"
sel=$(fctl slot boot-select $B) || fail "boot-select"
[ "$sel" = flashd.slot=A ] || fail "the boot script chose $sel: B was promoted unread"
# B rewritten right: mark-good of the other slot passes (it reads as signed)
start_daemon
fctl -q install --no-activate --slot B "$T/v2.bundle" > "$T/i6.out" 2>&1 || fail "install v2 into B again: $(cat "$T/i6.out")"
fctl slot mark-good B > "$T/mg3.out" 2>&1 || fail "mark-good of a B that reads right: $(cat "$T/mg3.out")"
say PASS
