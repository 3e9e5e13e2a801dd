#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# hutch's allowlist HTTP proxy engine, through tests/helpers/proxy-harness:
# plain HTTP and CONNECT, refusals (unlisted hosts, IP literals, loopback
# and metadata addresses, SNI mismatch, tunnels without TLS or SNI where
# tls_required), the malformed-request corpus, slow clients, 1,000
# concurrent tunnels, max_connections, the byte budget and the audit log.
# Every upstream listens on 127.0.0.1 and is reached through
# `--resolve NAME=127.0.0.1` overrides only.
# shellcheck source=../lib/tap.sh
. "$(dirname "$0")/../lib/tap.sh"

harness=$HUTCH_BUILDDIR/tests/helpers/proxy-harness
py=/usr/bin/python3
[ -x "$harness" ] || tap_skip_all "$harness is not built"
[ -x "$py" ] || tap_skip_all "python3 is not installed"
command -v curl >/dev/null || tap_skip_all "curl is not installed"
command -v openssl >/dev/null || tap_skip_all "openssl is not installed"

tmp=$(hutch_test_tmpdir)
pids=()
declare -A proxy_pid proxy_fd
cleanup() {
  local p
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
  wait 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT

# ---- upstream servers and clients (python) ----
cat >"$tmp/t.py" <<'PY'
import asyncio, json, os, resource, socket, ssl, sys, threading, time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

def ready(port):
    print(port, flush=True)

class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0"
    def log_message(self, *a): pass
    def do_GET(self):
        heads = os.environ.get("HEADS")
        if heads:
            with open(heads, "a") as f:
                f.write(self.requestline + "\n" + "".join("%s: %s\n" % kv for kv in self.headers.items()) + "--\n")
        if self.path.startswith("/big/"):
            n = int(self.path[5:])
            self.send_response(200); self.send_header("Content-Length", str(n)); self.end_headers()
            chunk = b"x" * 65536
            while n > 0:
                try: self.wfile.write(chunk[:min(n, 65536)])
                except OSError: return
                n -= 65536
            return
        body = ("hello from " + self.path + "\n").encode()
        self.send_response(200); self.send_header("Content-Length", str(len(body))); self.end_headers()
        self.wfile.write(body)
    def do_POST(self):
        n = int(self.headers.get("Content-Length", "0"))
        data = self.rfile.read(n)
        body = b"got " + str(len(data)).encode() + b" bytes: " + data[:32] + b"\n"
        self.send_response(200); self.send_header("Content-Length", str(len(body))); self.end_headers()
        self.wfile.write(body)

def http_server():
    s = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    s.daemon_threads = True
    ready(s.server_address[1]); s.serve_forever()

def tls_server(cert, key):
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER); ctx.load_cert_chain(cert, key)
    s = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    s.daemon_threads = True
    s.socket = ctx.wrap_socket(s.socket, server_side=True)
    ready(s.server_address[1]); s.serve_forever()

async def echo(reader, writer):
    try:
        while True:
            d = await reader.read(65536)
            if not d: break
            writer.write(d); await writer.drain()
    except OSError: pass
    writer.close()

def raise_nofile():
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))

def echo_server():
    raise_nofile()
    async def main():
        srv = await asyncio.start_server(echo, "127.0.0.1", 0, backlog=4096)
        ready(srv.sockets[0].getsockname()[1])
        await srv.serve_forever()
    asyncio.run(main())

