#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# vm-layout: layouts/nand-ubi.json
# vm-timeout: 900
# vm-alone: long (5 min and more under load): a boot of its own keeps the pool balanced
#
# Power cuts in the middle of a UBI volume update (issue 19), on the
# kernel's nandsim + UBI (layouts/nand-ubi.json): the board is provisioned
# with v1 in slot A; flashd installs v1/v2 alternately into the inactive
# slot's rootfs volume and the daemon and its install worker are killed
# with SIGKILL while the volume update runs: after the target volume's
# update marker is set (UBI_IOCVOLUP started), at a random moment within
# the measured length of an undisturbed update (shortened whenever an
# update ended before its kill: the machine's load changes how long one
# runs). A kill counts as "in the update" when the volume's upd_marker is
# still set afterwards; the test
# goes on until CRASH_MIN_IN_UPDATE (default 20) kills landed there. After
# every kill the board "reboots" (the boot script's choice, flashctl slot
# boot-select) and
#  - the chosen slot's volume holds the version the env records for it
#    (sha256 of its first N bytes)
#  - the files in the UBIFS overlay are unchanged (checksum list)
#  - after the first kill inside an update: status says the slot is
#    "interrupted" and flashd boot --slot of it refuses ("volume update
#    interrupted"; test-provision-ubi.sh checks both with an env that says
#    the slot is good)
# Kill points are timed from the moment the marker is seen (polled with
# shell builtins: a fork under TCG takes longer than a LEB), up to 80 % of
# the measured update length of the version being installed.
. "$top_srcdir/tests/lib/vm.sh"
. "$top_srcdir/tests/lib/vm-ubi.sh"
ubi_setup
L=$UBI_LAYOUT
ubi_workdir /tmp/cu
export FLASHD_SOCKET=$T/flashd.sock
MIN=${CRASH_MIN_IN_UPDATE:-20}
MAXPOINTS=${CRASH_POINTS_MAX:-40}
SEED=${CRASH_SEED:-$(( $(date +%s) % 100000 ))}
RANDOM=$SEED
echo "UBI crash test: until $MIN kills land in a volume update (at most $MAXPOINTS), seed $SEED"
trap '[ -n "$UBI_DAEMON" ] && kill -9 $UBI_DAEMON 2>/dev/null' EXIT

declare -A LEN SHA
for v in 1 2; do
	mkdir -p $T/root$v/etc
	echo "VERSION_ID=$v.0" >$T/root$v/etc/os-release
	head -c $(( (v + 3) * 1024 * 1024 )) /dev/urandom >$T/root$v/payload
	# -noD: random data does not compress; trying costs seconds under TCG
	vm_run mksquashfs $T/root$v $T/v$v.sqfs -noappend -quiet -noD
	vm_run "$FLASHCTL" -q bundle create --layout "$L" --version $v.0 \
		--image rootfs=$T/v$v.sqfs --key $T/k.key -o $T/v$v.bundle
	LEN[$v.0]=$(stat -c %s $T/v$v.sqfs)
	SHA[$v.0]=$(sha256sum <$T/v$v.sqfs | cut -d' ' -f1)
done
vm_run "$FLASHCTL" provision --layout "$L" --bundle $T/v1.bundle --keyring $T/keyring system

