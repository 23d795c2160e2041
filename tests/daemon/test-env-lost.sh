#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# Both env copies lost (issue 13, I1/I2 of tests/explore): U-Boot boots its
# built-in default env (no BOOT_ORDER, no records) and its script saves
# "A B". The daemon, at start, adopts the booted slot in one store:
# BOOT_ORDER=<booted>, its record verified (on trial), the other slot
# unknown, so no later boot reaches a slot nobody verified, a failing health
# check keeps the booted slot (degraded), and Activate of the unknown slot
# is refused. Old code: BOOT_ORDER stayed "A B" and B (never written) was
# the script's next choice once A's tries ran out.
. "$(dirname "$0")/../lib/sim-board.sh"

HEALTH_COMMAND="exit \$(cat $T/health-rc)"
setup_board
echo 1 > "$T/health-rc"

need dd
# both copies gone (u-boot-env at 0x100000 and 0x120000 of nandsim-128m.json,
# behind the simulator file's 4 KiB header), then what U-Boot runs on: its
# built-in default env, blank here as 'env init' writes it
DATA=4096
dd if=/dev/zero of="$SIM" bs=4096 seek=$(((DATA + 0x100000) / 4096)) count=1 conv=notrunc status=none
dd if=/dev/zero of="$SIM" bs=4096 seek=$(((DATA + 0x120000) / 4096)) count=1 conv=notrunc status=none
fctl -q env init --layout "$LAYOUT" --target "$TARGET" > "$T/init.out" 2>&1 ||
	fail "env init: $(cat "$T/init.out")"
[ -z "$(env_var FLASHD_A_STATE)" ] || fail "env init left a record"
reboot_board
[ "$BOOTED" = A ] || fail "the default env booted $BOOTED, expected A"
wait_for 20 daemon_idle || fail "the daemon did not settle"

expect_env() { # what
	[ "$(env_var BOOT_ORDER)" = A ] || fail "$1: BOOT_ORDER='$(env_var BOOT_ORDER)', expected A (the booted slot alone)"
	[ "$(env_var FLASHD_B_STATE)" = unknown ] || fail "$1: FLASHD_B_STATE='$(env_var FLASHD_B_STATE)', expected unknown"
}
expect_env "daemon start on the default env"
[ "$(env_var FLASHD_A_STATE)" = bad ] || fail "A's failing health check: FLASHD_A_STATE='$(env_var FLASHD_A_STATE)', expected bad (kept, degraded)"
grep -q "holds no slot records" "$T/flashd.log" || fail "the adoption is not logged"
fctl --json status > "$T/st.json" || fail "status"
expect_fields "$T/st.json" "status after the adoption" <<EOT
booted A
next_boot A
degraded true
slots.1.state unknown
EOT

# B's content is unknown: Activate is refused, forced or not, env untouched
before=$(env_dump)
fctl -q slot activate B > "$T/act.out" 2>&1 && fail "activate of the unknown slot B was accepted"
fctl -q slot activate --force B > "$T/act2.out" 2>&1 && fail "forced activate of the unknown slot B was accepted"
[ "$(env_dump)" = "$before" ] || fail "a refused activate changed the env"

# A power cycle; when no slot has tries left the script resets the
# counters and the board: one more power-on.
power_cycle() {
	local sel
	stop_daemon
	sel=$("$FLASHCTL" slot boot-select --layout "$LAYOUT" --target "$TARGET" 2>/dev/null) ||
		sel=$("$FLASHCTL" slot boot-select --layout "$LAYOUT" --target "$TARGET") ||
		fail "slot boot-select failed twice"
	echo "$sel" > "$T/cmdline"
	BOOTED=${sel#flashd.slot=}
	start_daemon
}

# power cycles with failing checks (the counters run out and are reset):
# never anything but A
for i in 1 2 3 4 5 6 7; do
	power_cycle
	[ "$BOOTED" = A ] || fail "boot $i after the env loss chose $BOOTED: only A is known to boot"
	wait_for 20 daemon_idle || fail "boot $i: the daemon did not settle"
	expect_env "boot $i"
done

say PASS
