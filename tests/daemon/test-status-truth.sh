#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# Status says what is known, never stale or misleading news (issue 31
# item 12):
# - a killed install worker: "Last install" names the slot and version it
#   was installing (not "version - into slot -");
# - a second flashd on the board while the first installs: the target is
#   "installing" by another process (the board's lock is held), not
#   "interrupted";
# - the state dir's file system full: status shows the new install, saying
#   its record could not be written, not the older record on disk.
. "$(dirname "$0")/../lib/sim-board.sh"

setup_board
make_bundle v1 1.0 8
make_bundle v2 2.0 2
start_daemon

# ---- a killed worker ----
start_gated_install "$T/v1.bundle" 4194304 one
kill -9 "$WORKER"
wait_for 20 daemon_idle || fail "the daemon did not notice the killed worker"
fctl --json status > "$T/k.json" || fail "status after the killed worker"
expect_fields "$T/k.json" "after a killed worker" <<EOF
last_install.slot B
last_install.version 1.0
last_install.result failed
EOF
fctl status > "$T/k.txt"
grep -q "Last install: version 1.0 into slot B: failed" "$T/k.txt" ||
	fail "human status after a killed worker: $(grep -A1 "Last install" "$T/k.txt")"

# ---- a second daemon while the first installs ----
mkdir -p "$T/state-second"
sed -e "s|^socket=.*|socket=$T/second.sock|" -e "s|^state-dir=.*|state-dir=$T/state-second|" \
	"$T/flashd.conf" > "$T/second.conf"
"$FLASHD" -c "$T/second.conf" >> "$T/second.log" 2>&1 &
SECOND=$!
BG_PIDS="$BG_PIDS $SECOND"
wait_for 10 "$PY" "$VCALL" --socket "$T/second.sock" --timeout 2 org.varlink.service.GetInfo > /dev/null 2>&1 ||
	fail "the second flashd did not start: $(cat "$T/second.log")"
start_gated_install "$T/v1.bundle" 4194304 two
vcall "$T/sec" io.flashd.GetStatus --socket "$T/second.sock" || fail "second daemon: GetStatus"
expect_fields "$T/sec.last" "second daemon during the first's install" <<EOF
parameters.slots.1.state installing
EOF
jget "$T/sec.last" parameters.installing_elsewhere | grep -q "pid $WORKER" ||
	fail "second daemon does not say who installs: $(jget "$T/sec.last" parameters.installing_elsewhere)"
FLASHD_SOCKET=$T/second.sock fctl status > "$T/sec.txt"
grep -q "being installed by another process" "$T/sec.txt" || fail "second daemon's human status: $(cat "$T/sec.txt")"
touch "$T/go-two"
wait "$CLIENT" || fail "the install failed: $(cat "$T/install-two.out")"
wait_for 10 daemon_idle || fail "flashd still busy after the install"
kill "$SECOND"

# ---- the state dir's file system full ----
[ "$(id -u)" = 0 ] || skip "needs root to mount a small tmpfs as the state dir (the rest passed)"
stop_daemon
MNT=$(mktemp -d "${TMPDIR:-/tmp}/flashd-statefull.XXXXXX")
umount_state() { rc=$?; umount "$MNT" 2>/dev/null; rmdir "$MNT" 2>/dev/null; return $rc; }
trap 'umount_state; cleanup' EXIT
mount -t tmpfs -o size=256k tmpfs "$MNT" || skip "cannot mount a tmpfs"
sed -i "s|^state-dir=.*|state-dir=$MNT|" "$T/flashd.conf"
start_daemon
fctl -q install "$T/v1.bundle" > "$T/i1.out" 2>&1 || fail "install v1: $(cat "$T/i1.out")"
fctl --json status > "$T/f1.json"
expect_fields "$T/f1.json" "after v1" <<EOF
last_install.version 1.0
last_install.record_error null
EOF
dd if=/dev/zero of="$MNT/filler" bs=4k 2>/dev/null
fctl -q install "$T/v2.bundle" > "$T/i2.out" 2>&1 || fail "install v2 with the state dir full: $(cat "$T/i2.out")"
fctl --json status > "$T/f2.json"
expect_fields "$T/f2.json" "after v2 with the state dir full" <<EOF
last_install.version 2.0
last_install.result success
EOF
jget "$T/f2.json" last_install.record_error | grep -q "No space left" ||
	fail "status does not say the record was not written: $(jget "$T/f2.json" last_install.record_error)"
fctl status > "$T/f2.txt"
grep -q "RECORD NOT SAVED" "$T/f2.txt" || fail "human status does not say the record was not saved: $(cat "$T/f2.txt")"
# room again: the next record is written, the note goes
rm -f "$MNT/filler"
fctl -q install "$T/v1.bundle" > "$T/i3.out" 2>&1 || fail "install v1 again: $(cat "$T/i3.out")"
fctl --json status > "$T/f3.json"
expect_fields "$T/f3.json" "after v1 again" <<EOF
last_install.version 1.0
last_install.record_error null
EOF
say PASS
