#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# flashctl slot / env set go through a running flashd (issue 16): a
# technician's 'flashctl slot activate B' while the daemon installs is
# refused by the daemon itself (io.flashd.Busy, exit 4), writes nothing,
# and says it went through flashd; with the daemon idle the change is made
# by it ("via": "daemon"); with no daemon the same command writes the env
# directly ("via": "offline"), and --offline forces that path (under the
# board's lock: refused while a worker holds it).
. "$(dirname "$0")/../lib/sim-board.sh"

setup_board
make_bundle v2 2.0 8
start_daemon
C="--config $T/flashd.conf"

start_gated_install "$T/v2.bundle" 4194304 one
env_dump > "$T/env-before"

# ---- during the install: the daemon's busy check ----
fctl slot activate B $C > "$T/act.out" 2>&1
rc=$?
[ $rc = 4 ] || fail "slot activate during an install exited $rc, expected 4: $(cat "$T/act.out")"
grep -q "io.flashd.Busy" "$T/act.out" || fail "slot activate was not refused by flashd as Busy: $(cat "$T/act.out")"
grep -q "through flashd" "$T/act.out" || fail "slot activate does not say it went through flashd: $(cat "$T/act.out")"
fctl env set bootdelay=9 $C > "$T/set.out" 2>&1
rc=$?
[ $rc = 4 ] && grep -q "io.flashd.Busy" "$T/set.out" ||
	fail "env set during an install: exit $rc, expected 4 and io.flashd.Busy: $(cat "$T/set.out")"
# forced offline: the board's lock, held by the worker, refuses it
fctl slot activate B --offline $C > "$T/off.out" 2>&1
rc=$?
[ $rc = 4 ] && grep -q "pid $WORKER (flashd install worker)" "$T/off.out" ||
	fail "slot activate --offline during an install: exit $rc: $(cat "$T/off.out")"
env_dump > "$T/env-after"
cmp -s "$T/env-before" "$T/env-after" || fail "a refused write changed the env: $(diff "$T/env-before" "$T/env-after")"
say "during the install: $(head -n 1 "$T/act.out")"

touch "$T/go-one"
wait_for 60 daemon_idle || fail "the install did not end"

# ---- daemon idle: the change is made by the daemon ----
fctl --json env set bootdelay=5 $C > "$T/set2.json" 2>&1 || fail "env set through flashd: $(cat "$T/set2.json")"
expect_json "$T/set2.json" via daemon
[ "$(env_var bootdelay)" = 5 ] || fail "env set through flashd did not write bootdelay"
fctl --json slot activate A $C > "$T/act2.json" 2>&1 || fail "slot activate A through flashd: $(cat "$T/act2.json")"
expect_fields "$T/act2.json" <<EOT
via daemon
operation activate
slot A
EOT
env_var BOOT_ORDER | grep -q '^A' || fail "activate A through flashd: BOOT_ORDER is $(env_var BOOT_ORDER)"

# ---- no daemon: offline, directly ----
stop_daemon
fctl --json slot activate B $C > "$T/act3.json" 2> "$T/act3.err" ||
	fail "slot activate B offline: $(cat "$T/act3.json" "$T/act3.err")"
expect_json "$T/act3.json" via offline
grep -q "no daemon at $FLASHD_SOCKET: working offline" "$T/act3.err" ||
	fail "offline without a daemon, not said: $(cat "$T/act3.err")"
env_var BOOT_ORDER | grep -q '^B' || fail "offline activate B: BOOT_ORDER is $(env_var BOOT_ORDER)"
fctl slot mark-bad A $C > "$T/mb.out" 2>&1 || fail "slot mark-bad A offline: $(cat "$T/mb.out")"
grep -q "offline: no flashd answers" "$T/mb.out" || fail "offline path not named: $(cat "$T/mb.out")"
fctl --json env set bootdelay=6 $C > "$T/set3.json" 2>/dev/null || fail "env set offline: $(cat "$T/set3.json")"
expect_json "$T/set3.json" via offline
[ "$(env_var bootdelay)" = 6 ] || fail "offline env set did not write bootdelay"
say "ok: Busy through flashd during an install, via daemon when idle, offline without it"
