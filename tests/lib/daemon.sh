# SPDX-License-Identifier: LGPL-2.1-or-later
# shellcheck shell=bash
# The daemon in a test: its flashd.conf, start (wait until it answers),
# stop, calls. Used on the host's simulated board (tests/lib/sim-board.sh)
# and on the kernel's nandsim in the VM (tests/lib/vm-board.sh). Needs
# tests/lib/common.sh, and before flashd_conf / start_daemon:
#   FLASHD_DIR     flashd.conf, flashd.log, keyring/, state/, cmdline
#   LAYOUT TARGET  the board ("sim:PATH" or "system")
#   FLASHD_SOCKET  (exported: flashctl and varlink-call.py find it there)
# DAEMON_WRAPPER (e.g. "valgrind ...") wraps the daemon when set.
#
# Every reply a test's clients receive (varlink-call.py, flashctl) is
# logged to $FLASHD_DIR/replies.log (FLASHD_TEST_REPLY_LOG) and checked,
# when the daemon stops, against the interface descriptions it served at
# start (tests/lib/varlink-idl.py): a reply the IDL does not declare is a
# check_fail of the test (REPLY_CHECK_FAIL=fail where no check_done
# follows, e.g. in the VM). REPLY_CHECK=0 turns it off.

DAEMON_PID=
DAEMON_WRAPPER=${DAEMON_WRAPPER:-}
# The daemon's tests install, activate and write the env as root does: the
# daemon grants those to root and the socket group alone, and some are
# root's only (a forced raw write). Not root (make distcheck as a user):
# skip, loudly; the suite as root (run-tests, CI) runs them.
[ "$(id -u)" = 0 ] || skip "the daemon's tests change the board as root does: run them as root"

# flashd_conf [HEALTH_COMMAND]: $FLASHD_DIR/flashd.conf for this board;
# the health check never reboots (HEALTH_TIMEOUT seconds, default 20).
# A test appends its own "[flashd]" keys after it.
flashd_conf() {
	{
		echo "[flashd]"
		echo "layout=$LAYOUT"
		echo "target=$TARGET"
		echo "keyring=$FLASHD_DIR/keyring"
		echo "socket=$FLASHD_SOCKET"
		echo "state-dir=$FLASHD_DIR/state"
		echo "cmdline=$FLASHD_DIR/cmdline"
		# RAUC's D-Bus API only where a test asks (it brings its own bus):
		# never the machine's system bus
		echo "rauc-dbus=${RAUC_DBUS:-no}"
		echo "[health]"
		[ -n "${1:-}" ] && echo "command=$1"
		echo "timeout=${HEALTH_TIMEOUT:-20}"
		echo "reboot-on-failure=no"
	} > "$FLASHD_DIR/flashd.conf"
}

daemon_alive() { [ -n "$DAEMON_PID" ] && kill -0 "$DAEMON_PID" 2>/dev/null; }

# daemon_answers: the daemon's socket answers a call (DAEMON_PROBE=flashctl:
# flashctl status instead of varlink-call.py, whose python start-up is
# slow under TCG)
daemon_answers() {
	if [ -n "$PY" ] && [ "${DAEMON_PROBE:-varlink}" = varlink ]; then
		"$PY" "$VCALL" --timeout 5 org.varlink.service.GetInfo >/dev/null 2>&1
	else
		"$FLASHCTL" status >/dev/null 2>&1
	fi
}

REPLY_CHECK=${REPLY_CHECK:-1}
REPLY_CHECK_FAIL=${REPLY_CHECK_FAIL:-check_fail}

# replies_fetch_idl: the interface descriptions as a client sees them
# (GetInterfaceDescription), for replies_check; once per test (the same
# binary serves the same text)
replies_fetch_idl() {
	local i
	[ "$REPLY_CHECK" = 1 ] && [ -n "$PY" ] || return 0
	[ -s "$FLASHD_DIR/idl-org.varlink.service.json" ] && return 0
	export FLASHD_TEST_REPLY_LOG=${FLASHD_TEST_REPLY_LOG:-$FLASHD_DIR/replies.log}
	for i in io.flashd org.varlink.service; do
		"$PY" "$VCALL" --timeout 10 org.varlink.service.GetInterfaceDescription \
			"{\"interface\": \"$i\"}" > "$FLASHD_DIR/idl-$i.json" ||
			fail "GetInterfaceDescription($i): $(cat "$FLASHD_DIR/idl-$i.json")"
	done
}

