#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# --net none and --net proxy: the veth to the gateway namespace, the proxy
# as the only way out, the configuration programs find, and nothing left
# behind.  The only targets are servers on the host's loopback and the
# namespaces hutch creates.
. "$(dirname "$0")/../lib/tap.sh"

bb=$(hutch_test_rootfs busybox) || tap_skip_all "busybox test rootfs unavailable"
command -v python3 >/dev/null || tap_skip_all "python3 is needed on the host for the test servers"

tmp=$(hutch_test_tmpdir)
hx() { "$HUTCH_BIN" exec --rootfs "$bb" "$@"; }
mark="hutch-net-test-$$-$RANDOM"
# A function, so that no wrapper process with the pattern in its command line is running.
no_process() { ! pgrep -f "$1" >/dev/null; }

# ---- servers on the host's loopback: plain HTTP, and HTTPS for CONNECT ----
mkdir -p "$tmp/www/simple/hutchdemo"
echo "hello from the host" >"$tmp/www/hello.txt"
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
http_port=$(free_port)
(cd "$tmp/www" && exec python3 -m http.server "$http_port" --bind 127.0.0.1 >"$tmp/http.log" 2>&1) &
http_pid=$!
https_port=
if command -v openssl >/dev/null; then
  openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=pkgs.test -addext subjectAltName=DNS:pkgs.test \
    -keyout "$tmp/key.pem" -out "$tmp/cert.pem" >/dev/null 2>&1
  https_port=$(free_port)
  python3 - "$https_port" "$tmp" >"$tmp/https.log" 2>&1 <<'EOF' &
import http.server, ssl, sys, os
port, d = int(sys.argv[1]), sys.argv[2]
os.chdir(d + "/www")
srv = http.server.HTTPServer(("127.0.0.1", port), http.server.SimpleHTTPRequestHandler)
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(d + "/cert.pem", d + "/key.pem")
srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
srv.serve_forever()
EOF
  https_pid=$!
fi
. "$HUTCH_SRCDIR/tests/lib/agent.sh"
cleanup() {
  mock_stop
  kill "$http_pid" ${https_pid:+"$https_pid"} 2>/dev/null
  for id in "${created[@]}"; do "$HUTCH_BIN" rm "$id" >/dev/null 2>&1; done
}
created=()
trap cleanup EXIT
for _ in $(seq 50); do
  python3 -c "import socket; socket.create_connection(('127.0.0.1', $http_port), 1)" 2>/dev/null && break
  sleep 0.1
done

net=(--net proxy --resolve "pkgs.test=127.0.0.1" --allow "pkgs.test:$http_port")

# ---- --net none: loopback only ----
tap_ok "--net none runs" hx --net none -- sh -c 'cat /proc/net/dev; echo; cat /proc/net/route'
tap_unlike "$tap_stdout" "eth0" "--net none: no eth0"
tap_unlike "$tap_stdout" $'\n[a-z0-9]+\t00000000' "--net none: no default route"
tap_ok "--net none and --json" hx --json -- true
tap_like "$tap_stdout" '"network":\{"mode":"none"\}' "--json says the mode"
tap_ok "the default is --net none" hx -- cat /proc/net/dev
tap_unlike "$tap_stdout" "eth0" "no eth0 without --net"
tap_status 2 "--allow without --net proxy is refused" hx --allow example.org -- true
tap_like "$tap_stderr" "need --net proxy" "and says why"
tap_status 2 "--resolve without --net proxy is refused" hx --resolve a.test=127.0.0.1 -- true
tap_status 2 "--net wants none or proxy" hx --net host -- true

# ---- hutch doctor's probe: the same setup in a throwaway namespace ----
tap_ok "hutch doctor --json" "$HUTCH_BIN" doctor --json
tap_is "$(python3 -c 'import json,sys; print([c["status"] for c in json.load(sys.stdin)["checks"] if c["id"] == "net-proxy"])' <<<"$tap_stdout")" \
  "['ok']" "doctor's net-proxy check: gateway namespace, veth, the proxy's port reachable"

