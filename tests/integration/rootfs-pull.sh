#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# hutch rootfs pull: an image from its manifest, served by a local HTTP
# server (127.0.0.1 only): a verified download and import, an O(1) second
# pull, a checksum mismatch, an interrupted download resumed with a Range
# request, a server that ignores Range, redirects, 404, and the shipped
# manifests.
. "${HUTCH_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}/tests/lib/tap.sh"

work=$(hutch_test_tmpdir) || exit 1
chmod 0755 "$work"
export HUTCH_STORE=$work/store
export HUTCH_ROOTFS_DIR=$work/manifests
# Only the local server is a target: no proxy may take these requests.
unset http_proxy https_proxy HTTP_PROXY HTTPS_PROXY ALL_PROXY all_proxy
server_pid=

# shellcheck disable=SC2317 # run by the EXIT trap
cleanup() {
  [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null
  hutch_rootfs_rm_all
  rm -rf "$work"
}
trap cleanup EXIT

busybox_tar=$(hutch_rootfs_ensure busybox) || tap_skip_all "the busybox test rootfs cannot be built"
mkdir -p "$work/srv" "$HUTCH_ROOTFS_DIR"
cp "$busybox_tar" "$work/srv/base.tar"
# Variants with other digests: trailing zero blocks keep a tar valid.
for v in resume part norange redirect; do
  { cat "$busybox_tar"; head -c $((512 * ${#v})) /dev/zero; } >"$work/srv/$v.tar"
done
echo "not the tarball" >"$work/srv/wrong.tar"

python3 "$HUTCH_SRCDIR/tests/lib/http-server.py" "$work/srv" "$work/port" "$work/requests.log" 2>"$work/server.log" &
server_pid=$!
for _ in $(seq 100); do [ -s "$work/port" ] && break; sleep 0.05; done
[ -s "$work/port" ] || tap_skip_all "the test HTTP server did not start"
port=$(cat "$work/port")
base="http://127.0.0.1:$port"
arch=$(dpkg --print-architecture 2>/dev/null || echo amd64)

sha() { sha256sum "$1" | cut -d' ' -f1; }
# manifest NAME PATH [DIGEST]: a manifest for NAME served at PATH.
manifest() {
  local name=$1 path=$2 digest=${3:-}
  [ -n "$digest" ] || digest=$(sha "$work/srv/${path##*/}")
  {
    echo "# test manifest"
    echo "name $name"
    echo "arch $arch $base$path $digest"
  } >"$HUTCH_ROOTFS_DIR/${name/:/-}.manifest"
}
requests() { grep -c "\"$1" "$work/requests.log" 2>/dev/null || true; }
count_images() { find "$HUTCH_STORE/images" -mindepth 1 -maxdepth 1 2>/dev/null | wc -l; }
leftovers() { find "$HUTCH_STORE/downloads" -mindepth 1 2>/dev/null | wc -l; }

tap_unlike "$(ldd "$HUTCH_BIN")" "libcurl" "the hutch binary does not link libcurl"
tap_ok "rootfs pull --help" "$HUTCH_BIN" rootfs pull --help
tap_like "$tap_stdout" "--arch ARCH" "help describes --arch"

# ---- a verified pull -------------------------------------------------------
manifest test:base /files/base.tar
want="sha256:$(sha "$work/srv/base.tar")"
tap_ok "pull test:base" "$HUTCH_BIN" rootfs pull test:base
tap_is "$tap_stdout" "$want" "the digest printed is the tarball's"
tap_like "$tap_stderr" "sha256 verified" "the download was verified"
tap_is "$(leftovers)" 0 "the downloaded tarball is not kept beside the image"
tap_ok "the image is named after the reference" "$HUTCH_BIN" rootfs ls
tap_like "$tap_stdout" "test:base" "ls shows test:base"
tap_ok "the pulled image runs" "$HUTCH_BIN" exec --rootfs test:base -- /bin/echo pulled
tap_is "$tap_stdout" "pulled" "and its busybox answers"

n=$(requests /files/base.tar)
tap_ok "a second pull" "$HUTCH_BIN" rootfs pull test:base --name again
tap_like "$tap_stderr" "already in the store" "is answered from the store"
tap_is "$(requests /files/base.tar)" "$n" "without a request to the server"
tap_is "$(count_images)" 1 "and without a second image"
start=$(date +%s%N)
"$HUTCH_BIN" rootfs pull test:base >/dev/null 2>&1
ms=$((($(date +%s%N) - start) / 1000000))
tap_diag "second pull of test:base: $ms ms"
tap_ok "--name gave a second name" "$HUTCH_BIN" rootfs ls
tap_like "$tap_stdout" "again" "ls shows the name again"

# ---- checksum mismatch -----------------------------------------------------
manifest test:wrong /files/wrong.tar "$(sha "$work/srv/base.tar" | tr 0-9a-f 1-9a-f0)"
before=$(count_images)
tap_status 125 "a checksum mismatch fails" "$HUTCH_BIN" rootfs pull test:wrong
tap_like "$tap_stderr" "checksum mismatch" "the error says checksum mismatch"
tap_like "$tap_stderr" "expected sha256:[0-9a-f]{64}, got sha256:$(sha "$work/srv/wrong.tar")" \
  "it names both digests"
tap_like "$tap_stderr" "deleted" "it says the download was deleted"
tap_is "$(leftovers)" 0 "nothing is left in the download directory"
tap_is "$(count_images)" "$before" "the store is unchanged"

# ---- interrupted, then resumed ---------------------------------------------
manifest test:resume /drop-once/resume.tar
size=$(stat -c %s "$work/srv/resume.tar")
tap_ok "a download dropped halfway is resumed" "$HUTCH_BIN" rootfs pull test:resume
tap_is "$tap_stdout" "sha256:$(sha "$work/srv/resume.tar")" "and the result is the whole file"
tap_is "$(requests /drop-once/resume.tar)" 2 "two requests were made"
second=$(grep '"/drop-once/resume.tar"' "$work/requests.log" | sed -n 2p)
tap_like "$second" "\"range\": \"bytes=$((size / 2))-\"" "the second asked for the rest with a Range header"

# A .part left by an earlier, killed run is resumed by the next one.
manifest test:part /files/part.tar
hex=$(sha "$work/srv/part.tar")
mkdir -p "$HUTCH_STORE/downloads"
head -c 10000 "$work/srv/part.tar" >"$HUTCH_STORE/downloads/sha256-$hex.part"
tap_ok "a leftover .part is resumed" "$HUTCH_BIN" rootfs pull test:part
tap_is "$tap_stdout" "sha256:$hex" "the resumed file is verified"
tap_like "$(grep '"/files/part.tar"' "$work/requests.log")" '"range": "bytes=10000-"' \
  "the request asked for bytes=10000-"

# A server that ignores Range sends the whole file again: start over.
manifest test:norange /no-range/norange.tar
hex=$(sha "$work/srv/norange.tar")
head -c 10000 "$work/srv/norange.tar" >"$HUTCH_STORE/downloads/sha256-$hex.part"
tap_ok "a server that ignores Range" "$HUTCH_BIN" rootfs pull test:norange
tap_is "$tap_stdout" "sha256:$hex" "still gives the right file"

# ---- redirects, 404 ----------------------------------------------------------
manifest test:redirect /redirect/3/redirect.tar "$(sha "$work/srv/redirect.tar")"
tap_ok "redirects are followed" "$HUTCH_BIN" rootfs pull test:redirect
tap_is "$tap_stdout" "sha256:$(sha "$work/srv/redirect.tar")" "to the file"
# Digests that are not in the store, so that the server is asked.
other=$(echo other | sha256sum | cut -d' ' -f1)
manifest test:loop /redirect/12/redirect.tar "$other"
tap_status 125 "more than 10 redirects fail" "$HUTCH_BIN" rootfs pull test:loop
tap_like "$tap_stderr" "[Rr]edirect" "the error says so"

manifest test:missing /files/missing.tar "$other"
before=$(count_images)
tap_status 125 "a 404 fails" "$HUTCH_BIN" rootfs pull test:missing
tap_like "$tap_stderr" "$base/files/missing.tar" "the error names the URL"
tap_like "$tap_stderr" "HTTP 404" "and the status"
tap_is "$(count_images)" "$before" "the store is unchanged"
tap_is "$(leftovers)" 0 "and no partial file is left"

# Nothing listens on a closed port: a network error, named as one.
closed=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
echo "name test:down
arch $arch http://127.0.0.1:$closed/x.tar $other" >"$HUTCH_ROOTFS_DIR/test-down.manifest"
tap_status 125 "an unreachable server fails" "$HUTCH_BIN" rootfs pull test:down
tap_like "$tap_stderr" "127.0.0.1:$closed" "naming the address"

# ---- references and manifests -------------------------------------------------
tap_status 125 "an unknown image" "$HUTCH_BIN" rootfs pull nosuch:1
tap_like "$tap_stderr" "no manifest for the image nosuch:1" "is named"
tap_like "$tap_stderr" "known images: .*test:base" "and the known ones are listed"
tap_status 125 "an architecture the manifest lacks" "$HUTCH_BIN" rootfs pull test:base --arch sparc64
tap_like "$tap_stderr" "the manifest lists $arch" "lists what it has"
tap_status 2 "--arch with docker:// is a usage error or refused" "$HUTCH_BIN" rootfs pull docker://busybox --arch x
tap_status 2 "pull without IMAGE" "$HUTCH_BIN" rootfs pull

# The shipped manifests parse and pin both architectures (no network needed:
# an architecture they lack is refused before any download).
for m in "$HUTCH_SRCDIR"/rootfs/*.manifest; do
  ref=$(sed -n 's/^name //p' "$m")
  HUTCH_ROOTFS_DIR=$HUTCH_SRCDIR/rootfs tap_status 125 "shipped manifest ${m##*/} parses" \
    "$HUTCH_BIN" rootfs pull "$ref" --arch sparc64
  tap_like "$tap_stderr" "the manifest lists amd64, arm64" "${m##*/} has amd64 and arm64"
done

tap_done
