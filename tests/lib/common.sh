# SPDX-License-Identifier: LGPL-2.1-or-later
# shellcheck shell=bash
# The base every shell test stands on (sourced first by the other
# tests/lib/*.sh): where the tree and the programs are, how a test says
# something, fails, skips, and waits. Exit statuses: 0 pass, 77 skip (a
# tool or kernel feature is missing), anything else fail.
#
#   fail MSG        the test fails now (exit 1)
#   check_fail MSG  a failure is noted and the test goes on; check_done
#                   fails the test at the end if any was noted
#   ok MSG          a check passed (said, for the log)
#   check WHAT CMD...  ok WHAT if CMD succeeds, else check_fail WHAT
#   skip MSG        exit 77, loudly
#   skip_in_san_pass WHY  skip in a sanitizer build (run-tests' ASan
#                   pass) a test whose run there only repeats the plain
#                   pass's: WHY says what makes it a repeat
#   need CMD...     skip unless every CMD is installed
#   wait_for SECONDS CMD...  poll until CMD succeeds

set -u

: "${top_srcdir:=$(cd "$(dirname "$0")/../.." && pwd)}"
: "${top_builddir:=$top_srcdir}"
top_srcdir=$(cd "$top_srcdir" && pwd)
top_builddir=$(cd "$top_builddir" && pwd)
FLASHD=${FLASHD:-$top_builddir/flashd}
FLASHCTL=${FLASHCTL:-$top_builddir/flashctl}
TEST_LIB=$top_srcdir/tests/lib
VCALL=$TEST_LIB/varlink-call.py
TEST_NAME=$(basename "$0" .sh)
# Debian's python3 directly: a version-manager shim (pyenv) costs ~0.1 s a call
PY=/usr/bin/python3
[ -x "$PY" ] || PY=$(command -v python3 2>/dev/null) || PY=
# fail() shows the end of this log (the daemon's, once one was started)
FAIL_LOG=
CHECK_FAILS=0

say() { printf '%s: %s\n' "$TEST_NAME" "$*" >&2; }

skip() {
	say "SKIP: $*"
	exit 77
}

# FLASHD_SAN_CFLAGS: the tree's sanitizers (AM_TESTS_ENVIRONMENT)
skip_in_san_pass() {
	[ -z "${FLASHD_SAN_CFLAGS:-}" ] ||
		skip "the plain pass runs this test; in this tree ($FLASHD_SAN_CFLAGS) it would repeat it: $*"
}

fail() {
	say "FAIL: $*"
	if [ -n "$FAIL_LOG" ] && [ -f "$FAIL_LOG" ]; then
		say "---- $FAIL_LOG ----"
		tail -n 40 "$FAIL_LOG" >&2
	fi
	exit 1
}

check_fail() {
	say "FAIL: $*"
	CHECK_FAILS=$((CHECK_FAILS + 1))
}

ok() { say "ok: $*"; }

check() {
	local what=$1
	shift
	if "$@"; then ok "$what"; else check_fail "$what"; fi
}

check_done() {
	[ "$CHECK_FAILS" -eq 0 ] || fail "$CHECK_FAILS failure(s) (above)"
}

need() {
	local c
	for c in "$@"; do
		command -v "$c" >/dev/null 2>&1 || skip "'$c' is not installed"
	done
}

wait_for() {
	local n=$(($1 * 20))
	shift
	while [ $n -gt 0 ]; do
		"$@" && return 0
		sleep 0.05
		n=$((n - 1))
	done
	return 1
}

# flashd_path NAME: a path of this build (flashd --paths: config, layout,
# keep-dir, state-dir, run-dir, boot-state, ...), from configure's directories
flashd_path() {
	"$FLASHD" --paths | awk -v k="$1" '$1 == k { print $2; f = 1 } END { exit !f }' ||
		fail "flashd --paths names no $1"
}
