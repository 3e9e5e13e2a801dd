#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Archives whose entries try to land outside the image are refused whole:
# the host is unchanged (a canary outside the store, /etc/hostname), no file
# appears anywhere outside the store, and the store holds no half image.
. "${HUTCH_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}/tests/lib/tap.sh"

work=$(hutch_test_tmpdir) || exit 1
export HUTCH_STORE=$work/store

# shellcheck disable=SC2317 # run by the EXIT trap
cleanup() {
  hutch_rootfs_rm_all
  rm -rf "$work"
}
trap cleanup EXIT

canary=$work/canary
mkdir -p "$canary/dir"
echo original >"$canary/file"
echo original >"$canary/dir/file"

cat >"$work/mkhostile.py" <<'EOF'
# mkhostile.py OUT CANARY CASE: a tarball that tries to escape towards CANARY.
import io, sys, tarfile
out, canary, case = sys.argv[1:4]
F, D, L, S = tarfile.REGTYPE, tarfile.DIRTYPE, tarfile.LNKTYPE, tarfile.SYMTYPE
up = "../" * 24  # enough to reach / from any store
cases = {
    # a plain "../" entry, and one hidden behind a directory
    "dotdot": [("etc", D, ""), ("etc/ok", F, ""), ("../escaped", F, "")],
    "dotdot-inner": [("a", D, ""), ("a/../../escaped", F, "")],
    "dotdot-to-canary": [(up + canary[1:] + "/file", F, "")],
    # absolute paths
    "absolute": [(canary + "/absolute", F, "")],
    "absolute-overwrite": [(canary + "/file", F, "")],
    # a symlink to outside, then a file written through it
    "symlink-write": [("link", S, canary), ("link/pwned", F, "")],
    "symlink-overwrite-through": [("link", S, canary + "/dir"), ("link/file", F, "")],
    "symlink-relative": [("link", S, up + canary[1:]), ("link/pwned", F, "")],
    # a chain of symlinks, the last one pointing outside
    "symlink-chain": [("a", S, "b"), ("b", S, "c"), ("c", S, up + canary[1:]), ("a/pwned", F, "")],
    # a directory replaced by a symlink, then written into
    "dir-then-symlink": [("d", D, ""), ("d", S, canary), ("d/pwned", F, "")],
    # a symlink inside directories already written into, and one whose
    # target does not exist yet, written through with new directories
    "symlink-deep": [("a", D, ""), ("a/b", D, ""), ("a/b/ok", F, ""), ("a/b/s", S, canary), ("a/b/s/pwned", F, "")],
    "symlink-new-dirs": [("s", S, canary + "/new"), ("s/x/y/pwned", F, "")],
    # a symlink to a directory of the image itself: inside the tree, but
    # an archive that writes through symlinks is refused all the same
    "symlink-inside": [("etc", D, ""), ("s", S, "etc"), ("s/pwned", F, "")],
    # hard links to files outside, then data written through them
    "hardlink-abs": [("h", L, "/etc/hostname")],
    "hardlink-abs-write": [("h", L, canary + "/file"), ("h", F, "")],
    "hardlink-dotdot": [("h", L, up + "etc/hostname")],
    "hardlink-via-symlink": [("s", S, "/etc"), ("h", L, "s/hostname")],
    "hardlink-via-symlink-canary": [("s", S, canary), ("h", L, "s/file"), ("h", F, "")],
    # a device node whose path escapes is refused too, not just skipped
    "device-dotdot": [("../null", tarfile.CHRTYPE, "")],
}
with tarfile.open(out, "w", format=tarfile.PAX_FORMAT) as t:
    for name, typ, link in cases[case]:
        ti = tarfile.TarInfo(name)
        ti.type, ti.linkname, ti.mode, ti.mtime = typ, link, 0o755 if typ == D else 0o644, 1700000000
        if typ == F:
            data = b"pwned\n"
            ti.size = len(data)
            t.addfile(ti, io.BytesIO(data))
        else:
            t.addfile(ti)
EOF

# What the host looks like outside the store.
snapshot() {
  {
    find "$work" -path "$HUTCH_STORE" -prune -o -print0 | sort -z | xargs -0 stat -c '%n %s %h %Y %a' 2>&1
    stat -c '%n %s %h %Y' /etc/hostname
    sha256sum "$canary/file" "$canary/dir/file" /etc/hostname
    find "${TMPDIR:-/tmp}" -maxdepth 1 -name 'escaped*' 2>/dev/null
  } 2>&1
}