# ---- --net proxy: the link, the route, the environment, the files ----
tap_ok "--net proxy runs" hx "${net[@]}" -- sh -c 'ip -4 addr show eth0; ip route; env; cat /etc/resolv.conf'
out=$tap_stdout
tap_like "$tap_stderr" "--resolve pkgs.test=127.0.0.1" "--resolve is announced on stderr"
tap_like "$out" "inet 10\.89\.[0-9]+\.[0-9]+/30" "eth0 has an address of a /30 of 10.89.0.0/16"
tap_like "$out" "default via 10\.89\.[0-9]+\.[0-9]+ dev eth0" "a default route through the gateway"
gw=$(sed -n 's/^default via \([0-9.]*\) .*/\1/p' <<<"$out")
tap_like "$out" "HTTP_PROXY=http://$gw:3128" "HTTP_PROXY points at the gateway's proxy"
tap_like "$out" "https_proxy=http://$gw:3128" "https_proxy too"
tap_like "$out" "NO_PROXY=localhost,127.0.0.1,::1" "NO_PROXY keeps loopback local"
tap_like "$out" "no_proxy=localhost,127.0.0.1,::1" "no_proxy too"
tap_like "$out" "no DNS server is" "resolv.conf says there is no DNS server"
tap_unlike "$out" "nameserver" "and names none"
tap_ok "pip and git are configured" hx "${net[@]}" -- cat /etc/pip.conf /etc/gitconfig
tap_like "$tap_stdout" "proxy = http://$gw:3128" "pip.conf's proxy"
tap_like "$tap_stdout" $'\tproxy = http://[0-9.]+:3128' "gitconfig's http.proxy"

# ---- through the proxy ----
tap_ok "an allowed host over plain HTTP (busybox wget)" hx "${net[@]}" -- wget -q -O- "http://pkgs.test:$http_port/hello.txt"
tap_is "$tap_stdout" "hello from the host" "the host's file came through the proxy"
tap_like "$tap_stderr" "network: 1 request, 1 allowed, 0 refused" "the one-line summary on stderr"
tap_fails "a host not in the allowlist" hx "${net[@]}" -- wget -q -O- http://evil.example/
tap_like "$tap_stderr" "403" "is refused with 403"
tap_like "$tap_stderr" "1 refused \(evil\.example:80" "and the summary names it"
tap_ok "--json has a network object" hx --json "${net[@]}" -- wget -q -O /dev/null "http://pkgs.test:$http_port/hello.txt"
tap_like "$tap_stdout" '"network":\{"mode":"proxy"[^}]*"requests":1,"allowed":1,"refused":0' "with the counts"

# --net-policy: its [network] replaces the policy's.
printf '# a whole policy may be given: only [network] counts\n[sandbox]\nhostname = x\n[network]\nallow = pkgs.test:%s  # the test server\nresolve = pkgs.test=127.0.0.1\n' \
  "$http_port" >"$tmp/net.policy"
tap_ok "--net-policy FILE" hx --net proxy --net-policy "$tmp/net.policy" -- \
  wget -q -O- "http://pkgs.test:$http_port/hello.txt"
tap_is "$tap_stdout" "hello from the host" "the file's allow and resolve are used"
printf '[sandbox]\nhostname = x\n' >"$tmp/nonet.policy"
tap_fails "a --net-policy file without [network]" hx --net proxy --net-policy "$tmp/nonet.policy" -- true
tap_like "$tap_stderr" "no \[network\] section" "is refused"
printf '[network]\nallow = [not a host\n' >"$tmp/bad.policy"
tap_fails "a --net-policy file with a bad entry" hx --net proxy --net-policy "$tmp/bad.policy" -- true
tap_like "$tap_stderr" "bad.policy:2" "names the file and line"

# What must not work: each is tried from inside the sandbox.
tap_fails "an IP literal" hx "${net[@]}" -- wget -q -O- "http://127.0.0.1:$http_port/hello.txt"
tap_like "$tap_stderr" "403" "refused by the proxy"
tap_fails "a name resolving to loopback" hx "${net[@]}" --allow "localhost:$http_port" -- \
  wget -q -O- "http://localhost:$http_port/hello.txt"
tap_like "$tap_stderr" "403" "refused by the proxy"
tap_fails "the metadata address" hx "${net[@]}" --allow 169.254.169.254 -- wget -q -O- http://169.254.169.254/
tap_fails "a direct connection to the gateway on another port" hx "${net[@]}" -- sh -c \
  'gw=$(ip route | sed -n "s/^default via \([0-9.]*\) .*/\1/p"); nc -w 2 "$gw" 22 </dev/null'
tap_fails "a direct connection to the host's loopback server" hx "${net[@]}" -- \
  sh -c "nc -w 2 127.0.0.1 $http_port </dev/null"
tap_fails "a direct connection to an outside address" hx "${net[@]}" -- sh -c 'nc -w 2 192.0.2.1 80 </dev/null'
tap_fails "a new network namespace (the way to a gateway of one's own) is refused" hx "${net[@]}" -- unshare -n true
tap_fails "DNS: no name resolves" hx "${net[@]}" -- nslookup example.org
tap_fails "DNS through the gateway" hx "${net[@]}" -- sh -c \
  'gw=$(ip route | sed -n "s/^default via \([0-9.]*\) .*/\1/p"); nslookup -timeout=2 example.org "$gw"'

