#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The device build (configure --disable-host-tools, tools/device-build.sh)
# builds with -Werror, leaves the host tools out and names them as such
# when called (exit 2), and still does a device's work: layouts, bundle
# verification (a bundle signed by the full build passes, a damaged one is
# refused), flashd boot and daemon options. Its size is bench/run's.
. "$(dirname "$0")/../lib/common.sh"

need git tar
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
DEV=$top_builddir/build/device
# exit 3: not the top of a git checkout, e.g. run-tests' ASan pass, which
# runs in a copy below the ignored build/; the plain pass checks the build
DEVICE_BUILD_CONFIGURE=--enable-werror "$top_srcdir/tools/device-build.sh" "$DEV" >"$T/path" 2>"$T/build.err"
rc=$?
[ $rc = 3 ] && skip "$(cat "$T/build.err")"
[ $rc = 0 ] || { cat "$T/build.err" >&2; fail "the device build failed (above)"; }
DFLASHCTL=$DEV/flashctl
[ -x "$DEV/flashd" ] || fail "no $DEV/flashd"
grep -q '^#define FLASHD_HOST_TOOLS 0' "$DEV/config.h" || fail "the device build has host tools on"

# host-only: present in the full build, named as host tools in the device build
for cmd in "provision --help" "bundle create --help" "bundle keygen --help" "flash sim-create --help"; do
	# shellcheck disable=SC2086
	"$FLASHCTL" $cmd >/dev/null 2>&1 || check_fail "full build: flashctl $cmd fails"
	# shellcheck disable=SC2086
	"$DFLASHCTL" $cmd >"$T/out" 2>"$T/err"
	rc=$?
	if [ $rc = 2 ] && grep -q "is a host tool, left out of this device build" "$T/err"; then
		ok "device build: flashctl $cmd refused as a host tool"
	else
		check_fail "device build: flashctl $cmd: exit $rc: $(cat "$T/err")"
	fi
done
"$DFLASHCTL" --help >"$T/out" 2>&1
grep -q "^  layout " "$T/out" && ! grep -q "^  provision " "$T/out" &&
	ok "device build: --help does not list provision" ||
	check_fail "device build: --help: $(cat "$T/out")"
"$DFLASHCTL" nosuch >/dev/null 2>"$T/err"
grep -q "unknown command 'nosuch'" "$T/err" && ok "an unknown command is still unknown" ||
	check_fail "unknown command: $(cat "$T/err")"
"$DFLASHCTL" flash info "sim:$T/x.sim" >/dev/null 2>"$T/err" &&
	check_fail "device build opened a sim: device" || ok "device build: no sim: devices"

# a device's work
check "device build: layout check" "$DFLASHCTL" -q layout check "$top_srcdir/layouts/nand-256m-split.json"
"$FLASHCTL" -q bundle keygen --out "$T/rel" >/dev/null || fail "bundle keygen (full build)"
mkdir -p "$T/keyring" && cp "$T/rel.pub" "$T/keyring/"
head -c 300000 /dev/urandom >"$T/root.img"
"$FLASHCTL" -q bundle create --compatible flashd,test --version 1.0 --image "rootfs:raw=$T/root.img" \
	--key "$T/rel.key" -o "$T/good.bundle" || fail "bundle create (full build)"
check "device build: a signed bundle verifies" \
	"$DFLASHCTL" -q bundle verify "$T/good.bundle" --keyring "$T/keyring" --compatible flashd,test
"$PY" -c 'import sys; b=bytearray(open(sys.argv[1],"rb").read()); b[len(b)//2]^=1; open(sys.argv[2],"wb").write(b)' \
	"$T/good.bundle" "$T/bad.bundle" || fail "cannot damage the bundle"
"$DFLASHCTL" -q bundle verify "$T/bad.bundle" --keyring "$T/keyring" --compatible flashd,test 2>"$T/err"
rc=$?
[ $rc = 3 ] && ok "device build: a damaged bundle is refused (exit 3)" ||
	check_fail "device build: damaged bundle: exit $rc: $(cat "$T/err")"
check "device build: flashd boot --help" "$DEV/flashd" boot --help
check "device build: flashd --version" "$DEV/flashd" --version

# smaller than the full build (the size itself is bench/run's number)
strip -o "$T/full" "$FLASHD" && strip -o "$T/dev" "$DEV/flashd" || fail "strip"
full=$(stat -c %s "$T/full") dev=$(stat -c %s "$T/dev")
say "stripped: full build $full bytes, device build $dev bytes"
[ "$dev" -lt "$full" ] && ok "the device build is smaller" ||
	check_fail "the device build ($dev bytes) is not smaller than the full build ($full)"
check_done
