#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The real `flashd boot --no-exec` in a private mount namespace on the
# host (squashfs slot images on loop, tmpfs overlays; no MTD needed):
# what the state file says when the slot cannot be told (issue 14.7), the
# command line rules (14.8), a generation that cannot be made (14.3: the
# union stays writable, the state says degraded and why), every overlay
# layer in the state (14.6), the initramfs-tools mode (issue 34.5: the
# union on --root, exit, no switch). Needs root, unshare, mksquashfs, jq, and the
# squashfs, overlay and loop drivers; exits 77 without them.
. "$(dirname "$0")/../lib/common.sh"
[ "$(id -u)" = 0 ] || skip "needs root (mounts in a private namespace)"
need unshare mksquashfs jq
grep -qw squashfs /proc/filesystems || modprobe squashfs 2>/dev/null || skip "no squashfs"
grep -qw overlay /proc/filesystems || modprobe overlay 2>/dev/null || skip "no overlayfs"
[ -e /dev/loop-control ] || skip "no loop driver"

T=$(mktemp -d /tmp/test-boot-state.XXXXXX)
trap 'rm -rf "$T"' EXIT
ok() { echo "ok: $*"; }
expect() { # DESC ACTUAL EXPECTED
	if [ "$2" = "$3" ]; then ok "$1"; else check_fail "$1: got '$2', expected '$3'"; fi
}

for s in A B; do
	mkdir -p "$T/img$s/etc/flashd" "$T/img$s/var" "$T/img$s/overlay" "$T/img$s/rom"
	echo "image $s" >"$T/img$s/etc/image"
	mksquashfs "$T/img$s" "$T/$s.sqfs" -quiet -noappend >/dev/null || skip "mksquashfs failed"
done

# layout OVERLAYS_JSON
layout() {
	cat <<EOT
{
	"board": "host test (file slots, tmpfs overlays)",
	"compatible": "flashd,test-host",
	"devices": [ { "name": "nor0", "type": "nor", "size": "16MiB", "erase_block": "64KiB" } ],
	"partitions": [
		{ "name": "u-boot-env", "offset": "0x0", "size": "64KiB" },
		{ "name": "u-boot-env-redund", "offset": "0x10000", "size": "64KiB" },
		{ "name": "data", "offset": "0x20000", "size": "-" }
	],
	"env": { "copies": [
		{ "partition": "u-boot-env", "offset": "0", "size": "0x10000" },
		{ "partition": "u-boot-env-redund", "offset": "0", "size": "0x10000" } ] },
	"slots": [ { "name": "rootfs", "image": "squashfs", "slots": {
		"A": { "rootfs": { "storage": "file", "path": "$T/A.sqfs" } },
		"B": { "rootfs": { "storage": "file", "path": "$T/B.sqfs" } } } } ],
	"overlays": $1
}
EOT
}
layout '[ { "path": "/", "type": "tmpfs" } ]' >"$T/root.json"
layout '[ { "path": "/etc", "type": "tmpfs" }, { "path": "/var", "type": "tmpfs" } ]' >"$T/split.json"
# 4 KiB of tmpfs: the generation directory is made, its record is not
layout '[ { "path": "/", "type": "tmpfs", "size": "4KiB" } ]' >"$T/full.json"

# run LAYOUT CMDLINE [CHECK-SCRIPT [MODE-ARGS]]: flashd boot in a private
# namespace; CHECK-SCRIPT runs in the namespace after it (the union is at
# $T/st/root); MODE-ARGS default to initramfs mode with --no-exec
run() {
	printf '%s\n' "$2" >"$T/cmdline"
	unshare -m --propagation private bash -c '
		"$1" boot ${6:---mode initramfs --no-exec} --layout "$2" --cmdline "$3" --stage "$4/st" \
			--state "$4/state.json" >"$4/out" 2>"$4/err"
		echo $? >"$4/rc"
		[ -z "$5" ] || bash -c "$5" >"$4/check" 2>&1
	' run "$FLASHD" "$1" "$T/cmdline" "$T" "${3:-}" "${4:-}"
	rc=$(cat "$T/rc")
}
state() { jq -r "$1" "$T/state.json" 2>/dev/null; }

