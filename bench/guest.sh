#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The measuring half of bench/run: runs as root inside the harness VM
# (nandsim/vm-run, board already loaded by vm-load-board), never by hand.
#
#   guest.sh VARIANT WORKDIR CONTENDERS QUICK LAYOUT "NANDSIM-PARAMS"
#
# Writes one JSON object per line to $VM_OUT/bench.jsonl. Each contender
# installs into the empty slot B (erased, untimed), then the same image
# again, then the 10%-changed image. Erase operations are counted in the
# kernel with a kprobe on the driver's erase function, for every contender
# alike; flashd's own counters are recorded next to them.
set -u
variant=$1 work=$2 contenders=$3 quick=$4 layout=$5 extra=${6:-}
out=${VM_OUT:?not in the harness VM}/bench.jsonl
FLASHD=$top_builddir/flashd FLASHCTL=$top_builddir/flashctl
PY=/usr/bin/python3
B=$top_srcdir/bench
tmp=/tmp/bench
mkdir -p $tmp
: >"$out"

log() { echo "bench[$variant]: $*"; }
die() { echo "bench[$variant]: FATAL: $*" >&2; exit 1; }

# emit KEY=VALUE...: one JSON object; numbers stay numbers.
emit() {
	local kv k v s="{\"variant\":\"$variant\""
	for kv in "$@"; do
		k=${kv%%=*} v=${kv#*=}
		if [[ $v =~ ^-?[0-9]+(\.[0-9]+)?$ ]]; then
			s="$s,\"$k\":$v"
		else
			v=${v//\\/\\\\} v=${v//\"/\\\"} v=${v//$'\n'/ } v=${v//$'\t'/ }
			s="$s,\"$k\":\"$v\""
		fi
	done
	printf '%s}\n' "$s" >>"$out"
}

now() { echo "$EPOCHREALTIME"; }
# Every measurement is bounded: a hang is a failed measurement with its
# reason, never a VM that sits until the harness kills it.
LIMIT=${BENCH_LIMIT:-900}
bounded() { timeout -k 20 "$LIMIT" "$@"; }
# why RC: the reason for a failed measurement's exit code
why() { case "$1" in 124 | 137) echo "hung: no result in $LIMIT s, stopped" ;; *) echo "exited $1" ;; esac; }
elapsed() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", b - a }'; }

# install_failed CONTENDER WORKLOAD RC ERROR: when RC is not 0, the row of
# the failed install (and true: the caller goes on to the next workload).
install_failed() {
	[ "$3" != 0 ] || return 1
	emit kind=install contender="$1" workload="$2" error="$4"
}

# install_row CONTENDER WORKLOAD SECONDS [KEY=VALUE...]: the row of a
# measured install, with the erases counted around it (erase_begin/end).
install_row() {
	local c=$1 w=$2 s=$3
	shift 3
	emit kind=install contender="$c" workload="$w" seconds="$s" \
		erases_slot="$ER_SLOT" erases_total="$ER_TOTAL" "$@"
}

# ---- board --------------------------------------------------------------------
# vm-load-board loads every device of the layout (the NOR board keeps its
# env on a small NAND) and gives nandsim's partitions the layout's names in
# a view of /sys/class/mtd (flashd finds partitions by MTD name and opens
# the real /dev/mtdN); mtdram's partitions get real names from mtdpart.
# shellcheck disable=SC2086  # extra is "P=V P=V"
vm-load-board "$layout" $extra || die "vm-load-board $layout $extra failed"

