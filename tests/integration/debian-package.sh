#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# The Debian packages (debian/): built from a clean copy of the source tree
# with dpkg-buildpackage, lintian-clean, then installed with apt-get into a
# fresh Debian 12 root (the cached test rootfs, its missing dependencies
# from this machine's apt sources) where the installed programs run the
# README's examples: the demo task set against hutch-mock-llm, examples/
# embed.c built with pkg-config, the Python example.
#
# The root is entered with pivot_root in a mount and PID namespace of its
# own (unshare): a chroot would not do, since the kernel refuses a new user
# namespace, which every sandbox starts with, to a chrooted process.  Every
# mount the test makes is in that namespace and goes with it.  /sys is not
# mounted there, so hutch finds no cgroup file system and takes its
# no-cgroup fallback (rlimits and its memory watchdog), which it says.
. "$(dirname "$0")/../lib/tap.sh"

if [ "${HUTCH_TEST_MODE:-root}" != root ]; then
  tap_skip_all "installing packages into a fresh root needs root (dpkg, mounts, pivot_root)"
fi
if grep -q '^SAN_CFLAGS = -fsanitize' "$HUTCH_BUILDDIR/Makefile" 2>/dev/null; then
  tap_skip_all "built with sanitizers: the packages are the release build, which this run would only build again"
fi
for tool in dpkg-buildpackage dh dh_python3 dh_apparmor pybuild lintian unshare pivot_root git; do
  command -v "$tool" >/dev/null ||
    tap_skip_all "no $tool here (apt-get install dpkg-dev debhelper dh-python dh-apparmor lintian, as .ci/run does)"
done
git -C "$HUTCH_SRCDIR" rev-parse --git-dir >/dev/null 2>&1 ||
  tap_skip_all "$HUTCH_SRCDIR is not a git checkout: the clean copy is made from git's list of files"
tar=$(hutch_rootfs_tar debian)
[ -s "$tar" ] || tap_skip_all "the debian test rootfs $tar is not built (tests/setup-host.sh)"
[ "$(uname -m)" = x86_64 ] || tap_skip_all "the test rootfs is amd64"

tmp=$(hutch_test_tmpdir)
version=$(sed -n '1s/^hutch (\([^)]*\)).*/\1/p' "$HUTCH_SRCDIR/debian/changelog")
# configure.ac's version, which the library's file name and --version carry.
upstream=$(sed -n 's/^m4_define(\[hutch_\(major\|minor\|patch\)\], \[\([0-9]*\)\]).*/\2/p' "$HUTCH_SRCDIR/configure.ac" | paste -sd.)
src=$tmp/build/hutch-$version
root=$tmp/root
ns_pid=
cleanup() {
  [ -z "$ns_pid" ] || kill -KILL "$ns_pid" 2>/dev/null
  # The namespace's mounts are not visible here; should one ever be,
  # rm must not go down into it.
  if grep -qF " $tmp/" /proc/self/mountinfo; then
    echo "debian-package.sh: mounts under $tmp are left; not removing it" >&2
  else
    rm -rf --one-file-system "$tmp"
  fi
}
trap cleanup EXIT
start=$SECONDS
# Prints the log's end, as diagnostics.
log_tail() {
  tail -n "${2:-30}" "$1" | sed 's/^/#   /'
}

# ---- the packages, built from a clean copy of the tree ----
# The working tree's files as git knows them (uncommitted changes too),
# none of a build's output: what a fresh clone with these changes holds.
mkdir -p "$src"
git -C "$HUTCH_SRCDIR" ls-files -z --cached --others --exclude-standard |
  (cd "$HUTCH_SRCDIR" && xargs -0 -r sh -c 'for f; do [ -e "$f" ] || [ -L "$f" ] && printf "%s\0" "$f"; done' sh) |
  tar -C "$HUTCH_SRCDIR" --null -T - -cf - | tar -C "$src" -xf -
tap_ok "a clean copy of the tree has debian/ and no configure" test -f "$src/debian/rules" -a ! -e "$src/configure"
# A clean environment: nothing of make check's (MAKEFLAGS, HUTCH_BUILDDIR,
# which the Python package's setup.py would build from) reaches the build.
(cd "$src" && env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME="$tmp" \
  LANG=C.UTF-8 TMPDIR="$tmp" DEB_BUILD_OPTIONS="nocheck noopt parallel=2" \
  dpkg-buildpackage -us -uc) >"$tmp/build.log" 2>&1
tap_check $? "dpkg-buildpackage -us -uc builds the packages" || log_tail "$tmp/build.log"
tap_diag "built in $((SECONDS - start)) s"
arch=$(dpkg --print-architecture)
changes=$tmp/build/hutch_${version}_$arch.changes
debs=()
for p in hutch libhutch0 libhutch-dev python3-hutch; do
  deb=$tmp/build/${p}_${version}_$arch.deb
  tap_ok "it made $p" test -f "$deb"
  debs+=("$deb")
