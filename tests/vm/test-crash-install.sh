#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# vm-module: nandsim id_bytes=0x20,0xf1,0x00,0x15 parts=8,1,1,32,320,32,320,310
# vm-timeout: 420
# vm-alone: long (5 min and more under load): a boot of its own keeps the pool balanced
#
# Crash at any point, on the kernel's nandsim (layouts/nandsim-128m.json):
# flashd installs a signed bundle into the inactive slot and is killed with
# SIGKILL -- the daemon and its install worker together -- at CRASH_POINTS
# (default 32) random moments spread over the whole install (0 to 120 % of
# a measured undisturbed install; CRASH_SEED fixes the sequence, the seed
# is printed). After every kill the board "reboots": the boot script's
# choice (flashctl slot boot-select), then
#  - the chosen slot's image verifies: its first N bytes (read with
#    flashctl flash read) have the sha256 of the version the env records
#    for it (FLASHD_<slot>_VERSION; slot A: 1.0 from provisioning)
#  - the JFFS2 overlay's files are unchanged (checksum list)
#  - flashd starts again and answers, with no install left running.
# The next install (v1 and v2 alternate) goes to whatever slot is then
# inactive.
. "$top_srcdir/tests/lib/vm.sh"
export FW_V1_MIB=4 FW_V2_MIB=8
. "$top_srcdir/tests/lib/vm-board.sh"
vm_need_module nandsim jffs2
POINTS=${CRASH_POINTS:-32}
SEED=${CRASH_SEED:-$(( $(date +%s) % 100000 ))}
RANDOM=$SEED
echo "crash test: $POINTS kill points, seed $SEED (CRASH_SEED=$SEED reproduces the sequence)"

fw_load_board
fw_keys_and_bundles
fw_provision
# the kill points alternate v1 and v2 whichever runs: older over newer on
# purpose (the downgrade policy is test-history-downgrade.sh's)
printf '[flashd]\ndowngrade=allow\n' >> "$FLASHD_DIR/flashd.conf"
declare -A LEN SHA
for v in 1 2; do
	LEN[$v.0]=$(stat -c %s "$FW/v$v.sqfs")
	SHA[$v.0]=$(fw_file_sha "$FW/v$v.sqfs")
done

# ---- user data in the overlay ------------------------------------------------
data=$(vm_mtd_by_name rootfs_data)
mkdir -p /tmp/ov
vm_run mount -t jffs2 "mtd${data#/dev/mtd}" /tmp/ov
mkdir -p /tmp/ov/etc/app /tmp/ov/home/user
for i in $(seq 1 12); do head -c $((RANDOM * 4)) /dev/urandom >"/tmp/ov/home/user/file$i"; done
echo "hostname=board" >/tmp/ov/etc/app/config
ln -s ../app/config /tmp/ov/etc/app/link
# every entry: links with their target, files with their sha256 (one
# sha256sum for all: two processes a file cost 0.2-0.6 s under TCG), the rest by name
sums() { (cd /tmp/ov && find . -path ./lost+found -prune -o -type l -printf 'L %l %p\n' -o \
	-type f -exec sha256sum {} + -o -printf 'D %p\n' | sort); }
sums >/tmp/ov.sums.0
vm_run umount /tmp/ov
overlay_unchanged() { # WHAT
	vm_run mount -t jffs2 -o ro "mtd${data#/dev/mtd}" /tmp/ov
	sums >/tmp/ov.sums
	umount /tmp/ov
	cmp -s /tmp/ov.sums.0 /tmp/ov.sums ||
		vm_fail "$1: overlay files changed: $(diff /tmp/ov.sums.0 /tmp/ov.sums | head -n 5)"
}

# The kernel command line of the current boot.
BOOTED=A RESETS=0
echo "flashd.slot=A" >"$FW/cmdline"

