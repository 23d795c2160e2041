#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# A local user without rights can neither lock root out of the control
# socket nor starve other clients (issue 13 item 10; docs/security.md).
#
# As nobody: open as many connections as the daemon lets it keep; leave a
# third idle, pipeline GetStatus without ever reading on a third ("sinks"),
# and call GetStatus as fast as the daemon answers on the rest ("readers").
# Meanwhile:
# - root's `flashctl status` answers, median of 15 runs < 100 ms (every run
#   is printed; a build slow without attack, as under sanitizers, gets
#   twice its own baseline plus 100 ms: see the bound below);
# - another unprivileged user is still served (< 1 s);
# - nobody keeps at most the per-user limit of connections;
# - idle connections are closed after idle-timeout=, and so are the sinks
#   once they stalled that long; the readers are not.
. "$(dirname "$0")/../lib/sim-board.sh"

[ "$(id -u)" = 0 ] || skip "needs root to run clients as other uids"
need setpriv
NOBODY=65534
OTHER=$(for u in 23461 23462 23463; do getent passwd $u >/dev/null || { echo $u; break; }; done)
IDLE=3
PER_USER=8

setup_board
printf '[flashd]\nidle-timeout=%s\n' "$IDLE" >> "$T/flashd.conf"
chmod 755 "$T"
mkdir -m 1777 "$T/x"    # the attacker's flag files
start_daemon

as_nobody() { setpriv --reuid=$NOBODY --regid=$NOBODY --clear-groups "$@"; }

# root's status without an attack, for comparison (printed, not asserted)
"$PY" - "$FLASHCTL" > "$T/baseline.json" <<'EOF' || fail "flashctl status failed without an attack"
import json, statistics, subprocess, sys, time
ms = []
for _ in range(10):
    t = time.monotonic()
    subprocess.run([sys.argv[1], "status"], stdout=subprocess.DEVNULL, check=True)
    ms.append((time.monotonic() - t) * 1000)
json.dump({"median": round(statistics.median(ms), 1), "max": round(max(ms), 1)}, sys.stdout)
EOF

# ---- the attacker ----
as_nobody "$PY" - "$SOCK" "$T/x" "$IDLE" > "$T/attack.json" 2> "$T/attack.err" <<'EOF' &
import json, os, select, selectors, socket, sys, time

sock_path, tmp, idle = sys.argv[1], sys.argv[2], float(sys.argv[3])
MSG = b'{"method":"io.flashd.GetStatus"}\0'
out = {}

conns = []
for _ in range(200):
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(2)
    try:
        s.connect(sock_path)
    except OSError:
        s.close()
        break
    conns.append(s)
time.sleep(0.5)
live = []
for s in conns:
    s.setblocking(False)
    try:
        if s.recv(1, socket.MSG_PEEK) == b"":
            s.close()
            continue
    except BlockingIOError:
        pass
    except OSError:
        s.close()
        continue
    live.append(s)
out["opened"] = len(conns)
out["kept"] = len(live)

idle_conns, sinks, readers = live[0::3], live[1::3], live[2::3]
sel = selectors.DefaultSelector()
pending = {}
for s in sinks:
    pending[s] = MSG * 5000
    sel.register(s, selectors.EVENT_WRITE, "sink")
for s in readers:
    s.sendall(MSG * 4)
    sel.register(s, selectors.EVENT_READ, "reader")
answers = 0
start = time.monotonic()
ready = False
while time.monotonic() - start < 60 and not os.path.exists(tmp + "/stop"):
    if not ready and time.monotonic() - start > 0.5:
        open(tmp + "/flooding", "w").close()
        ready = True
    for key, ev in sel.select(0.1):
        s = key.fileobj
        try:
            if key.data == "sink":
                n = s.send(pending[s])
                pending[s] = pending[s][n:]
                if not pending[s]:
                    sel.unregister(s)
            else:
                d = s.recv(1 << 16)
                if not d:
                    sel.unregister(s)
                    continue
                k = d.count(b"\0")
                answers += k
                if k:
                    s.sendall(MSG * k)
        except (BlockingIOError, InterruptedError):
            pass
        except OSError:
            try:
                sel.unregister(s)
            except Exception:
                pass
flood = time.monotonic() - start
out["reader_answers"] = answers
out["flood_seconds"] = round(flood, 2)

# which connections did the daemon close, and when (idle ones: idle-timeout)
# (without reading: a sink that read its replies would be served again)
def closed(s):
    p = select.poll()
    p.register(s, select.POLLRDHUP)
    return any(ev & (select.POLLRDHUP | select.POLLHUP | select.POLLERR) for _, ev in p.poll(0))

