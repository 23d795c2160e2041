#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# flashd under valgrind (memcheck) for a whole session: status, a full
# install with progress, a cancelled install, a refused bundle, slot and env
# calls, protocol garbage, a health check after a reboot, and SIGTERM.
# Any memory error or definite/indirect leak, in the daemon or in its
# forked install worker, fails the test.
. "$(dirname "$0")/../lib/sim-board.sh"

need valgrind
# valgrind cannot run a binary built with AddressSanitizer (the sanitizer
# pass of run-tests covers that build; this test runs in the plain one)
grep -q "^SAN_CFLAGS=.*address" "$top_builddir/config.log" 2>/dev/null &&
	skip "flashd is built with AddressSanitizer: valgrind runs on the plain build"
setup_board
make_bundle v1 1.0 2
make_bundle v2 2.0 2
flashd_conf "true"
VG_LOGS=$T/vg
mkdir -p "$VG_LOGS"
DAEMON_WRAPPER="valgrind --quiet --suppressions=$top_srcdir/tests/daemon/valgrind.supp --error-exitcode=99 --leak-check=full --show-leak-kinds=definite,indirect --errors-for-leak-kinds=definite,indirect --track-fds=no --log-file=$VG_LOGS/vg.%p.log"
START_TIMEOUT=60
start_daemon

fctl --json status > "$T/st.json" || fail "status"
expect_fields "$T/st.json" "status" <<EOF
booted A
operation null
EOF
fctl --json install "$T/v1.bundle" > "$T/i1.out" 2>&1 || fail "install under valgrind: $(tail -3 "$T/i1.out")"
grep -q '"step":"done"' "$T/i1.out" || fail "install did not finish"

# a cancelled install
mkfifo "$T/pipe"
gated_cat "$T/v2.bundle" 1048576 c > "$T/pipe" &
BG_PIDS="$BG_PIDS $!"
"$FLASHCTL" install - < "$T/pipe" > "$T/c.out" 2>&1 &
CLIENT=$!
BG_PIDS="$BG_PIDS $!"
wait_for 60 install_running || fail "gated install did not start"
fctl cancel > /dev/null || fail "cancel"
wait "$CLIENT"
[ $? = 1 ] || fail "cancelled install did not exit 1"
touch "$T/go-c"
wait_for 60 daemon_idle || fail "still busy after cancel"

# refused bundle, slot and env calls, garbage
head -c 1000 /dev/urandom > "$T/junk.bundle"
fctl install "$T/junk.bundle" > /dev/null 2>&1
[ $? = 3 ] || fail "junk bundle not refused with exit 3"
vcall "$T/a" io.flashd.SetEnv '{"name":"bootdelay","value":"2"}' || fail "SetEnv"
vcall "$T/a" io.flashd.SetEnv '{"name":"bad=name","value":"2"}' && fail "SetEnv bad=name"
vcall "$T/a" io.flashd.SetEnv '{"name":"BOOT_ORDER","value":"B"}' && fail "SetEnv BOOT_ORDER"
vcall "$T/a" io.flashd.ListEnv || fail "ListEnv"
vcall "$T/a" io.flashd.FlashInfo '{"partition":"rootfs-a"}' || fail "FlashInfo"
vcall "$T/a" io.flashd.FlashInfo '{"partition":"nope"}' && fail "FlashInfo nope"
vcall "$T/a" io.flashd.OverlayReset || fail "OverlayReset"
vcall "$T/a" io.flashd.MarkBad '{"slot":"Z"}' && fail "MarkBad Z"
vcall "$T/a" io.flashd.Install '{"fd":0}' --fd "$T/v1.bundle" --more || fail "install 2: $(tail -2 "$T/a")"
printf '{"method":"io.flashd.GetStatus"\0' | "$PY" "$VCALL" --raw > /dev/null
printf '{"method":"io.flashd.GetStatus","parameters":{"x":1}}\0' | "$PY" "$VCALL" --raw > /dev/null
vcall "$T/a" io.flashd.Rollback || fail "Rollback"
vcall "$T/a" io.flashd.Activate '{"slot":"B"}' || fail "Activate B"

# reboot into B: the health check ("true") runs in a forked child
reboot_board
wait_for 60 daemon_idle || fail "health check did not finish"
fctl --json status > "$T/st2.json"
expect_fields "$T/st2.json" "after reboot" <<EOF
booted B
on_trial false
EOF
stop_daemon
errors=$(grep -l "ERROR SUMMARY: [1-9]\|definitely lost\|indirectly lost\|Invalid \(read\|write\|free\)\|uninitialised" "$VG_LOGS"/vg.*.log 2>/dev/null)
if [ -n "$errors" ] || [ "$DAEMON_RC" != 0 ]; then
	for f in $errors; do say "---- $f"; head -n 60 "$f" >&2; done
	fail "valgrind found problems (flashd exit $DAEMON_RC)"
fi
say "PASS: valgrind clean over $(ls "$VG_LOGS" | wc -l) processes (daemon runs and forked workers)"
