# SPDX-License-Identifier: LGPL-2.1-or-later
# shellcheck shell=bash
# Helpers for tests/vm/*.sh, which run as root inside the harness VM.
# Source it: . "$top_srcdir/tests/lib/vm.sh" (common.sh comes with it).
# Exit statuses: 0 pass, 77 skip (a kernel module or device is missing),
# anything else fail. Every helper that checks something fails the test
# with a message naming what was compared and where.

. "$top_srcdir/tests/lib/common.sh"
VM_TEST_NAME=${0##*/}

# tests/lib/daemon.sh's readiness probe: flashctl, not python (slow under TCG)
DAEMON_PROBE=flashctl

# the VM tests' names for common.sh's fail and skip
vm_fail() { fail "$@"; }
# tests/lib/daemon.sh's check of the replies: the VM tests end without check_done
REPLY_CHECK_FAIL=vm_fail
vm_skip() { skip "$@"; }
vm_log() { echo "--- $*"; }

# Run a command, fail the test (with its output) when it fails.
vm_run() {
	local out rc
	out=$("$@" 2>&1); rc=$?
	[ $rc = 0 ] || vm_fail "'$*' exited $rc: $out"
	[ -n "$out" ] && printf '%s\n' "$out"
	return 0
}

# Run a command that must fail; its output is printed.
vm_run_fails() {
	local out rc
	out=$("$@" 2>&1); rc=$?
	[ $rc != 0 ] || vm_fail "'$*' succeeded but should have failed: $out"
	printf '%s\n' "$out"
}

vm_expect_eq() { # ACTUAL EXPECTED WHAT
	[ "$1" = "$2" ] || vm_fail "$3: got '$1', expected '$2'"
}

vm_need_module() {
	local m
	# one modprobe for all (a process costs ~0.12 s under TCG); one per
	# module only to name the missing one
	modprobe -q -n -a "$@" 2>/dev/null && return 0
	for m in "$@"; do
		modprobe -q -n "$m" 2>/dev/null || vm_skip "kernel $(uname -r) has no module $m"
	done
}

# vm_sysfs mtdN ATTR: /sys/class/mtd/mtdN/ATTR
vm_sysfs() {
	local f="/sys/class/mtd/$1/$2"
	[ -r "$f" ] || vm_fail "$f: missing"
	printf '%s\n' "$(<"$f")"     # no cat: a process costs ~0.2 s under TCG
}

# vm_mtd_by_name NAME: the /dev/mtdN whose MTD name is NAME.
vm_mtd_by_name() {
	local d n
	for d in /sys/class/mtd/mtd*; do
		case "$d" in *ro) continue ;; esac
		read -r n <"$d/name"    # no cat: a process costs ~0.2 s under TCG
		[ "$n" = "$1" ] && { echo "/dev/${d##*/}"; return 0; }
	done
	vm_fail "no MTD device named '$1' in /proc/mtd: $(tr '\n' ';' </proc/mtd)"
}

# A flashctl command must exist (be in its group's --help); a missing one
# is a failure, not a skip: these tests are what the command is for.
vm_need_flashctl() { # GROUP CMD
	[ -x "$FLASHCTL" ] || vm_fail "$FLASHCTL: not built"
	"$FLASHCTL" "$1" --help 2>&1 | grep -qE "^ +$2( |$)" ||
		vm_fail "'flashctl $1 $2' is not implemented in this build ($FLASHCTL $1 --help does not list it)"
}

vm_flashctl() { vm_run "$FLASHCTL" "$@"; }

# vm_mksquashfs DIR IMAGE [OPTIONS...]: a squashfs image for a test whose
# subject is not the compressor (the kernel reads them all): zstd at level
# 1 takes ~0.6 s under TCG where xz takes ~11 s and gzip ~3 s for the same
# 3.5 MiB tree (busybox and random data).
vm_mksquashfs() {
	vm_run mksquashfs "$1" "$2" -quiet -noappend -comp zstd -Xcompression-level 1 "${@:3}"
}