# The store after a refused import: its directories, and nothing in them.
store_residue() {
  find "$HUTCH_STORE" -mindepth 2 2>/dev/null
}

"$HUTCH_BIN" rootfs ls >/dev/null 2>&1 # creates the store
cases=(dotdot dotdot-inner dotdot-to-canary absolute absolute-overwrite symlink-write symlink-overwrite-through
  symlink-relative symlink-chain dir-then-symlink symlink-deep symlink-new-dirs symlink-inside hardlink-abs hardlink-abs-write hardlink-dotdot hardlink-via-symlink
  hardlink-via-symlink-canary device-dotdot)
for c in "${cases[@]}"; do
  tar=$work/$c.tar
  if ! python3 "$work/mkhostile.py" "$tar" "$canary" "$c"; then
    tap_check 1 "$c: build the tarball"
    continue
  fi
  before=$(snapshot)
  tap_status 125 "$c: the import is refused" "$HUTCH_BIN" rootfs import "$tar" --name "$c"
  tap_like "$tap_stderr" "entry \"[^\"]+\"" "$c: the error names the entry"
  tap_is "$(snapshot)" "$before" "$c: nothing outside the store changed"
  tap_is "$(store_residue)" "" "$c: the store holds no image, name or leftover"
done
tap_is "$(cat "$canary/file")" original "the canary file is untouched"

# A symlink whose target is outside is fine as long as nothing is written
# through it; replacing it with a file replaces the link, not its target.
python3 - "$work/benign.tar" "$canary" <<'EOF'
import io, sys, tarfile
out, canary = sys.argv[1:3]
with tarfile.open(out, "w", format=tarfile.PAX_FORMAT) as t:
    for name, typ, link, data in [
        ("etc", tarfile.DIRTYPE, "", None),
        ("etc/abs-link", tarfile.SYMTYPE, canary + "/file", None),
        ("etc/rel-link", tarfile.SYMTYPE, "../../../../../../../.." + canary + "/file", None),
        ("etc/replaced", tarfile.SYMTYPE, canary + "/file", None),
        ("etc/replaced", tarfile.REGTYPE, "", b"replaced\n"),
    ]:
        ti = tarfile.TarInfo(name)
        ti.type, ti.linkname, ti.mode = typ, link, 0o755 if typ == tarfile.DIRTYPE else 0o644
        if data is None:
            t.addfile(ti)
        else:
            ti.size = len(data)
            t.addfile(ti, io.BytesIO(data))
EOF
before=$(snapshot)
tap_ok "symlinks pointing outside are imported" "$HUTCH_BIN" rootfs import "$work/benign.tar" --name benign
tap_is "$(snapshot)" "$before" "importing them changed nothing outside the store"
root=$("$HUTCH_BIN" rootfs ls --json | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["rootfs"])')
tap_is "$(readlink "$root/etc/abs-link")" "$canary/file" "an absolute symlink is kept as it is"
tap_check "$([ -f "$root/etc/replaced" ] && [ ! -L "$root/etc/replaced" ] && echo 0 || echo 1)" \
  "a file replaces an earlier symlink of the same name"
tap_is "$(cat "$canary/file")" original "the symlink's target outside is untouched"
tap_ok "the store still works: rm" "$HUTCH_BIN" rootfs rm benign
tap_is "$(store_residue)" "" "the store is empty again"


