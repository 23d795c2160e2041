#!/bin/sh
# One writer of a board at a time (issue 13 items 14, 18): while flashd
# installs, the install worker holds the board's lock, and
# - every offline write (flashctl slot activate|init|mark-bad|mark-good|
#   rollback|reset-counters|boot-select, env set, env set --force, env
#   init --force) is refused with exit 4, naming the worker, and writes
#   nothing;
# - a second flashd on the same board answers Install, SetEnv and
#   Activate with io.flashd.Busy naming the worker, without waiting;
# once the install ended the lock is free again: the same writes work.
. "$(dirname "$0")/lib.sh"

setup_board
make_bundle v2 2.0 8
start_daemon

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
# reading stays open
fctl slot status $B > /dev/null || fail "flashctl slot status refused during an install"

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

# ---- the install ends: the lock is free again ----
touch "$T/go-one"
wait "$CLIENT" || fail "the install failed: $(cat "$T/install-one.out")"
wait_for 10 daemon_idle || fail "flashd still busy after the install"
fctl env set bootdelay=4 $B > "$T/w.out" 2>&1 || fail "env set after the install: $(cat "$T/w.out")"
[ "$(env_var bootdelay)" = 4 ] || fail "env set after the install did not write"
say PASS