# ---- 14.7: slot errors leave a state with result failed, never the old one
for cl in "quiet root=/dev/ram0" "flashd.slot=C" "flashd.slot="; do
	echo '{"result": "ok", "stale": true}' >"$T/state.json"
	run "$T/root.json" "$cl"
	expect "[$cl] exit status" "$rc" 1
	expect "[$cl] state result" "$(state .result)" failed
	expect "[$cl] stale state replaced" "$(state .stale)" null
	[ "$(state .error)" != null ] && ok "[$cl] error recorded: $(state .error)" ||
		check_fail "[$cl] no error in the state"
done
echo '{"result": "ok", "stale": true}' >"$T/state.json"
run "$T/missing.json" "flashd.slot=A"
expect "missing layout: state result" "$(state .result)" failed

# ---- 14.8: command line
run "$T/root.json" "flashd.slot=A -- flashd.slot=B"
expect "words after -- are init's: exit" "$rc" 0
expect "words after -- are init's: slot" "$(state .slot)" A
run "$T/root.json" "flashd.slot= rauc.slot=B"
expect "empty flashd.slot= falls through to rauc.slot=" "$(state .slot)" B
expect "... booted_by" "$(state .booted_by)" rauc.slot

# ---- 14.3: the generation cannot be made: writable union, loud, degraded
run "$T/full.json" "flashd.slot=A" 'echo written >'"$T"'/st/root/etc/new && cat '"$T"'/st/root/etc/new'
expect "overlay full: exit" "$rc" 0
expect "overlay full: union writable" "$(cat "$T/check")" written
expect "overlay full: result" "$(state .result)" degraded
expect "overlay full: degraded" "$(state .degraded)" true
expect "overlay full: layer fallback" "$(state .overlay.fallback)" true
expect "overlay full: not persistent" "$(state .overlay.persistent)" false
expect "overlay full: writable" "$(state .overlay.writable)" true
state '.overlay.generation_error' | grep -q "No space left" ||
	check_fail "overlay full: generation_error: $(state .overlay.generation_error)"
state '.warnings[]' | grep -q "NOT PERSISTENT" || check_fail "overlay full: no warning: $(state .warnings)"
grep -q "DEGRADED" "$T/err" || check_fail "overlay full: no DEGRADED on stderr"
! ls -d "$T"/st/overlay/*.tmp 2>/dev/null || check_fail "overlay full: a .tmp is left"

# ---- 14.6: every layer, and "overlay" is the layout's first
run "$T/split.json" "flashd.slot=A" 'echo e >'"$T"'/st/root/etc/x && echo v >'"$T"'/st/root/var/y && echo ok'
expect "split: exit" "$rc" 0
expect "split: both layers writable" "$(cat "$T/check")" ok
expect "split: layers in the state" "$(state '.overlays | length')" 2
expect "split: overlays[].path" "$(state '[.overlays[].path] | join(",")')" "/etc,/var"
expect "split: overlay is the layout's first" "$(state .overlay.path)" /etc

# ---- a healthy boot: ok, not degraded
run "$T/root.json" "flashd.slot=B" 'cat '"$T"'/st/root/etc/image'
expect "healthy: image" "$(cat "$T/check")" "image B"
expect "healthy: result" "$(state .result)" ok
expect "healthy: degraded" "$(state .degraded)" false

# ---- 34.5: initramfs-tools mode: the union on --root (${rootmnt}), then
# exit 0 and leave init-bottom and run-init to initramfs-tools' /init
mkdir -p "$T/rootmnt"
itools="--mode initramfs-tools --root $T/rootmnt"
run "$T/root.json" "flashd.slot=A" 'cat '"$T"'/rootmnt/etc/image; grep -c " '"$T"'/rootmnt/rom squashfs " /proc/self/mounts; echo w >'"$T"'/rootmnt/etc/w && echo writable' "$itools"
expect "initramfs-tools: exit (no switch, no exec)" "$rc" 0
expect "initramfs-tools: the union on --root, /rom in it, writable" "$(cat "$T/check" | tr '\n' ' ')" "image A 1 writable "
expect "initramfs-tools: state mode" "$(state .mode)" initramfs-tools
expect "initramfs-tools: state result" "$(state .result)" ok
run "$T/root.json" "flashd.slot=C" 'grep -c " '"$T"'/rootmnt " /proc/self/mounts' "$itools"
expect "initramfs-tools, no such slot: exit 1 (the script panics)" "$rc" 1
expect "initramfs-tools, no such slot: nothing on --root" "$(cat "$T/check")" 0
run "$T/root.json" "flashd.slot=A" "" "--mode initramfs --root $T/rootmnt"
expect "--root in initramfs mode: usage error" "$rc" 2

check_done
echo "all checks passed"
