#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# One dead env copy does not lock the board (issue 31 item 8): when the
# block of one redundant env copy fails its erase (or is bad), every store
# goes on through the healthy copy (install, mark-bad, activate, env set,
# through the daemon and offline), and status says loudly which copy is
# dead (--json: env.copies[i].state "dead"; the human status a line).
. "$(dirname "$0")/../lib/sim-board.sh"

NSIMCTL=$top_builddir/nsimctl
[ -x "$NSIMCTL" ] || fail "$NSIMCTL not built"
# layouts/nandsim-128m.json: u-boot-env at block 8, u-boot-env-redund at block 9
setup_board
make_bundle v1 1.0 2

dead_copy_checks() { # WHAT COPY(1-based)
	fctl --json status > "$T/st.json" || { check_fail "$1: status failed"; return; }
	[ "$(jget "$T/st.json" "env.copies.$(($2 - 1)).state")" = dead ] ||
		check_fail "$1: status --json does not call copy $2 dead: $(jget "$T/st.json" env)"
	fctl status > "$T/st.txt"
	grep -q "copy $2 DEAD" "$T/st.txt" ||
		check_fail "$1: flashctl status does not say loudly that copy $2 is dead: $(cat "$T/st.txt")"
}

run_ops() { # WHAT COPY
	fctl env set FOO=1 > "$T/e1.out" 2>&1 || check_fail "$1: env set FOO=1: $(cat "$T/e1.out")"
	fctl env set FOO=2 > "$T/e2.out" 2>&1 || check_fail "$1: env set FOO=2: $(cat "$T/e2.out")"
	[ "$(env_var FOO)" = 2 ] || check_fail "$1: FOO is '$(env_var FOO)' after two stores, expected 2"
	fctl -q install "$T/v1.bundle" > "$T/i.out" 2>&1 || check_fail "$1: install: $(cat "$T/i.out")"
	fctl slot mark-bad B > "$T/mb.out" 2>&1 || check_fail "$1: mark-bad B: $(cat "$T/mb.out")"
	fctl slot activate B > "$T/ac.out" 2>&1 || check_fail "$1: activate B: $(cat "$T/ac.out")"
	[ "$(env_var BOOT_ORDER)" = "B A" ] || check_fail "$1: BOOT_ORDER is '$(env_var BOOT_ORDER)'"
	dead_copy_checks "$1" "$2"
}

# ---- the redundant copy's erase fails ----
"$NSIMCTL" fault "$SIM" --block 9 --erase --program >/dev/null || fail "nsimctl fault"
start_daemon
run_ops "erase fails on copy 2" 2
stop_daemon
# offline too (flashctl on the env directly)
fctl env set --offline --layout "$LAYOUT" --target "$TARGET" BAR=1 > "$T/o.out" 2>&1 ||
	check_fail "offline env set: $(cat "$T/o.out")"

# ---- the first copy's block goes bad ----
rm -f "$SIM" "$T/rel.key" "$T/rel.pub"; rm -rf "$T/keyring" "$T/state"
setup_board
make_bundle v1 1.0 2
# one more store: both copies hold the slot records (a dead newest copy
# would roll the env back to the older one, as U-Boot would read it)
fctl -q env set --offline --layout "$LAYOUT" --target "$TARGET" BAR=0 || fail "env set BAR=0"
"$NSIMCTL" markbad "$SIM" 8 >/dev/null || fail "nsimctl markbad"
start_daemon
run_ops "copy 1 bad" 1

check_done
say PASS
