#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Operations chained in random orders on the simulated board, the way the
# field does it: installs (some cut by a power cut at a random flash
# operation), reboots through the boot script's choice with a health check
# that passes or fails, mark-good, mark-bad, rollback, activate, a cancel
# or a daemon restart in the middle of an install, a bundle corrupted in
# its payload, an unprivileged user trying to change anything, a member
# of the socket group doing what root does (installs with and without
# --allow-downgrade, mark-good of either slot, activate, rollback, a raw
# BOOT_ORDER), an overlay reset requested and taken back, and the install
# history read by root and by a user without rights.
# Seeded: CHAIN_SEED=N reproduces a run, CHAIN_STEPS=N sets its length.
#
# After every step, whatever happened before:
#   I1 the daemon answers, and a refused or failed operation is reported
#      by an exit status (never a crash); a user without rights changes
#      nothing (the env is the same byte for byte)
#   I2 the booted slot's bytes are what they were when it was booted
#   I3 when some slot holds a verified image, the next boot goes to one
#      (never a bad, failed, interrupted, cancelled or empty slot)
# and at every reboot:
#   I4 the boot script boots the slot status called "next_boot"
#   I5 the slot booted holds exactly the image of the version status
#      gives it (the board never runs unverified bytes)
. "$(dirname "$0")/../lib/sim-board.sh"

