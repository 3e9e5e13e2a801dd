#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# hutch rootfs pull and push against Debian's docker-registry (the CNCF
# distribution registry), started here on 127.0.0.1 with its own config and
# storage, filled with skopeo: OCI and Docker schema 2 manifests, image
# indexes and Docker manifest lists with two platforms, htpasswd (bcrypt)
# basic auth, bearer tokens from a token service (tests/lib/token-server.py)
# the registry trusts through its rootcertbundle, credentials from
# ~/.docker/config.json, $REGISTRY_AUTH_FILE and --authfile, TLS with a
# certificate made here (refused by default, accepted with --cert-dir or
# --tls-verify=false), and a push read back by skopeo and hutch.
. "${HUTCH_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}/tests/lib/tap.sh"
. "$HUTCH_SRCDIR/tests/lib/registry.sh"

command -v docker-registry >/dev/null || tap_skip_all "docker-registry is not installed (apt-get install docker-registry)"
command -v skopeo >/dev/null || tap_skip_all "skopeo is not installed"
command -v htpasswd >/dev/null || tap_skip_all "htpasswd is not installed (apt-get install apache2-utils)"
python3 -c 'import cryptography' 2>/dev/null || tap_skip_all "python3-cryptography is not installed"

work=$(hutch_test_tmpdir) || exit 1
chmod 0755 "$work"
export HUTCH_STORE=$work/store
# Only the registries here are targets; nothing may come from the caller's
# own credentials or containers configuration.
unset http_proxy https_proxy HTTP_PROXY HTTPS_PROXY ALL_PROXY all_proxy REGISTRY_AUTH_FILE DOCKER_CONFIG XDG_RUNTIME_DIR
export HOME=$work/home
mkdir -p "$HOME"

# shellcheck disable=SC2317 # run by the EXIT trap
cleanup() {
  registry_stop_all
  hutch_rootfs_rm_all
  rm -rf "$work"
}
trap cleanup EXIT

busybox_tar=$(hutch_rootfs_ensure busybox) || tap_skip_all "the busybox test rootfs cannot be built"
arch=$(dpkg --print-architecture 2>/dev/null || echo amd64)

# What a tree holds: names, types, modes, sizes, link targets and contents.
tree_sum() {
  (cd "$1" && find . -path ./etc/hutch-arch -prune -o -printf '%p %y %m %U %G %l\n' | LC_ALL=C sort &&
    find . -type f -path ./etc/hutch-arch -prune -o -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum) |
    sha256sum | cut -d' ' -f1
}
json_get() { python3 -c 'import json, sys; print(json.load(sys.stdin)[sys.argv[1]])' "$1"; }
host_digest_of_list() { # the digest of this host's entry in an index on stdin
  python3 -c '
import json, sys
for m in json.load(sys.stdin)["manifests"]:
    if m["platform"]["architecture"] == sys.argv[1]:
        print(m["digest"])' "$arch"
}

tap_ok "import the busybox tree" "$HUTCH_BIN" rootfs import "$busybox_tar" --name bb
bb_sum=$(tree_sum "$(hutch_rootfs_of bb)")
tap_ok "export it as an oci-archive" "$HUTCH_BIN" rootfs export bb --format oci-archive "$work/bb-oci.tar"
host_manifest=$(python3 "$HUTCH_SRCDIR/tests/lib/make-multiarch-layout.py" "$busybox_tar" "$work/multi" multi "$arch")

# ---- an open registry: manifest kinds ----------------------------------
registry_start "$work/open" || tap_skip_all "docker-registry does not start here"
open=$REGISTRY_ADDR
sk=(skopeo copy -q --dest-tls-verify=false)
tap_ok "skopeo copy: OCI manifest" "${sk[@]}" "oci-archive:$work/bb-oci.tar" "docker://$open/test/oci:1"
tap_ok "skopeo copy: Docker schema 2" "${sk[@]}" --format v2s2 "oci-archive:$work/bb-oci.tar" \
  "docker://$open/test/docker:1"
tap_ok "skopeo copy: an OCI index of two platforms" "${sk[@]}" --multi-arch all "oci:$work/multi:multi" \
  "docker://$open/test/multi:1"
tap_ok "skopeo copy: a Docker manifest list of two platforms" "${sk[@]}" --multi-arch all --format v2s2 \
  "oci:$work/multi:multi" "docker://$open/test/multidocker:1"
