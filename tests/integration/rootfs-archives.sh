#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Image archives as the real tools write them, imported, and hutch's own
# (`rootfs export`) read by them: podman save
# (docker-archive, oci-archive, oci-dir, docker-dir; compressed and not;
# several images with -m) and skopeo copy (oci:, oci-archive:,
# docker-archive:, dir:; gzip and zstd layers; a layout of two images).
# Nothing here is built by hand but what Debian's tools cannot write, each
# made from a real archive by changing one thing: Docker's layouts (the
# classic one with <id>/layer.tar files, and Docker 25's OCI layout with
# containerd's name annotations and a manifest.json; the root run also
# starts Debian's dockerd, and imports what its `docker save` writes), and
# the hostile variants: a symlink out of the archive, a
# damaged layer, a blob symlinked out of a layout directory, and files that
# look like image archives without being one.
#
# The root run makes the archives with Debian's podman and skopeo, with a
# private storage (--root/--runroot under a temporary directory, vfs) in a
# mount namespace of their own, so the host's /var/lib/containers and
# /run/containers are left alone; it leaves them world-readable in
# $HUTCH_TEST_CACHE/archives for the rootless run, which imports them.
. "${HUTCH_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}/tests/lib/tap.sh"

base=$(hutch_rootfs_ensure busybox) || tap_skip_all "the busybox test rootfs is not available"
work=$(hutch_test_tmpdir) || exit 1
chmod 0755 "$work"
export HUTCH_STORE=$work/store
arch=$HUTCH_TEST_CACHE/archives

