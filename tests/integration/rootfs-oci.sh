#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# OCI and Docker images: `docker save` archives and OCI layouts (directory
# and tarball) imported, and `pull docker://` from a registry on 127.0.0.1
# (tests/lib/mock-registry.py) behind a manifest list and a token challenge.
# The test builds its own three-layer image on the busybox test rootfs:
# layer 2 adds files and directories, layer 3 deletes a file (whiteout),
# makes a directory opaque and replaces a directory with a file.
. "${HUTCH_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}/tests/lib/tap.sh"

base=$(hutch_rootfs_ensure busybox) || tap_skip_all "the busybox test rootfs is not available"
work=$(hutch_test_tmpdir) || exit 1
chmod 0755 "$work"
export HUTCH_STORE=$work/store
regpid=

# shellcheck disable=SC2317 # run by the EXIT trap
cleanup() {
  local s d
  [ -n "$regpid" ] && kill "$regpid" 2>/dev/null
  for s in "$work"/store*; do
    [ -d "$s" ] || continue
    for d in $(HUTCH_STORE=$s "$HUTCH_BIN" rootfs ls --json 2>/dev/null |
      python3 -c 'import json,sys; print("\n".join(sorted({i["digest"] for i in json.load(sys.stdin)})))' 2>/dev/null); do
      HUTCH_STORE=$s "$HUTCH_BIN" rootfs rm "$d" >/dev/null 2>&1
    done
  done
  rm -rf "$work"
}
trap cleanup EXIT

count_images() { # STORE
  find "$1/images" -mindepth 1 -maxdepth 1 2>/dev/null | wc -l
}

rootfs_of() { hutch_rootfs_of "$1"; } # NAME -> the unpacked tree

json_get() { # JSON KEY
  python3 -c 'import json, sys; print(json.loads(sys.argv[1])[sys.argv[2]])' "$1" "$2"
}

# The tree an image must have: layer 3 applied over layers 1 and 2.
check_tree() { # LABEL ROOT
  local label=$1 root=$2
  tap_is "$(cat "$root/opt/keep" 2>&1)" "kept" "$label: a file of layer 2 is there"
  tap_check "$([ ! -e "$root/opt/gone" ] && echo 0 || echo 1)" "$label: the file layer 3 whited out is gone"
  tap_is "$(cd "$root/opt/dir" 2>/dev/null && ls -A | tr '\n' ' ')" "later new " \
    "$label: the opaque directory holds only layer 3's files (also one written before the marker)"
  tap_check "$([ -f "$root/opt/replaced" ] && [ ! -L "$root/opt/replaced" ] && echo 0 || echo 1)" \
    "$label: a directory of layer 2 replaced by a file of layer 3"
  tap_is "$(find "$root" -name '.wh.*' | head -3)" "" "$label: no whiteout file is left in the tree"
  tap_is "$(cat "$root/etc/arch" 2>&1)" "amd64" "$label: the amd64 image of the list was chosen"
  tap_check "$([ -x "$root/bin/sh" ] || [ -L "$root/bin/sh" ] && echo 0 || echo 1)" "$label: layer 1 (busybox) is there"
}

cat >"$work/mkoci.py" <<'EOF'
# mkoci.py BASE_TAR OUT CANARY: a three-layer test image in every format
# hutch imports (OCI layout directory and tarball, `docker save` archive),
# whose blobs a mock registry serves, and hostile images whose layers aim at
# CANARY; prints a JSON summary of the digests.
import gzip, hashlib, io, json, os, sys, tarfile

base_tar, out, canary = sys.argv[1], sys.argv[2], sys.argv[3]
os.makedirs(out, exist_ok=True)
D, F, S = tarfile.DIRTYPE, tarfile.REGTYPE, tarfile.SYMTYPE


def sha(b):
    return hashlib.sha256(b).hexdigest()


def mktar(entries):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as t:
        for name, typ, data in entries:
            ti = tarfile.TarInfo(name)
            ti.type, ti.mtime = typ, 1700000000
            ti.mode = 0o755 if typ == D else 0o644
            if typ == F:
                ti.size = len(data)
                t.addfile(ti, io.BytesIO(data))
            elif typ == S:
                ti.linkname = data.decode()
                t.addfile(ti)
            else:
                t.addfile(ti)
    return buf.getvalue()


