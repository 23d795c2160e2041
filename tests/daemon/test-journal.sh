#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# The daemon's events in the journal (issue 34 item 12): a real
# systemd-journald, private to this test (a mount namespace of its own
# with tmpfs on /run/systemd and /run/log: the daemon's sd_journal_send()
# reaches it at /run/systemd/journal/socket), receives what flashd logs
# under JOURNAL_STREAM; 'journalctl MESSAGE_ID=...' finds each event with
# its fields: install started / finished / failed, slot activated / marked
# good / bad, rollback, the bootloader's fallback, the health verdict (pass
# and fail), a degraded env (malformed variable, dead copy). The catalog
# that ships parses with journalctl (--update-catalog into a root of its
# own) and explains every MESSAGE_ID of daemon/log.h.

if [ -z "${FLASHD_JOURNAL_NS:-}" ]; then
	. "$(dirname "$0")/../lib/common.sh"
	[ "$(id -u)" = 0 ] || skip "needs root: a journald of its own in a mount namespace"
	need unshare journalctl
	unshare -m true 2>/dev/null || skip "unshare -m fails here: no mount namespace"
	FLASHD_JOURNAL_NS=1 exec unshare -m --propagation private "$0" "$@"
fi

. "$(dirname "$0")/../lib/sim-board.sh"

JOURNALD=
for j in /lib/systemd/systemd-journald /usr/lib/systemd/systemd-journald; do
	[ -x "$j" ] && JOURNALD=$j && break
done
[ -n "$JOURNALD" ] || skip "systemd-journald is not installed"
NSIMCTL=$top_builddir/nsimctl
[ -x "$NSIMCTL" ] || fail "$NSIMCTL not built"

# ---- the catalog parses and explains every event ----
mkdir -p "$T/root/usr/lib/systemd/catalog" "$T/root/var/lib/systemd/catalog"
cp "$top_srcdir/systemd/flashd.catalog" "$T/root/usr/lib/systemd/catalog/"
journalctl --root="$T/root" --update-catalog > "$T/cat.out" 2>&1 ||
	fail "journalctl --update-catalog: $(cat "$T/cat.out")"
journalctl --root="$T/root" --list-catalog > "$T/catalog.txt" 2>&1 ||
	fail "journalctl --list-catalog: $(cat "$T/catalog.txt")"
# the table of daemon/log.h: X(LOG_EVENT_..., "name", "id", level)
sed -n 's/.*X(LOG_EVENT_[A-Z_]*, "\([a-z-]*\)", "\([0-9a-f]\{32\}\)".*/\1 \2/p' \
	"$top_srcdir/daemon/log.h" > "$T/events"
[ "$(wc -l < "$T/events")" -ge 10 ] || fail "read only $(wc -l < "$T/events") events from daemon/log.h"
while read -r name id; do
	grep -q "^$id flashd: " "$T/catalog.txt" ||
		check_fail "event $name ($id): no entry in the catalog journalctl read: $(cat "$T/catalog.txt")"
done < "$T/events"
event_id() { sed -n "s/^$1 //p" "$T/events"; }

# ---- a journald of this test's own ----
mkdir -p /run/systemd /run/log
mount -t tmpfs -o mode=0755 tmpfs /run/systemd || fail "tmpfs on /run/systemd"
mount -t tmpfs -o mode=0755 tmpfs /run/log || fail "tmpfs on /run/log"
[ -d /var/log/journal ] && { mount -t tmpfs tmpfs /var/log/journal || fail "tmpfs on /var/log/journal"; }
mkdir -p /run/systemd/journal
SYSTEMD_LOG_TARGET=console "$JOURNALD" > "$T/journald.log" 2>&1 &
BG_PIDS="$BG_PIDS $!"
wait_for 20 test -S /run/systemd/journal/socket || fail "journald did not start: $(cat "$T/journald.log")"
# the daemon's stderr would be the journal's under systemd: log_open() sees it so
export JOURNAL_STREAM=0:0

