#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# The bootloader contract against a real U-Boot (Debian's qemu_arm64 build
# in qemu-system-aarch64): flashctl writes the env image through
# libubootenv, U-Boot imports it, 'source's our mkimage'd boot script from
# NOR flash and must pick the slot the contract says. The script's final
# boot step (flashd_boot_cmd) is overridden to print what it would boot.
#
# Limit: saveenv into qemu's pflash fails ("Flash buffer write timeout"),
# so the decremented counter is asserted from the script's own view (the
# value it would have saved), not read back from flash.
# Exit 77 (skip) only when the packages cannot be installed.
. "$(dirname "$0")/../lib/common.sh"
. "$TEST_LIB/uboot.sh"
uboot_available || skip "u-boot-qemu/qemu-system-arm/u-boot-tools unavailable"
skip_in_san_pass "its time is U-Boot's (qemu-system-aarch64 boots); flashd's part (flashctl env init/get, slot boot-select, slot bootscript) runs under the sanitizers in tests/cli/test-bootscripts.sh, tests/daemon/test-ab-policy.sh and the env fuzzer"
[ -x "$FLASHCTL" ] || fail "$FLASHCTL not built"

work=$(mktemp -d /tmp/flashd-test-uboot-XXXXXX)
trap 'rm -rf "$work"' EXIT

# flash0: U-Boot at 0, the boot script image at 48 MiB (memory-mapped NOR)
mkscript() {
	uboot_script "$1" "$work/boot.scr" || fail "mkimage rejected $1"
}

# flash1 holds the env: CONFIG_ENV_ADDR 0x4000000 = its start, 0x40000, one copy
uboot_env_config "$work/env.bin" "$work/fw_env.config"
cat > "$work/defaults" <<'EOF'
bootdelay=0
bootcmd=source 0x3000000
flashd_boot_cmd=echo "FLASHD-BOOT slot=${flashd_slot} left=${BOOT_A_LEFT},${BOOT_B_LEFT} args=${bootargs}"; poweroff
EOF

# run_case NAME "VAR=VALUE..." EXPECT-REGEX [MUST-NOT-REGEX]
run_case() {
	name=$1 vars=$2 expect=$3 forbid=${4:-}
	rm -f "$work/env.bin"
	truncate -s $((UBOOT_ENV_SIZE)) "$work/env.bin"
	# vars: NAME=VALUE separated by ';' (values may hold spaces)
	oldifs=$IFS; IFS=';'
	# shellcheck disable=SC2086
	set -- $vars
	IFS=$oldifs
	if ! "$FLASHCTL" -q env init --env-config "$work/fw_env.config" \
		--defaults "$work/defaults" "$@"; then
		check_fail "[$name]: flashctl env init"; return
	fi
	uboot_run "$work/boot.scr" "$work/env.bin" >"$work/serial.txt"
	if ! grep -q "Loading Environment from Flash... OK" "$work/serial.txt"; then
		check_fail "[$name]: U-Boot did not accept the env flashctl wrote"
	elif ! grep -Eq "$expect" "$work/serial.txt"; then
		check_fail "[$name]: serial output lacks /$expect/"
	elif [ -n "$forbid" ] && grep -Eq "$forbid" "$work/serial.txt"; then
		check_fail "[$name]: serial output has /$forbid/"
	else
		echo "ok   [$name]: $(grep -E "$expect" "$work/serial.txt" | head -1)"
		return
	fi
	sed 's/^/    | /' "$work/serial.txt" | tail -30
}

