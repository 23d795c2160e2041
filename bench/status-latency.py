#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Latency of io.flashd.GetStatus on flashd's control socket.

  status-latency.py SOCKET OUT.json STOP-FILE [idle [METHOD [N]]]

One connection, one call after the other (what a status applet polling
the daemon does), until STOP-FILE exists; with "idle", N calls (default
1000; METHOD instead of GetStatus: org.varlink.service.GetInfo is the
round trip without flashd's own work). Writes
{"n", "p50_ms", "p99_ms", "max_ms", "errors", "during_install"} where
during_install counts the replies that showed a running operation.
"""
import json
import os
import socket
import sys
import time

path, out, stop = sys.argv[1], sys.argv[2], sys.argv[3]
idle = len(sys.argv) > 4 and sys.argv[4] == "idle"

s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.settimeout(30)
s.connect(path)
buf = b""
lat, errors, busy = [], 0, 0
method = sys.argv[5] if len(sys.argv) > 5 and sys.argv[5] else "io.flashd.GetStatus"
count = int(sys.argv[6]) if len(sys.argv) > 6 else 1000
req = json.dumps({"method": method}).encode() + b"\0"
while True:
    if idle and len(lat) >= count:
        break
    if not idle and os.path.exists(stop):
        break
    t0 = time.perf_counter()
    s.sendall(req)
    while b"\0" not in buf:
        d = s.recv(1 << 16)
        if not d:
            raise SystemExit("status-latency: flashd closed the connection")
        buf += d
    msg, _, buf = buf.partition(b"\0")
    lat.append((time.perf_counter() - t0) * 1000.0)
    r = json.loads(msg)
    if "error" in r:
        errors += 1
    elif (r.get("parameters") or {}).get("operation"):
        busy += 1
lat.sort()


def pct(p):
    return round(lat[min(len(lat) - 1, int(p / 100.0 * len(lat)))], 3) if lat else None


with open(out, "w") as f:
    json.dump({"n": len(lat), "p50_ms": pct(50), "p99_ms": pct(99),
               "max_ms": round(lat[-1], 3) if lat else None,
               "errors": errors, "during_install": busy}, f)
print(f"{method}: n={len(lat)} p50={pct(50)} ms p99={pct(99)} ms max={round(lat[-1], 3) if lat else None} ms"
      f" errors={errors} during_install={busy}")
