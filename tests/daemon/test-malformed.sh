#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# Garbage on the control socket: bad JSON, wrong types, unknown methods,
# oversized messages, a message without its NUL, hang-ups mid-message,
# too many fds, a client that stops mid-message and stays connected. Each
# gets the documented Varlink error (or a clean close) and after each the
# daemon is alive and answers GetStatus on a new connection.
. "$(dirname "$0")/../lib/sim-board.sh"

setup_board
start_daemon

"$PY" - "$SOCK" "$DAEMON_PID" "$T" <<'EOF' || fail "malformed-message cases failed (above)"
import json, os, socket, sys, time

sock_path, pid, tmp = sys.argv[1], int(sys.argv[2]), sys.argv[3]
failures = []

def connect(timeout=10):
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(timeout)
    s.connect(sock_path)
    return s

def read_all(s):
    """Messages until the daemon closes (or 10 s pass): (list, closed)."""
    buf, closed = b"", False
    try:
        while True:
            d = s.recv(1 << 16)
            if not d:
                closed = True
                break
            buf += d
    except socket.timeout:
        pass
    except ConnectionResetError:
        closed = True
    msgs = [json.loads(m) for m in buf.split(b"\0")[:-1]]
    return msgs, closed

pending = {}

def read_one(s):
    """The next reply on s (replies to pipelined calls may arrive together)."""
    buf = pending.get(s.fileno(), b"")
    while b"\0" not in buf:
        d = s.recv(1 << 16)
        if not d:
            raise RuntimeError("closed before a reply")
        buf += d
    msg, _, pending[s.fileno()] = buf.partition(b"\0")
    return json.loads(msg)

def alive(case):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        raise SystemExit(f"{case}: flashd (pid {pid}) died")
    s = connect()
    s.sendall(b'{"method":"io.flashd.GetStatus"}\0')
    r = read_one(s)
    s.close()
    if r.get("parameters", {}).get("compatible") != "flashd,nandsim-128m":
        raise SystemExit(f"{case}: GetStatus after it: {r}")

# Known daemon bugs, reported: a failure here is an expected failure
# (XFAIL); once fixed, the case passes and must leave this list (XPASS fails).
KNOWN = set()  # cases that fail because of a known, open bug
known_failed = set()

def check(case, cond, what):
    if not cond:
        if case in KNOWN:
            known_failed.add(case)
            print(f"XFAIL {case}: {what}", file=sys.stderr)
            return
        failures.append(f"{case}: {what}")
        print(f"FAIL {case}: {what}", file=sys.stderr)

def expect_close_with_error(case, data, error, params=None):
    s = connect(3)
    s.sendall(data)
    msgs, closed = read_all(s)
    s.close()
    check(case, len(msgs) == 1, f"expected one reply, got {msgs}")
    if msgs:
        check(case, msgs[0].get("error") == error, f"error {msgs[0].get('error')}, expected {error}")
        check(case, isinstance(msgs[0].get("parameters"), dict), f"no parameters: {msgs[0]}")
        for k, v in (params or {}).items():
            got = msgs[0].get("parameters", {}).get(k)
            check(case, got == v if v is not None else got, f"parameter {k}={got!r}, expected {v!r}")
    check(case, closed, "the connection stayed open after a protocol error")
    alive(case)

def expect_reply(case, data, error, params=None):
    """The call is answered (error or not) and the connection stays usable."""
    s = connect()
    s.sendall(data)
    r = read_one(s)
    check(case, r.get("error") == error, f"reply {r}, expected error {error}")
    for k, v in (params or {}).items():
        check(case, r.get("parameters", {}).get(k) == v, f"parameter {k} in {r}, expected {v!r}")
    s.sendall(b'{"method":"io.flashd.GetStatus"}\0')
    r2 = read_one(s)
    check(case, "error" not in r2, f"the same connection no longer works: {r2}")
    s.close()
    alive(case)

PE = "io.flashd.ProtocolError"
# -- not JSON / not a Varlink call: ProtocolError {reason}, then closed --
expect_close_with_error("bad JSON", b'{"method": "io.flashd.GetStatus"\0', PE, {"reason": None})
expect_close_with_error("binary garbage", bytes(range(1, 256)) + b"\0", PE, {"reason": None})
expect_close_with_error("not an object", b'[1, 2, 3]\0', PE)
expect_close_with_error("empty message", b'\0', PE)
expect_close_with_error("method is a number", b'{"method": 5}\0', PE)
expect_close_with_error("no method", b'{"parameters": {}}\0', PE)
expect_close_with_error("method without interface", b'{"method": "GetStatus"}\0', PE)
expect_close_with_error("parameters is an array", b'{"method": "io.flashd.GetStatus", "parameters": []}\0', PE)
expect_close_with_error("more is a string", b'{"method": "io.flashd.GetStatus", "more": "yes"}\0', PE)
expect_close_with_error("oneway and more", b'{"method": "io.flashd.GetStatus", "more": true, "oneway": true}\0', PE)
expect_close_with_error("upgrade", b'{"method": "io.flashd.GetStatus", "upgrade": true}\0', PE)