# ---- expansion: [limits] image_size and image_entries ----
# A 3 MB gzip of zeros that unpacks to 3 GiB, and archives of many small
# entries: refused while unpacking, with the policy's key named, and the
# store left as it was (no stage, no half image).
small_policy() { # small_policy FILE LINES...: the test policy with these [limits] lines
  local out=$1
  shift
  sed "s|^seccomp = .*|seccomp = $(dirname "$HUTCH_POLICY")/seccomp.json|" "$HUTCH_POLICY" >"$out"
  printf '%s\n' "$@" | python3 -c '
import sys
src, extra = open(sys.argv[1]).read(), sys.stdin.read().splitlines()
keys = {l.split("=")[0].strip() for l in extra}
lines = [l for l in src.splitlines() if l.split("=")[0].strip() not in keys]
i = lines.index("[limits]")
open(sys.argv[1], "w").write("\n".join(lines[:i + 1] + extra + lines[i + 1:]) + "\n")' "$out"
}
small_policy "$work/small.policy" "image_size = 100M" "image_entries = 1000"
python3 - "$work" <<'EOF'
import io, json, hashlib, os, struct, sys, tarfile, zlib
work = sys.argv[1]
# bomb.tar.gz: one member of 3 GiB of zeros, gzip -9 (about 3 MB).  After a
# full flush deflate starts afresh, so each 16 MiB of zeros compresses to
# the same bytes: compressed once, written 192 times (compressing all 3 GiB
# took 18 s), with the gzip header and trailer (CRC-32, size) made here.
n = 3 << 30
ti = tarfile.TarInfo("zeros")
ti.size, ti.mode, ti.mtime = n, 0o644, 1700000000
head, z, end = ti.tobuf(format=tarfile.GNU_FORMAT), bytes(1 << 24), bytes(1024)
c = zlib.compressobj(9, zlib.DEFLATED, -15)
with open(os.path.join(work, "bomb.tar.gz"), "wb") as out:
    out.write(b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x02\x03")
    out.write(c.compress(head) + c.flush(zlib.Z_FULL_FLUSH))
    block = c.compress(z) + c.flush(zlib.Z_FULL_FLUSH)
    crc = zlib.crc32(head)
    for _ in range(n >> 24):
        out.write(block)
        crc = zlib.crc32(z, crc)
    out.write(c.compress(end) + c.flush())
    out.write(struct.pack("<II", zlib.crc32(end, crc), (len(head) + n + len(end)) & 0xFFFFFFFF))
def mktar(names, data=b"x"):
    b = io.BytesIO()
    with tarfile.open(fileobj=b, mode="w") as t:
        for name in names:
            ti = tarfile.TarInfo(name)
            ti.size, ti.mtime = len(data), 1700000000
            t.addfile(ti, io.BytesIO(data))
    return b.getvalue()
# many.tar: 5000 one-byte files in one archive
with open(os.path.join(work, "many.tar"), "wb") as f:
    f.write(mktar(["f%05d" % i for i in range(5000)]))
# docker-many.tar: two layers of 600 entries each, under 1000 alone and
# over it together: the budget is the image's, not a layer's
sha = lambda b: hashlib.sha256(b).hexdigest()
layers = [mktar(["l%d-%04d" % (l, i) for i in range(600)]) for l in range(2)]
cfg = json.dumps({"architecture": "amd64", "os": "linux", "config": {},
                  "rootfs": {"type": "layers", "diff_ids": ["sha256:" + sha(l) for l in layers]}}).encode()
with tarfile.open(os.path.join(work, "docker-many.tar"), "w") as t:
    def add(name, data):
        ti = tarfile.TarInfo(name)
        ti.size, ti.mtime = len(data), 1700000000
        t.addfile(ti, io.BytesIO(data))
    names = []
    for l in layers:
        add(sha(l) + "/layer.tar", l)
        names.append(sha(l) + "/layer.tar")
    add(sha(cfg) + ".json", cfg)
    add("manifest.json", json.dumps([{"Config": sha(cfg) + ".json", "RepoTags": ["t/many:v1"],
                                      "Layers": names}]).encode())
EOF
tap_check $? "build the expanding and the crowded archives"
tap_like "$(stat -c %s "$work/bomb.tar.gz")" '^[0-9]{7}$' "the bomb is a few MB of gzip"
for c in bomb.tar.gz:image_size many.tar:image_entries docker-many.tar:image_entries; do
  f=${c%%:*} key=${c#*:}
  before=$(snapshot)
  started=$(date +%s)
  HUTCH_POLICY=$work/small.policy tap_status 125 "$f: the import is refused" \
    "$HUTCH_BIN" rootfs import "$work/$f" --name limited
  tap_like "$tap_stderr" "\\[limits\\] $key = .*small\\.policy" "$f: the error names [limits] $key and the policy"
  tap_check "$(($(date +%s) - started < 60 ? 0 : 1))" "$f: refused while unpacking, not after (under 60 s)"
  tap_is "$(store_residue)" "" "$f: the store holds no image, name or stage"
  tap_is "$(snapshot)" "$before" "$f: nothing outside the store changed"
done
tap_ok "many.tar imports under the default policy" "$HUTCH_BIN" rootfs import "$work/many.tar" --name many
tap_ok "and goes again" "$HUTCH_BIN" rootfs rm many

tap_done
