#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# tools/flashd-mkinitramfs with its defaults (issue 34): the UBI drivers
# (ubi, ubifs: ubiblock roots, UBIFS overlays) are in without -m, and the
# image is written 0644 (an installer reads it; it holds no secret).
# Needs a kernel module tree: the harness kernel (nandsim/vm-run --prepare,
# make vm-prepare); skips without one.
. "$(dirname "$0")/../lib/common.sh"

need cpio gzip file
file -L /bin/busybox 2>/dev/null | grep -q 'statically linked' || skip "no static busybox (busybox-static)"
cache=${FLASHD_VM_CACHE:-$top_builddir/.cache/vm}
kroot=""
for d in "$cache"/*/root; do [ -d "$d/lib/modules" ] && kroot=$d; done
[ -n "$kroot" ] || skip "no kernel module tree in $cache (make vm-prepare)"
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT

(umask 077 && "$top_srcdir/tools/flashd-mkinitramfs" -k "$kroot" -f "$FLASHD" \
	-l "$top_srcdir/layouts/nand-ubi.json" "$W/initrd.gz") >"$W/log" 2>&1 ||
	{ cat "$W/log"; fail "flashd-mkinitramfs failed"; }
check "the image is 0644 (also under umask 077)" test "$(stat -c %a "$W/initrd.gz")" = 644
gzip -dc "$W/initrd.gz" | (cd "$W" && mkdir x && cd x && cpio -idm --quiet) || fail "cpio"
for m in ubi ubifs mtdblock squashfs overlay; do
	check "module $m in by default" grep -qx "$m.ko" "$W/x/etc/flashd/modules"
done
# UBIFS does not load without the zstd compressor, which no dependency names
check "zstd loaded before ubifs" test "$(grep -x -e zstd.ko -e ubifs.ko "$W/x/etc/flashd/modules" | tr '\n' ' ')" = "zstd.ko ubifs.ko "
check "flashd in it" test -x "$W/x/usr/sbin/flashd"
check_done
