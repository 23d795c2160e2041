#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# Issue 31 items 1-9 in one run, one board, as a user meets them, in an
# order no single test uses; each step checks what is ON THE FLASH (the
# slot read back and compared with its signed image, the env read back),
# never a status word alone:
#  0 provisioned: v1 in A, v2 installed into B, booted, health check good
#  1 a bit of A's middle block rots; v1 again: A equals v1
#  4 v3 into A is cut; during and after it a socket-group member's forced
#    BOOT_ORDER=A, BOOT_A_LEFT, FLASHD_A_STATE and 'slot activate A' are
#    refused, the env unchanged byte for byte; root's BOOT_ORDER naming
#    the cut A refused
#  2 v1 again into A, then an uncorrectable block in A, v1 again: A equals
#    v1 (or the install is refused as a flash error and A is not next)
#  7 booted by hand with root=31:4, daemon restarted: installs into A, B,
#    or either refused; neither slot nor the env changes
#  5 v3 into A cut again, both env copies lost, env init + slot init: A is
#    unknown, out of BOOT_ORDER, never chosen; 'slot init --bundle v1'
#    reads A and keeps it out; v1 installed, records lost too, env lost:
#    'slot init --bundle v1' reads A as v1 and takes it in
#  3 a second daemon (own state dir) installs a rebuilt 1.0 into A; the
#    first installs its 1.0 again: A equals v1, not the rebuilt one
#  8 env copy 2's block dies: env set, install of v3, reboot into it and
#    its health check, v2 into B, activate B all store; status says copy
#    2 DEAD
#  9 a legacy (RAUC-style) env over both images: A fails its health
#    check, the fallback B stays, activate B is accepted, B boots
# After every step: every slot in BOOT_ORDER (read from the env) reads as
# the signed image installed there, and the booted slot's bytes are what
# they were when it was booted.
. "$(dirname "$0")/../lib/sim-board.sh"

NSIMCTL=$top_builddir/nsimctl
[ -x "$NSIMCTL" ] || fail "$NSIMCTL not built"
need dd sha256sum
HEALTH_COMMAND="exit \$(cat $T/health-rc)"
echo 0 > "$T/health-rc"
setup_board
for v in 1 2 3; do make_bundle v$v $v.0 3; done
C="--config $T/flashd.conf --cmdline $T/cmdline"
B="--layout $LAYOUT --target $TARGET"
MAXLEN=$(stat -c %s "$T"/v*.sqfs | sort -n | tail -n 1)
MID=$((MAXLEN / EB / 2))

# the image each slot holds as far as the test knows (set after each
# install reported a success; checked against the flash)
IMG_A= IMG_B=

slot_sum() {
	slot_read "$1" "$MAXLEN" "$T/sum-$1.img"
	sha256sum < "$T/sum-$1.img" | cut -d' ' -f1
}

# boot: the boot script's choice (reboot_board), and the booted slot's
# bytes noted; the health check runs (its verdict awaited)
boot() {
	reboot_board
	[ "$BOOTED" = "$1" ] || fail "$2: booted $BOOTED, expected $1"
	BOOTED_SUM=$(slot_sum "$BOOTED")
	wait_for 30 daemon_idle || fail "$2: the daemon did not settle after the boot"
}

# invariants WHAT: every slot in BOOT_ORDER reads back as the image
# installed there; the booted slot's bytes did not change
invariants() {
	local order s img
	order=$(env_var BOOT_ORDER)
	[ -n "$order" ] || fail "$1: BOOT_ORDER is empty"
	for s in $order; do
		eval "img=\$IMG_$s"
		[ -n "$img" ] || fail "$1: slot $s is in BOOT_ORDER '$order' but holds no image"
		slot_is "$s" "$img" "$1: slot $s in BOOT_ORDER '$order'"
	done
	[ "$(slot_sum "$BOOTED")" = "$BOOTED_SUM" ] || fail "$1: the booted slot $BOOTED was written"
	ok "$1: BOOT_ORDER '$order' reads as its images; booted $BOOTED unchanged"
}

install_ok() { # WHAT BUNDLE [install options]
	local what=$1 bundle=$2
	shift 2
	fctl install "$@" "$bundle" > "$T/inst.out" 2>&1 || fail "$what: install: $(cat "$T/inst.out")"
}

