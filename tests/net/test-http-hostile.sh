#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# A hostile HTTP server (tests/net/hostile-server.py) on 127.0.0.1 and a
# second one on another port, the "other origin", which logs what it
# receives (issue #32):
# - redirects are decided from libcurl's own view, one hop at a time: two
#   Location headers, a Location longer than 1399 bytes, a redirect to
#   another port: refused, naming both origins, and the other origin
#   receives neither the header= token nor the URL's credentials (nor any
#   request at all); with redirect-other-origin=yes followed, without them;
#   a same-origin redirect keeps them;
# - a 4 bytes/s drip ends by itself (min-rate, and download-deadline);
# - terminal escape codes from the server (ETag, Location) never reach
#   flashctl's output, flashctl status or the daemon's log raw;
# - a 10 MB response header is named as such, not "Out of memory";
# - secrets stay out of argv: flashctl install --url-file FILE|-, and
#   netrc-file= (to the URL's origin only); a URL with credentials in
#   argv is installed with a warning.
# HOSTILE_CASES="redirects drip" runs some of the cases only.
. "$(dirname "$0")/../lib/sim-board.sh"
. "$TEST_LIB/http.sh"

setup_board
make_bundle v1 1.0 1
make_bundle e1 1.1 1   # nothing of it in slot B: the ETag is asked again
mkdir -p "$T/www"
cp "$T/v1.bundle" "$T/e1.bundle" "$T/www/"
cp "$FLASHD_DIR/flashd.conf" "$T/flashd.conf.base"
TOKEN="X-Flashd-Test: token-42"
FAST="stall-timeout=2 connect-timeout=2 retries=1 retry-delay=100"
# daemon_with KEY=VALUE...: flashd restarted with this [network] section
daemon_with() {
	stop_daemon
	cp "$T/flashd.conf.base" "$FLASHD_DIR/flashd.conf"
	network_conf "$@"
	start_daemon
}

# hostile PORT LOG [options]: one hostile-server.py
hostile() {
	port=$1 log=$2
	shift 2
	"$PY" "$top_srcdir/tests/net/hostile-server.py" --port "$port" --root "$T/www" \
		--log "$log" "$@" > "$log.out" 2>&1 &
	BG_PIDS="$BG_PIDS $!"
	wait_for 10 "$PY" -c "import socket; socket.create_connection(('127.0.0.1', $port), 1)" \
		2>/dev/null || fail "hostile-server.py did not start: $(cat "$log.out")"
}
HPORT=$(free_port)
OPORT=$(free_port)
ORIGIN="http://127.0.0.1:$HPORT"
OTHER="http://127.0.0.1:$OPORT"
touch "$T/hostile.log" "$T/other.log"
hostile "$OPORT" "$T/other.log"
hostile "$HPORT" "$T/hostile.log" --other "$OTHER" --other-host "localhost:$OPORT"

# shellcheck disable=SC2086
daemon_with "header=$TOKEN" $FAST

# no_escapes WHAT FILE...: no ESC, BEL or other C0 control byte but \t \n
no_escapes() {
	what=$1
	shift
	for f in "$@"; do
		if LC_ALL=C grep -q "$(printf '[\001-\010\013-\037\177]')" "$f"; then
			fail "$what: control characters in $(basename "$f"): $(od -c "$f" | grep -m 3 '033\|007')"
		fi
	done
}

# other_untouched WHAT: the other origin received no token, no credentials
other_untouched() {
	if grep -qi "token-42\|authorization\|s3cret" "$T/other.log"; then
		fail "$1: a credential reached the other origin: $(cat "$T/other.log")"
	fi
}

# refused NAME URL PATTERN...: flashctl install URL fails, its message
# matches each PATTERN, nothing reached the other origin, the env is as it
# was (unless WRITING: the failure comes after writing began)
refused() {
	name=$1 url=$2
	shift 2
	: > "$T/other.log"
	env_dump > "$T/env-before"
	timeout 60 "$FLASHCTL" install "$url" > "$T/$name.out" 2>&1
	rc=$?
	[ $rc = 1 ] || fail "$name: flashctl install exited $rc, expected 1: $(cat "$T/$name.out")"
	for p in "$@"; do
		grep -qF -- "$p" "$T/$name.out" || fail "$name: the error does not say '$p': $(cat "$T/$name.out")"
	done
	[ ! -s "$T/other.log" ] || fail "$name: the other origin got a request: $(cat "$T/other.log")"
	env_dump > "$T/env-after"
	[ -n "${WRITING:-}" ] || cmp -s "$T/env-before" "$T/env-after" || fail "$name: the env changed"
	ok "$name: refused: $(tail -n 1 "$T/$name.out")"
}

