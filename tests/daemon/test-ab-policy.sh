#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# The A/B policy of docs/boot-contract.md, on the issue-13 reproductions
# (layouts/nandsim-128m.json, sim: target, the daemon as in tools/demo.sh):
#   item 1  the booted slot is never an install target
#   item 5  boot-select on an empty BOOT_ORDER boots A and saves the default
#   item 3  a slot whose install failed is never activated; status says so
#   item 4  install --no-activate: "installed" with its version, activatable
#   item 13 no install into the last slot of BOOT_ORDER while the booted
#           slot is out of it
#   item 17 no health check for a slot marked bad, not even after a restart
#   item 2  after a fallback the exhausted slot leaves BOOT_ORDER; a failing
#           check on the fallback slot keeps it (degraded), never locks onto
#           the failed one
#   item 9  no reboot(2) for a sim: board
#   item 19 offline rollback = the socket's (from the primary), no silent no-op
#   item 20 env set --force refuses slot values the boot script reads otherwise
#   item 15 a freshly provisioned A failing its first check stays in BOOT_ORDER
#   item 22 status: pending / failed / bad / degraded, next = boot-select
. "$(dirname "$0")/../lib/sim-board.sh"

HEALTH_COMMAND="echo \"\$(cat $T/cmdline)\" >> $T/health.log; while [ -e $T/health-hold ]; do sleep 0.05; done; exit \$(cat $T/health-rc)"
setup_board
echo 0 > "$T/health-rc"
make_bundle v1 1.0 2
make_bundle v2 2.0 2
# the same bundle with a payload byte flipped: its hash check fails mid-stream
size=$(stat -c %s "$T/v2.bundle")
cp "$T/v2.bundle" "$T/bad.bundle"
# invert one payload byte (writing a fixed value left the bundle intact
# when the byte already had it: 1 run in 256 failed)
byte=$(od -An -tu1 -j $((size - 100000)) -N1 "$T/v2.bundle" | tr -d ' ')
printf "\\$(printf %o $((255 - byte)))" |
	dd of="$T/bad.bundle" bs=1 seek=$((size - 100000)) conv=notrunc 2>/dev/null
cmp -s "$T/v2.bundle" "$T/bad.bundle" && fail "the corrupted copy equals the bundle"
start_daemon

status() { fctl --json status > "$T/$1.json" || fail "status $1: exit $?"; }
# flashd under unshare: SIGTERM goes to flashd itself (unshare blocks it)
term_ns() {
	local c
	[ -n "$DAEMON_PID" ] && c=$(pgrep -P "$DAEMON_PID") && kill -TERM $c
	return 0
}
health_runs() { [ -e "$T/health.log" ] && wc -l < "$T/health.log" || echo 0; }

# restart_without_check WHY: a daemon restart (its running check ended)
# comes up idle without running the health check again (item 17)
restart_without_check() {
	local runs
	runs=$(health_runs)
	term_ns
	stop_daemon
	start_daemon
	sleep 0.5
	wait_for 20 daemon_idle || fail "busy after the restart"
	[ "$(health_runs)" = "$runs" ] || fail "$1"
}

# ---- item 1: install into the booted slot A is refused, env untouched ----
env_dump > "$T/env0"
fctl install --slot A "$T/v1.bundle" > "$T/i1.out" 2>&1
rc=$?
[ $rc = 3 ] || fail "item 1: install into the booted slot exited $rc, not 3 (refused): $(cat "$T/i1.out")"
grep -q SlotRefused "$T/i1.out" || fail "item 1: not SlotRefused: $(cat "$T/i1.out")"
grep -q "it is the booted slot" "$T/i1.out" || fail "item 1: no clear refusal: $(cat "$T/i1.out")"
fctl install --slot A "$T/bad.bundle" > "$T/i1b.out" 2>&1 && fail "corrupt install into A succeeded"
env_dump | cmp -s - "$T/env0" || fail "item 1: the env changed: $(env_dump | diff "$T/env0" -)"

