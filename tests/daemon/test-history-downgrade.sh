#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# The install history (flashctl history, io.flashd.GetHistory) and the
# downgrade policy (flashd.conf downgrade=, install --allow-downgrade):
# - history through the daemon and offline from the state dir: the same
#   answer; readable by a user without rights;
# - downgrade=refuse (the default): an older bundle is refused with
#   io.flashd.DowngradeRefused (flashctl exit 5) naming both versions,
#   before anything is written: the target slot reads back as it was and
#   the env is unchanged; --allow-downgrade (root's alone: not for a
#   socket-group member, nor a user without rights) installs it; warn and allow install it; history and status say so;
# - a damaged installs.json stops neither the daemon nor installs: history
#   says it, the next install keeps it aside and starts a new history.
. "$(dirname "$0")/../lib/sim-board.sh"

setup_other_users
setup_board
make_bundle v1 1.0 2
make_bundle v2 2.0 2
chmod 755 "$T"                   # nobody must reach the socket and the bundles
chmod 644 "$T"/*.bundle
printf '[flashd]\nsocket-group=%s\n' "$GROUP" >> "$T/flashd.conf"
start_daemon

# history_json FILE WHAT: flashctl --json history into FILE (as root)
history_json() {
	fctl --json history > "$1" 2> "$1.err" || fail "$2: flashctl history: exit $?: $(cat "$1.err")"
}

# ---- nothing installed yet ----
history_json "$T/h0.json" "empty"
expect_fields "$T/h0.json" "empty history" <<EOF
. {KEYS} installs error
#installs 0
error null
EOF
fctl history > "$T/h0.txt" || fail "flashctl history (human): exit $?"
grep -q "^No installs recorded" "$T/h0.txt" || fail "empty history: $(cat "$T/h0.txt")"

# ---- 2.0 into B; boot it: the running slot is 2.0 ----
fctl install "$T/v2.bundle" > "$T/i1.out" 2>&1 || fail "install 2.0: $(cat "$T/i1.out")"
reboot_board
[ "$BOOTED" = B ] || fail "booted $BOOTED after installing 2.0 into B"
fctl -q slot mark-good || fail "mark-good B"

# ---- refuse (the default): nothing written, both versions named ----
refused_downgrade "$T/v1.bundle" 1.0 2.0 "$T/i2.out"
grep -q -- "--allow-downgrade" "$T/i2.out" || fail "the refusal does not say how to override: $(cat "$T/i2.out")"
history_json "$T/h1.json" "after the refusal"
expect_fields "$T/h1.json" "history after the refusal" <<EOF
#installs 3
installs.0 {KEYS} slot version bundle_sha256 result reason started finished bytes erases blocks_skipped signer source bytes_fetched duration error_name running_version running_version_from downgrade history_reset record_error
installs.0.result failed
installs.0.error_name io.flashd.DowngradeRefused
installs.0.version 1.0
installs.0.running_version 2.0
installs.0.running_version_from manifest
installs.0.downgrade refused
installs.0.source $T/v1.bundle
installs.0.bytes 0
installs.0.erases 0
installs.1.error_name io.flashd.DowngradeRefused
installs.1.source $T/v1.bundle
installs.2.result success
installs.2.version 2.0
installs.2.slot B
installs.2.downgrade null
installs.2.running_version null
installs.2.error_name null
installs.2.source $T/v2.bundle
error null
EOF

# ---- a user without rights reads the history, and cannot override ----
as_nobody "$FLASHCTL" --json history > "$T/hn.json" 2> "$T/hn.err" ||
	fail "nobody: flashctl history: exit $?: $(cat "$T/hn.err")"
cmp -s "$T/h1.json" "$T/hn.json" || fail "nobody's history differs from root's"
as_nobody "$FLASHCTL" install --allow-downgrade "$T/v1.bundle" > "$T/in.out" 2>&1
rc=$?
[ $rc = 4 ] || fail "nobody: install --allow-downgrade exited $rc, expected 4: $(cat "$T/in.out")"
as_nobody "$PY" "$VCALL" --fd "$T/v1.bundle" io.flashd.Install '{"fd":0,"allow_downgrade":true}' \
	> "$T/vn.out" 2>&1 && fail "nobody: Install with allow_downgrade was allowed"
expect_json "$T/vn.out" error org.varlink.service.PermissionDenied "nobody Install allow_downgrade"
slot_read A $((4 * EB)) "$T/a-after.img"
cmp -s "$T/a-before.img" "$T/a-after.img" || fail "nobody's --allow-downgrade wrote slot A"
# a socket-group member installs, but overriding the policy is root's
as_member "$FLASHCTL" install --allow-downgrade "$T/v1.bundle" > "$T/im.out" 2>&1
rc=$?
[ $rc = 4 ] || fail "member: install --allow-downgrade exited $rc, expected 4: $(cat "$T/im.out")"
grep -q "root's alone" "$T/im.out" || fail "member: the refusal does not say why: $(cat "$T/im.out")"
slot_read A $((4 * EB)) "$T/a-after.img"
cmp -s "$T/a-before.img" "$T/a-after.img" || fail "a member's --allow-downgrade wrote slot A"

# ---- root overrides ----
fctl install --allow-downgrade "$T/v1.bundle" > "$T/i3.out" 2>&1 ||
	fail "install --allow-downgrade: exit $?: $(cat "$T/i3.out")"
slot_is A "$T/v1.sqfs" "install --allow-downgrade"
[ "$(env_var FLASHD_A_VERSION)" = 1.0 ] || fail "FLASHD_A_VERSION after the override"
grep -q "downgrade: version 1.0 is older than version 2.0" "$T/flashd.log" ||
	fail "the overridden downgrade is not logged"
fctl --json status > "$T/st.json" || fail "status"
expect_fields "$T/st.json" "status after the override" <<EOF
last_install.version 1.0
last_install.downgrade overridden
last_install.running_version 2.0
EOF
fctl status | grep -q "DOWNGRADE from version 2.0 (overridden)" || fail "status does not show the downgrade"
history_json "$T/h2.json" "after the override"
expect_fields "$T/h2.json" "history after the override" <<EOF
installs.0.result success
installs.0.downgrade overridden
installs.0.error_name null
EOF
fctl history > "$T/h2.txt"
grep -q "^20[0-9-]*T[0-9:]*Z  1\.0 .* A  *installed .*$T/v1.bundle" "$T/h2.txt" ||
	fail "history table: no row for 1.0 into A: $(cat "$T/h2.txt")"
grep -q "DOWNGRADE from 2.0: overridden" "$T/h2.txt" || fail "history table: no downgrade line"
grep -q "io.flashd.DowngradeRefused: refusing to downgrade" "$T/h2.txt" ||
	fail "history table: the refusal's error is not shown: $(cat "$T/h2.txt")"

# ---- warn and allow install it, saying so ----
for policy in warn allow; do
	stop_daemon
	printf '[flashd]\ndowngrade=%s\n' "$policy" >> "$T/flashd.conf"
	start_daemon
	fctl install "$T/v1.bundle" > "$T/i-$policy.out" 2>&1 ||
		fail "downgrade=$policy: install 1.0: $(cat "$T/i-$policy.out")"
	history_json "$T/h-$policy.json" "downgrade=$policy"
	expect_fields "$T/h-$policy.json" "downgrade=$policy" <<EOF
installs.0.result success
installs.0.downgrade ${policy}ed
installs.0.running_version 2.0
EOF
	grep -q "downgrade=$policy" "$T/flashd.log" || fail "downgrade=$policy is not logged"
done
# a bad policy is a configuration error naming the key
stop_daemon
cp "$T/flashd.conf" "$T/flashd.conf.good"
printf '[flashd]\ndowngrade=never\n' >> "$T/flashd.conf"
"$FLASHD" -c "$T/flashd.conf" > "$T/bad-conf.out" 2>&1 && fail "flashd started with downgrade=never"
grep -q "downgrade.*'never' is not a downgrade policy" "$T/bad-conf.out" ||
	fail "downgrade=never: $(cat "$T/bad-conf.out")"
cp "$T/flashd.conf.good" "$T/flashd.conf"

# ---- offline: the same answer from the state dir ----
start_daemon
history_json "$T/hd.json" "through the daemon"
stop_daemon
fctl --json history --config "$T/flashd.conf" > "$T/ho.json" 2> "$T/ho.err" ||
	fail "offline history: exit $?: $(cat "$T/ho.err")"
cmp -s "$T/hd.json" "$T/ho.json" ||
	fail "offline history differs from the daemon's: $(diff "$T/hd.json" "$T/ho.json")"
as_nobody "$FLASHCTL" --json history --offline --config "$T/flashd.conf" > "$T/hon.json" 2>&1 ||
	fail "nobody: offline history: $(cat "$T/hon.json")"
cmp -s "$T/hd.json" "$T/hon.json" || fail "nobody's offline history differs"

# ---- a damaged installs.json: said, set aside, a new history ----
head -c 300 "$T/state/installs.json" > "$T/torn.json"
cp "$T/torn.json" "$T/state/installs.json"
start_daemon
history_json "$T/hx.json" "damaged file"
expect_fields "$T/hx.json" "damaged history" <<EOF
#installs 0
EOF
jget "$T/hx.json" error | grep -q "installs.json is damaged" ||
	fail "history does not say the file is damaged: $(cat "$T/hx.json")"
fctl history | grep -q "^HISTORY UNREADABLE: .*damaged" || fail "human history does not say it is damaged"
fctl install "$T/v2.bundle" > "$T/i5.out" 2>&1 || fail "install with a damaged history: $(cat "$T/i5.out")"
history_json "$T/hy.json" "new history"
expect_fields "$T/hy.json" "new history" <<EOF
#installs 1
installs.0.result success
installs.0.version 2.0
installs.0.downgrade null
error null
EOF
aside=$(ls "$T/state/"installs.json.damaged-* 2>/dev/null)
[ -n "$aside" ] || fail "the damaged history was not kept aside: $(ls "$T/state")"
cmp -s "$aside" "$T/torn.json" || fail "the file kept aside is not the damaged one"
jget "$T/hy.json" installs.0.history_reset | grep -qF "$aside" ||
	fail "the new history does not name the file kept aside: $(cat "$T/hy.json")"

expect_daemon_ok "end"
stop_daemon
[ "$DAEMON_RC" = 0 ] || fail "flashd exited with $DAEMON_RC"
say "PASS"