base = open(base_tar, "rb").read()
l1 = mktar([
    ("opt", D, b""), ("opt/keep", F, b"kept\n"), ("opt/gone", F, b"deleted by layer 3\n"),
    ("opt/dir", D, b""), ("opt/dir/old1", F, b"old\n"), ("opt/dir/sub", D, b""),
    ("opt/dir/sub/old2", F, b"old\n"), ("opt/work", D, b""),
    ("opt/replaced", D, b""), ("opt/replaced/x", F, b"x\n"),
])
# Content written before the opaque marker in the same layer must survive it.
l2 = mktar([
    ("opt", D, b""), ("opt/.wh.gone", F, b""), ("opt/dir", D, b""),
    ("opt/dir/new", F, b"layer 3\n"), ("opt/dir/.wh..wh..opq", F, b""),
    ("opt/dir/later", F, b"layer 3 too\n"), ("opt/replaced", F, b"a file now\n"),
    ("etc/arch", F, b"amd64\n"),
])
larm = mktar([("etc/arch", F, b"arm64\n")])
blobs = {}


def blob(data):
    h = sha(data)
    blobs[h] = data
    return "sha256:" + h


def gz(data):
    return gzip.compress(data, compresslevel=1, mtime=0)


LT = "application/vnd.oci.image.layer.v1.tar"
layers_amd = [(base, LT, base), (gz(l1), LT + "+gzip", l1), (gz(l2), LT + "+gzip", l2)]
layers_arm = [(base, LT, base), (gz(larm), LT + "+gzip", larm)]


def config(arch, layers, user=""):
    return json.dumps({
        "architecture": arch, "os": "linux",
        "config": {"Env": ["PATH=/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "OCI_TEST=from image",
                           "OCI_OVERRIDE=image"],
                   "WorkingDir": "/opt/work", "User": user},
        "rootfs": {"type": "layers", "diff_ids": ["sha256:" + sha(raw) for _, _, raw in layers]},
    }, sort_keys=True).encode()


def manifest(cfg, layers, mtype="application/vnd.oci.image.manifest.v1+json",
             ctype="application/vnd.oci.image.config.v1+json"):
    return json.dumps({
        "schemaVersion": 2, "mediaType": mtype,
        "config": {"mediaType": ctype, "digest": blob(cfg), "size": len(cfg)},
        "layers": [{"mediaType": mt, "digest": blob(data), "size": len(data)} for data, mt, _ in layers],
    }).encode()


cfg_amd, cfg_arm = config("amd64", layers_amd), config("arm64", layers_arm)
man_amd, man_arm = manifest(cfg_amd, layers_amd), manifest(cfg_arm, layers_arm)
MT = "application/vnd.oci.image.manifest.v1+json"
index = json.dumps({
    "schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json",
    "manifests": [
        {"mediaType": MT, "digest": blob(man_arm), "size": len(man_arm),
         "platform": {"architecture": "arm64", "os": "linux", "variant": "v8"}},
        {"mediaType": MT, "digest": blob(man_amd), "size": len(man_amd),
         "platform": {"architecture": "amd64", "os": "linux"}},
    ]}).encode()
index_digest = blob(index)

# The same image in Docker's v2 media types, behind a Docker manifest list.
DT = "application/vnd.docker.image.rootfs.diff.tar"
layers_docker = [(base, DT, base), (gz(l1), DT + ".gzip", l1), (gz(l2), DT + ".gzip", l2)]
DM = "application/vnd.docker.distribution.manifest.v2+json"
man_docker = manifest(cfg_amd, layers_docker, DM, "application/vnd.docker.container.image.v1+json")
docker_list = json.dumps({
    "schemaVersion": 2, "mediaType": "application/vnd.docker.distribution.manifest.list.v2+json",
    "manifests": [{"mediaType": DM, "digest": blob(man_docker), "size": len(man_docker),
                   "platform": {"architecture": "amd64", "os": "linux"}}]}).encode()
docker_list_digest = blob(docker_list)

# The OCI layout: index.json points at the image index (a manifest list).
lay = os.path.join(out, "layout")
os.makedirs(os.path.join(lay, "blobs", "sha256"), exist_ok=True)
for h, data in blobs.items():
    with open(os.path.join(lay, "blobs", "sha256", h), "wb") as f:
        f.write(data)