t0 = time.monotonic()
readers_closed = sum(1 for s in readers if closed(s))
idle_left, sinks_left = list(idle_conns), list(sinks)
# a sink is answered (at the lowest priority) until its replies fill the
# socket and the daemon's output limit, then idles: allow for a slow machine
while (idle_left or sinks_left) and time.monotonic() - t0 < idle + 25:
    idle_left = [s for s in idle_left if not closed(s)]
    sinks_left = [s for s in sinks_left if not closed(s)]
    time.sleep(0.1)
out["idle"] = len(idle_conns)
out["idle_still_open"] = len(idle_left)
out["sinks"] = len(sinks)
out["sinks_still_open"] = len(sinks_left)
out["readers"] = len(readers)
out["readers_closed_while_busy"] = readers_closed
json.dump(out, sys.stdout)
EOF
ATTACK=$!
BG_PIDS="$BG_PIDS $ATTACK"
wait_for 20 test -e "$T/x/flooding" || fail "the attacker did not start: $(cat "$T/attack.err")"

# ---- root and another user, while nobody floods ----
"$PY" - "$FLASHCTL" "$T" "$OTHER" <<'EOF' > "$T/latency.json" || fail "measuring the latencies failed"
import json, os, statistics, subprocess, sys, time
flashctl, tmp, other = sys.argv[1], sys.argv[2], sys.argv[3]
root = []
rcs = []
for _ in range(15):
    t = time.monotonic()
    p = subprocess.run([flashctl, "status"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    root.append((time.monotonic() - t) * 1000)
    rcs.append(p.returncode)
    if p.returncode:
        print(f"root: flashctl status failed: {p.stderr.decode().strip()}", file=sys.stderr)
    time.sleep(0.05)
t = time.monotonic()
p = subprocess.run(["setpriv", f"--reuid={other}", f"--regid={other}", "--clear-groups",
                    flashctl, "status"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
other_ms = (time.monotonic() - t) * 1000
json.dump({"root_ms": [round(x, 1) for x in root], "root_rc": rcs,
           "root_median": round(statistics.median(root), 1), "root_max": round(max(root), 1),
           "other_ms": round(other_ms, 1), "other_rc": p.returncode}, sys.stdout)
EOF
touch "$T/x/stop"
wait "$ATTACK"
say "attacker (nobody): $(cat "$T/attack.json")"
say "latencies: $(cat "$T/latency.json")"

"$PY" - "$T/attack.json" "$T/latency.json" "$PER_USER" "$T/baseline.json" <<'EOF' || fail "the local-user bounds do not hold (above)"
import json, sys
a, l, per_user = json.load(open(sys.argv[1])), json.load(open(sys.argv[2])), int(sys.argv[3])
base = json.load(open(sys.argv[4]))
bad = []
# The bound: 100 ms. A build that is slow without any attack (sanitizers:
# flashctl alone takes > 50 ms) is CPU-bound in its own start-up, and the
# attacker's flood takes one of the machine's cores: that alone may double
# it (CI, ASan pass beside the VM lane: baseline 218 ms, 357 ms under
# attack). Starving root means seconds or a refusal, far above either.
bound = 100 if base["median"] < 50 else 2 * base["median"] + 100
print(f"bound for root's status: {bound} ms (baseline median {base['median']} ms)", file=sys.stderr)
if any(l["root_rc"]):
    bad.append(f"root's flashctl status failed {sum(1 for r in l['root_rc'] if r)} of 15 times")
if l["root_median"] >= bound:
    bad.append(f"root's flashctl status took {l['root_median']} ms (median), bound {bound} ms")
if l["other_rc"] or l["other_ms"] >= 1000:
    bad.append(f"another user's status: exit {l['other_rc']} after {l['other_ms']} ms")
if a["kept"] > per_user:
    bad.append(f"nobody kept {a['kept']} connections, the per-user limit is {per_user}")
if a["reader_answers"] == 0:
    bad.append("the attacker's readers were never answered (fair means everyone is served)")
if a["readers_closed_while_busy"]:
    bad.append(f"{a['readers_closed_while_busy']} busy readers were closed as idle")
if a["idle_still_open"]:
    bad.append(f"{a['idle_still_open']} of {a['idle']} idle connections still open after idle-timeout")
if a["sinks_still_open"]:
    bad.append(f"{a['sinks_still_open']} of {a['sinks']} stalled sinks still open after idle-timeout")
for b in bad:
    print("FAIL:", b, file=sys.stderr)
sys.exit(1 if bad else 0)
EOF
expect_daemon_ok "after the attack"
grep -q "refusing a connection" "$T/flashd.log" || fail "the per-user limit was not logged"
say "root's status without an attack: median $(jget "$T/baseline.json" median) ms, max $(jget "$T/baseline.json" max) ms"
say "PASS: root's status median $(jget "$T/latency.json" root_median) ms, max $(jget "$T/latency.json" root_max) ms under attack"
