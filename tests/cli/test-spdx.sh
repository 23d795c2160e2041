#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Every source file carries its licence line (COPYING, LGPL-2.1-or-later):
# tools/spdx.sh lists the tracked source files without one.
. "$(dirname "$0")/../lib/common.sh"

need git
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
"$top_srcdir/tools/spdx.sh" check >"$T/out" 2>&1
rc=$?
# exit 3: not the top of a git checkout (run-tests' ASan copy); the plain pass checks
[ $rc = 3 ] && skip "$(cat "$T/out")"
[ $rc = 0 ] || fail "$(cat "$T/out")"
ok "every source file has an SPDX-License-Identifier line"

# the check itself can fail: a new C file without the line is named
mkdir -p "$T/repo" && cp "$top_srcdir/tools/spdx.sh" "$T/repo/" && cd "$T/repo" &&
	mkdir tools && mv spdx.sh tools/ && git init -q . &&
	printf 'int x;\n' >new.c && git add -A >/dev/null || fail "cannot make a scratch checkout"
tools/spdx.sh check >"$T/out2" 2>&1 && fail "a file without the line passed: $(cat "$T/out2")"
grep -q "new.c" "$T/out2" && ok "a C file without the line is named" || fail "not named: $(cat "$T/out2")"
tools/spdx.sh add >/dev/null && head -1 new.c | grep -q '^/\* SPDX-License-Identifier: LGPL-2.1-or-later \*/$' &&
	tools/spdx.sh check >/dev/null 2>&1 && ok "tools/spdx.sh add gives it the line" || fail "add did not: $(head -2 new.c)"
