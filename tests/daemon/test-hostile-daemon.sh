#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# flashctl against a daemon whose replies lack the fields it prints (an
# older or a hostile flashd at $FLASHD_SOCKET): the human output says "-"
# where a field is missing, never "(null)" (printf("%s", NULL) is
# undefined; glibc prints "(null)"), and the command still ends.
. "$(dirname "$0")/../lib/common.sh"

[ -n "$PY" ] || skip "python3 is not installed"
T=$(mktemp -d "${TMPDIR:-/tmp}/flashd-hostile-daemon.XXXXXX") || exit 1
trap 'kill $SRV 2>/dev/null; rm -rf "$T"' EXIT
export FLASHD_SOCKET=$T/fake.sock

# a Varlink server that answers every call with the same parameters
"$PY" - "$FLASHD_SOCKET" '{"boot_order": "A B", "slots": [{"state": "good"}], "entries": [{}]}' \
	2>"$T/methods" <<'PY' &
import json, os, socket, sys
path, params = sys.argv[1], json.loads(sys.argv[2])
s = socket.socket(socket.AF_UNIX)
s.bind(path)
s.listen(8)
open(path + ".ready", "w").close()
while True:
    c, _ = s.accept()
    buf = b""
    while True:
        d = c.recv(65536)
        if not d:
            break
        buf += d
        while b"\0" in buf:
            m, buf = buf.split(b"\0", 1)
            sys.stderr.write(json.loads(m).get("method", "?") + "\n")
            sys.stderr.flush()
            c.sendall(json.dumps({"parameters": params}).encode() + b"\0")
    c.close()
PY
SRV=$!
for _ in $(seq 100); do [ -e "$FLASHD_SOCKET.ready" ] && break; sleep 0.05; done
[ -e "$FLASHD_SOCKET.ready" ] || fail "the fake daemon did not start"

for cmd in "slot status" "status" "history"; do
	# shellcheck disable=SC2086
	"$FLASHCTL" $cmd >"$T/out" 2>&1
	rc=$?
	check "flashctl $cmd ends (exit $rc): $(head -n 1 "$T/out")" test $rc -lt 64
	if grep -q '(null)' "$T/out"; then
		check_fail "flashctl $cmd prints (null): $(grep '(null)' "$T/out" | head -3 | tr '\n' '|')"
	else
		ok "flashctl $cmd: no (null) ($(grep -c -- ' - \|-$' "$T/out") fields shown as -)"
	fi
done
check "the commands asked the fake daemon" grep -q 'io.flashd.SlotStatus' "$T/methods"
check_done