# shellcheck disable=SC2317 # run by the EXIT trap
cleanup() { # `rootfs rm`: a rootless store holds files of subordinate ids
  local s d
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

# ---- the archives (root run) -------------------------------------------

# In a mount namespace of its own: /var/lib and /run (where podman and
# skopeo keep state and caches even with --root and --runroot) become
# overlays whose upper layer is under DIR, so nothing of the host's changes.
private_state() { # DIR
  local d
  for d in /var/lib /run; do
    mkdir -p "$1/ov$d/upper" "$1/ov$d/work" || return 1
    mount -t overlay overlay -o "lowerdir=$d,upperdir=$1/ov$d/upper,workdir=$1/ov$d/work" "$d" || return 1
  done
}

docker_archives() { # PRIVATE-DIR (in prepare's mount namespace, cwd: the archives)
  local pr=$1 d=/usr/bin/docker pid i
  if [ ! -x /usr/sbin/dockerd ] || [ ! -x "$d" ]; then
    echo "Debian's docker.io is not installed (apt-get install docker.io)"
    return 1
  fi
  /usr/sbin/dockerd --iptables=false --ip6tables=false --bridge=none --storage-driver=vfs \
    --data-root "$pr/docker" --exec-root "$pr/dexec" --pidfile "$pr/docker.pid" -H "unix://$pr/docker.sock" \
    >"$pr/dockerd.log" 2>&1 </dev/null &
  pid=$!
  for i in $(seq 300); do
    "$d" -H "unix://$pr/docker.sock" version >/dev/null 2>&1 && break
    if ! kill -0 "$pid" 2>/dev/null; then
      echo "dockerd exited: $(grep -v 'level=info' "$pr/dockerd.log" | tail -1)"
      return 1
    fi
    sleep 0.1
  done
  local ok=0
  {
    "$d" -H "unix://$pr/docker.sock" version --format '{{.Server.Version}}' >docker-version &&
      "$d" -H "unix://$pr/docker.sock" load -q -i pd-multi.tar &&
      "$d" -H "unix://$pr/docker.sock" save -o dk-save.tar localhost/bbtest2:1 &&
      "$d" -H "unix://$pr/docker.sock" save -o dk-multi.tar localhost/bbtest:1 localhost/bbtest2:1
  } || ok=1
  kill "$pid"
  for i in $(seq 200); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  kill -9 "$pid" 2>/dev/null
  wait "$pid" 2>/dev/null
  # Its containerd and shims end with it; a mount of its own may be left.
  umount -R "$pr/docker" "$pr/dexec" 2>/dev/null
  [ $ok = 0 ] || echo "docker load/save failed; dockerd's log: $(tail -2 "$pr/dockerd.log")"
  return $ok
}

prepare() { # OUT BASE
  local out=$1 base=$2 pr
  # podman wants a runroot of at most 50 characters: not under a test TMPDIR
  pr=$(mktemp -d /tmp/hpod.XXXXXX) || return 1
  private_state "$pr" || return 1
  export HOME=$pr/home XDG_CONFIG_HOME=$pr/home/.config XDG_DATA_HOME=$pr/home/.local TMPDIR=$pr/tmp
  mkdir -p "$HOME" "$TMPDIR"
  pm() {
    podman --root "$pr/root" --runroot "$pr/run" --storage-driver vfs --cgroup-manager cgroupfs \
      --events-backend none --tmpdir "$pr/tmp" "$@"
  }
  set -e
  pm import -q "$base" localhost/bbtest:1 >/dev/null
  mkdir -p "$pr/ctx"
  echo second >"$pr/ctx/second"
  printf 'FROM localhost/bbtest:1\nCOPY second /etc/second\nENV SECOND=yes\nWORKDIR /etc\n' >"$pr/ctx/Containerfile"
  pm build -q --network none -t localhost/bbtest2:1 "$pr/ctx" >/dev/null
  cd "$out"
  pm save -q --format docker-archive -o pd-docker.tar localhost/bbtest2:1
  pm save -q --format oci-archive -o pd-oci.tar localhost/bbtest2:1
  pm save -q --uncompressed --format oci-archive -o pd-oci-unc.tar localhost/bbtest2:1
  pm save -q --format oci-dir -o pd-oci-dir localhost/bbtest2:1
  pm save -q --format docker-dir -o pd-docker-dir localhost/bbtest2:1
  pm save -q --compress --format docker-dir -o pd-docker-dir-gz localhost/bbtest2:1
  pm save -q -m --format docker-archive -o pd-multi.tar localhost/bbtest:1 localhost/bbtest2:1
  skopeo copy -q docker-archive:pd-docker.tar oci:sk-oci:two
  skopeo copy -q docker-archive:pd-multi.tar:localhost/bbtest:1 oci:sk-oci:one
  skopeo copy -q docker-archive:pd-docker.tar oci-archive:sk-oci.tar:two
  skopeo copy -q oci:sk-oci:two docker-archive:sk-docker.tar:localhost/bbtest2:1
  skopeo copy -q --dest-compress --dest-compress-format zstd docker-archive:pd-docker.tar oci:sk-zstd:two
  skopeo copy -q docker-archive:pd-docker.tar dir:sk-dir
  skopeo copy -q --dest-compress docker-archive:pd-docker.tar dir:sk-dir-gz
  gzip -c pd-docker.tar >pd-docker.tar.gz
  set +e
  # Docker's own archives: Debian's dockerd, started here with its data,
  # exec root and socket under $pr, no bridge and no iptables rules (this
  # mount namespace's /var/lib and /run are overlays), fed podman's archive
  # with `docker load`, then `docker save`.  Where it cannot run, the
  # reason is kept for the test to print.
  docker_archives "$pr" >"$pr/docker.log" 2>&1 || {
    grep -v '^$' "$pr/docker.log" | tail -3 | tr '\n' ' ' >docker-skip
    [ -s docker-skip ] || echo "dockerd did not start" >docker-skip
  }
  cd /
  umount /run /var/lib
  rm -rf "$pr"
}

# The hostile variants, each a real archive with one thing changed.
derive() { # OUT
  python3 - "$1" <<'EOF'
import io, json, os, shutil, sys, tarfile
out = sys.argv[1]
os.chdir(out)

def rewrite(src, dst, change):
    with tarfile.open(src) as t, tarfile.open(dst, "w", format=tarfile.PAX_FORMAT) as o:
        for m in t.getmembers():
            data = t.extractfile(m).read() if m.isfile() else None
            m, data = change(m, data)
            o.addfile(m, io.BytesIO(data) if data is not None else None)

save = json.load(tarfile.open("pd-docker.tar").extractfile("manifest.json"))
layer = save[0]["Layers"][-1]
links = [m.name for m in tarfile.open("pd-docker.tar").getmembers() if m.issym()]

# docker save's way of naming layers (<id>/layer.tar, a symlink podman
# writes) with the link aimed out of the archive.
def escape(m, data):
    if m.name == "manifest.json":
        s = json.loads(data)
        s[0]["Layers"] = [l for l in s[0]["Layers"]]
        s[0]["Layers"][-1] = links[-1]
        data = json.dumps(s).encode()
        m.size = len(data)
    if m.name == links[-1]:
        m.linkname = "../../../../../../../../etc/passwd"
    return m, data
rewrite("pd-docker.tar", "bad-link.tar", escape)

# The same, with <id>/layer.tar named and left pointing at the layer: fine.
def via_link(m, data):
    if m.name == "manifest.json":
        s = json.loads(data)
        targets = {os.path.normpath(os.path.join(os.path.dirname(l), tarfile.open("pd-docker.tar").getmember(l).linkname)): l for l in links}
        s[0]["Layers"] = [targets[l] for l in s[0]["Layers"]]
        data = json.dumps(s).encode()
        m.size = len(data)
    return m, data
rewrite("pd-docker.tar", "link-layers.tar", via_link)

# Docker before 25 (`docker save`'s classic layout): each layer a file
# <id>/layer.tar beside <id>/json and <id>/VERSION, no top-level <digest>.tar.
with tarfile.open("pd-docker.tar") as t, tarfile.open("docker-classic.tar", "w") as o:
    names = {m.name: m for m in t.getmembers()}
    real = {}
    for l in links:
        target = os.path.normpath(os.path.join(os.path.dirname(l), names[l].linkname))
        real[target] = l
    for m in t.getmembers():
        if m.name in real:
            continue
        if m.issym() and m.name in links:
            src = names[os.path.normpath(os.path.join(os.path.dirname(m.name), m.linkname))]
            ti = tarfile.TarInfo(m.name)
            ti.size, ti.mode = src.size, 0o644
            o.addfile(ti, t.extractfile(src))
            continue
        data = t.extractfile(m).read() if m.isfile() else None
        if m.name == "manifest.json":
            s = json.loads(data)
            s[0]["Layers"] = [real[l] for l in s[0]["Layers"]]
            data = json.dumps(s).encode()
            m.size = len(data)
        o.addfile(m, io.BytesIO(data) if data is not None else None)

# Docker 25 and later: an OCI layout (here podman's, uncompressed) with
# containerd's name annotations and a manifest.json naming blobs/sha256/.
def docker25(m, data):
    if m.name == "index.json":
        i = json.loads(data)
        i["manifests"][0]["annotations"] = {"io.containerd.image.name": "docker.io/library/bbtest2:1",
                                            "org.opencontainers.image.ref.name": "1"}
        data = json.dumps(i).encode()
        m.size = len(data)
    return m, data
rewrite("pd-oci-unc.tar", "docker25.tar", docker25)
with tarfile.open("pd-oci-unc.tar") as t:
    i = json.load(t.extractfile("index.json"))
    man = json.load(t.extractfile("blobs/sha256/" + i["manifests"][0]["digest"][7:]))
save = [{"Config": "blobs/sha256/" + man["config"]["digest"][7:], "RepoTags": ["bbtest2:1"],
         "Layers": ["blobs/sha256/" + l["digest"][7:] for l in man["layers"]]}]
with tarfile.open("docker25.tar", "a") as o:
    for n, d in (("manifest.json", json.dumps(save).encode()),
                 ("repositories", b'{"bbtest2":{"1":"x"}}')):
        ti = tarfile.TarInfo(n)
        ti.size = len(d)
        o.addfile(ti, io.BytesIO(d))

# A docker-archive unpacked into a directory (its <id>/layer.tar symlinks
# are followed inside the directory).
os.makedirs("pd-docker-unpacked")
with tarfile.open("pd-docker.tar") as t:
    t.extractall("pd-docker-unpacked")

# One byte of the last layer changed.
def damage(m, data):
    if m.name == layer:
        data = bytearray(data)
        data[600] ^= 0xFF
        data = bytes(data)
    return m, data
rewrite("pd-docker.tar", "bad-digest.tar", damage)

# An OCI layout directory whose layer blob is a symlink out of it, to a
# copy of the right bytes: only the layout's own files may be read.
shutil.copytree("pd-oci-dir", "bad-oci-dir", symlinks=True)
idx = json.load(open("bad-oci-dir/index.json"))
man = json.load(open("bad-oci-dir/blobs/sha256/" + idx["manifests"][0]["digest"][7:]))
blob = man["layers"][-1]["digest"][7:]
os.makedirs("outside", exist_ok=True)
shutil.move("bad-oci-dir/blobs/sha256/" + blob, "outside/" + blob)
os.symlink(os.path.join(os.environ["FINAL"], "outside", blob), "bad-oci-dir/blobs/sha256/" + blob)

# Things with an image archive's marks that no tool wrote: a root tree
# with a manifest.json of another kind, and an oci-layout without index.
def tree_with(name, extra):
    with tarfile.open(base_tar) as t, tarfile.open(name, "w") as o:
        for m in t.getmembers():
            o.addfile(m, t.extractfile(m) if m.isfile() else None)
        for n, d in extra.items():
            ti = tarfile.TarInfo(n)
            ti.size = len(d)
            o.addfile(ti, io.BytesIO(d))
base_tar = os.environ["BASE_TAR"]
tree_with("unknown-manifest.tar", {"./manifest.json": b'{"name": "my-app", "version": "1.0"}'})
tree_with("layout-only.tar", {"oci-layout": b'{"imageLayoutVersion": "1.0.0"}'})
EOF
}

if [ "$(id -u)" -eq 0 ]; then
  if ! command -v podman >/dev/null || ! command -v skopeo >/dev/null; then
    tap_skip_all "podman and skopeo are not installed (apt-get install podman skopeo)"
  fi
  new=$(mktemp -d "$HUTCH_TEST_CACHE/archives.XXXXXX") || exit 1
  if ! unshare -m --propagation private bash -c "$(declare -f private_state docker_archives prepare); prepare \"\$1\" \"\$2\"" _ "$new" "$base" \
    >"$work/prepare.log" 2>&1; then
    tap_diag "$(tail -5 "$work/prepare.log")"
    rm -rf "$new"
    tap_skip_all "podman or skopeo cannot run here (see above)"
  fi
  BASE_TAR=$base FINAL=$arch derive "$new" >>"$work/prepare.log" 2>&1
  tap_check $? "the hostile variants are made from the real archives"
  chmod -R a+rX "$new"
  rm -rf "$arch"
  mv "$new" "$arch"
  tap_is "$(cmp "$arch/bad-oci-dir/blobs/sha256/$(ls "$arch/outside")" "$arch/outside/"* 2>&1 && echo same)" same \
    "bad-oci-dir: its blob symlink leads to the right bytes (outside the layout)"
elif [ ! -f "$arch/pd-docker.tar" ]; then
  tap_skip_all "the archives are made by the root run (podman needs root here)"
fi

# ---- the reference trees ------------------------------------------------

rootfs_of() { hutch_rootfs_of "$1"; } # NAME -> the unpacked tree

listing() { # ROOT: every path with its type, mode, size, link target and owner (but the test's own files)
  (cd "$1" && find . \( -path ./etc/second -o -path ./etc/built \) -prune -o -printf '%P|%y|%m|%s|%l|%U|%G\n' | sort | md5sum)
}

tap_ok "import the busybox test rootfs (the tree podman imported)" "$HUTCH_BIN" rootfs import "$base" --name plain
want=$(listing "$(rootfs_of plain)")

check_image() { # LABEL NAME SECOND(yes|no)
  local label=$1 name=$2 second=$3 root
  root=$(rootfs_of "$name")
  tap_is "$(listing "$root")" "$want" "$label: the same tree as the rootfs podman imported"
  if [ "$second" = yes ]; then
    tap_is "$(cat "$root/etc/second" 2>&1)" second "$label: the second layer is applied over the first"
  else
    tap_check "$([ ! -e "$root/etc/second" ] && echo 0 || echo 1)" "$label: the one-layer image, not the other"
  fi
}

store_images() {
  find "$HUTCH_STORE/images" -mindepth 1 -maxdepth 1 2>/dev/null | wc -l
}

# ---- every format -------------------------------------------------------

n=0
for f in pd-docker.tar pd-oci.tar pd-oci-unc.tar pd-oci-dir pd-docker-dir pd-docker-dir-gz \
  sk-oci.tar sk-docker.tar sk-zstd sk-dir sk-dir-gz pd-docker.tar.gz link-layers.tar docker-classic.tar \
  docker25.tar pd-docker-unpacked; do
  n=$((n + 1))
  tap_ok "$f: imported" "$HUTCH_BIN" rootfs import "$arch/$f" --name "img$n"
  check_image "$f" "img$n" yes
done
tap_ok "pd-docker.tar (the issue's case): exec in the image" "$HUTCH_BIN" exec --rootfs img1 -- /bin/sh -c 'echo ok'
tap_is "$tap_stdout" ok "pd-docker.tar: /bin/sh ran"
tap_ok "the image's Env and WorkingDir apply" "$HUTCH_BIN" exec --rootfs img1 -- /bin/sh -c 'echo "$SECOND $PWD"'
tap_is "$tap_stdout" "yes /etc" "pd-docker.tar: ENV and WORKDIR of the Containerfile"
tap_like "$(cat "$HUTCH_STORE"/images/*/meta.json)" '"format":[[:space:]]*"dir"' "a dir: copy is recorded as such"

# ---- several images -----------------------------------------------------

for f in pd-multi.tar sk-oci; do
  tap_fails "$f: two images and no --image: refused" "$HUTCH_BIN" rootfs import "$arch/$f" --name multi
  tap_like "$tap_stderr" "2 images \\(((localhost/bbtest:1|one), (localhost/bbtest2:1|two)|two, one)\\)" \
    "$f: the error lists the names"
  tap_like "$tap_stderr" "--image" "$f: and says how to choose"
done
tap_ok "pd-multi.tar --image bbtest:1" "$HUTCH_BIN" rootfs import "$arch/pd-multi.tar" --image bbtest:1 --name m1
check_image "pd-multi.tar bbtest:1" m1 no
tap_ok "pd-multi.tar --image localhost/bbtest2:1" "$HUTCH_BIN" rootfs import "$arch/pd-multi.tar" \
  --image localhost/bbtest2:1 --name m2
check_image "pd-multi.tar bbtest2:1" m2 yes
tap_ok "sk-oci --image one" "$HUTCH_BIN" rootfs import "$arch/sk-oci" --image one --name s1
check_image "sk-oci one" s1 no
tap_ok "sk-oci --image two" "$HUTCH_BIN" rootfs import "$arch/sk-oci" --image two --name s2
check_image "sk-oci two" s2 yes
tap_ok "docker25.tar --image bbtest2:1 (containerd's docker.io/library/ name)" "$HUTCH_BIN" rootfs import \
  "$arch/docker25.tar" --image bbtest2:1 --name d25
check_image "docker25.tar bbtest2:1" d25 yes
tap_fails "--image of a name the archive lacks" "$HUTCH_BIN" rootfs import "$arch/pd-multi.tar" --image bbtest:3
tap_like "$tap_stderr" "no image bbtest:3 \\(it has: localhost/bbtest:1, localhost/bbtest2:1\\)" \
  "the error lists what it has"
tap_fails "--image with a plain tarball" "$HUTCH_BIN" rootfs import "$base" --image bbtest:1
tap_like "$tap_stderr" "plain tarball" "says the file is a plain tarball"

# ---- archives written by Docker itself ------------------------------------
# `docker save` of what `docker load` took from podman's archive (the root
# run's dockerd; see prepare).  Docker before 25 writes the classic layout
# only; 25 and later write the OCI layout with a manifest.json.
if [ -f "$arch/dk-save.tar" ]; then
  dv=$(cat "$arch/docker-version")
  members=$(tar -tf "$arch/dk-save.tar")
  tap_like "$members" "(^|
)[0-9a-f]{64}/layer.tar" "docker save (Docker $dv): its layers as <id>/layer.tar"
  tap_ok "docker save (Docker $dv): imported" "$HUTCH_BIN" rootfs import "$arch/dk-save.tar" --name dk1
  check_image "docker save (Docker $dv)" dk1 yes
  tap_ok "docker save: exec in the image" "$HUTCH_BIN" exec --rootfs dk1 -- /bin/sh -c 'echo "$SECOND $PWD"'
  tap_is "$tap_stdout" "yes /etc" "docker save: the config Docker wrote (ENV, WORKDIR)"
  tap_fails "docker save of two images, no --image: refused" "$HUTCH_BIN" rootfs import "$arch/dk-multi.tar" --name dkm
  tap_like "$tap_stderr" "2 images .*--image|--image" "the error says how to choose"
  tap_ok "docker save of two images --image localhost/bbtest:1" "$HUTCH_BIN" rootfs import "$arch/dk-multi.tar" \
    --image localhost/bbtest:1 --name dkm1
  check_image "docker save of two, bbtest:1" dkm1 no
  tap_ok "docker save of two images --image localhost/bbtest2:1" "$HUTCH_BIN" rootfs import "$arch/dk-multi.tar" \
    --image localhost/bbtest2:1 --name dkm2
  check_image "docker save of two, bbtest2:1" dkm2 yes
  if printf '%s\n' "$members" | grep -qx 'index.json'; then
    tap_ok "docker save (Docker $dv) is the OCI layout" true
  else
    tap_skip "docker save in the OCI layout" "Docker $dv writes the classic layout only (the OCI layout is Docker 25's: docker25.tar above)"
  fi
