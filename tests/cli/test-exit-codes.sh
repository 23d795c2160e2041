#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# flashctl's exit codes are the ones flashctl(1) documents, --json prints
# valid JSON on every command, -q silences install and provision, and
# non-regular files (a directory, a FIFO) are refused up front, never hang.
#   0 ok, 1 failed, 2 usage, 3 input rejected or a failed check (also a
#   bundle found bad while streaming), 4 permission denied / busy, 5 refused
#   where --force would pass.
# Uses the daemon test helpers (simulated board, own socket).
. "$(dirname "$0")/../lib/sim-board.sh"

E=(--layout "$LAYOUT" --target "$TARGET")

# code WANT WHAT CMD...: run flashctl (60 s at most), check its exit code
code() {
	local want=$1 what=$2 rc
	shift 2
	timeout 60 "$FLASHCTL" "$@" >"$T/out" 2>"$T/err" </dev/null
	rc=$?
	if [ $rc = "$want" ]; then ok "$what: exit $rc"
	else check_fail "$what: exit $rc, expected $want: $(head -c 300 "$T/err")"; fi
}
# msg REGEX WHAT: the last command's stderr says it
msg() { grep -qE "$1" "$T/err" && ok "$2: message" || check_fail "$2: stderr does not match '$1': $(cat "$T/err")"; }
same_env() { env_dump >"$T/env-now"; cmp -s "$T/env-before" "$T/env-now" && ok "$1: env unchanged" ||
	check_fail "$1: env changed: $(diff "$T/env-before" "$T/env-now" | head -5)"; }

