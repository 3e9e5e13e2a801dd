#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# hutch rootfs build: a recipe run in a sandbox on a base image, frozen as a
# new image that is a layer over the base (not a copy); a failing step
# leaves nothing; a layer on a layer; removing a base that a layer needs;
# and an apt install from the Debian mirror of this machine's apt sources.
. "${HUTCH_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}/tests/lib/tap.sh"

work=$(hutch_test_tmpdir) || exit 1
chmod 0755 "$work"
export HUTCH_STORE=$work/store

# shellcheck disable=SC2317 # run by the EXIT trap
cleanup() {
  local d i
  # Layers first: a base stays while an image built on it exists.
  for i in 1 2 3; do
    for d in $("$HUTCH_BIN" rootfs ls --json 2>/dev/null |
      python3 -c 'import json,sys; print("\n".join(sorted({i["digest"] for i in json.load(sys.stdin)})))' 2>/dev/null); do
      "$HUTCH_BIN" rootfs rm "$d" >/dev/null 2>&1
    done
  done
  rm -rf "$work"
}
trap cleanup EXIT

# ls_field NAME FIELD
ls_field() {
  "$HUTCH_BIN" rootfs ls --json | python3 -c '
import json, sys
for i in json.load(sys.stdin):
    if i["name"] == sys.argv[1]:
        print(i[sys.argv[2]])
' "$1" "$2"
}
meta() { # DIGEST KEY -> the JSON of meta.json[KEY]
  python3 -c 'import json,sys; print(json.dumps(json.load(open(sys.argv[1]))[sys.argv[2]]))' \
    "$HUTCH_STORE/images/sha256-${1#sha256:}/meta.json" "$2"
}
count_images() { find "$HUTCH_STORE/images" -mindepth 1 -maxdepth 1 | wc -l; }
tmp_left() { find "$HUTCH_STORE/tmp" -mindepth 1 -maxdepth 1 | wc -l; }

base=$(hutch_test_rootfs busybox) || tap_skip_all "the busybox test rootfs is not available"
base_digest=$(ls_field "$base" digest)
base_tree=$(ls_field "$base" rootfs)

tap_ok "rootfs build --help" "$HUTCH_BIN" rootfs build --help
tap_like "$tap_stdout" "--recipe FILE" "help describes --recipe"
tap_status 2 "build without --from is a usage error" "$HUTCH_BIN" rootfs build --recipe x --name y
# A value that begins with -f is the value of its option, not -f: this is
# still a recipe build, short of its --from.
tap_status 2 "a name beginning with -f keeps a recipe build" "$HUTCH_BIN" rootfs build --recipe x --name -fx
tap_like "$tap_stderr" "--from IMAGE, --recipe FILE and --name NAME" "and names what it lacks"
tap_status 2 "--recipe=-fx too" "$HUTCH_BIN" rootfs build --recipe -fx --name y
tap_like "$tap_stderr" "--from IMAGE, --recipe FILE and --name NAME" "it is still a recipe build"

# ---- a layer of run and env steps --------------------------------------------
cat >"$work/one.recipe" <<'R'
# a comment, then steps
env GREETING=hello
run echo "$GREETING" >/etc/greeting && mkdir -p /opt/tool && \
    echo data >/opt/tool/file
run test "$GREETING" = hello
run rm /bin/vi && echo changed >>/etc/passwd
R
busybox_inode=$(stat -c %i "$base_tree/bin/busybox")
tap_ok "build a layer on the busybox image" "$HUTCH_BIN" rootfs build --from "$base" --recipe "$work/one.recipe" \
  --name layer1 --net none
digest=$tap_stdout
tap_like "$digest" "^sha256:[0-9a-f]{64}$" "the digest is printed on stdout"
tap_like "$tap_stderr" "step 2/4 \\($work/one.recipe:3\\): run echo" "each step is announced with its line"
tree=$(ls_field layer1 rootfs)
files=$(cd "$tree" && find . -type f | sort | tr '\n' ' ')
tap_is "$files" "./etc/greeting ./etc/passwd ./opt/tool/file " "the layer holds only the files the recipe changed"
tap_ok "a deleted base file is a whiteout in the layer" test -c "$tree/bin/vi"
tap_is "$(meta "$digest" lowers)" "[\"$base_digest\"]" "meta.json records the base as the layer's lower"
tap_is "$(ls_field layer1 lowers)" "['$base_tree']" "ls --json lists the base's tree as its lower"
tap_is "$(stat -c %i "$base_tree/bin/busybox")" "$busybox_inode" "the base's tree is shared, not copied"
tap_ok "no hutch-written /etc/resolv.conf or proxy configuration was frozen" \
  bash -c "! test -e '$tree/etc/resolv.conf' && ! test -e '$tree/etc/pip.conf' && ! test -e '$tree/etc/gitconfig'"
