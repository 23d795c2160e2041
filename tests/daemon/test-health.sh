#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# The health check at boot: install, "reboot" (the boot script's choice
# written to the kernel command line), flashd starts, finds the booted
# slot on trial and runs [health] command=. Passing marks the slot good
# (tries back to the maximum); failing (reboot-on-failure=no) marks it bad,
# and the next boot falls back to the other slot.
. "$(dirname "$0")/../lib/sim-board.sh"

HEALTH_COMMAND="echo \"\$(cat $T/cmdline)\" >> $T/health.log; exit \$(cat $T/health-rc)"
setup_board
echo 0 > "$T/health-rc"
make_bundle v1 1.0 2
make_bundle v2 2.0 2
start_daemon

# A booted, not on trial: no health check
sleep 0.3
[ ! -e "$T/health.log" ] || fail "the health check ran although the booted slot is not on trial"
fctl -q install "$T/v1.bundle" > "$T/i1.out" 2>&1 || fail "install v1: $(cat "$T/i1.out")"

# ---- reboot into B; the health check passes ----
reboot_board
[ "$BOOTED" = B ] || fail "boot-select chose $BOOTED, expected B"
wait_for 20 daemon_idle || fail "the health check did not finish"
[ "$(cat "$T/health.log")" = "flashd.slot=B" ] ||
	fail "health command runs: '$(cat "$T/health.log")', expected one, on slot B"
fctl --json status > "$T/st1.json"
expect_fields "$T/st1.json" "after a passing health check" <<EOF
booted B
on_trial false
fell_back false
slots.1.state good
slots.1.tries_left 3
slots.1.version 1.0
slots.0.tries_left 3
next_boot B
EOF
grep -q "health check passed: slot B marked good" "$T/flashd.log" || fail "pass not logged"
jget "$T/st1.json" slots.1.health | grep -Eq '^passed [0-9-]+T[0-9:]+Z$' ||
	fail "status does not carry B's passing verdict: '$(jget "$T/st1.json" slots.1.health)'"

# a restart without a reboot: B is good, no second check
stop_daemon
start_daemon
sleep 0.3
[ "$(wc -l < "$T/health.log")" = 1 ] || fail "the health check ran again on a good slot"

# ---- install into A, reboot into A; the health check fails ----
fctl -q install "$T/v2.bundle" > "$T/i2.out" 2>&1 || fail "install v2: $(cat "$T/i2.out")"
echo 1 > "$T/health-rc"
reboot_board
[ "$BOOTED" = A ] || fail "boot-select chose $BOOTED, expected A"
wait_for 20 daemon_idle || fail "the failing health check did not finish"
[ "$(tail -n 1 "$T/health.log")" = "flashd.slot=A" ] || fail "the health check did not run on A"
fctl --json status > "$T/st2.json"
expect_fields "$T/st2.json" "after a failing health check" <<EOF
booted A
slots.0.state bad
slots.0.tries_left 0
slots.0.priority null
slots.1.state good
slots.1.tries_left 3
next_boot B
EOF
grep -q "health check failed (exit status 1): slot A marked bad" "$T/flashd.log" ||
	fail "the failure is not logged with its exit status"
[ "$(env_var BOOT_ORDER)" = B ] || fail "BOOT_ORDER after the failed check: '$(env_var BOOT_ORDER)'"
daemon_alive || fail "flashd exited after a failed health check (reboot-on-failure=no)"

# ---- the next boot falls back to B ----
echo 0 > "$T/health-rc"
reboot_board
[ "$BOOTED" = B ] || fail "after the failed check boot-select chose $BOOTED, expected B"
wait_for 20 daemon_idle || fail "flashd busy after the fallback boot"
# B had been marked good, but booting it used a try (the boot script
# decrements), so it is on trial again: the check runs and passes
[ "$(wc -l < "$T/health.log")" = 3 ] || fail "health runs: $(cat "$T/health.log")"
[ "$(tail -n 1 "$T/health.log")" = "flashd.slot=B" ] || fail "the third check did not run on B"
fctl --json status > "$T/st3.json"
expect_fields "$T/st3.json" "after falling back" <<EOF
booted B
on_trial false
fell_back false
slots.1.tries_left 3
slots.0.state bad
next_boot B
EOF
# why A is bad, after the board rolled back (env: FLASHD_A_HEALTH)
jget "$T/st3.json" slots.0.health | grep -Eq '^failed [0-9-]+T[0-9:]+Z: failed \(exit status 1\)$' ||
	fail "after the rollback status does not say why A is bad: '$(jget "$T/st3.json" slots.0.health)'"
fctl status > "$T/st3.txt"
grep -q "health check failed .*exit status 1" "$T/st3.txt" ||
	fail "flashctl status does not print A's failed check: $(cat "$T/st3.txt")"
say PASS
