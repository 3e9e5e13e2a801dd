#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# hutch snapshot: a live sandbox's writable layer becomes an image, a layer
# over the image it runs, without stopping it.  A sandbox made from it sees
# its files and deletions; a bind's files, /tmp and /dev/shm, and the
# /etc/hosts hutch wrote are not in it; a writer that never stops is caught
# at one moment (a = b or a = b + 1, never b > a); the sandbox goes on
# (or stays paused, when it was); the audit log records it.  Nothing inside
# reaches what init holds for hutch (/proc/1/fd).  The image holds no --env
# of the sandbox's; reset --to the snapshot and fork keep it.
. "$(dirname "$0")/../lib/tap.sh"

img=$(hutch_test_rootfs busybox) || tap_skip_all "busybox test rootfs unavailable"
tmp=$(hutch_test_tmpdir)
mkdir -p "$tmp/work"
tag="snaptest-$$"
made=()
cleanup() {
  local d
  for d in "${made[@]}"; do "$HUTCH_BIN" rootfs rm "$d" >/dev/null 2>&1; done
}
trap cleanup EXIT

json_field() { # JSON FIELD: a top-level member of a JSON object
  python3 -c 'import json, sys; v = json.loads(sys.argv[1]).get(sys.argv[2]); print("" if v is None else v)' "$1" "$2"
}
rootfs_of() { # DIGEST: the tree of that store entry (its own layer)
  "$HUTCH_BIN" rootfs ls --json | python3 -c '
import json, sys
for i in json.load(sys.stdin):
    if i["digest"] == sys.argv[1]: print(i["rootfs"])' "$1"
}
status_of() { # ID: running or paused, as ps --json says
  "$HUTCH_BIN" ps --json | python3 -c '
import json, sys
for s in json.load(sys.stdin):
    if s["id"] == sys.argv[1]: print(s["status"])' "$1"
}
snap() { # DESCRIPTION ARGS...: hutch snapshot --json ARGS; its output in $out, the digest in $digest
  digest=
  out=
  tap_ok "$1" "$HUTCH_BIN" snapshot --json "${@:2}" || return 1
  out=$tap_stdout
  digest=$(json_field "$out" digest)
  made+=("$digest")
}

sname="snapsrc-$$"
id=$("$HUTCH_BIN" create --rootfs "$img" --name "$sname" --hostname snapsrc --bind "$tmp/work:/work")
tap_check $? "a sandbox to snapshot, with a rw bind on /work"
hin() { "$HUTCH_BIN" exec --in "$id" "$@"; }
tap_ok "it writes 1 MB in /root (and a hard link to it), deletes /bin/vi, writes in the bind, /tmp and /dev/shm" hin -- sh -c \
  'head -c 1048576 /dev/urandom >/root/big && md5sum /root/big >/root/big.md5 && ln /root/big /root/big.link && rm /bin/vi &&
   echo bound >/work/secret && echo t >/tmp/tfile && echo s >/dev/shm/sfile'

# ---- what the image holds ----------------------------------------------------
snap "hutch snapshot --name" --name "$tag" "$id"
tap_like "$digest" "^sha256:[0-9a-f]{64}$" "--json gives the digest"
tap_is "$(json_field "$out" name)" "$tag" "and the name"
tap_ok "of about 1 MB" test "$(json_field "$out" bytes)" -ge 1048576
tap_is "$(json_field "$out" was_paused)" "False" "it was running"
tap_like "$(json_field "$out" method)" "^(ptrace|cgroup)$" "paused for the copy by ptrace or the cgroup's freezer"
paused_ms=$(json_field "$out" paused_ms)
tap_ok "rootfs ls lists the name" "$HUTCH_BIN" rootfs ls
tap_like "$tap_stdout" "$tag +${digest:7:12}" "with the snapshot's digest"