tap_ok "the new image runs" "$HUTCH_BIN" exec --rootfs layer1 -- /bin/sh -c \
  'cat /etc/greeting /opt/tool/file; tail -n 1 /etc/passwd; test -e /bin/vi && echo vi-present; /bin/busybox true && echo base-ok'
tap_is "$tap_stdout" "hello
data
changed
base-ok" "it sees the layer over the base, without the deleted file"
tap_ok "the base is unchanged" "$HUTCH_BIN" exec --rootfs "$base" -- /bin/sh -c 'test -e /bin/vi && ! test -e /etc/greeting'

# A layer on a layer: two lowers, nearest first.
printf 'run echo two >/etc/second\n' >"$work/two.recipe"
tap_ok "build on a built image" "$HUTCH_BIN" rootfs build --from layer1 --recipe "$work/two.recipe" --name layer2
digest2=$tap_stdout
tap_is "$(meta "$digest2" lowers)" "[\"$digest\", \"$base_digest\"]" "its lowers are layer1 then the base"
tap_ok "it sees all three layers" "$HUTCH_BIN" exec --rootfs layer2 -- /bin/cat /etc/second /etc/greeting
tap_is "$tap_stdout" "two
hello" "the files of both builds"

# Package scripts chown files to system groups: build steps keep the
# file-ownership capabilities (in the sandbox's user namespace), sandboxes
# on the result do not.
printf 'run grep CapEff /proc/self/status >/etc/capeff && chown 0:50 /etc/capeff\n' >"$work/caps.recipe"
tap_ok "a build step may chown to another group" "$HUTCH_BIN" rootfs build --from "$base" \
  --recipe "$work/caps.recipe" --name capimg
tap_ok "the file keeps that group in the image" "$HUTCH_BIN" exec --rootfs capimg -- /bin/stat -c %g /etc/capeff
tap_is "$tap_stdout" "50" "gid 50"
tap_unlike "$(cat "$(ls_field capimg rootfs)/etc/capeff")" "CapEff:[[:space:]]*0+$" "the build step had capabilities"
tap_ok "a sandbox on the built image" "$HUTCH_BIN" exec --rootfs capimg -- /bin/grep CapEff /proc/self/status
tap_like "$tap_stdout" "CapEff:[[:space:]]*0+$" "has none"
tap_is "$(ls_field capimg ids_preserved)" "True" "the built image records that it holds other ids"

# ---- a failing step ------------------------------------------------------------
before=$(count_images)
printf 'run echo partial >/etc/partial\nrun echo about to fail; exit 7\nrun echo never\n' >"$work/fail.recipe"
tap_status 7 "a failing step stops the build with its exit status" \
  "$HUTCH_BIN" rootfs build --from "$base" --recipe "$work/fail.recipe" --name broken
tap_like "$tap_stderr" "about to fail" "the step's output is shown"
tap_like "$tap_stderr" "step 2 \\($work/fail.recipe:2\\) failed: exit status 7; no image was made" "the failure is named"
tap_unlike "$tap_stderr" "never" "later steps do not run"
tap_is "$(count_images)" "$before" "no image was added"
tap_is "$(tmp_left)" 0 "nothing is left in the store's tmp directory"
tap_fails "no name broken exists" "$HUTCH_BIN" exec --rootfs broken -- /bin/true

# Ctrl-C during a step ends the build cleanly.
printf 'run echo started; sleep 30\nrun echo never\n' >"$work/slow.recipe"
"$HUTCH_BIN" rootfs build --from "$base" --recipe "$work/slow.recipe" --name slow >/dev/null 2>"$work/slow.err" &
pid=$!
for _ in $(seq 100); do grep -q started "$work/slow.err" 2>/dev/null && break; sleep 0.1; done
kill -INT "$pid"
wait "$pid"
tap_is "$?" 130 "SIGINT during a step ends the build with 130"
tap_unlike "$(cat "$work/slow.err")" "never" "no further step runs"
tap_is "$(count_images)" "$before" "no image was added"
tap_is "$(tmp_left)" 0 "and nothing is left in tmp"

printf 'run true\nfrom x\n' >"$work/bad.recipe"
tap_status 125 "an invalid recipe is refused" "$HUTCH_BIN" rootfs build --from "$base" --recipe "$work/bad.recipe" --name bad
tap_like "$tap_stderr" "bad.recipe:2: unknown step \"from\"" "with its line"
tap_status 125 "an unknown base" "$HUTCH_BIN" rootfs build --from nosuch --recipe "$work/two.recipe" --name x
tap_like "$tap_stderr" "hutch rootfs pull nosuch" "says how to get one"