# Mark the kernel log; vm_dmesg_since_mark prints what came after.
VM_MARK=0
vm_mark() {
	VM_MARK=$((VM_MARK + 1))
	echo "vm-mark: $VM_TEST_NAME $VM_MARK $$" >/dev/kmsg
}
vm_dmesg_since_mark() {
	dmesg | sed -n "/vm-mark: $VM_TEST_NAME $VM_MARK $$\$/,\$p" | tail -n +2
}

# vm_json_get JSON JQ-FILTER: fails when the path is absent.
vm_json_get() {
	jq -er "$2" <<<"$1" 2>/dev/null || vm_fail "JSON has no $2: $1"
}

# vm_raw_dump /dev/mtdN: the whole partition on stdout, NAND with OOB
# (where the JFFS2 cleanmarkers live), NOR as plain bytes.
vm_raw_dump() {
	case "$(vm_sysfs "${1#/dev/}" type)" in
	nand|mlc-nand) nanddump -q --oob --bb=dumpbad -f /dev/stdout "$1" ;;
	*) cat "$1" ;;
	esac
}

# vm_jffs2_mount_leaves_flash_alone /dev/mtdN MOUNT-SOURCE
# Mount JFFS2 read-write, give its GC thread time to erase what it wants
# to, unmount, and fail if the raw flash changed. The kernel re-erases
# every erase block without a cleanmarker and writes one itself, silently
# (only jffs2_dbg messages) when the block was all 0xFF, so the raw
# content is the signal, plus any scan complaint in the kernel log.
vm_jffs2_mount_leaves_flash_alone() {
	local dev=$1 src=$2 mnt
	mnt=$(mktemp -d /tmp/jffs2.XXXXXX)
	vm_raw_dump "$dev" >/tmp/.before || vm_fail "cannot dump $dev"
	vm_mark
	vm_run mount -t jffs2 "$src" "$mnt"
	sleep 3
	vm_run umount "$mnt"
	vm_raw_dump "$dev" >/tmp/.after || vm_fail "cannot dump $dev"
	if ! cmp -s /tmp/.before /tmp/.after; then
		vm_fail "mounting JFFS2 on $dev ($src) changed the raw flash (first difference: $(cmp /tmp/.before /tmp/.after 2>&1 | head -1)): the kernel re-erased blocks, so they had no valid cleanmarker"
	fi
	if vm_dmesg_since_mark | grep -E 'jffs2.*(cleanmarker|Empty flash|Magic bitmask|CRC failed|not found at)'; then
		vm_fail "the JFFS2 scan of $dev complained (kernel log above)"
	fi
	rm -f /tmp/.before /tmp/.after
	rmdir "$mnt"
}

# Process start-up is slow under TCG (jq ~0.3 s, sed ~0.15 s), so these
# parse once and set shell variables instead of one tool run per field.

# vm_mtdinfo_vars PREFIX /dev/mtdN: PREFIX_name, PREFIX_type,
# PREFIX_erasesize, PREFIX_writesize, PREFIX_oobsize, PREFIX_blocks from
# mtdinfo (the mtd-utils view of the device).
vm_mtdinfo_vars() {
	local line k v out
	out=$(mtdinfo "$2") || vm_fail "mtdinfo $2 failed: $out"
	while IFS= read -r line; do
		k=${line%%:*} v=${line#*:}
		v=${v#"${v%%[! ]*}"}
		case "$k" in
		Name) printf -v "$1_name" '%s' "$v" ;;
		Type) printf -v "$1_type" '%s' "$v" ;;
		"Eraseblock size") printf -v "$1_erasesize" '%s' "${v%% *}" ;;
		"Minimum input/output unit size") printf -v "$1_writesize" '%s' "${v%% *}" ;;
		"OOB size") printf -v "$1_oobsize" '%s' "${v%% *}" ;;
		"Amount of eraseblocks") printf -v "$1_blocks" '%s' "${v%% *}" ;;
		esac
	done <<<"$out"
}

