#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Published ports (create -p): a real HTTP server inside reached with curl
# from the host, a chosen port shown by ps --json, 200 parallel requests,
# a sandbox flooding a client that does not read (the relay's memory stays
# small, other connections still answer), 300 idle connections against the
# cap of 256, a non-loopback address refused without the policy, a port in
# use failing the create, the ports kept across two resets (the same host
# ports, a new relay, curl reaching the new incarnation's server), the
# audit records, and `hutch rm` stopping the relay.
. "$(dirname "$0")/../lib/tap.sh"

img=$(hutch_test_rootfs debian) || tap_skip_all "debian test rootfs unavailable"
tmp=$(hutch_test_tmpdir)
state=$HUTCH_STATE_DIR
[ -n "$state" ] || tap_skip_all "HUTCH_STATE_DIR is not set"
command -v curl >/dev/null || tap_skip_all "curl is not installed"
H() { timeout 60 "$HUTCH_BIN" "$@"; }

# A free loopback port on the host (bound, then let go).
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
relay_pid() { jq -r '.ports.relay_pid // empty' "$state/$1/state.json" 2>/dev/null; }
# Running: not gone, and not a zombie its reaper has yet to collect.
running() { local st; st=$(awk '/^State:/ {print $2}' "/proc/$1/status" 2>/dev/null); [ -n "$st" ] && [ "$st" != Z ]; }
rss_kb() { awk '/^VmRSS:/ {print $2}' "/proc/$1/status" 2>/dev/null; }
sandbox_count() { find "$state" -mindepth 1 -maxdepth 1 -type d ! -name '.*' | wc -l; }

hp=$(free_port)
# ---- a real HTTP server inside, curl outside ----
tap_ok "create -p HOSTPORT:8000 -p 0:9001" H create --rootfs "$img" -p "$hp:8000" -p 0:9001 --name web
a=$tap_stdout
tap_like "$a" "^[0-9a-f]{12}$" "prints the id"
H exec --in "$a" -- sh -c 'mkdir -p /srv && echo "hello from inside" >/srv/index.html' >/dev/null
# The server and a flooder, left running in the sandbox (setsid: they
# outlive the exec).
H exec --in "$a" -- setsid sh -c 'cd /srv && exec python3 -m http.server 8000 --bind 127.0.0.1 >/dev/null 2>&1' \
  </dev/null >/dev/null 2>&1 &
H exec --in "$a" -- setsid python3 -c '
import socket, threading
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", 9001)); s.listen(64)
def flood(c):
    chunk = b"x" * 65536
    try:
        while True:
            c.sendall(chunk)
    except OSError:
        pass
while True:
    c, _ = s.accept()
    threading.Thread(target=flood, args=(c,), daemon=True).start()
