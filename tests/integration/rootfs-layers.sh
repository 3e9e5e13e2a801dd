#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# An image's layers are bounded and fetched once: an image of more than 127
# layers (a 1,000-layer one made of one small blob, and 128) is refused
# before anything is unpacked or downloaded, in each format hutch imports
# (OCI layout and archive, `docker save`, dir: copy) and from a registry;
# 127 are imported; a layer that a manifest names twice is downloaded once
# and applied at each of its places (a whiteout between them does not undo
# the second); a registry's manifest must give each blob's size, which
# bounds its download.
. "${HUTCH_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}/tests/lib/tap.sh"

work=$(hutch_test_tmpdir) || exit 1
chmod 0755 "$work"
export HUTCH_STORE=$work/store
regpid=

# shellcheck disable=SC2317 # run by the EXIT trap
cleanup() {
  local s
  [ -n "$regpid" ] && kill "$regpid" 2>/dev/null
  for s in "$work"/store*; do
    [ -d "$s" ] && HUTCH_STORE=$s hutch_rootfs_rm_all
  done
  rm -rf "$work"
}
trap cleanup EXIT

cat >"$work/mklayers.py" <<'EOF'
# mklayers.py OUT: images of many layers in every format hutch imports, and
# the blobs of a mock registry (OUT/blobs); prints their digests as JSON.
import hashlib, io, json, os, sys, tarfile

out = sys.argv[1]
blobs_dir = os.path.join(out, "blobs")
os.makedirs(blobs_dir, exist_ok=True)


def sha(b):
    return hashlib.sha256(b).hexdigest()


def mktar(entries):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as t:
        for name, data in entries:
            ti = tarfile.TarInfo(name)
            ti.size, ti.mtime, ti.mode = len(data), 1700000000, 0o644
            t.addfile(ti, io.BytesIO(data))
    return buf.getvalue()


def blob(data):
    h = sha(data)
    with open(os.path.join(blobs_dir, h), "wb") as f:
        f.write(data)
    return h


LT = "application/vnd.oci.image.layer.v1.tar"
MT = "application/vnd.oci.image.manifest.v1+json"


def image(layers, name):
    """layers: raw tars, bottom first (repeats allowed) -> config, manifest
    (an image of its own for each name)."""
    cfg = json.dumps({"architecture": "amd64", "os": "linux", "config": {"Labels": {"test": name}},
                      "rootfs": {"type": "layers", "diff_ids": ["sha256:" + sha(l) for l in layers]}}).encode()
    man = json.dumps({"schemaVersion": 2, "mediaType": MT,
                      "config": {"mediaType": "application/vnd.oci.image.config.v1+json",
                                 "digest": "sha256:" + blob(cfg), "size": len(cfg)},
                      "layers": [{"mediaType": LT, "digest": "sha256:" + blob(l), "size": len(l)}
                                 for l in layers]}).encode()
    return cfg, man


def write(path, data):
    with open(path, "wb") as f:
        f.write(data)


def oci_layout(name, layers):
    cfg, man = image(layers, name)
    lay = os.path.join(out, name)
    os.makedirs(os.path.join(lay, "blobs", "sha256"))
    for data in [cfg, man] + layers:
        write(os.path.join(lay, "blobs", "sha256", sha(data)), data)
    write(os.path.join(lay, "oci-layout"), b'{"imageLayoutVersion": "1.0.0"}')
    write(os.path.join(lay, "index.json"), json.dumps({"schemaVersion": 2, "manifests": [
        {"mediaType": MT, "digest": "sha256:" + sha(man), "size": len(man)}]}).encode())
    with tarfile.open(lay + ".tar", "w") as t:
        for n in sorted(os.listdir(lay)):
            t.add(os.path.join(lay, n), arcname=n)
    return "sha256:" + blob(man)


def docker_save(name, layers):
    cfg, _ = image(layers, name)
    with tarfile.open(os.path.join(out, name + ".tar"), "w") as t:
        def add(n, data):
            ti = tarfile.TarInfo(n)
            ti.size, ti.mtime = len(data), 1700000000
            t.addfile(ti, io.BytesIO(data))
        names = []
        for l in layers:
            n = sha(l) + "/layer.tar"
            if n not in names:
                add(n, l)
            names.append(n)
        add(sha(cfg) + ".json", cfg)
        add("manifest.json", json.dumps([{"Config": sha(cfg) + ".json", "RepoTags": ["test/" + name + ":v1"],
                                          "Layers": names}]).encode())


