#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# A killed daemon's install worker dies with it, and no two processes ever
# write one board (issue 13 item 14).
#
# An install of v2 into slot B holds still in its write step (the bundle
# comes through a gated pipe); flashd is killed with SIGKILL. Then:
# - the worker is gone within 5 s (PR_SET_PDEATHSIG), and with it its lock;
# - a new flashd installs v3 into B, which succeeds;
# - the gate opens: a worker that survived would now write the rest of v2
#   over B;
# - slot B holds exactly v3 (its bytes are v3's squashfs), status says
#   3.0, and the install records say so.
. "$(dirname "$0")/../lib/sim-board.sh"

setup_board
make_bundle v2 2.0 8
make_bundle v3 3.0 8
start_daemon

start_gated_install "$T/v2.bundle" 4194304 one
kill -0 "$WORKER" 2>/dev/null || fail "the install worker (pid $WORKER) is not running"

kill -KILL "$DAEMON_PID"
wait "$DAEMON_PID" 2>/dev/null
DAEMON_PID=
if wait_for 5 sh -c "! kill -0 $WORKER 2>/dev/null"; then
	survived=no
else
	survived=yes
	say "the worker (pid $WORKER) outlived the killed daemon"
fi

# nobody installs any more: offline status calls B's record interrupted
fctl --json slot status --layout "$LAYOUT" --target "$TARGET" --cmdline "$T/cmdline" > "$T/slot-st.json" ||
	fail "offline slot status after the kill"
[ $survived = yes ] || expect_fields "$T/slot-st.json" "offline slot status after the kill" <<EOT
slots.1.state interrupted
EOT

start_daemon
fctl install "$T/v3.bundle" > "$T/three.out" 2>&1 || fail "installing v3 after the restart: $(cat "$T/three.out")"
# let a surviving worker go on with v2, and wait until it is done
touch "$T/go-one"
wait_for 60 sh -c "! kill -0 $WORKER 2>/dev/null" || fail "worker $WORKER still runs after 60 s"

# slot B (rootfs-b: offset 0x3140000, 40 MiB) holds exactly v3
len=$(stat -c %s "$T/v3.sqfs")
fctl flash read --offset 0x3140000 --size 40MiB --length "$len" "$TARGET" "$T/b.img" >/dev/null ||
	fail "reading slot B"
want=$(sha256sum < "$T/v3.sqfs" | cut -d' ' -f1)
got=$(sha256sum < "$T/b.img" | cut -d' ' -f1)
fctl --json status > "$T/st.json" || fail "status"
say "worker survived the daemon: $survived; slot B: $([ "$got" = "$want" ] && echo "v3 intact" || echo "NOT v3 (overwritten)"); status: B $(jget "$T/st.json" slots.1.state) $(jget "$T/st.json" slots.1.version)"
[ "$got" = "$want" ] || fail "slot B does not hold v3: a second writer overwrote it (status still says $(jget "$T/st.json" slots.1.version))"
[ $survived = no ] || fail "the install worker (pid $WORKER) outlived its daemon"
expect_fields "$T/st.json" "status after the v3 install" <<EOF
slots.1.version 3.0
last_install.version 3.0
last_install.result success
EOF
say PASS