# ---- item 3/22: a failed install is "failed", never activated ----
fctl install "$T/bad.bundle" > "$T/i2.out" 2>&1 && fail "the corrupt bundle installed"
status st1
expect_fields "$T/st1.json" "after a failed install" <<EOF
slots.1.state failed
slots.1.version null
slots.1.priority null
slots.0.state good
next_boot A
EOF
[ "$(env_var FLASHD_B_STATE)" = failed ] || fail "FLASHD_B_STATE '$(env_var FLASHD_B_STATE)'"
vcall_error "$T/act1" io.flashd.SlotRefused io.flashd.Activate '{"slot":"B"}'
stop_daemon
fctl slot activate B --layout "$LAYOUT" --target "$TARGET" > "$T/act2.out" 2>&1 &&
	fail "offline activate of a failed install succeeded"
grep -q "no verified image" "$T/act2.out" || fail "offline activate: $(cat "$T/act2.out")"
start_daemon

# ---- item 4: --no-activate ----
fctl install --no-activate "$T/v1.bundle" > "$T/i3.out" 2>&1 || fail "install --no-activate: $(cat "$T/i3.out")"
grep -q "it boots next" "$T/i3.out" && fail "--no-activate says it boots next"
status st2
expect_fields "$T/st2.json" "after install --no-activate" <<EOF
slots.1.state installed
slots.1.version 1.0
slots.1.priority null
next_boot A
EOF
vcall "$T/act3" io.flashd.Activate '{"slot":"B"}' || fail "Activate B: $(cat "$T/act3")"
status st3
expect_fields "$T/st3.json" "activated, not booted" <<EOF
slots.1.state pending
slots.1.version 1.0
slots.1.tries_left 3
next_boot B
switch_pending true
EOF

# ---- item 13 (+9): B boots, fails its check; the next install must not take A ----
echo 1 > "$T/health-rc"
sed -i 's/^reboot-on-failure=no/reboot-on-failure=yes/' "$T/flashd.conf"
# a bug here must not reboot the test host: in its own PID namespace,
# reboot(2) only ends that namespace (and the test sees flashd gone)
DAEMON_WRAPPER="unshare --pid --fork --kill-child"
reboot_board
[ "$BOOTED" = B ] || fail "boot-select chose $BOOTED, expected B"
wait_for 20 daemon_idle || fail "the health check did not finish"
[ "$(env_var BOOT_ORDER)" = A ] || fail "BOOT_ORDER after B's failed check: '$(env_var BOOT_ORDER)'"
daemon_alive || fail "item 9: flashd is gone after a failed check (reboot-on-failure=yes): rebooted?"
grep -q "not rebooting: the board is simulated" "$T/flashd.log" ||
	fail "item 9: the skipped reboot is not logged"
status st4
expect_fields "$T/st4.json" "B failed its check" <<EOF
booted B
on_trial false
slots.1.state bad
slots.0.state good
next_boot A
degraded false
EOF
env_dump > "$T/env4"
fctl install "$T/v2.bundle" > "$T/i4.out" 2>&1 && fail "install into A, the only bootable slot, succeeded"
grep -q "last slot in BOOT_ORDER" "$T/i4.out" || fail "item 13: no clear refusal: $(cat "$T/i4.out")"
env_dump | cmp -s - "$T/env4" || fail "item 13: the env changed: $(env_dump | diff "$T/env4" -)"

# ---- item 17: a restart does not re-run the check on B (marked bad) ----
restart_without_check "the health check ran again on slot B, marked bad"
[ "$(env_var BOOT_ORDER)" = A ] || fail "the restart changed BOOT_ORDER: '$(env_var BOOT_ORDER)'"

# ---- back on A, good ----
echo 0 > "$T/health-rc"
term_ns
reboot_board
[ "$BOOTED" = A ] || fail "boot-select chose $BOOTED, expected A"
wait_for 20 daemon_idle || fail "the health check on A did not finish"
[ "$(env_var FLASHD_LAST_GOOD)" = A ] || fail "FLASHD_LAST_GOOD '$(env_var FLASHD_LAST_GOOD)'"