def dir_copy(name, layers):
    cfg, man = image(layers, name)
    d = os.path.join(out, name)
    os.makedirs(d)
    for data in [cfg] + layers:
        write(os.path.join(d, sha(data)), data)
    write(os.path.join(d, "manifest.json"), man)
    write(os.path.join(d, "version"), b"Directory Transport Version: 1.1\n")


# A layer of 256 KiB (the size of the archive the attack used), named 1,000 times.
big = mktar([("pad", b"\0" * (250 * 1024))])
small = mktar([("one", b"1\n")])
summary = {}
summary["deep"] = oci_layout("deep", [big] * 1000)
docker_save("deep-docker", [big] * 1000)
dir_copy("deep-dir", [big] * 1000)
oci_layout("over", [small] * 128)
summary["max"] = oci_layout("max", [small] * 127)
# f made by A, whited out by B, made again by A: both A are applied.
a = mktar([("f", b"from A\n")])
b = mktar([(".wh.f", b""), ("g", b"from B\n")])
summary["repeat"] = oci_layout("repeat", [a, b, a])
summary["a"], summary["b"] = "sha256:" + sha(a), "sha256:" + sha(b)
summary["big"] = "sha256:" + sha(big)
# Descriptors that do not bound their download: a config of no size, one
# larger than a document may be, a layer of no size.
for name, edit in [("nosize", lambda m: m["config"].pop("size")),
                   ("bigcfg", lambda m: m["config"].update(size=100 << 20)),
                   ("nolayersize", lambda m: m["layers"][0].pop("size"))]:
    m = json.loads(image([small], name)[1])
    edit(m)
    summary[name] = "sha256:" + blob(json.dumps(m).encode())
# A config whose Env (3 MB, in a document of less than 4 MiB) makes the
# image's meta.json larger than the store reads back.
cfg = json.dumps({"architecture": "amd64", "os": "linux",
                  "config": {"Env": ["V%d=%s" % (i, "x" * 100000) for i in range(30)]},
                  "rootfs": {"type": "layers", "diff_ids": ["sha256:" + sha(small)]}}).encode()
man = json.dumps({"schemaVersion": 2, "mediaType": MT,
                  "config": {"mediaType": "application/vnd.oci.image.config.v1+json",
                             "digest": "sha256:" + blob(cfg), "size": len(cfg)},
                  "layers": [{"mediaType": LT, "digest": "sha256:" + blob(small), "size": len(small)}]}).encode()
lay = os.path.join(out, "bigenv")
os.makedirs(os.path.join(lay, "blobs", "sha256"))
for data in [cfg, man, small]:
    write(os.path.join(lay, "blobs", "sha256", sha(data)), data)
write(os.path.join(lay, "oci-layout"), b'{"imageLayoutVersion": "1.0.0"}')
write(os.path.join(lay, "index.json"), json.dumps({"schemaVersion": 2, "manifests": [
    {"mediaType": MT, "digest": "sha256:" + sha(man), "size": len(man)}]}).encode())
json.dump(summary, sys.stdout)
print()
EOF

summary=$(python3 "$work/mklayers.py" "$work/img") || tap_skip_all "python3 could not build the test images"
json_get() { python3 -c 'import json, sys; print(json.loads(sys.argv[1])[sys.argv[2]])' "$summary" "$1"; }
store_files() { find "$HUTCH_STORE" -mindepth 2 -not -path "$HUTCH_STORE/downloads*" 2>/dev/null | sort; }
tap_diag "the 1,000-layer OCI archive: $(stat -c %s "$work/img/deep.tar") bytes"

# refused LABEL FILE: the import fails at once, naming the count and the
# limit, and leaves the store as it was.
refused() {
  local label=$1 file=$2 n=${3:-1000} before
  before=$(store_files)
  tap_status 125 "$label: an image of $n layers is refused" "$HUTCH_BIN" rootfs import "$file" --name "deep"
  tap_like "$tap_stderr" "$n layers.*at most 127" "$label: the error names its layers and the limit"
  tap_is "$(store_files)" "$before" "$label: nothing was unpacked or left in the store"
}
refused "OCI layout" "$work/img/deep"
refused "OCI archive" "$work/img/deep.tar"
refused "docker save" "$work/img/deep-docker.tar"
refused "dir: copy" "$work/img/deep-dir"
refused "OCI layout" "$work/img/over" 128
tap_ok "an image of 127 layers is imported" "$HUTCH_BIN" rootfs import "$work/img/max" --name max
tap_is "$tap_stdout" "$(json_get max)" "keyed by its manifest"

