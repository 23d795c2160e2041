#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# One writer of a board at a time (issue 13 items 14, 18): while flashd
# installs, the install worker holds the board's lock, and
# - every offline write (flashctl slot activate|init|mark-bad|mark-good|
#   rollback|reset-counters|boot-select, env set, env set --force, env
#   init --force) is refused with exit 4, naming the worker, and writes
#   nothing;
# - a second flashd on the same board answers Install, SetEnv and
#   Activate with io.flashd.Busy naming the worker, without waiting;
# once the install ended the lock is free again: the same writes work.
# The worker also keeps no copy of the daemon's client connections: one
# the daemon closes (idle-timeout) ends for its client during the install.
. "$(dirname "$0")/../lib/sim-board.sh"

setup_board
make_bundle v2 2.0 8
printf '[flashd]\nidle-timeout=2\n' >> "$T/flashd.conf"
start_daemon

# a connection made before the install, left idle
"$PY" - "$SOCK" "$T" <<'EOF' &
import socket, sys, time
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
open(sys.argv[2] + "/idle-connected", "w").close()
s.settimeout(20)
t = time.monotonic()
try:
    d = s.recv(1)
    res = "eof" if d == b"" else "data"
except socket.timeout:
    res = "open"
open(sys.argv[2] + "/idle-result", "w").write(f"{res} after {time.monotonic() - t:.1f} s\n")
EOF
BG_PIDS="$BG_PIDS $!"
wait_for 10 test -e "$T/idle-connected" || fail "the idle client did not connect"

start_gated_install "$T/v2.bundle" 4194304 one

# ---- offline writes: refused, nothing written ----
env_dump > "$T/env-before"
B="--layout $LAYOUT --target $TARGET --cmdline $T/cmdline"
n=0
while read -r cmd; do
	# shellcheck disable=SC2086
	fctl $cmd $B > "$T/w.out" 2>&1
	rc=$?
	[ $rc = 4 ] || fail "'flashctl $cmd' during an install exited $rc, expected 4 (busy): $(cat "$T/w.out")"
	grep -q "pid $WORKER (flashd install worker)" "$T/w.out" ||
		fail "'flashctl $cmd' does not name the install worker: $(cat "$T/w.out")"
	n=$((n + 1))
done <<EOF
slot activate A
slot init
slot mark-bad B
slot mark-good
slot rollback
slot reset-counters
slot boot-select
env set bootdelay=9
env set --force BOOT_ORDER=A
env init --force
EOF
say "$n offline writes refused during the install, e.g.: $(cat "$T/w.out")"
env_dump > "$T/env-after"
cmp -s "$T/env-before" "$T/env-after" || fail "a refused offline write changed the env: $(diff "$T/env-before" "$T/env-after")"
# reading stays open, and says the install runs (the worker holds the lock)
fctl --json slot status $B > "$T/slot-st.json" || fail "flashctl slot status refused during an install"
expect_fields "$T/slot-st.json" "offline slot status during the install" <<EOT
slots.1.state installing
EOT

# ---- a second daemon on the same board ----
sed "s|^socket=.*|socket=$T/second.sock|" "$T/flashd.conf" > "$T/second.conf"
"$FLASHD" -c "$T/second.conf" >> "$T/second.log" 2>&1 &
SECOND=$!
BG_PIDS="$BG_PIDS $SECOND"
wait_for 10 "$PY" "$VCALL" --socket "$T/second.sock" --timeout 2 org.varlink.service.GetInfo > /dev/null 2>&1 ||
	fail "the second flashd did not start: $(cat "$T/second.log")"
for call in 'io.flashd.Install {"fd":0}' 'io.flashd.SetEnv {"name":"bootdelay","value":"8"}' \
	'io.flashd.Activate {"slot":"A"}' 'io.flashd.MarkGood {}'; do
	set -- $call
	vcall "$T/second" "$1" "$2" --socket "$T/second.sock" --timeout 5 --fd "$T/v2.bundle"
	expect_json "$T/second.last" error io.flashd.Busy "second daemon: $1"
	jget "$T/second.last" parameters.operation | grep -q "pid $WORKER (flashd install worker)" ||
		fail "second daemon: $1: Busy does not name the worker: $(cat "$T/second.last")"
done
env_dump > "$T/env-after2"
cmp -s "$T/env-before" "$T/env-after2" || fail "the second daemon changed the env: $(diff "$T/env-before" "$T/env-after2")"
kill "$SECOND"

# ---- the idle connection ended for its client while the worker runs ----
wait_for 15 test -e "$T/idle-result" || fail "the idle client got no result"
say "idle connection made before the install: $(cat "$T/idle-result")"
grep -q "^eof" "$T/idle-result" || fail "an idle connection closed by flashd stayed open for its client during the install: $(cat "$T/idle-result")"
kill -0 "$WORKER" 2>/dev/null || fail "the install worker ended too early for the check"

# ---- the install ends: the lock is free again ----
touch "$T/go-one"
wait "$CLIENT" || fail "the install failed: $(cat "$T/install-one.out")"
wait_for 10 daemon_idle || fail "flashd still busy after the install"
fctl env set bootdelay=4 $B > "$T/w.out" 2>&1 || fail "env set after the install: $(cat "$T/w.out")"
[ "$(env_var bootdelay)" = 4 ] || fail "env set after the install did not write"
say PASS
