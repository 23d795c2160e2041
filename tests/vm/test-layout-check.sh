#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# vm-timeout: 400
#
# `flashctl layout check FILE --system` against the kernel's MTD table:
# passes on the board the harness made from FILE, fails (exit 3, naming a
# partition) on a board that differs and for a different layout. NOR
# (mtdram + mtdpart, layouts/nor-router-16m.json) and NAND (nandsim
# parts=, layouts/nandsim-128m.json). The board is loaded here, not by a
# header, because the test switches boards.
. "$top_srcdir/tests/lib/vm.sh"
vm_need_flashctl layout check
vm_need_flashctl layout nandsim
nor=layouts/nor-router-16m.json nand=layouts/nandsim-128m.json
for f in "$nor" "$nand"; do [ -f "$top_srcdir/$f" ] || vm_fail "$f: missing from the source tree"; done
nor=$top_srcdir/$nor nand=$top_srcdir/$nand
failures=0
soft_fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }

check_passes() { # LAYOUT WHAT
	local out rc=0
	out=$("$FLASHCTL" layout check "$1" --system 2>&1) || rc=$?
	[ $rc = 0 ] || soft_fail "layout check --system of ${1##*/} on $2 failed (exit $rc): $out"
}
check_fails() { # LAYOUT WHAT NAME-EXPECTED-IN-MESSAGE
	local out rc=0
	out=$("$FLASHCTL" layout check "$1" --system 2>&1) || rc=$?
	if [ $rc != 3 ]; then
		soft_fail "layout check --system of ${1##*/} on $2 exited $rc, expected 3 (different): $out"
	elif ! grep -q -- "$3" <<<"$out"; then
		soft_fail "layout check --system of ${1##*/} on $2: message does not name '$3': $out"
	else
		echo "as expected, ${1##*/} on $2: $out"
	fi
}

# ---- NOR ------------------------------------------------------------------
vm_run vm-load-board "$nor"
check_passes "$nor" "the board made from it"
check_fails "$nand" "the NOR board" "u-boot"
# Same chip, last partition missing: the check must name it.
# one flashctl and one jq run for both fields (process start-up is slow under TCG)
vm_json_vars nj "$("$FLASHCTL" --json layout nandsim "$nor")"
spec=$nj_mtdparts
last=${spec##*,}; last=${last#*(}; last=${last%%)*}
vm_run vm-load-board -m mtdram $nj_params --mtdparts "${spec%,*}"
check_fails "$nor" "a NOR board without $last" "$last"

# ---- NAND -----------------------------------------------------------------
{ read -r mod params; } < <("$FLASHCTL" layout nandsim "$nand")
vm_expect_eq "$mod" nandsim "module for ${nand##*/}"
vm_run vm-load-board "$nand"
check_passes "$nand" "the nandsim board made from it"
check_fails "$nor" "the nandsim board" "u-boot"
# One erase block moved from the last partition to the first.
# the parameters split in bash, not by tr/sed/grep (slow to start under TCG)
parts="" other=""
for w in $params; do
	case $w in parts=*) parts=${w#parts=} ;; *) other+="$w " ;; esac
done
IFS=, read -ra p <<<"$parts"
[ ${#p[@]} -ge 2 ] || vm_fail "${nand##*/}: nandsim parts= has fewer than two partitions: $params"
p[0]=$((p[0] + 1)); p[${#p[@]} - 1]=$((p[${#p[@]} - 1] - 1))
vm_run vm-load-board -m nandsim $other "parts=$(IFS=,; echo "${p[*]}")"
check_fails "$nand" "a nandsim board with the first partition one block larger" "u-boot"

[ $failures = 0 ] || vm_fail "$failures check(s) failed (above)"
echo "layout check --system: matches and mismatches detected on NOR and NAND"
