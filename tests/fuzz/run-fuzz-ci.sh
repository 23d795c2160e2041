#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# The CI hook of the fuzzers (an automake TEST): each target for a few
# seconds; 77 without clang/libFuzzer, 1 on a crash.
exec "$(dirname "$0")/run-fuzz.sh" --ci
