#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# The agent's usual work: `hutch run` gets the policy's network (run = proxy
# in the shipped policy) and `hutch exec` none; pip install and apt-get
# install in an image with agent.recipe's environment, git clone over HTTP,
# and the mock model's pip install through hutch run; `--net none` cuts it;
# `allow = public`.
# Every server listens on the host's loopback (names mapped with --resolve)
# or inside a network namespace this script creates, where "public"
# addresses live on that namespace's own loopback device.
. "$(dirname "$0")/../lib/tap.sh"

command -v python3 >/dev/null || tap_skip_all "python3 is needed on the host for the test servers"
bb=$(hutch_test_rootfs busybox) || tap_skip_all "busybox test rootfs unavailable"

tmp=$(hutch_test_tmpdir)
hx() { "$HUTCH_BIN" exec --rootfs "$bb" "$@"; }
images=()
. "$HUTCH_SRCDIR/tests/lib/agent.sh"
cleanup() {
  mock_stop
  [ -n "${http_pid:-}" ] && kill "$http_pid" 2>/dev/null
  local i
  for i in "${images[@]}"; do "$HUTCH_BIN" rootfs rm "$i" >/dev/null 2>&1; done
  rm -rf "$tmp"
}
trap cleanup EXIT

# ---- a package index and a git repository on the host's loopback ----
mkdir -p "$tmp/www/simple/hutchdemo"
echo "hello from the host" >"$tmp/www/hello.txt"
python3 "$HUTCH_SRCDIR/tests/lib/make-pip-index.py" "$tmp/www/simple"
# A repository served the "dumb" way: plain files over HTTP.
if command -v git >/dev/null; then
  git init -q -b main "$tmp/src" &&
    echo "cloned through the proxy" >"$tmp/src/README" &&
    git -C "$tmp/src" add README &&
    git -C "$tmp/src" -c user.name=t -c user.email=t@t commit -qm one &&
    git clone -q --bare "$tmp/src" "$tmp/www/repo.git" &&
    git -C "$tmp/www/repo.git" update-server-info
fi
# A flat apt repository of one package, if the host can build a .deb.
if command -v dpkg-deb >/dev/null; then
  mkdir -p "$tmp/deb/DEBIAN" "$tmp/deb/usr/share/hutchdemo" "$tmp/www/apt"
  printf 'Package: hutch-apt-demo\nVersion: 1.0\nArchitecture: all\nMaintainer: hutch tests <t@t>\nDescription: test\n' \
    >"$tmp/deb/DEBIAN/control"
  echo "installed by apt through the proxy" >"$tmp/deb/usr/share/hutchdemo/word"
  deb_file=$tmp/www/apt/hutch-apt-demo_1.0_all.deb
  dpkg-deb --build --root-owner-group "$tmp/deb" "$deb_file" >/dev/null &&
    {
      dpkg-deb -f "$deb_file"
      echo "Filename: ./${deb_file##*/}"
      echo "Size: $(stat -c %s "$deb_file")"
      echo "SHA256: $(sha256sum "$deb_file" | cut -d' ' -f1)"
      echo
    } >"$tmp/www/apt/Packages" &&
    python3 -c 'import lzma, sys; open(sys.argv[1] + ".xz", "wb").write(lzma.compress(open(sys.argv[1], "rb").read()))' \
      "$tmp/www/apt/Packages"
fi
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
port=$(free_port)
(cd "$tmp/www" && exec python3 -m http.server "$port" --bind 127.0.0.1 >"$tmp/http.log" 2>&1) &
http_pid=$!
for _ in $(seq 50); do
  python3 -c "import socket; socket.create_connection(('127.0.0.1', $port), 1)" 2>/dev/null && break
  sleep 0.1
done
map=(--resolve "pkgs.test=127.0.0.1" --allow "pkgs.test:$port")
index="--index-url http://pkgs.test:$port/simple --trusted-host pkgs.test"

# ---- the policy: what runs and execs get ----
tap_ok "policy show --effective" "$HUTCH_BIN" policy show --effective
tap_like "$tap_stdout" "hutch run: --net proxy by default" "says hutch run gets the proxy"
tap_like "$tap_stdout" "hutch exec and hutch create: --net none unless they say --net proxy" "and hutch exec none"
tap_like "$tap_stdout" "pypi\.org .*files\.pythonhosted\.org" "the package indexes are listed"
tap_ok "policy show --json" "$HUTCH_BIN" policy show --json
tap_is "$(python3 -c 'import json,sys; print(json.load(sys.stdin)["network"]["run"])' <<<"$tap_stdout")" proxy \
  "--json: network.run"
tap_ok "hutch exec has no network by default" hx -- cat /proc/net/dev
tap_unlike "$tap_stdout" "eth0" "no eth0 in hutch exec without --net"

