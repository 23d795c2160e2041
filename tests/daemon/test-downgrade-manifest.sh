#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# The downgrade check trusts only what was read (docs/security.md,
# "Downgrades"): the running slot's version is the one of the signed
# manifest an install kept beside the slot's block records, verified again
# against the keyring and matched with the slot's block record, not the
# env's FLASHD_<x>_VERSION:
# - a lower version written into the env (root, raw) does not make an
#   older bundle installable: refused (DowngradeRefused naming 2.0, the
#   kept manifest's), nothing written, the env unchanged; history says the
#   version came from the manifest;
# - a kept manifest with one byte flipped is never taken as the version
#   (nor the env's in its place): the install is refused (downgrade=refuse)
#   saying the kept manifest does not verify; --allow-downgrade installs
#   all the same, and history, status and the log say so; one that names
#   another image than the slot's block record is refused likewise;
# - the kept manifest goes before the slot is written: an install into A
#   that fails after its first write leaves none for A;
# - no kept manifest (an install by an older flashd): the env's version,
#   as before, and history says so.
. "$(dirname "$0")/../lib/sim-board.sh"

setup_board
make_bundle v1 1.0 2
make_bundle v2 2.0 2
start_daemon

# ---- 2.0 into B; boot it: the running slot is 2.0 ----
fctl install "$T/v2.bundle" > "$T/i1.out" 2>&1 || fail "install 2.0: $(cat "$T/i1.out")"
reboot_board
[ "$BOOTED" = B ] || fail "booted $BOOTED after installing 2.0 into B"
fctl -q slot mark-good || fail "mark-good B"

# ---- root lowers the env's version of B behind flashd's back ----
stop_daemon
fctl -q env set --force --layout "$LAYOUT" --target "$TARGET" FLASHD_B_VERSION=0.5 ||
	fail "env set FLASHD_B_VERSION"
[ "$(env_var FLASHD_B_VERSION)" = 0.5 ] || fail "FLASHD_B_VERSION was not set"
start_daemon

# refused all the same: the kept signed manifest says 2.0
refused_downgrade "$T/v1.bundle" 1.0 2.0 "$T/i2.out"
fctl --json history > "$T/h1.json" || fail "history"
expect_fields "$T/h1.json" "history after the refusal" <<EOF
installs.0.downgrade refused
installs.0.running_version 2.0
installs.0.running_version_from manifest
installs.0.bytes 0
installs.2.running_version_from null
EOF

# ---- a tampered kept manifest is never taken as the version ----
kept=$(ls "$T/state/"manifest-*-B.bin 2>/dev/null)
[ -n "$kept" ] || fail "no kept manifest for slot B in the state dir: $(ls "$T/state")"
cp "$kept" "$T/kept.good"
"$PY" - "$kept" <<'PYEOF'
import sys
b = bytearray(open(sys.argv[1], 'rb').read())
i = b.index(b'"version"') + 12   # inside the signed manifest's version string
b[i] ^= 0x01
open(sys.argv[1], 'wb').write(b)
PYEOF
cmp -s "$kept" "$T/kept.good" && fail "the kept manifest was not changed"
fctl install "$T/v1.bundle" > "$T/i3.out" 2>&1
rc=$?
[ $rc = 5 ] || fail "1.0 over a tampered kept manifest: exit $rc, expected 5 (refused): $(cat "$T/i3.out")"
grep -q "kept manifest.*does not verify\|kept manifest.*not signed" "$T/i3.out" ||
	fail "the refusal does not say the kept manifest failed: $(cat "$T/i3.out")"
grep -q -- "--allow-downgrade" "$T/i3.out" || fail "the refusal does not say how to override: $(cat "$T/i3.out")"
slot_read A $((4 * EB)) "$T/a-after.img"
cmp -s "$T/a-before.img" "$T/a-after.img" || fail "a tampered kept manifest let 1.0 write slot A"
env_dump > "$T/env-after"
cmp -s "$T/env-before" "$T/env-after" || fail "the refusal changed the env"
fctl --json history > "$T/h2.json" || fail "history"
expect_fields "$T/h2.json" "history after the tampered manifest" <<EOF
installs.0.downgrade refused
installs.0.running_version null
installs.0.running_version_from unverified
EOF
# the env's 0.5 was not taken either: it was not compared with at all
grep -q "0\.5" "$T/i3.out" && fail "the env's version was used: $(cat "$T/i3.out")"

