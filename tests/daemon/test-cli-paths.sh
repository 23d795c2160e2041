#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# One flashctl, whatever the path (issue 34 item 8): with flashd running,
# every command it can answer goes through it, with no --config (slot
# status, env get, env list, slot mark-good OTHER, rollback); offline
# only with --offline or when no daemon is there, said once on stderr.
# Each refusal gives the same exit code and the same io.flashd label
# through the daemon and offline (flashctl(1), EXIT STATUS). Item 9:
# env get prints NAME=value as fw_printenv does, -n the value alone.
. "$(dirname "$0")/../lib/sim-board.sh"

setup_board
start_daemon
OFF=(--offline --config "$T/flashd.conf")

# both WANT WHAT CMD...: CMD through the daemon (no board on the command
# line, $FLASHD_SOCKET), then offline; the same exit code WANT and the
# same [io.flashd.X] label on stderr both times; the env unchanged
both() {
	local want=$1 what=$2 rc1 rc2 l1 l2
	shift 2
	env_dump > "$T/env-before"
	timeout 60 "$FLASHCTL" "$@" > "$T/d.out" 2>&1 < /dev/null
	rc1=$?
	timeout 60 "$FLASHCTL" "$@" "${OFF[@]}" > "$T/o.out" 2>&1 < /dev/null
	rc2=$?
	l1=$(grep -o '\[io\.flashd\.[A-Za-z]*\]' "$T/d.out" | head -n 1)
	l2=$(grep -o '\[io\.flashd\.[A-Za-z]*\]' "$T/o.out" | head -n 1)
	grep -q "through flashd" "$T/d.out" ||
		check_fail "$what: the daemon path did not go through flashd: $(cat "$T/d.out")"
	grep -q "through flashd" "$T/o.out" &&
		check_fail "$what: --offline went through flashd: $(cat "$T/o.out")"
	if [ "$rc1" = "$want" ] && [ "$rc2" = "$want" ] && [ -n "$l1" ] && [ "$l1" = "$l2" ]; then
		ok "$what: exit $want $l1 through flashd and offline"
	else
		check_fail "$what: daemon exit $rc1 '$l1', offline exit $rc2 '$l2', expected $want" \
			"and one label: $(cat "$T/d.out") // $(cat "$T/o.out")"
	fi
	env_dump > "$T/env-now"
	cmp -s "$T/env-before" "$T/env-now" || check_fail "$what: a refusal changed the env"
}

# ---- reads through the daemon, no --config (the default flashd.conf is
# not this board's) ----
fctl --json slot status > "$T/ss.json" 2> "$T/ss.err" || fail "slot status: $(cat "$T/ss.err")"
expect_fields "$T/ss.json" <<EOF
group rootfs
boot_order A B
booted A
next_boot A
slots.1.name B
slots.1.tries_left 3
EOF
fctl slot status > "$T/ss.txt" 2>&1 || fail "slot status (text): $(cat "$T/ss.txt")"
grep -q "^booted: *A (from flashd.slot=)" "$T/ss.txt" || fail "slot status: $(cat "$T/ss.txt")"
fctl --json slot status "${OFF[@]}" > "$T/ss-off.json" 2>&1 || fail "slot status --offline"
"$PY" - "$T/ss.json" "$T/ss-off.json" <<'PYEOF' || fail "slot status: daemon and offline differ"
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:])
sys.exit(0 if a == b else print(a, b, file=sys.stderr) or 1)
PYEOF
ok "slot status: the same answer through flashd and offline"

fctl env get BOOT_ORDER > "$T/g.out" 2>&1 || fail "env get through flashd: $(cat "$T/g.out")"
[ "$(cat "$T/g.out")" = "BOOT_ORDER=A B" ] || fail "env get: '$(cat "$T/g.out")', expected BOOT_ORDER=A B"
[ "$(fctl env get -n BOOT_ORDER)" = "A B" ] || fail "env get -n: '$(fctl env get -n BOOT_ORDER)'"
[ "$(fctl env get --no-name BOOT_A_LEFT "${OFF[@]}")" = 3 ] || fail "env get --no-name offline"
fctl --json env get BOOT_ORDER > "$T/g.json" || fail "env get --json"
expect_json "$T/g.json" BOOT_ORDER "A B"
fctl env get nosuchvar > "$T/g2.out" 2>&1 && fail "env get of an unset variable succeeded"
grep -q "nosuchvar: not set" "$T/g2.out" || fail "env get unset: $(cat "$T/g2.out")"
fctl --json env list > "$T/l.json" || fail "env list through flashd"
expect_fields "$T/l.json" <<EOF
via daemon
variables.BOOT_ORDER A B
EOF
ok "env get NAME=value, -n the value; env list through flashd"