n=0
for scr in "$top_srcdir"/layouts/*.bootscr; do
	[ -s "$scr" ] || continue
	n=$((n + 1))
	json=${scr%.bootscr}.json
	echo "== $(basename "$scr")"
	# the checked-in script must be what flashd generates for the layout
	if [ -f "$json" ] && "$FLASHCTL" slot bootscript --layout "$json" > "$work/gen.txt" 2>/dev/null
	then
		if ! cmp -s "$work/gen.txt" "$scr"; then
			check_fail "$scr differs from 'flashctl slot bootscript --layout $json'"
			diff -u "$scr" "$work/gen.txt" | head -20
		fi
	else
		echo "note: cannot regenerate $scr from $json (layout support missing?)"
	fi
	mkscript "$scr"
	run_case "A first, tries left" "BOOT_ORDER=A B;BOOT_A_LEFT=3;BOOT_B_LEFT=3" \
		"FLASHD-BOOT slot=A left=2,3 args=.* flashd\.slot=A$"
	run_case "A out of tries falls back to B" "BOOT_ORDER=A B;BOOT_A_LEFT=0;BOOT_B_LEFT=3" \
		"FLASHD-BOOT slot=B left=0,2 args=.* flashd\.slot=B$"
	run_case "B primary on its last try" "BOOT_ORDER=B A;BOOT_A_LEFT=3;BOOT_B_LEFT=1" \
		"FLASHD-BOOT slot=B left=3,0 "
	run_case "B marked bad is skipped" "BOOT_ORDER=A;BOOT_A_LEFT=1;BOOT_B_LEFT=3" \
		"FLASHD-BOOT slot=A left=0,3 "
	run_case "unset state boots A by default" "" \
		"FLASHD-BOOT slot=A left=2,3 "
	run_case "none left: counters reset, reset" "BOOT_ORDER=A B;BOOT_A_LEFT=0;BOOT_B_LEFT=0" \
		"flashd: no slot with tries left: resetting the counters of BOOT_ORDER" "FLASHD-BOOT"
	grep -q "resetting \.\.\." "$work/serial.txt" ||
		check_fail "[none left]: U-Boot did not reset"
	# an interrupted install left A out of the order: only B gets tries back
	run_case "none left, A marked bad: only BOOT_ORDER's slots reset" \
		"BOOT_ORDER=B;BOOT_A_LEFT=0;BOOT_B_LEFT=0" \
		"resetting the counters of BOOT_ORDER \\(B\\)" "FLASHD-BOOT"
	# issue 13 policy (slot_boot_select mirrors each, tests/unit/test-slot.c):
	# an empty BOOT_ORDER is an unset one, every slot (flashd never writes it)
	run_case "empty BOOT_ORDER boots every slot, A first" "BOOT_ORDER=;BOOT_A_LEFT=3;BOOT_B_LEFT=3" \
		"FLASHD-BOOT slot=A left=2,3 "
	# names the script does not know are skipped, the order is kept
	run_case "unknown names skipped" "BOOT_ORDER=C B;BOOT_A_LEFT=3;BOOT_B_LEFT=3" \
		"FLASHD-BOOT slot=B left=3,2 "
	# after a fallback flashd took the exhausted B out: A, never B
	run_case "fallback recorded: A only" \
		"BOOT_ORDER=A;BOOT_A_LEFT=2;BOOT_B_LEFT=0;FLASHD_B_STATE=bad" \
		"FLASHD-BOOT slot=A left=1,0 "
	# degraded: the last slot stays in the order, recorded bad, and boots
	run_case "degraded board keeps booting its last slot" \
		"BOOT_ORDER=A;BOOT_A_LEFT=1;BOOT_B_LEFT=0;FLASHD_A_STATE=bad" \
		"FLASHD-BOOT slot=A left=0,0 "
	# issue 31 item 8: saveenv fails here (qemu's pflash), as with a dead
	# env copy: a slot on trial is not booted without a counted try (it
	# could be tried forever); the first slot recorded good is
	run_case "saveenv failed: the slot on trial is not booted, the good one is" \
		"BOOT_ORDER=A B;BOOT_A_LEFT=3;BOOT_B_LEFT=3;FLASHD_A_STATE=verified;FLASHD_B_STATE=good" \
		"FLASHD-BOOT slot=B .* flashd\.slot=B$" "FLASHD-BOOT slot=A"
	grep -q "flashd: saveenv failed: this try of slot A is not counted" "$work/serial.txt" ||
		check_fail "[saveenv failed]: the script does not say the try was not counted"
	run_case "saveenv failed: a slot recorded good boots" \
		"BOOT_ORDER=A B;BOOT_A_LEFT=2;BOOT_B_LEFT=3;FLASHD_A_STATE=good;FLASHD_B_STATE=good" \
		"FLASHD-BOOT slot=A .* flashd\.slot=A$"
	run_case "saveenv failed, nothing recorded good: the chosen slot boots" \
		"BOOT_ORDER=A B;BOOT_A_LEFT=3;BOOT_B_LEFT=3;FLASHD_A_STATE=verified;FLASHD_B_STATE=bad" \
		"FLASHD-BOOT slot=A .* flashd\.slot=A$"
	# a harness that writes the counters back itself (nandsim/appliance)
	run_case "saveenv emulated: the slot on trial boots" \
		"BOOT_ORDER=A B;BOOT_A_LEFT=3;BOOT_B_LEFT=3;FLASHD_A_STATE=verified;FLASHD_B_STATE=good;flashd_saveenv_emulated=1" \
		"FLASHD-BOOT slot=A .* flashd\.slot=A$"
done
[ "$n" -gt 0 ] || fail "no layouts/*.bootscr"
check_done