case_redirects() {
	# ---- two Location headers: libcurl's (the first) is the one judged ----
	refused two-location "http://flashd:s3cret@127.0.0.1:$HPORT/two-location/v1.bundle" \
		"redirected from $ORIGIN to $OTHER" "another origin"
	# ---- a Location of 1400+ bytes: the whole of it is judged ----
	refused long-location "$ORIGIN/long-location/v1.bundle" \
		"redirected from $ORIGIN to http://localhost:$OPORT" "another origin"
	# ---- another port on the same host is another origin ----
	refused other-port "http://flashd:s3cret@127.0.0.1:$HPORT/other-port/v1.bundle" \
		"redirected from $ORIGIN to $OTHER" "redirect-other-origin"
	# ---- a same-origin redirect keeps the header and the credentials ----
	: > "$T/hostile.log"
	fctl install "http://flashd:s3cret@127.0.0.1:$HPORT/same-origin/v1.bundle" \
		> "$T/same.out" 2>&1 || fail "same-origin redirect: $(cat "$T/same.out")"
	grep "GET /file/v1.bundle" "$T/hostile.log" | grep -q "token-42" ||
		fail "same origin: the header did not reach the redirect's target: $(cat "$T/hostile.log")"
	grep "GET /file/v1.bundle" "$T/hostile.log" | grep -q "Authorization: Basic" ||
		fail "same origin: the credentials did not reach the redirect's target"
	ok "a same-origin redirect is followed with header= and the URL's credentials"
	reset_slots
	# ---- allowed by the configuration: followed, without credentials ----
	# shellcheck disable=SC2086
	daemon_with "header=$TOKEN" "redirect-other-origin=yes" $FAST
	: > "$T/other.log"
	fctl install "http://flashd:s3cret@127.0.0.1:$HPORT/other-port/v1.bundle" \
		> "$T/allowed.out" 2>&1 || fail "allowed redirect: $(cat "$T/allowed.out")"
	grep -q "GET /file/v1.bundle" "$T/other.log" || fail "the other origin was not asked"
	other_untouched "redirect-other-origin=yes"
	ok "redirect-other-origin=yes: followed to $OTHER without header= or credentials"
	reset_slots
	# shellcheck disable=SC2086
	daemon_with "header=$TOKEN" $FAST
}

# drip NAME PATTERN: an install from the 4 bytes/s server ends by itself
# with a message matching PATTERN (seconds in $secs)
drip() {
	t0=$(date +%s%N)
	timeout 60 "$FLASHCTL" install "$ORIGIN/drip/v1.bundle" > "$T/$1.out" 2>&1
	rc=$?
	secs=$((($(date +%s%N) - t0) / 1000000))
	[ $rc != 124 ] || fail "$1: a 4 bytes/s drip still ran after 60 s"
	[ $rc = 1 ] || fail "$1: exit $rc: $(cat "$T/$1.out")"
	grep -q "$2" "$T/$1.out" || fail "$1: $(cat "$T/$1.out")"
	ok "$1: gave up after $secs ms: $(tail -n 1 "$T/$1.out")"
}

case_drip() {
	# shellcheck disable=SC2086
	daemon_with $FAST "min-rate=1024" "min-rate-time=2"
	drip drip-rate "slower than 1024 bytes/s over 2 s"
	# shellcheck disable=SC2086
	daemon_with $FAST "min-rate=1" "download-deadline=3"
	drip drip-deadline "not done after 3 s (download-deadline=3)"
	# shellcheck disable=SC2086
	daemon_with "header=$TOKEN" $FAST
}