raw() { skopeo inspect --raw --tls-verify=false "docker://$open/$1" | json_get mediaType; }
tap_is "$(raw test/oci:1)" "application/vnd.oci.image.manifest.v1+json" "test/oci:1 is an OCI manifest"
tap_is "$(raw test/docker:1)" "application/vnd.docker.distribution.manifest.v2+json" \
  "test/docker:1 is a Docker schema 2 manifest"
tap_is "$(raw test/multi:1)" "application/vnd.oci.image.index.v1+json" "test/multi:1 is an OCI index"
tap_is "$(raw test/multidocker:1)" "application/vnd.docker.distribution.manifest.list.v2+json" \
  "test/multidocker:1 is a Docker manifest list"

tap_ok "pull an OCI manifest" "$HUTCH_BIN" rootfs pull "docker://$open/test/oci:1" --name p-oci
tap_is "$(tree_sum "$(hutch_rootfs_of p-oci)")" "$bb_sum" "the OCI image's tree is the exported one"
tap_ok "pull a Docker schema 2 manifest" "$HUTCH_BIN" rootfs pull "docker://$open/test/docker:1" --name p-docker
tap_is "$(tree_sum "$(hutch_rootfs_of p-docker)")" "$bb_sum" "the Docker image's tree is the exported one"
# skopeo compresses the uncompressed base layer on its way to a registry:
# the manifests there are not the layout's.
want=$(skopeo inspect --raw --tls-verify=false "docker://$open/test/multi:1" | host_digest_of_list)
tap_ok "pull an OCI index" "$HUTCH_BIN" rootfs pull "docker://$open/test/multi:1" --name p-multi
tap_is "$tap_stdout" "$want" "the index resolves to this host's ($arch) manifest"
tap_is "$(cat "$(hutch_rootfs_of p-multi)/etc/hutch-arch")" "$arch" "the tree is the $arch image's"
tap_is "$(tree_sum "$(hutch_rootfs_of p-multi)")" "$bb_sum" "with the base layer under it"
want=$(skopeo inspect --raw --tls-verify=false "docker://$open/test/multidocker:1" | host_digest_of_list)
tap_ok "pull a Docker manifest list" "$HUTCH_BIN" rootfs pull "docker://$open/test/multidocker:1" --name p-list
tap_is "$tap_stdout" "$want" "the list resolves to this host's ($arch) manifest"
tap_is "$(cat "$(hutch_rootfs_of p-list)/etc/hutch-arch")" "$arch" "the tree is the $arch image's"
# shellcheck disable=SC2016 # expanded in the sandbox
tap_ok "exec in the pulled multi-platform image" "$HUTCH_BIN" exec --rootfs p-list -- /bin/sh -c 'echo $HUTCH_ARCH'
tap_is "$tap_stdout" "$arch" "its config's Env applies"

# ---- push --------------------------------------------------------------
tap_ok "push an image" "$HUTCH_BIN" rootfs push bb "docker://$open/test/pushed:1"
pushed=$tap_stdout
tap_like "$pushed" '^sha256:[0-9a-f]{64}$' "push prints the manifest's digest"
tap_ok "skopeo inspect reads the pushed image" skopeo inspect --tls-verify=false "docker://$open/test/pushed:1"
info=$tap_stdout
tap_is "$(json_get Digest <<<"$info")" "$pushed" "skopeo sees the digest push printed"
tap_is "$(json_get Architecture <<<"$info")" "$arch" "and this host's architecture"
tap_ok "skopeo copy the pushed image back" skopeo copy -q --preserve-digests --src-tls-verify=false \
  "docker://$open/test/pushed:1" \
  "oci:$work/back:pushed"
tap_is "$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["manifests"][0]["digest"])' \
  "$work/back/index.json")" "$pushed" "the copy holds the same manifest"
tap_ok "skopeo copy it to a docker-archive" skopeo copy -q --src-tls-verify=false \
  "docker://$open/test/pushed:1" "docker-archive:$work/back.tar:test/pushed:1"
