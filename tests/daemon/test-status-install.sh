#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# A new user's session with the daemon on the simulator: status, install
# with progress, reboot, mark-good, rollback, mark-bad, activate, env and
# flash methods -- every --json answer checked field by field, through
# flashctl and through an independent Varlink client (varlink-call.py,
# which also passes the bundle fd with SCM_RIGHTS).
. "$(dirname "$0")/../lib/sim-board.sh"

setup_board
make_bundle v1 1.0 6
make_bundle v2 2.0 3
factory_a "$T/v1.bundle"   # A holds v1: a rollback onto A reads it
SQFS1=$(stat -c %s "$T/v1.sqfs")
start_daemon

# ---- status before anything was installed ----
fctl --json status > "$T/st0.json" || fail "flashctl --json status: exit $?"
expect_fields "$T/st0.json" <<EOF
. {KEYS} layout board compatible slots booted booted_unknown on_trial fell_back switch_pending next_boot next_after_reset degraded last_good last_install overlay flash allow_unsigned operation installing_elsewhere env
layout $LAYOUT
board nandsim 128 MiB NAND (demo and test board)
compatible flashd,nandsim-128m
#slots 2
slots.0 {KEYS} name partition state version health tries_left priority booted
slots.0.name A
slots.0.partition rootfs-a
slots.0.state good
slots.0.version null
slots.0.tries_left 3
slots.0.priority 0
slots.0.booted true
slots.1.name B
slots.1.partition rootfs-b
slots.1.priority 1
slots.1.booted false
booted A
on_trial false
fell_back false
switch_pending false
next_boot A
last_install null
overlay.state unknown
overlay.partition rootfs_data
overlay.fstype jffs2
overlay.rename_whiteout false
#flash 8
flash.6 {KEYS} name device type size erase_size write_size oob_size bad_blocks ecc_corrected ecc_failed
flash.6.name rootfs-b
flash.6.device $SIM
flash.6.type nand
flash.6.size 41943040
flash.6.erase_size 131072
flash.6.write_size 2048
flash.6.oob_size 64
flash.6.bad_blocks 0
allow_unsigned false
operation null
EOF
fctl status > "$T/st0.txt" || fail "flashctl status: exit $?"
grep -q '^Booted slot:  A$' "$T/st0.txt" || fail "flashctl status: no 'Booted slot: A': $(cat "$T/st0.txt")"
grep -q '^Last install: none$' "$T/st0.txt" || fail "flashctl status: no 'Last install: none'"

# ---- install with progress (flashctl, bundle fd passed by flashctl) ----
t0=$(date +%s)
fctl --json install "$T/v1.bundle" > "$T/inst1.out" 2> "$T/inst1.err" ||
	fail "flashctl install: exit $?: $(cat "$T/inst1.err")"
"$PY" - "$T/inst1.out" "$SQFS1" <<'EOF' || fail "install progress check failed"
import json, sys
# JSON lines (flashctl(1)): one object per progress step, the final reply last
objs = [json.loads(l) for l in open(sys.argv[1]).read().split("\n") if l]
progress, final = objs[:-1], objs[-1]
size = int(sys.argv[2])
keys = {"percent", "bytes_done", "bytes_total", "step", "image", "slot", "version",
        "bytes_downloaded"}
order = ["verify", "write", "readback", "activate", "done"]
assert len(progress) >= 5, f"only {len(progress)} progress replies"
last_pct, last_step = -1, 0
for p in progress:
    assert set(p) == keys, f"progress keys {sorted(p)}"
    assert p["bytes_downloaded"] is None, f"an fd install downloaded: {p}"
    assert p["step"] in order, p
    assert order.index(p["step"]) >= last_step, f"step went back: {p}"
    assert p["percent"] >= last_pct, f"percent went back: {p}"
    assert 0 <= p["percent"] <= 100, p
    assert p["bytes_done"] <= p["bytes_total"], p
    if p["step"] in ("write", "readback"):
        assert p["bytes_total"] == 2 * size, f"bytes_total {p['bytes_total']} != 2 x {size}"
        assert p["slot"] == "B" and p["version"] == "1.0", p
        # phase-change reports carry no image; the per-block ones do
        assert p["image"] in ("rootfs", None), p
    last_pct, last_step = p["percent"], order.index(p["step"])
steps = {p["step"] for p in progress}
# readback is its own step only when a separate pass reads the slot back;
# an install that reads each block back as it writes it (a bundle file: the
# adaptive path) counts both in write
assert any(p["step"] == "write" and p["image"] == "rootfs" for p in progress), "no write of rootfs"
assert any(p["step"] in ("write", "readback") and p["percent"] >= 90 for p in progress), \
    f"no write/readback progress near the end: {[(p['step'], p['percent']) for p in progress]}"