HEALTH_COMMAND="exit \$(cat $T/health-rc)"
setup_board
# the chip as it ages: a factory-bad block in each slot's image range, and
# corrected bitflips on 0.5 % of page reads (CHAIN_FLIPS ppm; 0: none)
seed=${CHAIN_SEED:-$(( $(date +%s) % 100000 ))}
eb=131072
for pb in rootfs-a:3 rootfs-b:5; do
	o=$(fctl --json layout show "$LAYOUT" | "$PY" -c "import json,sys
print([p['offset'] for p in json.load(sys.stdin)['partitions'] if p['name']=='${pb%:*}'][0])")
	"$top_builddir/nsimctl" markbad "$SIM" $((o / eb + ${pb#*:})) >/dev/null || fail "nsimctl markbad"
done
"$top_builddir/nsimctl" flip-rate "$SIM" --corrected "${CHAIN_FLIPS:-5000}" --uncorrectable 0 \
	--seed "$seed" >/dev/null || fail "nsimctl flip-rate"
echo 0 > "$T/health-rc"
for v in 1 2 3; do make_bundle "v$v" "$v.0" 1; done
# v3 with one payload byte inverted: its hash check fails in the write
size=$(stat -c %s "$T/v3.bundle")
cp "$T/v3.bundle" "$T/bad.bundle"
byte=$(od -An -tu1 -j $((size - 100000)) -N1 "$T/v3.bundle" | tr -d ' ')
printf "\\$(printf %o $((255 - byte)))" | dd of="$T/bad.bundle" bs=1 seek=$((size - 100000)) conv=notrunc 2>/dev/null
cmp -s "$T/v3.bundle" "$T/bad.bundle" && fail "the corrupted copy equals the bundle"
[ "$(id -u)" = 0 ] || skip "the unprivileged user's steps need root (setpriv to nobody)"
setup_other_users
printf '[flashd]\nsocket-group=%s\n' "$GROUP" >> "$T/flashd.conf"
chmod 755 "$T"
chmod 644 "$T"/*.bundle
start_daemon

steps=${CHAIN_STEPS:-40}
RANDOM=$seed
say "seed $seed ($steps steps; CHAIN_SEED=$seed reproduces)"
trace=""

off_of() {
	fctl --json layout show "$LAYOUT" | "$PY" -c "import json,sys
print([p['offset'] for p in json.load(sys.stdin)['partitions'] if p['name']=='$1'][0])"
}
OFF_A=$(off_of rootfs-a) OFF_B=$(off_of rootfs-b)
HASH_LEN=2097152 PART_LEN=4194304

slot_hash() { # SLOT: $HASH = sha256 of the good blocks of the slot's first 2 MiB
	local off=$OFF_A
	[ "$1" = B ] && off=$OFF_B
	fctl flash read --length $HASH_LEN "sim:$SIM@$off+$PART_LEN" "$T/slot.bin" >/dev/null 2>"$T/read.err" ||
		fail "step $n: reading slot $1: $(cat "$T/read.err")"
	HASH=$(sha256sum < "$T/slot.bin" | cut -d' ' -f1)
}

status_json() {
	wait_for 30 daemon_idle || fail "step $n ($trace): the daemon is busy or gone"
	fctl --json status > "$T/st.json" || fail "step $n ($trace): status: exit $?"
}

# "next_boot" and each slot's state and version from the last status
sj() { "$PY" -c "import json,sys; d=json.load(open('$T/st.json')); print($1)"; }

n=0
slot_hash A
boot_hash=$HASH
BOOTED=A

check_invariants() {
	local why="step $n ($trace)"
	status_json
	# I2
	slot_hash "$BOOTED"
	[ "$HASH" = "$boot_hash" ] || fail "$why: the booted slot $BOOTED was written"
	# I3
	sj "' '.join(s['state'] for s in d['slots']) + ' next_boot=' + str(d['next_boot'])" > "$T/states"
	"$PY" - "$T/st.json" <<'EOF' || fail "$why: the next boot goes to an unverified slot: $(cat "$T/states")"
import json, sys
d = json.load(open(sys.argv[1]))
verified = {"installed", "pending", "trial", "good"}
by = {s["name"]: s for s in d["slots"]}
if any(s["state"] in verified for s in d["slots"]):
    assert d["next_boot"] is not None and by[d["next_boot"]]["state"] in verified, d
EOF
}

reboot_checked() {
	local next want
	status_json
	next=$(sj "d['next_boot'] or ''")
	stop_daemon
	# no slot with tries left: the boot script gives them back and resets
	# the board (status said so: next_after_reset), the next power-on picks
	if ! sel=$(fctl slot boot-select --layout "$LAYOUT" --target "$TARGET" 2>"$T/sel.err"); then
		grep -q "run boot-select again" "$T/sel.err" || fail "step $n: boot-select: $(cat "$T/sel.err")"
		[ "$(sj "d['next_after_reset']")" = True ] ||
			fail "step $n ($trace): the boot script resets the board, status did not say so"
		sel=$(fctl slot boot-select --layout "$LAYOUT" --target "$TARGET") || fail "step $n: boot-select after the reset"
	fi
	echo "$sel" > "$T/cmdline"
	BOOTED=${sel#flashd.slot=}
	start_daemon
	# I4
	[ -z "$next" ] || [ "$BOOTED" = "$next" ] ||
		fail "step $n ($trace): status said the next boot is $next, the boot script booted $BOOTED"
	wait_for 30 daemon_idle || fail "step $n: no idle daemon after the reboot"
	slot_hash "$BOOTED"
	boot_hash=$HASH
	# I5
	status_json
	want=$(sj "[s['version'] for s in d['slots'] if s['name']=='$BOOTED'][0] or ''")
	if [ -n "$want" ]; then
		v=${want%.0}
		head -c "$(stat -c %s "$T/v$v.sqfs")" "$T/slot.bin" | cmp -s - "$T/v$v.sqfs" ||
			fail "step $n ($trace): slot $BOOTED boots with bytes that are not version $want"
	fi
}

other() { [ "$BOOTED" = A ] && echo B || echo A; }

# an operation's exit status: 0, or a refusal/failure (1, 3, 4, 5); never
# a usage error or a signal
op_rc_ok() { case $1 in 0|1|3|4|5) return 0 ;; *) return 1 ;; esac; }

# env stores so far: each erases one env copy (one erase block each)
ENV_BLOCKS=$(( $(off_of u-boot-env) / 131072 )),$(( $(off_of u-boot-env-redund) / 131072 ))
env_stores() {
	"$top_builddir/nsimctl" info "$SIM" --json --blocks | "$PY" -c "import json,sys
print(sum(b['erase_count'] for b in json.load(sys.stdin)['block_list'] if b['block'] in ($ENV_BLOCKS)))"
}

# OP...: a slot operation changes the boot state in at most one env
# store, and a refused one in none
run_op() {
	local rc=0 s0 s1
	s0=$(env_stores)
	"$@" > "$T/op.out" 2>&1 || rc=$?
	op_rc_ok $rc || fail "step $n ($trace): '$*' exited $rc: $(cat "$T/op.out")"
	trace="$trace:$rc"
	s1=$(env_stores)
	case "$*" in "fctl slot "*|"as_member $FLASHCTL slot "*)
		[ $((s1 - s0)) -le $((rc == 0)) ] ||
			fail "step $n ($trace): '$*' (exit $rc) took $((s1 - s0)) env stores" ;;
	esac
	[ $rc = 0 ] || say "  $*: $(head -c 300 "$T/op.out" | tr '\n' ' ')"
}

power_cut_install() { # an install cut after R mutating flash ops, reboot
	local r=$((RANDOM % 700 + 1))
	trace="$trace@$r"
	"$top_builddir/nsimctl" powercut "$SIM" --after $r $([ $((RANDOM % 2)) = 0 ] && echo --tear) >/dev/null ||
		fail "nsimctl powercut"
	fctl install "$T/v$((RANDOM % 3 + 1)).bundle" > "$T/op.out" 2>&1
	# power off: everything stops at once, then power on
	kill -KILL "$DAEMON_PID" 2>/dev/null
	wait "$DAEMON_PID" 2>/dev/null
	DAEMON_PID=
	w=$(sed -n 's/.*install started .*worker pid \([0-9]*\).*/\1/p' "$T/flashd.log" | tail -n 1)
	[ -z "$w" ] || wait_for 5 sh -c "! kill -0 $w 2>/dev/null" || fail "the worker $w outlived the power cut"
	"$top_builddir/nsimctl" power-on "$SIM" >/dev/null || fail "nsimctl power-on"
	start_daemon
}

install_bg() { # BUNDLE: an install running in the background (its write step)
	fctl install "$1" > "$T/bg.out" 2>&1 &
	BG=$!
	BG_PIDS="${BG_PIDS:-} $BG"
	sleep "0.$((RANDOM % 10))"
}

cancel_install() {
	install_bg "$T/v$((RANDOM % 3 + 1)).bundle"
	run_op fctl cancel
	wait $BG; rc=$?
	op_rc_ok $rc || fail "step $n ($trace): the cancelled install exited $rc: $(cat "$T/bg.out")"
	trace="$trace/$rc"
	[ $rc = 0 ] || say "  the install: $(tail -c 300 "$T/bg.out" | tr '\n' ' ')"
}

restart_in_install() { # SIGTERM to the daemon while it installs, start again
	install_bg "$T/v$((RANDOM % 3 + 1)).bundle"
	stop_daemon
	wait $BG
	start_daemon
}

# A payload byte of v3 corrupted: the install fails and what boots next
# does not change; or, when the target slot already holds the blocks the
# signed index names (an adaptive install reads no payload for them), it
# succeeds and the slot holds exactly v3
bad_bundle() {
	local before
	status_json
	before=$(sj "d['next_boot']")
	run_op fctl install "$T/bad.bundle"
	case $trace in *:0)
		slot_hash "$(other)"
		head -c "$(stat -c %s "$T/v3.sqfs")" "$T/slot.bin" | cmp -s - "$T/v3.sqfs" ||
			fail "step $n: a corrupted bundle was installed: slot $(other) is not v3"
		return ;;
	esac
	status_json
	[ "$(sj "d['next_boot']")" = "$before" ] || [ "$(sj "d['next_boot']")" = "$BOOTED" ] ||
		fail "step $n: after a failed install the next boot moved from $before to $(sj "d['next_boot']")"
}

nobody_steps() { # every change refused, the env the same byte for byte
	local e0 e1 rc op
	e0=$(env_dump | sha256sum)
	for op in "install $T/v1.bundle" "slot mark-bad A" "slot mark-bad B" "slot activate $(other)" \
		"slot rollback" "slot mark-good" "cancel" "overlay reset --yes"; do
		rc=0
		# shellcheck disable=SC2086
		setpriv --reuid=$NOBODY --regid=$NOBODY --clear-groups "$FLASHCTL" $op > "$T/op.out" 2>&1 < /dev/null || rc=$?
		[ $rc = 4 ] || fail "step $n: nobody's '$op' exited $rc (want 4, permission denied): $(cat "$T/op.out")"
	done
	setpriv --reuid=$NOBODY --regid=$NOBODY --clear-groups "$FLASHCTL" --json status > "$T/op.out" 2>&1 ||
		fail "step $n: nobody cannot read the status: $(cat "$T/op.out")"
	e1=$(env_dump | sha256sum)
	[ "$e0" = "$e1" ] || fail "step $n: nobody changed the env"
}

# A member of the socket group may do what root does, through the same
# checks: the invariants hold whatever it does. A raw BOOT_ORDER is root's
# alone: refused (4), the env unchanged.
member_step() {
	local s e0 e1 rc=0
	s=$(other)
	case $((RANDOM % 7)) in
	0) trace="member install"; run_op as_member "$FLASHCTL" install "$T/v$((RANDOM % 3 + 1)).bundle" ;;
	1) trace="member install --allow-downgrade"
	   run_op as_member "$FLASHCTL" install --allow-downgrade "$T/v$((RANDOM % 3 + 1)).bundle" ;;
	2) trace="member mark-good"; run_op as_member "$FLASHCTL" slot mark-good ;;
	3) trace="member mark-good $s"; run_op as_member "$FLASHCTL" slot mark-good "$s" ;;
	4) trace="member activate $s"; run_op as_member "$FLASHCTL" slot activate "$s" ;;
	5) trace="member rollback"; run_op as_member "$FLASHCTL" slot rollback ;;
	6) trace="member BOOT_ORDER=$s"
	   e0=$(env_dump | sha256sum)
	   as_member "$FLASHCTL" env set --force "BOOT_ORDER=$s" > "$T/op.out" 2>&1 < /dev/null || rc=$?
	   [ $rc = 4 ] || fail "step $n: a member's raw BOOT_ORDER=$s exited $rc (want 4): $(cat "$T/op.out")"
	   e1=$(env_dump | sha256sum)
	   [ "$e0" = "$e1" ] || fail "step $n: a member's refused raw BOOT_ORDER changed the env" ;;
	esac
}