# ---- hutch run: the policy's network unless --net none ----
AGENT_IMAGE=$bb
mock_start '[
 {"calls": [["execute_bash", {"command": "env | grep ^HTTP_PROXY=; wget -q -O- http://pkgs.test:'"$port"'/hello.txt"}]]},
 {"calls": [["submit", {}]]}
]'
tap_status 0 "hutch run without --net" hrun --query "fetch" "${map[@]}"
run_dir
tap_is "$(traj 't["hutch"]["sandbox"]["network"]["mode"]')" "proxy" "the run got --net proxy from the policy"
tap_like "$(traj 't["steps"][0]["observation"]')" "HTTP_PROXY=http://10\.89\." "the proxy is in the environment"
tap_like "$(traj 't["steps"][0]["observation"]')" "hello from the host" "and reaches an allowed host"
tap_like "$tap_stderr" "network: 1 request, 1 allowed" "the summary is printed"
mock_start '[
 {"calls": [["execute_bash", {"command": "cat /proc/net/dev; wget -q -O- http://pkgs.test:'"$port"'/hello.txt"}]]},
 {"calls": [["submit", {}]]}
]'
tap_status 0 "hutch run --net none" hrun --query "fetch" --net none
run_dir
tap_is "$(traj 't["hutch"]["sandbox"]["network"]["mode"]')" "none" "the trajectory says none"
tap_unlike "$(traj 't["steps"][0]["observation"]')" "eth0|hello from the host" "no link, nothing fetched"
# A policy that gives runs nothing: run = none.
sed 's/^run = proxy$/run = none/' "$HUTCH_POLICY" >"$tmp/none.policy"
cp "$(dirname "$HUTCH_POLICY")/seccomp.json" "$tmp/"
tap_ok "the copied policy says run = none" grep -q '^run = none$' "$tmp/none.policy"
mock_start '[{"calls": [["submit", {}]]}]'
tap_status 0 "hutch run under a policy with run = none" hrun --query "x" --policy "$tmp/none.policy"
run_dir
tap_is "$(traj 't["hutch"]["sandbox"]["network"]["mode"]')" "none" "gets no network"
tap_fails "and --allow there needs --net proxy" hrun --query "x" --policy "$tmp/none.policy" --allow example.org
tap_like "$tap_stderr" "need --net proxy" "says so"
mock_stop

# ---- allow = public, from inside a sandbox ----
tap_fails "public: a name resolving to loopback (localhost) is refused" hx --net proxy --allow public -- \
  wget -q -O- "http://localhost/hello.txt"
tap_like "$tap_stderr" "403" "with 403"
tap_like "$tap_stderr" "1 refused \(localhost:80" "the summary names it"
for m in internal.test=127.0.0.1 lan.test=192.168.1.10 meta.test=169.254.169.254 cg.test=100.64.0.1; do
  tap_fails "public: a resolve override ${m%%=*} -> ${m#*=} does not widen it" hx --net proxy --allow public \
    --resolve "$m" -- wget -q -O- "http://${m%%=*}/hello.txt"
  tap_like "$tap_stderr" "403" "refused with 403"
done
id=$("$HUTCH_BIN" create --rootfs "$bb" --net proxy --allow public --resolve internal.test=127.0.0.1 "${map[@]}" \
  2>/dev/null)
tap_like "$id" "^[0-9a-f]{12}$" "a sandbox with allow public"
"$HUTCH_BIN" exec --in "$id" -- wget -q -O- "http://internal.test/hello.txt" >/dev/null 2>&1
tap_ok "a listed name still reaches its loopback server" "$HUTCH_BIN" exec --in "$id" -- \
  wget -q -O- "http://pkgs.test:$port/hello.txt"
tap_is "$tap_stdout" "hello from the host" "through its own entry"
tap_fails "and an address literal is not a name" "$HUTCH_BIN" exec --in "$id" -- wget -q -O- "http://1.1.1.1/"
log="$HUTCH_STATE_DIR/$id/proxy.log"
tap_ok "the audit log names the loopback refusal" \
  grep -q '"host":"internal.test".*"decision":"refuse","rule":"loopback address"' "$log"
tap_ok "the allowed request names its own rule" grep -q '"host":"pkgs.test".*"decision":"allow","rule":"allow pkgs.test' "$log"
tap_ok "the literal's refusal" grep -q '"host":"1.1.1.1".*"rule":"address literal not listed"' "$log"
"$HUTCH_BIN" rm "$id" >/dev/null 2>&1

