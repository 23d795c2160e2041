#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# RAUC's D-Bus API (daemon/manager_rauc.c) driven by the real rauc command
# (Debian's rauc 1.8) on a private system bus whose policy is the file
# flashd ships (dist/dbus/flashd-rauc.conf): rauc status (JSON, against
# flashctl status), rauc install of a path and of an http URL (progress,
# Completed, slot B read back), mark-good/mark-bad/mark-active (one env
# store each), a user outside the group refused (by the bus policy and,
# with a permissive policy, by flashd itself), a second install busy.
. "$(dirname "$0")/../lib/sim-board.sh"
. "$TEST_LIB/http.sh"

command -v rauc >/dev/null 2>&1 || skip "rauc is not installed (Debian: rauc, rauc-service): the RAUC D-Bus API is not tested"
command -v dbus-daemon >/dev/null 2>&1 || skip "dbus-daemon is not installed (Debian: dbus): the RAUC D-Bus API is not tested"
need busctl setpriv
RAUC_XML=/usr/share/dbus-1/interfaces/de.pengutronix.rauc.Installer.xml
[ -f "$RAUC_XML" ] || skip "$RAUC_XML is missing (Debian: rauc-service): nothing to compare the interface with"
setup_other_users

RAUC_DBUS=yes
setup_board
make_bundle v2 2.0 3
make_bundle v3 3.0 3
chmod 755 "$T"                   # nobody must reach the bus socket
chmod 644 "$T/v2.bundle"

# ---- a system bus of our own ----
# start_bus POLICY: dbus-daemon with the system bus's defaults (method
# calls denied unless a policy allows them) and POLICY for flashd's name
start_bus() {
	mkdir -p "$T/bus.d"
	sed "s/group=\"flashd\"/group=\"$GROUP\"/" "$1" > "$T/bus.d/flashd-rauc.conf"
	cat > "$T/bus.conf" <<EOF
<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>system</type>
  <auth>EXTERNAL</auth>
  <listen>unix:path=$T/bus</listen>
  <policy context="default">
    <allow user="*"/>
    <deny own="*"/>
    <deny send_type="method_call"/>
    <allow send_type="signal"/>
    <allow send_requested_reply="true" send_type="method_return"/>
    <allow send_requested_reply="true" send_type="error"/>
    <allow receive_type="method_call"/>
    <allow receive_type="method_return"/>
    <allow receive_type="error"/>
    <allow receive_type="signal"/>
    <allow send_destination="org.freedesktop.DBus" send_interface="org.freedesktop.DBus"/>
    <allow send_destination="org.freedesktop.DBus" send_interface="org.freedesktop.DBus.Introspectable"/>
  </policy>
  <includedir>$T/bus.d</includedir>
</busconfig>
EOF
	dbus-daemon --config-file="$T/bus.conf" --nofork --nopidfile > "$T/bus.log" 2>&1 &
	BUS_PID=$!
	BG_PIDS="$BG_PIDS $BUS_PID"
	wait_for 10 test -S "$T/bus" || fail "dbus-daemon did not start: $(cat "$T/bus.log")"
	chmod 666 "$T/bus"
}
stop_bus() { kill "$BUS_PID" 2>/dev/null; wait "$BUS_PID" 2>/dev/null; rm -f "$T/bus"; }
export DBUS_SYSTEM_BUS_ADDRESS=unix:path=$T/bus
bus_owned() { busctl --system status de.pengutronix.rauc >/dev/null 2>&1; }

# ---- no bus: flashd runs, and says so once ----
start_daemon
stop_daemon
n=$(grep -c "no system bus" "$T/flashd.log")
[ "$n" = 1 ] || fail "without a system bus: $n log lines 'no system bus' (expected 1): $(cat "$T/flashd.log")"
ok "no system bus: flashd ran and logged it once"

start_bus "$top_srcdir/dist/dbus/flashd-rauc.conf"
echo "[flashd]" >> "$T/flashd.conf"
echo "socket-group=$GROUP" >> "$T/flashd.conf"
start_daemon
wait_for 10 bus_owned || fail "flashd did not take de.pengutronix.rauc: $(tail -n 5 "$T/flashd.log")"

