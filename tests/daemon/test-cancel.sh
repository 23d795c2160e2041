#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# Cancelling an install: 'flashctl cancel', the client killed with SIGKILL
# mid-install, and flashd itself stopped (SIGTERM) mid-install. Each time
# the install ends, the target slot is left marked bad, the booted slot and
# its tries are untouched, and the install record says "cancelled".
#
# The bundle reaches flashd through a pipe that stops after 3 MiB until the
# test lets it go on (gated_cat), so the install is caught in its write
# step on any machine, without timing assumptions.
. "$(dirname "$0")/../lib/sim-board.sh"

setup_board
make_bundle v1 1.0 8
start_daemon

# install_gated NAME: flashctl install reading the gated pipe, in the
# background ($CLIENT = its pid); returns once flashd is writing.
install_gated() {
	mkfifo "$T/pipe-$1"
	gated_cat "$T/v1.bundle" 3145728 "$1" > "$T/pipe-$1" &
	BG_PIDS="$BG_PIDS $!"
	"$FLASHCTL" --json install - < "$T/pipe-$1" > "$T/$1.out" 2> "$T/$1.err" &
	CLIENT=$!
	BG_PIDS="$BG_PIDS $!"
	wait_for 20 install_running || fail "$1: the install did not reach the write step"
}

# check_cancelled WHAT N: the env and the install record after a cancel;
# N install records must exist by now (one per install).
check_cancelled() {
	wait_for 20 daemon_idle || fail "$1: flashd still busy after the cancel"
	fctl --json status > "$T/st-$1.json" || fail "$1: status"
	expect_fields "$T/st-$1.json" "$1" <<EOF
operation null
booted A
slots.0.tries_left 3
slots.0.state good
slots.0.priority 0
slots.1.tries_left 0
slots.1.priority null
slots.1.version null
slots.1.state cancelled
next_boot A
last_install.result cancelled
last_install.slot B
last_install.version 1.0
EOF
	jget "$T/st-$1.json" last_install.reason > "$T/reason"
	grep -q "cancelled; slot B stays marked bad" "$T/reason" ||
		fail "$1: record reason is '$(cat "$T/reason")'"
	[ "$(env_var BOOT_ORDER)" = A ] || fail "$1: BOOT_ORDER is '$(env_var BOOT_ORDER)', expected 'A'"
	[ "$(env_var BOOT_A_LEFT)" = 3 ] || fail "$1: BOOT_A_LEFT changed to '$(env_var BOOT_A_LEFT)'"
	[ "$(env_var BOOT_B_LEFT)" = 0 ] || fail "$1: BOOT_B_LEFT is '$(env_var BOOT_B_LEFT)'"
	env_var FLASHD_B_VERSION && fail "$1: FLASHD_B_VERSION set after a cancelled install"
	[ "$(env_var FLASHD_B_STATE)" = cancelled ] ||
		fail "$1: FLASHD_B_STATE is '$(env_var FLASHD_B_STATE)', expected 'cancelled'"
	expect_fields "$T/state/installs.json" "$1: $T/state/installs.json" <<EOF
#. $2
0.result cancelled
EOF
}

# B good again (BOOT_ORDER "A B", 3 tries) so that a cancel visibly marks
# it bad. A cancelled install is never activated (issue 13 item 3): the
# fixture rewrites the env as a verified B would have it.
reset_b() {
	vcall "$T/act" io.flashd.Activate '{"slot":"B"}' &&
		fail "Activate of a cancelled install accepted: $(cat "$T/act")"
	grep -q "SlotRefused" "$T/act" || fail "Activate B: $(cat "$T/act")"
	"$FLASHCTL" -q env set --force --layout "$LAYOUT" --target "$TARGET" "BOOT_ORDER=A B" \
		BOOT_B_LEFT=3 FLASHD_B_STATE=verified >/dev/null || fail "reset_b: env set"
	[ "$(env_var BOOT_ORDER)" = "A B" ] || fail "reset_b: BOOT_ORDER '$(env_var BOOT_ORDER)'"
}

