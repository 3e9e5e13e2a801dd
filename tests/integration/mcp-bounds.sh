#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# hutch mcp: what one client, or a local user without a token, can make the
# server hold.  Over HTTP, each token of --token-file is a client: one
# client's sessions are bounded below the server's, idle sessions end
# sooner when the server is nearly full, and the images a client may start
# are the operator's (--allow-image).  Anyone on the machine can connect to
# the loopback port: connections that have not shown a token are bounded
# in number, time and bytes, and never push out one that has.
. "$(dirname "$0")/../lib/tap.sh"
. "$(dirname "$0")/../lib/mcp.sh"

img=$(hutch_test_rootfs busybox) || tap_skip_all "busybox test rootfs unavailable"
tmp=$(hutch_test_tmpdir)
H=$HUTCH_BIN
srv=
other=hutch-test-mcp-other-$$
trap '[ -n "$srv" ] && kill -9 "$srv" 2>/dev/null; "$H" rootfs rm "$other" >/dev/null 2>&1; rm -rf "$tmp"' EXIT

# ---- the audit log ----
# A client sets the pace of the audit lines: past --audit-log-max the file
# starts again (the full one kept as FILE.1), and a tool name the client
# made up, of any length, is not written.
cat >"$tmp/audit.py" <<'EOF'
import json, subprocess, sys
p = subprocess.Popen(sys.argv[1:], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
def rpc(i, method, params):
    p.stdin.write(json.dumps({"jsonrpc": "2.0", "id": i, "method": method, "params": params}) + "\n")
    p.stdin.flush()
    return p.stdout.readline()
rpc(1, "initialize", {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "a", "version": "0"}})
for i in range(2, 402):
    rpc(i, "tools/call", {"name": "x" * 10000, "arguments": {}})
p.stdin.close(); p.wait()
EOF
tap_ok "400 calls of a made-up tool, its name 10 kB long, under --audit-log-max 4K" \
  timeout 120 python3 "$tmp/audit.py" "$H" mcp --image "$img" --audit-log "$tmp/audit.log" --audit-log-max 4K
tap_ok "the audit log stays within 4 KiB" test "$(stat -c %s "$tmp/audit.log")" -le 4096
tap_ok "the full one is kept as FILE.1, within 4 KiB too" test "$(stat -c %s "$tmp/audit.log.1" 2>/dev/null || echo 99999)" -le 4096
tap_is "$(cat "$tmp/audit.log" "$tmp/audit.log.1" 2>/dev/null | grep -c xxxxxxxxxx)" "0" "the made-up name is not written"
tap_like "$(tail -n 1 "$tmp/audit.log")" '"tool":"\(unknown\)"' "the line says the tool was unknown"
tap_fails "--audit-log-max below 4K is refused" "$H" mcp --audit-log-max 1K

# ---- the images a client may start ----
# The same busybox tree under a second name: an image in the store, but not
# one the operator lists.
"$H" rootfs import "$(hutch_rootfs_ensure busybox)" --name "$other" >/dev/null 2>&1 ||
  tap_skip_all "cannot import the busybox tree a second time"
cat >"$tmp/images.py" <<'EOF'
import json, subprocess, sys
p = subprocess.Popen(sys.argv[2:], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
def rpc(i, method, params):
    p.stdin.write(json.dumps({"jsonrpc": "2.0", "id": i, "method": method, "params": params}) + "\n")
    p.stdin.flush()
    line = p.stdout.readline()
    return json.loads(line) if line else {"error": "the server ended"}
rpc(1, "initialize", {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "i", "version": "0"}})
def create(i, **a):
    r = rpc(i, "tools/call", {"name": "sandbox_create", "arguments": a}).get("result", {})
    return {"isError": r.get("isError"), "text": (r.get("content") or [{}])[0].get("text")}
out = {"default": create(2), "listed": create(3, image=sys.argv[1].split("=")[1]), "other": create(4, image=sys.argv[1].split("=")[0])}
print(json.dumps(out, sort_keys=True))
p.stdin.close(); p.wait()
EOF
tap_ok "a server with an image allowlist" timeout 60 python3 "$tmp/images.py" "$other=$img" \
  "$H" mcp --image "$img" --allow-image "$img" --audit-log /dev/null
images=$tap_stdout
iget() { python3 -c 'import json, sys; print(json.dumps(json.loads(sys.argv[1])[sys.argv[2]][sys.argv[3]]))' "$images" "$@"; }
tap_is "$(iget default isError)" 'false' "starts its default image"
tap_is "$(iget listed isError)" 'false' "and a listed one"
tap_is "$(iget other isError)" 'true' "refuses an image of the store it does not list"
tap_like "$(iget other text)" "not an image this server allows.*--allow-image" "saying so, and how the operator allows it"