# An overlay reset requested and taken back (by root or a member): no reset
# is pending after, and the slots' boot state did not move.
reset_cancel() {
	local who="" before
	[ $((RANDOM % 2)) = 0 ] && who=as_member
	trace="reset+cancel${who:+ (member)}"
	status_json
	before=$(sj "str(d['next_boot']) + ' ' + ' '.join(s['state'] for s in d['slots'])")
	run_op $who "$FLASHCTL" overlay reset --yes
	run_op $who "$FLASHCTL" overlay reset --cancel
	fctl --json overlay status > "$T/ov.json" || fail "step $n: overlay status: exit $?"
	"$PY" -c "import json,sys; d=json.load(open('$T/ov.json')); sys.exit(d.get('state') == 'reset_pending')" ||
		fail "step $n: a reset is still pending after --cancel: $(cat "$T/ov.json")"
	status_json
	[ "$(sj "str(d['next_boot']) + ' ' + ' '.join(s['state'] for s in d['slots'])")" = "$before" ] ||
		fail "step $n: an overlay reset and its cancel moved the boot state from '$before'"
}

# The history: the same for root and a user without rights; at most 100
# records, in the order they started; every record names a result.
history_check() {
	trace="history"
	fctl --json history > "$T/h-root.json" || fail "step $n: history (root): exit $?"
	as_nobody "$FLASHCTL" --json history > "$T/h-nobody.json" 2> "$T/h.err" ||
		fail "step $n: history (nobody): exit $?: $(cat "$T/h.err")"
	cmp -s "$T/h-root.json" "$T/h-nobody.json" || fail "step $n: nobody's history differs from root's"
	"$PY" - "$T/h-root.json" <<'EOF' || fail "step $n: the history is not what was done: $(head -c 400 "$T/h-root.json")"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["error"] is None, d["error"]
ins = d["installs"]
assert len(ins) <= 100
assert all(i["result"] in ("success", "failed", "cancelled", "interrupted") for i in ins), ins
EOF
}