# ---- a long-lived sandbox: exec --in, the audit log, rm ----
id=$("$HUTCH_BIN" create --rootfs "$bb" "${net[@]}" --env "MARK=$mark" 2>/dev/null)
tap_like "$id" "^[0-9a-f]{12}$" "hutch create --net proxy"
created+=("$id")
state="$HUTCH_STATE_DIR/$id/state.json"
tap_ok "state.json records the network" grep -q '"network":{"mode":"proxy"' "$state"
tap_ok "exec --in gets the proxy variables" "$HUTCH_BIN" exec --in "$id" -- sh -c 'echo $HTTPS_PROXY'
tap_like "$tap_stdout" "^http://10\.89\.[0-9.]+:3128$" "HTTPS_PROXY in exec --in"
tap_ok "and reaches the allowed host" "$HUTCH_BIN" exec --in "$id" -- wget -q -O- "http://pkgs.test:$http_port/hello.txt"
tap_fails "and not another" "$HUTCH_BIN" exec --in "$id" -- wget -q -O- http://evil.example:8080/
log="$HUTCH_STATE_DIR/$id/proxy.log"
tap_ok "the audit log has a line per request" test "$(wc -l <"$log")" -eq 2
tap_ok "the refusal is in it" grep -q '"host":"evil.example","port":8080.*"decision":"refuse' "$log"
tap_ok "the override is marked" grep -q '"override":true' "$log"
proxy_pid=$(sed -n 's/.*"proxy_pid":\([0-9]*\).*/\1/p' "$state")
tap_ok "the proxy runs after hutch create has exited" kill -0 "$proxy_pid"
tap_ok "the subnet table holds the sandbox" grep -q " $id " "$HUTCH_STATE_DIR/net-subnets"

# Concurrent sandboxes get distinct subnets.
id2=$("$HUTCH_BIN" create --rootfs "$bb" --net proxy 2>/dev/null)
created+=("$id2")
a1=$("$HUTCH_BIN" exec --in "$id" -- sh -c "ip -4 addr show eth0 | sed -n 's/.*inet \([0-9.]*\).*/\1/p'")
a2=$("$HUTCH_BIN" exec --in "$id2" -- sh -c "ip -4 addr show eth0 | sed -n 's/.*inet \([0-9.]*\).*/\1/p'")
tap_like "$a2" "^10\.89\." "a second sandbox has an address"
tap_ok "another than the first's ($a1, $a2)" test -n "$a1" -a "$a1" != "$a2"
tap_ok "hutch ps --json" "$HUTCH_BIN" ps --json
tap_is "$(printf '%s' "$tap_stdout" | python3 -c 'import json, sys
d = {s["id"]: s for s in json.load(sys.stdin)}
print(d[sys.argv[1]]["network"]["mode"], d[sys.argv[1]]["network"]["address"])' "$id")" "proxy $a1" \
  "hutch ps --json: the network mode and the address"
tap_ok "hutch ps" "$HUTCH_BIN" ps
tap_like "$(grep "^$id " <<<"$tap_stdout")" "^$id +[0-9]+ +running .* proxy +- " "hutch ps: a NET column"
# They run at once (each waits until all four do), each with its subnet.
pids=()
mkdir "$tmp/up"
for i in 1 2 3 4; do
  hx --net proxy --bind "$tmp/up:/up" -- sh -c "$(hutch_all_up 4); ip -4 addr show eth0" sh "$i" 2>/dev/null |
    sed -n 's/.*inet \([0-9.]*\).*/\1/p' >"$tmp/addr.$i" &
  pids+=($!)
done
wait "${pids[@]}"
tap_is "$(cat "$tmp"/addr.* | sort -u | wc -l)" 4 "one-shot sandboxes started together get distinct subnets"

tap_ok "hutch rm" "$HUTCH_BIN" rm "$id"
tap_ok "hutch rm of the second" "$HUTCH_BIN" rm "$id2"
created=()
gone=1
for _ in $(seq 50); do kill -0 "$proxy_pid" 2>/dev/null || { gone=0; break; }; sleep 0.1; done
tap_check $gone "the proxy is gone after hutch rm"
tap_ok "no process of the sandbox is left" no_process "$mark"
tap_fails "its subnet is freed" grep -q " $id " "$HUTCH_STATE_DIR/net-subnets"
tap_fails "the second's too" grep -q " $id2 " "$HUTCH_STATE_DIR/net-subnets"

