#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Prepares this machine for the test suite.  Run as root; safe to run again.
#
#  - installs the packages the build and the tests use (Debian/Ubuntu);
#  - creates the unprivileged test user ${HUTCH_TEST_USER:-hutchtest} with a
#    subordinate uid/gid range, for the rootless half of every test, and
#    ${HUTCH_TEST_NOSUB_USER:-hutchnosub} without any range (the single-id
#    mapping cells of tests/integration/doctor-matrix.sh);
#  - builds the cached test rootfs tarballs (busybox, the Debian one, which
#    takes a few minutes the first time, Debian with matplotlib for the
#    Python package's figure tests, and Debian with g++ for hutch serve's) in
#    ${HUTCH_TEST_CACHE:-/var/tmp/hutch-test-cache}.
#
# HUTCH_SETUP_ROOTFS=skip does all but the tarballs, =only the tarballs
# alone (tests/run-all builds them beside hutch itself: most of their time
# is the network and dpkg, not the CPU the compiler wants).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
test_user=${HUTCH_TEST_USER:-hutchtest}
nosub_user=${HUTCH_TEST_NOSUB_USER:-hutchnosub}
packages=(
  autoconf automake pkg-config make gcc libc6-dev
  libseccomp-dev libcap-dev libcurl4-openssl-dev libcjson-dev libmnl-dev libarchive-dev libyaml-dev
  busybox-static mmdebstrap uidmap zstd xz-utils python3 mandoc bubblewrap hyperfine
  python3-dev python3-setuptools python3-pytest python3-wheel python3-venv python3-pip
  # the cgroup v2 VM suite (tests/vm): an emulator and a kernel to boot in it
  qemu-system-x86 linux-image-amd64 cpio
  # --overlay fuse, and the nested-container cells of the doctor matrix
  fuse-overlayfs podman runc catatonit
  # registry.sh: a registry on loopback, filled by skopeo, with htpasswd and a token service
  skopeo docker-registry apache2-utils python3-cryptography
  # benchmark-slurm.sh: a single-node Slurm of its own; benchmark.sh: report.html in a real browser
  slurm-wlm munge chromium
  # benchmark-runfiles.sh: summary.md rendered as GitHub renders Markdown
  cmark-gfm
  # limits.sh: the host's JVM in a sandbox without a cgroup
  openjdk-17-jdk-headless
  # the musl front end (contrib/musl/build-deps): musl, and what building
  # its libraries from their Debian source packages takes
  musl-tools gperf dpkg-dev
  # abi.sh: libhutch.so's ABI against the last release's
  abigail-tools
  # debian-package.sh: the Debian packages built and checked
  debhelper dh-python dh-apparmor lintian
)

log() { echo "setup-host: $*" >&2; }
rootfs_step=${HUTCH_SETUP_ROOTFS:-all}
case $rootfs_step in
all | skip | only) ;;
*)
  log "HUTCH_SETUP_ROOTFS=$rootfs_step: say all, skip or only"
  exit 2
  ;;
esac

if [ "$(id -u)" -ne 0 ]; then
  log "run me as root (sudo $0)"
  exit 1
fi