# replies_check: the replies logged since the last check conform to the
# served IDL; the log is set aside (replies.log.N) so that each is checked once
replies_check() {
	local log=${FLASHD_TEST_REPLY_LOG:-} n=0
	[ "$REPLY_CHECK" = 1 ] && [ -n "$log" ] && [ -s "$log" ] &&
		[ -f "$FLASHD_DIR/idl-io.flashd.json" ] || return 0
	while [ -e "$log.$n" ]; do n=$((n + 1)); done
	mv "$log" "$log.$n"
	"$PY" "$TEST_LIB/varlink-idl.py" check "$FLASHD_DIR/idl-io.flashd.json" \
		"$FLASHD_DIR/idl-org.varlink.service.json" --log "$log.$n" >&2 ||
		"$REPLY_CHECK_FAIL" "replies that the served interface description does not declare (above)"
}

# start_daemon [FLASHD ARGS]: returns once the socket answers (within
# START_TIMEOUT seconds, default 20); the daemon's pid in $DAEMON_PID.
start_daemon() {
	local i
	FAIL_LOG=$FLASHD_DIR/flashd.log
	san_split_leak_checks
	# shellcheck disable=SC2086
	ASAN_OPTIONS=${FLASHD_DAEMON_ASAN_OPTIONS-${ASAN_OPTIONS:-}} \
		$DAEMON_WRAPPER "$FLASHD" -c "$FLASHD_DIR/flashd.conf" "$@" >>"$FLASHD_DIR/flashd.log" 2>&1 &
	DAEMON_PID=$!
	for i in $(seq 1 $((${START_TIMEOUT:-20} * 20))); do
		daemon_alive || fail "flashd exited during startup"
		daemon_answers && { replies_fetch_idl; return 0; }
		sleep 0.05
	done
	fail "flashd did not answer on $FLASHD_SOCKET within ${START_TIMEOUT:-20} s"
}

# stop_daemon: SIGTERM, wait (STOP_TIMEOUT seconds, default 30, then
# SIGKILL); returns the daemon's exit status in $DAEMON_RC.
stop_daemon() {
	local i
	DAEMON_RC=
	[ -n "$DAEMON_PID" ] || return 0
	kill -TERM "$DAEMON_PID" 2>/dev/null
	for i in $(seq 1 $((${STOP_TIMEOUT:-30} * 10))); do
		kill -0 "$DAEMON_PID" 2>/dev/null || break
		sleep 0.1
	done
	if kill -0 "$DAEMON_PID" 2>/dev/null; then
		say "flashd (pid $DAEMON_PID) ignored SIGTERM for ${STOP_TIMEOUT:-30} s: killing it"
		kill -KILL "$DAEMON_PID" 2>/dev/null
	fi
	wait "$DAEMON_PID" 2>/dev/null
	DAEMON_RC=$?
	DAEMON_PID=
	replies_check
	san_check_daemon_log
}

# In a sanitizer build (run-tests' ASan pass): LeakSanitizer checks the
# daemon at its exit and each install worker at the end of its job
# (daemon/worker.c); the clients started once a daemon runs (flashctl
# status, install, env list ... in a loop) do without the check at their
# exit, which costs about 85 ms of CPU each (test-hostile-bundles: 127
# CPU-s with it, 76 without), and keep ASan and UBSan. What runs before
# the first daemon (offline commands: bundle verify of the hostile
# corpus, provisioning) keeps it.
san_split_leak_checks() {
	[ -n "${FLASHD_SAN_CFLAGS:-}" ] && [ -z "${FLASHD_DAEMON_ASAN_OPTIONS+x}" ] || return 0
	FLASHD_DAEMON_ASAN_OPTIONS=${ASAN_OPTIONS:-}
	export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
}

# A sanitizer's report in the daemon's log fails the test (a leak found
# at exit does not change what the clients saw).
san_check_daemon_log() {
	local report
	[ -n "${FLASHD_SAN_CFLAGS:-}" ] && [ -f "$FLASHD_DIR/flashd.log" ] || return 0
	report=$(grep -E -A12 'ERROR: (Address|Leak)Sanitizer|runtime error:' "$FLASHD_DIR/flashd.log" | head -n 40)
	[ -n "$report" ] || return 0
	printf '%s\n' "$report" >&2
	"$REPLY_CHECK_FAIL" "the daemon's log holds a sanitizer report (above)"
}