case_escapes() {
	WRITING=1 refused escape-etag "$ORIGIN/escape-etag/e1.bundle" "changed on the server"
	fctl status > "$T/status.out" 2>&1
	grep -q "changed on the server" "$T/status.out" ||
		fail "status does not show the last error: $(cat "$T/status.out")"
	refused escape-location "$ORIGIN/escape-location/v1.bundle" "redirected from $ORIGIN to"
	# a URL and a file name with escape codes: flashctl's errors and the log
	ESCS=$(printf '\033]0;owned\007\033[2J')
	refused escape-url "$ORIGIN/file/${ESCS}v1.bundle" "not a valid URL"
	fctl install "/nonexistent/${ESCS}v1.bundle" > "$T/escape-file.out" 2>&1 &&
		fail "installed a file that does not exist"
	grep -q 'cannot open bundle /nonexistent/\\x1b' "$T/escape-file.out" ||
		fail "escape-file: $(cat -v "$T/escape-file.out")"
	no_escapes "escape codes" "$T/escape-etag.out" "$T/escape-location.out" "$T/status.out" \
		"$T/escape-url.out" "$T/escape-file.out" "$T/flashd.log"
	ok "escape codes from the server: shown escaped in flashctl's output, status and the log"
}

case_huge_header() {
	refused huge-header "$ORIGIN/huge-header/v1.bundle" "response header from $ORIGIN exceeds"
	grep -qi "out of memory" "$T/huge-header.out" && fail "huge header: $(cat "$T/huge-header.out")"
	ok "a 10 MB response header is named as such"
}

# ---- secrets out of argv: --url-file, netrc-file= (its credentials to
# the URL's origin only), a warning for a URL with credentials in argv ----
case_secrets() {
	AUTH="Authorization: Basic $(printf 'flashd:s3cret' | base64)"
	printf 'http://flashd:s3cret@127.0.0.1:%s/file/v1.bundle?token=t0k3n\n' "$HPORT" > "$T/url"
	: > "$T/hostile.log"
	fctl install --url-file "$T/url" > "$T/url-file.out" 2>&1 ||
		fail "--url-file: $(cat "$T/url-file.out")"
	grep -q "$AUTH" "$T/hostile.log" || fail "--url-file: no credentials sent: $(cat "$T/hostile.log")"
	grep -q "token=t0k3n" "$T/hostile.log" || fail "--url-file: the query was lost"
	grep -q "warning" "$T/url-file.out" && fail "--url-file: warned: $(cat "$T/url-file.out")"
	reset_slots
	fctl install --url-file - < "$T/url" > "$T/url-stdin.out" 2>&1 ||
		fail "--url-file -: $(cat "$T/url-stdin.out")"
	ok "--url-file FILE and -: the URL with its credentials and query, none of it in argv"
	reset_slots
	fctl install "http://flashd:s3cret@127.0.0.1:$HPORT/file/v1.bundle" > "$T/argv.out" 2>&1 ||
		fail "a URL with credentials in argv: $(cat "$T/argv.out")"
	grep -q "warning: every local user can read this URL" "$T/argv.out" ||
		fail "no warning for credentials in argv: $(cat "$T/argv.out")"
	ok "credentials in argv: installed, with a warning on stderr"
	reset_slots
	# netrc-file=: to the origin, not to another port of the same host
	printf 'machine 127.0.0.1 login flashd password s3cret\n' > "$T/netrc"
	chmod 600 "$T/netrc"
	# shellcheck disable=SC2086
	daemon_with "netrc-file=$T/netrc" "redirect-other-origin=yes" $FAST
	: > "$T/hostile.log"
	: > "$T/other.log"
	fctl install "$ORIGIN/same-origin/v1.bundle" > "$T/netrc.out" 2>&1 ||
		fail "netrc-file: $(cat "$T/netrc.out")"
	grep "GET /file/v1.bundle" "$T/hostile.log" | grep -q "$AUTH" ||
		fail "netrc-file: no credentials at the origin: $(cat "$T/hostile.log")"
	reset_slots
	fctl install "$ORIGIN/other-port/v1.bundle" > "$T/netrc-other.out" 2>&1 ||
		fail "netrc-file, redirect to another port: $(cat "$T/netrc-other.out")"
	grep -q "GET /file/v1.bundle" "$T/other.log" || fail "netrc-file: the other origin was not asked"
	other_untouched "netrc-file= and a redirect to another port"
	ok "netrc-file=: its credentials go to the URL's origin, not to another port"
	reset_slots
	# shellcheck disable=SC2086
	daemon_with "header=$TOKEN" $FAST
}

for c in ${HOSTILE_CASES:-redirects drip escapes huge_header secrets}; do
	"case_$c"
done
expect_daemon_ok "after the hostile server"
