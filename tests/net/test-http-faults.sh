#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# A flaky network between the board and a real lighttpd (the fault
# proxy, tests/net/fault-proxy.py):
# - connection dropped at 30 % and at 70 %: the worker retries, resumes
#   with Range + If-Range, the install completes and downloads no more
#   than 105 % of the bundle;
# - a transfer that stalls: resumed after stall-timeout;
# - a link that drops again and again: bounded, 20 x retries in all;
# - the bundle replaced on the server while a retry waits: If-Range makes
#   the server send the whole new file, which is refused, never spliced;
# - the server sends other bytes: the hash check fails, nothing is
#   activated, slot B stays marked bad;
# - a cancel during a (throttled) download ends it promptly;
# - the daemon answers while a (throttled) download runs, and a killed
#   daemon leaves no worker downloading;
# - a local user without rights cannot Install a URL.
# Each case has a bundle of its own (random content): nothing of it is in
# slot B yet, so an adaptive install has to fetch the bytes the fault hits.
. "$(dirname "$0")/../lib/sim-board.sh"
. "$TEST_LIB/http.sh"

setup_board
for b in drop:1.0 stall:2.0 swap:3.0 swapped:3.1 corrupt:4.0 slow:5.0 flaky:6.0; do
	make_bundle "${b%:*}" "${b#*:}" 3
