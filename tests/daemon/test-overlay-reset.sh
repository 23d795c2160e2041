#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# flashctl overlay reset (issue 34 item 14), through the daemon and offline
# alike: on a terminal it asks ("Continue? [y/N]") and does nothing unless
# answered yes; without a terminal it refuses (exit 2) unless --yes is
# given (as OpenWrt's firstboot -y); --cancel takes a pending reset back
# before the reboot (FLASHD_OVERLAY_RESET leaves the env); status says a
# reset is pending and how to cancel it; a user without rights can neither
# request nor cancel one. (That a cancelled reset leaves the overlay's data
# to the next 'flashd boot': tests/vm/test-boot-nand.sh, on JFFS2.)
. "$(dirname "$0")/../lib/sim-board.sh"

need script
setup_board
B="--layout $LAYOUT --target $TARGET"
PROMPT="Reset the overlay: all changes on the writable overlay are lost at the next boot. Continue? [y/N]"

pending() { [ "$(env_var FLASHD_OVERLAY_RESET)" = 1 ]; }

# on_tty ANSWER ARGS...: flashctl ARGS with a terminal as stdin (script's
# pty), ANSWER typed; output in $T/tty.out, exit status returned
on_tty() {
	local answer=$1
	shift
	printf '%s\n' "$answer" | script -qec "$FLASHCTL $*" /dev/null > "$T/tty.out" 2>&1
}

# paths PATH-NAME ARGS: the same checks offline (ARGS: the board) and
# through the daemon (ARGS empty)
paths() {
	local how=$1 args=$2 rc
	# no terminal, no --yes: refused, nothing written
	# shellcheck disable=SC2086
	fctl overlay reset $args < /dev/null > "$T/o1.out" 2>&1
	rc=$?
	[ $rc = 2 ] || check_fail "$how: reset without a terminal nor --yes exited $rc, expected 2: $(cat "$T/o1.out")"
	grep -q -- "--yes" "$T/o1.out" || check_fail "$how: the refusal does not name --yes: $(cat "$T/o1.out")"
	pending && check_fail "$how: a reset was requested without confirmation"

	# a terminal, answered no (or nothing): nothing written
	on_tty n overlay reset $args
	rc=$?
	[ $rc = 1 ] || check_fail "$how: reset answered 'n' exited $rc, expected 1: $(cat "$T/tty.out")"
	grep -qF "$PROMPT" "$T/tty.out" || check_fail "$how: no prompt on the terminal: $(cat "$T/tty.out")"
	pending && check_fail "$how: a reset was requested although answered 'n'"
	on_tty "" overlay reset $args
	pending && check_fail "$how: a reset was requested on an empty answer (the default is no)"

	# answered yes: requested
	on_tty y overlay reset $args || check_fail "$how: reset answered 'y' failed: $(cat "$T/tty.out")"
	pending || check_fail "$how: no reset requested after 'y'"
	grep -q -- "--cancel" "$T/tty.out" || check_fail "$how: the reset does not say how to take it back: $(cat "$T/tty.out")"

	# --cancel: the flag leaves the env, no question asked
	# shellcheck disable=SC2086
	fctl overlay reset --cancel $args < /dev/null > "$T/c.out" 2>&1 ||
		check_fail "$how: reset --cancel failed: $(cat "$T/c.out")"
	pending && check_fail "$how: the reset is still pending after --cancel"
	grep -qi "cancelled" "$T/c.out" || check_fail "$how: --cancel does not say it cancelled: $(cat "$T/c.out")"
	# shellcheck disable=SC2086
	fctl overlay reset --cancel $args < /dev/null > "$T/c2.out" 2>&1 ||
		check_fail "$how: a second --cancel failed: $(cat "$T/c2.out")"
	grep -qi "no overlay reset .*pending" "$T/c2.out" ||
		check_fail "$how: --cancel with nothing pending does not say so: $(cat "$T/c2.out")"

	# --yes for scripts: no question
	# shellcheck disable=SC2086
	fctl overlay reset --yes $args < /dev/null > "$T/y.out" 2>&1 ||
		check_fail "$how: reset --yes failed: $(cat "$T/y.out")"
	pending || check_fail "$how: no reset requested with --yes"
	grep -qF "$PROMPT" "$T/y.out" && check_fail "$how: --yes still asked"
}

# ---- offline ----
paths offline "$B"
setup_other_users
as_nobody "$FLASHCTL" overlay reset --cancel $B < /dev/null > "$T/n1.out" 2>&1
rc=$?
[ $rc = 4 ] || check_fail "offline: nobody's --cancel exited $rc, expected 4: $(cat "$T/n1.out")"
pending || check_fail "offline: nobody cancelled root's reset"
fctl -q overlay reset --cancel $B < /dev/null || check_fail "offline: root's --cancel"
as_nobody "$FLASHCTL" overlay reset --yes $B < /dev/null > "$T/n2.out" 2>&1
rc=$?
[ $rc = 4 ] || check_fail "offline: nobody's reset exited $rc, expected 4: $(cat "$T/n2.out")"
pending && check_fail "offline: nobody requested a reset"

# ---- through the daemon ----
start_daemon
paths daemon ""
fctl status > "$T/st.txt" || fail "status"
grep -q "reset_pending" "$T/st.txt" || check_fail "status does not show the pending reset: $(cat "$T/st.txt")"
grep -q "flashctl overlay reset --cancel" "$T/st.txt" ||
	check_fail "status does not say the reset can be cancelled: $(cat "$T/st.txt")"
fctl overlay status > "$T/os.txt" || fail "overlay status"
grep -q "flashctl overlay reset --cancel" "$T/os.txt" ||
	check_fail "overlay status does not say the reset can be cancelled: $(cat "$T/os.txt")"
vcall "$T/v1" io.flashd.OverlayReset '{"cancel":false}' || check_fail "OverlayReset {cancel:false}"
pending || check_fail "OverlayReset {cancel: false} did not keep the reset"
as_nobody "$FLASHCTL" overlay reset --cancel < /dev/null > "$T/n3.out" 2>&1
rc=$?
[ $rc = 4 ] || check_fail "daemon: nobody's --cancel exited $rc, expected 4: $(cat "$T/n3.out")"
pending || check_fail "daemon: nobody cancelled root's reset"
vcall "$T/v2" io.flashd.OverlayReset '{"cancel":true}' || check_fail "OverlayReset {cancel:true}"
expect_fields "$T/v2.last" "OverlayReset cancel" <<EOF
parameters.overlay.state unknown
parameters.changed true
EOF
pending && check_fail "OverlayReset {cancel: true} left the reset pending"
fctl --json overlay reset --cancel < /dev/null > "$T/c3.json" || check_fail "--json --cancel"
expect_fields "$T/c3.json" "nothing to cancel (json)" <<EOF
changed false
EOF
check_done
