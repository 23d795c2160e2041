# Shared helpers for the flashd daemon integration tests (sourced).
#
# Every test gets its own temp dir ($T), simulated board, keyring, socket
# and state dir, so tests run in parallel. The daemon is stopped and $T
# removed on exit (KEEP_TMP=1 keeps $T for a look after a failure).
#
#   . "$(dirname "$0")/lib.sh"
#   setup_board            # keys, sim board with a fresh env, flashd.conf
#   make_bundle v1 1.0 4   # $T/v1.bundle: version 1.0, 4 MiB random squashfs
#   start_daemon           # waits until the socket answers
#   fctl --json status > $T/st.json; expect_json $T/st.json slots.0.state good

set -u

: "${top_srcdir:=$(cd "$(dirname "$0")/../.." && pwd)}"
: "${top_builddir:=$top_srcdir}"
top_srcdir=$(cd "$top_srcdir" && pwd)
top_builddir=$(cd "$top_builddir" && pwd)
FLASHD=$top_builddir/flashd
FLASHCTL=$top_builddir/flashctl
VCALL=$top_srcdir/tests/daemon/varlink-call.py
LAYOUT=$top_srcdir/layouts/nandsim-128m.json
TEST_NAME=$(basename "$0" .sh)
DAEMON_PID=
DAEMON_WRAPPER=

say() { printf '%s: %s\n' "$TEST_NAME" "$*" >&2; }

skip() {
	say "SKIP: $*"
	exit 77
}

fail() {
	say "FAIL: $*"
	if [ -n "${T:-}" ] && [ -f "$T/flashd.log" ]; then
		say "---- daemon log ($T/flashd.log) ----"
		tail -n 40 "$T/flashd.log" >&2
	fi
	exit 1
}

need() {
	for c in "$@"; do
		command -v "$c" >/dev/null 2>&1 || skip "'$c' is not installed"
	done
}

# Debian's python3 directly: a version-manager shim (pyenv) costs ~0.1 s a call
PY=/usr/bin/python3
[ -x "$PY" ] || PY=$(command -v python3) || skip "python3 is not installed"
need mksquashfs
[ -x "$FLASHD" ] || fail "$FLASHD not built"
[ -x "$FLASHCTL" ] || fail "$FLASHCTL not built"

T=$(mktemp -d "${TMPDIR:-/tmp}/flashd-$TEST_NAME.XXXXXX") || exit 1
SOCK=$T/flashd.sock
SIM=$T/board.sim
TARGET=sim:$SIM
export FLASHD_SOCKET=$SOCK

# Background helpers a test started: "BG_PIDS="$BG_PIDS $!"" after each "&".
BG_PIDS=