assert "write" in steps, f"steps seen: {steps}"
assert set(final) == keys, f"final keys {sorted(final)}"
assert final["step"] == "done" and final["percent"] == 100, final
assert final["slot"] == "B" and final["version"] == "1.0" and final["image"] is None, final
assert final["bytes_done"] == final["bytes_total"] == 2 * size, final
print(f"{len(progress)} progress replies, steps {sorted(steps)}", file=sys.stderr)
EOF
t1=$(date +%s)

fctl --json status > "$T/st1.json" || fail "status after install"
expect_fields "$T/st1.json" <<EOF
slots.1.version 1.0
slots.1.state pending
slots.1.tries_left 3
slots.1.priority 0
slots.0.priority 1
slots.0.tries_left 3
booted A
next_boot B
switch_pending true
operation null
last_install {KEYS} slot version bundle_sha256 result reason started finished bytes erases blocks_skipped signer record_error source bytes_fetched duration error_name running_version running_version_from downgrade history_reset
last_install.slot B
last_install.version 1.0
last_install.result success
last_install.reason null
last_install.bytes $SQFS1
last_install.blocks_skipped 0
last_install.signer $T/keyring/rel.pub
EOF
"$PY" -c 'import json,sys
li=json.load(open(sys.argv[1]))["last_install"]
t0,t1=int(sys.argv[2]),int(sys.argv[3])
assert t0 <= li["started"] <= li["finished"] <= t1, (li, t0, t1)
# the image fills ceil(size / 128 KiB) erase blocks, each erased once
assert li["erases"] == -(-int(sys.argv[4]) // 131072), li' "$T/st1.json" "$t0" "$t1" "$SQFS1" ||
	fail "last_install times/erases wrong: $(jget "$T/st1.json" last_install)"
[ "$(env_var BOOT_ORDER)" = "B A" ] || fail "BOOT_ORDER after install: '$(env_var BOOT_ORDER)'"
[ "$(env_var FLASHD_B_VERSION)" = "1.0" ] || fail "FLASHD_B_VERSION not 1.0"

# ---- the standard Varlink service methods, with an independent client ----
vcall "$T/info" org.varlink.service.GetInfo || fail "GetInfo: $(cat "$T/info")"
expect_fields "$T/info.last" <<EOF
parameters.product flashd
parameters.interfaces ["org.varlink.service", "io.flashd"]
EOF
vcall "$T/desc" org.varlink.service.GetInterfaceDescription '{"interface":"io.flashd"}' ||
	fail "GetInterfaceDescription"
jget "$T/desc.last" parameters.description | grep -q '^interface io.flashd$' ||
	fail "GetInterfaceDescription: no 'interface io.flashd' line"
jget "$T/desc.last" parameters.description | grep -q '^method Install($' ||
	fail "GetInterfaceDescription: no Install method"
vcall "$T/desc2" org.varlink.service.GetInterfaceDescription '{"interface":"io.nope"}' &&
	fail "unknown interface answered"
expect_error "$T/desc2.last" org.varlink.service.InterfaceNotFound
expect_fields "$T/desc2.last" <<EOF
parameters.interface io.nope
EOF

# ---- env methods ----
vcall "$T/ge" io.flashd.GetEnv '{"name":"BOOT_ORDER"}' || fail "GetEnv"
expect_fields "$T/ge.last" <<EOF
parameters {KEYS} name value
parameters.name BOOT_ORDER
parameters.value B A
EOF
vcall "$T/ge2" io.flashd.GetEnv '{"name":"no_such_var"}' || fail "GetEnv unset"
expect_fields "$T/ge2.last" <<EOF
parameters.value null
EOF
vcall "$T/le" io.flashd.ListEnv || fail "ListEnv"
expect_fields "$T/le.last" <<EOF
parameters.variables.BOOT_ORDER B A
parameters.variables.BOOT_A_LEFT 3
parameters.variables.BOOT_B_LEFT 3
parameters.variables.FLASHD_B_VERSION 1.0
EOF
vcall "$T/se" io.flashd.SetEnv '{"name":"bootdelay","value":"5"}' || fail "SetEnv: $(cat "$T/se")"
expect_fields "$T/se.last" <<EOF
parameters {}
EOF
[ "$(env_var bootdelay)" = 5 ] || fail "SetEnv bootdelay=5 not in the env (offline read)"
# without force: what force would pass (flashctl's exit 5, as offline)
vcall_error "$T/se2" io.flashd.ForceRequired io.flashd.SetEnv '{"name":"BOOT_ORDER","value":"A"}'
jget "$T/se2.last" parameters.reason | grep -q "BOOT_ORDER is managed by flashd" ||
	fail "ForceRequired: no reason naming BOOT_ORDER"
[ "$(env_var BOOT_ORDER)" = "B A" ] || fail "refused SetEnv changed BOOT_ORDER"
vcall_error "$T/se3" io.flashd.EnvRefused io.flashd.SetEnv '{"name":"bad=name","value":"1"}'
expect_fields "$T/se3.last" <<EOF
parameters.name bad=name
parameters.reason not a valid U-Boot variable name (empty, too long, or contains '=' or a control character)
EOF
vcall "$T/se4" io.flashd.SetEnv '{"name":"bootdelay","value":null}' || fail "SetEnv delete"
env_var bootdelay && fail "SetEnv value=null did not delete bootdelay"
vcall_error "$T/se5" org.varlink.service.InvalidParameter io.flashd.SetEnv '{"value":"1"}'
expect_fields "$T/se5.last" <<EOF
parameters.parameter name
EOF

# ---- flash and overlay ----
vcall "$T/fi" io.flashd.FlashInfo '{"partition":"rootfs-b"}' || fail "FlashInfo"
expect_fields "$T/fi.last" <<EOF
#parameters.partitions 1
parameters.partitions.0.name rootfs-b
parameters.partitions.0.size 41943040
parameters.partitions.0.erase_size 131072
EOF
vcall "$T/fi2" io.flashd.FlashInfo || fail "FlashInfo (all)"
expect_fields "$T/fi2.last" <<EOF
#parameters.partitions 8
EOF
vcall_error "$T/fi3" io.flashd.NoSuchPartition io.flashd.FlashInfo '{"partition":"nope"}'
expect_fields "$T/fi3.last" <<EOF
parameters.partition nope
EOF
fctl --json overlay status > "$T/ov.json" || fail "overlay status"
expect_fields "$T/ov.json" <<EOF
overlay.state unknown
overlay.fstype jffs2
EOF
vcall "$T/or" io.flashd.OverlayReset || fail "OverlayReset"
expect_fields "$T/or.last" <<EOF
parameters.overlay.state reset_pending
EOF
[ "$(env_var FLASHD_OVERLAY_RESET)" = 1 ] || fail "OverlayReset: FLASHD_OVERLAY_RESET not set"
vcall "$T/os" io.flashd.OverlayStatus || fail "OverlayStatus"
expect_fields "$T/os.last" <<EOF
parameters.overlay.state reset_pending
EOF

# ---- reboot into B: on trial; MarkGood ----
reboot_board
[ "$BOOTED" = B ] || fail "boot-select chose $BOOTED after installing into B"
fctl --json status > "$T/st2.json"
expect_fields "$T/st2.json" <<EOF
booted B
on_trial true
slots.1.booted true
slots.1.state trial
slots.1.tries_left 2
switch_pending false
EOF
vcall "$T/mg" io.flashd.MarkGood || fail "MarkGood: $(cat "$T/mg")"
expect_fields "$T/mg.last" <<EOF
parameters {KEYS} slot
parameters.slot B
EOF
fctl --json status > "$T/st3.json"
expect_fields "$T/st3.json" <<EOF
on_trial false
slots.1.state good
slots.1.tries_left 3
EOF
grep -q "mark-good of slot B by uid 0\|mark.good.*slot B" "$T/flashd.log" || fail "MarkGood not logged"

# ---- rollback to A (good, not booted) ----
vcall "$T/rb" io.flashd.Rollback || fail "Rollback: $(cat "$T/rb")"
expect_fields "$T/rb.last" <<EOF
parameters.slot A
EOF
fctl --json status > "$T/st4.json"
expect_fields "$T/st4.json" <<EOF
next_boot A
switch_pending true
slots.0.priority 0
EOF
[ "$(env_var BOOT_ORDER)" = "A B" ] || fail "BOOT_ORDER after Rollback: '$(env_var BOOT_ORDER)'"

# ---- mark-bad / activate / unknown slots ----
vcall "$T/mb" io.flashd.MarkBad '{"slot":"A"}' || fail "MarkBad A: $(cat "$T/mb")"
expect_fields "$T/mb.last" <<EOF
parameters.slot A
EOF
fctl --json status > "$T/st5.json"
expect_fields "$T/st5.json" <<EOF
slots.0.state bad
slots.0.tries_left 0
slots.0.priority null
next_boot B
EOF
# nothing to roll back to: a clear error, not "no such slot" (issue 31 item 12)
vcall_error "$T/rb2" io.flashd.NoRollbackTarget io.flashd.Rollback
grep -q "no other verified slot" "$T/rb2.last" || fail "Rollback does not say why: $(cat "$T/rb2.last")"
fctl slot rollback > "$T/rb2.out" 2>&1
rc=$?
[ $rc = 3 ] || fail "flashctl slot rollback with nothing to roll back to exited $rc, expected 3"
grep -q "roll back to" "$T/rb2.out" || fail "flashctl slot rollback does not say why: $(cat "$T/rb2.out")"
# A (the factory's, recorded bad) is not running: Activate reads it first
# against the signed index its provision recorded; a bit rotted since, so
# it is refused (issue 31 item 4)
sim_flip_bit $((0x540000 + 2 * 131072 + 5))   # A's v1, rotted since its provision
vcall_error "$T/ac" io.flashd.SlotRefused io.flashd.Activate '{"slot":"A"}'
grep -q "not read back as its signed image" "$T/ac.last" || fail "Activate A: $(cat "$T/ac.last")"
[ "$(env_var BOOT_ORDER)" = B ] || fail "BOOT_ORDER after a refused Activate A: '$(env_var BOOT_ORDER)'"
vcall_error "$T/ac2" io.flashd.NoSuchSlot io.flashd.Activate '{"slot":"Z"}'
expect_fields "$T/ac2.last" <<EOF
parameters.slot Z
EOF
vcall_error "$T/ac3" org.varlink.service.InvalidParameter io.flashd.Activate
vcall_error "$T/mb2" org.varlink.service.InvalidParameter io.flashd.MarkBad '{"slot":7}'

# ---- Install through the independent client: fd via SCM_RIGHTS, more ----
vcall "$T/vi" io.flashd.Install '{"fd":0}' --more --fd "$T/v2.bundle" ||
	fail "Install via varlink-call: $(tail -n 3 "$T/vi")"
"$PY" - "$T/vi" <<'EOF' || fail "varlink-call Install replies"
import json, sys
replies = [json.loads(l) for l in open(sys.argv[1])]
assert len(replies) >= 3, replies
for r in replies[:-1]:
    assert r.get("continues") is True, r
    assert "error" not in r, r
fin = replies[-1]
assert "continues" not in fin and "error" not in fin, fin
p = fin["parameters"]
# booted B: the inactive slot is A
assert p["step"] == "done" and p["slot"] == "A" and p["version"] == "2.0", p
EOF
[ "$(env_var FLASHD_A_VERSION)" = 2.0 ] || fail "FLASHD_A_VERSION after the varlink install"
# without "more": exactly one reply
vcall "$T/vi2" io.flashd.Install "{\"path\":\"$T/v2.bundle\"}" || fail "Install by path: $(cat "$T/vi2")"
[ "$(wc -l < "$T/vi2")" = 1 ] || fail "Install without more sent $(wc -l < "$T/vi2") replies"
expect_fields "$T/vi2.last" <<EOF
parameters.step done
EOF
vcall_error "$T/vi3" io.flashd.InternalError io.flashd.Install '{"path":"relative.bundle"}'
# only regular files: a FIFO would block the daemon, a device has side effects
mkfifo "$T/fifo"
for p in /dev/null "$T/fifo"; do
	vcall_error "$T/vi5" io.flashd.InternalError io.flashd.Install "{\"path\":\"$p\"}"
done
vcall_error "$T/vi4" org.varlink.service.InvalidParameter io.flashd.Install '{}'
# flashctl install from standard input (a pipe), plain progress on stderr
fctl install - < "$T/v1.bundle" > "$T/inst3.out" 2> "$T/inst3.err" ||
	fail "flashctl install - : $(cat "$T/inst3.err")"
grep -q "^Installed version 1.0 into slot A" "$T/inst3.out" ||
	fail "flashctl install: no success line: $(cat "$T/inst3.out")"
grep -q "^write [0-9]*% slot A image rootfs" "$T/inst3.err" ||
	fail "flashctl install: no progress lines: $(head -5 "$T/inst3.err")"
# stdin is the bundle file itself here (adaptive: each block read back as
# it is written, counted in write); a pipe shows a readback step
grep -qE "^(readback |write 9[0-9]% )" "$T/inst3.err" ||
	fail "flashctl install: no progress through the read-back: $(cat "$T/inst3.err")"

expect_daemon_ok "end"
stop_daemon
[ "$DAEMON_RC" = 0 ] || fail "flashd exited with $DAEMON_RC on SIGTERM"
say "PASS (install of $SQFS1 bytes: $((t1 - t0)) s)"
