#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# The CI hook of the fuzzers (an automake TEST): each target for a few
# seconds; 77 without clang/libFuzzer, 1 on a crash. The fuzzers are built
# with clang's ASan+UBSan whatever the tree's configure says, and CI runs
# them deterministically (one seed, a fixed number of runs): in a tree
# configured with sanitizers (run-tests' ASan pass, FLASHD_SAN_CFLAGS from
# AM_TESTS_ENVIRONMENT) the run would repeat the plain pass's exactly, so
# it is skipped, loudly.
if [ -n "${FLASHD_SAN_CFLAGS:-}" ]; then
	echo "run-fuzz-ci: SKIP: the plain pass runs the same fuzzers (their own ASan+UBSan build, seed 1, the same runs); this tree's sanitizers ($FLASHD_SAN_CFLAGS) change nothing in them" >&2
	exit 77
fi
exec "$(dirname "$0")/run-fuzz.sh" --ci
