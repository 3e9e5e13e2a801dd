#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# The rootfs store: import of every compression (recognised by content),
# instant re-import, names, ls/rm, store layout, crash leftovers, and the
# ownership an import keeps for root, a user with a subordinate id range and
# a user without one.
. "${HUTCH_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}/tests/lib/tap.sh"

work=$(hutch_test_tmpdir) || exit 1
chmod 0755 "$work"
# A private store: this script removes everything it imports.
export HUTCH_STORE=$work/store
bgpids=()

# Images may hold files owned by subordinate ids that only hutch can remove.
# shellcheck disable=SC2317 # run by the EXIT trap
cleanup() {
  local pid
  for pid in "${bgpids[@]}"; do kill "$pid" 2>/dev/null; done
  hutch_rootfs_rm_all
  rm -rf "$work"
}
trap cleanup EXIT

as_nobody() {
  setpriv --reuid=65534 --regid=65534 --clear-groups "$@"
}

count_images() {
  find "$1/images" -mindepth 1 -maxdepth 1 2>/dev/null | wc -l
}

# json_field JSON NAME FIELD: FIELD of the `ls --json` entry named NAME.
json_field() {
  python3 -c '
import json, sys
for i in json.loads(sys.argv[1]):
    if i["name"] == (sys.argv[2] or None):
        v = i[sys.argv[3]]
        print(str(v).lower() if isinstance(v, bool) else v)
        break
' "$1" "$2" "$3"
}

rootfs_of() { # NAME -> the unpacked tree's path
  "$HUTCH_BIN" rootfs ls --json | python3 -c '
import json, sys
for i in json.load(sys.stdin):
    if i["name"] == sys.argv[1]:
        print(i["rootfs"])
' "$1"
}

cat >"$work/mktar.py" <<'EOF'
# mktar.py OUT COMPRESSION VARIANT [NFILES]: a small rootfs tarball; prints
# the sum of its regular files' sizes.
import io, sys, tarfile
out, comp, variant = sys.argv[1], sys.argv[2], sys.argv[3]
nfiles = int(sys.argv[4]) if len(sys.argv) > 4 else 0
D, F, L, S = tarfile.DIRTYPE, tarfile.REGTYPE, tarfile.LNKTYPE, tarfile.SYMTYPE
entries = [
    ("./", D, 0o755, 0, 0, "", b""),
    ("./etc", D, 0o755, 0, 0, "", b""),
    ("./etc/hostname", F, 0o644, 0, 0, "", b"sandbox\n"),
    ("./etc/variant", F, 0o644, 0, 0, "", variant.encode() + b"\n"),
    ("./etc/hostname.link", L, 0o644, 0, 0, "./etc/hostname", b""),
    ("./usr", D, 0o755, 0, 0, "", b""),
    ("./usr/bin", D, 0o755, 0, 0, "", b""),
    ("./bin", S, 0o777, 0, 0, "usr/bin", b""),
    ("./usr/bin/suid-user", F, 0o4755, 1000, 1000, "", b"#!/bin/sh\necho user\n"),
    ("./usr/bin/suid-root", F, 0o4755, 0, 0, "", b"#!/bin/sh\necho root\n"),
    ("./usr/bin/sgid-staff", F, 0o2755, 0, 50, "", b"#!/bin/sh\necho staff\n"),
    ("./usr/share", D, 0o755, 0, 0, "", b""),
    ("./usr/share/owned-by-1000", F, 0o640, 1000, 1000, "", b"mine\n"),
    # A setgid directory: what the archive puts in it keeps the archive's
    # group, not the directory's.
    ("./var", D, 0o755, 0, 0, "", b""),
    ("./var/mail", D, 0o2775, 0, 8, "", b""),
    ("./var/mail/root-owned", F, 0o644, 0, 0, "", b"root\n"),
    ("./var/mail/sub", D, 0o755, 0, 0, "", b""),
    # A directory listed twice: the second entry's owner wins, as with tar.
    ("./var/spool", D, 0o755, 1000, 1000, "", b""),
    ("./var/spool", D, 0o755, 0, 0, "", b""),
    ("./home", D, 0o755, 0, 0, "", b""),
    ("./home/user", D, 0o700, 1000, 1000, "", b""),
    ("./home/user/.profile", F, 0o644, 1000, 1000, "", b"PS1='$ '\n"),
    ("./tmp", D, 0o1777, 0, 0, "", b""),
    ("./dev", D, 0o755, 0, 0, "", b""),
    ("./dev/null", tarfile.CHRTYPE, 0o666, 0, 0, "", b""),
    ("./dev/sda", tarfile.BLKTYPE, 0o660, 0, 6, "", b""),
    ("./dev/initctl", tarfile.FIFOTYPE, 0o600, 0, 0, "", b""),
]
if nfiles:
    entries.append(("./usr/lib", D, 0o755, 0, 0, "", b""))
    for i in range(nfiles):
        data = bytes((i * 7 + j * 13) & 0xFF for j in range(8192))
        entries.append(("./usr/lib/f%04d" % i, F, 0o644, 0, 0, "", data))