setup_board
make_bundle good 2.0 2
"$PY" - "$T" <<'EOF' || fail "cannot make the damaged bundles"
import sys
t = sys.argv[1]
good = open(f"{t}/good.bundle", "rb").read()
mid = len(good) // 2
open(f"{t}/payload.bundle", "wb").write(good[:mid] + bytes([good[mid] ^ 1]) + good[mid + 1:])
open(f"{t}/truncated.bundle", "wb").write(good[: len(good) * 3 // 4])
open(f"{t}/trailing.bundle", "wb").write(good + b"\0" * 100)
EOF
"$FLASHCTL" -q bundle create --compatible flashd,nandsim-128m --version 2.0 --block-size 128KiB \
	--image "rootfs:raw=$T/good.sqfs" --key "$T/rel.key" -o "$T/raw.bundle" || fail "raw bundle"
start_daemon

# ---- 0, 1, 2 ----
code 0 "status" status
code 1 "daemon unreachable" status --socket "$T/nope.sock"
code 1 "bundle file missing" install "$T/missing.bundle"
code 2 "unknown command" frobnicate
code 2 "install without a bundle" install
code 2 "--block-size not a power of two" bundle create --block-size 3K
msg "power of two from 4K to 16M" "--block-size 3K"
code 2 "--block-size with junk" bundle create --block-size 64Kx

# ---- 3: bundles found bad while streaming (were 1) ----
for b in payload truncated trailing; do
	code 3 "install, $b found while streaming" install "$T/$b.bundle"
	msg "InvalidBundle" "$b"
	[ "$(env_var BOOT_ORDER)" = A ] && [ "$(env_var BOOT_A_LEFT)" = 3 ] &&
		ok "$b: slot A untouched" || check_fail "$b: BOOT_ORDER '$(env_var BOOT_ORDER)'"
done
grep -qi "trailing" "$T/err" || check_fail "trailing: reason: $(cat "$T/err")"
code 3 "invalid layout" layout check "$top_srcdir/tests/layouts/overlap.json"

# ---- 3: a rootfs of another type than the layout's (item 8), env untouched ----
env_dump >"$T/env-before"; cp "$SIM" "$T/sim-before"
code 3 "install rootfs:raw into a squashfs slot" install "$T/raw.bundle"
msg "rootfs.*type raw.*squashfs.*InvalidBundle" "raw rootfs"
same_env "raw rootfs"
cmp -s "$SIM" "$T/sim-before" && ok "raw rootfs: flash unchanged" || check_fail "raw rootfs: flash changed"

# ---- non-regular files: refused up front, messages true, no hang (item 11) ----
code 3 "install a directory" install /tmp
msg "not a regular file \(a directory\).*env is unchanged" "install a directory"
grep -q "marked bad" "$T/err" && check_fail "install a directory: claims a slot is marked bad"
same_env "install a directory"
mkfifo "$T/fifo"
code 3 "install a FIFO" install "$T/fifo"
code 1 "flash info sim:FIFO" flash info "sim:$T/fifo"
msg "not a flash simulator" "flash info sim:FIFO"
timeout 20 "$top_builddir/nsimctl" info "$T/fifo" >/dev/null 2>"$T/err"
rc=$?
[ $rc = 1 ] && ok "nsimctl info FIFO: exit 1" || check_fail "nsimctl info FIFO: exit $rc"

# ---- 5: refusals --force overrides (were 4) ----
code 5 "env set BOOT_ORDER without --force" env set BOOT_ORDER=B "${E[@]}"
code 5 "env init over a valid env" env init "${E[@]}"
code 5 "flash sim-create over a file" flash sim-create "$SIM" --type nor --size 1MiB --erase-block 64KiB
same_env "the --force refusals"
# slot A is the last slot in BOOT_ORDER after the failed installs into B:
# a failed check that --force does not override (3)
code 3 "mark-bad of the last slot in BOOT_ORDER" slot mark-bad A "${E[@]}"
# B back in the order but its install failed: A is the only verified slot,
# --force would take it out (5)
# (by hand, as fw_setenv would: flashctl keeps BOOT_ORDER to verified slots)
{ env_dump | grep -v '^BOOT_ORDER='; echo "BOOT_ORDER=A B"; } | tr '\n' '\0' |
	xargs -0 "$FLASHCTL" -q env init --force "${E[@]}" || check_fail "env init --force BOOT_ORDER"
env_dump >"$T/env-before"
code 5 "mark-bad of the only verified slot" slot mark-bad A "${E[@]}"
msg "force overrides" "mark-bad of the only verified slot"
same_env "mark-bad refused"
"$FLASHCTL" -q env set --force BOOT_ORDER=A "${E[@]}" || check_fail "env set --force BOOT_ORDER=A"

# ---- 4: permission denied ----
if command -v setpriv >/dev/null; then
	chmod 755 "$T"
	timeout 20 setpriv --reuid=65534 --regid=65534 --clear-groups "$FLASHCTL" install \
		"$T/good.bundle" >/dev/null 2>"$T/err" </dev/null
	rc=$?
	[ $rc = 4 ] && ok "install as nobody: exit 4" || check_fail "install as nobody: exit $rc: $(cat "$T/err")"
	chmod 700 "$T"
fi

# ---- -q silences install and provision ----
env_dump >"$T/env-before"
"$FLASHCTL" -q install "$T/good.bundle" >"$T/out" 2>&1 && [ ! -s "$T/out" ] &&
	ok "install -q: silent" || check_fail "install -q printed: $(cat "$T/out")"
"$FLASHCTL" -q provision --layout "$LAYOUT" --bundle "$T/good.bundle" --keyring "$T/keyring" \
	"sim:$T/prov.sim" >"$T/out" 2>&1 && [ ! -s "$T/out" ] &&
	ok "provision -q: silent" || check_fail "provision -q printed: $(cat "$T/out")"

# ---- --json: valid JSON on every command ----
isjson() { "$PY" -c 'import json,sys; json.load(sys.stdin)' <"$T/out" 2>/dev/null; }
j() { # WHAT CMD...: succeeds and prints one JSON document
	local what=$1; shift
	timeout 60 "$FLASHCTL" --json "$@" >"$T/out" 2>"$T/err" </dev/null
	local rc=$?
	if [ $rc = 0 ] && isjson; then ok "--json $what"
	else check_fail "--json $what: exit $rc, stdout: $(head -c 200 "$T/out") stderr: $(head -c 200 "$T/err")"; fi
}
"$FLASHCTL" -q flash sim-create "$T/x.sim" --type nor --size 1MiB --erase-block 64KiB
head -c 1000 /dev/urandom >"$T/data"
j status status
j "overlay status" overlay status
j cancel cancel
j "layout check" layout check "$LAYOUT"
j "layout show" layout show "$LAYOUT"
j "layout mtdparts" layout mtdparts "$LAYOUT"
j "layout nandsim" layout nandsim "$LAYOUT"
j "flash info" flash info "$TARGET"
j "flash sim-create" flash sim-create "$T/y.sim" --type nor --size 1MiB --erase-block 64KiB
j "flash write" flash write "sim:$T/x.sim" "$T/data"
j "flash read" flash read --length 1000 "sim:$T/x.sim" "$T/rd"
j "flash erase" flash erase "sim:$T/x.sim"
j "flash markbad" flash markbad "sim:$T/x.sim" 65536
j "slot status" slot status "${E[@]}"
j "slot bootscript" slot bootscript --layout "$LAYOUT"
j "slot boot-select" slot boot-select --layout "$LAYOUT" --target "sim:$T/prov.sim"
echo flashd.slot=A > "$T/cmdline"   # mark-good of the running A (another slot is read first)
j "slot mark-good" slot mark-good A "${E[@]}" --cmdline "$T/cmdline"
j "slot reset-counters" slot reset-counters "${E[@]}"
j "env get" env get BOOT_ORDER "${E[@]}"
j "env list" env list "${E[@]}"
j "env set" env set foo=bar "${E[@]}"
j "bundle info" bundle info "$T/good.bundle"
j "bundle verify" bundle verify "$T/good.bundle" --keyring "$T/keyring"
j "bundle keygen" bundle keygen --out "$T/k2"
j "bundle create" bundle create --layout "$LAYOUT" --version 3 --image "rootfs=$T/good.sqfs" \
	--key "$T/rel.key" -o "$T/v3.bundle"
j "provision --dry-run" provision --dry-run --layout "$LAYOUT" --bundle "$T/good.bundle" \
	--keyring "$T/keyring" "sim:$T/prov.sim"
j "overlay reset" overlay reset --yes
# install: JSON lines, one per progress step, the result last
"$FLASHCTL" --json install "$T/v3.bundle" >"$T/out" 2>"$T/err"
rc=$?
"$PY" - "$T/out" <<'EOF' && [ $rc = 0 ] && ok "--json install: JSON lines" || check_fail "--json install: exit $rc: $(head -c 300 "$T/out")"
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
assert lines and lines[-1]["step"] == "done" and lines[-1]["version"] == "3", lines[-1:]
EOF
# a failure with --json: nothing but JSON (or nothing) on stdout
"$FLASHCTL" --json install "$T/payload.bundle" >"$T/out" 2>"$T/err"
"$PY" -c 'import json,sys; [json.loads(l) for l in open(sys.argv[1]) if l.strip()]' "$T/out" &&
	ok "--json failed install: stdout is JSON lines" || check_fail "--json failed install: $(head -c 300 "$T/out")"

expect_daemon_ok end
check_done
say PASS