hnew() { "$HUTCH_BIN" exec --rootfs "$tag" -- "$@"; }
tap_ok "a sandbox of the snapshot sees the 1 MB file, intact" hnew sh -c 'cd /root && md5sum -c big.md5'
tap_ok "a hard link stays one" hnew sh -c '[ "$(stat -c %i /root/big)" = "$(stat -c %i /root/big.link)" ]'
tap_status 1 "a file deleted from the image stays deleted" hnew test -e /bin/vi
tap_ok "the image's other files are there" hnew test -x /bin/sh
tap_status 1 "the bind's file is not in it" hnew test -e /work/secret
tap_status 1 "nor /tmp's" hnew test -e /tmp/tfile
tap_status 1 "nor /dev/shm's" hnew test -e /dev/shm/sfile
layer=$(rootfs_of "$digest")
tap_ok "the layer is in the store" test -d "$layer/root"
tap_ok "it holds the whiteout of /bin/vi" test -c "$layer/bin/vi"
tap_status 1 "nor the /etc/hosts hutch wrote for the sandbox (hostname snapsrc)" test -e "$layer/etc/hosts"
tap_status 1 "nor its /etc/resolv.conf" test -e "$layer/etc/resolv.conf"
tap_ok "a snapshot's sandbox from create --rootfs" "$HUTCH_BIN" create --rootfs "$tag"
child=$tap_stdout
tap_ok "runs from it" "$HUTCH_BIN" exec --in "$child" -- test -s /root/big
tap_ok "and is removed" "$HUTCH_BIN" rm "$child"

# ---- consistency: a writer that never stops ----------------------------------
# a is written, then b, each by a rename: at any moment a = b or a = b + 1.
# A copy that let the writer go on would show otherwise: a and b are in
# directories 1/ and 3/ with 32 MB in 2/ between them, in either order of
# the copy, while the writer goes round several times.
tap_ok "a writer starts" hin -- sh -c 'cd /root && mkdir 1 2 3 && head -c 33554432 /dev/zero >2/pad &&
  i=0; while :; do i=$((i + 1)); echo $i >1/a.n; mv 1/a.n 1/a; echo $i >3/b.n; mv 3/b.n 3/b; done >/dev/null 2>&1 &'
hutch_wait_until 20 hin -- test -s /root/3/b
bad=
for n in 1 2 3 4 5; do
  snap "snapshot $n of the writer" "$id" || continue
  l=$(rootfs_of "$digest")
  a=$(cat "$l/root/1/a" 2>/dev/null)
  b=$(cat "$l/root/3/b" 2>/dev/null)
  if ! [[ $a =~ ^[0-9]+$ && $b =~ ^[0-9]+$ ]] || [ "$b" -gt "$a" ] || [ "$a" -gt $((b + 1)) ]; then
    bad+=" a=$a,b=$b"
  fi
  last_a=$a
done
tap_is "$bad" "" "each snapshot holds b <= a <= b + 1"
now=$(hin -- cat /root/1/a)
tap_ok "the sandbox runs on: its writer is past the last snapshot ($last_a, now $now)" test "$now" -gt "$last_a"
tap_is "$(status_of "$id")" "running" "ps shows it running"

# ---- a paused sandbox stays paused -------------------------------------------
tap_ok "pause it" "$HUTCH_BIN" pause "$id"
before=$(cat "$(rootfs_of "$digest")/root/1/a")
snap "snapshot of the paused sandbox" "$id"
tap_is "$(status_of "$id")" "paused" "it is still paused"
a1=$(cat "$(rootfs_of "$digest")/root/1/a")
sleep 0.5
snap "a second one, by the sandbox's name" "$sname"
tap_is "$(json_field "$out" id)" "$id" "--json gives the id"
a2=$(cat "$(rootfs_of "$digest")/root/1/a")
tap_is "$a2" "$a1" "nothing ran between the two (a = $a1)"
tap_ok "the paused snapshot is past the running ones ($before)" test "$a1" -ge "$before"
tap_ok "resume it" "$HUTCH_BIN" resume "$id"
tap_ok "it goes on" hutch_wait_until 20 sh -c "[ \"\$('$HUTCH_BIN' exec --in '$id' -- cat /root/1/a)\" -gt '$a1' ]"

# ---- what init holds stays out of reach ---------------------------------------
tap_ok "init's fds, listed from inside" hin -- sh -c 'ls /proc/1/fd | wc -l'
tap_ok "init holds a few" test "$tap_stdout" -ge 6
tap_ok "none of them is readable, openable or described inside" hin -- sh -c '
  n=0
  for f in /proc/1/fd/*; do
    readlink "$f" >/dev/null 2>&1 && n=$((n + 1))
    ls "$f/" >/dev/null 2>&1 && n=$((n + 1))
    cat "$f" >/dev/null 2>&1 && n=$((n + 1))
    cat "/proc/1/fdinfo/${f##*/}" >/dev/null 2>&1 && n=$((n + 1))
  done
  ls /proc/1/root/ >/dev/null 2>&1 && n=$((n + 1))
  [ $n -eq 0 ]'

