# shellcheck shell=bash
# Moved to tests/lib/vm.sh (the one home of the tests' shell helpers);
# this stays for scripts on branches made before the move.
. "$top_srcdir/tests/lib/vm.sh"