U=$(ubi_num)
[ -n "$U" ] || vm_fail "UBI not attached after provisioning"
# the update markers of the rootfs volumes, read with builtins only: the
# polls below must not fork (a fork under TCG takes longer than a LEB)
declare -A MARK VOL
for S in A B; do
	VOL[$S]=$(ubi_vol "rootfs_$(tr AB ab <<<"$S")")
	MARK[$S]=/sys/class/ubi/ubi$U/${VOL[$S]#/dev/}/upd_marker
done
upd() { local m; read -r m <"${MARK[$1]}"; echo "$m"; }
mkfifo $T/never
exec 9<>$T/never   # read -t on it: a sleep without a fork

# ---- user data on the UBIFS overlay -------------------------------------------
mkdir -p /tmp/ov
vm_run mount -t ubifs "ubi$U:overlay" /tmp/ov
mkdir -p /tmp/ov/etc/app /tmp/ov/home/user
for i in $(seq 1 12); do head -c $((RANDOM * 4)) /dev/urandom >"/tmp/ov/home/user/file$i"; done
echo "hostname=board" >/tmp/ov/etc/app/config
mv /tmp/ov/etc/app/config /tmp/ov/etc/app/config.renamed
# (one sha256sum for all files, sorted after: a process costs 0.1-0.3 s under TCG)
sums() { (cd /tmp/ov && find . -type f -exec sha256sum {} + | sort -k2); }
sums >$T/ov.sums.0
vm_run umount /tmp/ov
overlay_unchanged() { # WHAT
	vm_run mount -t ubifs -o ro "ubi$U:overlay" /tmp/ov
	sums >$T/ov.sums
	umount /tmp/ov
	[ "$(<$T/ov.sums.0)" = "$(<$T/ov.sums)" ] || vm_fail "$1: overlay files changed: $(diff $T/ov.sums.0 $T/ov.sums | head -n 5)"
}

ubi_daemon_conf $T
# the crash points alternate v1 and v2 whichever runs: older over newer on
# purpose (the downgrade policy is test-history-downgrade.sh's)
printf '[flashd]\ndowngrade=allow\n' >> $T/flashd.conf
start_daemon() { ubi_start_daemon $T; }
stop_daemon() { ubi_stop_daemon; }
BOOTED=A
echo flashd.slot=A >$T/cmdline
reboot_board() {
	local sel
	sel=$("$FLASHCTL" slot boot-select --layout "$L" --target system 2>$T/sel.err) ||
		sel=$("$FLASHCTL" slot boot-select --layout "$L" --target system 2>$T/sel.err) ||
		vm_fail "boot-select: $(cat $T/sel.err)"
	BOOTED=${sel#flashd.slot=}
	echo "$sel" >$T/cmdline
}
check_booted_slot() { # WHAT
	local ver got
	ver=$("$FLASHCTL" env get -n --layout "$L" --target system "FLASHD_${BOOTED}_VERSION" 2>/dev/null)
	[ -n "${LEN[$ver]:-}" ] || vm_fail "$1: booted slot $BOOTED records version '$ver'"
	[ "$(upd "$BOOTED")" = 0 ] || vm_fail "$1: the board boots slot $BOOTED, whose volume update was interrupted"
	got=$(head -c "${LEN[$ver]}" "${VOL[$BOOTED]}" | sha256sum)
	got=${got%% *}
	[ "$got" = "${SHA[$ver]}" ] || vm_fail "$1: the board boots slot $BOOTED, whose volume is not the $ver it records"
}
children_of() {
	local s p pp
	for s in /proc/[0-9]*/stat; do
		{ read -r p _ _ pp _ <"$s"; } 2>/dev/null || continue
		[ "$pp" = "$1" ] && echo "$p"
	done
}
wait_marker() { # SLOT VALUE CLIENT-PID: 0 when the marker reached VALUE
	local i m
	for ((i = 0; i < 30000; i++)); do
		read -r m <"${MARK[$1]}"
		[ "$m" = "$2" ] && return 0
		kill -0 "$3" 2>/dev/null || { read -r m <"${MARK[$1]}"; [ "$m" = "$2" ]; return; }
		read -t 0.002 -u 9 _
	done
	return 1
}

# ---- an undisturbed install: how long the volume update runs ---------------------
start_daemon
"$FLASHCTL" install $T/v2.bundle >$T/inst.log 2>&1 &
client=$!
wait_marker B 1 $client || vm_fail "the update of slot B's volume never started: $(cat $T/inst.log)"
t0=$EPOCHREALTIME
wait_marker B 0 $client || vm_fail "the update of slot B's volume never ended"
t1=$EPOCHREALTIME
W=$(( (${t1/./} - ${t0/./}) / 1000 ))
wait $client || vm_fail "undisturbed install failed: $(cat $T/inst.log)"
stop_daemon
echo "undisturbed: the volume update of ${LEN[2.0]} bytes took about $W ms"
reboot_board
vm_expect_eq "$BOOTED" B "boots B after the undisturbed install"
check_booted_slot "after the undisturbed install"

# ---- the kill points ----------------------------------------------------------
in_update=0 n=0 refused_boot=0
while [ $in_update -lt "$MIN" ] && [ $n -lt "$MAXPOINTS" ]; do
	n=$((n + 1))
	ver=$(( n % 2 + 1 ))
	target=$([ "$BOOTED" = A ] && echo B || echo A)
	# up to 80 % of this version's update (scaled from v2's), counted from
	# the moment the marker was seen
	delay=$(( RANDOM % (W * LEN[$ver.0] / LEN[2.0] * 8 / 10 + 1) ))
	start_daemon
	"$FLASHCTL" install $T/v$ver.bundle >$T/inst.log 2>&1 &
	client=$!
	wait_marker "$target" 1 $client || vm_fail "point $n: the update of slot $target never started: $(cat $T/inst.log)"
	t0=$EPOCHREALTIME
	workers=$(children_of "$UBI_DAEMON")
	t1=$EPOCHREALTIME
	left=$(( delay - (${t1/./} - ${t0/./}) / 1000 ))
	[ $left -gt 0 ] && read -t "$(printf '%d.%03d' $((left / 1000)) $((left % 1000)))" -u 9 _
	kill -KILL "$UBI_DAEMON" $workers 2>/dev/null
	wait "$UBI_DAEMON" 2>/dev/null; UBI_DAEMON=
	wait $client
	for w in $workers; do while kill -0 "$w" 2>/dev/null; do sleep 0.05; done; done
	m=$(upd "$target")
	[ "$m" = 1 ] && in_update=$((in_update + 1))
	# the update ended within $delay ms: under less load than the measured
	# one's; the next kills are drawn from below that (scaled to v2's length)
	if [ "$m" = 0 ] && [ "$delay" -gt 0 ]; then
		W=$(( delay * LEN[2.0] / LEN[$ver.0] ))
		echo "kill point $n: the update ended within $delay ms; kills from now on within 80 % of $W ms (v2)"
	fi
	from=$BOOTED
	reboot_board
	check_booted_slot "kill point $n (${delay} ms into the update of slot $target)"
	overlay_unchanged "kill point $n"
	if [ "$m" = 1 ] && [ $refused_boot = 0 ]; then
		start_daemon
		state=$("$FLASHCTL" --json status | jq -r ".slots[] | select(.name==\"$target\") | .state")
		stop_daemon
		vm_expect_eq "$state" interrupted "kill point $n: status of slot $target"
		# flashd boot refuses the volume itself, whatever the env says
		out=$("$FLASHD" boot --slot "$target" --mode initramfs --layout "$L" --stage /tmp/st \
			--state $T/boot.json --no-exec 2>&1) &&
			vm_fail "flashd boot --slot $target mounted an interrupted volume: $out"
		grep -q "update interrupted" <<<"$out" || vm_fail "flashd boot --slot $target: $out"
		refused_boot=1
		echo "ok: status and flashd boot: slot $target $(grep -o 'volume update interrupted[^;]*' <<<"$out" | head -1)"
	fi
	echo "kill point $n: v$ver.0 into $target (from $from), ${delay} ms into the update, marker $m; boots $BOOTED, verified, overlay unchanged"
done
[ $in_update -ge "$MIN" ] || vm_fail "only $in_update of $n kills landed in a volume update (need $MIN)"
[ $refused_boot = 1 ] || vm_fail "flashd boot was never tried on an interrupted volume"

# an interrupted volume takes the next install
start_daemon
target=$([ "$BOOTED" = A ] && echo B || echo A)
"$FLASHCTL" install $T/v1.bundle >$T/inst.log 2>&1 || vm_fail "install after the kills: $(cat $T/inst.log)"
stop_daemon
reboot_board
vm_expect_eq "$BOOTED" "$target" "boots the slot installed after the kills"
check_booted_slot "after the last install"
echo "UBI crash points: $n kills, $in_update during a volume update (seed $SEED); every time the board boots a verified volume and the UBIFS overlay is unchanged"
