#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# Installs from http(s) URLs against a real lighttpd on 127.0.0.1: good
# http and https installs (verified, activated); http_proxy from the
# daemon's environment, header= seen by the server, a server that requires
# a client certificate (refused without client-cert=, served with it);
# a server certificate from
# an untrusted CA, a redirect to another origin, a 404 and a server that
# never answers fail cleanly, naming the URL, with nothing activated and
# the booted slot untouched; file://, ftp:// are refused before anything
# starts.
. "$(dirname "$0")/../lib/sim-board.sh"
. "$TEST_LIB/http.sh"

setup_board
make_bundle v1 1.0 3
make_bundle v2 2.0 3
start_httpd
cp "$T/v1.bundle" "$T/v2.bundle" "$T/www/"
cp "$FLASHD_DIR/flashd.conf" "$T/flashd.conf.base"
# daemon_with KEY=VALUE...: flashd restarted with this [network] section
daemon_with() {
	stop_daemon
	cp "$T/flashd.conf.base" "$FLASHD_DIR/flashd.conf"
	network_conf "$@"
	start_daemon
}
FAST="stall-timeout=2 connect-timeout=2 retries=1 retry-delay=100"
# shellcheck disable=SC2086
daemon_with "ca-file=$T/ca.pem" $FAST


# expect_not_activated WHAT: the install failed, A still boots next, and
# the env is as it was before (every failure here comes before a byte of
# the bundle reached the engine)
expect_not_activated() {
	env_dump > "$T/env-after"
	cmp -s "$T/env-before" "$T/env-after" ||
		fail "$1: the env changed: $(diff "$T/env-before" "$T/env-after")"
	fctl --json status > "$T/st.json" || fail "$1: status"
	expect_fields "$T/st.json" "$1" <<-END
	booted A
	next_boot A
	slots.0.state good
	last_install.result failed
	operation null
	END
}

# failed_install NAME URL PATTERN: flashctl install URL fails (exit 1),
# its message names the URL and matches PATTERN, nothing is activated
# (seconds taken in $secs)
failed_install() {
	env_dump > "$T/env-before"
	start=$(date +%s)
	fctl install "$2" > "$T/$1.out" 2>&1
	rc=$?
	secs=$(($(date +%s) - start))
	[ $rc = 1 ] || fail "$1: flashctl install exited $rc, expected 1: $(cat "$T/$1.out")"
	grep -qF "$2" "$T/$1.out" || fail "$1: the error does not name the URL: $(cat "$T/$1.out")"
	grep -qi "$3" "$T/$1.out" || fail "$1: the error does not say '$3': $(cat "$T/$1.out")"
	expect_not_activated "$1"
	ok "$1 failed in ${secs} s: $(tail -n 1 "$T/$1.out")"
}

# ---- http: installed, verified, activated; progress shows the download ----
fctl --json install "http://127.0.0.1:$HTTP_PORT/v1.bundle" > "$T/http.out" 2>&1 ||
	fail "http install: exit $?: $(tail -n 3 "$T/http.out")"
last_reply "$T/http.out" "$T/http.last"
SIZE=$(stat -c %s "$T/v1.bundle")
expect_fields "$T/http.last" "http install" <<-END
step done
slot B
version 1.0
bytes_downloaded $SIZE
END
expect_installed "http install" 1.0
grep -q '"step":"write".*"bytes_downloaded":[1-9]' "$T/http.out" ||
	fail "no write progress with bytes downloaded: $(head -n 3 "$T/http.out")"
ok "http install: verified, activated, $SIZE bytes downloaded"

# ---- a proxy from the environment, extra headers ----
reset_slots
start_proxy
stop_daemon
cp "$T/flashd.conf.base" "$FLASHD_DIR/flashd.conf"
# shellcheck disable=SC2086
network_conf "ca-file=$T/ca.pem" "header=X-Flashd-Test: board-42" $FAST
http_proxy=http://127.0.0.1:$PROXY_PORT start_daemon
fctl install "http://127.0.0.1:$HTTP_PORT/v2.bundle" > "$T/proxy.out" 2>&1 ||
	fail "install through http_proxy: $(cat "$T/proxy.out")"
grep -q "^connection" "$T/proxy.log" || fail "the install did not go through http_proxy"
expect_installed "through http_proxy" 2.0
stop_proxy
# shellcheck disable=SC2086
daemon_with "ca-file=$T/ca.pem" "header=X-Flashd-Test: board-42" $FAST
reset_slots
fctl install "https://127.0.0.1:$HTTPS_PORT/v1.bundle" > "$T/hdr.out" 2>&1 ||
	fail "install with a header: $(cat "$T/hdr.out")"
kill "$HTTPD_PID"; wait "$HTTPD_PID" 2>/dev/null  # lighttpd writes its log at exit
grep -q "^GET /v1.bundle .*\[board-42\]" "$T/access.log" ||
	fail "header= did not reach the server: $(cat "$T/access.log")"
"$LIGHTTPD" -D -f "$T/lighttpd.conf" >>"$T/lighttpd.out" 2>&1 &
HTTPD_PID=$!
BG_PIDS="$BG_PIDS $HTTPD_PID"
wait_for 10 "$PY" -c "import socket; socket.create_connection(('127.0.0.1', $HTTP_PORT), 1)" ||
	fail "lighttpd did not restart"
ok "http_proxy from the environment is used; header= reaches the server"