size = 0
mode = {"none": "w", "gz": "w:gz", "xz": "w:xz", "bz2": "w:bz2", "gz1": "w:gz"}[comp]
kw = {"compresslevel": 1} if comp == "gz1" else {}
with tarfile.open(out, mode, format=tarfile.PAX_FORMAT, **kw) as t:
    for name, typ, perm, uid, gid, link, data in entries:
        ti = tarfile.TarInfo(name)
        ti.type, ti.mode, ti.uid, ti.gid, ti.linkname, ti.mtime = typ, perm, uid, gid, link, 1700000000
        if typ in (tarfile.CHRTYPE, tarfile.BLKTYPE):
            ti.devmajor, ti.devminor = (1, 3) if typ == tarfile.CHRTYPE else (8, 0)
        if typ == F:
            ti.size = len(data)
            size += len(data)
            t.addfile(ti, io.BytesIO(data))
        else:
            t.addfile(ti)
print(size)
EOF

mktar() { # OUT COMPRESSION VARIANT [NFILES]
  python3 "$work/mktar.py" "$@"
}

sha_of() {
  echo "sha256:$(sha256sum <"$1" | cut -d' ' -f1)"
}

# ---- help and usage ---------------------------------------------------
for verb in "" import ls rm; do
  # shellcheck disable=SC2086
  tap_ok "hutch rootfs $verb --help exits 0" "$HUTCH_BIN" rootfs $verb --help
  tap_like "$tap_stdout" "Usage: hutch rootfs" "hutch rootfs $verb --help prints the usage"
done
tap_status 2 "hutch rootfs without a command is a usage error" "$HUTCH_BIN" rootfs
tap_status 2 "an unknown rootfs command is a usage error" "$HUTCH_BIN" rootfs frobnicate
tap_status 2 "import without FILE is a usage error" "$HUTCH_BIN" rootfs import
tap_status 2 "an unknown option is a usage error" "$HUTCH_BIN" rootfs ls --bogus
tap_status 2 "an invalid image name is a usage error" "$HUTCH_BIN" rootfs import /dev/null --name ../etc

# ---- import of every compression ---------------------------------------
size=$(mktar "$work/plain.tar" none 1) || tap_check 1 "python3 builds the test tarballs"
mktar "$work/gz.tar.gz" gz 2 >/dev/null
mktar "$work/xz.tar.xz" xz 3 >/dev/null
mktar "$work/bz2.tar.bz2" bz2 4 >/dev/null
mktar "$work/zst.tar" none 5 >/dev/null && zstd -q --rm "$work/zst.tar" -o "$work/zst.tar.zst"
# gzip data under an xz name: the content decides.
mktar "$work/misnamed.tar.xz" gz1 6 >/dev/null