# ---- the interface as served, against the one rauc-service ships ----
busctl --system call --json=short de.pengutronix.rauc / org.freedesktop.DBus.Introspectable \
	Introspect > "$T/introspect.json" || fail "Introspect"
"$PY" - "$T/introspect.json" "$RAUC_XML" <<'PYEOF' || fail "the served interface differs from rauc-service's (above)"
import json, sys
import xml.etree.ElementTree as ET
IFACE = "de.pengutronix.rauc.Installer"
def members(root):
    i = [x for x in root.iter("interface") if x.get("name") == IFACE]
    assert len(i) == 1, "no interface %s" % IFACE
    out = {}
    for m in i[0]:
        if m.tag == "method" or m.tag == "signal":
            args = [(a.get("direction", "out" if m.tag == "signal" else "in"), a.get("type"),
                     a.get("name")) for a in m.iter("arg")]
            out[(m.tag, m.get("name"))] = args
        elif m.tag == "property":
            out[("property", m.get("name"))] = (m.get("type"), m.get("access"))
    return out
served = members(ET.fromstring(json.load(open(sys.argv[1]))["data"][0]))
shipped = members(ET.parse(sys.argv[2]).getroot())
bad = False
for k in sorted(set(served) | set(shipped)):
    if served.get(k) != shipped.get(k):
        print("%s %s: served %s, rauc-service %s" % (k[0], k[1], served.get(k), shipped.get(k)))
        bad = True
sys.exit(1 if bad else 0)
PYEOF
ok "Introspect: methods, arguments, properties and the signal as rauc-service's interface file says"

# env stores so far: the redundant env's counter (flags byte of the newer copy)
env_stores() {
	"$PY" - "$SIM" <<'PYEOF'
import sys
f = open(sys.argv[1], 'rb')
c = []
for off in (0x100000, 0x120000):
    f.seek(4096 + off + 4); c.append(f.read(1)[0])
print(max(c))
PYEOF
}

# ---- rauc status ----
# rauc_status_check WHAT: rauc status --detailed --output-format=json says
# what flashctl --json status says: booted slot, next boot, each slot's
# bootname, boot status and version
rauc_status_check() {
	rauc status --detailed --output-format=json > "$T/rauc.json" 2> "$T/rauc.err" ||
		fail "$1: rauc status: $(cat "$T/rauc.err")"
	fctl --json status > "$T/fst.json" || fail "$1: flashctl status"
	"$PY" - "$T/rauc.json" "$T/fst.json" "$1" <<'PYEOF' || fail "$1: rauc status and flashctl status differ (above)"
import json, sys
r, f, what = json.load(open(sys.argv[1])), json.load(open(sys.argv[2])), sys.argv[3]
slots = {}
for s in r["slots"]:
    (name, d), = s.items()
    slots[d["bootname"]] = (name, d)
assert r["compatible"] == f["compatible"], (r["compatible"], f["compatible"])
assert r["booted"] == f["booted"], ("booted", r["booted"], f["booted"])
assert slots[f["next_boot"]][0] == r["boot_primary"], ("primary", r["boot_primary"], f["next_boot"])
for i, fs in enumerate(f["slots"]):
    name, d = slots[fs["name"]]
    assert name == "rootfs.%d" % i, (name, i)
    assert d["state"] == ("booted" if fs["booted"] else "inactive"), (name, d["state"])
    want = "good" if fs["priority"] is not None and fs["tries_left"] > 0 else "bad"
    assert d["boot_status"] == want, (name, d["boot_status"], fs)
    ver = d.get("slot_status", {}).get("bundle", {}).get("version")
    assert ver == fs["version"], (name, "version", ver, fs["version"])
print(what, "rauc status:", r["booted"], r["boot_primary"],
      [(s["bootname"], s["state"], s["boot_status"]) for s in (list(x.values())[0] for x in r["slots"])])
PYEOF
}
rauc_status_check "fresh board"
rauc status > "$T/rauc.txt" 2>&1 || fail "rauc status (readable): $(cat "$T/rauc.txt")"
say "rauc status of the board:"
cat "$T/rauc.txt" >&2
as_nobody rauc status --output-format=json > "$T/nb.json" 2>&1 || fail "nobody: rauc status: $(cat "$T/nb.json")"
ok "rauc status: booted, other, states and versions as flashctl says them; nobody reads them too"

