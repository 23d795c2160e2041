#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# The http source's unit test (tests/unit/test-source-http: stream, planned
# and unplanned Range preads, request and byte counts) against lighttpd,
# then lighttpd's own access log for the same: one line per request the
# source counted.
. "$(dirname "$0")/../lib/sim-board.sh"
. "$TEST_LIB/http.sh"

start_httpd
head -c $((16 * 1024 * 1024)) /dev/urandom > "$T/www/data.bin"
FLASHD_TEST_HTTP_URL=http://127.0.0.1:$HTTP_PORT FLASHD_TEST_HTTP_DIR=$T/www \
	"$top_builddir/tests/unit/test-source-http" > "$T/unit.out" 2>&1 ||
	{ cat "$T/unit.out" >&2; fail "test-source-http failed"; }
grep "planned preads" "$T/unit.out" >&2
# lighttpd writes its access log at exit
kill "$HTTPD_PID"
wait "$HTTPD_PID" 2>/dev/null
# stream 8 (doubling ranges up to 1 MiB, the rest), expected head 2 (the
# second of exactly 922 bytes), planned 1 + 4, unplanned 1 + 4 (a pread
# past the end asks nothing: the size is known)
n=$(grep -c "^GET /data.bin " "$T/access.log")
[ "$n" = 20 ] || fail "lighttpd saw $n requests for data.bin, the source counted 20: $(cat "$T/access.log")"
grep -q "^GET /data.bin HTTP/1.1 206 \[-\] 922\$" "$T/access.log" ||
	fail "no request of exactly the expected head's 922 bytes: $(cat "$T/access.log")"
grep -q "^GET /none.bin HTTP/1.1 404" "$T/access.log" || fail "no 404 in the access log"
ok "lighttpd's log agrees: $n requests"