if [ "$rootfs_step" != only ]; then
  missing=()
  for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    log "installing ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -q
    apt-get install -y -q --no-install-recommends "${missing[@]}"
  fi
  # The docker-registry package runs a registry on every address as a
  # service; the tests start their own on loopback.
  if command -v systemctl >/dev/null && systemctl is-enabled --quiet docker-registry 2>/dev/null; then
    systemctl disable --now docker-registry >/dev/null 2>&1 || true
  fi
  # Likewise Slurm and munge, which the packages start as services:
  # benchmark-slurm.sh starts its own, from its own configuration.
  for s in slurmctld slurmd munge; do
    if command -v systemctl >/dev/null && systemctl is-enabled --quiet "$s" 2>/dev/null; then
      systemctl disable --now "$s" >/dev/null 2>&1 || true
    fi
  done

  if ! id -u "$test_user" >/dev/null 2>&1; then
    log "creating the test user $test_user"
    useradd --create-home --shell /bin/bash --user-group "$test_user"
  fi

  # A system user gets no subordinate range from useradd; any it was given
  # by hand is taken away: this user is the "no /etc/subuid entry" case.
  if ! id -u "$nosub_user" >/dev/null 2>&1; then
    log "creating the test user $nosub_user (no subordinate id range)"
    useradd --system --create-home --shell /bin/bash --user-group "$nosub_user"
  fi
  for f in /etc/subuid /etc/subgid; do
    [ ! -e "$f" ] || sed -i "/^$nosub_user:/d;/^$(id -u "$nosub_user"):/d" "$f"
  done

  # A range of 65536 ids past every range already handed out.
  next_free_range() {
    awk -F: 'NF >= 3 && $2 ~ /^[0-9]+$/ && $3 ~ /^[0-9]+$/ { e = $2 + $3; if (e > m) m = e }
             END { if (m < 200000) m = 200000; print m }' /etc/subuid /etc/subgid 2>/dev/null
  }
  for f in /etc/subuid /etc/subgid; do
    [ -e "$f" ] || install -m 0644 /dev/null "$f"
    if ! grep -q "^$test_user:" "$f" && ! grep -q "^$(id -u "$test_user"):" "$f"; then
      start=$(next_free_range)
      log "giving $test_user the subordinate range $start:65536 in $f"
      echo "$test_user:$start:65536" >>"$f"
    fi
  done

  # Kernels and distributions that restrict unprivileged user namespaces make
  # every rootless test fail; say so now rather than in a hundred test points.
  if [ "$(cat /proc/sys/kernel/unprivileged_userns_clone 2>/dev/null || echo 1)" = 0 ]; then
    log "warning: kernel.unprivileged_userns_clone is 0: rootless sandboxes cannot work"
  fi
  if [ "$(cat /proc/sys/kernel/apparmor_restrict_unprivileged_userns 2>/dev/null || echo 0)" = 1 ]; then
    log "warning: kernel.apparmor_restrict_unprivileged_userns is 1: rootless sandboxes need an AppArmor profile allowing userns for hutch, or that sysctl set to 0"
  fi
  if [ "$(cat /proc/sys/user/max_user_namespaces 2>/dev/null || echo 1)" = 0 ]; then
    log "warning: user.max_user_namespaces is 0: rootless sandboxes cannot work"
  fi
fi

# shellcheck source=lib/rootfs.sh
. "$here/lib/rootfs.sh"
[ "$rootfs_step" != skip ] || exit 0
mkdir -p "$HUTCH_TEST_CACHE"
chmod 0755 "$HUTCH_TEST_CACHE"
hutch_rootfs_ensure busybox >/dev/null
log "busybox rootfs: $HUTCH_TEST_BUSYBOX_TAR"
# The two Debian ones at once: each is mostly downloads and dpkg's
# unpacking, one process at a time, so together they take little longer
# than the longer of them.
(
  if hutch_rootfs_ensure debian >/dev/null; then
    log "debian rootfs: $HUTCH_TEST_DEBIAN_TAR"
  else
    log "warning: the debian rootfs could not be built; the tests that need it will be skipped"
  fi
) &
debian_pid=$!
if hutch_rootfs_ensure matplotlib >/dev/null; then
  log "matplotlib rootfs: $(hutch_rootfs_tar matplotlib)"
else
  log "warning: the matplotlib rootfs could not be built; the Python figure tests will be skipped"
fi
if hutch_rootfs_ensure compilers >/dev/null; then
  log "compilers rootfs: $(hutch_rootfs_tar compilers)"
else
  log "warning: the compilers rootfs could not be built; hutch serve's compiled-language tests will be skipped"
fi
wait "$debian_pid"
