#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The Debian packages (debian/) in a clean Debian 12 root: builds them with
# dpkg-buildpackage from a copy of the tree, reviews them with lintian,
# makes a minbase bookworm root with mmdebstrap, installs them there with
# apt (their Depends come from the archive) and checks inside:
#   - flashd (the device build): flashd --version, the dlopen()ed libraries
#     (every *_SONAME of config.h) are there, a signed bundle verifies
#     (nettle, hogweed), the host commands are left out;
#   - its units are enabled and pass systemd-analyze verify;
#   - update-initramfs -c with a real kernel (linux-image-amd64) and a board
#     layout: the image holds flashd, the layout, the boot script and the
#     root's modules (lsinitramfs);
#   - flashd-host-tools: bundle keygen/create (libcrypto), and a daemon on
#     a simulated board (flash sim-create) that answers flashctl status.
# Needs root, dpkg-buildpackage with the Build-Depends (tools/deps.sh test),
# mmdebstrap and Debian's archive; skips (77) without them.
# Downloaded packages are kept in $FLASHD_PKG_CACHE (default
# /var/cache/flashd-pkg-test) so that a second run downloads nothing.
# Run by ./run-tests and `make pkg-check`; not part of make check (minutes).
. "$(dirname "$0")/../lib/common.sh"

[ "$(id -u)" = 0 ] || skip "needs root (mmdebstrap's root mode, chroot)"
need dpkg-buildpackage dpkg-checkbuilddeps mmdebstrap git tar
MIRROR=${FLASHD_PKG_MIRROR:-http://deb.debian.org/debian}
CACHE=${FLASHD_PKG_CACHE:-/var/cache/flashd-pkg-test}
[ -n "$PY" ] || skip "python3 is not installed (the archive probe)"
"$PY" -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1] + "/dists/bookworm/InRelease", timeout=20)' \
	"$MIRROR" 2>/dev/null || skip "Debian's archive ($MIRROR) is not reachable"
git -C "$top_srcdir" rev-parse --show-toplevel >/dev/null 2>&1 ||
	skip "$top_srcdir is not a git checkout (the copy to build is the files git knows)"

T=$(mktemp -d /var/tmp/flashd-test-deb.XXXXXX) || exit 1
cleanup() {
	rc=$?
	if [ "${KEEP_TMP:-0}" = 1 ]; then say "kept $T"; else rm -rf "$T"; fi
	exit $rc
}
trap cleanup EXIT
FAIL_LOG=$T/log
SECONDS=0

# ---- build -------------------------------------------------------------
mkdir -p "$T/src/flashd" "$T/debs"
(cd "$top_srcdir" && git ls-files -co --exclude-standard -z | tar --null -T - -cf -) |
	tar -xf - -C "$T/src/flashd" || fail "cannot copy the tree"
(cd "$T/src/flashd" && dpkg-checkbuilddeps) >"$T/log" 2>&1 ||
	skip "$(tail -n 1 "$T/log") (tools/deps.sh test installs them)"
# the unit tests are make check's (dh_auto_test runs them in a plain build)
(cd "$T/src/flashd" && DEB_BUILD_OPTIONS="nocheck parallel=$(nproc)" \
	dpkg-buildpackage -b -uc -us) >"$T/log" 2>&1 || fail "dpkg-buildpackage failed"
t_build=$SECONDS
cp "$T"/src/*.deb "$T/debs/"
for p in flashd flashd-host-tools flashd-common; do
	ls "$T"/debs/${p}_*.deb >/dev/null 2>&1 && ok "built $p" || check_fail "no $p package"
done
say "built in ${t_build} s"

if command -v lintian >/dev/null; then
	lintian --fail-on warning "$T"/src/flashd_*.changes >"$T/lintian" 2>&1 &&
		ok "lintian: no warning ($(grep -c . "$T/lintian") notes)" ||
		check_fail "lintian: $(cat "$T/lintian")"
else
	say "lintian is not installed: the packages were not reviewed"
fi

# The SONAMEs flashd loads with dlopen(): the packages must name them
grep -h '^#define [A-Z]*_SONAME ' "$T"/src/flashd/debian/build-*/config.h |
	sed 's/.*"\(.*\)".*/\1/' | sort -u >"$T/sonames"