with open(os.path.join(lay, "oci-layout"), "w") as f:
    json.dump({"imageLayoutVersion": "1.0.0"}, f)
with open(os.path.join(lay, "index.json"), "w") as f:
    json.dump({"schemaVersion": 2, "manifests": [{
        "mediaType": "application/vnd.oci.image.index.v1+json", "digest": index_digest, "size": len(index),
        "annotations": {"org.opencontainers.image.ref.name": "v1"}}]}, f)
with tarfile.open(os.path.join(out, "layout.tar"), "w") as t:
    for name in sorted(os.listdir(lay)):
        t.add(os.path.join(lay, name), arcname=name)


def docker_save(path, cfg, tag, layers=None):
    # The classic layout: <id>/layer.tar (uncompressed), <config hex>.json.
    with tarfile.open(path, "w") as t:
        def add(name, data):
            ti = tarfile.TarInfo(name)
            ti.size, ti.mtime = len(data), 1700000000
            t.addfile(ti, io.BytesIO(data))
        names = []
        for raw in layers or [raw for _, _, raw in layers_amd]:
            lid = sha(raw)
            add(lid + "/VERSION", b"1.0")
            add(lid + "/layer.tar", raw)
            names.append(lid + "/layer.tar")
        add(sha(cfg) + ".json", cfg)
        add("manifest.json", json.dumps([{"Config": sha(cfg) + ".json", "RepoTags": [tag], "Layers": names}]).encode())
        add("repositories", json.dumps({tag.split(":")[0]: {tag.split(":")[1]: names[-1].split("/")[0]}}).encode())


docker_save(os.path.join(out, "docker.tar"), cfg_amd, "test/img:v1")
cfg_user = config("amd64", layers_amd, user="1000:1000")
docker_save(os.path.join(out, "docker-user.tar"), cfg_user, "test/user:v1")


def hostile(name, layers):
    triples = [(raw, LT, raw) for raw in layers]
    docker_save(os.path.join(out, name + ".tar"), config("amd64", triples), "test/" + name + ":v1", layers)


# Whiteouts through symlinks delete nothing: not the image's own /etc/passwd
# behind "lnk", and nothing of the canary outside behind "out".
hostile("whiteout-symlink", [
    mktar([("etc", D, b""), ("etc/passwd", F, b"root:x:0:0::/root:/bin/sh\n"), ("lnk", S, b"/etc"),
           ("out", S, canary.encode()), ("up", S, b"../../../../../../../../../.." + canary.encode())]),
    mktar([("lnk/.wh.passwd", F, b""), ("out/.wh.file", F, b""), ("out/.wh..wh..opq", F, b""),
           ("up/.wh.file", F, b"")]),
])
# The unpacker's defences hold for every layer, not only the first.
hostile("dotdot-layer", [mktar([("etc", D, b"")]), mktar([("../escaped", F, b"pwned\n")])])
hostile("symlink-layer", [mktar([("link", S, canary.encode())]), mktar([("link/pwned", F, b"pwned\n")])])
hostile("bad-whiteout", [mktar([("etc", D, b"")]), mktar([("etc/.wh..", F, b"")])])

json.dump({
    "index": index_digest, "manifest_amd64": "sha256:" + sha(man_amd), "manifest_arm64": "sha256:" + sha(man_arm),
    "config_amd64": "sha256:" + sha(cfg_amd), "config_user": "sha256:" + sha(cfg_user),
    "layer2": "sha256:" + sha(gz(l1)),
    "docker_list": docker_list_digest, "manifest_docker": "sha256:" + sha(man_docker),
}, sys.stdout)
print()
EOF

summary=$(python3 "$work/mkoci.py" "$base" "$work/img" "$work/canary") || tap_skip_all "python3 could not build the test images"
manifest=$(json_get "$summary" manifest_amd64)
config=$(json_get "$summary" config_amd64)
index=$(json_get "$summary" index)
layer2=$(json_get "$summary" layer2)
mkdir -p "$work/canary"
echo original >"$work/canary/file"
tap_diag "image manifest $manifest, config $config"