# ---- install a path ----
rauc install "$T/v2.bundle" > "$T/inst.out" 2>&1 || fail "rauc install: exit $?: $(cat "$T/inst.out")"
grep -q "^installing$" "$T/inst.out" || fail "rauc install: no Operation 'installing': $(cat "$T/inst.out")"
[ "$(grep -c '^ *[0-9]*% ' "$T/inst.out")" -ge 4 ] || fail "rauc install: too few progress lines: $(cat "$T/inst.out")"
grep -q "100% Installing done." "$T/inst.out" || fail "rauc install: no final progress: $(cat "$T/inst.out")"
grep -q "^Installing \`$T/v2.bundle\` succeeded$" "$T/inst.out" ||
	fail "rauc install: Completed did not say success: $(cat "$T/inst.out")"
expect_installed "rauc install" 2.0
slot_is B "$T/v2.sqfs" "rauc install"
rauc_status_check "after rauc install"
ok "rauc install of a path: progress lines, Completed 0, slot B holds v2 and boots next"

# ---- install a URL ----
reset_slots
start_httpd
cp "$T/v3.bundle" "$T/www/v3.bundle"
wait_for 10 bus_owned || fail "flashd did not take de.pengutronix.rauc after its restart"
rauc install "http://127.0.0.1:$HTTP_PORT/v3.bundle" > "$T/inst-url.out" 2>&1 ||
	fail "rauc install URL: exit $?: $(cat "$T/inst-url.out")"
grep -q "succeeded" "$T/inst-url.out" || fail "rauc install URL: $(cat "$T/inst-url.out")"
[ "$(grep -c '^ *[0-9]*% ' "$T/inst-url.out")" -ge 4 ] || fail "rauc install URL: too few progress lines"
expect_installed "rauc install URL" 3.0
slot_is B "$T/v3.sqfs" "rauc install URL"
grep -q "install from http://127.0.0.1:$HTTP_PORT/v3.bundle started" "$T/flashd.log" ||
	fail "the journal does not name the URL"
ok "rauc install of an http URL: fetched by flashd, slot B holds v3 and boots next"

# rauc-hawkbit-updater's streaming install: the URL with its token header
reset_slots
wait_for 10 bus_owned || fail "flashd did not take de.pengutronix.rauc after its restart"
busctl --system call de.pengutronix.rauc / de.pengutronix.rauc.Installer InstallBundle 'sa{sv}' \
	"http://127.0.0.1:$HTTP_PORT/v3.bundle" 2 http-headers as 1 "X-Flashd-Test: hawkbit-token" \
	tls-no-verify b false > "$T/hb.out" 2>&1 || fail "InstallBundle with http-headers: $(cat "$T/hb.out")"
op_idle() {
	busctl --system get-property de.pengutronix.rauc / de.pengutronix.rauc.Installer Operation |
		grep -q idle
}
wait_for 60 op_idle || fail "the install with http-headers did not end"
expect_installed "InstallBundle with http-headers" 3.0
wait_for 10 grep -q "hawkbit-token" "$T/access.log" ||
	fail "the caller's header did not reach the server: $(cat "$T/access.log")"
busctl --system call de.pengutronix.rauc / de.pengutronix.rauc.Installer InstallBundle 'sa{sv}' \
	"http://127.0.0.1:$HTTP_PORT/v3.bundle" 1 http-headers as 1 "$(printf 'X: a\r\nHost: evil')" \
	> "$T/hb2.out" 2>&1 && fail "a header with a line break was taken"
busctl --system call de.pengutronix.rauc / de.pengutronix.rauc.Installer InstallBundle 'sa{sv}' \
	"http://127.0.0.1:$HTTP_PORT/v3.bundle" 1 tls-ca s /etc/ssl/ca.pem > "$T/hb3.out" 2>&1 &&
	fail "tls-ca was taken"
grep -q "'tls-ca' is not supported by flashd" "$T/hb3.out" || fail "tls-ca refused how? $(cat "$T/hb3.out")"
ok "InstallBundle with rauc-hawkbit-updater's http-headers: the header goes to the server; a header with a line break and tls-ca are refused"