# expect_event NAME WHAT FIELD=REGEX...: an entry with the event's
# MESSAGE_ID whose fields all match (waits a little: journald writes
# what it received in its own time)
expect_event() {
	local name=$1 what=$2 id
	shift 2
	id=$(event_id "$name")
	[ -n "$id" ] || fail "no event '$name' in daemon/log.h"
	wait_for 5 journal_has "$id" "$@" ||
		check_fail "$what: no $name entry (MESSAGE_ID=$id) with $*: $(cat "$T/j.err")"
}

journal_has() {
	local id=$1
	shift
	journalctl -D /run/log/journal -o json --no-pager "MESSAGE_ID=$id" > "$T/j.json" 2>"$T/j.err"
	"$PY" - "$T/j.json" "$@" 2>>"$T/j.err" <<'PYEOF'
import json, re, sys
entries = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
want = [a.split('=', 1) for a in sys.argv[2:]]
for e in entries:
    if all(isinstance(e.get(k), str) and re.fullmatch(v, e[k]) for k, v in want):
        sys.exit(0)
print('entries: ' + ' | '.join(
    ' '.join('%s=%s' % (k, e[k]) for k in sorted(e) if not k.startswith('_'))
    for e in entries), file=sys.stderr)
sys.exit(1)
PYEOF
}

HEALTH_COMMAND="exit \$(cat $T/health-rc)"
setup_board
echo 0 > "$T/health-rc"
make_bundle v1 1.0 2
make_bundle v2 2.0 2
factory_a "$T/v1.bundle"   # A holds v1: a rollback onto A reads it
start_daemon

# ---- install: started, finished; a bundle that is none: failed ----
fctl -q install "$T/v1.bundle" > "$T/i1.out" 2>&1 || fail "install v1: $(cat "$T/i1.out")"
expect_event install-started "install v1" "BUNDLE_SOURCE=$T/v1.bundle" CLIENT_UID=0 \
	"WORKER_PID=[0-9]+" "PRIORITY=6" "MESSAGE=install started by uid 0 .*"
expect_event install-finished "install v1" SLOT=B VERSION=1.0 "BYTES=[1-9][0-9]*" \
	"ERASES=[0-9]+" "BLOCKS_SKIPPED=[0-9]+" "BUNDLE_SOURCE=$T/v1.bundle" \
	"MESSAGE=installed version 1.0 into slot B .*"
head -c 100000 /dev/urandom > "$T/junk.bundle"
fctl -q install "$T/junk.bundle" > "$T/i2.out" 2>&1 && fail "a bundle of random bytes was installed"
expect_event install-failed "install of random bytes" RESULT=failed "ERROR=.+" \
	"BUNDLE_SOURCE=$T/junk.bundle" PRIORITY=3 "MESSAGE=install failed: .*"

# ---- B boots on trial, its health check passes ----
reboot_board
[ "$BOOTED" = B ] || fail "boot-select chose $BOOTED, expected B"
wait_for 20 daemon_idle || fail "the health check did not finish"
expect_event health-passed "health check on B" SLOT=B VERDICT=pass PRIORITY=5 \
	"MESSAGE=health check passed: slot B marked good"

# ---- the operator's slot operations ----
fctl slot rollback > "$T/rb.out" 2>&1 || fail "rollback: $(cat "$T/rb.out")"
expect_event rollback "rollback" SLOT=A CLIENT_UID=0 "MESSAGE=rollback of slot A by uid 0"
fctl slot activate B > "$T/ac.out" 2>&1 || fail "activate B: $(cat "$T/ac.out")"
expect_event slot-activated "activate B" SLOT=B "MESSAGE=activate of slot B by uid 0"
fctl slot mark-bad A > "$T/mb.out" 2>&1 || fail "mark-bad A: $(cat "$T/mb.out")"
expect_event slot-bad "mark-bad A" SLOT=A CLIENT_UID=0
fctl slot mark-good > "$T/mg.out" 2>&1 || fail "mark-good: $(cat "$T/mg.out")"
expect_event slot-good "mark-good" SLOT=B CLIENT_UID=0