# ---- import: OCI layout directory, OCI tarball, docker save ---------------
tap_ok "import an OCI layout directory" "$HUTCH_BIN" rootfs import "$work/img/layout" --name oci-dir
tap_is "$tap_stdout" "$manifest" "the image is keyed by the digest of the amd64 image manifest"
check_tree "OCI layout" "$(rootfs_of oci-dir)"
meta=$(dirname "$(rootfs_of oci-dir)")/meta.json
tap_is "$(python3 -c '
import json, sys
i = json.load(open(sys.argv[1]))["image"]
print(i["format"], i["config"], i["workdir"], i["user"], len(i["layers"]), "|".join(i["env"]))' "$meta" 2>&1)" \
  "oci-layout $config /opt/work None 3 PATH=/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin|OCI_TEST=from image|OCI_OVERRIDE=image" \
  "meta.json keeps the format, the config digest, the layers and the config's Env, WorkingDir and User"

before=$(count_images "$HUTCH_STORE")
tap_ok "import the same layout as a tarball" "$HUTCH_BIN" rootfs import "$work/img/layout.tar" --name oci-tar
tap_is "$tap_stdout" "$manifest" "the tarball resolves to the same image manifest"
tap_like "$tap_stderr" "already in the store" "and nothing is unpacked again"
tap_is "$(count_images "$HUTCH_STORE")" "$before" "no second entry"

tap_ok "import a docker save archive" "$HUTCH_BIN" rootfs import "$work/img/docker.tar" --name docker
tap_is "$tap_stdout" "$config" "a docker save image is keyed by its config digest (its image ID)"
check_tree "docker save" "$(rootfs_of docker)"

# Compressed image archives (`docker save IMAGE | gzip`): the same image.
gzip -c "$work/img/docker.tar" >"$work/img/docker.tar.gz"
tap_ok "import a gzipped docker save archive" "$HUTCH_BIN" rootfs import "$work/img/docker.tar.gz" --name docker-gz
tap_is "$tap_stdout" "$config" "it is the same image as the uncompressed archive"
tap_like "$tap_stderr" "compressed image archive" "the decompression is announced"
tap_is "$(rootfs_of docker-gz)" "$(rootfs_of docker)" "one entry for both"
if command -v xz >/dev/null; then
  rm -rf "$work/store"
  xz -c "$work/img/layout.tar" >"$work/img/layout.tar.xz"
  tap_ok "import an xz-compressed OCI layout tarball" "$HUTCH_BIN" rootfs import "$work/img/layout.tar.xz" --name oci-xz
  tap_is "$tap_stdout" "$manifest" "it resolves to the image manifest"
  check_tree "xz OCI tarball" "$(rootfs_of oci-xz)"
  tap_is "$(find "$work/store/tmp" -mindepth 1 2>/dev/null)" "" "no decompressed copy is left behind"
else
  tap_skip "an xz-compressed OCI layout tarball" "no xz"
fi

rm -rf "$work/store"
tap_ok "import the OCI tarball into an empty store" "$HUTCH_BIN" rootfs import "$work/img/layout.tar" --name oci-tar
check_tree "OCI tarball" "$(rootfs_of oci-tar)"
start=$(date +%s%N)
tap_ok "import the OCI tarball again" "$HUTCH_BIN" rootfs import "$work/img/layout.tar" --name oci-tar
ms=$((($(date +%s%N) - start) / 1000000))
tap_like "$tap_stderr" "already in the store" "the second import unpacks nothing"
tap_diag "second import of the OCI tarball: $ms ms"

# ---- the image's defaults in a sandbox ------------------------------------
tap_ok "exec in the image" "$HUTCH_BIN" exec --rootfs oci-tar -- sh -c 'pwd; echo "$OCI_TEST|$OCI_OVERRIDE|$PATH"'
tap_is "$tap_stdout" "/opt/work
from image|image|/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" "exec starts in WorkingDir with the image's Env"
tap_ok "exec with --env and --workdir" "$HUTCH_BIN" exec --rootfs oci-tar --env OCI_OVERRIDE=cli --workdir /tmp -- \
  sh -c 'pwd; echo "$OCI_TEST|$OCI_OVERRIDE"'