else
  tap_skip "archives written by Docker itself" "$(cat "$arch/docker-skip" 2>/dev/null || echo 'not made by the root run')"
fi

# ---- export --------------------------------------------------------------
# What hutch writes, read by skopeo and (root run) loaded by podman, and
# imported again to the same tree: of an imported image, and of a built one
# (a layer over it that deletes a file, merged into one layer).

in_podman_ns() { # CMD...: podman with a private storage, as in prepare
  local pr=$work/podman
  mkdir -p "$pr"
  unshare -m --propagation private bash -c "$(declare -f private_state)"'
    private_state "$0" || exit 1
    export HOME=$0/home TMPDIR=$0/tmp
    mkdir -p "$HOME" "$TMPDIR"
    "$@"' "$pr" "$@"
}

for fmt in oci-archive docker-archive; do
  out=$work/exp-$fmt.tar
  tap_ok "export img1 --format $fmt" "$HUTCH_BIN" rootfs export img1 --format "$fmt" "$out"
  tap_ok "$fmt: skopeo inspect reads it" skopeo inspect --raw "$fmt:$out"
  tap_ok "$fmt: skopeo inspect of the image" skopeo inspect "$fmt:$out"
  tap_like "$tap_stdout" '"SECOND=yes"' "$fmt: the image's Env is in its config"
  tap_ok "$fmt: imported again" "$HUTCH_BIN" rootfs import "$out" --name "rt-$fmt"
  check_image "$fmt round trip" "rt-$fmt" yes
  tap_ok "$fmt round trip: exec with the image's defaults" "$HUTCH_BIN" exec --rootfs "rt-$fmt" -- \
    /bin/sh -c 'echo "$SECOND $PWD"'
  tap_is "$tap_stdout" "yes /etc" "$fmt round trip: Env and WorkingDir kept"
  if [ "$(id -u)" -eq 0 ]; then
    tap_ok "$fmt: podman load" in_podman_ns podman --root "$work/podman/root" --runroot "/tmp/hpod-load-$$" \
      --storage-driver vfs --cgroup-manager cgroupfs --events-backend none load -i "$out"
    tap_like "$tap_stdout$tap_stderr" "Loaded image.*localhost/img1:latest" "$fmt: podman names it localhost/img1"
    rm -rf "/tmp/hpod-load-$$"
  fi