cleanup() {
	rc=$?
	touch "$T/abort"   # releases every gated_cat
	stop_daemon
	for p in $BG_PIDS; do kill -9 "$p" 2>/dev/null; done
	if [ "${KEEP_TMP:-0}" = 1 ] || { [ $rc -ne 0 ] && [ $rc -ne 77 ] && [ -n "${KEEP_TMP_ON_FAIL:-}" ]; }; then
		say "kept $T"
	else
		rm -rf "$T"
	fi
	exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# ---- JSON ----

# jget FILE PATH: the value at PATH ("slots.1.state", "last_install.result")
# in the JSON file: strings raw, everything else as JSON (null, true, 3).
# PATH "." is the whole document; "#PATH" is the length of an array/object.
jget() {
	"$PY" - "$1" "$2" <<'EOF'
import json, sys
doc = json.load(open(sys.argv[1]))
path = sys.argv[2]
count = path.startswith("#")
path = path.lstrip("#")
v = doc
for k in ([] if path in (".", "") else path.split(".")):
    if isinstance(v, list):
        v = v[int(k)]
    elif isinstance(v, dict):
        if k not in v:
            print(f"jget: no key {k!r} in {sys.argv[2]!r}", file=sys.stderr)
            sys.exit(3)
        v = v[k]
    else:
        print(f"jget: {k!r}: not an object or array in {sys.argv[2]!r}", file=sys.stderr)
        sys.exit(3)
if count:
    v = len(v)
try:
    print(v if isinstance(v, str) else json.dumps(v))
except BrokenPipeError:
    pass
EOF
}

# expect_json FILE PATH EXPECTED [WHAT]: fail unless the value at PATH is EXPECTED.
expect_json() {
	local got
	got=$(jget "$1" "$2") || fail "${4:-$1}: cannot read '$2' from $(head -c 600 "$1")"
	[ "$got" = "$3" ] || fail "${4:-$1}: '$2' is '$got', expected '$3'"
}

# expect_fields FILE [WHAT] < LINES: each stdin line is "PATH EXPECTED" (EXPECTED
# is the rest of the line, compared as jget prints it), or "PATH {KEYS} K1 K2..."
# (the object at PATH has exactly these keys); all checked in one python run.
expect_fields() {
	"$PY" -c '
import json, os, sys
doc = json.load(open(sys.argv[1]))
bad = 0
for line in sys.stdin:
    line = line.strip()
    if not line:
        continue
    path, _, want = line.partition(" ")
    count = path.startswith("#")
    v = doc
    try:
        for k in ([] if path.lstrip("#") == "." else path.lstrip("#").split(".")):
            v = v[int(k)] if isinstance(v, list) else v[k]
        if count:
            v = len(v)
        got = v if isinstance(v, str) else json.dumps(v)
    except (KeyError, IndexError, TypeError, ValueError):
        got = "<missing>"
    if want.startswith("{KEYS} "):
        want = " ".join(sorted(want.split()[1:]))
        got = " ".join(sorted(v)) if isinstance(v, dict) else "<not an object>"
    if got != want:
        print(f"{sys.argv[2]}: \"{path}\" is \"{got}\", expected \"{want}\"", file=sys.stderr)
        bad += 1
sys.exit(1 if bad else 0)
' "$1" "${2:-$1}" || fail "${2:-$1}: unexpected field values (above)"
}

# expect_json_keys FILE PATH KEY...: the object at PATH has exactly these keys.
expect_json_keys() {
	local f=$1 p=$2 got want
	shift 2
	got=$("$PY" -c 'import json,sys
d=json.load(open(sys.argv[1]))
for k in ([] if sys.argv[2]=="." else sys.argv[2].split(".")):
    d=d[int(k)] if isinstance(d,list) else d[k]
print(" ".join(sorted(d)))' "$f" "$p") || fail "$f: no object at '$p'"
	want=$(printf '%s\n' "$@" | sort | tr '\n' ' ' | sed 's/ $//')
	[ "$got" = "$want" ] || fail "$f: keys of '$p' are '$got', expected '$want'"
}

# The last line of a varlink-call.py output (the final reply) to a file.
last_reply() { tail -n 1 "$1" > "$2"; }

# ---- board, keys, bundles ----

# Keys, a simulated 128 MiB NAND with an initialised env (BOOT_ORDER="A B",
# 3 tries each) booted from slot A, flashd.conf (health command: $HEALTH_COMMAND).
setup_board() {
	"$FLASHCTL" -q bundle keygen --out "$T/rel" >/dev/null || fail "bundle keygen"
	mkdir -p "$T/keyring" "$T/state"
	cp "$T/rel.pub" "$T/keyring/"
	"$FLASHCTL" -q flash sim-create "$SIM" --type nand --size 128MiB --erase-block 128KiB \
		--page 2048 --oob 64 >/dev/null || fail "flash sim-create"
	"$FLASHCTL" -q env init --layout "$LAYOUT" --target "$TARGET" >/dev/null || fail "env init"
	# provisioned: BOOT_ORDER="A B", full tries, as a factory image has it
	"$FLASHCTL" -q slot init --layout "$LAYOUT" --target "$TARGET" >/dev/null || fail "slot init"
	echo "flashd.slot=A" > "$T/cmdline"
	write_conf "${HEALTH_COMMAND:-}"
}

# write_conf [HEALTH_COMMAND]
write_conf() {
	{
		echo "[flashd]"
		echo "layout=$LAYOUT"
		echo "target=$TARGET"
		echo "keyring=$T/keyring"
		echo "socket=$SOCK"
		echo "state-dir=$T/state"
		echo "cmdline=$T/cmdline"
		echo "[health]"
		[ -n "${1:-}" ] && echo "command=$1"
		echo "timeout=20"
		echo "reboot-on-failure=no"
	} > "$T/flashd.conf"
}

# make_bundle NAME VERSION MIB: $T/NAME.bundle, a signed bundle whose
# rootfs is a squashfs holding MIB MiB of random (incompressible) data.
make_bundle() {
	local d=$T/$1.root
	mkdir -p "$d/etc"
	echo "VERSION=$2" > "$d/etc/os-release"
	head -c "$(($3 * 1024 * 1024))" /dev/urandom > "$d/payload"
	mksquashfs "$d" "$T/$1.sqfs" -noappend -quiet -no-progress >/dev/null || fail "mksquashfs"
	rm -rf "$d"
	"$FLASHCTL" -q bundle create --layout "$LAYOUT" --version "$2" --image "rootfs=$T/$1.sqfs" \
		--key "$T/rel.key" -o "$T/$1.bundle" >/dev/null || fail "bundle create $1"
}

# ---- the daemon ----

daemon_alive() { [ -n "$DAEMON_PID" ] && kill -0 "$DAEMON_PID" 2>/dev/null; }

# start_daemon [FLASHD ARGS]: $DAEMON_WRAPPER (e.g. valgrind ...) may wrap it.
start_daemon() {
	local i
	# shellcheck disable=SC2086
	$DAEMON_WRAPPER "$FLASHD" -c "$T/flashd.conf" "$@" >>"$T/flashd.log" 2>&1 &
	DAEMON_PID=$!
	for i in $(seq 1 $((${START_TIMEOUT:-10} * 20))); do
		daemon_alive || fail "flashd exited during startup"
		if "$PY" "$VCALL" --timeout 5 org.varlink.service.GetInfo >/dev/null 2>&1; then
			return 0
		fi
		sleep 0.05
	done
	fail "flashd did not answer on $SOCK within ${START_TIMEOUT:-10} s"
}

# stop_daemon: SIGTERM, wait; returns the daemon's exit status in $DAEMON_RC.
stop_daemon() {
	local i
	DAEMON_RC=
	[ -n "$DAEMON_PID" ] || return 0
	kill -TERM "$DAEMON_PID" 2>/dev/null
	for i in $(seq 1 300); do
		kill -0 "$DAEMON_PID" 2>/dev/null || break
		sleep 0.1
	done
	if kill -0 "$DAEMON_PID" 2>/dev/null; then
		say "flashd (pid $DAEMON_PID) ignored SIGTERM for 30 s: killing it"
		kill -KILL "$DAEMON_PID" 2>/dev/null
	fi
	wait "$DAEMON_PID" 2>/dev/null
	DAEMON_RC=$?
	DAEMON_PID=
}

# assert the daemon still runs and answers GetStatus
expect_daemon_ok() {
	daemon_alive || fail "${1:-}: flashd (pid $DAEMON_PID) is gone"
	"$PY" "$VCALL" --timeout 10 io.flashd.GetStatus > "$T/alive.json" 2>&1 ||
		fail "${1:-}: GetStatus is not answered: $(cat "$T/alive.json")"
	expect_json "$T/alive.json" parameters.compatible flashd,nandsim-128m "${1:-}"
}

# wait_for SECONDS CMD...: poll until CMD succeeds
wait_for() {
	local n=$(($1 * 20))
	shift
	while [ $n -gt 0 ]; do
		"$@" && return 0
		sleep 0.05
		n=$((n - 1))
	done
	return 1
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

# expect_error OUT.last ERROR: the final reply is this Varlink error.
expect_error() {
	expect_json "$1" error "$2" "$1"
}

# The U-Boot env as "name=value" lines, sorted (offline, through flashctl).
env_dump() {
	"$FLASHCTL" env list --layout "$LAYOUT" --target "$TARGET" | sort
}

env_var() {
	"$FLASHCTL" env get --layout "$LAYOUT" --target "$TARGET" "$1" 2>/dev/null
}

# The gated feeder: writes the first BYTES of FILE to stdout, waits until
# $T/go-NAME exists, then writes the rest. An install reading this pipe
# holds still at a known point (write phase) for as long as a test needs.
# It gives up after 120 s, or when the test ends ($T/abort).
gated_cat() {
	local file=$1 bytes=$2 name=$3 n=2400
	head -c "$bytes" "$file"
	while [ ! -e "$T/go-$name" ]; do
		[ -e "$T/abort" ] && return 1
		n=$((n - 1))
		[ $n -gt 0 ] || { say "gated_cat $name: never released"; return 1; }
		sleep 0.05
	done
	tail -c +"$((bytes + 1))" "$file"
}

# start_gated_install BUNDLE BYTES NAME: flashctl install of BUNDLE through
# a gated pipe (the first BYTES, then it holds until $T/go-NAME exists), in
# the background ($CLIENT, output in $T/install-NAME.out). Returns once the
# install is in its write step, with the worker's pid in $WORKER.
start_gated_install() {
	mkfifo "$T/pipe-$3"
	gated_cat "$1" "$2" "$3" > "$T/pipe-$3" &
	BG_PIDS="$BG_PIDS $!"
	"$FLASHCTL" install - < "$T/pipe-$3" > "$T/install-$3.out" 2>&1 &
	CLIENT=$!
	BG_PIDS="$BG_PIDS $CLIENT"
	wait_for 20 install_running || fail "the install of $1 did not reach the write step"
	WORKER=$(sed -n 's/.*install started .*worker pid \([0-9]*\).*/\1/p' "$T/flashd.log" | tail -n 1)
	[ -n "$WORKER" ] || fail "no install worker in the log"
}

# wait until the daemon reports an install in the write step
install_running() {
	"$PY" "$VCALL" --timeout 5 io.flashd.GetStatus > "$T/poll.json" 2>/dev/null &&
		[ "$(jget "$T/poll.json" parameters.operation)" = install ] &&
		[ "$(jget "$T/poll.json" parameters.progress.step 2>/dev/null)" = write ]
}

daemon_idle() {
	"$PY" "$VCALL" --timeout 5 io.flashd.GetStatus > "$T/poll.json" 2>/dev/null &&
		[ "$(jget "$T/poll.json" parameters.operation)" = null ]
}

# "Reboot" the simulated board: stop flashd, run the boot script's choice
# (pick, decrement, save), boot that slot, start flashd again.
reboot_board() {
	local sel
	stop_daemon
	sel=$("$FLASHCTL" slot boot-select --layout "$LAYOUT" --target "$TARGET") ||
		fail "slot boot-select failed"
	echo "$sel" > "$T/cmdline"
	BOOTED=${sel#flashd.slot=}
	say "reboot: boot-select chose $sel"
	start_daemon
}