# ---- allow = public, end to end, in a network namespace of our own ----
# The proxy engine (tests/helpers/proxy-harness) runs in a new user and
# network namespace whose loopback device also carries 1.2.3.4, a public
# address, and whose /etc/hosts (a bind mount in its own mount namespace)
# maps test names: nothing leaves that namespace.
harness=$HUTCH_BUILDDIR/tests/helpers/proxy-harness
if ! command -v curl >/dev/null || ! command -v ip >/dev/null || [ ! -x "$harness" ]; then
  tap_skip "public end to end: needs curl, ip and the proxy harness"
elif ! unshare -rnm true 2>/dev/null; then
  tap_skip "public end to end: unshare -rnm is not permitted here"
else
  printf '127.0.0.1 localhost\n1.2.3.4 pub.test\n10.1.2.3 priv.test\n1.2.3.4 mixed.test\n127.0.0.1 mixed.test\n' \
    >"$tmp/hosts"
  cat >"$tmp/ns.sh" <<'EOF'
set -u
tmp=$1 harness=$2
ip link set lo up && ip addr add 1.2.3.4/32 dev lo || exit 3
mount --bind "$tmp/hosts" /etc/hosts || exit 3
# Nothing but loopback: no packet can leave.
[ "$(ip -o link | wc -l)" = 1 ] || exit 3
# exec: $! is the server itself, so the kill at the end (or on any exit)
# stops it and with it this namespace.
(cd "$tmp/www" && exec python3 -m http.server 80 --bind 0.0.0.0 >/dev/null 2>&1) &
srv=$!
trap 'kill "$srv" 2>/dev/null' EXIT
get() { # NAME POLICY-ARGS... -- URL: the status curl saw through a fresh proxy; its audit log is $tmp/ns.audit.NAME
  local n=$1 args=() p ctl
  shift
  while [ "$1" != -- ]; do args+=("$1"); shift; done
  shift
  mkfifo "$tmp/ns.ctl.$n"
  "$harness" --audit "$tmp/ns.audit.$n" "${args[@]}" <"$tmp/ns.ctl.$n" >"$tmp/ns.port.$n" 2>>"$tmp/ns.err" &
  local h=$!
  exec {ctl}>"$tmp/ns.ctl.$n"
  for _ in $(seq 50); do p=$(head -n1 "$tmp/ns.port.$n" 2>/dev/null); [ -n "$p" ] && break; sleep 0.1; done
  for _ in $(seq 50); do python3 -c "import socket; socket.create_connection(('1.2.3.4', 80), 1)" 2>/dev/null && break; sleep 0.1; done
  curl -s -o /dev/null -w '%{http_code}\n' --max-time 10 -x "http://127.0.0.1:$p" "$1"
  # EOF on its standard input: the harness writes its log and stops.
  exec {ctl}>&-
  wait "$h"
}
rule() { python3 -c 'import json,sys; o=json.loads(open(sys.argv[1]).readlines()[-1]); print(o["rule"], o["address"])' "$tmp/ns.audit.$1"; }
echo "pub $(get pub --allow public -- http://pub.test/hello.txt)"
echo "pubrule $(rule pub)"
echo "unlisted $(get unlisted --allow pypi.org -- http://pub.test/hello.txt)"
echo "priv $(get priv --allow public -- http://priv.test/hello.txt)"
echo "privrule $(rule priv)"
echo "local $(get local --allow public -- http://localhost/hello.txt)"
echo "mixed $(get mixed --allow public -- http://mixed.test/hello.txt)"
echo "mixedlisted $(get mixedlisted --allow mixed.test -- http://mixed.test/hello.txt)"
echo "literal $(get literal --allow public -- http://1.2.3.4/hello.txt)"
kill "$srv"
EOF
  out=$(unshare -rnm bash "$tmp/ns.sh" "$tmp" "$harness" 2>&1)
  rc=$?
  tap_is "$rc" 0 "the namespace is set up (loopback only, 1.2.3.4 on it, its own /etc/hosts)"
  tap_like "$out" $'(^|\n)pub 200\n' "public: a name whose address is public is admitted end to end"
  tap_like "$out" $'(^|\n)pubrule allow public \(--allow\) 1\.2\.3\.4\n' "the audit log names the rule and the address"
  tap_like "$out" $'(^|\n)unlisted 403\n' "without public the same name is refused"
  tap_like "$out" $'(^|\n)priv 403\n' "public: a name resolving to a private address is refused"
  tap_like "$out" $'(^|\n)privrule private address 10\.1\.2\.3\n' "as private"
  tap_like "$out" $'(^|\n)local 403\n' "public: a name resolving to loopback is refused"
  tap_like "$out" $'(^|\n)mixed 403\n' "public: a name with a public and a loopback address is refused whole"
  tap_like "$out" $'(^|\n)mixedlisted 200\n' "(while a listed name uses its public address)"
  tap_like "$out" $'(^|\n)literal 403($|\n)' "public: an address literal is refused unless listed"