done

printf 'run rm /etc/second && echo built >/etc/built\n' >"$work/layer.recipe"
tap_ok "build a layer over img1 that deletes a file" "$HUTCH_BIN" rootfs build --from img1 \
  --recipe "$work/layer.recipe" --name built
tap_ok "export the built image" "$HUTCH_BIN" rootfs export built --format oci-archive "$work/built.tar"
tap_ok "import it again" "$HUTCH_BIN" rootfs import "$work/built.tar" --name built-rt
root=$(rootfs_of built-rt)
tap_is "$(cat "$root/etc/built" 2>&1)" built "the built layer's file is there"
tap_check "$([ ! -e "$root/etc/second" ] && echo 0 || echo 1)" "the file the layer deleted is not"
tap_is "$(tar tf "$work/built.tar" | grep -c '\.wh\.')" 0 "no whiteout is exported (the layers are merged)"
tap_is "$(listing "$root")" "$want" "the rest is the tree of img1"
# Extended attributes go along: a user.* one, and (root run) a file
# capability, as a rootfs tarball gives them to an image.
python3 - "$base" "$work/xattr.tar" <<'EOF'
import io, struct, sys, tarfile
cap = struct.pack("<IIIII", 0x02000001, 1 << 13, 0, 0, 0)  # v2, cap_net_raw permitted
with tarfile.open(sys.argv[1]) as t, tarfile.open(sys.argv[2], "w", format=tarfile.PAX_FORMAT) as o:
    for m in t.getmembers():
        o.addfile(m, t.extractfile(m) if m.isfile() else None)
    ti = tarfile.TarInfo("etc/with-xattrs")
    ti.size = 1
    ti.pax_headers = {"SCHILY.xattr.user.test": "hello", "SCHILY.xattr.security.capability": cap.decode("latin-1")}
    o.addfile(ti, io.BytesIO(b"x"))
