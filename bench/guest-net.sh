# SPDX-License-Identifier: LGPL-2.1-or-later
# shellcheck shell=bash
# Network installs (issue 17), sourced by bench/guest.sh: flashd installs
# bundles from a real lighttpd on the guest's loopback, one workload after
# the other, so that each starts from what the one before left in slot B:
#
#   net-full      slot B erased, no record of it: everything is fetched
#   net-reinstall the same bundle again: only the manifest and the index
#   net-changed   the ~10%-changed image (slot B holds image 1)
#   net-onebyte   image 2 with one byte changed (slot B holds image 2)
#   net-resume    slot B erased, no record; power cut (kill -9 of the daemon
#                 and its worker) once half the bundle is downloaded, then
#                 the same install again: the total fetched across both
#
# Bytes are counted by the server (lighttpd's access log, %b: body bytes
# sent), so the number does not depend on flashd's own accounting. Small
# TCP buffers (as on a device) keep "sent" close to "taken by the client":
# with loopback's default ones, a 4 MiB bundle is in flight before the
# installer has read half of it. The cut run goes through a second port
# throttled to 2 MiB/s, so that the cut lands at half the bundle.

# shellcheck source=tests/lib/lighttpd.sh
. "$top_srcdir/tests/lib/lighttpd.sh"
NET=$tmp/net
net_port=8079 net_slow_port=8078

net_start_httpd() {
	local i
	mkdir -p $NET/www
	ip link set lo up 2>/dev/null || ifconfig lo 127.0.0.1 up 2>/dev/null
	sysctl -q -w net.ipv4.tcp_rmem="4096 65536 131072" net.ipv4.tcp_wmem="4096 65536 131072" \
		net.core.rmem_max=131072 net.core.wmem_max=131072 2>/dev/null
	{
		lighttpd_conf "$NET" "$net_port" "%s %b %r" '"mod_accesslog"'
		cat <<EOT
\$SERVER["socket"] == "127.0.0.1:$net_slow_port" {
	connection.kbytes-per-second = 2048
}
EOT
	} >$NET/lighttpd.conf
	lighttpd -D -f $NET/lighttpd.conf >$NET/lighttpd.out 2>&1 &
	net_httpd=$!
	for i in $(seq 100); do
		(: </dev/tcp/127.0.0.1/$net_port) 2>/dev/null && return 0
		kill -0 $net_httpd 2>/dev/null || break
		sleep 0.1
	done
	net_error="lighttpd did not start: $(cat $NET/lighttpd.out $NET/lighttpd.err 2>/dev/null | tail -c 300)"
	return 1
}

# net_bytes: body bytes and requests the server logged since net_mark.
# lighttpd buffers its access log; SIGHUP (log rotation) writes it out.
net_flush() { kill -HUP "$net_httpd" 2>/dev/null; sleep 1; }
net_mark() { net_flush; net_logpos=$(stat -c %s $NET/access.log 2>/dev/null || echo 0); }
net_bytes() {
	net_flush
	tail -c +$((net_logpos + 1)) $NET/access.log 2>/dev/null |
		awk '{ if ($2 ~ /^[0-9]+$/) b += $2; n++ } END { printf "%d %d\n", b, n }'
}


# net_install NAME BUNDLE [CUT_AT_BYTES]: one timed install from the URL;
# with CUT_AT_BYTES, the daemon and its worker are killed (-9) as soon as
# the install reports that many bytes downloaded. Sets NET_RC, NET_SECONDS.
net_install() {
	local url=http://127.0.0.1:$net_port/$2 t0 t1 w
	[ -n "${3:-}" ] && url=http://127.0.0.1:$net_slow_port/$2
	fd_start
	erase_begin
	t0=$(now)
	if [ -n "${3:-}" ]; then
		FLASHD_SOCKET=$FD/flashd.sock bounded "$FLASHCTL" --json install "$url" >$NET/$1.json 2>$NET/$1.err &
		local cpid=$! i
		for i in $(seq 6000); do
			w=$(tail -n 1 $NET/$1.json 2>/dev/null | sed -n 's/.*"bytes_downloaded":\([0-9]*\).*/\1/p')
			[ "${w:-0}" -ge "$3" ] && break
			kill -0 $cpid 2>/dev/null || break
			sleep 0.1
		done
		# a power cut: the daemon and its install worker die together
		w=$(cat /proc/$fd_pid/task/$fd_pid/children 2>/dev/null)
		kill -9 $w $fd_pid 2>/dev/null
		wait $cpid 2>/dev/null
		NET_RC=0
	else
		FLASHD_SOCKET=$FD/flashd.sock bounded "$FLASHCTL" --json install "$url" >$NET/$1.json 2>$NET/$1.log
		NET_RC=$?
	fi
	t1=$(now)
	erase_end
	fd_stop
	NET_SECONDS=$(elapsed "$t0" "$t1")
}