reboot_board() { # sets BOOTED from the boot script's choice
	local sel
	# No slot with tries left (trial boots that were never marked good):
	# the boot script restores the counters and resets the board; the
	# next power-on picks again.
	if ! sel=$("$FLASHCTL" slot boot-select --layout "$FL" 2>/tmp/fw-sel.err); then
		grep -q "no slot has tries left" /tmp/fw-sel.err ||
			vm_fail "boot-select failed: $(cat /tmp/fw-sel.err)"
		RESETS=$((RESETS + 1))
		sel=$("$FLASHCTL" slot boot-select --layout "$FL" 2>/tmp/fw-sel.err) ||
			vm_fail "boot-select after the counter reset failed: $(cat /tmp/fw-sel.err)"
	fi
	BOOTED=${sel#flashd.slot=}
	echo "$sel" >"$FW/cmdline"
}

# whichever slot the board picks must hold the version the env says
check_booted_slot() { # WHAT
	local ver len got
	ver=$("$FLASHCTL" env get -n --layout "$FL" "FLASHD_${BOOTED}_VERSION" 2>/dev/null)
	[ -n "$ver" ] || { [ "$BOOTED" = A ] && ver=1.0; }
	[ -n "${LEN[$ver]:-}" ] || vm_fail "$1: booted slot $BOOTED records version '$ver', which no bundle has"
	got=$(fw_slot_sha "rootfs-${BOOTED,,}" "${LEN[$ver]}") ||
		vm_fail "$1: cannot read slot $BOOTED"
	[ "$got" = "${SHA[$ver]}" ] ||
		vm_fail "$1: the board boots slot $BOOTED, whose image is not the $ver it records (sha256 $got)"
}

# ---- undisturbed installs, to know how long one takes -----------------------
# Two: v2 into B, reboot into B, v1 into A; the second one (warm caches,
# as in the loop) sets the time window the kills are spread over.
for v in 2 1; do
	start_daemon
	t0=$(date +%s%N)
	timeout 300 "$FLASHCTL" install "$FW/v$v.bundle" >/tmp/fw-inst.log 2>&1 </dev/null ||
		vm_fail "undisturbed install of v$v failed: $(cat /tmp/fw-inst.log)"
	DUR_MS=$(( ($(date +%s%N) - t0) / 1000000 ))
	stop_daemon
	echo "one install of v$v (${LEN[$v.0]} bytes) takes $DUR_MS ms"
	reboot_board
	check_booted_slot "after the undisturbed install of v$v"
done

# ---- the kill points --------------------------------------------------------
children_of() { # PID: its child pids
	local s p
	for s in /proc/[0-9]*/stat; do
		{ read -r p _ _ pp _ <"$s"; } 2>/dev/null || continue
		[ "$pp" = "$1" ] && echo "$p"
	done
}
finished=0 killed_in_flight=0 on_a=0 on_b=0 with_worker=0
for n in $(seq 1 "$POINTS"); do
	delay_ms=$(( (RANDOM * 32768 + RANDOM) % (DUR_MS * 12 / 10 + 1) ))
	# alternate the versions, so that each install really rewrites the
	# inactive slot (an unchanged block is not rewritten)
	ver=$(( (n + 1) % 2 + 1 ))
	start_daemon
	"$FLASHCTL" install "$FW/v$ver.bundle" >/tmp/fw-inst.log 2>&1 </dev/null &
	client=$!
	sleep "$(printf '%d.%03d' $((delay_ms / 1000)) $((delay_ms % 1000)))"
	workers=$(children_of "$DAEMON_PID")
	kill -KILL "$DAEMON_PID" $workers 2>/dev/null
	wait "$DAEMON_PID" 2>/dev/null
	DAEMON_PID=
	wait "$client"
	if [ $? = 0 ]; then finished=$((finished + 1)); else killed_in_flight=$((killed_in_flight + 1)); fi
	# the worker may still be dying: wait until it is gone
	for w in $workers; do while kill -0 "$w" 2>/dev/null; do sleep 0.05; done; done
	from=$BOOTED
	reboot_board
	check_booted_slot "kill point $n (${delay_ms} ms into an install from slot $from)"
	overlay_unchanged "kill point $n"
	[ "$BOOTED" = A ] && on_a=$((on_a + 1)) || on_b=$((on_b + 1))
	[ -n "$workers" ] && with_worker=$((with_worker + 1))
	echo "kill point $n: v$ver.0, ${delay_ms} ms (worker: ${workers:-none}); boots $BOOTED, image verifies, overlay unchanged"
done

# flashd comes back once more and is idle
start_daemon
"$FLASHCTL" --json status >/tmp/fw-st.json || vm_fail "status after the last kill"
vm_expect_eq "$(jq -r .operation /tmp/fw-st.json)" null "operation after restart"
stop_daemon
echo "crash points: $POINTS tried (seed $SEED): $killed_in_flight killed during the install ($with_worker with the worker running), $finished after it finished; booted A $on_a times, B $on_b times, $RESETS counter resets by the boot script; every time a verified image and an unchanged overlay"
