#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Peak RSS (VmHWM) of a process and all its descendants, sampled.

  rss-sample.py PID OUT.json READY-FILE STOP-FILE [INTERVAL_S]

Polls /proc every INTERVAL_S (default 0.01 s) until STOP-FILE exists or PID is gone and writes
{"<comm>[<pid>]": peak KiB, ...} to OUT.json. VmHWM is the kernel's own
high-water mark, so a sample only has to come before the process exits;
a child that lives shorter than one interval can be missed (bench/run
also reports the rusage maximum of the whole tree, which cannot).
"""
import json
import os
import sys
import time

root, out, ready, stop = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
interval = float(sys.argv[5]) if len(sys.argv) > 5 else 0.01
peak = {}


def children(pid):
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(x) for x in f.read().split()]
    except OSError:
        return []


def sample(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            name, hwm = "?", None
            for line in f:
                if line.startswith("Name:"):
                    name = line.split()[1]
                elif line.startswith("VmHWM:"):
                    hwm = int(line.split()[1])
        if hwm is not None:
            key = f"{name}[{pid}]"
            peak[key] = max(peak.get(key, 0), hwm)
    except OSError:
        pass
    for c in children(pid):
        sample(c)


open(ready, "w").close()
while not os.path.exists(stop) and os.path.exists(f"/proc/{root}"):
    sample(root)
    time.sleep(interval)
with open(out, "w") as f:
    json.dump(peak, f, sort_keys=True)