# vm_json_vars PREFIX JSON: PREFIX_KEY for every top-level key; arrays of
# scalars become space-separated lists, objects are left out.
vm_json_vars() {
	local assigns
	assigns=$(jq -r --arg p "$1" 'to_entries[]
		| select(.value | type != "object")
		| "\($p)_\(.key)=" + (if (.value | type) == "array"
			then (.value | map(tostring) | join(" ")) else (.value | tostring) end | @sh)' <<<"$2") ||
		vm_fail "not a JSON object: $2"
	eval "$assigns"
}

# vm_json_leaves PREFIX JSON: one jq run for a whole document (a boot
# state, a status): PREFIX_A_B for the value at .A.B at any depth, arrays
# as one element a line (strings as they are, other values as JSON), null
# as "null"; characters not allowed in a name become "_". Every PREFIX_*
# variable set before is unset first: a field the new document lacks is
# empty, never the last document's.
vm_json_leaves() {
	local assigns
	assigns=$(jq -r --arg p "$1" '
		def text: if type == "string" then . else tojson end;
		def leaves($k): if type == "object" then to_entries[] as $e | $e.value | leaves("\($k)_\($e.key)")
			elif type == "array" then [$k, (map(text) | join("\n"))] else [$k, text] end;
		leaves($p) | "\(.[0] | gsub("[^A-Za-z0-9_]"; "_"))=\(.[1] | @sh)"' <<<"$2") ||
		vm_fail "not JSON: $2"
	eval "unset \${!$1_@}"
	eval "$assigns"
}

# vm_expect_flash_info DEV TYPE: `flashctl flash info DEV` agrees with
# mtdinfo and sysfs on type (TYPE), size, geometry, blocks and name; its
# fields stay in f_* (f_bad_blocks: the caller checks what the chip has).
vm_expect_flash_info() {
	local dev=$1 sys=/sys/class/mtd/${1#/dev/} j
	j=$("$FLASHCTL" --json flash info "$dev") || vm_fail "flashctl flash info $dev failed: $j"
	vm_json_vars f "$j"
	vm_mtdinfo_vars m "$dev"
	vm_expect_eq "$f_type" "$2" "$dev: flashctl type (mtdinfo: $m_type)"
	vm_expect_eq "$f_size" "$(<"$sys/size")" "$dev: flashctl size vs sysfs"
	vm_expect_eq "$f_erasesize" "$m_erasesize" "$dev: flashctl erasesize vs mtdinfo"
	vm_expect_eq "$f_writesize" "$m_writesize" "$dev: flashctl writesize vs mtdinfo"
	vm_expect_eq "$f_oobsize" "${m_oobsize:-0}" "$dev: flashctl oobsize vs mtdinfo"
	vm_expect_eq "$f_blocks" "$m_blocks" "$dev: flashctl blocks vs mtdinfo"
	vm_expect_eq "$f_name" "$m_name" "$dev: flashctl name vs mtdinfo"
}

# vm_kernel_bad_blocks /dev/mtdN: indexes of the bad erase blocks as the
# kernel reports them (MEMGETBADBLOCK through flash_erase, which skips
# them). Erases the partition.
vm_kernel_bad_blocks() {
	local es
	es=$(vm_sysfs "${1#/dev/}" erasesize)
	flash_erase "$1" 0 0 2>&1 | sed -n 's/.*Skipping bad block at \(0x\)\{0,1\}\([0-9a-fA-F]*\).*/\2/p' |
	while read -r hex; do echo $(( 0x$hex / es )); done
}

# vm_jffs2_keeps_file WRITE-SRC READ-SRC WHAT: a file written on the JFFS2
# mounted from WRITE-SRC reads back the same mounted from READ-SRC (a
# remount, also through the other driver: mtdblock or the MTD itself).
vm_jffs2_keeps_file() {
	mkdir -p /tmp/m
	vm_run mount -t jffs2 "$1" /tmp/m
	seq 1 50000 >/tmp/m/numbers
	vm_run umount /tmp/m
	vm_run mount -t jffs2 "$2" /tmp/m
	seq 1 50000 | cmp - /tmp/m/numbers || vm_fail "JFFS2 file on $3 differs after remount"
	vm_run umount /tmp/m
}
