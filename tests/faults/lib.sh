# shellcheck shell=bash
# Moved to tests/lib/vm-board.sh (the one home of the tests' shell
# helpers); this stays for scripts on branches made before the move,
# with the daemon helpers' old names.
. "$top_srcdir/tests/lib/vm-board.sh"
fw_start_daemon() { start_daemon; }
fw_stop_daemon() { stop_daemon; }
