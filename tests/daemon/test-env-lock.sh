#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# A local user without rights cannot freeze the daemon through the U-Boot
# env lock (issue 13, item 16). libubootenv creates /var/lock/fw_printenv.lock
# readable by everyone, and used to wait for it with a blocking flock: a
# shared lock held by nobody stalled the daemon's event loop (status, every
# client, SIGTERM) for as long as it was held. Now flashd makes the lock
# file root's own (0600) and waits for the lock a bounded time only: status
# and SetEnv answer at once, nobody cannot lock the new file, SIGTERM stops
# the daemon.
# A simulated board has an env lock of its own beside its file (SIM.envlock;
# a real board's is libubootenv's /var/lock one, the same code): the same
# holds for it, and the machine's /var/lock lock held by someone else does
# not stall a simulated board (boards simulated side by side, as CI runs
# them, used to see "U-Boot env busy" from each other).
. "$(dirname "$0")/../lib/sim-board.sh"

[ "$(id -u)" = 0 ] || skip "needs root to run a lock holder as another uid"
need setpriv
need flock
NOBODY=65534
SYSLOCK=/var/lock/fw_printenv.lock
[ -d /var/lock ] || skip "no /var/lock"

setup_board
LOCK=$SIM.envlock
chmod 755 "$T"
start_daemon

as_nobody() { setpriv --reuid=$NOBODY --regid=$NOBODY --clear-groups "$@"; }
# elapsed CMD...: run CMD, print the seconds it took (3 decimals)
now() { date +%s.%N; }

# the lock file as libubootenv leaves it: world-readable, lockable by anyone
rm -f "$LOCK"
: > "$LOCK"
chmod 0644 "$LOCK"
as_nobody flock -s "$LOCK" sleep 30 &
BG_PIDS="$BG_PIDS $!"
wait_for 30 sh -c "! flock -n -x $LOCK true" || fail "nobody did not get its shared lock"

t0=$(now)
timeout 20 "$FLASHCTL" --json status > "$T/st.json" 2>&1 || fail "flashctl status with the lock held by nobody: rc $? $(cat "$T/st.json")"
t1=$(now)
vcall "$T/set" --timeout 20 io.flashd.SetEnv '{"name":"bootdelay","value":"5"}' ||
	fail "SetEnv with the lock held by nobody: $(cat "$T/set" "$T/set.err")"
t2=$(now)
say "lock held by nobody: status answered in $(echo "$t1 - $t0" | bc) s, SetEnv in $(echo "$t2 - $t1" | bc) s"
expect_fields "$T/st.json" "status" <<EOT
slots.0.name A
EOT
[ "$(env_var bootdelay)" = 5 ] || fail "SetEnv did not store bootdelay: $(env_var bootdelay)"
awk -v a="$t0" -v b="$t2" 'BEGIN { exit !(b - a < 5) }' || fail "status + SetEnv took $(echo "$t2 - $t0" | bc) s"

# the machine's lock, held by another process, is not this board's: SetEnv
# stores at once (before: "U-Boot env busy ... /var/lock/fw_printenv.lock")
flock -x "$SYSLOCK" sleep 3 &
BG_PIDS="$BG_PIDS $!"
wait_for 10 sh -c "! flock -n -x $SYSLOCK true" || fail "could not hold $SYSLOCK"
vcall "$T/set" --timeout 20 io.flashd.SetEnv '{"name":"bootdelay","value":"7"}' ||
	fail "SetEnv with $SYSLOCK held elsewhere: $(cat "$T/set" "$T/set.err")"
[ "$(env_var bootdelay)" = 7 ] || fail "SetEnv did not store bootdelay: $(env_var bootdelay)"
say "$SYSLOCK held by another process: SetEnv stored on the simulated board"

# the lock file is root's now: nobody cannot open it, so cannot lock it
st=$(stat -c '%U %a' "$LOCK")
[ "$st" = "root 600" ] || fail "lock file is '$st', expected 'root 600'"
as_nobody flock -n -s "$LOCK" true 2>/dev/null && fail "nobody can still lock $LOCK"

# and SIGTERM stops the daemon promptly
t0=$(now)
stop_daemon
t1=$(now)
[ "$DAEMON_RC" = 0 ] || fail "flashd exited with $DAEMON_RC on SIGTERM"
awk -v a="$t0" -v b="$t1" 'BEGIN { exit !(b - a < 5) }' || fail "SIGTERM took $(echo "$t1 - $t0" | bc) s"
say "SIGTERM: stopped in $(echo "$t1 - $t0" | bc) s"
say PASS