EOF
xattrs_of() { # NAME: the extended attributes of its /etc/with-xattrs
  python3 -c 'import os, sys; p = sys.argv[1] + "/etc/with-xattrs"
print(" ".join("%s=%s" % (n, os.getxattr(p, n).hex()) for n in sorted(os.listxattr(p))))' "$(rootfs_of "$1")"
}
tap_ok "import a rootfs with extended attributes" "$HUTCH_BIN" rootfs import "$work/xattr.tar" --name xattrs
had=$(xattrs_of xattrs)
if [[ $had != *user.test=68656c6c6f* ]]; then
  tap_skip "extended attributes are exported" "the store's file system keeps no user.* attributes here"
else
  tap_ok "export it" "$HUTCH_BIN" rootfs export xattrs "$work/xattrs-oci.tar"
  tap_ok "import it again" "$HUTCH_BIN" rootfs import "$work/xattrs-oci.tar" --name xattrs-rt
  tap_is "$(xattrs_of xattrs-rt)" "$had" "the extended attributes came back ($had)"
  if [ "$(id -u)" -eq 0 ]; then
    tap_like "$had" "security.capability=" "root run: a file capability among them"
  fi
fi

tap_fails "export of an unknown image" "$HUTCH_BIN" rootfs export nosuch "$work/x.tar"
tap_check "$([ ! -e "$work/x.tar" ] && echo 0 || echo 1)" "leaves no file"
tap_status 2 "an unknown --format is a usage error" "$HUTCH_BIN" rootfs export img1 --format zip "$work/x.tar"