net_emit() { # WORKLOAD IMAGE BUNDLE BYTES REQUESTS [KEY=VALUE...]
	local w=$1 img=$2 b=$3 bytes=$4 reqs=$5 rec
	shift 5
	install_failed flashd-http "$w" "$NET_RC" \
		"flashctl install URL $(why $NET_RC): $(tail -c 300 $NET/$w.log) / $(tail -n 3 $FD/flashd.log)" &&
		return
	rec=$(jq -c '.[0] | {erases, blocks_skipped, result}' $NET_STATE/installs.json 2>/dev/null)
	install_row flashd-http "$w" "$NET_SECONDS" \
		downloaded="$bytes" requests="$reqs" bundle_bytes="$(stat -c %s "$NET/www/$b")" \
		client_downloaded="$(tail -n 1 $NET/$w.json 2>/dev/null | jq -r '.bytes_downloaded // empty' 2>/dev/null)" \
		own_erases="$(jq -r '.erases' <<<"$rec")" own_skipped="$(jq -r '.blocks_skipped' <<<"$rec")" \
		prefix_bytes="$("$FLASHCTL" --json bundle info "$NET/www/$b" 2>/dev/null | jq -r '.images[0].offset // empty')" \
		verified="$(verified "$img")" "$@" \
		how="flashctl install http://127.0.0.1/BUNDLE (lighttpd; bytes = body bytes the server sent)"
}

run_flashd_http() {
	local w b bytes reqs half v3=$tmp/v3.img
	net_error=""
	command -v lighttpd >/dev/null || net_error="lighttpd is not installed"
	[ -z "$net_error" ] && [ -n "$prov_error" ] && net_error="$prov_error"
	[ -z "$net_error" ] && net_start_httpd
	if [ -n "$net_error" ]; then
		for w in full reinstall changed onebyte resume; do
			emit kind=install contender=flashd-http workload="net-$w" error="$net_error"
		done
		return
	fi
	cp $tmp/flashd-$layout_base-v1.bundle $tmp/flashd-$layout_base-v2.bundle $NET/www/
	cp "$work/flashd-$layout_base-v3.bundle" $NET/www/ 2>/dev/null
	cp "$work/v3.img" $v3 2>/dev/null
	mkdir -p $FD

	NET_STATE=$FD/net-state-1
	fd_conf $NET_STATE
	empty_slot_b
	for w in full:1 reinstall:1 changed:2 onebyte:3; do
		b=flashd-$layout_base-v${w#*:}.bundle
		if [ ! -f "$NET/www/$b" ]; then
			emit kind=install contender=flashd-http workload="net-${w%:*}" error="no $b in $work"
			continue
		fi
		net_mark
		net_install "net-${w%:*}" "$b"
		read -r bytes reqs < <(net_bytes)
		net_emit "net-${w%:*}" "$([ "${w#*:}" = 3 ] && echo $v3 || echo $tmp/v${w#*:}.img)" "$b" "$bytes" "$reqs"
	done

	# resume: an empty slot and no record, cut at half the bundle, again
	NET_STATE=$FD/net-state-2
	fd_conf $NET_STATE
	empty_slot_b
	b=flashd-$layout_base-v1.bundle
	half=$(( $(stat -c %s "$NET/www/$b") / 2 ))
	net_mark
	net_install net-resume-cut "$b" "$half"
	local cut_s=$NET_SECONDS cut_bytes cut_reqs i
	# lighttpd logs the killed request when it gives the connection up,
	# which on the throttled port can be after the flush (one run counted
	# only the cut run's first range): wait until no connection is left
	for i in $(seq 50); do
		[ -z "$(ss -Htn state established "( sport = :$net_slow_port )" 2>/dev/null)" ] && break
		sleep 0.2
	done
	read -r cut_bytes cut_reqs < <(net_bytes)
	net_mark
	net_install net-resume "$b"
	read -r bytes reqs < <(net_bytes)
	net_emit net-resume $tmp/v1.img "$b" $((cut_bytes + bytes)) $((cut_reqs + reqs)) \
		cut_at="$half" cut_downloaded="$cut_bytes" cut_seconds="$cut_s" resume_downloaded="$bytes"
}

# SWUpdate's own downloader (-d -u URL) on the same chain of workloads: it
# fetches the whole .swu every time (no index, no resume across a reboot).
run_swupdate_http() {
	local w s u bytes reqs t0 t1 rc
	net_error=""
	command -v swupdate >/dev/null || net_error="swupdate is not installed"
	command -v lighttpd >/dev/null || net_error="lighttpd is not installed"
	[ -z "$net_error" ] && { [ -n "${net_httpd:-}" ] && kill -0 "$net_httpd" 2>/dev/null || net_start_httpd; }
	mkdir -p $SD
	for w in full:1 reinstall:1 changed:2; do
		s=swu-v${w#*:}-${mtdB}.swu
		if [ -n "$net_error" ] || [ ! -f "$work/$s" ]; then
			emit kind=install contender=swupdate-http workload="net-${w%:*}" error="${net_error:-no $work/$s}"
			continue
		fi
		cp "$work/$s" $NET/www/
		[ "${w%:*}" = full ] && empty_slot_b
		u=http://127.0.0.1:$net_port/$s
		net_mark
		erase_begin
		t0=$(now)
		bounded swupdate -B uboot -k "$work/cms.pem" -H bench:1.0 -d "-u $u" >$SD/net-install.log 2>&1
		rc=$?
		t1=$(now)
		erase_end
		read -r bytes reqs < <(net_bytes)
		install_failed swupdate-http "net-${w%:*}" $rc \
			"swupdate -d $(why $rc): $(grep -E 'ERROR|error' $SD/net-install.log | tail -n 3)" && continue
		install_row swupdate-http "net-${w%:*}" "$(elapsed "$t0" "$t1")" \
			downloaded="$bytes" requests="$reqs" bundle_bytes="$(stat -c %s "$NET/www/$s")" \
			verified="$(verified "$tmp/v${w#*:}.img")" \
			how="swupdate -d '-u URL' (its downloader; flash handler)"
	done
}