# One-shot: the proxy ends with the sandbox.
hx "${net[@]}" --env "MARK=$mark" -- wget -q -O /dev/null "http://pkgs.test:$http_port/hello.txt" 2>/dev/null
tap_ok "no proxy process is left after a one-shot sandbox" no_process "$mark"
tap_ok "the subnet table is empty again" test ! -s "$HUTCH_STATE_DIR/net-subnets"
tap_ok "the host has no listener of ours" sh -c '! ss -Htln | grep -q ":3128 "'
if [ "$HUTCH_TEST_MODE" = root ] && command -v ip >/dev/null; then
  tap_ok "no named network namespace on the host" sh -c '[ -z "$(ip netns list 2>/dev/null)" ]'
  tap_ok "no veth on the host" sh -c '! ip -o link show type veth 2>/dev/null | grep -q "gw0\|eth0@"'
fi

# ---- hutch run --net proxy ----
AGENT_IMAGE=$bb
mock_start '[
 {"calls": [["execute_bash", {"command": "wget -q -O- http://pkgs.test:'"$http_port"'/hello.txt; wget -q -O- http://evil.example/ 2>&1; env | grep ^HTTP_PROXY="}]]},
 {"calls": [["submit", {}]]}
]'
tap_status 0 "hutch run --net proxy" hrun --query "fetch" "${net[@]}"
run_dir
tap_like "$tap_stderr" "network: 2 requests, 1 allowed, 1 refused" "hutch run prints the network summary at the end"
tap_ok "the proxy's audit log is in the run directory" test -s "$RUN_DIR/proxy.log"
tap_like "$(traj 't["steps"][0]["observation"]')" "hello from the host" "the model's command reached the allowed host"
tap_like "$(traj 't["steps"][0]["observation"]')" "403" "and not the other"
tap_is "$(traj 't["hutch"]["sandbox"]["network"]["mode"]')" "proxy" "the trajectory records the network mode"
tap_status 2 "hutch run --net none --allow is refused" hrun --query "x" --net none --allow example.org
mock_stop

# ---- real clients in the Debian image: python3, pip, git, apt ----
deb=$(hutch_test_rootfs debian 2>/dev/null)
if [ -z "$deb" ]; then
  tap_skip "the Debian test rootfs is not built (tests/setup-host.sh)"
else
  hd() { "$HUTCH_BIN" exec --rootfs "$deb" "$@"; }
  tap_ok "python3 urllib over plain HTTP" hd "${net[@]}" -- python3 -c "
import urllib.request
print(urllib.request.urlopen('http://pkgs.test:$http_port/hello.txt', timeout=20).read().decode().strip())"
  tap_is "$tap_stdout" "hello from the host" "urllib found the proxy in the environment"
  if [ -n "$https_port" ]; then
    tap_ok "python3 urllib over HTTPS: a CONNECT tunnel" hd "${net[@]}" --allow "pkgs.test:$https_port" \
      --bind "$tmp/cert.pem:/tmp/cert.pem:ro" -- python3 -c "
import ssl, urllib.request
ctx = ssl.create_default_context(cafile='/tmp/cert.pem')
print(urllib.request.urlopen('https://pkgs.test:$https_port/hello.txt', timeout=20, context=ctx).read().decode().strip())"
    tap_is "$tap_stdout" "hello from the host" "TLS end to end through the tunnel"
    tap_fails "CONNECT to a host not in the allowlist" hd "${net[@]}" -- python3 -c "
import urllib.request
urllib.request.urlopen('https://evil.example/', timeout=20)"
    tap_like "$tap_stderr" "403" "is refused with 403"
  else
    tap_skip "openssl is missing on the host: no HTTPS server for the CONNECT test"
  fi
  tap_fails "python3: UDP to the gateway gets no answer" hd "${net[@]}" -- python3 -c "
import socket
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.settimeout(2)
for addr in ['$gw', '192.0.2.1', '127.0.0.1']:
    try:
        s.sendto(b'\x12\x34\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00\x07example\x03org\x00\x00\x01\x00\x01', (addr, 53))
        s.recvfrom(512)
        print('answer from', addr)
        raise SystemExit(0)
    except OSError:
        pass
raise SystemExit(1)"
  tap_fails "python3: getaddrinfo of an outside name fails" hd "${net[@]}" -- python3 -c "