# ---- hostile and unknown ------------------------------------------------
# In a store of their own: an image whose config is in the store already
# is not applied again (its layers are the ones the config names).
export HUTCH_STORE=$work/store-hostile

refused() { # FILE PATTERN DESC
  local before
  before=$(store_images)
  tap_fails "$1: refused" "$HUTCH_BIN" rootfs import "$arch/$1" --name hostile
  tap_like "$tap_stderr" "$2" "$1: $3"
  tap_is "$(store_images)" "$before" "$1: no image was added"
  tap_is "$(rootfs_of hostile)" "" "$1: no name was given"
}
refused bad-link.tar "leads nowhere in the archive" "a layer symlink out of the archive is not followed"
refused bad-digest.tar "digest mismatch" "a changed layer fails its digest"
refused bad-oci-dir "leads nowhere in the layout" "a blob symlinked out of the layout directory is not read"
refused unknown-manifest.tar "it has manifest.json, as an image archive has.*nothing was unpacked" \
  "a tree with a foreign manifest.json is not unpacked as a tree"
refused layout-only.tar "image archive \\(it has oci-layout\\)" "an oci-layout without index.json"
# Where the marks come past what the first look sees: compressed with
# manifest.json last, and from a pipe.  Refused by the tree unpacker.
gzip -c "$arch/unknown-manifest.tar" >"$work/unknown-manifest.tar.gz"
before=$(store_images)
tap_fails "a compressed tree with manifest.json last: refused" "$HUTCH_BIN" rootfs import "$work/unknown-manifest.tar.gz"
tap_like "$tap_stderr" "an image archive's manifest.json at the top of the tarball; nothing was imported" \
  "the compressed one: the reason is given"
tap_fails "an image archive from a pipe: refused" sh -c "cat '$arch/pd-docker.tar' | '$HUTCH_BIN' rootfs import /dev/stdin"
tap_like "$tap_stderr" "an image archive's manifest.json at the top" "the pipe: the reason is given"
tap_is "$(store_images)" "$before" "neither added an image"
tap_is "$(ls "$HUTCH_STORE/tmp" 2>/dev/null)" "" "no stage is left behind"

# The policy's [limits] budget holds for a real archive too.
sed -e "s|^seccomp = .*|seccomp = $(dirname "$HUTCH_POLICY")/seccomp.json|" -e 's|^image_entries = .*|image_entries = 50|' \
  "$HUTCH_POLICY" >"$work/small.policy"
HUTCH_STORE=$work/store-small HUTCH_POLICY=$work/small.policy tap_fails \
  "pd-oci-unc.tar over image_entries = 50: refused" "$HUTCH_BIN" rootfs import "$arch/pd-oci-unc.tar" --name small
tap_like "$tap_stderr" "\\[limits\\] image_entries" "the error names [limits] image_entries"

tap_done
