#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Regenerate the seed inputs of tests/fuzz/corpus/ (files named seed-*).
# Inputs libFuzzer found (run-fuzz.sh --merge) and regression inputs
# (regress-*) are kept as they are. Needs a built flashctl, mksquashfs and
# python3. The bundle seeds are signed with tests/fuzz/keys/fuzz-test.key,
# a key made for the fuzzer only: its public half is compiled into
# fuzz-bundle.c and is in no device keyring.
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
C=$top/tests/fuzz/corpus
FLASHCTL=${FLASHCTL:-$top/flashctl}
KEY=$top/tests/fuzz/keys/fuzz-test.key
LAYOUT=$top/layouts/nandsim-128m.json
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
mkdir -p "$C"/{layout,proto,bundle,squashfs,env}
rm -f "$C"/*/seed-*

# layout: the shipped boards and the invalid fixtures of test-layout
for f in "$top"/layouts/*.json "$top"/tests/layouts/*.json; do
	cp "$f" "$C/layout/seed-$(basename "$f")"
done

# proto: byte 0 = control (bit 0 unprivileged peer, bits 1-3 chunk size)
python3 - "$C/proto" <<'PY'
import json, os, sys
d = sys.argv[1]
def msg(method, params=None, **kw):
    m = {"method": method}
    if params is not None:
        m["parameters"] = params
    m.update(kw)
    return json.dumps(m).encode() + b"\0"
seeds = {
    "getinfo": msg("org.varlink.service.GetInfo"),
    "describe": msg("org.varlink.service.GetInterfaceDescription", {"interface": "io.flashd"}),
    "status": msg("io.flashd.GetStatus", {}),
    "install-path": msg("io.flashd.Install", {"path": "/tmp/b.fbd", "activate": True}, more=True),
    "install-fd": msg("io.flashd.Install", {"fd": 0, "slot": "B"}, more=True),
    "setenv": msg("io.flashd.SetEnv", {"name": "bootdelay", "value": "3", "force": False}),
    "setenv-null": msg("io.flashd.SetEnv", {"name": "x", "value": None}),
    "getenv": msg("io.flashd.GetEnv", {"name": "BOOT_ORDER"}),
    "activate-held": msg("io.flashd.Activate", {"slot": "A"}) + msg("io.flashd.GetStatus"),
    "rollback-nomore": msg("io.flashd.Rollback"),
    "oneway": msg("io.flashd.MarkBad", {"slot": "B"}, oneway=True),
    "pipeline": b"".join(msg(m) for m in ["io.flashd.GetStatus", "io.flashd.Cancel",
                                          "io.flashd.MarkGood", "io.flashd.OverlayReset",
                                          "io.flashd.ListEnv", "io.flashd.FlashInfo"]),
    "unknown-method": msg("io.flashd.Nope") + msg("org.example.X"),
    "bad-param": msg("io.flashd.Activate", {"slot": 3, "extra": []}),
    "garbage": b"{\"method\":\0",
}
for name, body in seeds.items():
    for ctl in (0x00, 0x01, 0x02, 0x0a):
        open(os.path.join(d, f"seed-{name}-{ctl:02x}"), "wb").write(bytes([ctl]) + body)
PY

# squashfs: superblocks (and the start) of small images, every compressor
# this mksquashfs knows
mkdir -p "$T/root/etc"
echo "VERSION=1" > "$T/root/etc/os-release"
for comp in gzip xz lz4 zstd lzo lzma; do
	mksquashfs "$T/root" "$T/$comp.sqfs" -noappend -quiet -no-progress -comp "$comp" \
		>/dev/null 2>&1 || continue
	head -c 512 "$T/$comp.sqfs" > "$C/squashfs/seed-$comp"
done

# bundle: small signed bundles (squashfs, gzip raw, two images), one unsigned
head -c 3000 /dev/urandom | base64 > "$T/root/etc/data"
mksquashfs "$T/root" "$T/root.sqfs" -noappend -quiet -no-progress -comp xz >/dev/null
printf 'kernel%.0s' $(seq 200) > "$T/kernel.bin"
make_bundle() { # name args...
	local name=$1
	shift
	"$FLASHCTL" -q bundle create --layout "$LAYOUT" "$@" -o "$C/bundle/seed-$name" >/dev/null
}
make_bundle squashfs --version 1.0 --image rootfs="$T/root.sqfs" --key "$KEY"
make_bundle gzip --version 1.1 --gzip --image rootfs="$T/root.sqfs" --key "$KEY"
make_bundle unsigned --version 0.9 --image rootfs="$T/root.sqfs" --no-sign
# format 3.0 (the chunk table after the block hashes), 2.0 and 1.0
make_bundle chunks --version 1.2 --image rootfs="$T/root.sqfs" --image kernel:raw="$T/kernel.bin" \
	--key "$KEY"
make_bundle format2 --version 1.3 --no-chunks --image rootfs="$T/root.sqfs" --key "$KEY"
cp "$C/bundle/seed-squashfs" "$T/b"
m=$(od -An -tu4 -j12 -N4 "$T/b" | tr -d ' ')
tail -c +33 "$T/b" | head -c "$m" > "$C/bundle/seed-manifest.json"

# env: byte 0 board (bits 0-1 slots-1, bits 2-5 max tries, bit 7 env blob),
# byte 1 operation (bits 0-2 op, 3-5 slot+1, bit 7 force), then NAME=VALUE lines
python3 - "$C/env" <<'PY'
import os, sys
d = sys.argv[1]
states = {
    "fresh": "BOOT_ORDER=A B\nBOOT_A_LEFT=3\nBOOT_B_LEFT=3\n",
    "trial": "BOOT_ORDER=B A\nBOOT_A_LEFT=3\nBOOT_B_LEFT=2\n",
    "bad": "BOOT_ORDER=A\nBOOT_A_LEFT=3\nBOOT_B_LEFT=0\n",
    "exhausted": "BOOT_ORDER=A B\nBOOT_A_LEFT=0\nBOOT_B_LEFT=0\n",
    "unset": "bootdelay=3\n",
    "foreign": "BOOT_ORDER=X A system0\nBOOT_A_LEFT=1\n",
    "empty-order": "BOOT_ORDER=\nBOOT_A_LEFT=3\n",
    "four": "BOOT_ORDER=D C B A\nBOOT_A_LEFT=9\nBOOT_B_LEFT=1\nBOOT_C_LEFT=0\nBOOT_D_LEFT=5\n",
    "junk": "BOOT_A_LEFT=3x\n",
    "rauc": "BOOT_ORDER=A B\nBOOT_A_LEFT=3\nBOOT_B_LEFT=3\nrauc_slot=A\nbootcmd=run flashd_boot\n",
}
for name, text in states.items():
    for b0, b1 in ((0x0d, 0x00), (0x0d, 0x12), (0x8d, 0x0a), (0x8d, 0x93), (0x0f, 0x1b)):
        open(os.path.join(d, f"seed-{name}-{b0:02x}{b1:02x}"), "wb").write(bytes([b0, b1]) + text.encode())
PY
du -sk "$C"/* | sed 's/^/corpus KiB: /'
