#!/bin/bash
# Every shipped layout has a boot script, it is what the generator makes
# from the layout today, and mkimage accepts it.
set -u
top=${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}
bld=${top_builddir:-$top}
command -v mkimage >/dev/null || { echo "SKIP: mkimage (u-boot-tools) missing"; exit 77; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail=0
for l in "$top"/layouts/*.json; do
	s=${l%.json}.bootscr
	if [ ! -f "$s" ]; then
		echo "FAIL: $(basename "$l") has no boot script $(basename "$s")"; fail=1; continue
	fi
	# the header names the layout path as given; compare from the 3rd line
	(cd "$top" && "$bld/flashctl" slot bootscript --layout "layouts/$(basename "$l")") >"$tmp/gen" ||
		{ echo "FAIL: generator failed on $l"; fail=1; continue; }
	if ! diff -u "$s" "$tmp/gen" >"$tmp/diff"; then
		echo "FAIL: $(basename "$s") is stale: regenerate with 'flashctl slot bootscript --layout $l'"
		cat "$tmp/diff"; fail=1; continue
	fi
	grep -q 'flashd.slot=' "$s" || { echo "FAIL: $s passes no flashd.slot="; fail=1; }
	mkimage -A arm -T script -C none -d "$s" "$tmp/boot.scr" >/dev/null ||
		{ echo "FAIL: mkimage refuses $s"; fail=1; continue; }
	echo "ok: $(basename "$s")"
done
exit $fail
