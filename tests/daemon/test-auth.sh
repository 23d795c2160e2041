#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# Authorization on the control socket: a client of another uid (nobody)
# reads status, env and flash info, but every state-changing method is
# refused with org.varlink.service.PermissionDenied, changes nothing, and
# the daemon logs each refusal naming the peer. With socket-group= set, a
# member of that group may change state.
. "$(dirname "$0")/../lib/sim-board.sh"

setup_other_users

setup_board
make_bundle v1 1.0 2
chmod 755 "$T"                   # nobody must reach the socket and the bundle
chmod 644 "$T/v1.bundle"
start_daemon

# a uid that is in the socket group only through its primary gid

env_dump > "$T/env-before"

# ---- reading is open to everyone ----
as_nobody "$PY" "$VCALL" io.flashd.GetStatus > "$T/st.out" 2>&1 || fail "nobody: GetStatus: $(cat "$T/st.out")"
expect_fields "$T/st.out" "nobody GetStatus" <<EOF
parameters.compatible flashd,nandsim-128m
parameters.booted A
EOF
as_nobody "$FLASHCTL" --json status > "$T/st.json" 2>&1 || fail "nobody: flashctl status: $(cat "$T/st.json")"
expect_fields "$T/st.json" "nobody flashctl status" <<EOF
slots.0.name A
operation null
EOF
for call in 'io.flashd.GetEnv {"name":"BOOT_ORDER"}' 'io.flashd.ListEnv {}' \
	'io.flashd.FlashInfo {}' 'io.flashd.OverlayStatus {}' 'org.varlink.service.GetInfo {}'; do
	set -- $call
	as_nobody "$PY" "$VCALL" "$1" "$2" > "$T/r.out" 2>&1 || fail "nobody: $1 refused: $(cat "$T/r.out")"
done

# ---- every mutating method is refused ----
n=0
for call in 'io.flashd.Install {"fd":0}' 'io.flashd.Install {"path":"/dev/null"}' \
	'io.flashd.Cancel {}' 'io.flashd.MarkGood {}' 'io.flashd.MarkBad {"slot":"B"}' \
	'io.flashd.Activate {"slot":"B"}' 'io.flashd.Rollback {}' 'io.flashd.OverlayReset {}' \
	'io.flashd.SetEnv {"name":"bootdelay","value":"9"}' \
	'io.flashd.SetEnv {"name":"BOOT_ORDER","value":"B","force":true}'; do
	set -- $call
	as_nobody "$PY" "$VCALL" --fd "$T/v1.bundle" "$1" "$2" > "$T/r.out" 2>&1 &&
		fail "nobody: $1 $2 was allowed: $(cat "$T/r.out")"
	expect_fields "$T/r.out" "nobody $1 $2" <<EOF
error org.varlink.service.PermissionDenied
EOF
	n=$((n + 1))
done
# the daemon logs each refusal with the peer's uid
refusals=$(grep -c "uid $NOBODY).*PermissionDenied\|uid $NOBODY).*not authorized\|uid $NOBODY).*refused" "$T/flashd.log")
[ "$refusals" -ge "$n" ] ||
	fail "only $refusals of $n refusals logged naming uid $NOBODY: $(grep "uid $NOBODY" "$T/flashd.log" | head -3)"
grep "uid $NOBODY" "$T/flashd.log" | grep -q "io.flashd.MarkGood" || fail "the MarkGood refusal does not name the method"

# flashctl as nobody: exit 4 (permission denied), with the reason
as_nobody "$FLASHCTL" install "$T/v1.bundle" > "$T/i.out" 2>&1
rc=$?
[ $rc = 4 ] || fail "nobody: flashctl install exited $rc, expected 4: $(cat "$T/i.out")"
grep -qi "permission" "$T/i.out" || fail "nobody: flashctl install does not say why: $(cat "$T/i.out")"
as_nobody "$FLASHCTL" cancel > "$T/c.out" 2>&1
rc=$?
[ $rc = 4 ] || fail "nobody: flashctl cancel exited $rc, expected 4"
as_nobody "$FLASHCTL" overlay reset --yes > "$T/o.out" 2>&1
rc=$?
[ $rc = 4 ] || fail "nobody: flashctl overlay reset --yes exited $rc, expected 4"

