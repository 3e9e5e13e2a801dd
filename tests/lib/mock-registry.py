#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A small OCI distribution registry on 127.0.0.1 for the tests.

    mock-registry.py CONFIG PORT_FILE LOG_FILE

CONFIG is JSON written by the test:
    {"blobs": DIR,                      # files named by their sha256 hex
     "repos": {"test/img": {"tags": {"v1": "sha256:..."},
                            "auth": "user:password",     # optional: token needs Basic credentials
                            "tamper": "sha256:...",      # optional: that blob is served altered
                            "oversize": N,               # optional: N more bytes after every blob
                            "redirect": "http://H:PORT", # optional: blobs are a 307 to
                                                         #   H:PORT/elsewhere/DIGEST (PORT: this one's)
                            "upload": "http://H:PORT/x", # optional: an upload's POST answers 202
                                                         #   with this Location
                            "realm": "http://H:PORT/t"}}} # optional: the challenge's token realm
Endpoints: GET /v2/, GET /v2/NAME/manifests/TAG|DIGEST, GET /v2/NAME/blobs/DIGEST
(each needs a Bearer token: a 401 carries the challenge), GET /token (the
token service), GET /elsewhere/DIGEST (a blob without any token: where
"redirect" sends) and POST /v2/NAME/blobs/uploads/ (with "upload").  Manifests are served with the mediaType they declare.
Every request is appended to LOG_FILE as one JSON line
{"method", "path", "authorization" (the scheme only), "status"}.
The listening port is written to PORT_FILE once the server is ready.
"""
import base64
import hashlib
import json
import os
import re
import sys
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

config = json.load(open(sys.argv[1]))
port_file, log_file = sys.argv[2], sys.argv[3]
log_lock = threading.Lock()
TOKEN_PREFIX = "mock-token:"


def blob_bytes(digest):
    m = re.fullmatch(r"sha256:([0-9a-f]{64})", digest)
    if not m:
        return None
    path = os.path.join(config["blobs"], m.group(1))
    if not os.path.isfile(path):
        return None
    return open(path, "rb").read()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        pass

    def record(self, status):
        auth = self.headers.get("Authorization", "")
        with log_lock, open(log_file, "a") as f:
            f.write(json.dumps({"method": self.command, "path": self.path,
                                "authorization": auth.split(" ")[0] if auth else "",
                                "basic": auth.split(" ", 1)[1] if auth.startswith("Basic ") else "",
                                "status": status}) + "\n")

    def send(self, status, body=b"", ctype="application/json", extra=()):
        self.record(status)
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Docker-Distribution-API-Version", "registry/2.0")
        for k, v in extra:
            self.send_header(k, v)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def challenge(self, repo):
        host = "127.0.0.1:%d" % self.server.server_address[1]
        scope = ',scope="repository:%s:pull"' % repo if repo else ""
        realm = config["repos"].get(repo, {}).get("realm", "http://%s/token" % host) if repo else "http://%s/token" % host
        realm = realm.replace("PORT", str(self.server.server_address[1]))
        value = 'Bearer realm="%s",service="mock-registry"%s' % (realm, scope)
        body = json.dumps({"errors": [{"code": "UNAUTHORIZED", "message": "authentication required"}]}).encode()
        self.send(401, body, extra=[("WWW-Authenticate", value)])

    def authorized(self, repo):
        auth = self.headers.get("Authorization", "")
        return auth == "Bearer " + TOKEN_PREFIX + repo

    def do_token(self, query):
        q = urllib.parse.parse_qs(query)
        scope = q.get("scope", [""])[0]
        m = re.fullmatch(r"repository:([a-z0-9/._-]+):pull", scope)
        if not m or m.group(1) not in config["repos"] or q.get("service", [""])[0] != "mock-registry":
            return self.send(400, b'{"error": "bad scope or service"}')
        repo = m.group(1)
        need = config["repos"][repo].get("auth")
        if need:
            want = "Basic " + base64.b64encode(need.encode()).decode()
            if self.headers.get("Authorization", "") != want:
                return self.send(401, b'{"error": "credentials required"}',
                                 extra=[("WWW-Authenticate", 'Basic realm="mock-registry"')])
        self.send(200, json.dumps({"token": TOKEN_PREFIX + repo, "expires_in": 300}).encode())

    def port_url(self, url):
        return url.replace("PORT", str(self.server.server_address[1]))

    def do_POST(self):
        m = re.fullmatch(r"/v2/([a-z0-9/._-]+)/blobs/uploads/", urllib.parse.urlsplit(self.path).path)
        if not m or m.group(1) not in config["repos"] or "upload" not in config["repos"][m.group(1)]:
            return self.send(404, b'{"errors": [{"code": "NAME_UNKNOWN"}]}')
        if not self.authorized(m.group(1)):
            return self.challenge(m.group(1))
        self.send(202, b"", extra=[("Location", self.port_url(config["repos"][m.group(1)]["upload"]))])

    def do_PUT(self):
        self.send(404, b'{"errors": [{"code": "UNSUPPORTED"}]}')

    def do_GET(self):
        url = urllib.parse.urlsplit(self.path)
        path = url.path
        if path == "/token":
            return self.do_token(url.query)
        if path.startswith("/elsewhere/"):
            data = blob_bytes(path[len("/elsewhere/"):])
            return self.send(200 if data else 404, data or b"", "application/octet-stream")
        if path in ("/v2", "/v2/"):
            return self.challenge(None) if "Bearer" not in self.headers.get("Authorization", "") else self.send(200, b"{}")
        m = re.fullmatch(r"/v2/([a-z0-9/._-]+)/(manifests|blobs)/([^/]+)", path)
        if not m or m.group(1) not in config["repos"]:
            return self.send(404, b'{"errors": [{"code": "NAME_UNKNOWN"}]}')
        repo, kind, ref = m.groups()
        if not self.authorized(repo):
            return self.challenge(repo)
        r = config["repos"][repo]
        if kind == "manifests":
            digest = r["tags"].get(ref, ref)
            data = blob_bytes(digest)
            if data is None:
                return self.send(404, b'{"errors": [{"code": "MANIFEST_UNKNOWN"}]}')
            accept = self.headers.get("Accept", "")
            mtype = json.loads(data).get("mediaType", "application/vnd.oci.image.manifest.v1+json")
            if mtype not in accept:
                return self.send(404, b'{"errors": [{"code": "MANIFEST_UNKNOWN", "message": "not acceptable"}]}')
            return self.send(200, data, mtype, extra=[("Docker-Content-Digest", digest)])
        data = blob_bytes(ref)
        if data is None:
            return self.send(404, b'{"errors": [{"code": "BLOB_UNKNOWN"}]}')
        if r.get("tamper") == ref:
            data = data[:-1] + bytes([data[-1] ^ 0xFF])
        if r.get("oversize"):
            data += b"\0" * r["oversize"]
        if r.get("redirect"):
            return self.send(307, b"", extra=[("Location", self.port_url(r["redirect"]) + "/elsewhere/" + ref)])
        self.send(200, data, "application/octet-stream")

    do_HEAD = do_GET


server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
with open(port_file + ".tmp", "w") as f:
    f.write(str(server.server_address[1]))
os.rename(port_file + ".tmp", port_file)
server.serve_forever()
