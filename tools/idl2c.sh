#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# idl2c.sh IDL: the io.flashd interface definition as C, gzip-compressed
# (12 KiB of text -> under 5 KiB in every binary; proto_flashd.c inflates
# it for GetInterfaceDescription). Used by am/varlink.am and the fuzzers.
set -e
[ $# -eq 1 ] && [ -r "$1" ] || { echo "usage: idl2c.sh IDL" >&2; exit 2; }
echo "/* Generated from $(basename "$1") by tools/idl2c.sh. Do not edit. */"
echo '#include "proto.h"'
echo 'const unsigned char proto_flashd_idl_gz[] = {'
gzip -9 -n -c "$1" | od -A n -v -t x1 | sed -e 's/ \([0-9a-f][0-9a-f]\)/0x\1,/g' -e 's/^/\t/'
echo '};'
echo 'const size_t proto_flashd_idl_gz_size = sizeof(proto_flashd_idl_gz);'
