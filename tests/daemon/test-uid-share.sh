#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# The connections for users without rights are shared fairly across uids
# (issue 32 item 10: six uids holding 8 connections each filled all 48
# shared slots and a seventh user got "Connection reset by peer").
# Six uids each open 8 connections, see each answered once and keep them
# open without a call; then:
# - a seventh uid's `flashctl status` is answered (main: reset);
# - root's is answered;
# - the seventh user got in by closing the longest-idle connection of a
#   uid holding the most, logged, and the six still hold 47;
# - a uid that already holds its share gets no more by evicting another
#   (an eighth connection of a flooding uid is refused).
# Root's and the seventh user's status latencies are printed, not asserted.
. "$(dirname "$0")/../lib/sim-board.sh"

[ "$(id -u)" = 0 ] || skip "needs root to run clients as other uids"
need setpriv
# numeric uids without a passwd entry: judged by their (absent) groups
UIDS=$(seq 23471 23477)
FLOODERS=$(echo "$UIDS" | head -n 6)
SEVENTH=$(echo "$UIDS" | tail -n 1)
PER_USER=8

setup_board
chmod 755 "$T"
mkdir -m 1777 "$T/x"    # the flooders' flag files
start_daemon

as_uid() { local u=$1; shift; setpriv --reuid="$u" --regid="$u" --clear-groups "$@"; }

# a flooder: opens PER_USER connections, calls GetStatus once on each
# (a refused connection is accepted, then closed: only an answer counts),
# writes how many it holds, keeps them until $T/x/stop, then writes how
# many the daemon closed meanwhile
for u in $FLOODERS; do
	as_uid "$u" "$PY" - "$SOCK" "$T/x" "$u" "$PER_USER" <<'PYEOF' 2> "$T/x/flood-$u.err" &
import os, select, socket, sys, time
sock_path, tmp, uid, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
held = []
for _ in range(n):
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(10)
    try:
        s.connect(sock_path)
        s.sendall(b'{"method":"io.flashd.GetStatus"}\0')
        buf = b""
        while not buf.endswith(b"\0"):
            d = s.recv(1 << 16)
            if not d:
                raise OSError("closed")
            buf += d
        held.append(s)
    except OSError:
        s.close()
open(f"{tmp}/held-{uid}", "w").write(f"{len(held)}\n")
while not os.path.exists(f"{tmp}/stop"):
    time.sleep(0.1)
closed = 0
for s in held:
    p = select.poll()
    p.register(s, select.POLLRDHUP)
    closed += any(ev & (select.POLLRDHUP | select.POLLHUP | select.POLLERR) for _, ev in p.poll(0))
open(f"{tmp}/closed-{uid}", "w").write(f"{closed}\n")
PYEOF
	BG_PIDS="$BG_PIDS $!"
done
# every flooder wrote $T/x/WHAT-UID
all_flooders() {
	local u
	for u in $FLOODERS; do [ -s "$T/x/$1-$u" ] || return 1; done
}
wait_for 60 all_flooders held || fail "the flooders did not open their connections"
total=0
for u in $FLOODERS; do total=$((total + $(cat "$T/x/held-$u"))); done
[ "$total" = 48 ] || fail "six uids hold $total connections, expected 6 x $PER_USER = 48 (the shared pool)"
ok "six uids hold all 48 shared connections"

# timed NAME CMD...: run CMD (15 s at most); its milliseconds in $MS
timed() {
	local name=$1 t0
	shift
	t0=$(date +%s%N)
	timeout 15 "$@" > "$T/$name.out" 2>&1
	RC=$?
	MS=$((($(date +%s%N) - t0) / 1000000))
}
timed seventh setpriv --reuid="$SEVENTH" --regid="$SEVENTH" --clear-groups "$FLASHCTL" status
seventh_rc=$RC seventh_ms=$MS
timed root "$FLASHCTL" status
root_rc=$RC root_ms=$MS
[ "$seventh_rc" = 0 ] || say "the seventh user's status: $(tail -n 3 "$T/seventh.out")"
check "a seventh user's status is answered (main: Connection reset by peer)" [ "$seventh_rc" = 0 ]
check "root's status is answered" [ "$root_rc" = 0 ]
check "the daemon logged which connection made room" \
	grep -q "closing this uid's longest-idle connection" "$T/flashd.log"

# a flooding uid asking for more than its share gets nothing by it: one
# that still holds its 8 (the daemon's log names the uid whose connection
# made room for the seventh user; which one is longest idle is timing)
victim=$(sed -n "s/.*control socket (pid [0-9]* uid \([0-9]*\)): closing this uid's longest-idle.*/\1/p" \
	"$T/flashd.log" | head -n 1)
first=$(for u in $FLOODERS; do [ "$u" = "$victim" ] || echo "$u"; done | head -n 1)
timed extra setpriv --reuid="$first" --regid="$first" --clear-groups "$FLASHCTL" status
check "a uid holding $PER_USER gets no ninth connection [$(head -c 200 "$T/extra.out")]" \
	grep -q "Connection reset by peer" "$T/extra.out"

touch "$T/x/stop"
wait_for 20 all_flooders closed || fail "the flooders did not report"
closed=0
for u in $FLOODERS; do closed=$((closed + $(cat "$T/x/closed-$u"))); done
check "exactly one flooder connection was closed for the seventh user (closed: $closed)" [ "$closed" = 1 ]
expect_daemon_ok "after the flood"
say "under a flood of 6 uids x $PER_USER connections: root's status ${root_ms} ms (exit $root_rc), a seventh user's ${seventh_ms} ms (exit $seventh_rc)"
check_done
say "PASS"