part_dev() { # NAME: the partition's /dev/mtdN
	local d
	for d in /sys/class/mtd/mtd*; do
		[[ $d =~ /mtd[0-9]+$ ]] && [ "$(cat "$d/name")" = "$1" ] && { echo "/dev/${d##*/}"; return 0; }
	done
	return 1
}
DEV_ENV=$(part_dev u-boot-env) || die "no u-boot-env"
DEV_ENV2=$(part_dev u-boot-env-redund) || die "no u-boot-env-redund"
UBI=0
if [ "$variant" = ubi ]; then
	# the UBI board: slots are volumes of one UBI on the partition "ubi";
	# the erases counted "in the slot" are those of the whole partition
	# (UBI spreads a volume over any of its PEBs)
	UBI=1
	UBI_PART=$(part_dev ubi) || die "no MTD partition ubi of $layout: $(cat /proc/mtd)"
	mtdB=${UBI_PART#/dev/}
else
	DEV_B=$(part_dev rootfs-b) || die "no MTD partition for rootfs-b of $layout: $(cat /proc/mtd)"
	DEV_A=$(part_dev rootfs-a) || die "no rootfs-a"
	DEV_DATA=$(part_dev rootfs_data) || die "no rootfs_data"
	mtdB=${DEV_B#/dev/}
fi
ES=$(cat /sys/class/mtd/$mtdB/erasesize)
TYPE=$(cat /sys/class/mtd/$mtdB/type)
B_OFF=$(cat /sys/class/mtd/$mtdB/offset) B_SIZE=$(cat /sys/class/mtd/$mtdB/size)
ENV_SIZE=$(printf '0x%x' "$(cat /sys/class/mtd/${DEV_ENV#/dev/}/size)")
# the env copy's size from the layout when it is smaller than its
# partition (the UBI board: 128 KiB in a 512 KiB partition)
lenv=$(jq -r '.env.copies[0].size // empty' "$layout" 2>/dev/null)
[[ $lenv =~ ^0x[0-9a-fA-F]+$ ]] && [ $((lenv)) -lt $((ENV_SIZE)) ] && ENV_SIZE=$lenv
log "slot B = ${DEV_B:-a volume of $UBI_PART} ($TYPE, erase block $ES, offset $B_OFF), env $DEV_ENV + $DEV_ENV2"
emit kind=board type="$TYPE" erasesize="$ES" slot_b="${DEV_B:-$UBI_PART}" slot_b_blocks=$((B_SIZE / ES)) \
	params="$(for p in /sys/module/nandsim/parameters/{do_delays,erase_delay,programm_delay,access_delay,output_cycle,input_cycle}; do [ -r "$p" ] && printf '%s=%s ' "${p##*/}" "$(cat "$p")"; done)"

for m in loop squashfs mtdblock jffs2 overlay dm-mod; do modprobe -q "$m" || log "modprobe $m failed"; done
[ $UBI = 1 ] && { modprobe ubi && modprobe ubifs || die "no ubi/ubifs modules"; }

# /etc is the host's, read-only: an overlay makes fw_env.config and the
# contenders' configuration writable for this VM run only.
mkdir -p $tmp/etc-up $tmp/etc-work
mount -t overlay overlay -o lowerdir=/etc,upperdir=$tmp/etc-up,workdir=$tmp/etc-work /etc ||
	die "cannot make /etc writable (overlay)"
printf '%s 0x0 %s %s\n%s 0x0 %s %s\n' "$DEV_ENV" "$ENV_SIZE" "$ENV_SIZE" "$DEV_ENV2" "$ENV_SIZE" "$ENV_SIZE" \
	>/etc/fw_env.config
echo "bench 1.0" >/etc/hwrevision

# ---- erase counting (kprobes on the drivers, counted by hist triggers) ----------
# The counts live in the kernel's histogram map, not in the trace ring
# buffer: resetting an 8 MiB ring buffer (`: >trace`) locked the guest up
# for over 15 minutes under TCG. A hist trigger is cleared by removing it.
T=/sys/kernel/tracing
[ -d $T/events ] || mount -t tracefs tracefs $T 2>/dev/null
[ -d $T/events ] || T=/sys/kernel/debug/tracing
# One event per driver that holds a partition of the board: the NOR board
# keeps its env on a NAND chip (bench/nor-bench-96m.json).
PROBES=() HISTS=()
if [ "$TYPE" = nand ] || grep -q '"type": *"nand"' "$layout"; then
	PROBES+=('p:bench/erase_nand nand_erase_op blk=%si:u32') HISTS+=('hist:keys=blk:size=16384')
fi
if [ "$TYPE" != nand ]; then
	PROBES+=('p:bench/erase_ram ram_erase addr=+0(%si):u64 len=+8(%si):u64')
	HISTS+=('hist:keys=addr:vals=len:size=16384')
fi
KPROBE=1
for i in "${!PROBES[@]}"; do
	ev=${PROBES[$i]%% *} ev=${ev#p:}
	if ! echo "${PROBES[$i]}" >>$T/kprobe_events 2>/dev/null || [ ! -e "$T/events/$ev/hist" ]; then
		log "kprobe '${PROBES[$i]}' or its hist trigger could not be set: erase counts will be missing"
		KPROBE=0
	fi
done
EVENTS=()
for i in "${!PROBES[@]}"; do ev=${PROBES[$i]%% *}; EVENTS+=("${ev#p:}"); done
erase_begin() {
	[ $KPROBE = 1 ] || return 0
	local i
	for i in "${!EVENTS[@]}"; do
		echo "!${HISTS[$i]}" >>"$T/events/${EVENTS[$i]}/trigger" 2>/dev/null
		echo "${HISTS[$i]}" >>"$T/events/${EVENTS[$i]}/trigger" ||
			log "hist trigger on ${EVENTS[$i]} failed: erase counts will be wrong"
	done
}
# count_hist FILE ERASESIZE LO HI: "SLOT TOTAL" blocks erased (in [LO, HI) and all)
count_hist() {
	# one line per key: "{ blk: N } hitcount: H" or "{ addr: A } hitcount: H  len: L"
	awk -v es="$2" -v lo="$3" -v hi="$4" '
		/^\{ / {
			a = -1; n = 0
			for (i = 1; i <= NF; i++) {
				if ($i == "blk:") a = $(i + 1) * es
				if ($i == "addr:") a = $(i + 1) + 0
				if ($i == "hitcount:") n = $(i + 1)
				if ($i == "len:") n = int(($(i + 1) + es - 1) / es)
			}
			if (a < 0) next
			tot += n
			if (a >= lo && a < hi) slot += n
		}
		/^Dropped: [1-9]/ { lost = 1 }
		END { if (lost) print -1, -1; else printf "%d %d\n", slot, tot }' "$1"
}
# UBI erases PEBs it no longer needs in its background thread: wait until
# the chip has seen no erase for a second (at most 60 s), so that an
# install's erases are counted with it and not with the next one.
ubi_settle() {
	local i n last=-1
	[ $UBI = 1 ] && [ $KPROBE = 1 ] && [ -e "$T/events/bench/erase_nand/hist" ] || { sleep 1; return 0; }
	for i in $(seq 60); do
		n=$(awk '/hitcount:/ { for (i = 1; i <= NF; i++) if ($i == "hitcount:") t += $(i + 1) } END { print t + 0 }' \
			"$T/events/bench/erase_nand/hist" 2>/dev/null)
		[ "$n" = "$last" ] && return 0
		last=$n
		sleep 1
	done
}
# Sets ER_SLOT (blocks erased in slot B) and ER_TOTAL (all blocks, every chip).
erase_end() {
	ER_SLOT=-1 ER_TOTAL=-1
	[ $KPROBE = 1 ] || return 0
	[ $UBI = 1 ] && ubi_settle
	local i s t lo hi es
	ER_SLOT=0 ER_TOTAL=0
	for i in "${!EVENTS[@]}"; do
		lo=$B_OFF hi=$((B_OFF + B_SIZE)) es=$ES
		# the env NAND of a NOR board: its blocks count in the total only
		if [ "$TYPE" != nand ] && [ "${EVENTS[$i]}" = bench/erase_nand ]; then lo=-1 hi=-1 es=1; fi
		read -r s t < <(count_hist "$T/events/${EVENTS[$i]}/hist" "$es" "$lo" "$hi")
		echo "!${HISTS[$i]}" >>"$T/events/${EVENTS[$i]}/trigger" 2>/dev/null
		if [ "$s" = -1 ] || [ -z "$s" ]; then ER_SLOT=-1 ER_TOTAL=-1; continue; fi
		[ "$ER_SLOT" = -1 ] && continue
		ER_SLOT=$((ER_SLOT + s)) ER_TOTAL=$((ER_TOTAL + t))
	done
}

# ---- common per-install bookkeeping ---------------------------------------------
# A slot written outside flashd must lose flashd's block records of it
# (docs/bundle-format.md): they describe what flashd last wrote there.
drop_records_b() { rm -f "$tmp"/flashd/state/blocks-*-B-* "$tmp"/flashd/net-state-*/blocks-*-B-*; }
empty_slot_b() {
	drop_records_b
	if [ $UBI = 1 ]; then # a 0-byte volume update: the volume's LEBs unmapped and erased
		ubiupdatevol -t "$DEV_B" >/dev/null 2>&1 || die "ubiupdatevol -t $DEV_B failed"
		ubi_settle
		return
	fi
	flash_erase -q "$DEV_B" 0 0 >/dev/null 2>&1 || die "flash_erase $DEV_B failed"
}
# verified IMAGE: the slot holds the image (plain read; no bad blocks here)
verified() {
	local n
	n=$(stat -c %s "$1")
	cmp -s -n "$n" "$1" "$DEV_B" && echo yes || echo no
}
# The floor and flashd (the rows the targets compare) are timed REPS
# times, the median counts; the VM shares the host with other work.
REPS=3
[ "$quick" = 1 ] && REPS=1
median() { tr ' ' '\n' <<<"$*" | grep . | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
maxof() { tr ' ' '\n' <<<"$*" | grep . | sort -g | tail -1; }
# restore_v1: slot B holds image 1 again (untimed; what an install leaves)
restore_v1() {
	drop_records_b
	if [ $UBI = 1 ]; then
		ubiupdatevol "$DEV_B" "$img_v1" && ubi_settle
	elif [ "$TYPE" = nand ]; then
		flash_erase -q "$DEV_B" 0 $(( (size + ES - 1) / ES )) && nandwrite -q -p "$DEV_B" "$img_v1"
	else
		flashcp "$img_v1" "$DEV_B"
	fi >/dev/null 2>&1 || die "cannot restore image 1 in $DEV_B"
}
img_v1=$tmp/v1.img img_v2=$tmp/v2.img
size=$(stat -c %s "$work/v1.img")
cp "$work/v1.img" "$img_v1" && cp "$work/v2.img" "$img_v2" || die "cannot copy the images to $tmp"
workloads="full reinstall changed"
image_for() { case "$1" in full|reinstall) echo 1 ;; changed) echo 2 ;; esac; }

# ---- provisioning: env + slot A, through flashd's own provisioning ---------------
layout_base=$(basename "$layout" .json)
cp "$work/flashd-$layout_base-v1.bundle" "$work/flashd-$layout_base-v2.bundle" $tmp/ ||
	die "flashd bundles for $layout_base missing in $work"
log "provisioning the board (flashctl provision, untimed)"
t0=$(now)
prov_error=""
if ! "$FLASHCTL" provision --layout "$layout" --bundle "$tmp/flashd-$layout_base-v1.bundle" \
	--keyring "$work/keyring" system >$tmp/provision.log 2>&1; then
	cat $tmp/provision.log
	# the other contenders are still measured; slot A and the overlay
	# are laid out with mtd-utils so that boot assembly has something
	prov_error="flashctl provision failed: $(grep -m1 'flashctl:' $tmp/provision.log)"
	log "$prov_error"
	[ $UBI = 1 ] && die "$prov_error (the UBI board is laid out by flashctl provision only)"
	if [ "$TYPE" = nand ]; then
		flash_erase -q "$DEV_A" 0 0 && nandwrite -q -p "$DEV_A" "$tmp/v1.img"
	else
		flashcp "$tmp/v1.img" "$DEV_A"
	fi >/dev/null 2>&1 || die "cannot write slot A with mtd-utils either"
	flash_erase -q -j "$DEV_DATA" 0 0 >/dev/null 2>&1 || die "flash_erase -j $DEV_DATA failed"
fi
emit kind=setup what=provision seconds="$(elapsed "$t0" "$(now)")" error="$prov_error"
# UBI: the slots' root volumes, attached by the provisioning
ubi_vol_dev() { # NAME
	local d
	for d in /sys/class/ubi/ubi*_*; do
		[ "$(cat "$d/name")" = "$1" ] && { echo "/dev/${d##*/}"; return 0; }
	done
	return 1
}
if [ $UBI = 1 ]; then
	DEV_A=$(ubi_vol_dev rootfs_a) && DEV_B=$(ubi_vol_dev rootfs_b) ||
		die "no UBI volumes rootfs_a/rootfs_b after provisioning: $(ls /sys/class/ubi)"
	log "UBI slots: A = $DEV_A, B = $DEV_B"
fi

# ---- floor: mtd-utils ------------------------------------------------------------
# run_readback: reading the image back out of slot B with mtd-utils (nanddump
# on NAND, a plain read of the MTD or UBI volume otherwise), REPS times: the
# cost of the read-back the floor leaves out and flashd keeps, so the full
# install's target can be set against floor + read-back.
run_readback() {
	local r t0 t1 rc=0 times="" how="nanddump -l IMAGE"
	local cmd=(nanddump -q -l "$size" -f /dev/null "$DEV_B")
	if [ "$TYPE" != nand ] || [ $UBI = 1 ]; then
		how="dd of the image's blocks"
		cmd=(dd if="$DEV_B" of=/dev/null bs="$ES" count=$(( (size + ES - 1) / ES )))
	fi
	for r in $(seq $REPS); do
		t0=$(now)
		bounded "${cmd[@]}" >$tmp/readback.log 2>&1
		rc=$?
		t1=$(now)
		[ $rc = 0 ] || break
		times="$times $(elapsed "$t0" "$t1")"
	done
	if [ $rc != 0 ]; then
		emit kind=readback error="$(why $rc): $(tail -c 300 $tmp/readback.log)"
	else
		emit kind=readback seconds="$(median $times)" runs="${times# }" how="$how"
	fi
}
run_floor() {
	local w img t0 t1 rc r times rss
	for w in $workloads; do
		img=$tmp/v$(image_for "$w").img
		times="" rss="" rc=0
		for r in $(seq $REPS); do
			[ "$w" = full ] && empty_slot_b
			erase_begin
			t0=$(now)
			if [ $UBI = 1 ]; then
				# one volume update, nothing read back: what any tool must do
				bounded /usr/bin/time -f %M -o $tmp/rss ubiupdatevol "$DEV_B" "$img" >$tmp/floor.log 2>&1
			elif [ "$TYPE" = nand ]; then
				# erase exactly the blocks the image needs (no bad blocks
				# here), then write: the least work any tool can do
				bounded /usr/bin/time -f %M -o $tmp/rss sh -c 'flash_erase -q "$1" 0 "$3" && nandwrite -q -p "$1" "$2"' \
					sh "$DEV_B" "$img" $(( (size + ES - 1) / ES )) >$tmp/floor.log 2>&1
			else
				bounded /usr/bin/time -f %M -o $tmp/rss flashcp "$img" "$DEV_B" >$tmp/floor.log 2>&1
			fi
			rc=$?
			t1=$(now)
			erase_end
			[ $rc = 0 ] || break
			times="$times $(elapsed "$t0" "$t1")" rss="$rss $(tail -1 $tmp/rss)"
		done
		install_failed floor "$w" $rc "$(why $rc): $(tail -c 300 $tmp/floor.log)" && continue
		install_row floor "$w" "$(median $times)" runs="${times# }" rss_kib="$(maxof $rss)" \
			verified="$(verified "$img")" \
			how="$(if [ $UBI = 1 ]; then echo "ubiupdatevol (UBI_IOCVOLUP of the image)"
				elif [ "$TYPE" = nand ]; then echo "flash_erase (image-size blocks) + nandwrite -p"
				else echo "flashcp (erases image-size blocks, writes, verifies)"; fi)"
	done
	run_readback
}

# ---- flashd ----------------------------------------------------------------------
FD=$tmp/flashd
fd_pid=""
fd_start() {
	rm -f $FD/flashd.sock
	/usr/bin/time -f %M -o $FD/daemon.rss "$FLASHD" -c $FD/flashd.conf >>$FD/flashd.log 2>&1 &
	fd_time=$!
	local i
	for i in $(seq 200); do
		fd_pid=$(cat /proc/$fd_time/task/$fd_time/children 2>/dev/null | awk '{print $1}')
		[ -n "$fd_pid" ] && [ -S $FD/flashd.sock ] && return 0
		sleep 0.05
	done
	tail -n 20 $FD/flashd.log
	die "flashd did not start"
}
fd_stop() {
	[ -n "$fd_pid" ] && kill "$fd_pid" 2>/dev/null
	wait "$fd_time" 2>/dev/null
	fd_pid=""
}
# sampler: VmHWM of flashd and its children (the install worker). Every
# 250 ms, not 10: under TCG a Python walk of /proc every 10 ms took a vCPU
# from the timed install (flashd's full install ran 1.5x the floor with it,
# its runs 11-16 s) while the other contenders ran without one. VmHWM is
# the kernel's high-water mark, so a late sample still sees the peak.
sampler_start() {
	rm -f $tmp/sampler.ready $tmp/sampler.stop
	"$PY" "$B/rss-sample.py" "$1" $tmp/sampler.json $tmp/sampler.ready $tmp/sampler.stop 0.25 &
	sampler=$!
	local i
	for i in $(seq 200); do [ -f $tmp/sampler.ready ] && return 0; sleep 0.05; done
	log "rss sampler did not start"
}
sampler_stop() { touch $tmp/sampler.stop; wait "$sampler" 2>/dev/null; }

# fd_conf STATE_DIR: flashd.conf for the board (booted slot A, the
# system's MTD partitions) with its block records in STATE_DIR
fd_conf() {
	mkdir -p "$1"
	echo "flashd.slot=A" >$FD/cmdline
	cat >$FD/flashd.conf <<EOT
[flashd]
layout=$layout
target=system
keyring=$work/keyring
socket=$FD/flashd.sock
state-dir=$1
cmdline=$FD/cmdline
EOT
}

restore_v1_flashd() {
	fd_start
	FLASHD_SOCKET=$FD/flashd.sock bounded "$FLASHCTL" -q install "$tmp/flashd-$layout_base-v1.bundle" \
		>$FD/restore.log 2>&1 || { fd_stop; restore_v1; return; }
	fd_stop
}

run_flashd() {
	local w b t0 t1 rc rec lat=${1:-}
	if [ -n "$prov_error" ]; then
		for w in $workloads; do emit kind=install contender=flashd workload="$w" error="$prov_error"; done
		return
	fi
	fd_conf $FD/state
	local times rss crss r n idle
	for w in $workloads ${lat:+latency}; do
	times="" rss="" crss="" idle="" rc=0 n=$REPS
	[ "$w" = latency ] && n=1
	for r in $(seq $n); do
		b=$tmp/flashd-$layout_base-v$(image_for "${w/latency/full}").bundle
		[ "$w" = full ] || [ "$w" = latency ] && empty_slot_b
		# later runs of "changed": slot B back to image 1 through flashd
		# itself (untimed), so that its block record is what it would be
		[ "$w" = changed ] && [ "$r" -gt 1 ] && restore_v1_flashd
		fd_start
		# the idle daemon: started, answered one status call, nothing to do
		FLASHD_SOCKET=$FD/flashd.sock "$FLASHCTL" status >/dev/null 2>&1
		idle="$idle $(awk '/^VmRSS:/ {print $2}' /proc/$fd_pid/status 2>/dev/null)"
		# not while latency is measured: a sampler waking every 250 ms
		# takes a vCPU from the daemon or the client (1000 GetStatus
		# calls last ~1 s, 1000 GetInfo a quarter of it: the sampler's
		# wake-ups alone set GetStatus's p99)
		[ "$w" = latency ] || sampler_start "$fd_pid"
		if [ "$w" = latency ]; then
			rm -f $tmp/lat.stop
			"$PY" "$B/status-latency.py" $FD/flashd.sock $tmp/lat.json $tmp/lat.stop idle
			"$PY" "$B/status-latency.py" $FD/flashd.sock $tmp/lat-info.json $tmp/lat.stop idle \
				org.varlink.service.GetInfo
			"$PY" "$B/status-latency.py" $FD/flashd.sock $tmp/lat-run.json $tmp/lat.stop &
			latpid=$!
			sleep 1 # python start-up under TCG, so that the loop runs before the install
		fi
		erase_begin
		t0=$(now)
		FLASHD_SOCKET=$FD/flashd.sock bounded /usr/bin/time -f %M -o $FD/client.rss \
			"$FLASHCTL" -q install "$b" >$FD/install.log 2>&1
		rc=$?
		t1=$(now)
		erase_end
		if [ "$w" = latency ]; then
			touch $tmp/lat.stop
			wait $latpid
		fi
		[ "$w" = latency ] || sampler_stop
		fd_stop
		[ $rc = 0 ] || break
		times="$times $(elapsed "$t0" "$t1")" rss="$rss $(tail -1 $FD/daemon.rss)" crss="$crss $(tail -1 $FD/client.rss)"
	done
		install_failed flashd "$w" $rc \
			"flashctl install $(why $rc): $(tail -c 300 $FD/install.log) / $(tail -n 3 $FD/flashd.log)" &&
			continue
		rec=$(jq -c '.[0] | {bytes, erases, blocks_skipped, result}' $FD/state/installs.json 2>/dev/null)
		if [ "$w" = latency ]; then
			emit kind=latency contender=flashd seconds="$(elapsed "$t0" "$t1")" \
				idle="$(cat $tmp/lat.json)" during="$(cat $tmp/lat-run.json)" \
				getinfo="$(cat $tmp/lat-info.json)"
			continue
		fi
		install_row flashd "$w" "$(median $times)" runs="${times# }" \
			own_erases="$(jq -r '.erases' <<<"$rec")" own_skipped="$(jq -r '.blocks_skipped' <<<"$rec")" \
			own_bytes="$(jq -r '.bytes' <<<"$rec")" own_result="$(jq -r '.result' <<<"$rec")" \
			rss_kib="$(maxof $rss)" rss_detail="$(cat $tmp/sampler.json)" idle_rss_kib="$(maxof $idle)" \
			client_rss_kib="$(maxof $crss)" verified="$(verified "$tmp/v$(image_for "$w").img")" \
			how="flashctl install (daemon + worker; $([ $UBI = 1 ] && echo "UBI_IOCVOLUP of the whole image: nothing skipped; read back by the kernel's check of the static volume" || echo "changed blocks only, each written block read back"))"
	done
}

# ---- RAUC -------------------------------------------------------------------------
RD=$tmp/rauc
run_rauc() {
	local w b t0 t1 rc spid i
	command -v rauc >/dev/null || { emit kind=install contender=rauc workload=all error="rauc is not installed"; return; }
	RTYPE=nor
	[ "$TYPE" = nand ] && RTYPE=nand
	[ $UBI = 1 ] && RTYPE=ubivol
	mkdir -p $RD/mnt $RD/data
	cp "$work/rauc-v1.raucb" "$work/rauc-v2.raucb" $RD/ || { emit kind=install contender=rauc workload=all error="rauc bundles missing"; return; }
	# Debian's rauc ships no D-Bus policy; a private system bus for the VM.
	cat >$RD/bus.conf <<EOT
<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>system</type>
  <listen>unix:path=$RD/bus.sock</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow own="*"/>
    <allow send_destination="*" eavesdrop="true"/>
    <allow eavesdrop="true"/>
  </policy>
</busconfig>
EOT
	dbus-daemon --config-file=$RD/bus.conf --fork --print-pid >$RD/bus.pid 2>$RD/bus.log ||
		{ emit kind=install contender=rauc workload=all error="dbus-daemon: $(cat $RD/bus.log)"; return; }
	export DBUS_SYSTEM_BUS_ADDRESS=unix:path=$RD/bus.sock
	cat >$RD/system.conf <<EOT
[system]
compatible=flashd-bench
bootloader=uboot
statusfile=$RD/data/status.raucs
mountprefix=$RD/mnt

[keyring]
path=$work/cms.pem

[slot.rootfs.0]
device=$DEV_A
type=$RTYPE
bootname=A

[slot.rootfs.1]
device=$DEV_B
type=$RTYPE
bootname=B
EOT
	for w in $workloads; do
		b=$RD/rauc-v$(image_for "$w").raucb
		[ "$w" = full ] && empty_slot_b
		/usr/bin/time -f %M -o $RD/service.rss rauc -c $RD/system.conf service --override-boot-slot=A \
			>>$RD/service.log 2>&1 &
		spid=$!
		for i in $(seq 100); do
			(rauc -c $RD/system.conf status) >/dev/null 2>&1 && break
			sleep 0.1
		done
		erase_begin
		t0=$(now)
		bounded /usr/bin/time -f %M -o $RD/client.rss rauc -c $RD/system.conf install "$b" >$RD/install.log 2>&1
		rc=$?
		t1=$(now)
		erase_end
		kill "$(cat /proc/$spid/task/$spid/children 2>/dev/null | awk '{print $1}')" 2>/dev/null
		wait $spid 2>/dev/null
		install_failed rauc "$w" $rc \
			"rauc install $(why $rc): $(grep -v '^installing' $RD/install.log | tail -c 400)" && continue
		install_row rauc "$w" "$(elapsed "$t0" "$t1")" rss_kib="$(tail -1 $RD/service.rss)" \
			client_rss_kib="$(tail -1 $RD/client.rss)" verified="$(verified "$tmp/v$(image_for "$w").img")" \
			how="rauc service + rauc install (plain bundle: loop+squashfs mount; $(if [ $UBI = 1 ]; then echo "slot type ubivol: UBI_IOCVOLUP"
				elif [ "$TYPE" = nand ]; then echo "flash_erase + nandwrite"
				else echo "flash_erase + flashcp"; fi))"
	done
	kill "$(cat $RD/bus.pid)" 2>/dev/null
	unset DBUS_SYSTEM_BUS_ADDRESS
}

# ---- SWUpdate -------------------------------------------------------------------------
SD=$tmp/swupdate
run_swupdate() {
	local w s t0 t1 rc bl=() m
	command -v swupdate >/dev/null || { emit kind=install contender=swupdate workload=all error="swupdate is not installed"; return; }
	mkdir -p $SD
	# SWUpdate attaches UBI on every MTD it is not told to leave alone
	if [ $UBI = 1 ]; then
		for m in u-boot u-boot-env u-boot-env-redund; do
			m=$(part_dev $m) && bl+=("${m#/dev/mtd}")
		done
		bl=(-b "${bl[*]}")
	fi
	for w in $workloads; do
		s=$work/swu-v$(image_for "$w")-$([ $UBI = 1 ] && echo ubi || echo "${mtdB}").swu
		[ -f "$s" ] || { emit kind=install contender=swupdate workload="$w" error="no $s (the .swu names the MTD number; rootfs-b is $mtdB here)"; continue; }
		cp "$s" $SD/u.swu
		[ "$w" = full ] && empty_slot_b
		erase_begin
		t0=$(now)
		bounded /usr/bin/time -f %M -o $SD/rss swupdate "${bl[@]}" -B uboot -k "$work/cms.pem" -H bench:1.0 -i $SD/u.swu \
			>$SD/install.log 2>&1
		rc=$?
		t1=$(now)
		erase_end
		install_failed swupdate "$w" $rc \
			"swupdate $(why $rc): $(grep -E 'ERROR|error' $SD/install.log | tail -n 4)" && continue
		install_row swupdate "$w" "$(elapsed "$t0" "$t1")" rss_kib="$(tail -1 $SD/rss)" \
			verified="$(verified "$tmp/v$(image_for "$w").img")" \
			how="swupdate -i ($([ $UBI = 1 ] && echo "ubivol handler: UBI_IOCVOLUP" || echo "flash handler, libmtd"); one process)"
	done
}

# ---- boot assembly -----------------------------------------------------------------
# Slot A (provisioned) and the JFFS2 overlay, assembled N times each way,
# alternating. Bare: the mount commands of an init script. flashd boot:
# --no-exec (everything up to the mounted union, no switch_root).
boot_bare() {
	mount -t squashfs -o ro "$1" $tmp/bare/rom &&
	mount -t jffs2 "mtd${DEV_DATA#/dev/mtd}" $tmp/bare/data &&
	mkdir -p $tmp/bare/data/upper $tmp/bare/data/work &&
	mount -t overlay overlay -o lowerdir=$tmp/bare/rom,upperdir=$tmp/bare/data/upper,workdir=$tmp/bare/data/work $tmp/bare/root
}
boot_flashd() {
	"$FLASHD" boot --mode initramfs --layout "$layout" --cmdline $tmp/boot.cmdline \
		--stage $tmp/st --state $tmp/st.json --no-exec >$tmp/boot.out 2>$tmp/boot.err
}
umount_under() {
	local m
	for m in $(awk -v p="$1" 'index($2, p) == 1 {print $2}' /proc/mounts | sort -r); do
		umount "$m" || return 1
	done
}
# First boot of a board whose data partition is erased: flashd boot formats
# it (erase with cleanmarkers) and assembles; the bare equivalent is
# `flash_erase -j` + the mount commands. Alternating, 3 runs each.
first_boot() { # BLKDEV HAVE_FLASHD_BOOT
	local i t0 t1 rc fb="" bare=""
	for i in 1 2 3; do
		flash_erase -q "$DEV_DATA" 0 0 >/dev/null 2>&1 || { emit kind=boot contender=bare-first error="flash_erase $DEV_DATA failed"; return; }
		t0=$(now)
		bounded flash_erase -q -j "$DEV_DATA" 0 0 >/dev/null 2>&1 && boot_bare "$1"
		rc=$? t1=$(now)
		umount_under $tmp/bare/
		[ $rc = 0 ] || { emit kind=boot contender=bare-first error="flash_erase -j + mounts $(why $rc) (run $i)"; return; }
		bare="$bare $(elapsed "$t0" "$t1")"
		[ "$2" = 1 ] || continue
		flash_erase -q "$DEV_DATA" 0 0 >/dev/null 2>&1
		t0=$(now); boot_flashd; rc=$?; t1=$(now)
		umount_under $tmp/st/
		[ $rc = 0 ] || { emit kind=boot contender=flashd-first error="flashd boot on an erased overlay failed (run $i): $(tail -c 300 $tmp/boot.err)"; return; }
		jq -e '.overlays[0].formatted == true or .overlay.formatted == true' $tmp/st.json >/dev/null 2>&1 ||
			log "first boot run $i: state file does not say the overlay was formatted"
		fb="$fb $(elapsed "$t0" "$t1")"
	done
	emit kind=boot contender=bare-first runs="${bare# }" \
		how="flash_erase -j (erase + cleanmarkers) + the bare mounts, on an erased data partition"
	[ -n "$fb" ] && emit kind=boot contender=flashd-first runs="${fb# }" \
		how="flashd boot --no-exec on an erased data partition (classify, format with cleanmarkers, union)"
}
run_boot() {
	local n=7 i t0 t1 rc blk bare="" fb="" have_fb=0
	mkdir -p $tmp/bare/rom $tmp/bare/data $tmp/bare/root $tmp/st
	blk=/dev/mtdblock${DEV_A#/dev/mtd}
	echo "flashd.slot=A" >$tmp/boot.cmdline
	if "$FLASHD" boot --help 2>&1 | grep -q 'Usage: flashd boot'; then
		have_fb=1
		# the first boot formats nothing (provisioned) but creates the
		# image's overlay generation: not what a normal boot does
		if ! boot_flashd; then
			emit kind=boot contender=flashd error="flashd boot failed: $(tail -c 300 $tmp/boot.err)"
			have_fb=0
		fi
		umount_under $tmp/st/
	fi
	for i in $(seq $n); do
		t0=$(now); boot_bare "$blk"; rc=$?; t1=$(now)
		umount_under $tmp/bare/
		[ $rc = 0 ] || { emit kind=boot contender=bare error="the bare mounts failed (run $i)"; return; }
		bare="$bare $(elapsed "$t0" "$t1")"
		[ $have_fb = 1 ] || continue
		t0=$(now); boot_flashd; rc=$?; t1=$(now)
		umount_under $tmp/st/
		if [ $rc != 0 ]; then
			emit kind=boot contender=flashd error="flashd boot failed (run $i): $(tail -c 300 $tmp/boot.err)"
			have_fb=0
			continue
		fi
		fb="$fb $(elapsed "$t0" "$t1")"
	done
	first_boot "$blk" "$have_fb"
	emit kind=boot contender=bare runs="${bare# }" \
		how="mount squashfs (mtdblock) + mount jffs2 + mkdir upper/work + mount overlay"
	if [ $have_fb = 1 ]; then
		emit kind=boot contender=flashd runs="${fb# }" \
			how="flashd boot --mode initramfs --no-exec (env, root, JFFS2 classify + probe, generation, union, state)" \
			ms_total="$(jq -r '.ms_total // empty' $tmp/st.json 2>/dev/null)" \
			root_kind="$(jq -r '.root.kind // empty' $tmp/st.json 2>/dev/null)"
	elif ! "$FLASHD" boot --help 2>&1 | grep -q 'Usage: flashd boot'; then
		emit kind=boot contender=flashd error="not measured: flashd boot not built yet"
	fi
}

# shellcheck source=bench/guest-net.sh
. "$B/guest-net.sh"

for c in ${contenders//,/ }; do
	log "contender $c"
	case "$c" in
	floor) run_floor ;;
	flashd) run_flashd "$([ "$variant" = nand-delay ] || [ "$quick" = 1 ] && echo latency)" ;;
	rauc) run_rauc ;;
	swupdate) run_swupdate ;;
	flashd-http | swupdate-http)
		# their workloads are raw-slot ones (resumed and adaptive downloads)
		if [ $UBI = 1 ]; then
			emit kind=install contender="$c" workload=all \
				error="not run on the UBI board: UBI slots take whole-volume updates"
		elif [ "$c" = flashd-http ]; then
			run_flashd_http
		else
			run_swupdate_http
		fi ;;
	esac
done
[ -n "${net_httpd:-}" ] && kill "$net_httpd" 2>/dev/null
# the UBI board's boot (ubiblock + squashfs, UBIFS overlay) is checked by
# tests/vm/test-provision-ubi.sh; its timing is not compared here
[ $UBI = 1 ] || run_boot
log "done"
exit 0