fi

# ---- real clients in the Debian image: pip with agent.recipe's environment, git ----
deb=$(hutch_test_rootfs debian 2>/dev/null)
if [ -z "$deb" ]; then
  tap_skip "the Debian test rootfs is not built (tests/setup-host.sh)"
  tap_done
  exit 0
fi
hd() { "$HUTCH_BIN" exec --rootfs "$deb" "$@"; }
tap_fails "the Debian image's pip refuses to install: externally managed" hd --net proxy "${map[@]}" -- \
  sh -c "pip install --no-cache-dir $index hutchdemo"
tap_like "$tap_stderr" "externally-managed-environment" "(PEP 668)"
# The agent image's environment, taken from the shipped recipe itself.
grep -E '^env |^run .*APT::Sandbox::User' "$HUTCH_SRCDIR/rootfs/agent.recipe" >"$tmp/env.recipe"
tap_ok "agent.recipe sets PIP_BREAK_SYSTEM_PACKAGES" grep -q '^env PIP_BREAK_SYSTEM_PACKAGES=1$' "$tmp/env.recipe"
tap_ok "and configures apt for the sandbox's root" grep -q 'APT::Sandbox::User' "$tmp/env.recipe"
img=hutch-test-pipenv-$$
images+=("$img")
tap_ok "an image with agent.recipe's environment" "$HUTCH_BIN" rootfs build --from "$deb" --recipe "$tmp/env.recipe" \
  --name "$img"
tap_ok "hutch exec: pip install works there" "$HUTCH_BIN" exec --rootfs "$img" --net proxy "${map[@]}" -- sh -c \
  "pip install --no-cache-dir $index hutchdemo >&2 && python3 -c 'import hutchdemo; print(hutchdemo.WORD)'"
tap_is "$tap_stdout" "installed through the proxy" "the package came from the index through the proxy"
aptget="echo 'deb [trusted=yes] http://pkgs.test:$port/apt ./' >/etc/apt/sources.list && rm -f /etc/apt/sources.list.d/* &&
  apt-get -q update >&2 && apt-get install -y -q hutch-apt-demo >&2 && cat /usr/share/hutchdemo/word"
if [ -s "$tmp/www/apt/Packages.xz" ]; then
  tap_fails "the Debian image's apt-get cannot download as the sandbox's root" hd --net proxy "${map[@]}" -- sh -c "$aptget"
  tap_ok "hutch exec: apt-get install works with agent.recipe's configuration" "$HUTCH_BIN" exec --rootfs "$img" \
    --net proxy "${map[@]}" -- sh -c "$aptget"
  tap_is "$tap_stdout" "installed by apt through the proxy" "the package came from the repository through the proxy"
else
  tap_skip "apt: dpkg-deb is not installed on the host: no repository to serve"
fi
if [ -d "$tmp/www/repo.git" ]; then
  tap_ok "git clone over HTTP through the proxy" hd --net proxy "${map[@]}" -- sh -c \
    "git clone -q http://pkgs.test:$port/repo.git /tmp/r && cat /tmp/r/README"
  tap_is "$tap_stdout" "cloned through the proxy" "the repository's file"
  tap_fails "git clone of a host not in the allowlist" hd --net proxy "${map[@]}" -- \
    git clone -q http://evil.example/repo.git /tmp/r
  tap_like "$tap_stderr" "403" "is refused with 403"
else
  tap_skip "git is not installed on the host: no repository to serve"
fi

# hutch run: the model's pip install works with the policy's network ...
AGENT_IMAGE=$img
cmd="pip install --no-cache-dir $index hutchdemo >/dev/null 2>&1 && python3 -c 'import hutchdemo; print(hutchdemo.WORD)'"
script='[
 {"calls": [["execute_bash", {"command": '"$(python3 -c 'import json,sys; print(json.dumps(sys.argv[1]))' "$cmd")"'}]]},
 {"calls": [["submit", {}]]}
]'
mock_start "$script"
tap_status 0 "hutch run: the model runs pip install" hrun --query "install hutchdemo" "${map[@]}"
run_dir
tap_like "$(traj 't["steps"][0]["observation"]')" "installed through the proxy" "and it succeeds"
# ... and not with --net none.
mock_start "$script"
tap_status 0 "hutch run --net none: the same pip install" hrun --query "install hutchdemo" --net none
run_dir
tap_unlike "$(traj 't["steps"][0]["observation"]')" "installed through the proxy" "fails"
tap_like "$(traj 't["steps"][0]["observation"]')" "Exit code: (Error: Exit code )?[1-9]" "with a non-zero exit code"
mock_stop

tap_done