# ---- the audit log --------------------------------------------------------------
tap_ok "hutch audit verifies the log" "$HUTCH_BIN" audit "$id"
log=$tap_stdout
tap_like "$log" "\"type\":\"snapshot\",.*\"digest\":\"sha256:[0-9a-f]{64}\",\"name\":\"$tag\"" \
  "it records the named snapshot"
tap_like "$log" "\"type\":\"snapshot\",.*\"was_paused\":true" "and the one of the paused sandbox"
tap_is "$(grep -c '"type":"snapshot"' <<<"$log")" "8" "one record a snapshot"

# ---- a layer on the host's disk (--keep) ---------------------------------------------
keep=$("$HUTCH_BIN" create --keep --rootfs "$img" 2>/dev/null)
tap_check $? "a --keep sandbox (its layer on the host's disk)"
tap_ok "it writes a file and deletes /bin/vi" "$HUTCH_BIN" exec --in "$keep" -- sh -c 'echo kept >/root/k && rm /bin/vi'
snap "its snapshot" "$keep"
tap_ok "holds the file" "$HUTCH_BIN" exec --rootfs "$digest" -- grep -qx kept /root/k
tap_status 1 "and the deletion" "$HUTCH_BIN" exec --rootfs "$digest" -- test -e /bin/vi
tap_ok "rm it" "$HUTCH_BIN" rm "$keep"

# ---- an image is files; the environment is the sandbox's configuration -----------
# The store keeps no --env (where credentials go), so an image exported or
# pushed carries none; reset --to keeps the sandbox's, fork carries it.
envsb=$("$HUTCH_BIN" create --rootfs "$img" --env "SNAPVAR=secret-$$")
tap_check $? "a sandbox with --env"
tap_ok "it writes a file" "$HUTCH_BIN" exec --in "$envsb" -- sh -c 'echo e >/root/e'
snap "its snapshot" --name "$tag-env" "$envsb"
tap_unlike "$(cat "$(dirname "$(rootfs_of "$digest")")/meta.json")" "SNAPVAR|secret-$$" "the store records none of its --env"
tap_is "$("$HUTCH_BIN" exec --rootfs "$tag-env" -- sh -c 'echo "${SNAPVAR-unset} $(cat /root/e)"')" "unset e" \
  "a sandbox of the snapshot has its files, not its --env"
tap_ok "reset --to the snapshot" "$HUTCH_BIN" reset --to "$tag-env" "$envsb"
tap_is "$("$HUTCH_BIN" exec --in "$envsb" -- sh -c 'echo "$SNAPVAR $(cat /root/e)"')" "secret-$$ e" \
  "keeps the sandbox's --env, with the snapshot's files"
tap_ok "a fork of it" "$HUTCH_BIN" fork "$envsb"
envchild=$tap_stdout
tap_is "$("$HUTCH_BIN" exec --in "$envchild" -- sh -c 'echo "$SNAPVAR $(cat /root/e)"')" "secret-$$ e" \
  "carries its --env, with its files"
tap_ok "rm them" "$HUTCH_BIN" rm "$envchild" "$envsb"

# ---- refusals ----------------------------------------------------------------------
tap_status 125 "snapshot of an unknown id" "$HUTCH_BIN" snapshot 0123456789ab
tap_like "$tap_stderr" "no sandbox with id.* '0123456789ab'" "says there is none"
tap_status 2 "snapshot without an id" "$HUTCH_BIN" snapshot
tap_status 2 "a bad --name" "$HUTCH_BIN" snapshot --name 'a/b' "$id"
tap_status 125 "another store than the image's" "$HUTCH_BIN" snapshot --store "$tmp" "$id"
tap_like "$tap_stderr" "leave out --store" "says to leave it out"
tap_ok "snapshot --help" "$HUTCH_BIN" snapshot --help
tap_like "$tap_stdout" "Usage: hutch snapshot" "prints its usage"
tap_ok "rm" "$HUTCH_BIN" rm "$id"
tap_status 125 "snapshot of a removed sandbox" "$HUTCH_BIN" snapshot "$id"
printf '# snapshot of a 1 MB layer: paused %s ms\n' "$paused_ms"
tap_done