# ---- item 17: a verdict that arrives after the operator's mark-bad is dropped ----
fctl -q install "$T/v2.bundle" > "$T/i6.out" 2>&1 || fail "install v2: $(cat "$T/i6.out")"
touch "$T/health-hold"
runs=$(health_runs)
term_ns
reboot_board
[ "$BOOTED" = B ] || fail "boot-select chose $BOOTED, expected B"
wait_for 20 sh -c "[ \$(wc -l < $T/health.log) -gt $runs ]" || fail "the check on B did not start"
fctl -q slot mark-bad B --layout "$LAYOUT" --target "$TARGET" --cmdline "$T/cmdline" ||
	fail "offline mark-bad of B during its check"
rm "$T/health-hold"
wait_for 20 daemon_idle || fail "the held check did not finish"
grep -q "verdict not applied: slot B is no longer on trial" "$T/flashd.log" ||
	fail "item 17: the late verdict is not dropped (or not logged)"
[ "$(env_var BOOT_ORDER)" = A ] || fail "item 17: the late pass undid mark-bad: BOOT_ORDER '$(env_var BOOT_ORDER)'"
term_ns
reboot_board
[ "$BOOTED" = A ] || fail "boot-select chose $BOOTED, expected A"
wait_for 20 daemon_idle || fail "the check on A did not finish"

# ---- item 19: offline rollback with an update pending = the socket's ----
fctl -q install "$T/v2.bundle" > "$T/i5.out" 2>&1 || fail "install v2: $(cat "$T/i5.out")"
[ "$(env_var BOOT_ORDER)" = "B A" ] || fail "BOOT_ORDER after installing v2: '$(env_var BOOT_ORDER)'"
term_ns
stop_daemon
fctl slot rollback --layout "$LAYOUT" --target "$TARGET" --cmdline "$T/cmdline" > "$T/rb.out" 2>&1 ||
	fail "offline rollback with an update pending: $(cat "$T/rb.out")"
[ "$(env_var BOOT_ORDER)" = "A B" ] || fail "offline rollback: BOOT_ORDER '$(env_var BOOT_ORDER)'"
fctl slot activate B --config "$T/flashd.conf" --layout "$LAYOUT" --target "$TARGET" >/dev/null || fail "activate B again"

# ---- item 2 (+9): B never comes up; the board falls back to A ----
for i in 1 2 3; do
	sel=$(fctl slot boot-select --layout "$LAYOUT" --target "$TARGET") || fail "boot-select $i"
	[ "$sel" = flashd.slot=B ] || fail "boot $i chose $sel, expected B"
done
echo 1 > "$T/health-rc"
reboot_board
[ "$BOOTED" = A ] || fail "boot-select chose $BOOTED, expected the fallback to A"
wait_for 20 daemon_idle || fail "the failing check on A did not finish"
daemon_alive || fail "flashd is gone after a failed check with reboot-on-failure=yes (it rebooted?)"
grep -q "ran out of tries: they failed to boot and are marked bad (BOOT_ORDER=A)" "$T/flashd.log" ||
	fail "item 2: the fallback is not recorded"
grep -q "DEGRADED" "$T/flashd.log" || fail "item 2: a failing check on the last good slot is not logged"
status st6
expect_fields "$T/st6.json" "fell back to A, A failed its check" <<EOF
booted A
degraded true
next_boot A
slots.0.state bad
slots.0.priority 0
slots.1.state bad
slots.1.priority null
EOF
[ "$(env_var BOOT_ORDER)" = A ] || fail "item 2: BOOT_ORDER '$(env_var BOOT_ORDER)', expected A"
fctl slot mark-bad A --force --layout "$LAYOUT" --target "$TARGET" > "$T/mb.out" 2>&1 &&
	fail "mark-bad of the last slot in BOOT_ORDER succeeded"
term_ns
stop_daemon
DAEMON_WRAPPER=
for i in 1 2 3 4 5; do
	sel=$(fctl slot boot-select --layout "$LAYOUT" --target "$TARGET" 2>/dev/null) || continue
	[ "$sel" = flashd.slot=A ] || fail "item 2: boot $i chose $sel: the board locked onto the failed B"
done