nnames=0
for pair in plain:plain.tar gz:gz.tar.gz xz:xz.tar.xz bz2:bz2.tar.bz2 zst:zst.tar.zst misnamed:misnamed.tar.xz; do
  name=${pair%%:*}
  file=$work/${pair#*:}
  if [ "$name" = zst ] && [ ! -f "$file" ]; then
    tap_skip "import a .tar.zst" "zstd is not installed"
    continue
  fi
  tap_ok "import ${file##*/} as $name" "$HUTCH_BIN" rootfs import "$file" --name "$name" && nnames=$((nnames + 1))
  tap_is "$tap_stdout" "$(sha_of "$file")" "$name: the digest printed is the sha256 of the file"
  root=$(rootfs_of "$name")
  tap_is "$(cat "$root/etc/hostname" 2>&1)" "sandbox" "$name: etc/hostname is unpacked"
done
tap_is "$(count_images "$HUTCH_STORE")" "$nnames" "each different archive makes one image"

# ---- the store layout ---------------------------------------------------
hex=$(sha_of "$work/plain.tar")
hex=${hex#sha256:}
entry=$HUTCH_STORE/images/sha256-$hex
tap_check "$([ -d "$entry/rootfs" ] && echo 0 || echo 1)" "the image lives in images/sha256-<hex>/rootfs"
tap_is "$(readlink "$HUTCH_STORE/names/plain")" "../images/sha256-$hex" "names/plain links to the image"
meta=$(python3 -c '
import json, sys
m = json.load(open(sys.argv[1]))
print(m["digest"], ",".join(m["names"]), m["size"], m["created"] > 1600000000, m["source"], sorted(m))
' "$entry/meta.json" 2>&1)
tap_like "$meta" "^sha256:$hex plain $size True $(realpath "$work/plain.tar") .*'ids_preserved'" \
  "meta.json records digest, names, size (regular file bytes), created, source, ids_preserved"
tap_is "$(stat -c %a "$HUTCH_STORE")" 700 "the store directory is private (0700)"
tap_is "$(stat -c %a "$entry/rootfs/tmp")" 1777 "modes are kept (tmp is 1777)"
tap_is "$(stat -c %Y "$entry/rootfs/etc/hostname")" 1700000000 "modification times are kept"
tap_is "$(stat -c %i "$entry/rootfs/etc/hostname")" "$(stat -c %i "$entry/rootfs/etc/hostname.link")" \
  "hard links inside the archive stay hard links"
tap_is "$(readlink "$entry/rootfs/bin")" "usr/bin" "symlinks are kept"

# Extended attributes are kept, except those that would steer the overlay.
if python3 -c 'import os, sys; open(sys.argv[1], "w").close(); os.setxattr(sys.argv[1], "user.t", b"1")' "$work/xattr-probe" 2>/dev/null; then
  python3 - "$work/xattr.tar" <<'EOF'
import io, sys, tarfile
with tarfile.open(sys.argv[1], "w", format=tarfile.PAX_FORMAT) as t:
    ti = tarfile.TarInfo("./f")
    ti.size, ti.mode = 2, 0o644
    ti.pax_headers = {"SCHILY.xattr.user.keep": "1", "SCHILY.xattr.user.overlay.opaque": "y",
                      "SCHILY.xattr.trusted.overlay.opaque": "y"}
    t.addfile(ti, io.BytesIO(b"x\n"))
EOF
  tap_ok "import a tarball with extended attributes" "$HUTCH_BIN" rootfs import "$work/xattr.tar" --name xattr
  tap_is "$(python3 -c 'import os, sys; print(" ".join(sorted(os.listxattr(sys.argv[1]))))' "$(rootfs_of xattr)/f" 2>&1)" \
    "user.keep" "user.* attributes are kept, user.overlay.* and trusted.* dropped"
  tap_ok "rm xattr" "$HUTCH_BIN" rootfs rm xattr
else
  tap_skip "extended attributes" "$work does not support user.* attributes"
fi

# ---- device nodes -------------------------------------------------------
tap_ok "rm plain, to import it afresh" "$HUTCH_BIN" rootfs rm plain
tap_ok "import the plain tarball afresh" "$HUTCH_BIN" rootfs import "$work/plain.tar" --name plain
tap_like "$tap_stderr" "left out 3 device nodes, fifos or sockets" "one notice counts the skipped device nodes and fifos"
root=$(rootfs_of plain)
tap_check "$([ ! -e "$root/dev/null" ] && [ ! -e "$root/dev/sda" ] && [ ! -e "$root/dev/initctl" ] && echo 0 || echo 1)" \
  "device nodes and fifos are not created"
tap_check "$([ -d "$root/dev" ] && echo 0 || echo 1)" "their directory is"

# ---- re-import ------------------------------------------------------------
before=$(count_images "$HUTCH_STORE")
start=$(date +%s%N)
HUTCH_DEBUG=1 tap_ok "re-import of the unchanged file succeeds" "$HUTCH_BIN" rootfs import "$work/plain.tar" --name plain
ms=$((($(date +%s%N) - start) / 1000000))
tap_is "$tap_stdout" "sha256:$hex" "re-import reuses the digest"
tap_like "$tap_stderr" "already in the store" "re-import says the image was already there"
tap_like "$tap_stderr" "\(index\)" "re-import of an unchanged file is answered by the stat index"
ms=$(hutch_best_ms "$ms" "$HUTCH_BIN" rootfs import "$work/plain.tar" --name plain)
tap_check "$((ms < 1000 ? 0 : 1))" "re-import is instant (best of three: ${ms} ms)"
tap_is "$(count_images "$HUTCH_STORE")" "$before" "re-import adds no image"

cp "$work/plain.tar" "$work/copy.tar"
HUTCH_DEBUG=1 tap_ok "import of a copy (same bytes, new inode) succeeds" "$HUTCH_BIN" rootfs import "$work/copy.tar" --name copy
tap_is "$tap_stdout" "sha256:$hex" "the copy has the same digest"
tap_unlike "$tap_stderr" "\(index\)" "the copy is not in the index"
tap_like "$tap_stderr" "already in the store" "the copy is found by its digest (its unpacked stage discarded)"
tap_is "$(count_images "$HUTCH_STORE")" "$before" "the copy adds no image"

tap_ok "import from a pipe" sh -c "cat '$work/plain.tar' | '$HUTCH_BIN' rootfs import /dev/stdin --name piped"
tap_is "$tap_stdout" "sha256:$hex" "a piped import has the file's digest"
tap_is "$(count_images "$HUTCH_STORE")" "$before" "a piped import of known bytes adds no image"
tap_check "$([ -z "$(ls -A "$HUTCH_STORE/tmp")" ] && echo 0 || echo 1)" "nothing is left in tmp/"

# A sparse member keeps its holes; a file with runs of zeros keeps its bytes.
mkdir "$work/sparse"
truncate -s 64M "$work/sparse/holey"
echo end >>"$work/sparse/holey"
head -c 65536 /dev/zero >"$work/sparse/zeros"
echo end >>"$work/sparse/zeros"
tar -C "$work/sparse" -cSf "$work/sparse.tar" holey zeros
tap_ok "import of a tarball with a sparse member" "$HUTCH_BIN" rootfs import "$work/sparse.tar" --name sparse
sparse_root=$HUTCH_STORE/images/sha256-$(sha_of "$work/sparse.tar" | sed 's/^sha256://')/rootfs
tap_check "$(cmp -s "$sparse_root/holey" "$work/sparse/holey" && cmp -s "$sparse_root/zeros" "$work/sparse/zeros" &&
  echo 0 || echo 1)" "sparse and zero-filled files have their bytes"
tap_check "$(($(du -k "$sparse_root/holey" | cut -f1) < 1024 ? 0 : 1))" "the sparse member's hole stays a hole"
tap_ok "remove the sparse image" "$HUTCH_BIN" rootfs rm sparse

# ---- ls ---------------------------------------------------------------
tap_ok "rootfs ls" "$HUTCH_BIN" rootfs ls
tap_like "$tap_stdout" "^NAME +DIGEST +SIZE +DATE" "ls prints a header"
tap_like "$tap_stdout" $'\n'"plain +${hex:0:12} " "ls shows the name and the short digest"
tap_ok "rootfs ls --json" "$HUTCH_BIN" rootfs ls --json
json=$tap_stdout
tap_is "$(json_field "$json" plain digest)" "sha256:$hex" "ls --json gives the full digest"
tap_is "$(json_field "$json" plain size)" "$size" "ls --json gives the size"
tap_is "$(json_field "$json" copy rootfs)" "$entry/rootfs" "ls --json gives the rootfs path"
tap_is "$(python3 -c 'import json,sys; print(len(json.loads(sys.argv[1])))' "$json")" $((nnames + 2)) \
  "ls --json lists one object per name"

# ---- names ------------------------------------------------------------
mktar "$work/plain2.tar" none 1b >/dev/null
tap_ok "import different bytes under a name in use" "$HUTCH_BIN" rootfs import "$work/plain2.tar" --name gz
tap_like "$tap_stderr" "the name gz moved" "moving a name away from its last image says so"
gzhex=$(sha_of "$work/gz.tar.gz")
tap_ok "ls after the move" "$HUTCH_BIN" rootfs ls
tap_like "$tap_stdout" "<none> +${gzhex:7:12}" "the image left without a name is listed as <none>"
tap_ok "an image is found by a 12-digit digest prefix" "$HUTCH_BIN" rootfs rm "${gzhex:7:12}"
tap_check "$([ ! -e "$HUTCH_STORE/images/sha256-${gzhex#sha256:}" ] && echo 0 || echo 1)" \
  "rm DIGEST removes the unnamed image"

tap_ok "rm one of three names" "$HUTCH_BIN" rootfs rm copy
tap_check "$([ -d "$entry" ] && [ ! -e "$HUTCH_STORE/names/copy" ] && echo 0 || echo 1)" \
  "the image stays while other names point at it"
tap_ok "rm the second name" "$HUTCH_BIN" rootfs rm piped
tap_ok "rm the last name" "$HUTCH_BIN" rootfs rm plain
tap_check "$([ ! -e "$entry" ] && echo 0 || echo 1)" "the image goes with its last name"
tap_status 125 "a missing image is a runtime error" "$HUTCH_BIN" rootfs rm plain
tap_like "$tap_stderr" "hutch rootfs import FILE --name NAME" "the error says how to import one"
tap_status 125 "a short or malformed digest is refused" "$HUTCH_BIN" rootfs rm sha256:abc
tap_ok "rm by full digest removes the image and its names" "$HUTCH_BIN" rootfs rm "$(sha_of "$work/xz.tar.xz")"
tap_check "$([ ! -e "$HUTCH_STORE/names/xz" ] && echo 0 || echo 1)" "the name went with it"
tap_status 125 "a file that is not a tarball is refused" "$HUTCH_BIN" rootfs import "$work/mktar.py"
tap_like "$tap_stderr" "not a tar archive" "and the error says why"

# ---- progress -----------------------------------------------------------
if command -v script >/dev/null; then
  mktar "$work/progress.tar" none progress 64 >/dev/null
  tap_ok "import on a terminal" script -qec "'$HUTCH_BIN' rootfs import '$work/progress.tar' --name progress" /dev/null
  tap_like "$tap_stdout" "importing progress.tar \[#+\] +100%" "a terminal gets a progress bar"
  tap_ok "import without a terminal" "$HUTCH_BIN" rootfs import "$work/progress.tar" --name progress
  tap_unlike "$tap_stderr" "%" "no progress bar when stderr is not a terminal"
else
  tap_skip "progress bar" "script(1) is not installed"
fi

# ---- crash leftovers ----------------------------------------------------
# An import killed halfway leaves no image, and the next import cleans up.
mktar "$work/slow.tar" none slow 400 >/dev/null
mkfifo "$work/fifo"
(
  head -c 1048576 "$work/slow.tar"
  exec sleep 60
) >"$work/fifo" &
writer=$!
bgpids+=("$writer")
"$HUTCH_BIN" rootfs import "$work/fifo" --name slow >/dev/null 2>&1 &
importer=$!
bgpids+=("$importer")
for _ in $(seq 100); do
  [ -n "$(find "$HUTCH_STORE/tmp" -mindepth 3 -name 'f0*' 2>/dev/null | head -1)" ] && break
  sleep 0.1
done
images_before=$(count_images "$HUTCH_STORE")
{
  kill -KILL "$importer"
  wait "$importer"
} 2>/dev/null
kill "$writer" 2>/dev/null
tap_check "$([ -n "$(ls -A "$HUTCH_STORE/tmp")" ] && echo 0 || echo 1)" "a killed import leaves its work in tmp/"
tap_is "$(count_images "$HUTCH_STORE")" "$images_before" "a killed import adds no image"
tap_check "$([ ! -e "$HUTCH_STORE/names/slow" ] && echo 0 || echo 1)" "a killed import sets no name"
mkdir "$HUTCH_STORE/tmp/busy0000000000000"
exec {lockfd}<"$HUTCH_STORE/tmp/busy0000000000000"
flock "$lockfd"
sleep 3
tap_ok "the next import succeeds" "$HUTCH_BIN" rootfs import "$work/plain.tar" --name plain
tap_is "$(ls -A "$HUTCH_STORE/tmp")" "busy0000000000000" "it removed the leftover and kept the directory in use"
exec {lockfd}<&-
rmdir "$HUTCH_STORE/tmp/busy0000000000000"

# ---- ownership ----------------------------------------------------------
user=$(id -un)
uid=$(id -u)
subid_base() { # FILE: the first range of this user, as idmap does
  awk -F: -v u="$user" -v id="$uid" '$1 == u || $1 == id { print $2; exit }' "$1" 2>/dev/null
}
if [ "$uid" -eq 0 ]; then
  idmode=root
elif [ -n "$(subid_base /etc/subuid)" ] && [ -n "$(subid_base /etc/subgid)" ] &&
  { [ -x /usr/bin/newuidmap ] || command -v newuidmap >/dev/null; }; then
  idmode=subordinate
else
  idmode=single
fi
tap_diag "id mapping of this run: $idmode"
root=$(rootfs_of plain)
json=$("$HUTCH_BIN" rootfs ls --json)
case $idmode in
root)
  tap_is "$(stat -c %u:%g "$root/usr/share/owned-by-1000")" "1000:1000" "root: uid/gid 1000 stay 1000"
  tap_is "$(stat -c %u:%a "$root/usr/bin/suid-user")" "1000:4755" "root: a setuid file owned by 1000 keeps its bit"
  tap_is "$(stat -c %g:%a "$root/usr/bin/sgid-staff")" "50:2755" "root: a setgid file keeps group and bit"
  tap_is "$(stat -c %g:%a "$root/var/mail")" "8:2775" "root: a setgid directory keeps group and bit"
  tap_is "$(stat -c %u:%g "$root/var/mail/root-owned") $(stat -c %g:%a "$root/var/mail/sub")" "0:0 0:755" \
    "root: a file and a directory of 0:0 in it stay 0:0, without the directory's setgid"
  tap_is "$(stat -c %u:%g "$root/var/spool")" "0:0" "root: a directory listed twice has the last entry's owner"
  tap_is "$(json_field "$json" plain ids_preserved)" true "root: ids_preserved is recorded"
  ;;
subordinate)
  ubase=$(subid_base /etc/subuid)
  gbase=$(subid_base /etc/subgid)
  tap_is "$(stat -c %u:%g "$root/usr/share/owned-by-1000")" "$((ubase + 999)):$((gbase + 999))" \
    "subordinate range: uid/gid 1000 become base+999 on the host"
  tap_is "$(stat -c %u:%a "$root/usr/bin/suid-user")" "$((ubase + 999)):4755" \
    "subordinate range: a setuid file owned by 1000 keeps its bit"
  tap_is "$(stat -c %u:%a "$root/usr/bin/suid-root")" "$uid:4755" "subordinate range: root inside is the user"
  tap_is "$(stat -c %g:%a "$root/var/mail")" "$((gbase + 7)):2775" "subordinate range: a setgid directory keeps its bit"
  tap_is "$(stat -c %g "$root/var/mail/root-owned") $(stat -c %g:%a "$root/var/mail/sub")" \
    "$(id -g) $(id -g):755" "subordinate range: 0:0 in it stays root's group, without the directory's setgid"
  tap_is "$(stat -c %u:%g "$root/var/spool")" "$uid:$(id -g)" \
    "subordinate range: a directory listed twice has the last entry's owner"
  tap_is "$(json_field "$json" plain ids_preserved)" true "subordinate range: ids_preserved is recorded"
  ;;
single)
  tap_skip "ownership with a subordinate range" "$user has no subordinate id range"
  ;;