# -- valid messages, bad calls: answered, connection stays usable --
expect_reply("unknown method", b'{"method": "io.flashd.Nope"}\0',
             "org.varlink.service.MethodNotFound", {"method": "io.flashd.Nope"})
expect_reply("unknown interface", b'{"method": "com.example.Thing.Do"}\0',
             "org.varlink.service.InterfaceNotFound", {"interface": "com.example.Thing"})
expect_reply("wrong parameter type", b'{"method": "io.flashd.GetEnv", "parameters": {"name": 5}}\0',
             "org.varlink.service.InvalidParameter", {"parameter": "name"})
expect_reply("missing parameter", b'{"method": "io.flashd.GetEnv", "parameters": {}}\0',
             "org.varlink.service.InvalidParameter", {"parameter": "name"})
expect_reply("unknown parameter", b'{"method": "io.flashd.GetStatus", "parameters": {"verbose": true}}\0',
             "org.varlink.service.InvalidParameter", {"parameter": "verbose"})
# the caller's mistakes name the parameter (#32: fd out of range was InternalError ENXIO)
expect_reply("install fd out of range", b'{"method": "io.flashd.Install", "parameters": {"fd": 3}}\0',
             "org.varlink.service.InvalidParameter", {"parameter": "fd"})
expect_reply("install fd negative", b'{"method": "io.flashd.Install", "parameters": {"fd": -1}}\0',
             "org.varlink.service.InvalidParameter", {"parameter": "fd"})
expect_reply("bool for int", b'{"method": "io.flashd.Install", "parameters": {"fd": true}}\0',
             "org.varlink.service.InvalidParameter", {"parameter": "fd"})

# -- oversized: more than 1 MiB without a NUL, and with one --
big = b'{"method": "io.flashd.GetEnv", "parameters": {"name": "' + b"x" * (1024 * 1024 + 100)
expect_close_with_error("oversized, no NUL", big, PE)
expect_close_with_error("oversized, with NUL", big + b'"}}\0', PE)
# just under the limit is fine (a 1000 KiB parameter value is refused, not the message)
ok = b'{"method": "io.flashd.GetEnv", "parameters": {"name": "' + b"y" * (1000 * 1024) + b'"}}\0'
s = connect(); s.sendall(ok); r = read_one(s); s.close()
check("just under 1 MiB", r.get("error") != PE, f"a {len(ok)}-byte message got {r.get('error')}")
alive("just under 1 MiB")

# -- a message without its NUL, then EOF; hang-ups mid-message --
s = connect()
s.sendall(b'{"method": "io.flashd.GetStatus"}')
s.shutdown(socket.SHUT_WR)
msgs, closed = read_all(s)
s.close()
check("no NUL then EOF", closed, "the daemon kept the half-closed connection open")
check("no NUL then EOF", all(m.get("error") == PE for m in msgs), f"replies {msgs}")
alive("no NUL then EOF")
for cut in (1, 10, 25):
    s = connect()
    s.sendall(b'{"method": "io.flashd.Install", "parameters": {"fd": 0}, "more": true}\0'[:cut])
    s.close()
    alive(f"hang-up after {cut} bytes")
s = connect()
s.sendall(big[:300000])
s.close()
alive("hang-up in the middle of a big message")

# -- a client that stops mid-message and stays connected blocks no one --
stuck = connect()
stuck.sendall(b'{"method": "io.flashd.GetSt')
alive("with a stuck half-message connection open")
# ...and 20 of them
stuck_many = [connect() for _ in range(20)]
for c in stuck_many:
    c.sendall(b'{"method":')
alive("with 20 stuck connections open")
for c in stuck_many + [stuck]:
    c.close()

# -- file descriptors --
fds = [os.open("/dev/null", os.O_RDONLY) for _ in range(5)]
s = connect()
socket.send_fds(s, [b'{"method": "io.flashd.GetStatus"}\0'], fds)
msgs, closed = read_all(s)
s.close()
check("5 fds with one call", msgs and msgs[0].get("error") == PE and closed,
      f"replies {msgs}, closed {closed}")
alive("5 fds")
s = connect()
socket.send_fds(s, [b'{"method": "io.flashd.GetStatus"}\0'], fds[:1])
r = read_one(s)
s.close()
check("fd with a method that takes none", "error" not in r, f"reply {r}")
for fd in fds:
    os.close(fd)
# an fd that is not a bundle: /dev/null is an empty stream
s = connect()
fd = os.open("/dev/null", os.O_RDONLY)
socket.send_fds(s, [b'{"method": "io.flashd.Install", "parameters": {"fd": 0}}\0'], [fd])
os.close(fd)
r = read_one(s)
s.close()
check("empty bundle", r.get("error") in ("io.flashd.InvalidBundle", "io.flashd.InstallFailed"),
      f"reply {r}")
