#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# hutch cp: files and directories between the host and a live sandbox, and
# the sandbox as the attacker: a symlink pointing out of it, a FIFO, a
# destination that is a link, a file past the byte bound.  Nothing outside
# the named destination is ever written, nothing of the sandbox runs.
. "$(dirname "$0")/../lib/tap.sh"

img=$(hutch_test_rootfs busybox) || tap_skip_all "busybox test rootfs unavailable"
tmp=$(hutch_test_tmpdir)
H=$HUTCH_BIN

id=$("$H" create --rootfs "$img") || tap_skip_all "hutch create failed"
trap '"$H" rm "$id" >/dev/null 2>&1; rm -rf "$tmp"' EXIT
sx() { "$H" exec --in "$id" -- sh -c "$1"; }

# ---- host to sandbox ----
printf 'hello\n' >"$tmp/f.txt"
tap_ok "a file into the sandbox" "$H" cp "$tmp/f.txt" "$id:/tmp/g.txt"
tap_ok "arrives with its bytes" sx 'test "$(cat /tmp/g.txt)" = hello'
tap_ok "a file into a sandbox directory takes its own name" "$H" cp -q "$tmp/f.txt" "$id:/tmp"
tap_ok "as /tmp/f.txt" sx 'test -f /tmp/f.txt'
printf 'again\n' >"$tmp/f.txt"
tap_ok "a second copy replaces the file in place" "$H" cp -q "$tmp/f.txt" "$id:/tmp/g.txt"
tap_ok "with the new bytes" sx 'test "$(cat /tmp/g.txt)" = again'

mkdir -p "$tmp/tree/sub"
echo a >"$tmp/tree/a"
echo b >"$tmp/tree/sub/b"
tap_ok "a directory into a new sandbox path" "$H" cp -q "$tmp/tree" "$id:/work"
tap_ok "its files are there" sx 'test "$(cat /work/a)$(cat /work/sub/b)" = ab'
tap_ok "a directory into an existing directory goes under its own name" "$H" cp -q "$tmp/tree" "$id:/work"
tap_ok "as /work/tree" sx 'test -f /work/tree/sub/b'

# ---- sandbox to host ----
sx 'mkdir -p /out/d && echo x >/out/d/x && echo y >/out/y'
tap_ok "a file out of the sandbox" "$H" cp -q "$id:/out/y" "$tmp/y"
tap_is "$(cat "$tmp/y")" y "with its bytes"
tap_ok "a directory out of the sandbox" "$H" cp -q "$id:/out" "$tmp/outcopy"
tap_is "$(cat "$tmp/outcopy/d/x")" x "with its tree"
mkdir "$tmp/into"
tap_ok "a directory out into an existing host directory" "$H" cp -q "$id:/out/d" "$tmp/into"
tap_ok "goes under its own name" test -f "$tmp/into/d/x"

# ---- hostile: what the sandbox wrote ----
echo secret >"$tmp/host-secret"
sx "ln -s $tmp/host-secret /out/evil && ln -s /etc/passwd /out/abs && mkfifo /out/fifo"
tap_fails "a symlink as the source is refused (never followed)" "$H" cp "$id:/out/evil" "$tmp/evil"
tap_like "$tap_stderr" "symlink" "and the error says why"
tap_ok "nothing was written on the host" test ! -e "$tmp/evil"
tap_fails "a symlink into the sandbox's own tree is refused as well" "$H" cp "$id:/out/abs" "$tmp/abs"
tap_fails "a FIFO as the source is refused (never opened)" timeout 20 "$H" cp "$id:/out/fifo" "$tmp/fifo"
tap_unlike "$tap_rc" "^124$" "without hanging on it"
tap_ok "a directory holding them copies out" "$H" cp "$id:/out" "$tmp/out2"
tap_like "$tap_stderr" "[1-9][0-9]* skipped" "with the link and the FIFO skipped"
tap_ok "the link is not in the copy" test ! -e "$tmp/out2/evil" -a ! -L "$tmp/out2/evil"
tap_ok "nor the FIFO" test ! -e "$tmp/out2/fifo"

# A link on the path: /lnk -> / in the sandbox, never followed.
sx 'ln -s / /lnk'
tap_fails "a source path through a symlink is refused" "$H" cp "$id:/lnk/out/y" "$tmp/via-link"

# A destination in the sandbox that is a link pointing out of it.
sx "ln -s $tmp/host-target /tmp/dest-link"
echo payload >"$tmp/payload"
tap_fails "a sandbox destination that is a symlink is refused" "$H" cp "$tmp/payload" "$id:/tmp/dest-link"
tap_ok "and the host path it named is untouched" test ! -e "$tmp/host-target"
sx "mkdir -p /tmp/dl && ln -s $tmp /tmp/dl/up"
tap_fails "a sandbox destination directory through a symlink is refused" "$H" cp "$tmp/payload" "$id:/tmp/dl/up/payload2"
tap_ok "nothing landed on the host" test ! -e "$tmp/payload2"

# A host destination that is a link (the copy must not write through it).
ln -s "$tmp/host-secret" "$tmp/link-dest"
tap_fails "a host destination that is a symlink is refused" "$H" cp "$id:/out/y" "$tmp/link-dest"
tap_is "$(cat "$tmp/host-secret")" secret "the file it points to is untouched"

# A host path of hutch's own (its state directory, its store) never takes
# or gives sandbox content: the same check as --bind and hutch run's output.
state=$HUTCH_STATE_DIR
tap_fails "a copy out into hutch's state directory is refused" "$H" cp "$id:/out/y" "$state/planted"
tap_like "$tap_stderr" "state directory" "naming it"
tap_ok "and leaves nothing there" test ! -e "$state/planted"
tap_fails "a directory copied out into the state directory is refused" "$H" cp "$id:/out/d" "$state/planted-dir"
tap_ok "and leaves no directory there" test ! -e "$state/planted-dir"
tap_fails "the state directory copied into a sandbox is refused" "$H" cp "$state" "$id:/tmp/stolen"
tap_ok "and nothing arrived" sx 'test ! -e /tmp/stolen'

# ---- bounds ----
sx 'dd if=/dev/zero of=/out/big bs=1024 count=2048 2>/dev/null'
tap_status 1 "a file past --max-bytes stops the copy" "$H" cp --max-bytes 1M "$id:/out/big" "$tmp/big"
tap_like "$tap_stderr" "bytes" "naming the bound"
tap_ok "and leaves no partial file" test ! -e "$tmp/big"

# ---- usage ----
tap_status 2 "two host paths are a usage error" "$H" cp "$tmp/a" "$tmp/b"
tap_status 2 "one argument is a usage error" "$H" cp "$tmp/a"
tap_status 125 "an unknown sandbox fails" "$H" cp "$tmp/f.txt" "nosuchsandbox:/tmp/x"

tap_done