def blackhole_server():
    """Listens but never accepts, its accept queue full: a connection to it
    gets no SYN-ACK, the way an unreachable host behaves."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(0)
    port = s.getsockname()[1]
    held = []
    for _ in range(8):
        c = socket.socket()
        c.setblocking(False)
        try:
            c.connect(("127.0.0.1", port))
        except BlockingIOError:
            pass
        held.append(c)
    time.sleep(0.5)
    ready(port)
    while True:
        time.sleep(3600)

def raw(proxy, data, timeout=5):
    """Sends raw bytes to the proxy; prints the status line it answers."""
    s = socket.create_connection(("127.0.0.1", int(proxy)), timeout=timeout)
    s.sendall(data.encode("latin-1").decode("unicode_escape").encode("latin-1"))
    got = b""
    try:
        while b"\r\n" not in got:
            d = s.recv(4096)
            if not d: break
            got += d
    except socket.timeout:
        pass
    print(got.split(b"\r\n")[0].decode("latin-1"))

def connect_tunnel(proxy, host, port, timeout=5):
    s = socket.create_connection(("127.0.0.1", int(proxy)), timeout=timeout)
    s.sendall(("CONNECT %s:%s HTTP/1.1\r\nHost: %s:%s\r\n\r\n" % (host, port, host, port)).encode())
    head = b""
    while b"\r\n\r\n" not in head:
        d = s.recv(1)
        if not d: raise OSError("closed during CONNECT: %r" % head)
        head += d
    return s, head.split(b"\r\n")[0].decode()

def tls_get(proxy, host, port, sni, cafile):
    s, status = connect_tunnel(proxy, host, port)
    if " 200 " not in status:
        print("connect:", status); return
    ctx = ssl.create_default_context(cafile=cafile)
    ctx.check_hostname = False
    try:
        t = ctx.wrap_socket(s, server_hostname=None if sni == "-" else sni)
        t.sendall(b"GET /tls HTTP/1.0\r\nHost: x\r\n\r\n")
        print(t.recv(4096).split(b"\r\n")[0].decode())
    except (OSError, ssl.SSLError) as e:
        print("closed:", type(e).__name__)

def clear_get(proxy, host, port, path, hosthdr):
    """HTTP in clear through a CONNECT tunnel: the answer's status line, or
    how the tunnel ended."""
    s, status = connect_tunnel(proxy, host, port)
    if " 200 " not in status:
        print("connect:", status); return
    s.sendall(("GET %s HTTP/1.1\r\nHost: %s\r\n\r\n" % (path, hosthdr)).encode())
    try:
        got = s.recv(4096)
        print(got.split(b"\r\n")[0].decode() if got else "closed")
    except OSError as e:
        print("closed:", type(e).__name__)

def loris(proxy, n, seconds, idle):
    """n clients trickle a head that never ends; a good request meanwhile
    must be fast; after the idle timeout the proxy must have closed them."""
    n, seconds, idle = int(n), float(seconds), float(idle)
    socks = []
    for i in range(n):
        s = socket.create_connection(("127.0.0.1", int(proxy)))
        s.sendall(b"GET http://up.test/slow HTTP/1.1\r\n")
        socks.append(s)
    good = threading.Event()
    result = {}
    def good_request():
        t0 = time.monotonic()
        s = socket.create_connection(("127.0.0.1", int(proxy)))
        s.sendall(os.environ["GOOD"].encode())
        data = b""
        while True:
            d = s.recv(4096)
            if not d: break
            data += d
        result["t"] = time.monotonic() - t0
        result["status"] = data.split(b"\r\n")[0].decode()
        good.set()
    end = time.monotonic() + seconds
    th = None
    while time.monotonic() < end:
        for s in socks:
            try: s.send(b"X")
            except OSError: pass
        if th is None and time.monotonic() > end - seconds / 2:
            th = threading.Thread(target=good_request); th.start()
        time.sleep(0.1)
    good.wait(10)
    print("good %s %.3f" % (result.get("status"), result.get("t", 99)))
    # Now silence: the idle timeout must close every trickler.
    time.sleep(idle + 1.5)
    closed = 0
    for s in socks:
        s.settimeout(2)
        try:
            if s.recv(100) == b"": closed += 1
        except OSError:
            closed += 1
    print("closed %d" % closed)

def many(proxy, port, n):
    n = int(n)
    raise_nofile()
    async def one(i):
        r, w = await asyncio.open_connection("127.0.0.1", int(proxy))
        w.write(("CONNECT echo.test:%s HTTP/1.1\r\n\r\n" % port).encode())
        head = await r.readuntil(b"\r\n\r\n")
        if b" 200 " not in head.split(b"\r\n")[0]:
            return None
        return r, w
    async def main():
        conns = await asyncio.gather(*[one(i) for i in range(n)], return_exceptions=True)
        ok = [c for c in conns if isinstance(c, tuple)]
        print("open %d" % len(ok), flush=True)
        # All held open at once; each echoes its own message.
        for i, (r, w) in enumerate(ok):
            w.write(("tunnel %d\n" % i).encode())
        good = 0
        async def check(i, r):
            line = await asyncio.wait_for(r.readline(), 30)
            return line == ("tunnel %d\n" % i).encode()
        res = await asyncio.gather(*[check(i, r) for i, (r, w) in enumerate(ok)], return_exceptions=True)
        good = sum(1 for x in res if x is True)
        print("echoed %d" % good)
        for r, w in ok: w.close()
    asyncio.run(main())

def hold(proxy, port, n, extra_host):
    """Holds n tunnels, then tries one more request: prints its status."""
    socks = [connect_tunnel(proxy, "echo.test", port) for i in range(int(n))]
    print(" ".join(st.split(" ")[1] for s, st in socks))
    s = socket.create_connection(("127.0.0.1", int(proxy)), timeout=5)
    s.sendall(("CONNECT echo.test:%s HTTP/1.1\r\n\r\n" % port).encode())
    print(s.recv(4096).split(b"\r\n")[0].decode())

def audit_totals(path):
    n = up = down = 0; dec = {}
    for line in open(path):
        o = json.loads(line)
        for k in ("time", "sandbox", "method", "host", "port", "address", "decision", "rule", "override",
                  "bytes_up", "bytes_down", "duration_ms", "error"):
            if k not in o: raise SystemExit("missing %s in %s" % (k, line))
        n += 1; up += o["bytes_up"]; down += o["bytes_down"]
        dec[o["decision"]] = dec.get(o["decision"], 0) + 1
    print("requests=%d allowed=%d refused=%d errors=%d bytes_up=%d bytes_down=%d" % (
        n, dec.get("allow", 0), dec.get("refuse", 0), dec.get("error", 0), up, down))

if __name__ == "__main__":
    f = globals()[sys.argv[1]]
    f(*sys.argv[2:])
PY

# Starts a background server; sets $port to the port it printed.
start_server() { # NAME CMD...
  local name=$1 i
  shift
  "$@" >"$tmp/$name.port" 2>"$tmp/$name.err" &
  pids+=($!)
  for i in $(seq 50); do
    port=$(head -n1 "$tmp/$name.port" 2>/dev/null)
    [ -n "$port" ] && return 0
    sleep 0.1
  done
  echo "server $name did not start: $(cat "$tmp/$name.err")" >&2
  return 1
}

# Starts the harness with the given options; sets $proxy (its port) and
# $proxy_ctl (the fd whose closing stops it).
start_proxy() { # NAME ARGS...
  local name=$1 i
  shift
  mkfifo "$tmp/$name.ctl"
  # Without the other proxies' control fds: each must see its own EOF.
  (
    for fd in "${proxy_fd[@]}"; do exec {fd}>&-; done
    exec "$harness" --sandbox "$name" --audit "$tmp/$name.audit" "$@" <"$tmp/$name.ctl" >"$tmp/$name.port" \
      2>"$tmp/$name.err"
  ) &
  pids+=($!)
  proxy_pid[$name]=$!
  exec {proxy_ctl}>"$tmp/$name.ctl"
  proxy_fd[$name]=$proxy_ctl
  for i in $(seq 50); do
    proxy=$(head -n1 "$tmp/$name.port" 2>/dev/null)
    [ -n "$proxy" ] && return 0
    sleep 0.1
  done
  echo "proxy $name did not start: $(cat "$tmp/$name.err")" >&2
  return 1
}

# last_audit NAME [REGEX]: the proxy's last audit line; with REGEX, once it
# matches (up to 5 s): the proxy writes a request's line when it sees the
# client close, which on a busy machine can come after the client has
# exited.
last_audit() { # NAME [REGEX]
  [ -z "${2:-}" ] || hutch_wait_until 5 audit_last_matches "$1" "$2" || true
  tail -n1 "$tmp/$1.audit" 2>/dev/null
}
audit_last_matches() { [[ $(tail -n1 "$tmp/$1.audit" 2>/dev/null) =~ $2 ]]; }
audit_like() { # NAME REGEX DESC
  tap_like "$(last_audit "$1" "$2")" "$2" "$3"
}

# ---- set-up ----
HEADS=$tmp/heads start_server http env HEADS="$tmp/heads" "$py" "$tmp/t.py" http_server || tap_skip_all "no HTTP server"
http_port=$port
openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=tls.test -addext subjectAltName=DNS:tls.test \
  -keyout "$tmp/key.pem" -out "$tmp/cert.pem" >/dev/null 2>&1 || tap_skip_all "openssl cannot make a certificate"
start_server tls "$py" "$tmp/t.py" tls_server "$tmp/cert.pem" "$tmp/key.pem" || tap_skip_all "no TLS server"
tls_port=$port
start_server echo "$py" "$tmp/t.py" echo_server || tap_skip_all "no echo server"
echo_port=$port
# Before any proxy, whose control fd it would otherwise hold open.
hole_port=
start_server blackhole "$py" "$tmp/t.py" blackhole_server && hole_port=$port

start_proxy main --allow "up.test:$http_port" --allow "*.wild.test:$http_port" --allow "tls.test:$tls_port" \
  --allow "localhost:$http_port" --allow "169.254.169.254" --allow "echo.test:$echo_port" \
  --resolve up.test=127.0.0.1 --resolve a.wild.test=127.0.0.1 --resolve tls.test=127.0.0.1 \
  --resolve echo.test=127.0.0.1 --resolve other.test=127.0.0.1 --allow dead.test:1 --resolve dead.test=127.0.0.1 \
  --idle-timeout 3 --max-connections 2000
tap_like "$proxy" '^[0-9]+$' "the harness listens and prints its port"
main=$proxy
x=(curl -sS --max-time 10 -x "http://127.0.0.1:$main")

# ---- plain HTTP ----
tap_ok "GET through the proxy to an allowed host" "${x[@]}" "http://up.test:$http_port/one"
tap_is "$tap_stdout" "hello from /one" "the upstream's answer comes back"
line=$(last_audit main '"method":"GET","host":"up.test","port":[0-9]+,"address":"127.0.0.1","decision":"allow"')
tap_like "$line" '"method":"GET","host":"up.test","port":[0-9]+,"address":"127.0.0.1","decision":"allow"' \
  "audit line: allowed, with the address used"
tap_like "$line" '"override":true' "audit line: the address came from a resolve override"
tap_like "$line" '"rule":"allow up.test:[0-9]+ \(--allow\)"' "audit line: the rule that allowed it"
tap_like "$line" '^\{"time":"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:]{8}\.[0-9]{3}Z","sandbox":"main"' \
  "audit line: RFC 3339 UTC time with milliseconds, sandbox id"

: >"$tmp/heads"
tap_ok "headers to drop" "${x[@]}" -H "Proxy-Authorization: Basic eDp5" -H "X-Keep: 1" -H "Connection: X-Drop" \
  -H "X-Drop: 1" -H "Upgrade: h2c" "http://up.test:$http_port/h"
heads=$(cat "$tmp/heads")
tap_like "$heads" $'^GET /h HTTP/1.1\n' "forwarded in origin-form"
tap_like "$heads" $'Host: up.test:[0-9]+\n' "Host from the URI"
tap_like "$heads" $'Connection: close\n' "Connection: close upstream"
tap_like "$heads" $'X-Keep: 1\n' "end-to-end headers kept"
tap_unlike "$heads" 'Proxy-|X-Drop|Upgrade' "Proxy-*, Connection-named and hop-by-hop headers removed"

tap_ok "POST with a body" "${x[@]}" --data-binary "0123456789" "http://up.test:$http_port/post"
tap_is "$tap_stdout" "got 10 bytes: 0123456789" "exactly the Content-Length body is forwarded"

tap_ok "a wildcard entry allows a subdomain" "${x[@]}" "http://a.wild.test:$http_port/w"
tap_is "$tap_stdout" "hello from /w" "wildcard answer"

: >"$tmp/heads"
out=$("$py" "$tmp/t.py" raw "$main" "GET http://up.test:$http_port/first HTTP/1.1\r\nHost: x\r\n\r\nGET http://up.test:$http_port/second HTTP/1.1\r\nHost: x\r\n\r\n")
tap_like "$out" '^HTTP/1.0 200' "a pipelined pair: the first request is answered"
sleep 0.3
tap_is "$(grep -c '^GET ' "$tmp/heads")" 1 "the second pipelined request never reaches the upstream"

# ---- CONNECT ----
tap_ok "CONNECT tunnel to an allowed TLS host (curl)" "${x[@]}" --cacert "$tmp/cert.pem" "https://tls.test:$tls_port/secure"
tap_is "$tap_stdout" "hello from /secure" "TLS through the tunnel"
line=$(last_audit main '"method":"CONNECT","host":"tls.test".*"decision":"allow"')
tap_like "$line" '"method":"CONNECT","host":"tls.test".*"decision":"allow"' "audit line for the tunnel"
tap_like "$line" '"bytes_up":[1-9][0-9]*,"bytes_down":[1-9][0-9]*' "the tunnel's bytes are counted"

out=$("$py" "$tmp/t.py" tls_get "$main" tls.test "$tls_port" tls.test "$tmp/cert.pem")
tap_like "$out" '^HTTP/1.0 200' "a ClientHello whose SNI is the CONNECT host passes"
out=$("$py" "$tmp/t.py" tls_get "$main" tls.test "$tls_port" other.test "$tmp/cert.pem")
tap_like "$out" '^closed' "SNI other than the CONNECT host: the tunnel is closed"
line=$(last_audit main '"rule":"sni mismatch"')
tap_like "$line" '"decision":"refuse","rule":"sni mismatch".*"error":"TLS server name other.test does not match' \
  "audit line: SNI mismatch"

# ---- tls_required: a tunnel to such a port carries TLS naming its host ----
# The plain HTTP upstream's port is listed too: what a cleartext request
# sent through the tunnel would reach is then visible in $tmp/heads.
start_proxy tlsreq --allow "tls.test:$tls_port" --allow "up.test:$http_port" --allow "127.0.0.1:$tls_port" \
  --allow-address 127.0.0.1 --resolve tls.test=127.0.0.1 --resolve up.test=127.0.0.1 \
  --tls-required "$tls_port, $http_port"
tlsreq=$proxy
tap_ok "tls_required: curl with the CONNECT host as SNI" curl -sS --max-time 10 -x "http://127.0.0.1:$tlsreq" \
  --cacert "$tmp/cert.pem" "https://tls.test:$tls_port/req"
tap_is "$tap_stdout" "hello from /req" "tls_required: TLS naming the CONNECT host passes"
tap_status 1 "tls_required: openssl s_client -noservername" \
  timeout 10 openssl s_client -brief -proxy "127.0.0.1:$tlsreq" -connect "tls.test:$tls_port" -noservername \
  -CAfile "$tmp/cert.pem" </dev/null
sleep 0.2
audit_like tlsreq '"host":"tls.test".*"decision":"refuse","rule":"sni required".*"error":"the TLS ClientHello names no server' \
  "tls_required: a ClientHello without SNI is refused and audited"
out=$("$py" "$tmp/t.py" tls_get "$tlsreq" tls.test "$tls_port" - "$tmp/cert.pem")
tap_like "$out" '^closed' "tls_required: python ssl without server_hostname: the tunnel is closed"
: >"$tmp/heads"
out=$("$py" "$tmp/t.py" clear_get "$tlsreq" up.test "$http_port" /smuggled evil.test)
tap_like "$out" '^closed' "tls_required: GET with Host: evil.test in clear through CONNECT: closed"
sleep 0.2
tap_is "$(grep -c smuggled "$tmp/heads")" 0 "tls_required: the cleartext request never reaches the upstream"
audit_like tlsreq '"host":"up.test".*"decision":"refuse","rule":"tls required".*did not start with a TLS ClientHello' \
  "tls_required: the cleartext tunnel is refused and audited"
out=$("$py" "$tmp/t.py" tls_get "$tlsreq" tls.test "$tls_port" other.test "$tmp/cert.pem")
tap_like "$out" '^closed' "tls_required: another SNI is still refused"
out=$("$py" "$tmp/t.py" tls_get "$tlsreq" 127.0.0.1 "$tls_port" - "$tmp/cert.pem")
tap_like "$out" '^HTTP/1.0 200' "tls_required: an allowed address needs no SNI (clients send none for addresses)"
# Control: where the port does not require TLS, the tunnel carries anything,
# which is what hutch-security(7) says.
: >"$tmp/heads"
out=$("$py" "$tmp/t.py" clear_get "$main" up.test "$http_port" /clear up.test)
tap_like "$out" '^HTTP/1.0 200' "without tls_required for the port, a cleartext tunnel passes (the control)"

# ---- refusals ----
tap_ok "an unlisted host" "${x[@]}" -o /dev/null -w '%{http_code}' "http://nope.test:$http_port/"
tap_is "$tap_stdout" 403 "unlisted host: 403"
audit_like main '"host":"nope.test".*"decision":"refuse","rule":"host not listed"' \
  "audit line: refused, host not listed"
tap_ok "403 body" "${x[@]}" -i "http://nope.test:$http_port/"
tap_like "$tap_stdout" $'X-Hutch-Refused: nope.test is not in the sandbox.s network allowlist' "reason header"
tap_like "$tap_stdout" $'\r\n\r\nnope.test is not in the sandbox.s network allowlist' "one-line reason body"

tap_ok "an IP literal" "${x[@]}" -o /dev/null -w '%{http_code}' "http://127.0.0.1:$http_port/"
tap_is "$tap_stdout" 403 "IP literal: 403"
audit_like main '"rule":"address literal not listed"' "audit line: IP literal"

tap_ok "localhost, allowed by name" "${x[@]}" -o /dev/null -w '%{http_code}' "http://localhost:$http_port/"
tap_is "$tap_stdout" 403 "localhost resolving to loopback without an override: 403"
audit_like main '"host":"localhost".*"decision":"refuse","rule":"loopback address"' \
  "audit line: loopback address"

tap_ok "the metadata endpoint, even listed" "${x[@]}" -o /dev/null -w '%{http_code}' "http://169.254.169.254/latest/"
tap_is "$tap_stdout" 403 "169.254.169.254: 403"
audit_like main '"address":"169.254.169.254","decision":"refuse","rule":"link-local address"' \
  "audit line: link-local address"
tap_status 56 "CONNECT to the metadata endpoint" "${x[@]}" -o /dev/null "https://169.254.169.254/"
tap_like "$tap_stderr" 'response 403' "CONNECT to 169.254.169.254: 403"
audit_like main '"method":"CONNECT","host":"169.254.169.254".*"decision":"refuse"' \
  "CONNECT to 169.254.169.254 refused"
tap_ok "an allowed host on another port" "${x[@]}" -o /dev/null -w '%{http_code}' "http://up.test:1/"
tap_is "$tap_stdout" 403 "port not allowed: 403"

tap_ok "an allowed upstream that refuses connections" "${x[@]}" -i "http://dead.test:1/"
tap_like "$tap_stdout" '^HTTP/1.1 502 Bad Gateway' "unreachable upstream: 502"
audit_like main '"host":"dead.test".*"decision":"error".*"error":"connect to dead.test port 1 failed: Connection refused"' \
  "audit line: the connect error"

# ---- malformed requests ----
corpus=(
  "400|GET http://up.test:$http_port/ HTTP/1.1\n\n"
  "400|GET http://up.test:$http_port/ HTTP/2.0\r\n\r\n"
  "400|BREW http://up.test:$http_port/ HTCPCP/1.0\r\n\r\n"
  "400|garbage\r\n\r\n"
  "400|GET /relative HTTP/1.1\r\nHost: up.test\r\n\r\n"
  "400|GET https://up.test/ HTTP/1.1\r\n\r\n"
  "400|GET ftp://up.test/ HTTP/1.1\r\n\r\n"
  "400|GET http://u:p@up.test:$http_port/ HTTP/1.1\r\n\r\n"
  "400|CONNECT up.test HTTP/1.1\r\n\r\n"
  "400|CONNECT up.test:443/path HTTP/1.1\r\n\r\n"
  "400|GET http://up.test:$http_port/ HTTP/1.1\r\nX: a\r\n folded\r\n\r\n"
  "400|GET http://up.test:$http_port/ HTTP/1.1\r\nBad Name: x\r\n\r\n"
  "400|GET http://up.test:$http_port/ HTTP/1.1\r\nX: a\rb\r\n\r\n"
  "400|GET http://up.test:$http_port/ HTTP/1.1\r\nX: a\x00b\r\n\r\n"
  "400|POST http://up.test:$http_port/ HTTP/1.1\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\nx"
  "400|POST http://up.test:$http_port/ HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nx"
  "411|POST http://up.test:$http_port/ HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"
  "400|POST http://up.test:$http_port/ HTTP/1.1\r\nContent-Length: 5\r\nTransfer_Encoding: chunked\r\n\r\n0\r\n\r\n"
  "400|POST http://up.test:$http_port/ HTTP/1.1\r\nContent_Length: 5\r\n\r\nhello"
  "431|GET http://up.test:$http_port/ HTTP/1.1\r\nX: $(head -c 17000 /dev/zero | tr '\0' a)\r\n\r\n"
)
for entry in "${corpus[@]}"; do
  want=${entry%%|*}
  req=${entry#*|}
  out=$("$py" "$tmp/t.py" raw "$main" "$req")
  tap_like "$out" "^HTTP/1.1 $want " "malformed: ${req:0:60}: $want"
done
audit_like main '"decision":"error","rule":"malformed request".*"error":"request head larger' \
  "audit line for a malformed request"
: >"$tmp/heads"
out=$("$py" "$tmp/t.py" raw "$main" "GET http://up.test:$http_port/underscore HTTP/1.1\r\nTransfer_Encoding: chunked\r\n\r\n")
tap_like "$out" '^HTTP/1.1 400 ' "Transfer_Encoding (underscore): 400"
sleep 0.2
tap_is "$(grep -c underscore "$tmp/heads")" 0 "the Transfer_Encoding request never reaches the upstream"
audit_like main '"rule":"malformed request".*"error":"a header name with .?_.? that reads as a framing' \
  "audit line: the lookalike header name"
tap_ok "a good request after the corpus" "${x[@]}" "http://up.test:$http_port/after"
tap_is "$tap_stdout" "hello from /after" "the proxy still serves"

# ---- slow clients ----
out=$(GOOD=$'GET http://up.test:'"$http_port"$'/good HTTP/1.1\r\n\r\n' "$py" "$tmp/t.py" loris "$main" 50 3 3)
tap_diag "$out"
[[ $out =~ good\ HTTP/1.0\ 200\ OK\ ([0-9.]+) ]]
took=${BASH_REMATCH[1]:-99}
tap_ok "50 trickling clients do not delay a good request (${took} s < 1 s)" \
  "$py" -c "import sys; sys.exit(0 if float('$took') < 1.0 else 1)"
tap_like "$out" 'closed 50' "all 50 are closed after the idle timeout"

# ---- many tunnels ----
# A proxy of its own, whose idle timeout is not the 3 s the slow-loris case
# needs: opening 1,000 tunnels on a loaded machine (CI runs this under
# sanitizers too) may leave the first ones quiet for longer than that.
start_proxy many --allow "echo.test:$echo_port" --resolve echo.test=127.0.0.1 --allow "up.test:$http_port" \
  --resolve up.test=127.0.0.1 --idle-timeout 120 --max-connections 2000 || tap_skip_all "no proxy for many tunnels"
many=$proxy
out=$("$py" "$tmp/t.py" many "$many" "$echo_port" 1000)
tap_diag "$out"
tap_like "$out" 'open 1000' "1,000 concurrent CONNECT tunnels are open at once"
tap_like "$out" 'echoed 1000' "each of the 1,000 tunnels echoes its own bytes"
tap_ok "the proxy serves after the 1,000 tunnels" curl -sS --max-time 10 -x "http://127.0.0.1:$many" \
  "http://up.test:$http_port/still"

# ---- 504: the upstream never answers the connect ----
if [ -n "$hole_port" ]; then
  start_proxy slow --allow "hole.test:$hole_port" --resolve hole.test=127.0.0.1 --idle-timeout 2
  t0=$(date +%s%N)
  tap_ok "a connect that never completes" curl -sS --max-time 15 -i -x "http://127.0.0.1:$proxy" \
    "http://hole.test:$hole_port/"
  waited=$((($(date +%s%N) - t0) / 1000000))
  tap_like "$tap_stdout" 'HTTP/1.1 504 Gateway Timeout' "gets 504 Gateway Timeout"
  tap_like "$tap_stdout" 'timed out connecting to hole.test' "the reason names the host"
  tap_ok "after the proxy's wait, not the client's (${waited} ms)" test "$waited" -ge 1500 -a "$waited" -lt 12000
  sleep 0.2
  audit_like slow '"decision":"error".*"error":"timed out connecting to hole.test"' \
    "audit line for the 504"
else
  tap_skip "504 Gateway Timeout" "no listener with a full accept queue"
fi

# ---- max_connections ----
start_proxy limited --allow "echo.test:$echo_port" --resolve echo.test=127.0.0.1 --max-connections 3
out=$("$py" "$tmp/t.py" hold "$proxy" "$echo_port" 3 "")
tap_is "$out" $'200 200 200\nHTTP/1.1 503 Service Unavailable' "max_connections 3: a 4th connection gets 503"
sleep 0.2
tap_like "$(cat "$tmp/limited.audit")" '"decision":"refuse","rule":"max_connections"' "audit line for the 503"

# ---- byte budget ----
start_proxy budget --allow "up.test:$http_port" --resolve up.test=127.0.0.1 --byte-budget 1M
xb=(curl -sS --max-time 10 -x "http://127.0.0.1:$proxy")
"${xb[@]}" -o "$tmp/big" "http://up.test:$http_port/big/4000000" 2>/dev/null
size=$(stat -c %s "$tmp/big" 2>/dev/null || echo 0)
tap_ok "a download past the byte budget is cut ($size bytes)" test "$size" -lt 4000000 -a "$size" -ge 500000
tap_ok "a request after the budget" "${xb[@]}" -i "http://up.test:$http_port/x"
tap_like "$tap_stdout" 'HTTP/1.1 403 Forbidden' "refused once the budget is spent"
tap_like "$tap_stdout" 'byte budget exhausted' "the reason says so"

# ---- audit log ----
sleep 0.5
want=$("$py" "$tmp/t.py" audit_totals "$tmp/main.audit")
tap_ok "the audit summary" "$harness" --summary "$tmp/main.audit"
tap_is "$(head -n1 <<<"$tap_stdout")" "$want" "summary totals match the log's lines"
tap_like "$tap_stdout" 'refused: [a-z0-9.]+:[0-9]+ \(' "summary lists the top refusals"
tap_ok "every audit line is JSON with all fields" "$py" "$tmp/t.py" audit_totals "$tmp/main.audit"
printf '{"time":"x","decision":"allow","bytes_up":5\n{broken\n' >>"$tmp/main.audit"
tap_ok "a torn line does not break the summary" "$harness" --summary "$tmp/main.audit"
tap_is "$(head -n1 <<<"$tap_stdout")" "$want" "torn lines are skipped"

# ---- shutdown: EOF on stdin stops a proxy; sanitizers, when built in, report here ----
for name in main tlsreq limited budget; do
  fd=${proxy_fd[$name]}
  exec {fd}>&-
  for _ in $(seq 100); do
    kill -0 "${proxy_pid[$name]}" 2>/dev/null || break
    sleep 0.1
  done
  kill "${proxy_pid[$name]}" 2>/dev/null && echo "proxy $name did not stop at EOF" >&2
  wait "${proxy_pid[$name]}"
  tap_is "$?" 0 "proxy $name stops cleanly at EOF"
  tap_unlike "$(cat "$tmp/$name.err")" 'Sanitizer|runtime error' "proxy $name: no sanitizer report"
done

tap_done