import socket; socket.getaddrinfo('example.org', 80)"
  tap_ok "apt is configured when /etc/apt exists" hd "${net[@]}" -- cat /etc/apt/apt.conf.d/00hutch-proxy
  tap_like "$tap_stdout" "Acquire::http::Proxy \"http://$gw:3128/\";" "Acquire::http::Proxy"
  tap_like "$tap_stdout" "Acquire::https::Proxy \"http://$gw:3128/\";" "Acquire::https::Proxy"
  tap_ok "git's http.proxy" hd "${net[@]}" -- git config --system --get http.proxy
  tap_like "$tap_stdout" "^http://10\.89\.[0-9.]+:3128$" "git config sees it"

  # A one-package index on the host's loopback, for pip.
  python3 "$HUTCH_SRCDIR/tests/lib/make-pip-index.py" "$tmp/www/simple"
  tap_ok "pip installs from an index through the proxy" hd "${net[@]}" -- sh -c \
    "pip install --break-system-packages --no-cache-dir --trusted-host pkgs.test --index-url http://pkgs.test:$http_port/simple hutchdemo >&2 &&
     python3 -c 'import hutchdemo; print(hutchdemo.WORD)'"
  tap_is "$tap_stdout" "installed through the proxy" "the package came from the host's index"

  # apt's own configuration, without the environment variables.
  tap_ok "apt fetches through the proxy from apt.conf.d alone" hd "${net[@]}" -- env -u http_proxy -u HTTP_PROXY \
    -u https_proxy -u HTTPS_PROXY /usr/lib/apt/apt-helper -o APT::Sandbox::User=root download-file \
    "http://pkgs.test:$http_port/hello.txt" /tmp/hello.txt
  tap_like "$tap_stderr" "network: 1 request, 1 allowed" "the request went through the proxy"

  # apt against the Debian mirror this host uses (read now, never written down).
  . "$HUTCH_SRCDIR/tests/lib/mirror.sh"
  mirror=$(host_debian_mirror)
  mhost=$(mirror_host "$mirror")
  if [ -z "$mirror" ]; then
    tap_skip "apt: no Debian mirror in the host's apt sources"
  elif ! curl -fsS -o /dev/null --max-time 10 "$mirror/dists/bookworm/Release" 2>/dev/null; then
    tap_skip "apt: the mirror $mhost is not reachable from this host"
  else
    # The proxy refuses names that resolve to reserved, private or loopback
    # addresses.  A mirror that does (a local cache) is allowed the honest
    # way: a policy listing exactly the addresses the host resolves it to.
    mpol="$tmp/mirror.policy"
    {
      echo "[network]"
      mirror_allow_lines "$mhost"
    } >"$mpol"
    mid=$("$HUTCH_BIN" create --rootfs "$deb" --net proxy --net-policy "$mpol" 2>/dev/null)
    created+=("$mid")
    # apt's state under /tmp: the image's /var/lib/apt belongs to _apt,
    # which root in the sandbox may not chmod; the image's own sources
    # may name other hosts.
    apt_opts="-o APT::Sandbox::User=root -o Acquire::Languages=none -o Dir::Etc::SourceList=/tmp/apt/sources.list"
    apt_opts+=" -o Dir::Etc::SourceParts=- -o Dir::State::Lists=/tmp/apt/lists -o Dir::Cache=/tmp/apt/cache"
    tap_ok "apt-get update from the mirror through the proxy" "$HUTCH_BIN" exec --in "$mid" -- sh -c \
      "mkdir -p /tmp/apt/lists/partial /tmp/apt/cache/archives/partial &&
       echo 'deb $mirror bookworm main' >/tmp/apt/sources.list && apt-get $apt_opts -q update"
    mlog="$HUTCH_STATE_DIR/$mid/proxy.log"
    mallowed() { grep -c "\"host\":\"$mhost\",\"port\":80,.*\"decision\":\"allow" "$mlog"; }
    n_update=$(mallowed)
    tap_ok "the audit log has the index requests to the mirror, allowed" test "${n_update:-0}" -ge 2
    tap_ok "apt-get download of a package from the mirror" "$HUTCH_BIN" exec --in "$mid" -- sh -c \
      "cd /tmp && apt-get $apt_opts -q download hostname >&2 && dpkg-deb --field hostname_*.deb Package"
    tap_is "$tap_stdout" "hostname" "the package fetched is a valid .deb"
    tap_ok "and the package's download, allowed" test "$(mallowed)" -gt "${n_update:-0}"
    tap_unlike "$(cat "$mlog")" '"decision":"refuse' "no request to the mirror was refused"
    tap_fails "and not from a host outside the allowlist" "$HUTCH_BIN" exec --in "$mid" -- \
      /usr/lib/apt/apt-helper -o APT::Sandbox::User=root download-file "http://evil.example/debian/dists/bookworm/Release" /tmp/Release
    "$HUTCH_BIN" rm "$mid" >/dev/null 2>&1
  fi
fi

tap_done
