#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# A local user cannot stall the daemon through the simulator file's lock
# (issue 32 item 11: on a sim: board a user holding `flock -s` on the
# 0644 simulator file stalled root's env set 7.5 s and status 7.0 s).
# - simulator files are created 0600 (main: 0644);
# - on a file still readable by others (made before), a user holds a
#   shared flock on it for 20 s: root's GetStatus and SetEnv are answered
#   while the lock is held (the client gives up after 5 s; main waited for
#   the lock), and the daemon still serves once it is released. The
#   latencies are printed, not asserted.
. "$(dirname "$0")/../lib/sim-board.sh"

[ "$(id -u)" = 0 ] || skip "needs root to run a client as another uid"
need setpriv flock
NOBODY=65534

setup_board
mode=$(stat -c %a "$SIM")
check "flash sim-create makes the simulator file 0600 (main: 0644), it is $mode" [ "$mode" = 600 ]
"$top_builddir/nsimctl" create "$T/other.sim" --type nor --size 1MiB --erase-block 64KiB \
	>/dev/null 2>&1 || fail "nsimctl create"
mode=$(stat -c %a "$T/other.sim")
check "nsimctl create makes the simulator file 0600, it is $mode" [ "$mode" = 600 ]

# a simulator file made before, readable by every user
chmod 644 "$SIM"
chmod 755 "$T"
mkdir -m 1777 "$T/x"   # nobody's flag file
start_daemon
fctl status >/dev/null || fail "status before the lock"

setpriv --reuid=$NOBODY --regid=$NOBODY --clear-groups \
	flock -s "$SIM" sh -c "touch '$T/x/locked'; sleep 20" &
LOCKER=$!
BG_PIDS="$BG_PIDS $LOCKER"
wait_for 10 test -e "$T/x/locked" || fail "nobody could not take the lock"

# timed CALL OUT METHOD [PARAMS]: one call with a 5 s client timeout; the
# milliseconds in $MS, the exit status varlink-call's
timed() {
	local out=$1 t0 rc
	shift
	t0=$(date +%s%N)
	vcall "$out" "$@" --timeout 5
	rc=$?
	MS=$((($(date +%s%N) - t0) / 1000000))
	return $rc
}
timed "$T/st" io.flashd.GetStatus
rc=$?
st_ms=$MS
if [ $rc = 0 ]; then
	ok "GetStatus answered while nobody holds the lock ($st_ms ms)"
else
	check_fail "GetStatus while nobody holds the lock: exit $rc after $st_ms ms: $(cat "$T/st.err" "$T/st.last")"
fi
timed "$T/set" io.flashd.SetEnv '{"name": "demo_var", "value": "1"}'
rc=$?
set_ms=$MS
# an answer, even an error: 3 is varlink-call's "no reply in time"
if [ $rc != 3 ]; then
	ok "SetEnv answered while nobody holds the lock ($set_ms ms): $(cat "$T/set.last")"
else
	check_fail "SetEnv while nobody holds the lock: no answer within 5 s"
fi
kill "$LOCKER" 2>/dev/null
wait "$LOCKER" 2>/dev/null
expect_daemon_ok "after the lock was released"
say "while a user held the simulator's lock: GetStatus ${st_ms} ms, SetEnv ${set_ms} ms"
check_done
say "PASS"