# cut_install WHAT BUNDLE: an install into the slot not booted, held in
# its write step, then its worker killed (a cut); the daemon idle again
cut_install() {
	start_gated_install "$2" 1572864 "$1"
	[ -n "${DURING_CUT:-}" ] && $DURING_CUT
	kill -9 "$WORKER"
	wait_for 20 daemon_idle || fail "$1: the daemon did not notice the killed worker"
	wait "$CLIENT" 2>/dev/null
}

# ---- 0: provisioned ----
# the factory station runs from B: v1 into A, then A boots
echo "flashd.slot=B" > "$T/cmdline"
# the chain reinstalls v1 while v2 runs, on purpose: the downgrade policy
# (test-history-downgrade.sh) is not what is checked here
printf '[flashd]\ndowngrade=allow\n' >> "$T/flashd.conf"
start_daemon
install_ok "provision v1" "$T/v1.bundle"
IMG_A=$T/v1.sqfs
slot_is A "$IMG_A" "provision v1"
boot A "provision"
[ "$(env_var FLASHD_A_STATE)" = good ] || fail "provision: A is '$(env_var FLASHD_A_STATE)' after its health check"
install_ok "install v2" "$T/v2.bundle"
IMG_B=$T/v2.sqfs
slot_is B "$IMG_B" "install v2"
boot B "boot v2"
[ "$(env_var FLASHD_B_STATE)" = good ] || fail "boot v2: B is '$(env_var FLASHD_B_STATE)' after its health check"
invariants "0 provisioned"

# ---- 1: bit rot in A, the same bundle again ----
sim_flip_bit $(($(slot_offset A) + MID * EB + 5000))
slot_read A "$MAXLEN" "$T/a.img"
cmp -s -n "$(stat -c %s "$IMG_A")" "$IMG_A" "$T/a.img" && fail "1: the flipped bit did not reach A"
install_ok "1 bit rot" "$T/v1.bundle"
slot_is A "$T/v1.sqfs" "1 bit rot: the reinstall"
fctl --json status > "$T/st.json" || fail "status"
expect_fields "$T/st.json" "1 bit rot: the reinstall" <<-EOF
slots.0.version 1.0
last_install.result success
last_install.erases 1
EOF
invariants "1 bit rot"

# ---- 4: a cut install, and a socket-group member's raw env writes ----
member_tries() {
	local nv before
	before=$(env_dump)
	for nv in BOOT_ORDER=A "BOOT_ORDER=A B" BOOT_A_LEFT=3 FLASHD_A_STATE=verified; do
		as_member "$FLASHCTL" env set --force "$nv" > "$T/m.out" 2>&1 &&
			fail "4: a group member's env set --force $nv was accepted"
		# during the install a store waits its turn (Busy); after it, the refusal names the variable
		grep -q "${nv%%=*}\|io.flashd.Busy" "$T/m.out" ||
			fail "4: the refusal of $nv does not name it: $(cat "$T/m.out")"
	done
	as_member "$FLASHCTL" slot activate A > "$T/m.out" 2>&1 && fail "4: a group member activated A"
	[ "$(env_dump)" = "$before" ] || fail "4: refused writes changed the env: $(env_dump)"
	ok "4: the member's writes refused, the env unchanged byte for byte"
}
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null 2>&1 && getent group users >/dev/null; then
	GID=$(getent group users | cut -d: -f3)
	as_member() { setpriv --reuid=65534 --regid="$GID" --clear-groups "$@"; }
	stop_daemon
	chmod 755 "$T"
	printf '[flashd]\nsocket-group=users\n' >> "$T/flashd.conf"
	start_daemon
	DURING_CUT=member_tries cut_install cut4 "$T/v3.bundle"
	member_tries
	grep -q "io.flashd.Busy" "$T/m.out" && fail "4: after the cut the daemon is still busy: $(cat "$T/m.out")"
else
	say "SKIP (part): not root (or no setpriv, no group users): the member's writes not tried"
	cut_install cut4 "$T/v3.bundle"
fi
IMG_A=
case " $(env_var BOOT_ORDER) " in *" A "*) fail "4: the cut A is in BOOT_ORDER" ;; esac
vcall "$T/r" io.flashd.SetEnv '{"name":"BOOT_ORDER","value":"B A","force":true}' &&
	fail "4: root's forced BOOT_ORDER naming the cut A was stored"
