#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# Regenerate the build system: ./autogen.sh && ./configure && make
set -e
cd "$(dirname "$0")"
mkdir -p m4 build-aux
autoreconf --install --force --warnings=all