# ---- a server that wants a client certificate ----
reset_slots
failed_install no-client-cert "https://127.0.0.1:$MTLS_PORT/v1.bundle" "SSL\|TLS\|alert\|certificate"
# shellcheck disable=SC2086
daemon_with "ca-file=$T/ca.pem" "client-cert=$T/client.pem" "client-key=$T/client.key" $FAST
fctl install "https://127.0.0.1:$MTLS_PORT/v1.bundle" > "$T/mtls.out" 2>&1 ||
	fail "install with client-cert: $(cat "$T/mtls.out")"
expect_installed "client certificate" 1.0
ok "client-cert/client-key: the server that requires one serves the bundle"
# shellcheck disable=SC2086
daemon_with "ca-file=$T/ca.pem" $FAST
reset_slots
fctl install "http://127.0.0.1:$HTTP_PORT/v2.bundle" >/dev/null 2>&1 || fail "http install of v2"

# ---- https with the test CA ----
fctl install "https://127.0.0.1:$HTTPS_PORT/v2.bundle" > "$T/https.out" 2>&1 ||
	fail "https install: exit $?: $(cat "$T/https.out")"
grep -q "downloaded" "$T/https.out" || fail "https: the progress does not show bytes downloaded"
expect_installed "https install" 2.0
ok "https install with the test CA"


# ---- TLS: a CA that did not sign the server's certificate ----
reset_slots
# shellcheck disable=SC2086
daemon_with "ca-file=$T/other-ca.pem" $FAST
failed_install wrong-ca "https://127.0.0.1:$HTTPS_PORT/v1.bundle" "certificate"
# shellcheck disable=SC2086
daemon_with "ca-file=$T/ca.pem" $FAST

# ---- 404 names the status ----
failed_install notfound "http://127.0.0.1:$HTTP_PORT/nope.bundle" "HTTP status 404"

# ---- a redirect to another origin (host, or port) is refused; followed
# with redirect-other-origin=yes (tests/net/test-http-hostile.sh: what
# the other origin receives) ----
start_proxy --redirect "http://localhost:$HTTP_PORT/v1.bundle"
failed_install redirect "http://127.0.0.1:$PROXY_PORT/v1.bundle" "another origin"
stop_proxy
start_proxy --redirect "http://127.0.0.1:$HTTP_PORT/v1.bundle"
failed_install redirect-port "http://127.0.0.1:$PROXY_PORT/v1.bundle" "another origin"
# shellcheck disable=SC2086
daemon_with "ca-file=$T/ca.pem" "redirect-other-origin=yes" $FAST
fctl install "http://127.0.0.1:$PROXY_PORT/v1.bundle" > "$T/redir-same.out" 2>&1 ||
	fail "an allowed redirect to another port was not followed: $(cat "$T/redir-same.out")"
expect_installed "allowed redirect" 1.0
ok "a redirect to another port is followed with redirect-other-origin=yes"
stop_proxy
# shellcheck disable=SC2086
daemon_with "ca-file=$T/ca.pem" $FAST
reset_slots

# ---- credentials and query tokens in a URL stay out of the log ----
fctl install "http://board:s3cr3t@127.0.0.1:$HTTP_PORT/v1.bundle?sig=t0k3n" > "$T/cred.out" 2>&1 ||
	fail "install from a URL with credentials: $(cat "$T/cred.out")"
grep -q "install from http://\*\*\*@127.0.0.1:$HTTP_PORT/v1.bundle?\*\*\* started" "$T/flashd.log" ||
	fail "the install's log line: $(grep 'install from' "$T/flashd.log" | tail -n 1)"
! grep -q "s3cr3t\|t0k3n" "$T/flashd.log" || fail "a password or token went to the log"
ok "user:password@ and ?query are '***' in the log"
reset_slots

# ---- a server that ignores Range: the first answer is the whole bundle ----
start_proxy --strip-range
fctl --json install "http://127.0.0.1:$PROXY_PORT/v2.bundle" > "$T/norange.out" 2>&1 ||
	fail "install from a server without ranges: $(tail -n 2 "$T/norange.out")"
last_reply "$T/norange.out" "$T/norange.last"
expect_json "$T/norange.last" bytes_downloaded "$(stat -c %s "$T/v2.bundle")" "no ranges"
expect_installed "a server without ranges" 2.0
ok "a server that ignores Range serves the whole bundle in its first answer"
stop_proxy
reset_slots

# ---- a server that accepts and never answers: bounded, clean ----
start_proxy --silent
failed_install silent "http://127.0.0.1:$PROXY_PORT/v1.bundle" "timeout\|timed out"
# stall-timeout=2, one retry after 100 ms: far under 20 s
[ "$secs" -lt 20 ] || fail "the silent server took $secs s to give up"
stop_proxy

# ---- only http and https ----
for url in "file://$T/v1.bundle" "ftp://127.0.0.1/v1.bundle" "gopher://127.0.0.1/"; do
	fctl install "$url" > "$T/scheme.out" 2>&1
	rc=$?
	[ $rc = 2 ] || fail "$url: flashctl exited $rc, expected 2 (usage): $(cat "$T/scheme.out")"
	grep -q "only http:// and https://" "$T/scheme.out" || fail "$url: $(cat "$T/scheme.out")"
	vcall_error "$T/scheme.v" org.varlink.service.InvalidParameter io.flashd.Install "{\"url\":\"$url\"}"
done
ok "file://, ftp://, gopher:// refused before anything starts"
expect_daemon_ok "after the failures"