# ---- A with v2 fails its health check ----
fctl -q install "$T/v2.bundle" > "$T/i3.out" 2>&1 || fail "install v2: $(cat "$T/i3.out")"
echo 1 > "$T/health-rc"
reboot_board
[ "$BOOTED" = A ] || fail "boot-select chose $BOOTED, expected A"
wait_for 20 daemon_idle || fail "the failing health check did not finish"
expect_event health-failed "health check on A" SLOT=A VERDICT=fail PRIORITY=3 \
	"ERROR=failed \(exit status 1\)" "MESSAGE=health check failed \(exit status 1\): slot A marked bad"

# ---- A with v2 again never comes up: the bootloader falls back to B ----
echo 0 > "$T/health-rc"
reboot_board
[ "$BOOTED" = B ] || fail "boot-select chose $BOOTED, expected B"
wait_for 20 daemon_idle || fail "the health check on B did not finish"
fctl -q install "$T/v2.bundle" > "$T/i4.out" 2>&1 || fail "install v2 again: $(cat "$T/i4.out")"
stop_daemon
for i in 1 2 3; do
	sel=$(fctl slot boot-select --layout "$LAYOUT" --target "$TARGET") || fail "boot-select $i"
	[ "$sel" = flashd.slot=A ] || fail "boot $i chose $sel, expected A"
done
reboot_board
[ "$BOOTED" = B ] || fail "boot-select chose $BOOTED, expected the fallback to B"
expect_event boot-fallback "fallback to B" SLOT=B BOOT_ORDER=B PRIORITY=4
wait_for 20 daemon_idle || fail "the health check on B did not finish"

# ---- a degraded env: a malformed variable (said at start), a dead copy ----
stop_daemon
env_dump | sed 's/^BOOT_B_LEFT=.*/BOOT_B_LEFT=10/' | tr '\n' '\0' |
	xargs -0 "$FLASHCTL" -q env init --force --layout "$LAYOUT" --target "$TARGET" >/dev/null ||
	fail "env init with BOOT_B_LEFT=10"
start_daemon
expect_event env-degraded "BOOT_B_LEFT=10" MALFORMED=BOOT_B_LEFT "ENV_DEVICE=.+" PRIORITY=4 \
	"MESSAGE=the U-Boot env is degraded: malformed variables: BOOT_B_LEFT"
fctl -q env set --force BOOT_B_LEFT=3 > "$T/es.out" 2>&1 || fail "BOOT_B_LEFT=3: $(cat "$T/es.out")"
stop_daemon
# layouts/nandsim-128m.json: u-boot-env-redund at block 9
"$NSIMCTL" fault "$SIM" --block 9 --erase --program >/dev/null || fail "nsimctl fault"
start_daemon
fctl env set FOO=1 > "$T/e1.out" 2>&1 || fail "env set FOO=1 with a dead copy: $(cat "$T/e1.out")"
fctl env set FOO=2 > "$T/e2.out" 2>&1 || fail "env set FOO=2 with a dead copy: $(cat "$T/e2.out")"
fctl status > /dev/null || fail "status with a dead copy"
expect_event env-degraded "copy 2 dead" ENV_DEAD_COPY=2 "MESSAGE=.*copy 2 is dead.*"

# ---- the daemon's own lines stay plain ones, without an ID ----
journalctl -D /run/log/journal -o json --no-pager _COMM=flashd > "$T/all.json" 2>&1 ||
	fail "journalctl: $(cat "$T/all.json")"
grep -q '"MESSAGE":"ready: board' "$T/all.json" || check_fail "the ready line is not in the journal"
check_done
