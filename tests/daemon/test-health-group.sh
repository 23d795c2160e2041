#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# The health check ends with everything it started (issue 31 item 13): a
# check that leaves a sleeping grandchild behind (which would write a
# marker file later) must lose it when the check times out, when flashd
# is stopped (SIGTERM) and when flashd is killed (SIGKILL): the check runs
# in a process group of its own that flashd (or, when flashd is killed,
# the check's supervisor) ends as a whole.
. "$(dirname "$0")/../lib/sim-board.sh"

# the check: a grandchild that writes a marker after 3 s, then the check
# itself hangs (the case the timeout is for)
cat > "$T/health.sh" <<EOS
#!/bin/sh
( sleep 3; touch "$T/marker" ) &
echo \$! > "$T/grandchild.pid"
sleep 60
EOS
HEALTH_COMMAND="sh $T/health.sh"

# a fresh board booted into A with a try used: A is on trial, the check runs
boot_on_trial() {
	stop_daemon
	rm -f "$SIM" "$T/marker" "$T/grandchild.pid" "$T/rel.key" "$T/rel.pub"
	rm -rf "$T/keyring" "$T/state"
	setup_board
	reboot_board
	[ "$BOOTED" = A ] || fail "boot-select chose $BOOTED, expected A"
	wait_for 20 test -s "$T/grandchild.pid" || fail "$1: the health check did not start"
	GRANDCHILD=$(cat "$T/grandchild.pid")
}

# the grandchild is gone within 2 s and never writes its marker
expect_ended() {
	wait_for 2 sh -c "! kill -0 $GRANDCHILD 2>/dev/null" ||
		check_fail "$1: the check's grandchild (pid $GRANDCHILD) still runs"
	sleep 3.5
	if [ -e "$T/marker" ]; then
		check_fail "$1: the check's grandchild ran on and wrote its marker"
	else
		ok "$1: the check's grandchild ended with it"
	fi
	kill -9 "$GRANDCHILD" 2>/dev/null
}

# ---- the timeout ----
HEALTH_TIMEOUT=1
boot_on_trial timeout
wait_for 10 grep -q "health check timed out" "$T/flashd.log" || fail "no timeout verdict"
expect_ended "after the timeout verdict"

# ---- flashd stopped (SIGTERM) while the check runs ----
HEALTH_TIMEOUT=60
boot_on_trial SIGTERM
stop_daemon
expect_ended "after SIGTERM of flashd"

# ---- flashd killed (SIGKILL) while the check runs ----
boot_on_trial SIGKILL
kill -9 "$DAEMON_PID"
wait "$DAEMON_PID" 2>/dev/null
DAEMON_PID=
expect_ended "after SIGKILL of flashd"

check_done
say PASS