for n in $(seq 1 "$steps"); do
	case $((RANDOM % 18)) in
	10) trace="cancel"; cancel_install ;;
	11) trace="restart"; restart_in_install ;;
	12) trace="bad-bundle"; bad_bundle ;;
	13) trace="nobody"; nobody_steps ;;
	14|15) member_step ;;
	16) reset_cancel ;;
	17) history_check ;;
	0|1|2) trace="install"; run_op fctl install "$T/v$((RANDOM % 3 + 1)).bundle" ;;
	3) trace="cut"; power_cut_install ;;
	4|5) h=$((RANDOM % 4 == 0)); echo $h > "$T/health-rc"; trace="reboot(health $h)" ;;
	6) trace="mark-good"; run_op fctl slot mark-good ;;
	7) s=$(other); trace="mark-bad $s"; run_op fctl slot mark-bad "$s" ;;
	8) trace="rollback"; run_op fctl slot rollback ;;
	9) s=$(other); trace="activate $s"; run_op fctl slot activate "$s" ;;
	esac
	check_invariants
	case $trace in
	reboot*|cut*) reboot_checked; check_invariants ;;
	esac
	say "step $n: $trace -> booted $BOOTED, $(cat "$T/states")"
done
say "all invariants held over $steps steps (seed $seed)"
