#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Every shipped layout has a boot script, it is what the generator makes
# from the layout today, and mkimage accepts it.
. "$(dirname "$0")/../lib/common.sh"
top=$top_srcdir
need mkimage
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
for l in "$top"/layouts/*.json; do
	s=${l%.json}.bootscr
	if [ ! -f "$s" ]; then
		check_fail "$(basename "$l") has no boot script $(basename "$s")"; continue
	fi
	# the header names the layout path as given; compare from the 3rd line
	(cd "$top" && "$FLASHCTL" slot bootscript --layout "layouts/$(basename "$l")") >"$tmp/gen" ||
		{ check_fail "generator failed on $l"; continue; }
	if ! diff -u "$s" "$tmp/gen" >"$tmp/diff"; then
		check_fail "$(basename "$s") is stale: regenerate with 'flashctl slot bootscript --layout $l'"
		cat "$tmp/diff"; continue
	fi
	grep -q 'flashd.slot=' "$s" || { check_fail "$s passes no flashd.slot="; }
	mkimage -A arm -T script -C none -d "$s" "$tmp/boot.scr" >/dev/null ||
		{ check_fail "mkimage refuses $s"; continue; }
	ok "$(basename "$s")"
done
check_done
