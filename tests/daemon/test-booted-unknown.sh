#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# An unknown booted slot fails closed (issue 31 item 7): a kernel command
# line whose root= (or ubi.block=) names no slot the layout knows (a
# technician booting by hand: root=31:4, root=PARTUUID=..., a ubiblock of
# another number) leaves the running slot unknown; then status says so
# loudly and no slot is written, since any could be the running root.
# (On the simulated board the command line file is the kernel's; on a
# real board the mounted root decides: tests/unit/test-slot, tests/vm.)
. "$(dirname "$0")/../lib/sim-board.sh"

setup_board
make_bundle v1 1.0 2
start_daemon
before=$(env_dump)

for cl in "console=ttyS0 root=31:4 rootfstype=squashfs" "root=PARTUUID=1234abcd-02" \
	"ubi.mtd=4 ubi.block=0,1" "root=/dev/ubiblock0_1"; do
	echo "$cl" > "$T/cmdline"
	fctl --json status > "$T/st.json" || fail "[$cl] status failed"
	expect_json "$T/st.json" booted null "[$cl]"
	jget "$T/st.json" booted_unknown | grep -q "names no slot" ||
		check_fail "[$cl] status --json does not say why the booted slot is unknown: $(cat "$T/st.json")"
	fctl status > "$T/st.txt"
	grep -q "BOOTED SLOT UNKNOWN" "$T/st.txt" ||
		check_fail "[$cl] flashctl status does not say loudly that the booted slot is unknown"
	for s in A B; do
		if fctl install --slot $s "$T/v1.bundle" > "$T/i.out" 2>&1; then
			check_fail "[$cl] install --slot $s wrote a slot that could be the running root"
		else
			grep -q "could be the running root" "$T/i.out" ||
				check_fail "[$cl] install --slot $s refused without saying why: $(cat "$T/i.out")"
		fi
	done
	fctl install "$T/v1.bundle" > "$T/i.out" 2>&1 &&
		check_fail "[$cl] install without --slot guessed a target"
	[ "$(env_dump)" = "$before" ] || check_fail "[$cl] the env changed: $(env_dump)"
done
check_done

# known again: the other slot is written as before
echo "flashd.slot=A" > "$T/cmdline"
fctl -q install --slot B "$T/v1.bundle" > "$T/i.out" 2>&1 || fail "install into B: $(cat "$T/i.out")"
fctl --json status > "$T/st.json"
expect_json "$T/st.json" booted A "booted from flashd.slot=A"
expect_json "$T/st.json" booted_unknown null "booted from flashd.slot=A"
say PASS