# ---- 1. flashctl cancel ----
fctl --json cancel > "$T/c0.json" || fail "cancel with nothing running: exit $?"
expect_fields "$T/c0.json" "idle cancel" <<EOF
cancelled false
EOF
install_gated one
fctl --json cancel > "$T/c1.json" || fail "flashctl cancel: exit $?"
expect_fields "$T/c1.json" "cancel" <<EOF
cancelled true
EOF
wait "$CLIENT"
rc=$?
[ $rc = 1 ] || fail "cancelled flashctl install exited $rc, expected 1"
grep -q "install cancelled: the target slot stays marked bad" "$T/one.err" ||
	fail "flashctl install: no cancel message: $(cat "$T/one.err")"
grep -q "install cancelled by uid 0" "$T/flashd.log" || fail "cancel not logged"
check_cancelled flashctl-cancel 1
touch "$T/go-one"

# ---- 2. the client is killed (SIGKILL) mid-install ----
reset_b
install_gated two
kill -KILL "$CLIENT"
wait "$CLIENT" 2>/dev/null
check_cancelled client-killed 2
grep -q "install client went away: cancelling" "$T/flashd.log" ||
	fail "the disconnect was not logged"
touch "$T/go-two"
expect_daemon_ok "after the client was killed"

# ---- 3. a Varlink client that hangs up mid-install, without Cancel ----
reset_b
mkfifo "$T/pipe-three"
gated_cat "$T/v1.bundle" 3145728 three > "$T/pipe-three" &
BG_PIDS="$BG_PIDS $!"
"$PY" "$VCALL" --more io.flashd.Install '{"fd":0}' --fd /dev/stdin < "$T/pipe-three" > "$T/three.out" 2>&1 &
CLIENT=$!
BG_PIDS="$BG_PIDS $!"
wait_for 20 install_running || fail "varlink-call install did not reach the write step"
kill -TERM "$CLIENT"
wait "$CLIENT" 2>/dev/null
grep -q '"continues": true' "$T/three.out" || fail "no progress replies before the hang-up"
check_cancelled client-hangup 3
touch "$T/go-three"

# ---- 4. flashd is stopped mid-install ----
reset_b
install_gated four
stop_daemon
[ "$DAEMON_RC" = 0 ] || fail "flashd stopped mid-install exited $DAEMON_RC"
wait "$CLIENT"
rc=$?
[ $rc = 1 ] || fail "flashctl install exited $rc when flashd was stopped mid-install"
grep -q "install cancelled: the target slot stays marked bad" "$T/four.err" ||
	fail "stopped flashd did not answer the install with Cancelled: $(cat "$T/four.err")"
touch "$T/go-four"
[ "$(env_var BOOT_ORDER)" = A ] || fail "stopped flashd: BOOT_ORDER '$(env_var BOOT_ORDER)'"
[ "$(env_var BOOT_A_LEFT)" = 3 ] || fail "stopped flashd: BOOT_A_LEFT '$(env_var BOOT_A_LEFT)'"
[ "$(env_var BOOT_B_LEFT)" = 0 ] || fail "stopped flashd: BOOT_B_LEFT '$(env_var BOOT_B_LEFT)'"
start_daemon
check_cancelled daemon-stopped 4

# ---- after all that, an install still works ----
fctl -q install "$T/v1.bundle" > "$T/five.out" 2>&1 || fail "install after cancels: $(cat "$T/five.out")"
[ "$(env_var BOOT_ORDER)" = "B A" ] || fail "install after cancels: BOOT_ORDER '$(env_var BOOT_ORDER)'"
[ "$(env_var FLASHD_B_VERSION)" = 1.0 ] || fail "install after cancels: no FLASHD_B_VERSION"
say PASS
