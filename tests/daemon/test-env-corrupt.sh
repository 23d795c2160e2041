#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# Both U-Boot env copies corrupt (issue 13, item 6): GetStatus still
# answers, says the env is unreadable and which copy failed how, calls the
# slot states unknown and says what U-Boot does then (its built-in default
# env); flashctl status prints it; the documented recovery (flashctl env
# init, flashctl slot init) brings a readable env back.
. "$(dirname "$0")/../lib/sim-board.sh"

need dd
setup_board
start_daemon

# u-boot-env at 0x100000, u-boot-env-redund at 0x120000 (nandsim-128m.json),
# behind the simulator file's 4 KiB header: garbage in one, zeros in the other
DATA=4096
printf 'garbage that is no env' | dd of="$SIM" bs=1 seek=$((DATA + 0x100000 + 100)) conv=notrunc status=none
dd if=/dev/zero of="$SIM" bs=4096 seek=$(((DATA + 0x120000) / 4096)) count=1 conv=notrunc status=none

vcall "$T/st" --timeout 10 io.flashd.GetStatus || fail "GetStatus with both env copies corrupt: $(cat "$T/st" "$T/st.err")"
expect_fields "$T/st.last" "GetStatus, env corrupt" <<EOT
parameters.env.readable false
parameters.env.copies.0.state bad-crc
parameters.env.copies.1.state bad-crc
parameters.slots.0.state unknown
parameters.slots.1.state unknown
parameters.next_boot A
EOT
jget "$T/st.last" parameters.env.next_boot | grep -q "built-in default env" ||
	fail "next_boot does not say what U-Boot does: $(jget "$T/st.last" parameters.env.next_boot)"
fctl status > "$T/status.txt" 2>&1 || fail "flashctl status: rc $? $(cat "$T/status.txt")"
grep -q "U-Boot env:   UNREADABLE" "$T/status.txt" || fail "flashctl status does not say the env is unreadable: $(cat "$T/status.txt")"
grep -q "copy 1 bad-crc copy 2 bad-crc" "$T/status.txt" || fail "flashctl status does not name the copies: $(cat "$T/status.txt")"
fctl --json status > "$T/status.json" 2>&1 || fail "flashctl --json status: rc $?"
expect_fields "$T/status.json" "flashctl --json status" <<EOT
env.readable false
EOT

# recovery: a fresh env with the layout's defaults, then the slot records
fctl -q env init --layout "$LAYOUT" --target "$TARGET" > "$T/init.out" 2>&1 || fail "env init on a corrupt env: $(cat "$T/init.out")"
fctl -q slot init --layout "$LAYOUT" --target "$TARGET" --cmdline "$T/cmdline" > "$T/slot.out" 2>&1 || fail "slot init: $(cat "$T/slot.out")"
vcall "$T/st2" --timeout 10 io.flashd.GetStatus || fail "GetStatus after recovery"
expect_fields "$T/st2.last" "GetStatus after recovery" <<EOT
parameters.env.readable true
parameters.env.copies.0.state valid
EOT
[ "$(jget "$T/st2.last" parameters.slots.0.state)" != unknown ] || fail "slot A still unknown after recovery"
[ "$(env_var BOOT_ORDER)" != "" ] || fail "no BOOT_ORDER after slot init"
say PASS