[ -s "$T/sonames" ] || fail "no *_SONAME in the builds' config.h"

# ---- the checks inside the root ------------------------------------------
cat >"$T/device-check.sh" <<'EOF'
#!/bin/sh
# In the root with flashd (device) and a kernel: its programs, units, initramfs.
fails=0
ok() { echo "ok: $*"; }
bad() { echo "FAIL: $*"; fails=$((fails + 1)); }
flashd --version >/tmp/out 2>&1 && grep -q 'flashd' /tmp/out && ok "flashd --version: $(head -1 /tmp/out)" ||
	bad "flashd --version: $(cat /tmp/out)"
[ "$(readlink -f /usr/sbin/flashd)" = /usr/lib/flashd/device/flashd ] &&
	ok "/usr/sbin/flashd is the device build" || bad "/usr/sbin/flashd -> $(readlink -f /usr/sbin/flashd)"
flashctl provision --help >/dev/null 2>/tmp/err; rc=$?
[ $rc = 2 ] && grep -q "host tool" /tmp/err && ok "device flashctl: provision is a host tool" ||
	bad "device flashctl provision: exit $rc: $(cat /tmp/err)"
# what a device loads with dlopen(): all but libcrypto (signing: host tools)
grep -v '^libcrypto' /tmp/sonames | while read -r so; do
	ldconfig -p | grep -q "^[[:space:]]$so " && ok "dlopen()ed $so is installed ($(dpkg -S "*/$so" 2>/dev/null | cut -d: -f1 | head -1))" ||
		echo "FAIL: dlopen()ed $so is not installed"
done
flashctl layout check /etc/flashd/layout.json >/tmp/out 2>&1 && ok "flashctl layout check" ||
	bad "layout check: $(cat /tmp/out)"
# a bundle signed on the host verifies here (nettle, hogweed)
flashctl bundle verify /tmp/good.bundle --keyring /tmp/keyring --compatible flashd,test >/tmp/out 2>&1 &&
	ok "a signed bundle verifies (nettle, hogweed)" || bad "bundle verify: $(cat /tmp/out)"
for u in flashd.socket flashd.service; do
	[ "$(systemctl is-enabled $u 2>/dev/null)" = enabled ] && ok "$u enabled" ||
		bad "$u is $(systemctl is-enabled $u 2>&1)"
done
# --man=no: minbase has no man(1); the pages the units name are checked here
systemd-analyze verify --man=no /lib/systemd/system/flashd.socket /lib/systemd/system/flashd.service \
	>/tmp/out 2>&1 && [ ! -s /tmp/out ] && ok "systemd-analyze verify: clean" ||
	bad "systemd-analyze verify: $(cat /tmp/out)"
