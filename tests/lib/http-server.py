#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A file server on 127.0.0.1 for the download tests.

Usage: http-server.py DIR PORTFILE LOGFILE

Serves DIR with Range support and writes its port to PORTFILE once it
listens.  Every request is appended to LOGFILE as a JSON line
{"path", "range"}.  Special paths:
  /files/NAME          the file (206 for a satisfiable Range)
  /drop-once/NAME      the first request gets the headers of the whole file
                       and half its body, then the connection is closed;
                       later ones behave like /files/NAME
  /no-range/NAME       ignores Range and sends the whole file with 200
  /redirect/N/NAME     302 to /redirect/N-1/NAME, and at 0 to /files/NAME
  /etag/NAME           like /files/NAME, with a strong ETag (the content's
                       sha256) and Last-Modified (the file's mtime)
  /lying-etag/NAME     like /etag/NAME, but HEAD always says ETag "v1"
                       (a server that answers HEAD and GET differently)
  /slow/NAME           the first half of the file, then 4 s of nothing, then
                       the rest (a download in progress, to look at)
HEAD is answered as GET without the body.
  anything else        404
"""
import email.utils
import hashlib
import json
import os
import re
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

ROOT, PORTFILE, LOGFILE = sys.argv[1], sys.argv[2], sys.argv[3]
dropped = set()
lock = threading.Lock()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        pass

    def record(self):
        with lock, open(LOGFILE, "a") as f:
            f.write(json.dumps({"path": self.path, "range": self.headers.get("Range"), "method": self.command}) + "\n")

    def not_found(self):
        body = b"not found\n"
        self.send_response(404)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.body(body)

    def do_HEAD(self):
        self.head = True  # the handler serves every request of a connection
        try:
            self.do_GET()
        finally:
            self.head = False

    def body(self, data):
        if not getattr(self, "head", False):
            self.wfile.write(data)

    def do_GET(self):
        self.record()
        m = re.match(r"^/redirect/(\d+)/(.+)$", self.path)
        if m:
            n = int(m.group(1))
            target = "/files/%s" % m.group(2) if n == 0 else "/redirect/%d/%s" % (n - 1, m.group(2))
            self.send_response(302)
            self.send_header("Location", target)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        m = re.match(r"^/(files|drop-once|no-range|etag|lying-etag|slow)/([^/]+)$", self.path)
        if not m:
            return self.not_found()
        kind, name = m.group(1), m.group(2)
        path = os.path.join(ROOT, name)
        if not os.path.isfile(path):
            return self.not_found()
        with open(path, "rb") as f:
            data = f.read()
        if kind == "drop-once":
            with lock:
                first = name not in dropped
                dropped.add(name)
            if first:
                self.send_response(200)
                self.send_header("Content-Length", str(len(data)))
                self.send_header("Accept-Ranges", "bytes")
                self.end_headers()
                self.wfile.write(data[: len(data) // 2])
                self.wfile.flush()
                self.close_connection = True
                return
        if kind == "slow" and not getattr(self, "head", False):
            self.send_response(200)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data[: len(data) // 2])
            self.wfile.flush()
            time.sleep(4)
            self.wfile.write(data[len(data) // 2 :])
            return
        rng = self.headers.get("Range")
        m = re.match(r"^bytes=(\d+)-$", rng or "")
        if m and kind != "no-range":
            start = int(m.group(1))
            if start >= len(data):
                self.send_response(416)
                self.send_header("Content-Range", "bytes */%d" % len(data))
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            self.send_response(206)
            self.send_header("Content-Range", "bytes %d-%d/%d" % (start, len(data) - 1, len(data)))
            self.send_header("Content-Length", str(len(data) - start))
            self.end_headers()
            self.wfile.write(data[start:])
            return
        self.send_response(200)
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Accept-Ranges", "bytes")
        if kind == "lying-etag" and getattr(self, "head", False):
            self.send_header("ETag", '"v1"')
        elif kind in ("etag", "lying-etag"):
            self.send_header("ETag", '"%s"' % hashlib.sha256(data).hexdigest())
        if kind == "etag":
            self.send_header("Last-Modified", email.utils.formatdate(os.path.getmtime(path), usegmt=True))
        self.end_headers()
        self.body(data)


server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
with open(PORTFILE + ".tmp", "w") as f:
    f.write(str(server.server_address[1]))
os.rename(PORTFILE + ".tmp", PORTFILE)
server.serve_forever()
