#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""A TCP proxy in front of the test's lighttpd that misbehaves on purpose
(tests/net/). Offsets count the bytes sent to clients over all
connections together (response headers included), so "--drop-at 300000
--drop-at 700000" cuts a download and then its resumed continuation.

  --drop-at N      close the client's connection once N bytes went out (once each)
  --stall-at N     after N bytes, send nothing more and keep the connection open
  --throttle BPS   at most BPS bytes per second
  --corrupt-at N   the byte at offset N goes out inverted (the server "serves
                   other bytes")
  --redirect URL   answer every request with "302 Found", Location: URL
  --silent         accept connections, read, never answer
  --strip-range    remove Range and If-Range from requests (a server
                   without range support)
Writes "sent N" lines to stdout as it goes."""
import argparse
import socket
import sys
import threading
import time

lock = threading.Lock()
sent = 0


def log(msg):
    print(msg, flush=True)


def strip_range(data):
    lines = data.split(b"\r\n")
    keep = [l for l in lines if not l.lower().startswith((b"range:", b"if-range:"))]
    return b"\r\n".join(keep)


def pump_requests(args, client, upstream):
    try:
        while True:
            data = client.recv(65536)
            if not data:
                break
            upstream.sendall(strip_range(data) if args.strip_range else data)
    except OSError:
        pass
    try:
        upstream.shutdown(socket.SHUT_WR)
    except OSError:
        pass


def next_cut(points, start):
    """the first unused point at or after start"""
    later = [p for p in points if p >= start]
    return min(later) if later else None


def pump_responses(args, client, upstream):
    global sent
    while True:
        try:
            data = upstream.recv(16384)
        except OSError:
            data = b""
        if not data:
            break
        with lock:
            start = sent
            drop = next_cut(args.drop_at, start)
            stall = next_cut(args.stall_at, start)
            cut = min([c for c in (drop, stall) if c is not None], default=None)
            if cut is not None and cut < start + len(data):
                data = data[:cut - start]
            if args.corrupt_at is not None and start <= args.corrupt_at < start + len(data):
                i = args.corrupt_at - start
                data = data[:i] + bytes([data[i] ^ 0xFF]) + data[i + 1:]
            sent += len(data)
        if args.throttle:
            time.sleep(len(data) / args.throttle)
        try:
            client.sendall(data)
        except OSError:
            break
        if cut is not None and sent >= cut:
            if cut == drop:
                args.drop_at.remove(drop)
                log("drop at %d" % sent)
                break
            args.stall_at.remove(stall)
            log("stall at %d" % sent)
            time.sleep(3600)
    log("sent %d" % sent)
    for s in (client, upstream):
        try:
            s.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        s.close()


def redirect(client, url):
    buf = b""
    while b"\r\n\r\n" not in buf:
        data = client.recv(65536)
        if not data:
            return
        buf += data
    body = b"moved\n"
    client.sendall(b"HTTP/1.1 302 Found\r\nLocation: " + url.encode() +
                   b"\r\nContent-Length: %d\r\nConnection: close\r\n\r\n" % len(body) + body)
    client.close()


def serve(args, client):
    if args.silent:
        while client.recv(65536):
            pass
        return
    if args.redirect:
        redirect(client, args.redirect)
        return
    upstream = socket.create_connection(("127.0.0.1", args.upstream))
    threading.Thread(target=pump_requests, args=(args, client, upstream), daemon=True).start()
    pump_responses(args, client, upstream)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--listen", type=int, required=True)
    p.add_argument("--upstream", type=int)
    p.add_argument("--drop-at", type=int, action="append", default=[])
    p.add_argument("--stall-at", type=int, action="append", default=[])
    p.add_argument("--throttle", type=int, default=0)
    p.add_argument("--corrupt-at", type=int)
    p.add_argument("--redirect")
    p.add_argument("--silent", action="store_true")
    p.add_argument("--strip-range", action="store_true")
    args = p.parse_args()
    srv = socket.socket()
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(("127.0.0.1", args.listen))
    srv.listen(16)
    log("listening on %d" % args.listen)
    while True:
        client, _ = srv.accept()
        log("connection")
        threading.Thread(target=serve, args=(args, client), daemon=True).start()


if __name__ == "__main__":
    sys.exit(main())
