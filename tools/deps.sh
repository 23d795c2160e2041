#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# Install what flashd needs to build and test, on Debian 12, when missing.
# Usage: tools/deps.sh [build|test]   (test = build + qemu harness tools)
set -e
build_pkgs="build-essential autoconf automake libtool pkg-config
 libjson-c-dev libsystemd-dev libubootenv-dev zlib1g-dev libssl-dev nettle-dev
 libcmocka-dev linux-libc-dev scdoc libcurl4-openssl-dev libsquashfs-dev"
run_pkgs="mtd-utils squashfs-tools libubootenv-tool u-boot-tools openssl
 lighttpd lighttpd-mod-openssl python3"
test_pkgs="qemu-system-x86 busybox-static kmod cpio valgrind python3
 clang libclang-rt-14-dev qemu-system-arm u-boot-qemu
 debhelper mmdebstrap lintian initramfs-tools udev systemd
 rauc rauc-service dbus casync jq bash-completion xz-utils"

case "${1:-build}" in
build) want="$build_pkgs $run_pkgs" ;;
test)  want="$build_pkgs $run_pkgs $test_pkgs" ;;
*) echo "usage: $0 [build|test]" >&2; exit 2 ;;
esac

missing=""
for p in $want; do
	dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q "install ok installed" ||
		missing="$missing $p"
done
[ -z "$missing" ] && exit 0

echo "tools/deps.sh: installing:$missing"
SUDO=""
[ "$(id -u)" = 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
# shellcheck disable=SC2086
$SUDO apt-get install -y -qq --no-install-recommends $missing >/dev/null