before=$(store_files)
tap_status 125 "an image whose Env would make its meta.json pass 1 MiB is refused" "$HUTCH_BIN" rootfs import \
  "$work/img/bigenv" --name bigenv
tap_like "$tap_stderr" "meta.json.*more than 1 MiB" "the error says why"
tap_is "$(store_files)" "$before" "and no unreadable entry is left in the store"

tap_ok "an image that names a layer twice, a whiteout between" "$HUTCH_BIN" rootfs import "$work/img/repeat" \
  --name repeat
root=$(hutch_rootfs_of repeat)
tap_is "$(cat "$root/f" 2>&1)" "from A" "the layer is applied again at its second place"
tap_is "$(cat "$root/g" 2>&1)" "from B" "with the layer between them"

# ---- from a registry ---------------------------------------------------------
cat >"$work/registry.json" <<JSON
{"blobs": "$work/img/blobs",
 "repos": {"test/deep": {"tags": {"v1": "$(json_get deep)"}},
           "test/repeat": {"tags": {"v1": "$(json_get repeat)"}},
           "test/nosize": {"tags": {"v1": "$(json_get nosize)"}},
           "test/bigcfg": {"tags": {"v1": "$(json_get bigcfg)"}},
           "test/nolayersize": {"tags": {"v1": "$(json_get nolayersize)"}}}}
JSON
python3 "$HUTCH_SRCDIR/tests/lib/mock-registry.py" "$work/registry.json" "$work/port" "$work/registry.log" \
  2>"$work/registry.err" &
regpid=$!
for _ in $(seq 100); do
  [ -s "$work/port" ] && break
  sleep 0.1
done
port=$(cat "$work/port" 2>/dev/null)
[ -n "$port" ] || tap_skip_all "the mock registry did not start"
reg=127.0.0.1:$port
# A store of its own: the layout imported above is the same image.
export HUTCH_STORE=$work/store-pull
gets() { # PATH-PREFIX: how many successful GETs of it the registry answered
  python3 -c '
import json, sys
print(sum(1 for l in open(sys.argv[1]) for r in [json.loads(l)]
          if r["method"] == "GET" and r["status"] == 200 and r["path"].startswith(sys.argv[2])))' \
    "$work/registry.log" "$1"
}

before=$(store_files)
: >"$work/registry.log"
tap_status 125 "a pull of 1,000 layers is refused" "$HUTCH_BIN" rootfs pull "docker://$reg/test/deep:v1" --name deep
tap_like "$tap_stderr" "1000 layers.*at most 127" "the error names its layers and the limit"
tap_is "$(gets /v2/test/deep/blobs/)" 0 "after the manifest, before any blob is downloaded"
tap_is "$(store_files)" "$before" "the store is as it was"

: >"$work/registry.log"
tap_ok "pull an image that names a layer twice" "$HUTCH_BIN" rootfs pull "docker://$reg/test/repeat:v1" --name rrepeat
tap_is "$(gets "/v2/test/repeat/blobs/$(json_get a)")" 1 "the repeated layer is downloaded once"
tap_is "$(gets /v2/test/repeat/blobs/)" 3 "three blobs in all: the config and two layers"
root=$(hutch_rootfs_of rrepeat)
tap_is "$(cat "$root/f" 2>&1)" "from A" "and applied at both of its places"


# Every download is bounded by its descriptor's size, which must be there.
for r in "nosize:the config no size" "bigcfg:the config 104857600 bytes, more than 4194304" \
  "nolayersize:layer 1 of 1 no size"; do
  : >"$work/registry.log"
  tap_status 125 "a manifest that gives ${r#*:} is refused" "$HUTCH_BIN" rootfs pull "docker://$reg/test/${r%%:*}:v1" \
    --name "${r%%:*}"
  tap_like "$tap_stderr" "${r#*:}" "${r%%:*}: the error says why"
  tap_is "$(gets "/v2/test/${r%%:*}/blobs/")" 0 "${r%%:*}: no blob is downloaded"
done

tap_done