# ---- item 20: slot variables are checked, --force or not ----
env_dump > "$T/env7"
for v in "BOOT_ORDER=B,A" "BOOT_ORDER=a b" "BOOT_ORDER=" "BOOT_A_LEFT=10" "BOOT_A_LEFT=0x2" \
	 "BOOT_A_LEFT=2 " "BOOT_A_LEFT=-1" "FLASHD_B_STATE=verifed"; do
	fctl env set --force --layout "$LAYOUT" --target "$TARGET" "$v" > "$T/es.out" 2>&1 &&
		fail "item 20: env set --force '$v' accepted"
done
env_dump | cmp -s - "$T/env7" || fail "item 20: the env changed"
fctl -q env set --force --layout "$LAYOUT" --target "$TARGET" "BOOT_A_LEFT=2" ||
	fail "item 20: a valid forced value was refused"
# the same values through the socket's SetEnv with force
start_daemon
wait_for 20 daemon_idle || fail "item 20: the daemon stayed busy"
env_dump > "$T/env8"
for v in "BOOT_ORDER=B,A" "BOOT_ORDER=a b" "BOOT_A_LEFT=10" "BOOT_A_LEFT=0x2" "BOOT_A_LEFT=-1" \
	 "FLASHD_B_STATE=verifed"; do
	vcall "$T/se" io.flashd.SetEnv "{\"name\":\"${v%%=*}\",\"value\":\"${v#*=}\",\"force\":true}" &&
		fail "item 20: SetEnv force '$v' accepted"
	grep -q EnvRefused "$T/se.last" "$T/se.err" 2>/dev/null ||
		fail "item 20: SetEnv '$v': not EnvRefused: $(cat "$T/se" "$T/se.err")"
done
env_dump | cmp -s - "$T/env8" || fail "item 20: SetEnv changed the env"
stop_daemon

# ---- item 15: freshly provisioned (only A written), A fails its first check ----
fctl provision --layout "$LAYOUT" --bundle "$T/v1.bundle" --keyring "$T/keyring" "$TARGET" \
	> "$T/prov.out" 2>&1 || fail "provision: $(tail -n 3 "$T/prov.out")"
[ "$(env_var BOOT_ORDER)" = A ] || fail "provisioned BOOT_ORDER '$(env_var BOOT_ORDER)'"
echo 1 > "$T/health-rc"
DAEMON_WRAPPER="unshare --pid --fork --kill-child"
reboot_board
[ "$BOOTED" = A ] || fail "boot-select chose $BOOTED on the provisioned board"
wait_for 20 daemon_idle || fail "the check on the provisioned A did not finish"
daemon_alive || fail "item 15: flashd is gone after the check"
[ "$(env_var BOOT_ORDER)" = A ] || fail "item 15: BOOT_ORDER '$(env_var BOOT_ORDER)' after A's failed check"
status st8
expect_fields "$T/st8.json" "provisioned A failed its first check" <<EOF
degraded true
next_boot A
slots.0.state bad
slots.1.state empty
EOF
restart_without_check "item 17: the check ran again on the degraded slot A"
term_ns
stop_daemon
sel=$(fctl slot boot-select --layout "$LAYOUT" --target "$TARGET") || fail "boot-select after item 15"
[ "$sel" = flashd.slot=A ] || fail "item 15: the next boot chose $sel"

# ---- item 5: boot-select on an empty BOOT_ORDER does what the script does ----
fctl -q env init --force --layout "$LAYOUT" --target "$TARGET" BOOT_ORDER= BOOT_A_LEFT=3 \
	BOOT_B_LEFT=3 || fail "env init with an empty BOOT_ORDER"
sel=$(fctl slot boot-select --layout "$LAYOUT" --target "$TARGET") ||
	fail "item 5: boot-select on an empty BOOT_ORDER failed"
[ "$sel" = flashd.slot=A ] || fail "item 5: boot-select chose $sel, the script boots A"
[ "$(env_var BOOT_ORDER)" = "A B" ] || fail "item 5: the script saves BOOT_ORDER='A B', got '$(env_var BOOT_ORDER)'"
[ "$(env_var BOOT_A_LEFT)" = 2 ] || fail "item 5: BOOT_A_LEFT '$(env_var BOOT_A_LEFT)'"
say PASS