for d in $(sed -n 's/^Documentation=//p' /lib/systemd/system/flashd.service /lib/systemd/system/flashd.socket | tr ' ' '\n' | sort -u); do
	page=${d#man:} name=${page%(*} sec=${page#*(}; sec=${sec%)}
	[ -e "/usr/share/man/man$sec/$name.$sec.gz" ] && ok "the units' $d is installed" || bad "the units name $d: not installed"
done
getent group flashd >/dev/null && ok "the group flashd exists (the D-Bus policy's)" ||
	bad "no group flashd: flashd-rauc.conf names a group the package did not create"
grep -q 'policy group="flashd"' /usr/share/dbus-1/system.d/flashd-rauc.conf &&
	ok "flashd-rauc.conf names the group flashd" || bad "flashd-rauc.conf names another group"
kver=$(ls /lib/modules | head -1)
update-initramfs -d -k "$kver" >/dev/null 2>&1
start=$(date +%s)
update-initramfs -c -k "$kver" >/tmp/out 2>&1 && ok "update-initramfs -c -k $kver ($(($(date +%s) - start)) s)" ||
	bad "update-initramfs: $(cat /tmp/out)"
grep -i "flashd" /tmp/out && bad "the flashd hook complained (above)"
lsinitramfs "/boot/initrd.img-$kver" >/tmp/list 2>&1 || bad "lsinitramfs: $(head -3 /tmp/list)"
for f in usr/sbin/flashd etc/flashd/layout.json scripts/flashd; do
	grep -qx "$f" /tmp/list && ok "initramfs has $f" || bad "initramfs lacks $f"
done
for m in mtdblock squashfs overlay ubi ubifs dm-mod jffs2; do
	grep -q "/$m\.ko" /tmp/list && ok "initramfs has the module $m" || bad "initramfs lacks the module $m"
done
exit $fails
EOF

cat >"$T/host-check.sh" <<'EOF'
#!/bin/sh
# In the root with flashd-host-tools too: the full build, a daemon on a
# simulated board.
fails=0
ok() { echo "ok: $*"; }
bad() { echo "FAIL: $*"; fails=$((fails + 1)); }
[ "$(readlink -f /usr/sbin/flashd)" = /usr/lib/flashd/host/flashd ] &&
	ok "with flashd-host-tools, /usr/sbin/flashd is the full build" ||
	bad "/usr/sbin/flashd -> $(readlink -f /usr/sbin/flashd)"
nsimctl --help >/dev/null 2>&1 && ok "nsimctl runs" || bad "nsimctl --help"
while read -r so; do
	ldconfig -p | grep -q "^[[:space:]]$so " && ok "dlopen()ed $so is installed ($(dpkg -S "*/$so" 2>/dev/null | cut -d: -f1 | head -1))" ||
		bad "dlopen()ed $so is not installed"
done </tmp/sonames
D=/tmp/board
mkdir -p $D/keyring $D/state
flashctl -q bundle keygen --out $D/rel >/dev/null && cp $D/rel.pub $D/keyring/ &&
	ok "bundle keygen (libcrypto)" || bad "bundle keygen"
L=/usr/share/flashd/layouts/nandsim-128m.json
flashctl -q flash sim-create $D/board.sim --type nand --size 128MiB --erase-block 128KiB \
	--page 2048 --oob 64 >/dev/null && ok "flash sim-create" || bad "flash sim-create"
flashctl -q env init --layout $L --target sim:$D/board.sim "BOOT_ORDER=A B" BOOT_A_LEFT=3 \
	BOOT_B_LEFT=3 FLASHD_A_STATE=good FLASHD_B_STATE=good >/dev/null && ok "env init" || bad "env init"
echo "flashd.slot=A" >$D/cmdline
printf '[flashd]\nlayout=%s\ntarget=sim:%s\nkeyring=%s\nsocket=%s\nstate-dir=%s\ncmdline=%s\n' \
	$L $D/board.sim $D/keyring $D/flashd.sock $D/state $D/cmdline >$D/flashd.conf
export FLASHD_SOCKET=$D/flashd.sock
flashd --config $D/flashd.conf >$D/flashd.log 2>&1 &
pid=$!
n=0
until flashctl status >/dev/null 2>&1 || [ $n -ge 100 ]; do sleep 0.1; n=$((n + 1)); done
flashctl --json status >$D/status.json 2>&1 && grep -q '"booted"' $D/status.json &&
	ok "a daemon on a simulated board answers flashctl status" ||
	bad "flashctl status: $(cat $D/status.json); daemon log: $(tail -5 $D/flashd.log)"
flashctl status 2>&1 | head -5
kill $pid; wait $pid
exit $fails
EOF

# a bundle the device build verifies, signed with the host build of this tree
B=$T/src/flashd/debian/build-host
mkdir -p "$T/files/keyring"
"$B/flashctl" -q bundle keygen --out "$T/files/rel" >/dev/null && cp "$T/files/rel.pub" "$T/files/keyring/" &&
	head -c 300000 /dev/urandom >"$T/root.img" &&
	"$B/flashctl" -q bundle create --compatible flashd,test --version 1.0 --image "rootfs:raw=$T/root.img" \
		--key "$T/files/rel.key" -o "$T/files/good.bundle" || fail "cannot sign a test bundle"
cp "$T/sonames" "$T/device-check.sh" "$T/host-check.sh" "$T/files/"

mkdir -p "$CACHE"
rm -f "$CACHE"/flashd*.deb
# Device root: minbase + systemd (systemd-analyze) + initramfs-tools, the
# flashd packages, a board layout, then a kernel (its postinst builds an
# initramfs with the hook: MODULES=list keeps it to the hooks' modules;
# INITRD=No leaves that to device-check.sh's update-initramfs -c, which
# the checks read: one build of it instead of two, 10 s each).
# The host tools come last, over the device build (update-alternatives).
DEV=$(cd "$T/debs" && echo flashd_*.deb) COMMON=$(cd "$T/debs" && echo flashd-common_*.deb)
HOSTT=$(cd "$T/debs" && echo flashd-host-tools_*.deb)
APT='env DEBIAN_FRONTEND=noninteractive apt-get install -y -q'
mmdebstrap --variant=minbase --include=systemd,initramfs-tools \
	--skip=download/empty --skip=essential/unlink \
	--setup-hook='mkdir -p "$1"/var/cache/apt/archives/' \
	--setup-hook="sync-in $CACHE /var/cache/apt/archives/" \
	--customize-hook="copy-in $T/files /tmp" \
	--customize-hook='mkdir -p "$1"/tmp/debs' \
	--customize-hook="copy-in $T/debs/$DEV $T/debs/$COMMON $T/debs/$HOSTT /tmp/debs" \
	--customize-hook='cd "$1"/tmp/files && mv sonames keyring good.bundle *-check.sh ..' \
	--customize-hook="chroot \"\$1\" $APT /tmp/debs/$DEV /tmp/debs/$COMMON" \
	--customize-hook='mkdir -p "$1"/etc/flashd && cp "$1"/usr/share/flashd/layouts/nand-ubi.json "$1"/etc/flashd/layout.json' \
	--customize-hook='sed -i "s/^MODULES=.*/MODULES=list/" "$1"/etc/initramfs-tools/initramfs.conf' \
	--customize-hook="chroot \"\$1\" env INITRD=No $APT --no-install-recommends linux-image-amd64" \
	--customize-hook='chroot "$1" sh /tmp/device-check.sh >"$1"/tmp/device.out 2>&1; true' \
	--customize-hook="chroot \"\$1\" $APT /tmp/debs/$HOSTT" \
	--customize-hook="sync-out /var/cache/apt/archives $CACHE" \
	--customize-hook='chroot "$1" sh /tmp/host-check.sh >"$1"/tmp/host.out 2>&1; true' \
	--customize-hook="copy-out /tmp/device.out /tmp/host.out $T" \
	bookworm /dev/null "$MIRROR" >"$T/log" 2>&1 || fail "mmdebstrap failed"
t_root=$((SECONDS - t_build))
rm -f "$CACHE"/flashd*.deb
for part in device host; do
	[ -s "$T/$part.out" ] || fail "no result of the $part checks"
	sed "s/^/$part: /" "$T/$part.out" >&2
	grep -q '^FAIL' "$T/$part.out" && check_fail "the $part checks failed (above)"
	grep -q '^ok' "$T/$part.out" || check_fail "the $part checks said nothing"
done
say "build ${t_build} s, root and checks ${t_root} s, cache $(du -sh "$CACHE" | cut -f1) in $CACHE"
check_done
