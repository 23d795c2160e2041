#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The layering of the tree (HACKING.md, issue 36): tools/layering.sh reads
# the folder order from HACKING.md's `layering:` line and every #include "..."
# outside tests/; the tree passes, and a copy with an upward include, a
# folder cycle, a folder outside the order or a program's header in include/
# fails, naming the file (and line).
. "$(dirname "$0")/../lib/common.sh"

T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
"$top_srcdir/tools/layering.sh" "$top_srcdir" >"$T/out" 2>&1 || fail "the tree breaks its layering: $(cat "$T/out")"
grep -q ' 0 violations' "$T/out" || fail "no count: $(cat "$T/out")"
ok "every include follows HACKING.md's order: $(tail -1 "$T/out")"

# a scratch copy of the sources the check reads, to plant in
copy() {
	rm -rf "$T/tree" && mkdir "$T/tree" &&
		(cd "$top_srcdir" && find HACKING.md include lib boot daemon cli main nandsim \
			\( -name '*.[ch]' -o -name '*.h.in' -o -name HACKING.md \) -print0 |
			tar --null -T - -cf -) | tar -xf - -C "$T/tree" || fail "cannot copy the tree"
	"$top_srcdir/tools/layering.sh" "$T/tree" >/dev/null 2>&1 || fail "the unplanted copy fails"
}
# planted WHAT WHY: the check fails on the copy and names WHAT
planted() {
	local what=$1
	"$top_srcdir/tools/layering.sh" "$T/tree" >"$T/out" 2>&1 && fail "passed: $2: $(cat "$T/out")"
	grep -qF -- "$what" "$T/out" || fail "$2: '$what' not named: $(cat "$T/out")"
	ok "$2: $(grep -F -- "$what" "$T/out" | head -1)"
}

copy
sed -i '1a #include "daemon/log.h"' "$T/tree/lib/base/util.c"
planted 'lib/base/util.c:2: #include "daemon/log.h" of daemon/ in base/' "an upward include (base uses daemon)"

# the same through a relative path, which compiles as well (the includer's
# folder is searched first)
copy
sed -i '1a #include "../../daemon/log.h"' "$T/tree/lib/base/util.c"
planted 'lib/base/util.c:2: #include "../../daemon/log.h" of daemon/ in base/' "an upward include by a relative path"
copy
sed -i '1a #include "../cli/flashctl.h"' "$T/tree/daemon/manager.c"
planted 'daemon/manager.c:2: #include "../cli/flashctl.h" of cli/ in daemon/' "one level using another by a relative path"

copy
sed -i '1a #include "conf.h"' "$T/tree/lib/flash/flash.c"
planted 'lib/flash/flash.c:2: #include "conf.h" of conf/ in flash/' "a library header of a later folder"

copy
sed -i '1a #include "cli/flashctl.h"' "$T/tree/daemon/manager.c"
planted 'daemon/manager.c:2: #include "cli/flashctl.h" of cli/ in daemon/' "one level using another (daemon uses cli)"
grep -q 'folder cycle' "$T/out" && fail "a one-way include is no cycle: $(cat "$T/out")"

copy
sed -i '1a #include "cli/flashctl.h"' "$T/tree/daemon/manager.c"
sed -i '1a #include "daemon/log.h"' "$T/tree/cli/flashctl.c"
planted 'folder cycle:' "a folder cycle (daemon <-> cli)"

copy
mkdir "$T/tree/dbus" && printf '#include "manager.h"\n' >"$T/tree/dbus/dbus.c"
planted 'dbus/dbus.c: folder dbus is not in' "a folder outside the order"

copy
cp "$T/tree/daemon/worker.h" "$T/tree/include/worker.h"
planted "include/worker.h: a header of daemon/" "a program's private header in include/"

copy
sed -i 's/^`layering: .*/the order, lost/' "$T/tree/HACKING.md"
"$top_srcdir/tools/layering.sh" "$T/tree" >"$T/out" 2>&1
[ $? = 2 ] && grep -q 'no `layering: ...` line' "$T/out" && ok "no order in HACKING.md: refused" ||
	fail "an order-less HACKING.md: $(cat "$T/out")"