check("empty bundle", r.get("parameters", {}).get("reason"), f"no reason: {r}")
alive("empty bundle")
# one fd passed, index 1; an fd and a path: refused, naming the parameter (#32)
for case, params, name in (("fd index past the passed fds", {"fd": 1}, "fd"),
                           ("fd and path", {"fd": 0, "path": "/dev/null"}, "path")):
    s = connect()
    fd = os.open("/dev/null", os.O_RDONLY)
    socket.send_fds(s, [json.dumps({"method": "io.flashd.Install",
                                    "parameters": params}).encode() + b"\0"], [fd])
    os.close(fd)
    r = read_one(s)
    s.close()
    check(case, r.get("error") == "org.varlink.service.InvalidParameter" and
          r.get("parameters") == {"parameter": name}, f"reply {r}")
    alive(case)

# -- pipelining: three calls in one write, three replies in order --
s = connect()
s.sendall(b'{"method": "io.flashd.GetEnv", "parameters": {"name": "BOOT_ORDER"}}\0'
          b'{"method": "io.flashd.Nope"}\0'
          b'{"method": "org.varlink.service.GetInfo"}\0')
rs = [read_one(s) for _ in range(3)]
s.close()
check("pipelining", rs[0].get("parameters", {}).get("value") == "A B" and
      rs[1].get("error") == "org.varlink.service.MethodNotFound" and
      rs[2].get("parameters", {}).get("product") == "flashd", f"replies {rs}")
# oneway: no reply, the next call on the connection answered
s = connect()
s.sendall(b'{"method": "io.flashd.GetStatus", "oneway": true}\0{"method": "org.varlink.service.GetInfo"}\0')
r = read_one(s)
s.close()
check("oneway", r.get("parameters", {}).get("product") == "flashd", f"first reply {r}")

# -- more connections than the limit (64): refused, then service resumes --
conns = []
for _ in range(80):
    try:
        conns.append(connect())
    except OSError:
        break
time.sleep(0.3)
for c in conns:
    c.close()
time.sleep(0.3)
alive("after 80 connections at once")

for case in KNOWN - known_failed:
    failures.append(f"{case}: XPASS, the known bug is fixed: remove it from KNOWN")
    print(f"XPASS {case}", file=sys.stderr)
if failures:
    print(f"{len(failures)} failures", file=sys.stderr)
    sys.exit(1)
print("all malformed-message cases handled", file=sys.stderr)
EOF

# ---- parameters that C would misread, names that cannot exist (issue 13 items 11, 22) ----
env_dump > "$T/env-before"
cp "$T/state/installs.json" "$T/installs-before" 2>/dev/null || : > "$T/installs-before"
# SetEnv with an embedded NUL: refused whole (it used to store "3" and say success)
vcall "$T/nul" io.flashd.SetEnv '{"name":"bootdelay","value":"3\u0000; run evil"}'
expect_fields "$T/nul.last" "SetEnv with an embedded NUL" <<EOF
error org.varlink.service.InvalidParameter
parameters.parameter value
EOF
vcall "$T/nul2" io.flashd.SetEnv '{"name":"boot\u0000delay","value":"3"}'
expect_fields "$T/nul2.last" "SetEnv with a NUL in the name" <<EOF
error org.varlink.service.InvalidParameter
parameters.parameter name
EOF
# GetEnv with a name no variable can have: InvalidParameter, not InternalError
for name in '' 'a=b'; do
	vcall "$T/ge" io.flashd.GetEnv "{\"name\":\"$name\"}"
	expect_fields "$T/ge.last" "GetEnv name '$name'" <<EOF
error org.varlink.service.InvalidParameter
parameters.parameter name
EOF
done
# Install into a slot the layout does not have: NoSuchSlot (flashctl: exit 3),
# not InstallFailed, and nothing is written (the bundle is never read)
vcall "$T/ns" io.flashd.Install '{"path":"/dev/null","slot":"C"}'
expect_fields "$T/ns.last" "Install into slot C" <<EOF
error io.flashd.NoSuchSlot
parameters.slot C
EOF
head -c 4096 /dev/urandom > "$T/junk.bundle"
fctl install --slot C "$T/junk.bundle" > "$T/nsc.out" 2>&1
rc=$?
[ $rc = 3 ] || fail "flashctl install --slot C exited $rc, expected 3: $(cat "$T/nsc.out")"
grep -q "no such slot" "$T/nsc.out" || fail "flashctl install --slot C does not say why: $(cat "$T/nsc.out")"
env_dump > "$T/env-after"
cmp -s "$T/env-before" "$T/env-after" || fail "refused calls changed the env: $(diff "$T/env-before" "$T/env-after")"
cmp -s "$T/installs-before" "$T/state/installs.json" || fail "Install into slot C left an install record"

expect_daemon_ok "end"
n=$(grep -c "control socket (pid [0-9]* uid 0)" "$T/flashd.log")
[ "$n" -ge 10 ] || fail "only $n protocol problems were logged naming the peer"
# the connection limit was hit (and logged without a peer: that crashed flashd once)
grep -q "control socket.*: refusing a connection" "$T/flashd.log" ||
	fail "the 80 connections did not reach the connection limit"
stop_daemon
[ "$DAEMON_RC" = 0 ] || fail "flashd exited with $DAEMON_RC"
say PASS