esac

# The single-id mapping: a user without a range.  As root, nobody is one;
# as a user without a range, this run is one.
single_check() { # LABEL RUNNER... (runs hutch as the user without a range)
  local label=$1
  shift
  mktar "$work/single.tar" none single >/dev/null
  chmod 0644 "$work/single.tar"
  if ! "$@" test -r "$work/single.tar"; then
    tap_skip "$label: single-id mapping" "$work is not readable for that user"
    return
  fi
  tap_ok "$label: import with a single-id mapping" "$@" "$single_bin" rootfs import "$work/single.tar" --name single
  tap_like "$tap_stderr" "single-id mapping.*setuid/setgid bits were dropped.*usermod --add-subuids 100000-165535 --add-subgids 100000-165535" \
    "$label: one notice says what was lost and how to get a range"
  tap_is "$(printf '%s\n' "$tap_stderr" | grep -c 'single-id mapping')" 1 "$label: the notice is printed once"
  local sroot
  sroot=$("$@" "$single_bin" rootfs ls --json | python3 -c '
import json, sys
print([i for i in json.load(sys.stdin) if i["name"] == "single"][0]["rootfs"])')
  tap_is "$(stat -c %u:%a "$sroot/usr/bin/suid-user")" "$single_uid:755" "$label: a setuid file owned by 1000 loses its bit"
  tap_is "$(stat -c %u:%a "$sroot/usr/bin/suid-root")" "$single_uid:4755" "$label: a setuid-root file keeps its bit"
  tap_is "$(stat -c %u "$sroot/usr/share/owned-by-1000")" "$single_uid" "$label: owners collapse to the user"
  tap_like "$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["ids_preserved"])' "${sroot%/rootfs}/meta.json")" \
    False "$label: meta.json records ids_preserved false"
  tap_ok "$label: rm works without a range" "$@" "$single_bin" rootfs rm single
  tap_check "$([ ! -e "$sroot" ] && echo 0 || echo 1)" "$label: the image is gone"
}
if [ "$idmode" = single ]; then
  single_bin=$HUTCH_BIN
  single_uid=$uid
  single_check "no range" env
elif [ "$uid" -eq 0 ] && id nobody >/dev/null 2>&1 && command -v setpriv >/dev/null &&
  ! grep -qE '^(nobody|65534):' /etc/subuid 2>/dev/null; then
  mkdir -p "$work/nobody"
  hutch_copy_bin "$work/nobody/hutch"
  chmod 0755 "$work/nobody" "$work/nobody/hutch"
  nobody_store=$work/nobody/store
  mkdir "$nobody_store"
  chown 65534:65534 "$nobody_store"
  single_bin=$work/nobody/hutch
  single_uid=65534
  if as_nobody true 2>/dev/null; then
    single_check "nobody" as_nobody env HUTCH_STORE="$nobody_store"
  else
    tap_skip "single-id mapping" "cannot run commands as nobody"
  fi
else
  tap_skip "single-id mapping" "this run has a subordinate range"
fi

tap_done