# --allow-downgrade installs all the same: overridden, the version unknown
fctl install --allow-downgrade "$T/v1.bundle" > "$T/i4.out" 2>&1 ||
	fail "--allow-downgrade over a tampered kept manifest: $(cat "$T/i4.out")"
slot_is A "$T/v1.sqfs" "install --allow-downgrade"
fctl --json history > "$T/h3.json" || fail "history"
expect_fields "$T/h3.json" "history of the override" <<EOF
installs.0.result success
installs.0.downgrade overridden
installs.0.running_version null
installs.0.running_version_from unverified
EOF
fctl history | grep -q "DOWNGRADE from an unverified version: overridden" ||
	fail "history table: no line for the unverified downgrade: $(fctl history)"
fctl status | grep -q "DOWNGRADE from version unverified (overridden)" ||
	fail "status does not show the unverified downgrade: $(fctl status)"
grep -q "installed over a running slot whose version cannot be trusted" "$T/flashd.log" ||
	fail "the install over an unverified version is not logged"
ka=$(ls "$T/state/"manifest-*-A.bin 2>/dev/null)
[ -n "$ka" ] || fail "no kept manifest for A after its install"
grep -q '"1\.0"' "$ka" || fail "A's kept manifest is not 1.0's"

# ---- a kept manifest that does not match the slot's block record ----
# (A's record, of 1.0's image, in B's place): not B's content, not trusted
cp "$T/kept.good" "$kept"
rec=$(ls "$T/state/"blocks-*-B-rootfs.bin) || fail "no block record of B"
cp "$rec" "$T/rec.good"
cp "$(ls "$T/state/"blocks-*-A-rootfs.bin)" "$rec" || fail "no block record of A"
fctl install "$T/v1.bundle" > "$T/i5.out" 2>&1
rc=$?
[ $rc = 5 ] || fail "1.0 over a kept manifest of another record: exit $rc, expected 5: $(cat "$T/i5.out")"
grep -q "kept manifest.*block record" "$T/i5.out" ||
	fail "the refusal does not name the block record: $(cat "$T/i5.out")"
cp "$T/rec.good" "$rec"

# ---- the target's kept manifest goes before its first write ----
# 2.0 with a damaged payload fails after slot A was marked bad and written:
# A keeps no manifest (1.0's would not describe what A holds now)
"$PY" - "$T/v2.bundle" "$T/bad2.bundle" <<'PYEOF'
import sys
b = bytearray(open(sys.argv[1], 'rb').read())
b[len(b) // 2] ^= 0x01
open(sys.argv[2], 'wb').write(b)
PYEOF
# (streamed: an install from a file takes the blocks B holds from B)
cat "$T/bad2.bundle" | fctl install - > "$T/i6.out" 2>&1 && fail "a damaged 2.0 installed"
ls "$T/state/"manifest-*-A.bin > /dev/null 2>&1 &&
	fail "slot A keeps a manifest after a failed install into it: $(ls "$T/state")"
# 2.0 into A keeps 2.0's, and B's stays
fctl install "$T/v2.bundle" > "$T/i7.out" 2>&1 || fail "install 2.0 into A: $(cat "$T/i7.out")"
grep -q '"2\.0"' "$(ls "$T/state/"manifest-*-A.bin)" || fail "A's kept manifest is not 2.0's"
[ -f "$kept" ] || fail "an install into A dropped B's kept manifest"

# ---- no kept manifest: the env's version, as an older flashd left it ----
# (the env says 0.5: 1.0 is no downgrade of it)
rm -f "$kept"
fctl install "$T/v1.bundle" > "$T/i8.out" 2>&1 || fail "install: $(cat "$T/i8.out")"
fctl --json history > "$T/h4.json" || fail "history"
expect_fields "$T/h4.json" "history without a kept manifest" <<EOF
installs.0.result success
installs.0.downgrade null
installs.0.running_version 0.5
installs.0.running_version_from env
EOF

expect_daemon_ok "end"
stop_daemon
[ "$DAEMON_RC" = 0 ] || fail "flashd exited with $DAEMON_RC"
say "PASS"