invariants "4 cut install, raw env writes"

# ---- 2: an uncorrectable block in A ----
install_ok "2 v1 over the cut" "$T/v1.bundle"
IMG_A=$T/v1.sqfs
slot_is A "$IMG_A" "2 v1 over the cut"
blk=$(($(slot_offset A) / EB + MID))
"$NSIMCTL" fault "$SIM" --block $blk --flip uncorrectable >/dev/null || fail "nsimctl fault"
if fctl install "$T/v1.bundle" > "$T/inst.out" 2>&1; then
	slot_is A "$IMG_A" "2 uncorrectable block"
	"$NSIMCTL" info "$SIM" --json --blocks > "$T/info.json" || fail "nsimctl info"
	"$PY" -c "import json,sys; d=json.load(open('$T/info.json'))
b=[x for x in d['block_list'] if x.get('block')==$blk]
sys.exit(0 if b and b[0].get('bad') else 1)" || fail "2: the uncorrectable block $blk is not marked bad"
else
	grep -qi "invalid bundle\|InvalidBundle" "$T/inst.out" &&
		fail "2: an uncorrectable block of A was blamed on the bundle: $(cat "$T/inst.out")"
	grep -qi "flash I/O error" "$T/inst.out" || fail "2: the refusal does not say flash I/O error: $(cat "$T/inst.out")"
	IMG_A=
fi
invariants "2 uncorrectable block"

# ---- 7: booted by hand, the booted slot unknown ----
stop_daemon
echo "console=ttyS0 root=31:4 rootfstype=squashfs" > "$T/cmdline"
start_daemon
sum_a=$(slot_sum A) sum_b=$(slot_sum B) env_before=$(env_dump)
for s in A B; do
	fctl install --slot $s "$T/v3.bundle" > "$T/i.out" 2>&1 && fail "7: install --slot $s with the booted slot unknown"
	grep -q "could be the running root" "$T/i.out" || fail "7: install --slot $s refused without saying why: $(cat "$T/i.out")"
done
fctl install "$T/v3.bundle" > "$T/i.out" 2>&1 && fail "7: install without --slot guessed a target"
[ "$(slot_sum A)" = "$sum_a" ] || fail "7: slot A was written"
[ "$(slot_sum B)" = "$sum_b" ] || fail "7: slot B was written"
[ "$(env_dump)" = "$env_before" ] || fail "7: the env changed: $(env_dump)"
stop_daemon
echo "flashd.slot=B" > "$T/cmdline"
start_daemon
invariants "7 booted slot unknown"

# ---- 5: an interrupted install, then the env lost ----
cut_install cut5 "$T/v3.bundle"
IMG_A=
lose_env
fctl slot init $C --offline > "$T/si.out" 2>&1 || fail "5: slot init: $(cat "$T/si.out")"
[ "$(env_var BOOT_ORDER)" = B ] || fail "5: slot init after the cut: BOOT_ORDER '$(env_var BOOT_ORDER)', expected B"
[ "$(env_var FLASHD_A_STATE)" = unknown ] || fail "5: the cut A is recorded '$(env_var FLASHD_A_STATE)'"
for i in 1 2 3; do
	sel=$(fctl slot boot-select $B) || fail "boot-select"
	[ "$sel" = flashd.slot=B ] || fail "5: boot-select chose $sel after slot init"
done
fctl slot init $C --offline --bundle "$T/v1.bundle" > "$T/si.out" 2>&1 || fail "5: slot init --bundle v1: $(cat "$T/si.out")"
[ "$(env_var BOOT_ORDER)" = B ] || fail "5: slot init --bundle v1 took the cut A: '$(env_var BOOT_ORDER)'"
start_daemon
invariants "5 env lost after a cut"
install_ok "5 v1 into A" "$T/v1.bundle" --no-activate
IMG_A=$T/v1.sqfs
rm -f "$T"/state/blocks-*
lose_env
fctl slot init $C --offline --bundle "$T/v1.bundle" > "$T/si.out" 2>&1 || fail "5: slot init --bundle v1: $(cat "$T/si.out")"
case " $(env_var BOOT_ORDER) " in *" A "*) ;; *) fail "5: slot init --bundle v1 left A out: '$(env_var BOOT_ORDER)'" ;; esac
[ "$(env_var FLASHD_A_STATE)" = good ] || fail "5: A read as v1 is recorded '$(env_var FLASHD_A_STATE)'"
start_daemon
invariants "5 env and records lost, slot init --bundle"