# ---- HTTP: five clients, each with its own token ----
for c in a b c d e; do printf 'client-%s-%s%s\n' "$c" "$RANDOM$RANDOM" "$RANDOM$RANDOM"; done >"$tmp/tokens"
chmod 600 "$tmp/tokens"
# --idle 120: idle sessions of a nearly full server end after 4 s (1/30).
mcp_listen "$tmp/http.err" --token-file "$tmp/tokens" --idle 120 --image "$img" --audit-log /dev/null
tap_like "$url" '^http://127\.0\.0\.1:[0-9]+/mcp$' "the HTTP server with five tokens listens"

cat >"$tmp/sessions.py" <<'EOF'
import http.client, json, sys, time, urllib.parse
u = urllib.parse.urlparse(sys.argv[1])
tokens = open(sys.argv[2]).read().split()
INIT = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "s", "version": "0"}}})
def post(token, body, sid=None):
    c = http.client.HTTPConnection(u.hostname, u.port, timeout=30)
    h = {"Authorization": "Bearer " + token, "Host": u.netloc, "Content-Type": "application/json",
         "Accept": "application/json, text/event-stream"}
    if sid:
        h["Mcp-Session-Id"] = sid
    c.request("POST", "/mcp", body=body, headers=h)
    r = c.getresponse()
    return r.status, r.getheader("Mcp-Session-Id"), r.read().decode()
def fill(token, n):
    """Initializes until refused or n: the sessions made, the refusal."""
    made = []
    for _ in range(n):
        st, sid, body = post(token, INIT)
        if st != 200:
            return made, (st, body)
        made.append(sid)
    return made, None
out = {}
t0 = time.monotonic()
a, refused = fill(tokens[0], 20)
out["a"] = len(a)
out["a refused"] = refused
st, b, _ = post(tokens[1], INIT)
out["b"] = st
out["b with a's session"] = post(tokens[1], '{"jsonrpc":"2.0","id":2,"method":"ping"}', a[0] if a else "00")[0]
out["a's own"] = post(tokens[0], '{"jsonrpc":"2.0","id":2,"method":"ping"}', a[0] if a else "00")[0]
# Clients b, c and d take the rest of the server's 64 sessions.
for t in tokens[1:4]:
    fill(t, 16)
took = time.monotonic() - t0
full = post(tokens[4], INIT)
out["full"] = [full[0], full[2]] if took < 3 else "slow"  # the sessions idled out meanwhile
time.sleep(5)
out["e after idle"] = post(tokens[4], INIT)[0]
out["a's first after idle"] = post(tokens[0], '{"jsonrpc":"2.0","id":3,"method":"ping"}', a[0] if a else "00")[0]
print(json.dumps(out, sort_keys=True))
EOF
tap_ok "sessions of five clients" timeout 120 python3 "$tmp/sessions.py" "$url" "$tmp/tokens"
sess=$tap_stdout
sget() { python3 -c 'import json, sys; print(json.dumps(json.loads(sys.argv[1]).get(sys.argv[2])))' "$sess" "$@"; }
tap_is "$(sget a)" '16' "one client holds at most 16 sessions (not the server's 64)"
tap_like "$(sget "a refused")" '^\[429, .*--max-sessions' "the next is refused with 429, naming --max-sessions"
tap_is "$(sget b)" '200' "another client starts its own"
tap_is "$(sget "b with a's session")" '404' "and cannot reach the first client's sessions"
tap_is "$(sget "a's own")" '200' "which their client still reaches"
if [ "$(sget full)" = '"slow"' ]; then
  tap_skip "a full server refuses a new session" "filling the server took longer than the idle bound"
else
  tap_like "$(sget full)" '^\[503, .*64 sessions' "a full server refuses a new session, saying why"
fi
tap_is "$(sget "e after idle")" '200' "a nearly full server ends idle sessions sooner: a new client gets in"
tap_is "$(sget "a's first after idle")" '404' "the idle session it replaced is gone"

# ---- connections without a token ----
# An authenticated request whose body is still coming is never dropped for
# connections that have shown no token.
cat >"$tmp/evict.py" <<'EOF'
import socket, sys, time, urllib.parse
u = urllib.parse.urlparse(sys.argv[1])
body = b'{"jsonrpc":"2.0","id":1,"method":"ping"}'
legit = socket.create_connection((u.hostname, u.port))
legit.sendall(b"POST /mcp HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nMcp-Session-Id: 00\r\n"
              b"Content-Length: %d\r\n\r\n" % (u.netloc.encode(), sys.argv[2].encode(), len(body)) + body[:10])
time.sleep(0.3)
idle = [socket.create_connection((u.hostname, u.port)) for _ in range(150)]
time.sleep(0.5)
legit.sendall(body[10:])
legit.settimeout(15)
try:
    print(legit.recv(100).split(b"\r\n")[0].decode() or "closed")
except OSError as e:
    print("error", e)
