#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A token service for the distribution registry's token auth, on 127.0.0.1.

Usage: token-server.py KEY.pem CERT.pem SERVICE USERS PORT_FILE LOG_FILE

Answers GET /token?service=...&scope=repository:NAME:ACTIONS with a JWT
signed (RS256) by KEY, its certificate CERT in the header's x5c (the
registry trusts it through its rootcertbundle).  USERS holds "user:password"
lines: a user named there gets every action asked for; an anonymous request
gets "pull" on repositories under public/ only; wrong credentials get 401.
Each request is logged to LOG_FILE as a JSON line {"path", "user"}.
"""
import base64
import http.server
import json
import os
import sys
import threading
import time
import urllib.parse

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding

key_file, cert_file, service, users_file, port_file, log_file = sys.argv[1:7]
key = serialization.load_pem_private_key(open(key_file, "rb").read(), None)
cert = x509.load_pem_x509_certificate(open(cert_file, "rb").read())
cert_der = base64.b64encode(cert.public_bytes(serialization.Encoding.DER)).decode()
users = dict(line.strip().split(":", 1) for line in open(users_file) if ":" in line)
log_lock = threading.Lock()


def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def make_token(subject, access):
    now = int(time.time())
    header = {"typ": "JWT", "alg": "RS256", "x5c": [cert_der]}
    claims = {"iss": "hutch-test-issuer", "sub": subject, "aud": service, "exp": now + 300,
              "nbf": now - 10, "iat": now, "jti": os.urandom(8).hex(), "access": access}
    signing_input = b64url(json.dumps(header).encode()) + "." + b64url(json.dumps(claims).encode())
    sig = key.sign(signing_input.encode(), padding.PKCS1v15(), hashes.SHA256())
    return signing_input + "." + b64url(sig)


class Handler(http.server.BaseHTTPRequestHandler):
    def log_message(self, fmt, *args):
        pass

    def do_GET(self):
        url = urllib.parse.urlsplit(self.path)
        user = None
        auth = self.headers.get("Authorization", "")
        if auth.startswith("Basic "):
            try:
                user, password = base64.b64decode(auth[6:]).decode().split(":", 1)
            except Exception:
                user, password = "?", None
            if users.get(user) != password:
                return self.answer(401, {"errors": [{"code": "UNAUTHORIZED"}]}, user)
        if url.path != "/token":
            return self.answer(404, {}, user)
        query = urllib.parse.parse_qs(url.query)
        access = []
        for scope in query.get("scope", []):
            parts = scope.split(":")
            if len(parts) != 3 or parts[0] != "repository":
                continue
            asked = parts[2].split(",")
            granted = asked if user else [a for a in asked if a == "pull" and parts[1].startswith("public/")]
            if granted:
                access.append({"type": "repository", "name": parts[1], "actions": granted})
        token = make_token(user or "", access)
        self.answer(200, {"token": token, "access_token": token, "expires_in": 300}, user)

    def answer(self, status, obj, user):
        with log_lock, open(log_file, "a") as f:
            f.write(json.dumps({"path": self.path, "user": user, "status": status}) + "\n")
        body = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
with open(port_file + ".tmp", "w") as f:
    f.write(str(server.server_address[1]))
os.rename(port_file + ".tmp", port_file)
server.serve_forever()
