#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# The CI hook of the fuzzers (an automake TEST): each target for a few
# seconds; 77 without clang/libFuzzer, 1 on a crash. The fuzzers are built
# with clang's ASan+UBSan whatever the tree's configure says, and CI runs
# them deterministically (one seed, a fixed number of runs): in a tree
# configured with sanitizers (run-tests' ASan pass, FLASHD_SAN_CFLAGS from
# AM_TESTS_ENVIRONMENT) the run would repeat the plain pass's exactly, so
# it is skipped, loudly.
. "$(dirname "$0")/../lib/common.sh"
skip_in_san_pass "the fuzzers carry their own ASan+UBSan build and run with seed 1 and a fixed number of runs: this tree's sanitizers change nothing in them"
exec "$(dirname "$0")/run-fuzz.sh" --ci
