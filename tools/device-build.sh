#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# device-build.sh DIR: build flashd as a device gets it (configure
# --disable-host-tools: no bundle create/keygen, provision or sim: devices)
# in DIR, from the files git tracks in this checkout, and print the path of
# the binary. The in-tree build stays as it is. Used by
# tests/cli/test-device-build.sh and bench/run (the size target).
set -e
[ $# -eq 1 ] || { echo "usage: device-build.sh DIR" >&2; exit 2; }
top=$(cd "$(dirname "$0")/.." && pwd)
dir=$1
# the top of a git work tree (a copy inside one, like run-tests' ASan tree,
# lies in an ignored folder: git would list nothing)
[ "$(git -C "$top" rev-parse --show-toplevel 2>/dev/null)" = "$(cd "$top" && pwd -P)" ] ||
	{ echo "device-build.sh: $top is not the top of a git checkout (the file list comes from git)" >&2; exit 3; }
rm -rf "$dir"
mkdir -p "$dir"
# the tracked files as they are in the working tree (uncommitted changes too)
(cd "$top" && git ls-files -z | tar --null -T - -cf -) | tar -xf - -C "$dir"
cd "$dir"
./autogen.sh >autogen.log 2>&1 || { cat autogen.log >&2; exit 1; }
./configure -q --disable-host-tools ${DEVICE_BUILD_CONFIGURE:-} >configure.log 2>&1 ||
	{ tail -n 20 configure.log >&2; exit 1; }
make -s -j"$(nproc)" flashd >make.log 2>&1 || { tail -n 30 make.log >&2; exit 1; }
ln -sf flashd flashctl
echo "$dir/flashd"
