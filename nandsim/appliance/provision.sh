#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Factory step of the appliance runner, run in the harness VM (vm-run -l
# LAYOUT --flash CHIP): provision the blank board from a bundle with
# `flashctl provision` (erase, initial env, slot A, overlay, read back).
#   provision.sh LAYOUT BUNDLE
. "$top_srcdir/tests/lib/vm.sh"
[ $# = 2 ] || vm_fail "usage: provision.sh LAYOUT BUNDLE"
# a UBI board: flashctl provision attaches through the kernel's ubi driver,
# which nothing loads on its own (vm-load-board loads only the chip)
if jq -e '.ubi' "$1" >/dev/null; then vm_run modprobe ubi; fi
vm_run "$FLASHCTL" provision --layout "$1" --bundle "$2" --allow-unsigned system
vm_run "$FLASHCTL" env get BOOT_ORDER BOOT_A_LEFT BOOT_B_LEFT --layout "$1"