# ---- a value with terminal controls: escaped on a terminal, raw in a pipe ----
if command -v script >/dev/null; then
	fctl -q env set "rvtest=x$(printf '\033')]0;PWNED$(printf '\007')y" || fail "env set rvtest"
	for cmd in "env get rvtest" "env list" "env get rvtest --offline --config $T/flashd.conf" \
		"env list --offline --config $T/flashd.conf"; do
		script -qec "$FLASHCTL $cmd" /dev/null > "$T/tty.out" 2>&1 || fail "$cmd on a terminal: $(cat "$T/tty.out")"
		grep -q 'rvtest=x\\x1b\]0;PWNED\\x07y' "$T/tty.out" || fail "$cmd on a terminal: not escaped: $(od -c "$T/tty.out" | head -5)"
		! grep -q "$(printf '\033')" "$T/tty.out" || fail "$cmd put an ESC on the terminal"
	done
	[ "$(fctl env get -n rvtest)" = "x$(printf '\033')]0;PWNED$(printf '\007')y" ] ||
		fail "env get -n in a pipe is not byte for byte: $(fctl env get -n rvtest | od -c)"
	fctl -q env set rvtest= || fail "env set rvtest="
	ok "env values with terminal controls: escaped on a terminal, raw in a pipe"
else
	say "no script(1): the terminal escaping of env values is not tried"
fi

# ---- a user without rights reads through the daemon, changes nothing ----
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null; then
	NOBODY=65534
	chmod 755 "$T"
	as_nobody "$FLASHCTL" --json slot status > "$T/nb.json" 2> "$T/nb.err" ||
		fail "nobody: slot status through flashd: $(cat "$T/nb.err")"
	expect_json "$T/nb.json" booted A
	[ "$(as_nobody "$FLASHCTL" env get BOOT_ORDER)" = "BOOT_ORDER=A B" ] || fail "nobody: env get"
	env_dump > "$T/env-before"
	as_nobody "$FLASHCTL" slot mark-good B > "$T/nb.out" 2>&1
	rc=$?
	[ $rc = 4 ] && grep -q "org.varlink.service.PermissionDenied" "$T/nb.out" ||
		fail "nobody: slot mark-good B: exit $rc: $(cat "$T/nb.out")"
	env_dump > "$T/env-now"
	cmp -s "$T/env-before" "$T/env-now" || fail "nobody changed the env"
	chmod 700 "$T"
	ok "a user without rights reads slot status and the env through flashd, changes nothing"
else
	say "not root or no setpriv: the user without rights is not tried"
fi

# ---- changes of another slot than the booted one, through the daemon ----
fctl --json slot mark-bad B > "$T/mg.json" 2>&1 || fail "slot mark-bad B: $(cat "$T/mg.json")"
expect_fields "$T/mg.json" <<EOF
via daemon
operation mark-bad
slot B
EOF

# ---- the refusals, through the daemon and offline ----
both 5 "env set BOOT_ORDER without --force" env set BOOT_ORDER=B
both 3 "env set --force of a value the boot script reads otherwise" env set --force BOOT_A_LEFT=x
both 3 "mark-good of a slot the layout does not have" slot mark-good Z
fctl -q slot mark-bad B || fail "mark-bad B through flashd"
[ "$(env_var BOOT_ORDER)" = A ] || fail "BOOT_ORDER after mark-bad B: $(env_var BOOT_ORDER)"
both 3 "rollback with no other verified slot" slot rollback
both 3 "activate of a slot not read back as its signed image" slot activate B
both 3 "mark-bad of the last slot of BOOT_ORDER" slot mark-bad A
# B back in BOOT_ORDER, recorded failed (as fw_setenv would write it): A is
# the only verified slot, --force would take it out
{ env_dump | grep -v '^BOOT_ORDER=\|^FLASHD_B_STATE='; echo "BOOT_ORDER=A B"
  echo "FLASHD_B_STATE=failed"; } | tr '\n' '\0' |
	xargs -0 "$FLASHCTL" -q env init --force --layout "$LAYOUT" --target "$TARGET" ||
	fail "env init --force"
both 5 "mark-bad of the only verified slot" slot mark-bad A

# ---- no daemon: offline, said once; a daemon that is there is never skipped ----
stop_daemon
fctl --json slot status --config "$T/flashd.conf" > "$T/nd.json" 2> "$T/nd.err" ||
	fail "slot status without a daemon: $(cat "$T/nd.err")"
[ "$(grep -c "no daemon at $SOCK: working offline" "$T/nd.err")" = 1 ] ||
	fail "no daemon: not said once on stderr: $(cat "$T/nd.err")"
expect_json "$T/nd.json" booted A
fctl -q env get -n BOOT_ORDER --config "$T/flashd.conf" > "$T/nd.out" 2>&1 &&
	[ "$(cat "$T/nd.out")" = "A B" ] || fail "env get -q without a daemon: $(cat "$T/nd.out")"
ok "no daemon: offline, said once on stderr (not with -q)"
check_done
