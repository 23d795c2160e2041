#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# A legacy board keeps its fallback (issue 31, item 9): a RAUC-style env
# (BOOT_ORDER="A B", BOOT_x_LEFT, no FLASHD_* variables, no FLASHD_ENV
# marker) is not a lost one. The daemon's first start keeps BOOT_ORDER and
# both slots (legacy: put there by the board's previous updater, booting),
# a failing health check of A falls back to B, and Activate of B is
# accepted. Old code took the env for a lost one: B recorded unknown,
# BOOT_ORDER=A, A kept degraded, 'slot activate B' refused.
# A default env ('env init', or U-Boot's built-in one with
# dist/u-boot-env-flashd.txt: FLASHD_ENV=default) is still adopted
# (tests/daemon/test-env-lost.sh).
. "$(dirname "$0")/../lib/sim-board.sh"

HEALTH_COMMAND="exit \$(cat $T/health-rc)"
setup_board
echo 1 > "$T/health-rc"

# what RAUC (or a factory image) left: slot variables only
fctl -q env init --force --layout "$LAYOUT" --target "$TARGET" FLASHD_ENV= \
	"BOOT_ORDER=A B" BOOT_A_LEFT=3 BOOT_B_LEFT=3 > "$T/init.out" 2>&1 ||
	fail "env init of the legacy env: $(cat "$T/init.out")"
env_dump | grep -q '^FLASHD_[^=]*=.' && fail "the legacy env has flashd variables: $(env_dump)"

reboot_board
[ "$BOOTED" = A ] || fail "the legacy env booted $BOOTED, expected A"
wait_for 20 daemon_idle || fail "the daemon did not settle"

[ "$(env_var FLASHD_B_STATE)" != unknown ] ||
	fail "the daemon took the legacy env for a lost one: B recorded unknown"
[ "$(env_var BOOT_ORDER)" = B ] ||
	fail "A failed its health check: BOOT_ORDER='$(env_var BOOT_ORDER)', expected B (the legacy fallback)"
[ "$(env_var FLASHD_A_STATE)" = bad ] || fail "A failed its health check: FLASHD_A_STATE='$(env_var FLASHD_A_STATE)'"
fctl --json status > "$T/st.json" || fail "status"
expect_fields "$T/st.json" "status of the legacy board after A failed" <<EOT
booted A
next_boot B
degraded false
EOT
fctl -q slot activate B > "$T/act.out" 2>&1 || fail "activate of the legacy slot B refused: $(cat "$T/act.out")"
[ "$(env_var BOOT_ORDER)" = B ] || fail "activate B: BOOT_ORDER='$(env_var BOOT_ORDER)'"
reboot_board
[ "$BOOTED" = B ] || fail "the fallback booted $BOOTED, expected B"
say PASS