EOF
a_token=$(head -1 "$tmp/tokens")
tap_like "$(timeout 60 python3 "$tmp/evict.py" "$url" "$a_token")" '^HTTP/1.1 404 ' \
  "an authenticated request in flight is answered after 150 connections without a token"

# Slowloris: a header block that never ends is dropped at the header
# deadline (3 s), not held for the whole read deadline.
cat >"$tmp/slow.py" <<'EOF'
import socket, sys, time, urllib.parse
u = urllib.parse.urlparse(sys.argv[1])
s = socket.create_connection((u.hostname, u.port))
s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
s.sendall(b"POST /mcp HTTP/1.1\r\n")
s.settimeout(0.2)
t0 = time.monotonic()
head = b""
while time.monotonic() - t0 < 20:
    try:
        s.send(b"X")
        head = s.recv(100)
        break
    except socket.timeout:
        continue
    except OSError:
        break
print(round(time.monotonic() - t0, 1), head.split(b"\r\n")[0].decode() or "closed")
EOF
slow=$(timeout 60 python3 "$tmp/slow.py" "$url")
tap_ok "a header block sent a byte at a time is dropped within 6 s" \
  python3 -c "import sys; sys.exit(not float('${slow%% *}') < 6)"
tap_like "$slow" ' HTTP/1.1 408 ' "with 408"

# Bytes before the token: a header block past 8 KiB is refused at once.
cat >"$tmp/big.py" <<'EOF'
import socket, sys, time, urllib.parse
u = urllib.parse.urlparse(sys.argv[1])
s = socket.create_connection((u.hostname, u.port))
t0 = time.monotonic()
s.sendall(b"POST /mcp HTTP/1.1\r\n" + b"X-Pad: " + b"a" * (12 << 10))
s.settimeout(20)
try:
    head = s.recv(100).split(b"\r\n")[0].decode() or "closed"
except OSError as e:
    head = "error %s" % e
print(round(time.monotonic() - t0, 1), head)
EOF
big=$(timeout 60 python3 "$tmp/big.py" "$url")
tap_like "$big" ' HTTP/1.1 431 ' "a header block past 8 KiB without a token: 431"
tap_ok "at once" python3 -c "import sys; sys.exit(not float('${big%% *}') < 3)"

# Many idle connections, a flood of new ones and a slowloris: an
# authenticated client is still served at once, every time.  The attackers
# are processes of their own: as threads of the client's, they held its
# interpreter lock between its connect and its request, long enough on a
# busy machine for the flood to push its connection out as one that never
# sent its headers, which a real client sends at once.
cat >"$tmp/flood.py" <<'EOF'
import multiprocessing, socket, sys, time, urllib.parse, http.client
u = urllib.parse.urlparse(sys.argv[1])
stop = time.monotonic() + 8
held = [socket.create_connection((u.hostname, u.port)) for _ in range(200)]
def flood():
    mine = []
    while time.monotonic() < stop:
        try:
            mine.append(socket.create_connection((u.hostname, u.port), timeout=2))
        except OSError:
            time.sleep(0.01)
        if len(mine) > 300:
            mine.pop(0).close()
def slowloris():
    s = socket.create_connection((u.hostname, u.port))
    s.sendall(b"POST /mcp HTTP/1.1\r\n")
    while time.monotonic() < stop:
        try:
            s.send(b"X")
        except OSError:
            s = socket.create_connection((u.hostname, u.port))
            s.sendall(b"POST /mcp HTTP/1.1\r\n")
        time.sleep(0.2)
for f in (flood, flood, slowloris):
    multiprocessing.Process(target=f, daemon=True).start()
time.sleep(0.5)
worst, codes = 0.0, set()
for _ in range(5):
    t0 = time.monotonic()
    # What went wrong is printed, not lost in a traceback of a killed run.
    try:
        c = http.client.HTTPConnection(u.hostname, u.port, timeout=30)
        c.request("PUT", "/mcp", headers={"Authorization": "Bearer " + sys.argv[2], "Host": u.netloc})
        codes.add(c.getresponse().status)
    except OSError as e:
        codes.add("%s after %.1f s" % (type(e).__name__, time.monotonic() - t0))
    worst = max(worst, time.monotonic() - t0)
    time.sleep(0.5)
print(sorted(codes, key=str), round(worst, 1))
EOF
# The bound is for a run that hangs: five requests of 30 s at most.
flood=$(timeout 200 python3 "$tmp/flood.py" "$url" "$a_token")
flood_rc=$?
[ -n "$flood" ] || tap_diag "the flood script printed nothing (status $flood_rc)"
tap_like "$flood" '^\[405\] ' "an authenticated client is served among 200 idle connections, a flood and a slowloris"
tap_ok "each time within 3 s" python3 -c "import sys; sys.exit(not float('${flood##* }') < 3)"

kill -TERM "$srv"
wait "$srv"
tap_check $? "SIGTERM ends the server cleanly"
srv=
tap_done
