#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# One malformed slot variable written by hand (fw_setenv) does not break
# the daemon (issue 31 item 11): GetStatus answers and names the variable
# with what the boot script does with it, slot activate works where the
# state allows it, and the health check of a slot on trial still runs.
. "$(dirname "$0")/../lib/sim-board.sh"

HEALTH_COMMAND="echo \"\$(cat $T/cmdline)\" >> $T/health.log; exit 0"
setup_board
make_bundle v1 1.0 2
start_daemon
fctl -q install "$T/v1.bundle" > "$T/i.out" 2>&1 || fail "install v1: $(cat "$T/i.out")"
stop_daemon

# inject NAME=VALUE...: the env rewritten whole with these values, as
# fw_setenv would leave it (no check of flashd's: 'env init --force')
inject() {
	local names="" a
	for a in "$@"; do names="$names\\|${a%%=*}"; done
	{ env_dump | grep -v "^\(${names#\\|}\)="; printf '%s\n' "$@"; } > "$T/env.new"
	tr '\n' '\0' < "$T/env.new" | xargs -0 "$FLASHCTL" -q env init --force --layout "$LAYOUT" \
		--target "$TARGET" > /dev/null || fail "env init with $*"
}

# ---- a counter that is not one digit ----
inject BOOT_B_LEFT=10
start_daemon
vcall "$T/st" io.flashd.GetStatus || fail "GetStatus failed with BOOT_B_LEFT=10: $(cat "$T/st.last")"
expect_fields "$T/st.last" "status with BOOT_B_LEFT=10" <<EOF
parameters.env.malformed.0.name BOOT_B_LEFT
parameters.env.malformed.0.value 10
parameters.slots.1.tries_left 1
parameters.next_boot B
EOF
jget "$T/st.last" parameters.env.malformed.0.effect | grep -q "boots slot B once more" ||
	fail "the effect of BOOT_B_LEFT=10 is not said: $(jget "$T/st.last" parameters.env.malformed.0.effect)"
fctl status > "$T/st.txt" || fail "flashctl status failed"
grep -q "MALFORMED: *BOOT_B_LEFT='10'" "$T/st.txt" || fail "human status does not name BOOT_B_LEFT: $(cat "$T/st.txt")"
stop_daemon

# ---- a record that is not a record ----
inject FLASHD_B_STATE=Good
start_daemon
vcall "$T/st" io.flashd.GetStatus || fail "GetStatus failed with FLASHD_B_STATE=Good: $(cat "$T/st.last")"
expect_fields "$T/st.last" "status with FLASHD_B_STATE=Good" <<EOF
parameters.slots.1.state unknown
EOF
grep -q '"FLASHD_B_STATE"' "$T/st.last" || fail "status does not name FLASHD_B_STATE: $(cat "$T/st.last")"
# a malformed record is no proof: B is not activated; A, verified, is
fctl slot activate B > "$T/a.out" 2>&1 && fail "slot activate B accepted with FLASHD_B_STATE=Good"
grep -q "InternalError\|EBADMSG\|Bad message" "$T/a.out" && fail "slot activate B: internal error: $(cat "$T/a.out")"
fctl slot activate A > "$T/a.out" 2>&1 || fail "slot activate A failed: $(cat "$T/a.out")"
[ "$(env_var BOOT_ORDER)" = "A B" ] || fail "activate A: BOOT_ORDER $(env_var BOOT_ORDER)"
[ "$(env_var BOOT_B_LEFT)" = 1 ] || fail "activate A did not write BOOT_B_LEFT back as a digit: $(env_var BOOT_B_LEFT)"
stop_daemon

# ---- the health check of a slot on trial runs ----
inject FLASHD_B_STATE=verified "BOOT_ORDER=B A" BOOT_B_LEFT=3 BOOT_A_LEFT=10
reboot_board
[ "$BOOTED" = B ] || fail "boot-select chose $BOOTED, expected B"
wait_for 20 daemon_idle || fail "the daemon did not settle"
wait_for 20 test -s "$T/health.log" || fail "the health check did not run on B with BOOT_A_LEFT=10"
[ "$(cat "$T/health.log")" = "flashd.slot=B" ] || fail "health check ran on: $(cat "$T/health.log")"
wait_for 20 sh -c "[ \"\$(\"$FLASHCTL\" env get -n --layout \"$LAYOUT\" --target \"$TARGET\" FLASHD_B_STATE)\" = good ]" ||
	fail "B not marked good after its health check: $(env_var FLASHD_B_STATE)"
say PASS