tap_ok "import that archive" "$HUTCH_BIN" rootfs import "$work/back.tar" --name back-da
tap_is "$(tree_sum "$(hutch_rootfs_of back-da)")" "$bb_sum" "the tree came back through skopeo unchanged"
tap_ok "pull the pushed image" "$HUTCH_BIN" rootfs pull "docker://$open/test/pushed:1" --name p-pushed
tap_is "$tap_stdout" "$pushed" "pull names the pushed manifest"
tap_is "$(tree_sum "$(hutch_rootfs_of p-pushed)")" "$bb_sum" "the pulled tree is the pushed one"
tap_ok "push again" env HUTCH_DEBUG=1 "$HUTCH_BIN" rootfs push bb "docker://$open/test/pushed:2"
tap_is "$tap_stdout" "$pushed" "the same image is the same manifest"
tap_like "$tap_stderr" "is there already" "blobs the registry has are not sent again"
tap_status 2 "push to something not docker://" "$HUTCH_BIN" rootfs push bb "$open/test/x:1"
tap_status 125 "push by digest is refused" "$HUTCH_BIN" rootfs push bb "docker://$open/test/x@$pushed"
tap_like "$tap_stderr" "names a tag" "the error says a push names a tag"

# ---- basic auth (htpasswd, bcrypt) -------------------------------------
htpasswd -Bbc "$work/htpasswd" alice 'open sesame' 2>/dev/null
registry_start "$work/basic" "  htpasswd: {realm: hutch-test, path: \"$work/htpasswd\"}" ||
  tap_skip_all "docker-registry with htpasswd does not start"
basic=$REGISTRY_ADDR
tap_ok "fill the basic-auth registry" "${sk[@]}" --dest-creds 'alice:open sesame' "oci-archive:$work/bb-oci.tar" \
  "docker://$basic/test/private:1"
tap_status 125 "a pull without credentials fails" "$HUTCH_BIN" rootfs pull "docker://$basic/test/private:1" --name b0
tap_like "$tap_stderr" "credentials" "the error says credentials are needed"
auth=$(printf 'alice:open sesame' | base64)
mkdir -p "$HOME/.docker"
printf '{"auths": {"%s": {"auth": "%s"}}}\n' "$basic" "$auth" >"$HOME/.docker/config.json"
tap_ok "credentials from ~/.docker/config.json" env HUTCH_DEBUG=1 "$HUTCH_BIN" rootfs pull \
  "docker://$basic/test/private:1" --name b1
tap_is "$(tree_sum "$(hutch_rootfs_of b1)")" "$bb_sum" "the private image is pulled"
tap_unlike "$tap_stderr" "open sesame|$auth" "the credentials are not in the debug log"
rm "$HOME/.docker/config.json"
# podman's auth.json: keys with a scheme or a path, as `podman login` writes.
printf '{"auths": {"http://%s/test": {"auth": "%s"}}}\n' "$basic" "$auth" >"$work/auth.json"
tap_ok "credentials from \$REGISTRY_AUTH_FILE" env REGISTRY_AUTH_FILE="$work/auth.json" "$HUTCH_BIN" rootfs pull \
  "docker://$basic/test/private:1" --name b2
tap_ok "credentials from --authfile" "$HUTCH_BIN" rootfs pull --authfile "$work/auth.json" \
  "docker://$basic/test/private:1" --name b3
printf '{"auths": {"%s": {"auth": "%s"}}}\n' "$basic" "$(printf alice:wrong | base64)" >"$work/wrong.json"
tap_status 125 "wrong credentials fail" "$HUTCH_BIN" rootfs pull --authfile "$work/wrong.json" \
  "docker://$basic/test/private:1" --name b4
tap_like "$tap_stderr" "401" "the registry's 401 is named"
tap_status 125 "a push without credentials fails" "$HUTCH_BIN" rootfs push bb "docker://$basic/test/pushed:1"
tap_like "$tap_stderr" "credentials" "the error says credentials are needed"
tap_ok "push with credentials" "$HUTCH_BIN" rootfs push --authfile "$work/auth.json" bb \
  "docker://$basic/test/pushed:1"
tap_ok "skopeo reads it with the same credentials" skopeo inspect --tls-verify=false --creds 'alice:open sesame' \
  "docker://$basic/test/pushed:1"
tap_is "$(json_get Digest <<<"$tap_stdout")" "$pushed" "the same manifest as on the open registry"

# ---- bearer tokens ----------------------------------------------------
openssl req -x509 -newkey rsa:2048 -nodes -keyout "$work/token.key" -out "$work/token.crt" -days 2 \
  -subj /CN=hutch-test-token-issuer 2>/dev/null
