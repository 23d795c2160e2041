#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The flashd demo on the default simulated board (layouts/nandsim-128m.json):
# provision a blank board with version 1.0 in slot A, start flashd, install
# a signed version 2.0 bundle into slot B with progress, switch to it through
# the boot script's choice, let the health check mark it good; then serve
# version 3.0 from a local lighttpd and install it from its http:// URL.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
layout=$top/layouts/nandsim-128m.json
demo=${DEMO_DIR:-$top/build/demo}   # tests/cli/test-demo.sh runs it in a temp dir
flashctl=$top/flashctl
export FLASHD_SOCKET=$demo/flashd.sock

say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
run() { printf '$ %s\n' "$*"; "$@"; }

stop_daemon() {
	if [ -f "$demo/flashd.pid" ]; then
		kill "$(cat "$demo/flashd.pid")" 2>/dev/null || true
		while kill -0 "$(cat "$demo/flashd.pid")" 2>/dev/null; do sleep 0.1; done
		rm -f "$demo/flashd.pid"
	fi
}
start_daemon() {
	rm -f "$FLASHD_SOCKET"
	"$top/flashd" -c "$demo/flashd.conf" >>"$demo/flashd.log" 2>&1 &
	echo $! >"$demo/flashd.pid"
	for _ in $(seq 50); do [ -S "$FLASHD_SOCKET" ] && return 0; sleep 0.1; done
	echo "flashd did not start; its log:" >&2
	cat "$demo/flashd.log" >&2
	exit 1
}
stop_httpd() {
	if [ -f "$demo/lighttpd.pid" ]; then
		kill "$(cat "$demo/lighttpd.pid")" 2>/dev/null || true
		rm -f "$demo/lighttpd.pid"
	fi
}
# lighttpd on 127.0.0.1 (a free port) serving $demo/www
start_httpd() {
	port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
	mkdir -p "$demo/www"
	cat >"$demo/lighttpd.conf" <<CONF
server.document-root = "$demo/www"
server.bind = "127.0.0.1"
server.port = $port
server.errorlog = "$demo/lighttpd.log"
mimetype.assign = ("" => "application/octet-stream")
CONF
	/usr/sbin/lighttpd -D -f "$demo/lighttpd.conf" >>"$demo/lighttpd.log" 2>&1 &
	echo $! >"$demo/lighttpd.pid"
	for _ in $(seq 50); do
		python3 -c "import socket; socket.create_connection(('127.0.0.1', $port), 1)" 2>/dev/null &&
			return 0
		sleep 0.1
	done
	echo "lighttpd did not start; its log:" >&2
	cat "$demo/lighttpd.log" >&2
	exit 1
}
trap 'stop_daemon; stop_httpd' EXIT

# wait_idle WHAT: until flashd runs no operation (its health check after a
# start), read from status's JSON as JSON (the text's spacing is not a
# contract); fails the demo after 10 s
wait_idle() {
	for _ in $(seq 100); do
		if "$flashctl" --json status 2>/dev/null | python3 -c \
			'import json, sys; sys.exit(json.load(sys.stdin)["operation"] is not None)' \
			2>/dev/null; then
			echo "flashd is idle ($1)"
			return 0
		fi
		sleep 0.1
	done
	echo "flashd is still busy after 10 s ($1): $("$flashctl" --json status)" >&2
	exit 1
}

# A root filesystem image: busybox, an os-release with the version, and
# some payload so that the install has work to do.
make_root() { # version
	local dir=$demo/root-$1
	rm -rf "$dir"
	mkdir -p "$dir"/{bin,etc,usr/share/app}
	[ -x /bin/busybox ] && cp /bin/busybox "$dir/bin/"
	printf 'NAME=demo-appliance\nVERSION_ID=%s\n' "$1" >"$dir/etc/os-release"
	head -c $((6 * 1024 * 1024)) /dev/urandom | base64 >"$dir/usr/share/app/assets.txt"
	mksquashfs "$dir" "$demo/root-$1.sqfs" -noappend -quiet -comp xz
}

rm -rf "$demo"
mkdir -p "$demo/keyring"

say "1. Signing key and root images (squashfs)"
run "$flashctl" bundle keygen --out "$demo/release"
cp "$demo/release.pub" "$demo/keyring/"
make_root 1.0
make_root 2.0
make_root 3.0
run "$flashctl" bundle create --layout "$layout" --version 1.0 \
	--image rootfs="$demo/root-1.0.sqfs" --key "$demo/release.key" -o "$demo/v1.0.bundle"

say "2. Provision a blank simulated NAND board (128 MiB, layouts/nandsim-128m.json)"
run "$flashctl" provision --layout "$layout" --bundle "$demo/v1.0.bundle" \
	--keyring "$demo/keyring" "sim:$demo/board.sim"

say "3. Power on: the boot script picks a slot; start flashd"
"$flashctl" slot boot-select --layout "$layout" --target "sim:$demo/board.sim" >"$demo/cmdline"
echo "kernel command line: $(cat "$demo/cmdline")"
cat >"$demo/flashd.conf" <<CONF
[flashd]
layout=$layout
target=sim:$demo/board.sim
keyring=$demo/keyring
socket=$FLASHD_SOCKET
state-dir=$demo/state
cmdline=$demo/cmdline

[health]
# a real board would check its application here
command=test -f $demo/cmdline
timeout=30
reboot-on-failure=no
CONF
start_daemon
wait_idle "the health check of the first boot is done"
run "$flashctl" status

say "4. Build version 2.0 and install it through flashd (into the inactive slot B)"
run "$flashctl" bundle create --layout "$layout" --version 2.0 --gzip \
	--image rootfs="$demo/root-2.0.sqfs" --key "$demo/release.key" -o "$demo/v2.0.bundle"
run "$flashctl" install "$demo/v2.0.bundle"
run "$flashctl" status

say "5. Reboot: the boot script switches to slot B (on trial)"
stop_daemon
"$flashctl" slot boot-select --layout "$layout" --target "sim:$demo/board.sim" >"$demo/cmdline"
echo "kernel command line: $(cat "$demo/cmdline")"
start_daemon
wait_idle "the health check of slot B is done"

say "6. The health check passed: slot B is marked good"
run "$flashctl" status

say "7. Version 3.0 from a web server: flashd's worker downloads it itself (into slot A)"
run "$flashctl" bundle create --layout "$layout" --version 3.0 \
	--image rootfs="$demo/root-3.0.sqfs" --key "$demo/release.key" -o "$demo/v3.0.bundle"
start_httpd
cp "$demo/v3.0.bundle" "$demo/www/"
echo "lighttpd serves $demo/www on http://127.0.0.1:$port/"
run "$flashctl" install "http://127.0.0.1:$port/v3.0.bundle"
run "$flashctl" status
echo
echo "flashd's log: $demo/flashd.log"
grep -E "install|health|marked" "$demo/flashd.log" | sed 's/^/  /'