# assert the daemon still runs and answers GetStatus
expect_daemon_ok() {
	daemon_alive || fail "${1:-}: flashd (pid $DAEMON_PID) is gone"
	"$PY" "$VCALL" --timeout 10 io.flashd.GetStatus > "$FLASHD_DIR/alive.json" 2>&1 ||
		fail "${1:-}: GetStatus is not answered: $(cat "$FLASHD_DIR/alive.json")"
	expect_json "$FLASHD_DIR/alive.json" parameters.compatible "${COMPATIBLE:-flashd,nandsim-128m}" "${1:-}"
}

# ---- calls ----

fctl() { "$FLASHCTL" "$@"; }

# vcall OUT METHOD [PARAMS] [varlink-call options...]: all replies into OUT,
# the final one into OUT.last; the exit status is varlink-call's.
vcall() {
	local out=$1 rc
	shift
	"$PY" "$VCALL" "$@" > "$out" 2> "$out.err"
	rc=$?
	tail -n 1 "$out" > "$out.last"
	return $rc
}

# The last line of a varlink-call.py output (the final reply) to a file.
last_reply() { tail -n 1 "$1" > "$2"; }

# expect_error OUT.last ERROR: the final reply is this Varlink error.
expect_error() {
	expect_json "$1" error "$2" "$1"
}

# vcall_error OUT ERROR METHOD [PARAMS] [options...]: the call is refused
# with the Varlink error ERROR (its reply in OUT.last for more checks).
vcall_error() {
	local out=$1 error=$2
	shift 2
	vcall "$out" "$@" && fail "$* answered, expected $error: $(cat "$out.last")"
	expect_error "$out.last" "$error"
}

# The gated feeder: writes the first BYTES of FILE to stdout, waits until
# $FLASHD_DIR/go-NAME exists, then writes the rest. An install reading
# this pipe holds still at a known point (write phase) for as long as a
# test needs. It gives up after 120 s, or when the test ends ($FLASHD_DIR/abort).
gated_cat() {
	local file=$1 bytes=$2 name=$3 n=2400
	head -c "$bytes" "$file"
	while [ ! -e "$FLASHD_DIR/go-$name" ]; do
		[ -e "$FLASHD_DIR/abort" ] && return 1
		n=$((n - 1))
		[ $n -gt 0 ] || { say "gated_cat $name: never released"; return 1; }
		sleep 0.05
	done
	tail -c +"$((bytes + 1))" "$file"
}

# start_gated_install BUNDLE BYTES NAME: flashctl install of BUNDLE through
# a gated pipe (the first BYTES, then it holds until $FLASHD_DIR/go-NAME
# exists), in the background ($CLIENT, output in $FLASHD_DIR/install-NAME.out).
# Returns once the install is in its write step, with the worker's pid in $WORKER.
start_gated_install() {
	local d=$FLASHD_DIR
	mkfifo "$d/pipe-$3"
	gated_cat "$1" "$2" "$3" > "$d/pipe-$3" &
	BG_PIDS="${BG_PIDS:-} $!"
	"$FLASHCTL" install - < "$d/pipe-$3" > "$d/install-$3.out" 2>&1 &
	CLIENT=$!
	BG_PIDS="$BG_PIDS $CLIENT"
	wait_for 20 install_running || fail "the install of $1 did not reach the write step"
	WORKER=$(sed -n 's/.*install started .*worker pid \([0-9]*\).*/\1/p' "$d/flashd.log" | tail -n 1)
	[ -n "$WORKER" ] || fail "no install worker in the log"
}

# wait until the daemon reports an install in the write step
install_running() {
	"$PY" "$VCALL" --timeout 5 io.flashd.GetStatus > "$FLASHD_DIR/poll.json" 2>/dev/null &&
		[ "$(jget "$FLASHD_DIR/poll.json" parameters.operation)" = install ] &&
		[ "$(jget "$FLASHD_DIR/poll.json" parameters.progress.step 2>/dev/null)" = write ]
}

daemon_idle() {
	"$PY" "$VCALL" --timeout 5 io.flashd.GetStatus > "$FLASHD_DIR/poll.json" 2>/dev/null &&
		[ "$(jget "$FLASHD_DIR/poll.json" parameters.operation)" = null ]
}
