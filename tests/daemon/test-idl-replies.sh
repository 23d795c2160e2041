#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# The replies keep to the interface description the daemon serves
# (issue 32 item 8: every Install reply carried bytes_downloaded, which
# Install's declared output lacked). Every daemon test checks its replies
# when the daemon stops (tests/daemon.sh replies_check, with
# tests/lib/varlink-idl.py); this test shows that the check is real:
# - both clients log what they receive (varlink-call.py and flashctl's
#   client), an install's progress replies included;
# - an install's replies conform (failed on main: bytes_downloaded);
# - the checker finds each kind of violation in crafted replies checked
#   against the served description (unknown and missing fields, types,
#   nullable, arrays, maps, named types, enums, errors and their
#   parameters) and passes the conforming ones.
. "$(dirname "$0")/../lib/sim-board.sh"

need jq
CHECK="$PY $TEST_LIB/varlink-idl.py"
setup_board
make_bundle v2 2.0 2
start_daemon
IDL="$T/idl-io.flashd.json $T/idl-org.varlink.service.json"
LOG=$FLASHD_TEST_REPLY_LOG
[ -n "$LOG" ] || fail "start_daemon set no FLASHD_TEST_REPLY_LOG"
# shellcheck disable=SC2086
$CHECK parse $IDL >&2 || fail "the served interface descriptions do not parse"

# ---- both clients log, an install's replies conform ----
vcall "$T/inst" io.flashd.Install "{\"path\": \"$T/v2.bundle\", \"activate\": false}" --more ||
	fail "Install: $(cat "$T/inst.last")"
fctl status >/dev/null || fail "flashctl status"
check "varlink-call.py logs Install's progress replies" \
	grep -q '"method": "io.flashd.Install", "reply": {.*"continues": true' "$LOG"
check "flashctl's client logs its replies" grep -q '"method":"io.flashd.GetStatus"' "$LOG"
cp "$LOG" "$T/install.log"
# shellcheck disable=SC2086
check "an install's replies conform to the served IDL (main: bytes_downloaded undeclared)" \
	$CHECK check $IDL --log "$T/install.log"

# ---- the checker finds each kind of violation ----
# expect_verdict GOOD|BAD WHAT METHOD REPLY: the checker's verdict on one reply
expect_verdict() {
	printf '{"method": %s, "reply": %s}\n' "$3" "$4" > "$T/one.log"
	# shellcheck disable=SC2086
	if $CHECK check $IDL --log "$T/one.log" > "$T/one.out" 2>&1; then verdict=GOOD; else verdict=BAD; fi
	if [ "$verdict" = "$1" ]; then
		ok "$2: $verdict"
	else
		check_fail "$2: the checker said $verdict, expected $1: $(cat "$T/one.out")"
	fi
}
vcall "$T/st" io.flashd.GetStatus || fail "GetStatus"
ST=$(jq -c .parameters "$T/st.last")
# status with one change made by jq: $1 filter
st_with() { printf '{"parameters": %s}' "$(printf '%s' "$ST" | jq -c "$1")"; }

G=io.flashd.GetStatus
expect_verdict GOOD "GetStatus as served" "\"$G\"" "$(st_with .)"
expect_verdict BAD "an undeclared field" "\"$G\"" "$(st_with '.extra = 1')"
expect_verdict BAD "a non-nullable field missing" "\"$G\"" "$(st_with 'del(.board)')"
expect_verdict GOOD "a nullable field missing" "\"$G\"" "$(st_with 'del(.booted)')"
expect_verdict BAD "null for a non-nullable string" "\"$G\"" "$(st_with '.board = null')"
expect_verdict BAD "a string for bool" "\"$G\"" "$(st_with '.on_trial = "no"')"
expect_verdict BAD "a bool for int" "\"$G\"" "$(st_with '.slots[0].tries_left = true')"
expect_verdict BAD "a float for int" "\"$G\"" "$(st_with '.slots[0].tries_left = 1.5')"
expect_verdict BAD "an object for an array" "\"$G\"" "$(st_with '.slots = {}')"
expect_verdict BAD "a wrong array element" "\"$G\"" "$(st_with '.slots[1] = 3')"
expect_verdict BAD "an undeclared field of a named type" "\"$G\"" "$(st_with '.slots[0].colour = "red"')"
expect_verdict BAD "a value outside an enum" "\"$G\"" "$(st_with '.slots[0].state = "shiny"')"
expect_verdict BAD "a field of a nested named type" "\"$G\"" "$(st_with '.env.copies[0].state = 7')"
expect_verdict BAD "a nullable named type of the wrong shape" "\"$G\"" "$(st_with '.progress = "x"')"
expect_verdict GOOD "a map of strings" '"io.flashd.ListEnv"' '{"parameters": {"variables": {"a": "1"}}}'
expect_verdict BAD "a map value of the wrong type" '"io.flashd.ListEnv"' '{"parameters": {"variables": {"a": 1}}}'
expect_verdict BAD "an array for a map" '"io.flashd.ListEnv"' '{"parameters": {"variables": ["a"]}}'
expect_verdict GOOD "a declared error" '"io.flashd.GetEnv"' '{"error": "io.flashd.Busy", "parameters": {"operation": "install"}}'
expect_verdict BAD "an error parameter missing" '"io.flashd.GetEnv"' '{"error": "io.flashd.Busy", "parameters": {}}'
expect_verdict BAD "an undeclared error parameter" '"io.flashd.Cancel"' '{"error": "io.flashd.Cancelled", "parameters": {"why": "x"}}'
expect_verdict BAD "an undeclared error" '"io.flashd.GetEnv"' '{"error": "io.flashd.Oops", "parameters": {}}'
expect_verdict GOOD "a service error" '"io.flashd.Nope"' '{"error": "org.varlink.service.MethodNotFound", "parameters": {"method": "io.flashd.Nope"}}'
expect_verdict BAD "a service error's parameter of the wrong type" '"io.flashd.GetEnv"' '{"error": "org.varlink.service.InvalidParameter", "parameters": {"parameter": 1}}'
expect_verdict BAD "an answer to an undeclared method" '"io.flashd.Nope"' '{"parameters": {}}'
expect_verdict BAD "bytes_downloaded as a string" '"io.flashd.Install"' \
	'{"parameters": {"percent": 1, "bytes_done": 0, "bytes_total": 9, "step": "write", "bytes_downloaded": "9"}, "continues": true}'
expect_verdict BAD "continues not bool" '"io.flashd.Cancel"' '{"parameters": {"cancelled": false}, "continues": 1}'
expect_verdict BAD "not JSON" '"io.flashd.Cancel"' '{"parameters": '
check_done
say "PASS"
