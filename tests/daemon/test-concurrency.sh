#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# One install at a time, many readers at once: while an install runs, a
# second install (flashctl and raw Varlink) and every other state change
# get io.flashd.Busy naming the running operation; 50 status clients
# polling at the same time are all answered, see the install's progress
# move, and the install completes.
. "$(dirname "$0")/../lib/sim-board.sh"

setup_board
make_bundle v1 1.0 8
make_bundle v2 2.0 1
start_daemon

mkfifo "$T/pipe"
gated_cat "$T/v1.bundle" 4194304 one > "$T/pipe" &
BG_PIDS="$BG_PIDS $!"
"$FLASHCTL" --json install - < "$T/pipe" > "$T/one.out" 2> "$T/one.err" &
CLIENT=$!
BG_PIDS="$BG_PIDS $!"
wait_for 20 install_running || fail "the install did not reach the write step"

# ---- a second install, and other state changes: Busy ----
fctl install "$T/v2.bundle" > "$T/two.out" 2>&1
rc=$?
[ $rc = 4 ] || fail "second flashctl install exited $rc, expected 4 (busy)"
grep -q "busy (operation: install)" "$T/two.out" || fail "second install: no 'busy (operation: install)': $(cat "$T/two.out")"
for call in 'io.flashd.Install {"fd":0}' 'io.flashd.MarkGood {}' 'io.flashd.MarkBad {"slot":"B"}' \
	'io.flashd.Activate {"slot":"B"}' 'io.flashd.Rollback {}' 'io.flashd.OverlayReset {}' \
	'io.flashd.SetEnv {"name":"bootdelay","value":"1"}'; do
	set -- $call
	vcall "$T/busy" "$1" "$2" --fd "$T/v2.bundle" && fail "$1 during an install was allowed"
	expect_fields "$T/busy.last" "$1 during an install" <<EOF
error io.flashd.Busy
parameters.operation install
EOF
done

# ---- 50 concurrent status clients ----
# 50 flashctl processes at once
i=0
while [ $i -lt 50 ]; do
	"$FLASHCTL" --json status > "$T/par.$i.json" 2> "$T/par.$i.err" &
	eval "PAR_$i=\$!"
	i=$((i + 1))
done
i=0
while [ $i -lt 50 ]; do
	eval "wait \$PAR_$i" || fail "concurrent flashctl status #$i failed: $(cat "$T/par.$i.err")"
	expect_fields "$T/par.$i.json" "concurrent status #$i" <<EOF
operation install
progress.step write
progress.slot B
EOF
	i=$((i + 1))
done

# 50 Varlink connections open at once, each polling GetStatus on its own
# connection until the install is over; the gate opens once all of them
# got a first answer (operation "install", with progress).
"$PY" - "$SOCK" "$T/go-one" > "$T/poll.out" 2>&1 <<'EOF' &
import json, socket, sys, threading, time
sock_path, gate = sys.argv[1], sys.argv[2]
N = 50
first = threading.Barrier(N + 1, timeout=30)
results = [None] * N

def call(s, buf):
    s.sendall(b'{"method":"io.flashd.GetStatus"}\0')
    while b"\0" not in buf[0]:
        d = s.recv(1 << 16)
        if not d:
            raise RuntimeError("daemon closed the connection")
        buf[0] += d
    msg, _, buf[0] = buf[0].partition(b"\0")
    return json.loads(msg)

def client(i):
    seen, answers = [], 0
    try:
        s = socket.socket(socket.AF_UNIX)
        s.settimeout(20)
        s.connect(sock_path)
        buf = [b""]
        r = call(s, buf)
        answers += 1
        seen.append(r["parameters"].get("progress", {}).get("percent"))
        first.wait()
        deadline = time.time() + 60
        while r["parameters"]["operation"] == "install":
            if time.time() > deadline:
                raise RuntimeError("install still running after 60 s")
            if "error" in r:
                raise RuntimeError(f"error reply {r}")
            time.sleep(0.1)
            r = call(s, buf)
            answers += 1
            if r["parameters"]["operation"] == "install":
                seen.append(r["parameters"]["progress"]["percent"])
        results[i] = (answers, seen, r["parameters"]["last_install"]["result"])
    except Exception as e:
        results[i] = e

threads = [threading.Thread(target=client, args=(i,)) for i in range(N)]
for t in threads:
    t.start()
first.wait()        # all 50 connected and answered once: let the install go on
open(gate, "w").close()
for t in threads:
    t.join()
bad = [(i, r) for i, r in enumerate(results) if not isinstance(r, tuple)]
if bad:
    print(f"{len(bad)} clients failed, e.g. #{bad[0][0]}: {bad[0][1]}")
    sys.exit(1)
answers = sum(r[0] for r in results)
moved = sum(1 for r in results if len(set(r[1])) > 1)
outcome = {r[2] for r in results}
print(f"{N} clients, {answers} answers; {moved} saw the percentage move; last result {outcome}")
assert outcome == {"success"}, outcome
# each: at least one answer during the install (before the gate opened)
# and one after it; how many in between depends on the machine's speed
assert all(r[0] >= 2 and r[1] and r[1][0] is not None for r in results), results
EOF
POLLER=$!
BG_PIDS="$BG_PIDS $!"
wait $POLLER || fail "concurrent pollers: $(cat "$T/poll.out")"
say "$(cat "$T/poll.out")"

wait "$CLIENT" || fail "the install failed: $(cat "$T/one.err")"
tail -n 20 "$T/one.out" | grep -q '"step":"done"' || fail "install did not end with step done"
fctl --json status > "$T/st.json"
expect_fields "$T/st.json" "after the install" <<EOF
operation null
last_install.result success
last_install.version 1.0
slots.1.version 1.0
next_boot B
EOF
# the refused second install left no record of its own
expect_fields "$T/state/installs.json" "install records" <<EOF
#. 1
EOF
expect_daemon_ok "end"
say PASS
