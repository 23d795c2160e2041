#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# flashd under valgrind (memcheck, full leak check, fork-following) for a
# full install on a simulated board: start, status, install of a signed
# gzip bundle into slot B with progress, a refused corrupt bundle, status,
# SIGTERM. Fails on any memcheck error or definite/indirect/possible leak
# in the daemon or its install worker. Exit 77 without valgrind.
#   tests/faults/valgrind-install.sh        (top_builddir: where flashd is)
. "$(dirname "$0")/../lib/sim-board.sh"
need valgrind
setup_board
make_bundle good 2.0 3 --gzip
"$PY" -c 'import sys;b=bytearray(open(sys.argv[1],"rb").read());b[len(b)//2]^=4;open(sys.argv[2],"wb").write(b)' \
	"$T/good.bundle" "$T/bad.bundle"
HEALTH_TIMEOUT=60 flashd_conf
DAEMON_WRAPPER="valgrind --tool=memcheck --leak-check=full --show-leak-kinds=definite,indirect,possible \
	--errors-for-leak-kinds=definite,indirect,possible --track-fds=no --error-exitcode=99 \
	--child-silent-after-fork=no --log-file=$T/vg.%p.log \
	--suppressions=$top_srcdir/tests/faults/valgrind.supp"
START_TIMEOUT=60
STOP_TIMEOUT=600
start_daemon
t0=$(date +%s)
"$FLASHCTL" install "$T/good.bundle" > "$T/install.log" 2>&1 < /dev/null ||
	fail "install under valgrind failed: $(tail -n 3 "$T/install.log")"
"$FLASHCTL" install "$T/bad.bundle" > "$T/bad.log" 2>&1 < /dev/null && fail "the corrupt bundle was accepted"
"$FLASHCTL" --json status > "$T/status.json" || fail "status after the installs"
say "install of $(stat -c %s "$T/good.bundle") bytes under valgrind: $(( $(date +%s) - t0 )) s"
stop_daemon
rc=$DAEMON_RC
logs=$(ls "$T"/vg.*.log | wc -l)
errs=$(cat "$T"/vg.*.log | sed -n 's/.*ERROR SUMMARY: \([0-9]*\) errors.*/\1/p' | awk '{s+=$1} END {print s+0}')
leaks=$(grep -hE "(definitely|indirectly|possibly) lost: [1-9]" "$T"/vg.*.log | head -n 5)
say "valgrind: $logs process(es) (daemon and install workers), $errs error(s), daemon exit $rc"
[ -z "$leaks" ] || { grep -h -B2 -A25 "lost in loss record" "$T"/vg.*.log | head -n 80; fail "leaks: $leaks"; }
[ "$errs" = 0 ] || { cat "$T"/vg.*.log | grep -A20 "^==[0-9]*== [A-Z]" | head -n 80; fail "$errs memcheck error(s)"; }
[ $rc = 0 ] || fail "flashd exited $rc after SIGTERM under valgrind"
say "PASS: no memcheck errors, no leaks"