' </dev/null >/dev/null 2>&1 &
up() { [ "$(curl -s --max-time 2 "http://127.0.0.1:$hp/index.html")" = "hello from inside" ]; }
hutch_wait_until 30 up
tap_check $? "curl from the host reaches the server on the sandbox's loopback"

tap_ok "ps --json" H ps --json
fp=$(jq -r --arg id "$a" '.[] | select(.id == $id) | .ports[] | select(.port == 9001) | .host_port' <<<"$tap_stdout")
tap_like "$fp" "^[1-9][0-9]*$" "HOSTPORT 0: the chosen port is shown"
tap_is "$(jq -r --arg id "$a" '.[] | select(.id == $id) | .ports[] | select(.port == 8000) | "\(.host_addr):\(.host_port)"' <<<"$tap_stdout")" \
  "127.0.0.1:$hp" "the given port, on loopback by default"
tap_ok "ps" H ps
tap_like "$tap_stdout" "web 127\.0\.0\.1:$hp->8000,127\.0\.0\.1:$fp->9001" "the table shows them after the name"
relay=$(relay_pid "$a")
tap_like "$relay" "^[0-9]+$" "the relay is recorded in state.json"
running "$relay"
tap_check $? "and runs"
connector=$(pgrep -P "$relay")
tap_like "$connector" "^[0-9]+$" "with its connector"
init=$(jq -r .pid "$state/$a/state.json")
tap_is "$(cat "/proc/$connector/uid_map")" "$(cat "/proc/$init/uid_map")" "which is in the sandbox's user namespace"
if [ "$HUTCH_TEST_MODE" = root ]; then # (not dumpable: its namespaces are out of an unprivileged user's reach)
  tap_is "$(readlink "/proc/$connector/ns/net")" "$(readlink "/proc/$init/ns/net")" "and network namespace"
fi
tap_is "$(awk '/^CapEff:/ {print $2}' "/proc/$connector/status")" "0000000000000000" "with no capability"

# ---- many connections ----
seq 200 | xargs -P 50 -I{} curl -s --max-time 20 -o /dev/null -w '%{http_code}\n' "http://127.0.0.1:$hp/index.html" \
  >"$tmp/codes"
tap_is "$(grep -c '^200$' "$tmp/codes")" "200" "200 parallel requests all get 200"

# ---- a flooding sandbox and a client that does not read ----
before=$(rss_kb "$relay")
python3 - "$fp" "$hp" >"$tmp/flood" 2>&1 <<'EOF'
import socket, sys, time, urllib.request
fp, hp = int(sys.argv[1]), int(sys.argv[2])
stalled = socket.create_connection(("127.0.0.1", fp))  # never read
time.sleep(3)
other = socket.create_connection(("127.0.0.1", fp))
got = 0
other.settimeout(10)
while got < 8 << 20:
    d = other.recv(1 << 16)
    if not d:
        break
    got += len(d)
print("second", got)
body = urllib.request.urlopen("http://127.0.0.1:%d/index.html" % hp, timeout=10).read().decode().strip()
print("http", body)
stalled.close()
other.close()
EOF
after=$(rss_kb "$relay")
tap_check "$(awk '/^second/ {exit !($2 >= 8388608)}' "$tmp/flood"; echo $?)" "a second connection on the flooded port gets its 8 MiB"
tap_like "$(cat "$tmp/flood")" "http hello from inside" "and the other port answers meanwhile"
tap_diag "relay VmRSS: ${before} kB before the flood, ${after} kB after"
tap_check "$([ -n "$after" ] && [ "$after" -lt 8192 ] && [ $((after - before)) -lt 1024 ]; echo $?)" \
  "the relay's memory stays small (${after} kB, grew $((after - before)) kB)"

# ---- the cap: 300 idle connections ----
python3 - "$hp" >"$tmp/idle" 2>&1 <<'EOF'
import socket, sys, time
hp = int(sys.argv[1])
socks = [socket.create_connection(("127.0.0.1", hp)) for _ in range(300)]
time.sleep(2)
closed = 0
for s in socks:
    s.setblocking(False)
    try:
        if s.recv(1) == b"":
            closed += 1
    except BlockingIOError:
        pass
    except OSError:
        closed += 1
print("closed", closed)
for s in socks:
    s.close()
EOF
closed=$(awk '/^closed/ {print $2}' "$tmp/idle")
tap_check "$([ "${closed:-0}" -ge 44 ]; echo $?)" "past 256 connections the others are closed at once ($closed of 300)"
running "$relay"
tap_check $? "the relay lives on"
hutch_wait_until 10 up
tap_check $? "and answers once they are gone"

# ---- from inside, nothing new is reachable ----
tap_ok "the sandbox's own view" H exec --in "$a" -- python3 -c '
import socket, sys
port = int(sys.argv[1])
s = socket.socket()
s.settimeout(2)
try:
    s.connect(("127.0.0.1", port)); print("reached")
except OSError as e:
    print("refused")
print(" ".join(sorted(l.split(":")[0].strip() for l in open("/proc/net/dev").readlines()[2:])))
' "$hp"
tap_is "$tap_stdout" "$(printf 'refused\nlo')" "the host's port is not reachable from inside, and lo is its only interface"

# ---- addresses beyond loopback ----
n=$(sandbox_count)
tap_status 125 "0.0.0.0 is refused without the policy" H create --rootfs "$img" -p 0.0.0.0:0:80
tap_like "$tap_stderr" "only a loopback address" "saying why"
tap_like "$tap_stderr" "publish_address" "and naming the setting"
tap_status 125 "[::] too" H create --rootfs "$img" -p '[::]:0:80'
other=$(ip -4 -o addr show scope global 2>/dev/null | awk '{sub("/.*", "", $4); print $4; exit}')
if [ -n "$other" ]; then
  tap_status 125 "the host's address $other too" H create --rootfs "$img" -p "$other:0:80"
  tap_check "$(curl -s --max-time 2 -o /dev/null "http://$other:$hp/" ; [ $? -ne 0 ]; echo $?)" \
    "the loopback port does not answer on $other"
else
  tap_skip "a host's non-loopback address refused" "this host has none"
  tap_skip "the loopback port does not answer on another address" "this host has none"
fi
# Bound on 127.0.0.1 alone: no other address of the host answers for it.
for alt in 127.0.0.2 '[::1]'; do
  curl -s --max-time 2 -o /dev/null "http://$alt:$hp/index.html"
  tap_check "$([ $? -ne 0 ]; echo $?)" "the port does not answer on $alt"
done
tap_is "$(sandbox_count)" "$n" "the refused creates left no sandbox"
tap_ok "127.0.0.2 is loopback" H create --rootfs "$img" -p 127.0.0.2:0:80
H rm "$tap_stdout" >/dev/null
mkdir -p "$tmp/pol"
cp "$(dirname "$HUTCH_POLICY")"/seccomp.json "$tmp/pol/"
# The key goes into the policy's last section when that is [network].
if [ "$(grep '^\[' "$HUTCH_POLICY" | tail -1)" = "[network]" ]; then
  { cat "$HUTCH_POLICY"; printf '\npublish_address = 0.0.0.0\n'; } >"$tmp/pol/open.policy"
else
  { cat "$HUTCH_POLICY"; printf '\n[network]\npublish_address = 0.0.0.0\n'; } >"$tmp/pol/open.policy"
fi
tap_ok "with publish_address = 0.0.0.0 it is allowed" H create --rootfs "$img" --policy "$tmp/pol/open.policy" \
  -p 0.0.0.0:0:80
H rm "$tap_stdout" >/dev/null

# ---- a port in use ----
n=$(sandbox_count)
tap_status 125 "a port in use fails the create" H create --rootfs "$img" -p "$hp:80"
tap_like "$tap_stderr" "127\.0\.0\.1:$hp: bind: Address (already )?in use" "with the port and the reason"
tap_is "$(sandbox_count)" "$n" "and leaves no sandbox"
tap_status 2 "a bad -p is a usage error" H create --rootfs "$img" -p 80
tap_status 2 "port 0 inside is a usage error" H create --rootfs "$img" -p 8080:0
tap_status 2 "--publish is not an option of exec" H exec --rootfs "$img" --publish 8080:80 -- true
tap_status 2 "33 ports are a usage error" H create --rootfs "$img" $(for i in $(seq 33); do printf -- '-p 0:%d ' "$i"; done)

# ---- a reset: the same host ports, relayed to the new incarnation ----
rp=$(free_port)
tap_ok "create -p HOSTPORT:8000 -p 0:8001, to be reset" H create --rootfs "$img" -p "$rp:8000" -p 0:8001
r=$tap_stdout
serve() { # TEXT: a server on 8000 inside r, serving TEXT
  H exec --in "$r" -- setsid sh -c "mkdir -p /srv && echo $1 >/srv/index.html && cd /srv &&
    exec python3 -m http.server 8000 --bind 127.0.0.1 >/dev/null 2>&1" </dev/null >/dev/null 2>&1 &
}
serves() { [ "$(curl -s --max-time 2 "http://127.0.0.1:$rp/index.html")" = "$1" ]; }
ports_of() { H ps --json | jq -r --arg id "$1" '.[] | select(.id == $id) | .ports[] | "\(.host_addr):\(.host_port)->\(.port)"' | tr '\n' ' '; }
serve before
hutch_wait_until 30 serves before
tap_check $? "curl reaches its server before the reset"
published=$(ports_of "$r")
tap_like "$published" "^127\.0\.0\.1:$rp->8000 127\.0\.0\.1:[1-9][0-9]*->8001 $" "both ports published"
old_relay=$(relay_pid "$r")
for n in 1 2; do
  tap_ok "reset $n" H reset "$r"
  ! running "$old_relay"
  tap_check $? "reset $n: the old incarnation's relay is gone"
  new_relay=$(relay_pid "$r")
  running "$new_relay" && [ "$new_relay" != "$old_relay" ]
  tap_check $? "reset $n: a new relay is recorded and runs"
  tap_is "$(ports_of "$r")" "$published" "reset $n: on the same host ports, the chosen one kept"
  serves before
  tap_check "$(($? == 0))" "reset $n: the old server is gone with the old incarnation"
  serve "after-$n"
  hutch_wait_until 30 serves "after-$n"
  tap_check $? "reset $n: curl reaches the new incarnation's server through the same host port"
  old_relay=$new_relay
done
tap_ok "rm the reset sandbox" H rm "$r"
! running "$old_relay"
tap_check $? "its last relay is gone"
tap_ok "its audit" H audit --json "$r"
tap_is "$(jq -c '[.records[] | select(.type == "ports_summary") | .accepted > 0]' <<<"$tap_stdout")" "[true,true,true]" \
  "each incarnation's relay counted its connections"

# ---- rm stops the relay; the audit log has the ports and their counts ----
tap_ok "rm" H rm "$a"
! running "$relay" && ! running "$connector"
tap_check $? "the relay and its connector are gone"
tap_check "$(python3 -c 'import socket, sys; socket.create_connection(("127.0.0.1", int(sys.argv[1])), 2)' "$hp" 2>/dev/null
  [ $? -ne 0 ]
  echo $?)" "its port is closed"
tap_ok "audit" H audit --json "$a"
tap_is "$(jq -r '.records[] | select(.type == "start") | .ports | join(" ")' <<<"$tap_stdout")" \
  "127.0.0.1:$hp:8000 127.0.0.1:$fp:9001" "the start record has the ports, the chosen one as chosen"
sum=$(jq -c '.records[] | select(.type == "ports_summary")' <<<"$tap_stdout")
tap_check "$(jq -e '.accepted >= 200 and .refused >= 44 and .bytes_out > 8000000' <<<"$sum" >/dev/null; echo $?)" \
  "ports_summary counts the connections, the refused and the bytes: $sum"
tap_is "$(jq -r '.records[-2].type, .records[-1].type' <<<"$tap_stdout" | tr '\n' ' ')" "ports_summary end " \
  "just before the end"

tap_done