# ---- removing a base that a layer needs -------------------------------------------
tap_ok "removing layer1's name" "$HUTCH_BIN" rootfs rm layer1
tap_like "$tap_stderr" "stays in the store, unnamed, while images built on it exist" "keeps its tree for layer2"
tap_ok "layer2 still runs" "$HUTCH_BIN" exec --rootfs layer2 -- /bin/cat /etc/greeting

# ---- the Debian fallback -------------------------------------------------------------
# A manifest whose server cannot be reached (a closed port on 127.0.0.1) and
# that names a Debian fallback.  mmdebstrap itself is stood in for by a
# script first in PATH that records its arguments and writes the busybox
# tarball where the real one would write Debian: what is tested is hutch's
# side (when it falls back, the arguments, the import, the build going on).
fallback_build() {
  local closed bb_tar args
  if ! grep -rqsE '^[^#]*(deb .* bookworm |Suites:.*bookworm( |$))' /etc/apt/sources.list /etc/apt/sources.list.d/; then
    tap_skip "the Debian fallback" "this machine's apt sources have no bookworm source"
    return
  fi
  bb_tar=$(hutch_rootfs_ensure busybox) || return
  mkdir -p "$work/fakebin" "$work/manifests"
  cat >"$work/fakebin/mmdebstrap" <<FAKE
#!/bin/sh
printf '%s\n' "\$@" >"$work/mmdebstrap.args"
for a in "\$@"; do case \$a in *.tar) cp "$bb_tar" "\$a" ;; esac; done
FAKE
  chmod +x "$work/fakebin/mmdebstrap"
  closed=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  printf 'name test:offline\narch %s http://127.0.0.1:%s/base.tar.gz %s\nfallback debian bookworm\n' \
    "$(dpkg --print-architecture 2>/dev/null || echo amd64)" "$closed" "$(echo offline | sha256sum | cut -c1-64)" \
    >"$work/manifests/test-offline.manifest"
  printf 'run echo fallback >/etc/fallback\n' >"$work/fb.recipe"
  tap_status 125 "pull alone never falls back" env HUTCH_ROOTFS_DIR="$work/manifests" PATH="$work/fakebin:$PATH" \
    "$HUTCH_BIN" rootfs pull test:offline
  tap_like "$tap_stderr" "127.0.0.1:$closed" "it reports the unreachable server"
  tap_ok "build --from an unreachable image falls back to Debian" env HUTCH_ROOTFS_DIR="$work/manifests" \
    PATH="$work/fakebin:$PATH" "$HUTCH_BIN" rootfs build --from test:offline --recipe "$work/fb.recipe" --name fb
  tap_like "$tap_stderr" "falling back to Debian bookworm" "and says so on stderr"
  args=$(tr '\n' ' ' <"$work/mmdebstrap.args" 2>/dev/null)
  if [ "$(id -u)" -eq 0 ]; then
    tap_like "$args" "--mode=root" "mmdebstrap runs in root mode as root"
  else
    tap_like "$args" "--mode=unshare" "mmdebstrap runs in unshare mode as a user"
  fi
  tap_like "$args" "bookworm .*/debian-bookworm-[0-9]+\.tar deb https?://[^ ]+ bookworm main" \
    "for bookworm, from a mirror of this machine's apt sources"
  tap_ok "the base is named debian:bookworm" "$HUTCH_BIN" exec --rootfs debian:bookworm -- /bin/true
  tap_is "$(meta "$(ls_field fb digest)" lowers)" "[\"$(ls_field debian:bookworm digest)\"]" \
    "the recipe was built on it"
  tap_ok "the built image has the recipe's file" "$HUTCH_BIN" exec --rootfs fb -- /bin/cat /etc/fallback
  tap_is "$(find "$HUTCH_STORE/downloads" -mindepth 1 | wc -l)" 0 "the bootstrap tarball is not kept"
}
fallback_build