# ---- marks: one env store each ----
# mark ARGS...: rauc status ARGS succeeds with one env store
mark() {
	before=$(env_stores)
	rauc status "$@" > "$T/mark.out" 2>&1 || fail "rauc status $*: $(cat "$T/mark.out")"
	after=$(env_stores)
	[ $((after - before)) -eq 1 ] || fail "rauc status $*: $((after - before)) env stores (expected 1)"
	rauc_status_check "after rauc status $*"
}
mark mark-bad other
grep -q "marked slot rootfs.1 as bad" "$T/mark.out" || fail "mark-bad other: $(cat "$T/mark.out")"
[ "$(jget "$T/fst.json" next_boot)" = A ] || fail "mark-bad other: the next boot is not A"
[ "$(jget "$T/fst.json" slots.1.state)" = bad ] || fail "mark-bad other: slot B is not bad"
mark mark-active other
grep -q "activated slot rootfs.1" "$T/mark.out" || fail "mark-active other: $(cat "$T/mark.out")"
[ "$(jget "$T/fst.json" next_boot)" = B ] || fail "mark-active other: the next boot is not B"
# RAUC's slot names and the bootnames
mark mark-bad rootfs.1
[ "$(jget "$T/fst.json" next_boot)" = A ] || fail "mark-bad rootfs.1: the next boot is not A"
mark mark-active B
[ "$(jget "$T/fst.json" next_boot)" = B ] || fail "mark-active B: the next boot is not B"
reboot_board
wait_for 10 bus_owned || fail "flashd did not take de.pengutronix.rauc after the reboot"
[ "$(jget "$T/fst.json" slots.1.version)" = 3.0 ] || fail "after the reboot: B is not 3.0"
mark mark-good booted
grep -q "marked slot rootfs.1 as good" "$T/mark.out" || fail "mark-good booted: $(cat "$T/mark.out")"
[ "$(jget "$T/fst.json" booted)" = B ] && [ "$(jget "$T/fst.json" slots.1.state)" = good ] ||
	fail "mark-good booted: B is not booted and good"
mark mark-bad A
[ "$(jget "$T/fst.json" slots.0.state)" = bad ] || fail "mark-bad A: slot A is not bad"
# slot A never held an image: activating it would boot what nobody verified
before=$(env_stores)
rauc status mark-active A > "$T/mark.out" 2>&1 && fail "mark-active of an unverified slot passed"
grep -q "refusing to activate slot A: it was not read back as its signed image" "$T/mark.out" ||
	fail "mark-active A refused how? $(cat "$T/mark.out")"
[ "$(env_stores)" = "$before" ] || fail "a refused mark-active wrote the env"
# nor marked good back into BOOT_ORDER (io.flashd's MarkGood reads it first too)
rauc status mark-good A > "$T/mark.out" 2>&1 && fail "mark-good of an unverified slot passed"
grep -q "refusing to mark-good slot A: it was not read back as its signed image" "$T/mark.out" ||
	fail "mark-good A refused how? $(cat "$T/mark.out")"
[ "$(env_stores)" = "$before" ] || fail "a refused mark-good wrote the env"
ok "mark-good booted, mark-bad other, mark-active other (and rootfs.1, bootnames A and B): one env store each; an unverified slot is neither activated nor marked good"

# ---- a user outside the group: the bus policy refuses ----
before=$(env_stores)
as_nobody rauc status mark-bad other > "$T/nb.out" 2>&1 && fail "nobody: mark-bad was not refused"
grep -qi "denied\|not allowed\|rejected" "$T/nb.out" || fail "nobody: mark-bad refused how? $(cat "$T/nb.out")"
as_nobody rauc install "$T/v2.bundle" > "$T/nbi.out" 2>&1 && fail "nobody: install was not refused"
[ "$(env_stores)" = "$before" ] || fail "nobody: the env was written"
# a group member passes the bus and flashd: the group among its
# supplementary groups (as a login's initgroups() gives them), which the bus
# daemon reports from the socket; flashd never guesses from /proc
setpriv --reuid="$NOBODY" --regid="$GID" --groups="$GID" rauc status mark-good booted \
	> "$T/mem.out" 2>&1 || fail "group member: mark-good: $(cat "$T/mem.out")"