# ---- 3: a stale record from a second state dir ----
rebuilt_bundle v1b v1 1.0 $(((MID + 2) * EB + 3000))
stop_daemon
cp "$T/flashd.conf" "$T/flashd.conf.first"
sed -i "s|$T/state|$T/state2|" "$T/flashd.conf"
start_daemon
install_ok "3 the second daemon's rebuilt 1.0" "$T/v1b.bundle"
IMG_A=$T/v1b.sqfs
slot_is A "$IMG_A" "3 the second daemon's rebuilt 1.0"
stop_daemon
cp "$T/flashd.conf.first" "$T/flashd.conf"
start_daemon
install_ok "3 the first daemon's 1.0 again" "$T/v1.bundle"
IMG_A=$T/v1.sqfs
slot_is A "$IMG_A" "3 the first daemon's 1.0 over the rebuilt one"
invariants "3 stale record"

# ---- 8: one env copy dies ----
stop_daemon
"$NSIMCTL" fault "$SIM" --block 9 --erase --program >/dev/null || fail "nsimctl fault"
start_daemon
dead_copy_said() {
	fctl --json status > "$T/st.json" || fail "$1: status"
	[ "$(jget "$T/st.json" env.copies.1.state)" = dead ] || fail "$1: status --json: $(jget "$T/st.json" env)"
	fctl status > "$T/st.txt"
	grep -q "copy 2 DEAD" "$T/st.txt" || fail "$1: status does not say copy 2 is dead: $(cat "$T/st.txt")"
}
fctl env set FOO=1 > "$T/e.out" 2>&1 || fail "8: env set FOO=1: $(cat "$T/e.out")"
fctl env set FOO=2 > "$T/e.out" 2>&1 || fail "8: env set FOO=2: $(cat "$T/e.out")"
[ "$(env_var FOO)" = 2 ] || fail "8: FOO is '$(env_var FOO)' after two stores"
install_ok "8 v3 into A" "$T/v3.bundle"
IMG_A=$T/v3.sqfs
slot_is A "$IMG_A" "8 v3 into A"
dead_copy_said "8 after the install"
invariants "8 dead copy, install"
boot A "8 boot v3"
[ "$(env_var FLASHD_A_STATE)" = good ] || fail "8: A is '$(env_var FLASHD_A_STATE)' after its health check"
# B's record went with the state dir in 5 ('slot init --bundle' reads a
# slot but keeps no index for it), so activate could not read B: v2 again
install_ok "8 v2 into B" "$T/v2.bundle" --no-activate
slot_is B "$IMG_B" "8 v2 into B"
fctl slot activate B > "$T/ac.out" 2>&1 || fail "8: activate B: $(cat "$T/ac.out")"
[ "$(env_var BOOT_ORDER)" = "B A" ] || fail "8: activate B: BOOT_ORDER '$(env_var BOOT_ORDER)'"
dead_copy_said "8 after activate"
invariants "8 dead copy, activate"
stop_daemon
"$NSIMCTL" fault "$SIM" --block 9 --clear >/dev/null || fail "nsimctl fault --clear"

# ---- 9: a legacy env over both images ----
fctl -q env init --force $B FLASHD_ENV= "BOOT_ORDER=A B" BOOT_A_LEFT=3 BOOT_B_LEFT=3 > "$T/init.out" 2>&1 ||
	fail "9: env init of the legacy env: $(cat "$T/init.out")"
env_dump | grep -q '^FLASHD_[^=]*=.' && fail "9: the legacy env has flashd variables: $(env_dump)"
echo 1 > "$T/health-rc"
boot A "9 legacy env"
[ "$(env_var FLASHD_B_STATE)" != unknown ] || fail "9: the legacy env taken for a lost one: B unknown"
[ "$(env_var BOOT_ORDER)" = B ] || fail "9: A failed its health check: BOOT_ORDER '$(env_var BOOT_ORDER)', expected B"
invariants "9 legacy env, A failed"
fctl -q slot activate B > "$T/act.out" 2>&1 || fail "9: activate of the legacy B refused: $(cat "$T/act.out")"
echo 0 > "$T/health-rc"
boot B "9 the fallback"
invariants "9 legacy fallback booted"
say PASS
