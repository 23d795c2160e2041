#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# Who may write which env variable (issue 31 items 4 and 10). flashd's
# records (FLASHD_*) and the boot selection (BOOT_ORDER, BOOT_x_LEFT) are
# written by flashd's own operations only: a raw write over the socket,
# even forced, is refused for a socket-group member (PermissionDenied
# naming the variable) and allowed to root only while BOOT_ORDER keeps to
# verified slots; offline it needs root and --force, said loudly. A new
# install into a slot clears the previous image's health verdict.
. "$(dirname "$0")/../lib/sim-board.sh"

setup_other_users

setup_board
make_bundle v1 1.0 2
make_bundle v2 2.0 2
chmod 755 "$T"
chmod 644 "$T/v1.bundle" "$T/v2.bundle"
printf '[flashd]\nsocket-group=%s\n' "$GROUP" >> "$T/flashd.conf"
# a cut install: B recorded failed, out of BOOT_ORDER (root, offline, forced)
fctl -q env set --force --layout "$LAYOUT" --target "$TARGET" FLASHD_B_STATE=failed \
	BOOT_ORDER=A BOOT_B_LEFT=0 2> "$T/cut.err" || fail "root offline forced write: $(cat "$T/cut.err")"
grep -q WARNING "$T/cut.err" || fail "root's offline forced write of flashd's variables is not warned about"
start_daemon
env_dump > "$T/env-before"

# ---- a socket-group member: no raw write of flashd's variables, forced or not ----
for nv in BOOT_ORDER=B BOOT_B_LEFT=3 FLASHD_B_STATE=verified FLASHD_B_HEALTH=passed FLASHD_LAST_GOOD=B; do
	name=${nv%%=*}
	value=${nv#*=}
	as_member "$PY" "$VCALL" io.flashd.SetEnv "{\"name\":\"$name\",\"value\":\"$value\",\"force\":true}" \
		> "$T/m.out" 2>&1 && fail "member: forced SetEnv $nv was allowed"
	expect_fields "$T/m.out" "member forced SetEnv $nv" <<EOF
error io.flashd.PermissionDenied
EOF
	grep -q "$name" "$T/m.out" || fail "member SetEnv $nv: the refusal does not name $name: $(cat "$T/m.out")"
	grep -q "root" "$T/m.out" || fail "member SetEnv $nv: the refusal does not say why: $(cat "$T/m.out")"
done
as_member "$FLASHCTL" env set --force BOOT_ORDER=B > "$T/mc.out" 2>&1
rc=$?
[ $rc = 4 ] || fail "member: flashctl env set --force BOOT_ORDER=B exited $rc, expected 4: $(cat "$T/mc.out")"
as_member "$FLASHCTL" slot activate B > "$T/ma.out" 2>&1 && fail "member activated the failed slot B"
env_dump > "$T/env-after"
cmp -s "$T/env-before" "$T/env-after" || fail "refused writes changed the env: $(diff "$T/env-before" "$T/env-after")"
# other variables stay the member's to write
as_member "$PY" "$VCALL" io.flashd.SetEnv '{"name":"bootdelay","value":"4"}' > "$T/m.out" 2>&1 ||
	fail "member: SetEnv bootdelay refused: $(cat "$T/m.out")"

# ---- root: forced, but BOOT_ORDER never names a slot not recorded verified ----
for order in B "B A" "A B"; do
	vcall "$T/r" io.flashd.SetEnv "{\"name\":\"BOOT_ORDER\",\"value\":\"$order\",\"force\":true}" &&
		fail "root: forced BOOT_ORDER='$order' with B recorded failed was stored"
	expect_error "$T/r.last" io.flashd.EnvRefused
	grep -q "slot B" "$T/r.last" || fail "root BOOT_ORDER='$order': the refusal does not name B: $(cat "$T/r.last")"
done
vcall "$T/r" io.flashd.SetEnv '{"name":"FLASHD_A_STATE","value":"failed","force":true}' &&
	fail "root: forced FLASHD_A_STATE=failed with A in BOOT_ORDER was stored"
[ "$(env_var BOOT_ORDER)" = A ] || fail "BOOT_ORDER changed: $(env_var BOOT_ORDER)"
vcall "$T/r" io.flashd.SetEnv '{"name":"BOOT_A_LEFT","value":"2","force":true}' ||
	fail "root: forced BOOT_A_LEFT=2 refused: $(cat "$T/r.last")"
grep -q "env set BOOT_A_LEFT by uid 0 (forced)" "$T/flashd.log" || fail "root's forced write not logged"

# ---- offline: flashd's variables need root and --force ----
stop_daemon
fctl env set --layout "$LAYOUT" --target "$TARGET" FLASHD_B_HEALTH=passed > "$T/o.out" 2>&1
rc=$?
[ $rc = 5 ] || fail "offline env set FLASHD_B_HEALTH without --force exited $rc, expected 5: $(cat "$T/o.out")"
fctl env set --force --layout "$LAYOUT" --target "$TARGET" BOOT_ORDER="A B" > "$T/o.out" 2>&1 &&
	fail "offline forced BOOT_ORDER='A B' with B recorded failed was stored"
grep -q "slot B" "$T/o.out" || fail "offline BOOT_ORDER refusal does not name B: $(cat "$T/o.out")"
[ "$(env_var BOOT_ORDER)" = A ] || fail "offline refusal changed BOOT_ORDER: $(env_var BOOT_ORDER)"
start_daemon

# ---- item 10: a new install clears the old image's health verdict ----
fctl -q install "$T/v1.bundle" > "$T/i1.out" 2>&1 || fail "install v1: $(cat "$T/i1.out")"
stop_daemon
fctl -q env set --force --layout "$LAYOUT" --target "$TARGET" \
	"FLASHD_B_HEALTH=failed 2026-01-01T00:00:00Z: health check exited with status 1" 2>/dev/null ||
	fail "offline root --force FLASHD_B_HEALTH"
start_daemon
fctl --json status > "$T/s1.json" || fail "status"
jget "$T/s1.json" slots.1.health | grep -q "^failed" || fail "B's health verdict not shown before the new install"
fctl -q install "$T/v2.bundle" > "$T/i2.out" 2>&1 || fail "install v2: $(cat "$T/i2.out")"
fctl --json status > "$T/s2.json" || fail "status"
expect_fields "$T/s2.json" "after installing v2 into B" <<EOF
slots.1.version 2.0
slots.1.state pending
slots.1.health null
EOF
[ -z "$(env_var FLASHD_B_HEALTH)" ] || fail "FLASHD_B_HEALTH of the old image kept: $(env_var FLASHD_B_HEALTH)"
fctl status > "$T/s2.txt"
grep -qi "health check failed" "$T/s2.txt" && fail "status shows the old image's verdict: $(cat "$T/s2.txt")"
say PASS
