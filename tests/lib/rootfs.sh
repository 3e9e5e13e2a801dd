# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash
# Cached test rootfs tarballs, shared by every test script and run.  Source it.
#
# The tarballs live in $HUTCH_TEST_CACHE (default /var/tmp/hutch-test-cache),
# world-readable so an unprivileged test user can import what root built.
# Each file name carries a hash of its recipe (the build script, the package
# list, the busybox binary), so changing a recipe builds a new tarball and
# drops the stale one.  Builds hold a lock on the cache, so concurrent test
# scripts build each tarball once (a lock per kind: two kinds build at once).
#
#   hutch_rootfs_tar KIND        print the cache path of KIND (busybox|debian|
#                                matplotlib, Debian with python3-matplotlib|
#                                compilers, Debian with g++)
#   hutch_rootfs_ensure KIND     build KIND if missing, then print its path
#   hutch_rootfs_digest TAR      print the "sha256:HEX" digest of a tarball
#   hutch_rootfs_rm_all          remove every image from hutch's store
#
# After sourcing, HUTCH_TEST_BUSYBOX_TAR and HUTCH_TEST_DEBIAN_TAR hold the
# paths (the files may not exist yet).

HUTCH_TEST_CACHE=${HUTCH_TEST_CACHE:-/var/tmp/hutch-test-cache}
export HUTCH_TEST_CACHE
_hutch_rootfs_lib=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

_hutch_rootfs_key() {
  case $1 in
  busybox)
    {
      cat "$_hutch_rootfs_lib/make-busybox-rootfs"
      sha256sum <"${BUSYBOX:-/bin/busybox}" 2>/dev/null
    } | sha256sum | cut -c1-16
    ;;
  debian)
    {
      cat "$_hutch_rootfs_lib/make-debian-rootfs"
      printf '%s\n' "${HUTCH_DEBIAN_PACKAGES:-}"
    } | sha256sum | cut -c1-16
    ;;
  matplotlib)
    # Its own kind, not a "debian-..." name: the clean-up of a rebuilt
    # kind drops every "$kind-*.tar" but the new one.
    cat "$_hutch_rootfs_lib/make-matplotlib-rootfs" "$_hutch_rootfs_lib/make-debian-rootfs" |
      sha256sum | cut -c1-16
    ;;
  compilers)
    cat "$_hutch_rootfs_lib/make-compilers-rootfs" "$_hutch_rootfs_lib/make-debian-rootfs" |
      sha256sum | cut -c1-16
    ;;
  *)
    echo "rootfs.sh: unknown rootfs kind '$1' (busybox, debian, matplotlib or compilers)" >&2
    return 1
    ;;
  esac
}

hutch_rootfs_tar() {
  local key
  key=$(_hutch_rootfs_key "$1") || return 1
  printf '%s/%s-%s.tar\n' "$HUTCH_TEST_CACHE" "$1" "$key"
}

hutch_rootfs_ensure() {
  local kind=$1 tar fd rc=0 log
  tar=$(hutch_rootfs_tar "$kind") || return 1
  if [ -s "$tar" ]; then
    printf '%s\n' "$tar"
    return 0
  fi
  if ! mkdir -p "$HUTCH_TEST_CACHE" 2>/dev/null || [ ! -w "$HUTCH_TEST_CACHE" ]; then
    echo "rootfs.sh: $tar is missing and $HUTCH_TEST_CACHE is not writable:" \
      "run tests/setup-host.sh as root, or set HUTCH_TEST_CACHE to a directory you own" >&2
    return 1
  fi
  # World-readable: the rootless half of a root test run reads these files.
  [ -O "$HUTCH_TEST_CACHE" ] && chmod 0755 "$HUTCH_TEST_CACHE"
  exec {fd}>>"$HUTCH_TEST_CACHE/.lock-$kind" || return 1
  flock "$fd"
  # Another script may have built it while this one waited for the lock.
  if [ ! -s "$tar" ]; then
    log="$HUTCH_TEST_CACHE/$kind.log"
    echo "rootfs.sh: building $tar (log: $log)" >&2
    local start=$SECONDS
    if "$_hutch_rootfs_lib/make-$kind-rootfs" "$tar" >"$log" 2>&1; then
      chmod 0644 "$tar" "$log"
      hutch_rootfs_digest "$tar" >/dev/null
      echo "rootfs.sh: built $tar in $((SECONDS - start)) s" >&2
      # Drop tarballs of older recipes.
      local old
      for old in "$HUTCH_TEST_CACHE/$kind"-*.tar; do
        [ "$old" = "$tar" ] || rm -f "$old" "$old.sha256"
      done
    else
      rc=1
      chmod 0644 "$log" 2>/dev/null
      echo "rootfs.sh: building the $kind rootfs failed; the end of $log:" >&2
      tail -n 25 "$log" | sed 's/^/  /' >&2
    fi
  fi
  exec {fd}>&-
  [ $rc -eq 0 ] || return 1
  printf '%s\n' "$tar"
}

# "sha256:HEX" of a tarball, the digest hutch gives it; remembered beside
# the file when the cache is writable, since the Debian one takes a while.
hutch_rootfs_digest() {
  local tar=$1 side="$1.sha256" hex
  if [ -s "$side" ] && [ ! "$side" -ot "$tar" ]; then
    cat "$side"
    return 0
  fi
  hex=$(sha256sum <"$tar" | cut -d' ' -f1) || return 1
  [ ${#hex} -eq 64 ] || return 1
  if [ -w "$(dirname "$tar")" ]; then
    printf 'sha256:%s\n' "$hex" >"$side.tmp$$" && chmod 0644 "$side.tmp$$" && mv -f "$side.tmp$$" "$side"
  fi
  printf 'sha256:%s\n' "$hex"
}

# Images may hold files owned by subordinate ids that only hutch can
# remove, so a test's cleanup asks hutch to drop each one ($HUTCH_STORE).
hutch_rootfs_rm_all() {
  local d
  for d in $("$HUTCH_BIN" rootfs ls --json 2>/dev/null |
    python3 -c 'import json,sys; print("\n".join(sorted({i["digest"] for i in json.load(sys.stdin)})))' 2>/dev/null); do
    "$HUTCH_BIN" rootfs rm "$d" >/dev/null 2>&1
  done
}

# The unpacked tree of the image named NAME in $HUTCH_STORE.
hutch_rootfs_of() {
  "$HUTCH_BIN" rootfs ls --json | python3 -c '
import json, sys
for i in json.load(sys.stdin):
    if i["name"] == sys.argv[1]:
        print(i["rootfs"])
' "$1"
}

HUTCH_TEST_BUSYBOX_TAR=$(hutch_rootfs_tar busybox)
HUTCH_TEST_DEBIAN_TAR=$(hutch_rootfs_tar debian)
export HUTCH_TEST_BUSYBOX_TAR HUTCH_TEST_DEBIAN_TAR