env_dump > "$T/env-after"
cmp -s "$T/env-before" "$T/env-after" || fail "refused calls changed the env: $(diff "$T/env-before" "$T/env-after")"
[ ! -s "$T/state/installs.json" ] || fail "a refused Install left an install record"
expect_daemon_ok "after the refusals"

# ---- socket-group=: a member may change state, others still may not ----
stop_daemon
printf '[flashd]\nsocket-group=%s\n' "$GROUP" >> "$T/flashd.conf"
start_daemon
as_member "$PY" "$VCALL" io.flashd.SetEnv '{"name":"bootdelay","value":"7"}' > "$T/m.out" 2>&1 ||
	fail "member of $GROUP: SetEnv refused: $(cat "$T/m.out")"
[ "$(env_var bootdelay)" = 7 ] || fail "member's SetEnv did not reach the env"
as_member "$FLASHCTL" -q install "$T/v1.bundle" > "$T/mi.out" 2>&1 ||
	fail "member of $GROUP: flashctl install failed: $(cat "$T/mi.out")"
[ "$(env_var FLASHD_B_VERSION)" = 1.0 ] || fail "member's install did not activate B"
as_nobody "$PY" "$VCALL" io.flashd.MarkGood > "$T/n.out" 2>&1 && fail "nobody allowed with socket-group set"
expect_fields "$T/n.out" "nobody with socket-group" <<EOF
error org.varlink.service.PermissionDenied
EOF
# ---- authorization is by the peer's credentials, not the user database ----
# (issue 13 item 11) a uid without a passwd entry is judged by its groups:
# with the socket group as gid or as a supplementary group it may change
# state; its passwd entry (or the lack of one) plays no part.
NOUSER=$(for u in 23456 23457 23458 23459; do getent passwd $u >/dev/null || { echo $u; break; }; done)
[ -n "$NOUSER" ] || fail "no free uid for the unknown-user case"
as_unknown_gid() { setpriv --reuid="$NOUSER" --regid="$GID" --clear-groups "$@"; }
as_unknown_sup() { setpriv --reuid="$NOUSER" --regid="$NOUSER" --groups="$GID" "$@"; }
as_unknown() { setpriv --reuid="$NOUSER" --regid="$NOUSER" --clear-groups "$@"; }
as_unknown_gid "$PY" "$VCALL" io.flashd.SetEnv '{"name":"bootdelay","value":"5"}' > "$T/u1.out" 2>&1 ||
	fail "uid $NOUSER (no passwd entry) with gid $GROUP: refused: $(cat "$T/u1.out")"
as_unknown_sup "$PY" "$VCALL" io.flashd.SetEnv '{"name":"bootdelay","value":"6"}' > "$T/u2.out" 2>&1 ||
	fail "uid $NOUSER (no passwd entry) with supplementary group $GROUP: refused: $(cat "$T/u2.out")"
[ "$(env_var bootdelay)" = 6 ] || fail "the unknown uid's SetEnv did not reach the env"
as_unknown "$PY" "$VCALL" io.flashd.SetEnv '{"name":"bootdelay","value":"1"}' > "$T/u3.out" 2>&1 &&
	fail "uid $NOUSER without the group was allowed"
expect_fields "$T/u3.out" "uid $NOUSER without the group" <<EOF
error org.varlink.service.PermissionDenied
EOF
# nobody running with the group as a supplementary group (not in /etc/group)
setpriv --reuid=$NOBODY --regid=$NOBODY --groups="$GID" "$PY" "$VCALL" io.flashd.MarkGood > "$T/n2.out" 2>&1 ||
	fail "nobody with supplementary group $GROUP: refused: $(cat "$T/n2.out")"
[ "$(env_var bootdelay)" = 6 ] || fail "a refused SetEnv changed bootdelay"
say PASS