tap_is "$tap_stdout" "/tmp
from image|cli" "--env and --workdir win over the image's defaults"
tap_ok "create a sandbox of the image" "$HUTCH_BIN" create --rootfs oci-tar
sid=$tap_stdout
tap_ok "exec --in it" "$HUTCH_BIN" exec --in "$sid" -- sh -c 'pwd; echo "$OCI_TEST"'
tap_is "$tap_stdout" "/opt/work
from image" "exec --in starts in the image's WorkingDir too, with its Env"
tap_ok "exec --in --workdir" "$HUTCH_BIN" exec --in "$sid" --workdir /tmp -- pwd
tap_is "$tap_stdout" "/tmp" "--workdir wins over it"
"$HUTCH_BIN" rm "$sid" >/dev/null 2>&1
tap_unlike "$tap_stderr" "User" "no User warning for an image without a User"
tap_ok "import an image whose User is not root" "$HUTCH_BIN" rootfs import "$work/img/docker-user.tar" --name user
tap_ok "exec in it" "$HUTCH_BIN" exec --rootfs user -- id -u
tap_is "$tap_stdout" 0 "the command runs as root of the sandbox"
tap_is "$(printf '%s\n' "$tap_stderr" | grep -c 'User "1000:1000" is not applied')" 1 "one warning says the User is not applied"

# ---- damaged and hostile images -------------------------------------------
cp -R "$work/img/layout" "$work/tampered"
chmod -R u+w "$work/tampered"
python3 -c '
import sys
p = sys.argv[1]
b = bytearray(open(p, "rb").read())
b[-1] ^= 0xFF
open(p, "wb").write(bytes(b))' "$work/tampered/blobs/sha256/${layer2#sha256:}"
rm -rf "$work/store"
tap_status 125 "a layout with a tampered layer is refused" "$HUTCH_BIN" rootfs import "$work/tampered" --name tampered
tap_like "$tap_stderr" "digest mismatch: expected $layer2" "the error names the blob whose digest does not match"
tap_is "$(find "$work/store" -mindepth 2 2>/dev/null)" "" "the store holds no image, name or leftover"

tap_ok "whiteouts through symlinks are imported" "$HUTCH_BIN" rootfs import "$work/img/whiteout-symlink.tar" --name wsym
root=$(rootfs_of wsym)
tap_is "$(cat "$root/etc/passwd" 2>&1)" "root:x:0:0::/root:/bin/sh" "a whiteout behind a symlink deletes nothing in the image"
tap_is "$(cat "$work/canary/file" 2>&1)" "original" "nor anything outside it"
for c in dotdot-layer symlink-layer bad-whiteout; do
  before=$(find "$work/store" -mindepth 2 2>/dev/null | sort)
  tap_status 125 "$c: the image is refused" "$HUTCH_BIN" rootfs import "$work/img/$c.tar" --name "$c"
  tap_like "$tap_stderr" "layer 2 of 2 .*entry \"[^\"]+\"" "$c: the error names the layer and the entry"
  tap_is "$(find "$work/store" -mindepth 2 2>/dev/null | sort)" "$before" "$c: the store is unchanged"
done
tap_check "$([ ! -e "$work/canary/pwned" ] && [ ! -e "$work/escaped" ] && echo 0 || echo 1)" \
  "nothing was written outside the store"

# ---- pull docker:// from a registry on 127.0.0.1 ---------------------------
mkdir -p "$work/blobs"
cp "$work/img/layout/blobs/sha256/"* "$work/blobs/"
cat >"$work/registry.json" <<JSON
{"blobs": "$work/blobs",
 "repos": {"test/img": {"tags": {"v1": "$index", "docker": "$(json_get "$summary" docker_list)"}},
           "test/private": {"tags": {"v1": "$index"}, "auth": "alice:s3cret"},
           "test/tampered": {"tags": {"v1": "$index"}, "tamper": "$layer2"}}}
JSON
python3 "$HUTCH_SRCDIR/tests/lib/mock-registry.py" "$work/registry.json" "$work/port" "$work/registry.log" \
  2>"$work/registry.err" &
regpid=$!
for _ in $(seq 100); do
  [ -s "$work/port" ] && break
  sleep 0.1
done
port=$(cat "$work/port" 2>/dev/null)
if [ -z "$port" ]; then
  tap_check 1 "the mock registry starts"
  tap_done
fi
reg=127.0.0.1:$port