done
if [ ! -f "$changes" ]; then
  tap_done # nothing below can be checked
  exit
fi

# ---- lintian, at its default level: no error, no warning ----
t=$SECONDS
TMPDIR=$tmp lintian "$changes" >"$tmp/lintian.log" 2>&1
lintian_rc=$?
tap_diag "lintian took $((SECONDS - t)) s"
tap_is "$(grep -E '^[EW]: ' "$tmp/lintian.log")" "" "lintian reports no error and no warning on the .changes"
tap_is "$lintian_rc" 0 "and exits 0" || log_tail "$tmp/lintian.log"

# ---- what the packages hold, where Debian puts it ----
contents() { dpkg-deb --fsys-tarfile "$1" | tar -t | sed 's|^\./|/|'; }
ma=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
tap_is "$version" "$upstream" "debian/changelog's newest entry is configure.ac's version"
tap_like "$(contents "${debs[1]}")" "/usr/lib/$ma/libhutch\.so\.${upstream//./\\.}" "libhutch0 holds the library in /usr/lib/$ma"
tap_like "$(contents "${debs[2]}")" "/usr/lib/$ma/pkgconfig/hutch\.pc" "libhutch-dev holds hutch.pc in /usr/lib/$ma/pkgconfig"
profile=$(dpkg-deb --fsys-tarfile "${debs[0]}" | tar -xOf - ./etc/apparmor.d/hutch 2>/dev/null)
tap_like "$profile" "profile hutch /usr/bin/hutch " "hutch's AppArmor profile is in /etc/apparmor.d, naming /usr/bin/hutch"
tap_unlike "$profile" "@[A-Z]+@" "with every placeholder filled in"

# ---- a fresh Debian 12 root ----
mkdir -p "$root"
tar -C "$root" -xf "$tar"
tap_check $? "the Debian 12 test rootfs is unpacked as a fresh root"
mkdir -p "$root/debs" "$root/mnt/image" "$root/proc" "$root/dev"
cp "${debs[@]}" "$root/debs/"
cp "$HUTCH_SRCDIR/examples/embed.c" "$root/tmp/"
# The README's Python example, as the README has it.
awk '/^```python$/ { on = 1; next } on && /^```$/ { exit } on' "$HUTCH_SRCDIR/README.md" >"$root/tmp/readme_example.py"
cp -L /etc/resolv.conf "$root/etc/resolv.conf" 2>/dev/null
# This machine's apt sources and the keys they name: the packages'
# dependencies come from where the machine's own come from.
rm -rf "$root/etc/apt/sources.list.d"
cp -a /etc/apt/sources.list.d "$root/etc/apt/"
[ ! -e /etc/apt/sources.list ] || cp /etc/apt/sources.list "$root/etc/apt/sources.list"
[ ! -d /etc/apt/trusted.gpg.d ] || cp -a /etc/apt/trusted.gpg.d/. "$root/etc/apt/trusted.gpg.d/"
for key in $(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources 2>/dev/null |
  grep -oiE 'signed-by[:=][[:space:]]*/[^] ]+' | sed -E 's/^[^/]*//'); do
  [ ! -f "$key" ] || [ -e "$root$key" ] || install -D -m 0644 "$key" "$root$key"
done

# in_root SCRIPT: runs SCRIPT with bash as root of the fresh root, in a
# mount and PID namespace of its own; the namespace, its mounts and every
# process left in it go when SCRIPT ends.
in_root() {
  unshare --mount --propagation private --pid --fork --kill-child bash -c '
    set -e
    root=$1 image=$2 script=$3
    mount --bind "$root" "$root"
    mount -t proc proc "$root/proc"
    mount -t tmpfs -o mode=0755,nosuid dev "$root/dev"
    for d in null zero full random urandom tty; do
      touch "$root/dev/$d"
      mount --bind "/dev/$d" "$root/dev/$d"
    done
    mkdir "$root/dev/pts" "$root/dev/shm"
    mount -t devpts -o newinstance,ptmxmode=0666,mode=0620 devpts "$root/dev/pts"
    ln -s pts/ptmx "$root/dev/ptmx"
    mount -t tmpfs -o mode=1777,nosuid,nodev shm "$root/dev/shm"
    touch "$root/mnt/image/debian.tar"
    mount --bind -o ro "$image" "$root/mnt/image/debian.tar"
    cd "$root"
    mkdir -p .old
    pivot_root . .old
    umount -l /.old
    rmdir /.old
    exec env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root \
      LANG=C.UTF-8 TERM=dumb DEBIAN_FRONTEND=noninteractive bash -ec "$script"
  ' in_root "$root" "$tar" "$1" &
  ns_pid=$!
  wait "$ns_pid"
  local rc=$?
  ns_pid=
  return $rc
}

