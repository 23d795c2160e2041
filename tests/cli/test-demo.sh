#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# tools/demo.sh (what ./run-demo runs) works from start to end, and its
# waits for flashd to be idle see it idle (issue 32 item 13: the demo
# grepped `flashctl --json status` for '"operation": null' while flashctl
# prints '"operation":null', so each wait ran out its full 5 s and the
# demo went on regardless; it now reads the JSON, says when flashd is
# idle and stops when it never is). The demo runs in this test's temp dir.
. "$(dirname "$0")/../lib/common.sh"

need mksquashfs python3
[ -x /usr/sbin/lighttpd ] || skip "lighttpd is not installed"
[ -x "$FLASHD" ] || fail "$FLASHD not built"
[ "$top_srcdir" = "$top_builddir" ] || skip "tools/demo.sh runs the programs of its own tree"
T=$(mktemp -d "${TMPDIR:-/tmp}/flashd-$TEST_NAME.XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT

DEMO_DIR=$T/demo "$top_srcdir/tools/demo.sh" > "$T/out" 2>&1 </dev/null
rc=$?
[ $rc = 0 ] || { tail -n 30 "$T/out" >&2; fail "tools/demo.sh exited $rc"; }
# the status of step 6 and the last one
sed -n '/== 6\./,/== 7\./p' "$T/out" > "$T/step6"
check "the first boot's health check was waited for" \
	grep -q "flashd is idle (the health check of the first boot is done)" "$T/out"
check "slot B's health check was waited for (main: the wait never saw flashd idle)" \
	grep -q "flashd is idle (the health check of slot B is done)" "$T/out"
check "step 6 shows slot B booted and good" \
	grep -Eq "^  B  rootfs-b +good +version 2.0 .*\[booted\]" "$T/step6"
check "step 6 shows slot B's passed health check" grep -q "health check passed" "$T/step6"
check "the demo ends with 3.0 installed from its URL into slot A" \
	grep -q "Last install: version 3.0 into slot A: success" "$T/out"
check_done
say "PASS"
