#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# GetStatus latency and daemon RSS on the userspace simulator (no VM):
# 1000 GetStatus against 1000 GetInfo (the bare Varlink round trip) on an
# idle daemon, then GetStatus in a loop during a 32 MiB install; the peak
# RSS (VmHWM) of flashd and its install worker over the whole run.
#   bench/status-sim.sh [MIB] [JSONL]  (from the build tree; prints numbers;
#                                       with JSONL, appends one "latency"
#                                       line for bench/report.py, variant sim)
# Numbers only: nothing here asserts a time (HACKING.md rule 8).
top_srcdir=$(cd "$(dirname "$0")/.." && pwd)
TEST_NAME=status-sim TEST_LIB=$top_srcdir/tests/lib
# shellcheck source=../tests/lib/sim-board.sh
. "$top_srcdir/tests/lib/sim-board.sh"
B=$top_srcdir/bench
MIB=${1:-32}
JSONL=${2:-}

setup_board
make_bundle big 2.0 "$MIB"
start_daemon ${FLASHD_ARGS:-}
"$PY" "$B/rss-sample.py" "$DAEMON_PID" "$T/rss.json" "$T/rss.ready" "$T/rss.stop" &
BG_PIDS="$BG_PIDS $!"
wait_for 10 test -f "$T/rss.ready" || fail "rss sampler did not start"
"$PY" "$B/status-latency.py" "$SOCK" "$T/info.json" "$T/none" idle org.varlink.service.GetInfo
"$PY" "$B/status-latency.py" "$SOCK" "$T/idle.json" "$T/none" idle
sleep 0.5
# the idle daemon's own high-water mark, before the install (the sampler
# writes its file only when it stops)
awk -v k="flashd[$DAEMON_PID]" '/^VmHWM:/ { printf "{\"%s\": %d}\n", k, $2 }' \
	/proc/"$DAEMON_PID"/status >"$T/rss-idle.json"
"$PY" "$B/status-latency.py" "$SOCK" "$T/run.json" "$T/run.stop" &
LAT=$!
BG_PIDS="$BG_PIDS $LAT"
sleep 0.3
t0=$(date +%s.%N)
"$FLASHCTL" -q install "$T/big.bundle" > "$T/install.out" 2>&1 || fail "install: $(cat "$T/install.out")"
t1=$(date +%s.%N)
touch "$T/run.stop" "$T/rss.stop"
wait "$LAT"
sleep 0.2
"$PY" - "$T" "$t0" "$t1" "$JSONL" <<'PYEOF'
import json, sys
t = sys.argv[1]
info, idle, run = (json.load(open(f"{t}/{n}.json")) for n in ("info", "idle", "run"))
rss = json.load(open(f"{t}/rss.json"))
print(f"install {float(sys.argv[3]) - float(sys.argv[2]):.2f} s")
print(f"GetInfo   idle  p50 {info['p50_ms']} ms  p99 {info['p99_ms']} ms (baseline)")
print(f"GetStatus idle  p50 {idle['p50_ms']} ms  p99 {idle['p99_ms']} ms  "
      f"p99/GetInfo {idle['p99_ms'] / info['p99_ms']:.1f}x  (target p99 <= 1 ms)")
print(f"GetStatus during install  n {run['n']} (busy {run['during_install']})  p50 {run['p50_ms']} ms  "
      f"p99 {run['p99_ms']} ms  max {run['max_ms']} ms  (target p99 <= 5 ms)")
print("idle daemon VmHWM KiB: " + open(f"{t}/rss-idle.json").read().strip())
print("peak RSS (VmHWM) KiB: " + ", ".join(f"{k} {v}" for k, v in sorted(rss.items())))
if sys.argv[4]:
    idle_rss = json.load(open(f"{t}/rss-idle.json"))
    with open(sys.argv[4], "a") as f:
        f.write(json.dumps({"kind": "latency", "variant": "sim",
                            "seconds": round(float(sys.argv[3]) - float(sys.argv[2]), 3),
                            "idle": json.dumps(idle), "during": json.dumps(run),
                            "getinfo": json.dumps(info), "rss_detail": rss,
                            "idle_rss_detail": idle_rss}) + "\n")
PYEOF