echo 'alice:open sesame' >"$work/token-users"
token_server_start "$work/token" "$work/token.key" "$work/token.crt" hutch-test-registry "$work/token-users" ||
  tap_skip_all "the token server does not start"
registry_start "$work/tokreg" "  token:
    realm: \"$TOKEN_REALM\"
    service: hutch-test-registry
    issuer: hutch-test-issuer
    rootcertbundle: \"$work/token.crt\"" || tap_skip_all "docker-registry with token auth does not start"
token=$REGISTRY_ADDR
for repo in public/bb test/private; do
  tap_ok "fill $repo on the token registry" "${sk[@]}" --dest-creds 'alice:open sesame' \
    "oci-archive:$work/bb-oci.tar" "docker://$token/$repo:1"
done
: >"$work/token/token.log"
tap_ok "an anonymous token for a public repository" "$HUTCH_BIN" rootfs pull "docker://$token/public/bb:1" --name t1
tap_like "$(cat "$work/token/token.log")" '"user": null, "status": 200' "the token service was asked anonymously"
tap_status 125 "anonymous: a private repository fails" "$HUTCH_BIN" rootfs pull "docker://$token/test/private:1" \
  --name t2
printf '{"auths": {"%s": {"auth": "%s"}}}\n' "$token" "$auth" >"$work/token-auth.json"
: >"$work/token/token.log"
tap_ok "a token for the credentials" "$HUTCH_BIN" rootfs pull --authfile "$work/token-auth.json" \
  "docker://$token/test/private:1" --name t3
tap_like "$(cat "$work/token/token.log")" '"user": "alice", "status": 200' "the token service saw alice"
tap_is "$(tree_sum "$(hutch_rootfs_of t3)")" "$bb_sum" "the private image is pulled"
tap_status 125 "anonymous: a push fails" "$HUTCH_BIN" rootfs push bb "docker://$token/test/pushed:1"
: >"$work/token/token.log"
tap_ok "push with a token" "$HUTCH_BIN" rootfs push --authfile "$work/token-auth.json" bb \
  "docker://$token/test/pushed:1"
tap_like "$(cat "$work/token/token.log")" 'scope=repository%3Atest%2Fpushed%3A(pull%2Cpush|push%2Cpull)' \
  "the token asked for is for pull and push"
tap_ok "skopeo reads the pushed image" skopeo inspect --tls-verify=false --creds 'alice:open sesame' \
  "docker://$token/test/pushed:1"
tap_is "$(json_get Digest <<<"$tap_stdout")" "$pushed" "the same manifest"

# ---- TLS --------------------------------------------------------------
openssl req -x509 -newkey rsa:2048 -nodes -keyout "$work/tls.key" -out "$work/tls.crt" -days 2 \
  -subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 2>/dev/null
mkdir -p "$work/certs"
cp "$work/tls.crt" "$work/certs/ca.crt"
registry_start "$work/tls" "" "$work/tls.crt" "$work/tls.key" || tap_skip_all "docker-registry with TLS does not start"
tls=$REGISTRY_ADDR
tap_ok "fill the TLS registry" skopeo copy -q --dest-cert-dir "$work/certs" "oci-archive:$work/bb-oci.tar" \
  "docker://$tls/test/tls:1"
tap_status 125 "a certificate nobody vouches for is refused" "$HUTCH_BIN" rootfs pull "docker://$tls/test/tls:1" \
  --name s1
tap_like "$tap_stderr" "certificate" "the error names the certificate"
tap_like "$tap_stderr" "tls-verify=false|cert-dir" "and the flags that accept it"
tap_unlike "$tap_stderr" "Connection refused|unreachable" "and no network failure it is not"
# A port nobody listens on: the connection's failure, once, with its hint.
tap_status 125 "a registry that is not there fails the pull" "$HUTCH_BIN" rootfs pull "docker://127.0.0.1:9/test/x:1"
tap_is "$(grep -o "Connection refused" <<<"$tap_stderr" | wc -l)" "1" "saying the connection was refused, once"
tap_like "$tap_stderr" "hint: check the network" "with the hint"
tap_ok "--cert-dir trusts its CA" "$HUTCH_BIN" rootfs pull --cert-dir "$work/certs" "docker://$tls/test/tls:1" \
  --name s2