ok "a user outside the group is refused by the bus policy; a group member is served"

# ---- a second install while one runs: RAUC's busy error ----
"$FLASHCTL" -q slot init --layout "$LAYOUT" --target "$TARGET" --cmdline "$T/cmdline" >/dev/null 2>&1 || true
stop_daemon
echo "flashd.slot=A" > "$T/cmdline"
"$FLASHCTL" -q slot init --layout "$LAYOUT" --target "$TARGET" --cmdline "$T/cmdline" >/dev/null ||
	fail "slot init"
start_daemon
wait_for 10 bus_owned || fail "flashd did not take de.pengutronix.rauc after its restart"
start_gated_install "$T/v2.bundle" 300000 busy
rauc install "$T/v3.bundle" > "$T/busy.out" 2>&1 && fail "a second install was not refused"
grep -q "Already processing a different method" "$T/busy.out" ||
	fail "second install: not RAUC's busy error: $(cat "$T/busy.out")"
busctl --system call de.pengutronix.rauc / de.pengutronix.rauc.Installer InstallBundle 'sa{sv}' \
	"$T/v3.bundle" 0 > "$T/busy2.out" 2>&1 && fail "busctl: a second install was not refused"
grep -q "Already processing a different method" "$T/busy2.out" || fail "busctl: $(cat "$T/busy2.out")"
busctl --system get-property de.pengutronix.rauc / de.pengutronix.rauc.Installer Operation \
	> "$T/op.out" || fail "Operation"
[ "$(cat "$T/op.out")" = 's "installing"' ] || fail "Operation during an install: $(cat "$T/op.out")"
touch "$T/go-busy"
wait "$CLIENT" || fail "the first install failed: $(cat "$T/install-busy.out")"
ok "a second client installing at the same time gets RAUC's busy error"

# ---- a RAUC bundle, Info ----
cp "$T/v2.sqfs" "$T/rauc.raucb"
chmod 644 "$T/rauc.raucb"
rauc install "$T/rauc.raucb" > "$T/rb.out" 2>&1 && fail "a RAUC bundle was installed"
grep -q "is a RAUC bundle" "$T/rb.out" || fail "RAUC bundle: refused how? $(cat "$T/rb.out")"
busctl --system call de.pengutronix.rauc / de.pengutronix.rauc.Installer Info s "$T/v2.bundle" \
	> "$T/info.out" 2>&1 || fail "Info: $(cat "$T/info.out")"
[ "$(cat "$T/info.out")" = 'ss "flashd,nandsim-128m" "2.0"' ] || fail "Info: $(cat "$T/info.out")"
busctl --system call de.pengutronix.rauc / de.pengutronix.rauc.Installer Info s "$T/rauc.raucb" \
	> "$T/info2.out" 2>&1 && fail "Info of a RAUC bundle answered"
grep -q "is a RAUC bundle" "$T/info2.out" || fail "Info of a RAUC bundle: $(cat "$T/info2.out")"
ok "a RAUC bundle is refused by Install and Info, naming why; Info of a flashd bundle answers"

# ---- a permissive bus policy: flashd itself refuses ----
stop_daemon
stop_bus
start_bus /usr/share/dbus-1/system.d/de.pengutronix.rauc.conf
start_daemon
wait_for 10 bus_owned || fail "flashd did not take de.pengutronix.rauc on the permissive bus"
before=$(env_stores)
as_nobody rauc status mark-bad other > "$T/nb2.out" 2>&1 && fail "nobody on a permissive bus: mark-bad passed"
grep -q "only root and the socket group may change anything" "$T/nb2.out" ||
	fail "nobody on a permissive bus: refused how? $(cat "$T/nb2.out")"
as_nobody rauc install "$T/v2.bundle" > "$T/nb3.out" 2>&1 && fail "nobody on a permissive bus: install passed"
grep -q "only root and the socket group" "$T/nb3.out" || fail "nobody install: $(cat "$T/nb3.out")"
[ "$(env_stores)" = "$before" ] || fail "nobody on a permissive bus: the env was written"
ok "with a permissive bus policy, flashd refuses a user outside the group itself"