# ---- apt from the Debian mirror ---------------------------------------------------
debian_build() {
  local deb host addrs
  deb=$(hutch_test_rootfs debian 2>/dev/null) || {
    tap_skip "apt build on the Debian image" "the Debian test rootfs is not built (tests/setup-host.sh)"
    return
  }
  if ! "$HUTCH_BIN" exec --rootfs "$deb" --net proxy -- /bin/true >/dev/null 2>&1; then
    tap_skip "apt build on the Debian image" "--net proxy sandboxes cannot start here"
    return
  fi
  host=$("$HUTCH_BIN" exec --rootfs "$deb" -- /bin/sh -c \
    'cat /etc/apt/sources.list /etc/apt/sources.list.d/* 2>/dev/null' |
    sed -n 's,.*https\?://\([^/ ]*\).*,\1,p' | head -n 1)
  if [ -z "$host" ] || ! curl -sfI --max-time 10 "http://$host/" >/dev/null 2>&1 &&
    ! curl -sI --max-time 10 "http://$host/" 2>/dev/null | grep -q HTTP; then
    tap_skip "apt build on the Debian image" "the mirror ${host:-(none)} of the image's apt sources is unreachable"
    return
  fi
  # The proxy refuses internal addresses unless listed; a mirror this
  # machine's own apt uses (the test image was bootstrapped from it) is
  # trusted at whatever address it has, and the build says so.
  local internal=""
  for a in $(getent ahostsv4 "${host%%:*}" | awk '{print $1}' | sort -u); do
    python3 -c 'import ipaddress, sys; sys.exit(0 if ipaddress.ip_address(sys.argv[1]).is_global else 1)' "$a" ||
      internal="${internal:+$internal }$a"
  done
  printf 'apt python3-six\nrun python3 -c "import six"\n' >"$work/six.recipe"
  tap_ok "a recipe installs python3-six from the mirror" "$HUTCH_BIN" rootfs build --from "$deb" \
    --recipe "$work/six.recipe" --name deb-six
  tap_like "$tap_stderr" "allowed: .*$host" "the archive host was allowed"
  if [ -n "$internal" ]; then
    tap_like "$tap_stderr" "resolves to ${internal%% *} \\([a-z-]+\\); allowed for this build because this machine's apt uses it" \
      "the mirror's internal address is allowed, and announced"
  else
    tap_unlike "$tap_stderr" "allowed for this build because" "a public mirror needs no exception"
  fi
  tap_ok "the built image imports six" "$HUTCH_BIN" exec --rootfs deb-six -- python3 -c 'import six; print(six.__name__)'
  tap_is "$tap_stdout" "six" "python3 -c 'import six' works"
  tap_ok "the base image does not have it" bash -c "! '$HUTCH_BIN' exec --rootfs '$deb' -- python3 -c 'import six' 2>/dev/null"
  local t
  t=$(ls_field deb-six rootfs)
  tap_ok "no apt lists or proxy configuration are frozen into the layer" \
    bash -c "! ls '$t/var/lib/apt/lists/' 2>/dev/null | grep -q Packages && ! test -e '$t/etc/apt/apt.conf.d/00hutch-proxy'"
}
debian_build

# ---- what a build's sandbox wrote is read on the host without trusting it ----
# A step turns /etc/apt into a symlink to a host directory holding a file
# with hutch's marker, which the build removes from the layer it keeps:
# read and removed through the link, it would be the host's file.
victim=$work/victim
mkdir -p "$victim/apt.conf.d"
echo '// Written by hutch, and the host needs it' >"$victim/apt.conf.d/00hutch-proxy"
chmod -R a+rwX "$victim"
printf 'run rm -rf /etc/apt && ln -s %s /etc/apt\n' "$victim" >"$work/link.recipe"
tap_ok "a step makes /etc/apt a symlink to a host directory" \
  timeout 60 "$HUTCH_BIN" rootfs build --from "$base" --recipe "$work/link.recipe" --name linked
tap_ok "the host's file behind the link is still there" test -e "$victim/apt.conf.d/00hutch-proxy"
# A step leaves a FIFO where apt's sources are: a build on that image reads
# the sources on the host, which must not wait on the FIFO forever.
printf 'run mkdir -p /etc/apt/sources.list.d && mkfifo /etc/apt/sources.list /etc/apt/sources.list.d/x.list\n' \
  >"$work/fifo.recipe"
tap_ok "a step leaves FIFOs as apt's sources" \
  timeout 60 "$HUTCH_BIN" rootfs build --from "$base" --recipe "$work/fifo.recipe" --name fifoed
# An apt step makes the build read the image's sources for the hosts to
# allow; busybox has no apt-get, so the step itself fails, and fast.
echo 'apt hello' >"$work/apt.recipe"
timeout -k 5 60 "$HUTCH_BIN" rootfs build --from fifoed --recipe "$work/apt.recipe" --name on-fifoed >/dev/null 2>&1
status=$?
tap_ok "a build on that image does not hang on them (exit status $status)" test "$status" -ne 124

tap_done
