#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# Failing installs. Bundles refused before anything is written (bad magic,
# manifest changed after signing, unknown signer, another board) give
# io.flashd.InvalidBundle with a reason, flashctl exit 3, and leave the
# U-Boot env byte-for-byte as it was. A damaged payload is found while
# writing: io.flashd.InvalidBundle too, exit 3 (flashctl(1): a bundle
# refused for its hash or truncation), the target slot marked bad, the
# booted slot untouched. Each failure is in the install record.
. "$(dirname "$0")/../lib/sim-board.sh"

setup_board
make_bundle good 1.0 3
start_daemon

# variants of the good bundle
"$PY" - "$T" <<'EOF' || fail "cannot make the damaged bundles"
import sys
t = sys.argv[1]
good = open(f"{t}/good.bundle", "rb").read()
def put(name, data):
    open(f"{t}/{name}.bundle", "wb").write(data)
put("magic", b"X" + good[1:])
i = good.find(b'"1.0"')
assert i > 0, "no version string in the manifest"
put("manifest", good[:i] + b'"6.6"' + good[i + 5:])
# a byte in the middle of the image data (after the manifest)
mid = len(good) // 2
put("payload", good[:mid] + bytes([good[mid] ^ 0x01]) + good[mid + 1:])
put("truncated", good[: len(good) * 3 // 4])
EOF
"$FLASHCTL" -q bundle keygen --out "$T/rogue" > /dev/null || fail "keygen rogue"
"$FLASHCTL" -q bundle create --layout "$LAYOUT" --version 1.0 --image "rootfs=$T/good.sqfs" \
	--key "$T/rogue.key" -o "$T/rogue.bundle" > /dev/null || fail "bundle create rogue"
"$FLASHCTL" -q bundle create --layout "$top_srcdir/layouts/nor-router-16m.json" --version 1.0 \
	--image "rootfs=$T/good.sqfs" --key "$T/rel.key" -o "$T/otherboard.bundle" > /dev/null 2>&1 ||
	"$FLASHCTL" -q bundle create --layout "$top_srcdir/layouts/nand-256m.json" --version 1.0 \
	--image "rootfs=$T/good.sqfs" --key "$T/rel.key" -o "$T/otherboard.bundle" > /dev/null ||
	fail "bundle create for another board"

records=0
# refused NAME WORD: the bundle is refused before writing
refused() {
	env_dump > "$T/env-before"
	cp "$SIM" "$T/sim-before"
	fctl install "$T/$1.bundle" > "$T/$1.out" 2>&1
	rc=$?
	[ $rc = 3 ] || fail "$1: flashctl install exited $rc, expected 3: $(cat "$T/$1.out")"
	grep -q "InvalidBundle" "$T/$1.out" || fail "$1: no InvalidBundle in: $(cat "$T/$1.out")"
	grep -qi "$2" "$T/$1.out" || fail "$1: the reason does not mention '$2': $(cat "$T/$1.out")"
	vcall "$T/$1.v" io.flashd.Install '{"fd":0}' --fd "$T/$1.bundle" && fail "$1: Install via Varlink succeeded"
	expect_fields "$T/$1.v.last" "$1 (Varlink)" <<EOF
error io.flashd.InvalidBundle
parameters {KEYS} reason
EOF
	env_dump > "$T/env-after"
	cmp -s "$T/env-before" "$T/env-after" || fail "$1: the env changed: $(diff "$T/env-before" "$T/env-after")"
	# not a byte of flash written: the env copies and both slots as they were
	cmp -s "$SIM" "$T/sim-before" || fail "$1: the simulated flash changed"
	records=$((records + 2))
	fctl --json status > "$T/$1.st"
	expect_fields "$T/$1.st" "$1 record" <<EOF
last_install.result failed
operation null
EOF
	[ "$(jget "$T/$1.st" last_install.reason)" != null ] || fail "$1: the record has no reason"
	rm -f "$T/sim-before"
}

refused magic "magic\|not a flashd bundle\|format"
refused manifest "signature"
refused rogue "key\|signer\|trusted"
refused otherboard "bundle is for \"flashd,nor-router-16m\""

# ---- found while writing: InvalidBundle, exit 3, slot B marked bad, A untouched ----
failed() {
	fctl install "$T/$1.bundle" > "$T/$1.out" 2>&1
	rc=$?
	[ $rc = 3 ] || fail "$1: flashctl install exited $rc, expected 3: $(cat "$T/$1.out")"
	grep -q "InvalidBundle" "$T/$1.out" || fail "$1: no InvalidBundle in: $(cat "$T/$1.out")"
	records=$((records + 1))
	fctl --json status > "$T/$1.st"
	expect_fields "$T/$1.st" "$1" <<EOF
operation null
booted A
slots.0.state good
slots.0.tries_left 3
slots.0.priority 0
slots.1.tries_left 0
slots.1.priority null
slots.1.version null
next_boot A
last_install.result failed
last_install.slot B
EOF
	jget "$T/$1.st" last_install.reason > "$T/$1.reason"
	[ -s "$T/$1.reason" ] && [ "$(cat "$T/$1.reason")" != null ] || fail "$1: no reason in the record"
	[ "$(env_var BOOT_ORDER)" = A ] || fail "$1: BOOT_ORDER '$(env_var BOOT_ORDER)'"
	[ "$(env_var BOOT_A_LEFT)" = 3 ] || fail "$1: BOOT_A_LEFT '$(env_var BOOT_A_LEFT)'"
}
failed payload
grep -qi "sha256\|hash\|checksum\|digest" "$T/payload.reason" || fail "payload: reason '$(cat "$T/payload.reason")'"
failed truncated
grep -qi "ended\|truncat\|short\|end of" "$T/truncated.reason" || fail "truncated: reason '$(cat "$T/truncated.reason")'"

expect_fields "$T/state/installs.json" "install records" <<EOF
#. $records
EOF
# and the good bundle still installs
fctl -q install "$T/good.bundle" > "$T/good.out" 2>&1 || fail "good bundle: $(cat "$T/good.out")"
[ "$(env_var BOOT_ORDER)" = "B A" ] || fail "good bundle: BOOT_ORDER '$(env_var BOOT_ORDER)'"
expect_daemon_ok end
say PASS