rm -rf "$work/store"
tap_status 125 "a tampered blob fails the pull" "$HUTCH_BIN" rootfs pull "docker://$reg/test/tampered:v1" --name tampered
tap_like "$tap_stderr" "${layer2#sha256:}" "the error names the blob"
tap_is "$(find "$work/store" -mindepth 2 -not -path "$work/store/downloads*" 2>/dev/null)" "" \
  "a failed pull leaves nothing in the store"

: >"$work/registry.log"
tap_ok "pull docker://127.0.0.1:PORT/test/img:v1" "$HUTCH_BIN" rootfs pull "docker://$reg/test/img:v1" --name pulled
tap_is "$tap_stdout" "$manifest" "the pull resolves the list to the amd64 image manifest"
check_tree "pull" "$(rootfs_of pulled)"
log=$(python3 -c '
import json, sys
for l in open(sys.argv[1]):
    r = json.loads(l)
    print(r["status"], r["authorization"] or "-", r["path"].split("?")[0])' "$work/registry.log")
tap_like "$log" "^401 - /v2/test/img/manifests/v1"$'\n'"200 - /token"$'\n'"200 Bearer /v2/test/img/manifests/v1" \
  "the registry's 401 challenge is answered with an anonymous token"
tap_like "$log" "200 Bearer /v2/test/img/manifests/$manifest" "the amd64 manifest is fetched by digest"
tap_unlike "$log" "$(json_get "$summary" manifest_arm64)" "the arm64 manifest is not fetched"
tap_is "$(grep -c ' /v2/test/img/blobs/' <<<"$log")" 4 "the config and the three layers are fetched once each"
tap_ok "exec in the pulled image" "$HUTCH_BIN" exec --rootfs pulled -- sh -c 'pwd; echo "$OCI_TEST"'
tap_is "$tap_stdout" "/opt/work
from image" "the pulled image's WorkingDir and Env apply"

: >"$work/registry.log"
start=$(date +%s%N)
tap_ok "pull the same image again" "$HUTCH_BIN" rootfs pull "docker://$reg/test/img:v1" --name pulled
ms=$((($(date +%s%N) - start) / 1000000))
tap_like "$tap_stderr" "already" "the second pull finds the manifest's digest in the store"
tap_is "$(grep -c '/blobs/' "$work/registry.log")" 0 "the second pull downloads no blob"
tap_diag "second pull of the three-layer image: $ms ms"
tap_ok "pull an image in Docker's v2 media types" "$HUTCH_BIN" rootfs pull "docker://$reg/test/img:docker" \
  --name docker-types
tap_is "$tap_stdout" "$(json_get "$summary" manifest_docker)" "a Docker manifest list resolves to its v2 manifest"
check_tree "Docker media types" "$(rootfs_of docker-types)"
tap_ok "pull by digest" "$HUTCH_BIN" rootfs pull "docker://$reg/test/img@$manifest" --name bydigest
tap_is "$tap_stdout" "$manifest" "a digest reference names the same image"
tap_status 125 "a digest the registry does not have fails" "$HUTCH_BIN" rootfs pull \
  "docker://$reg/test/img@sha256:$(printf '0%.0s' $(seq 64))" --name nothere
tap_status 125 "an unknown tag fails" "$HUTCH_BIN" rootfs pull "docker://$reg/test/img:v2" --name nothere
tap_like "$tap_stderr" "HTTP 404" "and says the registry answered 404"

# Credentials: the mock's token service wants them for test/private.
tap_status 125 "a private repository without credentials fails" env REGISTRY_AUTH_FILE="$work/none.json" \
  "$HUTCH_BIN" rootfs pull "docker://$reg/test/private:v1" --name private
tap_like "$tap_stderr" "credentials" "the error says credentials are missing"
printf '{"auths": {"%s": {"auth": "%s"}}}\n' "$reg" "$(printf alice:s3cret | base64)" >"$work/auth.json"
: >"$work/registry.log"
tap_ok "with REGISTRY_AUTH_FILE the pull succeeds" env REGISTRY_AUTH_FILE="$work/auth.json" \
  "$HUTCH_BIN" rootfs pull "docker://$reg/test/private:v1" --name private
tap_is "$(python3 -c '
import json, sys
for l in open(sys.argv[1]):
    r = json.loads(l)
    if r["path"].startswith("/token") and r["status"] == 200:
        print(r["basic"])' "$work/registry.log")" "$(printf alice:s3cret | base64)" \
  "the credentials of the auth file are sent to the token service"

tap_done