done
start_httpd
cp "$T"/*.bundle "$T/www/"
network_conf "stall-timeout=2" "connect-timeout=2" "retries=3" "retry-delay=100"
start_daemon
SIZE=$(stat -c %s "$T/drop.bundle")



# expect_marked_bad WHAT: the install failed after writing began: B out
# of BOOT_ORDER with no tries, A boots next
expect_marked_bad() {
	fctl --json status > "$T/st.json" || fail "$1: status"
	expect_fields "$T/st.json" "$1" <<-END
	booted A
	next_boot A
	slots.0.state good
	slots.1.tries_left 0
	slots.1.priority null
	last_install.result failed
	operation null
	END
}

# ---- dropped at 30 % and 70 %: resumed, completes, <= 105 % downloaded ----
start_proxy --drop-at $((SIZE * 30 / 100)) --drop-at $((SIZE * 70 / 100))
fctl --json install "http://127.0.0.1:$PROXY_PORT/drop.bundle" > "$T/drop.out" 2>&1 ||
	fail "install through drops: exit $?: $(tail -n 2 "$T/drop.out")"
[ "$(grep -c '^drop at' "$T/proxy.log")" = 2 ] || fail "the proxy did not drop twice: $(cat "$T/proxy.log")"
last_reply "$T/drop.out" "$T/drop.last"
DL=$(jget "$T/drop.last" bytes_downloaded)
[ "$DL" -le $((SIZE * 105 / 100)) ] || fail "downloaded $DL bytes of a $SIZE byte bundle (> 105 %)"
expect_installed "dropped twice" 1.0
grep -q "bytes=$((SIZE * 30 / 100 / 1000))[0-9]*-" "$T/access.log" 2>/dev/null ||
	say "(lighttpd's access log does not show the ranges yet: it flushes later)"
ok "dropped at 30 % and 70 %: resumed, $DL bytes downloaded for $SIZE ($((DL * 100 / SIZE)) %)"
stop_proxy
reset_slots

# ---- a stalled transfer is resumed after stall-timeout ----
SIZE=$(stat -c %s "$T/stall.bundle")
start_proxy --stall-at $((SIZE / 2))
fctl --json install "http://127.0.0.1:$PROXY_PORT/stall.bundle" > "$T/stall.out" 2>&1 ||
	fail "install through a stall: exit $?: $(tail -n 2 "$T/stall.out")"
grep -q '^stall at' "$T/proxy.log" || fail "the proxy did not stall"
last_reply "$T/stall.out" "$T/stall.last"
DL=$(jget "$T/stall.last" bytes_downloaded)
[ "$DL" -le $((SIZE * 105 / 100)) ] || fail "stall: downloaded $DL of $SIZE"
expect_installed "stalled once" 2.0
ok "stalled at 50 %: resumed, $DL bytes downloaded"
stop_proxy
reset_slots

# ---- the bundle changes on the server during a retry: never spliced ----
stop_daemon
cp "$FLASHD_DIR/flashd.conf" "$T/flashd.conf.base"
network_conf "retry-delay=3000"   # the later key wins: time to swap the file
start_daemon
SIZE=$(stat -c %s "$T/swap.bundle")
start_proxy --drop-at $((SIZE / 2))
fctl install "http://127.0.0.1:$PROXY_PORT/swap.bundle" > "$T/swap.out" 2>&1 &
CLIENT=$!
BG_PIDS="$BG_PIDS $CLIENT"
wait_for 30 grep -q '^drop at' "$T/proxy.log" || fail "the proxy did not drop"
# a new file (new inode, another mtime): lighttpd's ETag changes
cp "$T/swapped.bundle" "$T/www/.new" && touch -d '+1 hour' "$T/www/.new" &&
	mv "$T/www/.new" "$T/www/swap.bundle"
wait "$CLIENT"
rc=$?
[ $rc != 0 ] || fail "an install spliced from two bundles succeeded: $(cat "$T/swap.out")"
grep -q "changed on the server" "$T/swap.out" || fail "swap: $(cat "$T/swap.out")"
expect_marked_bad "bundle replaced during a retry"
ok "replaced during a retry: refused ($(grep -o 'reason: [^)]*' "$T/swap.out"))"
stop_proxy
stop_daemon
cp "$T/flashd.conf.base" "$FLASHD_DIR/flashd.conf"
reset_slots

# ---- a link that drops every 60 KB: each retry gets further, yet the
# download gives up after 20 x retries (retries=1 here) ----
stop_daemon
cp "$FLASHD_DIR/flashd.conf" "$T/flashd.conf.base"
network_conf "retries=1"
start_daemon
drops=""
for i in $(seq 1 30); do drops="$drops --drop-at $((i * 60000))"; done
# shellcheck disable=SC2086
start_proxy $drops
fctl install "http://127.0.0.1:$PROXY_PORT/flaky.bundle" > "$T/flaky.out" 2>&1 &&
	fail "a download with 30 drops succeeded with retries=1"
grep -q "gave up after .* (20 in all)" "$T/flaky.out" || fail "flaky: $(cat "$T/flaky.out")"
[ "$(grep -c '^drop at' "$T/proxy.log")" = 21 ] ||
	fail "flaky: $(grep -c '^drop at' "$T/proxy.log") drops, expected 21 (first try + 20 retries)"
expect_marked_bad "a link that drops every 60 KB"
ok "dropped every 60 KB: gave up after 20 retries in all"
stop_proxy
stop_daemon
cp "$T/flashd.conf.base" "$FLASHD_DIR/flashd.conf"
reset_slots

# ---- other bytes from the server: hash mismatch, B marked bad ----
SIZE=$(stat -c %s "$T/corrupt.bundle")
start_proxy --corrupt-at $((SIZE / 2))
fctl install "http://127.0.0.1:$PROXY_PORT/corrupt.bundle" > "$T/corrupt.out" 2>&1
rc=$?
[ $rc = 3 ] || fail "other bytes: flashctl exited $rc, expected 3 (invalid bundle): $(cat "$T/corrupt.out")"
grep -q "InvalidBundle" "$T/corrupt.out" || fail "other bytes: $(cat "$T/corrupt.out")"
expect_marked_bad "other bytes"
ok "other bytes: $(grep -o 'reason: [^)]*' "$T/corrupt.out")"
stop_proxy
reset_slots

# start_slow_install BUNDLE BYTES_PER_S: flashctl install of BUNDLE through
# a throttled proxy in the background ($CLIENT); returns in the write step
start_slow_install() {
	start_proxy --throttle "$2"
	fctl install "http://127.0.0.1:$PROXY_PORT/$1" > "$T/$1.out" 2>&1 &
	CLIENT=$!
	BG_PIDS="$BG_PIDS $CLIENT"
	wait_for 20 install_running || fail "the throttled install did not reach the write step"
}

# ---- cancel during a slow download: prompt, B stays marked bad ----
start_slow_install flaky.bundle 200000
t0=$(date +%s%N)
fctl cancel > "$T/cancel-call.out" 2>&1 || fail "flashctl cancel: $(cat "$T/cancel-call.out")"
wait_for 5 daemon_idle || fail "the install did not end within 5 s of the cancel"
ms=$((($(date +%s%N) - t0) / 1000000))
wait "$CLIENT" && fail "the cancelled install succeeded"
fctl --json status > "$T/st.json"
expect_fields "$T/st.json" "cancelled download" <<-END
next_boot A
slots.1.tries_left 0
slots.1.priority null
last_install.result cancelled
END
ok "cancelled during the download: idle after $ms ms, B marked bad"
stop_proxy
reset_slots

# ---- responsive while downloading; a killed daemon leaves no worker ----
start_slow_install slow.bundle 300000
for i in 1 2 3; do
	t0=$(date +%s%N)
	"$PY" "$VCALL" --timeout 2 io.flashd.GetStatus > "$T/busy.json" 2>&1 ||
		fail "GetStatus during a download: $(cat "$T/busy.json")"
	ms=$((($(date +%s%N) - t0) / 1000000))
	expect_json "$T/busy.json" parameters.operation install "GetStatus during a download"
done
ok "GetStatus answered during the download (last in $ms ms)"
WORKER=$(sed -n 's/.*install from .*worker pid \([0-9]*\).*/\1/p' "$T/flashd.log" | tail -n 1)
[ -n "$WORKER" ] && kill -0 "$WORKER" || fail "no running worker"
kill -KILL "$DAEMON_PID"
wait "$DAEMON_PID" 2>/dev/null
DAEMON_PID=
wait_for 5 sh -c "! kill -0 $WORKER 2>/dev/null" || fail "worker $WORKER outlived the killed daemon"
sent1=$(tail -n 1 "$T/proxy.log")
sleep 1
[ "$(tail -n 1 "$T/proxy.log")" = "$sent1" ] || say "(proxy still logging after the kill: $(tail -n 1 "$T/proxy.log"))"
ok "killed daemon: its download worker $WORKER is gone"
stop_proxy
wait "$CLIENT" 2>/dev/null
start_daemon

# ---- a local user without rights cannot install a URL ----
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null; then
	chmod 755 "$T"
	env_dump > "$T/env-before"
	setpriv --reuid=65534 --regid=65534 --clear-groups "$PY" "$VCALL" io.flashd.Install \
		"{\"url\":\"http://127.0.0.1:$HTTP_PORT/drop.bundle\"}" > "$T/nobody.out" 2>&1 &&
		fail "nobody installed a URL"
	tail -n 1 "$T/nobody.out" > "$T/nobody.last"
	expect_error "$T/nobody.last" org.varlink.service.PermissionDenied
	setpriv --reuid=65534 --regid=65534 --clear-groups "$FLASHCTL" install \
		"http://127.0.0.1:$HTTP_PORT/drop.bundle" > "$T/nobody2.out" 2>&1 && fail "nobody: flashctl install URL succeeded"
	env_dump > "$T/env-after"
	cmp -s "$T/env-before" "$T/env-after" || fail "nobody's Install changed the env"
	ok "a user without rights cannot install a URL (PermissionDenied, env unchanged)"
else
	say "not root or no setpriv: the no-rights check is left out"
fi
expect_daemon_ok "after the faults"
