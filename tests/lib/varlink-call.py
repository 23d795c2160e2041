#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""A minimal, independent Varlink client for the flashd tests.

It shares no code with flashd or flashctl, so a test that passes through it
shows that the control socket works with "any Varlink client": plain
AF_UNIX stream socket, one JSON object per message, NUL-terminated.

Usage:
  varlink-call.py [--socket PATH] [--more] [--oneway] [--fd FILE]...
                  [--timeout SEC] METHOD [PARAMETERS_JSON]
  varlink-call.py [--socket PATH] [--timeout SEC] --raw < BYTES

Every reply is printed as one JSON line (the whole reply object:
"parameters", "continues", "error"). --fd FILE opens FILE read-only and
passes the descriptor with the call (SCM_RIGHTS); "fd": N in the
parameters is its index among the passed descriptors. --raw sends stdin
verbatim, closes the sending side, and prints the replies until the daemon
closes the connection.

When FLASHD_TEST_REPLY_LOG names a file, every reply is also appended to
it as {"method": METHOD, "reply": REPLY} (method null with --raw), for
varlink-idl.py to check against the interface description.

Exit status: 0 the final reply is not an error, 1 it is an error reply,
2 usage or connection problem, 3 the connection ended (or timed out)
before the final reply.
"""
import argparse
import json
import os
import socket
import sys


def parse_args():
    p = argparse.ArgumentParser(description="minimal Varlink client")
    p.add_argument("--socket", default=os.environ.get("FLASHD_SOCKET"))
    p.add_argument("--more", action="store_true")
    p.add_argument("--oneway", action="store_true")
    p.add_argument("--fd", action="append", default=[], metavar="FILE")
    p.add_argument("--timeout", type=float, default=60.0)
    p.add_argument("--raw", action="store_true")
    p.add_argument("method", nargs="?")
    p.add_argument("parameters", nargs="?")
    a = p.parse_args()
    if not a.socket:
        p.error("no socket: pass --socket or set FLASHD_SOCKET")
    if not a.raw and not a.method:
        p.error("METHOD is required")
    return a


def log_reply(method, msg):
    """Append one reply to $FLASHD_TEST_REPLY_LOG, in one write (several
    clients share the file)."""
    path = os.environ.get("FLASHD_TEST_REPLY_LOG")
    if not path:
        return
    try:
        reply = json.loads(msg)
    except ValueError:
        reply = msg.decode(errors="replace")
    line = json.dumps({"method": method, "reply": reply}) + "\n"
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o644)
    except OSError:
        return  # another uid's test client cannot reach the test's directory
    try:
        os.write(fd, line.encode())
    finally:
        os.close(fd)


class Reader:
    def __init__(self, sock):
        self.sock = sock
        self.buf = b""

    def next(self):
        """The next NUL-terminated message as bytes, None at EOF."""
        while b"\0" not in self.buf:
            data = self.sock.recv(1 << 16)
            if not data:
                return None
            self.buf += data
        msg, _, self.buf = self.buf.partition(b"\0")
        return msg


def main():
    a = parse_args()
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(a.timeout)
    try:
        s.connect(a.socket)
    except OSError as e:
        print(f"varlink-call: cannot connect to {a.socket}: {e.strerror}", file=sys.stderr)
        return 2
    r = Reader(s)

    if a.raw:
        s.sendall(sys.stdin.buffer.read())
        # EOF: the daemon closes once everything sent is answered
        s.shutdown(socket.SHUT_WR)
        try:
            while (msg := r.next()) is not None:
                print(msg.decode())
                log_reply(None, msg)
        except socket.timeout:
            print("varlink-call: timed out waiting for the daemon", file=sys.stderr)
            return 3
        except ConnectionResetError:
            pass
        return 0

    call = {"method": a.method}
    if a.parameters:
        call["parameters"] = json.loads(a.parameters)
    if a.more:
        call["more"] = True
    if a.oneway:
        call["oneway"] = True
    data = json.dumps(call).encode() + b"\0"
    fds = []
    try:
        fds = [os.open(f, os.O_RDONLY | os.O_CLOEXEC) for f in a.fd]
    except OSError as e:
        print(f"varlink-call: {e.filename}: {e.strerror}", file=sys.stderr)
        return 2
    if fds:
        socket.send_fds(s, [data], fds)
        for fd in fds:
            os.close(fd)
    else:
        s.sendall(data)
    if a.oneway:
        return 0
    try:
        while True:
            msg = r.next()
            if msg is None:
                print("varlink-call: connection closed before the final reply",
                      file=sys.stderr)
                return 3
            log_reply(a.method, msg)
            reply = json.loads(msg)
            print(json.dumps(reply), flush=True)
            if not reply.get("continues"):
                return 1 if "error" in reply else 0
    except socket.timeout:
        print("varlink-call: timed out waiting for a reply", file=sys.stderr)
        return 3


if __name__ == "__main__":
    sys.exit(main())