tap_ok "--tls-verify=false accepts it" "$HUTCH_BIN" rootfs pull --tls-verify=false "docker://$tls/test/tls:1" \
  --name s3
tap_status 125 "a push is refused the same way" "$HUTCH_BIN" rootfs push bb "docker://$tls/test/pushed:1"
tap_ok "push with --cert-dir" "$HUTCH_BIN" rootfs push --cert-dir "$work/certs" bb "docker://$tls/test/pushed:1"
tap_status 2 "--tls-verify takes true or false" "$HUTCH_BIN" rootfs pull --tls-verify=maybe "docker://$tls/x:1"
tap_status 2 "registry flags are for docker:// only" "$HUTCH_BIN" rootfs pull --tls-verify=false ubuntu:24.04

# ---- a hostile registry (tests/lib/mock-registry.py) --------------------
cat >"$work/mock.json" <<JSON
{"blobs": "$work/multi/blobs/sha256",
 "repos": {"test/redirect": {"tags": {"v1": "$host_manifest"}, "auth": "alice:s3cret",
                             "redirect": "http://localhost:PORT"},
           "test/big": {"tags": {"v1": "$host_manifest"}, "oversize": 1048576},
           "test/upload": {"tags": {}, "auth": "alice:s3cret", "upload": "http://localhost:PORT/elsewhere-upload"},
           "test/realm-name": {"tags": {"v1": "$host_manifest"}, "auth": "alice:s3cret",
                               "realm": "http://127.0.0.1.invalid:PORT/token"},
           "test/realm-user": {"tags": {"v1": "$host_manifest"}, "auth": "alice:s3cret",
                               "realm": "http://127.0.0.1:PORT@example.invalid/token"}}}
JSON
python3 "$HUTCH_SRCDIR/tests/lib/mock-registry.py" "$work/mock.json" "$work/mock.port" "$work/mock.log" \
  >/dev/null 2>"$work/mock.err" &
_registry_pids+=($!)
for _ in $(seq 100); do [ -s "$work/mock.port" ] && break; sleep 0.1; done
mock=127.0.0.1:$(cat "$work/mock.port")
printf '{"auths": {"%s": {"auth": "%s"}}}\n' "$mock" "$(printf alice:s3cret | base64)" >"$work/mock-auth.json"
tap_ok "a pull whose blobs are redirected to another host" "$HUTCH_BIN" rootfs pull --authfile \
  "$work/mock-auth.json" "docker://$mock/test/redirect:v1" --name m1
mock_log() { python3 -c '
import json, sys
for l in open(sys.argv[1]):
    r = json.loads(l)
    print(r["status"], r["authorization"] or "-", r["basic"] or "-", r["path"])' "$work/mock.log"; }
tap_like "$(mock_log)" "307 Bearer - /v2/test/redirect/blobs/" "the registry's blob answers are redirects"
tap_like "$(mock_log)" "200 - - /elsewhere/" "the other host is asked for the blobs"
tap_unlike "$(mock_log | grep /elsewhere/)" "Bearer|Basic" "without the token or the credentials"
# (Into another store: the one here has that image already.)
tap_status 125 "a blob larger than its descriptor is refused" env HUTCH_STORE="$work/store-big" "$HUTCH_BIN" \
  rootfs pull "docker://$mock/test/big:v1" --name m2
tap_like "$tap_stderr" "larger than" "the error says it is larger than expected"
tap_is "$(find "$work/store-big" -mindepth 2 -not -path "$work/store-big/downloads" 2>/dev/null)" "" \
  "and nothing of it is kept"
: >"$work/mock.log"
tap_status 125 "an upload Location on another host is refused" "$HUTCH_BIN" rootfs push --authfile \
  "$work/mock-auth.json" bb "docker://$mock/test/upload:1"
tap_like "$tap_stderr" "not on http://127.0.0.1" "the error names the registry's own address"
tap_unlike "$(mock_log)" "elsewhere-upload" "nothing is sent there"
for repo in realm-name realm-user; do
  tap_status 125 "a plain http token realm on a host named like a loopback address ($repo) is refused" \
    "$HUTCH_BIN" rootfs pull --authfile "$work/mock-auth.json" "docker://$mock/test/$repo:v1" --name "m-$repo"
  tap_like "$tap_stderr" "not loopback" "the error says the realm's host is not loopback"
done

tap_done