t=$SECONDS
tap_ok "apt-get update there reads this machine's apt sources" in_root 'apt-get update -q'
tap_ok "apt-get installs the four packages there, with their dependencies" in_root '
  apt-get install -y -q --no-install-recommends /debs/*.deb pkg-config'
tap_diag "apt-get took $((SECONDS - t)) s"
if [ "$tap_rc" -ne 0 ]; then
  printf '%s\n' "$tap_stdout" | tail -n 20 | sed 's/^/#   /'
  tap_done # nothing below can be checked
  exit
fi
tap_ok "dpkg says all four are installed" in_root '
  for p in hutch libhutch0 libhutch-dev python3-hutch; do
    dpkg-query -W -f="\${Status}\n" $p | grep -qx "install ok installed"
  done'

# ---- the installed hutch ----
tap_ok "hutch --version" in_root 'hutch --version'
tap_like "$tap_stdout" "${upstream//./\\.}" "names the version"
tap_ok "hutch policy show" in_root 'hutch policy show'
tap_like "$tap_stdout" "^policy: /usr/share/hutch/policies/default\.policy" "reads the installed policy, in /usr/share/hutch"
t=$SECONDS
tap_ok "hutch rootfs import makes the image default" in_root \
  'hutch rootfs import /mnt/image/debian.tar --name default && hutch rootfs ls'
tap_diag "import took $((SECONDS - t)) s"
tap_ok "hutch exec runs a command in it" in_root 'hutch exec -- sh -c "echo hello from \$(. /etc/os-release; echo \$ID)"'
tap_like "$tap_stdout" "^hello from debian" "with its output"
tap_like "$tap_stderr" "warning: limits: no cgroup here: rlimits" "and says it runs without a cgroup (none is mounted here)"

# ---- the README's demo: the demo task set against hutch-mock-llm ----
t=$SECONDS
tap_ok "hutch benchmark runs the installed demo task set against the installed hutch-mock-llm" in_root '
  cd /tmp
  hutch-mock-llm --port-file /tmp/port /usr/share/hutch/examples/tasks/demo/mock-replies.json >/tmp/url &
  for i in $(seq 200); do [ -s /tmp/url ] && break; sleep 0.05; done
  hutch benchmark /usr/share/hutch/examples/tasks --task demo --model mock --base-url "$(cat /tmp/url)" \
    --num-workers 2 --retry-delay 0.05 --output-dir /tmp/out >/tmp/bench.out
  out=$(tail -n 1 /tmp/bench.out)
  python3 -c "import json, sys
d = json.load(open(sys.argv[1]))
t = json.load(open(sys.argv[2]))
wrong = sorted(k for k, v in t.items() if float(v[\"reward\"]) != 1.0)
print(d[\"total\"], float(d[\"mean_score\"]), d[\"num_errors\"], *wrong)" "$out/results.json" "$out/trajectory.json"'
tap_diag "the demo took $((SECONDS - t)) s"
tap_is "$(printf '%s\n' "$tap_stdout" | tail -n 1)" "20 0.95 0 demo_017" \
  "its 20 tasks scored, none in error, all solved but demo_017, which the scripted model gets wrong on purpose"

# ---- the C library: examples/embed.c built with pkg-config ----
tap_ok "examples/embed.c builds with \$(pkg-config --cflags --libs hutch) and runs a sandbox" in_root '
  cd /tmp
  cc -Wall -Werror embed.c $(pkg-config --cflags --libs hutch) -o embed
  readelf -d embed | grep -q "NEEDED.*libhutch\.so\.0"
  ./embed default "echo hello"'
tap_like "$tap_stdout" "^hello" "with the command's output (README: ./embed default 'echo hello')"

# ---- the Python package ----
tap_ok "python3 -c 'import hutch'" in_root 'python3 -c "import hutch; print(hutch.__file__)"'
tap_like "$tap_stdout" "^/usr/lib/python3/dist-packages/hutch/" "from /usr/lib/python3/dist-packages"
tap_ok "its build names the installed runtime" in_root '
  python3 -c "import hutch._config as c; print(c.RUNTIME, c.DATADIR)"
  readelf -d /usr/lib/python3/dist-packages/hutch/_hutch.*.so'
tap_like "$tap_stdout" "^installed /usr/share/hutch" "python3-hutch takes hutch's files from /usr/share/hutch"
tap_like "$tap_stdout" "NEEDED.*\[libhutch\.so\.0\]" "its extension links libhutch.so.0"
tap_unlike "$tap_stdout" "RPATH|RUNPATH" "with no rpath (none into the build tree)"
tap_ok "the README's Python example runs" in_root 'cd /tmp && python3 readme_example.py'
tap_is "$(grep -x 42 <<<"$tap_stdout")" 42 "and prints 42"

# ---- removal ----
tap_ok "dpkg --purge removes them all" in_root '
  dpkg --purge python3-hutch libhutch-dev hutch libhutch0
  ! test -e /usr/bin/hutch && ! test -e /usr/share/hutch && ! test -e /etc/apparmor.d/hutch'
tap_diag "the whole test took $((SECONDS - start)) s"
tap_done
