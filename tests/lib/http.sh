# SPDX-License-Identifier: LGPL-2.1-or-later
# shellcheck shell=bash
# HTTP(S) for the network install tests (tests/net/): a real lighttpd on
# 127.0.0.1 serving $T/www, a test CA and server certificate made by
# openssl at test time, and the fault proxy (tests/net/fault-proxy.py).
# Needs sim-board.sh first ($T). A missing lighttpd skips (77).
#
#   start_httpd            # $HTTP_PORT (http), $HTTPS_PORT (https, CA $T/ca.pem)
#   cp $T/v1.bundle $T/www/; fctl install http://127.0.0.1:$HTTP_PORT/v1.bundle
#   start_proxy --drop-at 300000   # $PROXY_PORT, forwards to lighttpd's http port
#   http_requests / http_bytes     # from lighttpd's access log

. "$top_srcdir/tests/lib/lighttpd.sh"

LIGHTTPD=$(command -v lighttpd 2>/dev/null || echo /usr/sbin/lighttpd)
[ -x "$LIGHTTPD" ] || skip "lighttpd is not installed (apt-get install lighttpd lighttpd-mod-openssl)"
need openssl

# a port nobody listens on right now
free_port() {
	"$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# make_ca: $T/ca.pem (+key) and a server certificate for 127.0.0.1 signed by it
# ($T/server.pem: certificate and key, as lighttpd takes it); $T/other-ca.pem:
# a second CA that signed nothing we serve.
make_ca() {
	local d=$T/pki
	mkdir -p "$d"
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
		-subj "/CN=flashd test CA" -keyout "$d/ca.key" -out "$T/ca.pem" 2>/dev/null ||
		fail "openssl: test CA"
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
		-subj "/CN=another CA" -keyout "$d/other.key" -out "$T/other-ca.pem" 2>/dev/null ||
		fail "openssl: other CA"
	openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=127.0.0.1" \
		-keyout "$d/server.key" -out "$d/server.csr" 2>/dev/null || fail "openssl: server key"
	printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\n' > "$d/ext"
	openssl x509 -req -in "$d/server.csr" -CA "$T/ca.pem" -CAkey "$d/ca.key" \
		-CAcreateserial -days 2 -extfile "$d/ext" -out "$d/server.crt" 2>/dev/null ||
		fail "openssl: server certificate"
	cat "$d/server.crt" "$d/server.key" > "$T/server.pem"
	# a client certificate from the test CA (for the port that asks for one)
	openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=board-42" \
		-keyout "$T/client.key" -out "$d/client.csr" 2>/dev/null || fail "openssl: client key"
	openssl x509 -req -in "$d/client.csr" -CA "$T/ca.pem" -CAkey "$d/ca.key" \
		-CAcreateserial -days 2 -out "$T/client.pem" 2>/dev/null ||
		fail "openssl: client certificate"
}

# start_httpd: lighttpd in the foreground of a background job, http on
# $HTTP_PORT, https on $HTTPS_PORT, https that requires a client
# certificate from the test CA on $MTLS_PORT; access log "request status
# [X-Flashd-Test header] bytes".
start_httpd() {
	local i
	mkdir -p "$T/www"
	make_ca
	HTTP_PORT=$(free_port)
	HTTPS_PORT=$(free_port)
	MTLS_PORT=$(free_port)
	{
		lighttpd_conf "$T" "$HTTP_PORT" "%r %s [%{X-Flashd-Test}i] %b" \
			'"mod_accesslog", "mod_openssl"'
		cat <<CONF
\$SERVER["socket"] == "127.0.0.1:$HTTPS_PORT" {
	ssl.engine = "enable"
	ssl.pemfile = "$T/server.pem"
}
\$SERVER["socket"] == "127.0.0.1:$MTLS_PORT" {
	ssl.engine = "enable"
	ssl.pemfile = "$T/server.pem"
	ssl.ca-file = "$T/ca.pem"
	ssl.verifyclient.activate = "enable"
	ssl.verifyclient.enforce = "enable"
}
CONF
	} > "$T/lighttpd.conf"
	"$LIGHTTPD" -D -f "$T/lighttpd.conf" >"$T/lighttpd.out" 2>&1 &
	HTTPD_PID=$!
	BG_PIDS="$BG_PIDS $HTTPD_PID"
	for i in $(seq 1 100); do
		"$PY" -c "import socket; socket.create_connection(('127.0.0.1', $HTTP_PORT), 1)" \
			2>/dev/null && return 0
		kill -0 "$HTTPD_PID" 2>/dev/null || break
		sleep 0.05
	done
	cat "$T/lighttpd.out" "$T/lighttpd.err" >&2 2>/dev/null
	fail "lighttpd did not start"
}

# start_proxy [fault-proxy options]: $PROXY_PORT, forwarding to lighttpd's
# http port with the faults asked for; its log in $T/proxy.log.
start_proxy() {
	PROXY_PORT=$(free_port)
	"$PY" "$top_srcdir/tests/net/fault-proxy.py" --listen "$PROXY_PORT" \
		--upstream "$HTTP_PORT" "$@" >"$T/proxy.log" 2>&1 &
	PROXY_PID=$!
	BG_PIDS="$BG_PIDS $PROXY_PID"
	wait_for 10 "$PY" -c "import socket; socket.create_connection(('127.0.0.1', $PROXY_PORT), 1)" \
		2>/dev/null || fail "the fault proxy did not start: $(cat "$T/proxy.log")"
}

stop_proxy() {
	[ -n "${PROXY_PID:-}" ] && kill "$PROXY_PID" 2>/dev/null && wait "$PROXY_PID" 2>/dev/null
	PROXY_PID=
}

# requests for PATH in lighttpd's access log, and the body bytes sent for it
http_requests() { grep -c "^GET $1 " "$T/access.log" 2>/dev/null || echo 0; }
http_bytes() { awk -v p="$1" '$2 == p { n += $NF } END { print n + 0 }' "$T/access.log"; }

# network_conf [KEY=VALUE...]: a [network] section appended to flashd.conf
network_conf() {
	{
		echo "[network]"
		for kv in "$@"; do echo "$kv"; done
	} >> "$FLASHD_DIR/flashd.conf"
}

# reset_slots: a fresh A/B state (A booted and first, B out of use; B's
# data stays), flashd restarted on it
reset_slots() {
	stop_daemon
	"$FLASHCTL" -q slot init --layout "$LAYOUT" --target "$TARGET" \
		--cmdline "$FLASHD_DIR/cmdline" >/dev/null || fail "slot init"
	start_daemon
}

# expect_installed WHAT VERSION: slot B holds VERSION, verified, and boots next
expect_installed() {
	fctl --json status > "$T/st.json" || fail "$1: status"
	expect_fields "$T/st.json" "$1" <<-END
	slots.1.version $2
	slots.1.state pending
	next_boot B
	last_install.result success
	operation null
	END
}
