#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""A hostile HTTP server for tests/net/test-http-hostile.sh. It serves the
files of --root (with Range, If-Range and a strong ETag, as a real server
does) and misbehaves as the first path component asks:

  /file/NAME             NAME as it is (a well-behaved server)
  /two-location/NAME     302 with two Location headers: --other first, this
                         server second
  /long-location/NAME    302 to --other-host with a Location longer than
                         1399 bytes whose first 1399 bytes name 127.0.0.1
  /other-port/NAME       302 to --other (same host, another port)
  /same-origin/NAME      302 to /file/NAME on this server
  /drip/NAME             200, then --drip-rate bytes per second
  /escape-etag/NAME      an ETag with terminal escape codes, another one on
                         each response, If-Range ignored (the bundle "changed")
  /escape-location/NAME  302 to --other with escape codes in the path
  /huge-header/NAME      a response header of --huge bytes

Every request goes to --log as one line: "PORT METHOD PATH" followed by
its headers, " | "-separated, so a test sees what reached which server."""
import argparse
import http.server
import os
import re
import socketserver
import sys
import threading
import time

ESC = "\x1b]0;owned\x07\x1b[2J\x1b[31m"
lock = threading.Lock()
counter = [0]


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        pass

    def record(self):
        hdrs = " | ".join("%s: %s" % (k, v) for k, v in self.headers.items())
        with lock, open(self.server.args.log, "a") as f:
            f.write("%d %s %s | %s\n" % (self.server.args.port, self.command, self.path, hdrs))

    def redirect(self, location, extra=()):
        self.send_response(302)
        for loc in [location, *extra]:
            self.send_header("Location", loc)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def serve(self, name, etag=None, drip=0, huge=0):
        path = os.path.join(self.server.args.root, os.path.basename(name))
        try:
            with open(path, "rb") as f:
                data = f.read()
        except OSError:
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        st = os.stat(path)
        tag = etag or '"%x-%x"' % (st.st_ino, st.st_size)
        start, end = 0, len(data)
        rng = self.headers.get("Range")
        ifr = self.headers.get("If-Range")
        m = re.match(r"bytes=(\d+)-(\d*)$", rng or "")
        if m and (ifr is None or ifr == tag or etag):
            start = int(m.group(1))
            end = int(m.group(2)) + 1 if m.group(2) else len(data)
            self.send_response(206)
            self.send_header("Content-Range", "bytes %d-%d/%d" % (start, end - 1, len(data)))
        else:
            self.send_response(200)
        self.send_header("ETag", tag)
        self.send_header("Content-Length", str(end - start))
        if huge:
            self.send_header("X-Pad", "a" * huge)
        self.end_headers()
        body = data[start:end]
        if not drip:
            self.wfile.write(body)
            return
        for i in range(0, len(body), drip):
            self.wfile.write(body[i:i + drip])
            self.wfile.flush()
            time.sleep(1)

    def do_GET(self):
        self.record()
        a = self.server.args
        kind, _, name = self.path.lstrip("/").partition("?")[0].partition("/")
        me = "http://127.0.0.1:%d" % a.port
        if kind == "file":
            self.serve(name)
        elif kind == "two-location":
            self.redirect("%s/file/%s" % (a.other, name), ["%s/file/%s" % (me, name)])
        elif kind == "long-location":
            # a port written with 1380 leading zeros: its first 1399 bytes
            # (the whole header line) name 127.0.0.1, all of it a user
            # "127.0.0.1" with a password of zeros at --other-host
            self.redirect("http://127.0.0.1:%s@%s/file/%s" % ("0" * 1380, a.other_host, name))
        elif kind == "other-port":
            self.redirect("%s/file/%s" % (a.other, name))
        elif kind == "same-origin":
            self.redirect("/file/%s" % name)
        elif kind == "drip":
            self.serve(name, drip=a.drip_rate)
        elif kind == "escape-etag":
            with lock:
                counter[0] += 1
                n = counter[0]
            self.serve(name, etag='"%s%d"' % (ESC, n))
        elif kind == "escape-location":
            self.redirect("%s/%s%s" % (a.other, ESC, name))
        elif kind == "huge-header":
            self.serve(name, huge=a.huge)
        else:
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()

    def send_header(self, key, value):
        # http.server would refuse nothing, but encode as latin-1: keep
        # the escape codes as the raw bytes a hostile server sends
        self._headers_buffer.append(("%s: %s\r\n" % (key, value)).encode("latin-1"))


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--root", required=True)
    p.add_argument("--log", required=True)
    p.add_argument("--other", default="http://127.0.0.1:1")
    p.add_argument("--other-host", default="localhost:1")
    p.add_argument("--drip-rate", type=int, default=4)
    p.add_argument("--huge", type=int, default=10 * 1024 * 1024)
    args = p.parse_args()
    srv = Server(("127.0.0.1", args.port), Handler)
    srv.args = args
    print("listening on %d" % args.port, flush=True)
    srv.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
