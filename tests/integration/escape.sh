#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Each isolation layer, attacked from inside: every attempt must fail, and the
# host and the image must be unchanged afterwards.
. "$(dirname "$0")/../lib/tap.sh"

img=$(hutch_test_rootfs busybox) || tap_skip_all "busybox test rootfs unavailable"
tmp=$(hutch_test_tmpdir)
helper="$HUTCH_BUILDDIR/tests/helpers/try-syscall"
hx() { "$HUTCH_BIN" exec --rootfs "$img" "$@"; }
try() { hx --bind "$helper:/usr/bin/try-syscall:ro" -- try-syscall "$@"; }

rootfs=$("$HUTCH_BIN" rootfs ls --json | python3 -c '
import json, sys
for i in json.load(sys.stdin):
    if i.get("name") == sys.argv[1]: print(i.get("rootfs", ""))' "$img")
tap_ok "the image's tree is known" test -d "$rootfs"
before=$(cd "$rootfs" && find . -printf '%p %s %m %U %T@\n' | sort | sha256sum)

# Filesystem: writes land in the upper layer only.
tap_ok "writing over the image's files works inside" hx -- sh -c 'echo pwned > /bin/busybox.new && rm -rf /usr && mkdir /usr && echo x > /etc/passwd'
after=$(cd "$rootfs" && find . -printf '%p %s %m %U %T@\n' | sort | sha256sum)
tap_is "$after" "$before" "the image's tree is unchanged"
tap_ok "a fresh sandbox sees the image again" hx -- test -e /bin/sh -a ! -e /bin/busybox.new
# --read-only: the image's tree takes no write, by any path or any means a
# process of the sandbox has; /tmp, /dev/shm and a read-write bind still do.
mkdir -p "$tmp/rw"
tap_ok "--read-only: writes into the image's tree" hx --read-only --bind "$tmp/rw:/rw" -- sh -c '
  for p in /x /usr/x /etc/passwd /proc/self/root/x /proc/1/root/etc/x; do
    if echo pwned >"$p" 2>/dev/null; then echo "$p took a write"; else echo "$p refused"; fi
  done
  mkdir /d 2>/dev/null && echo "mkdir took"; rm -f /bin/sh 2>/dev/null && echo "unlink took"
  mv /etc /etc2 2>/dev/null && echo "rename took"; ln -s / /l 2>/dev/null && echo "symlink took"
  echo a >/tmp/a && echo a >/dev/shm/a && echo a >/rw/a && echo "scratch places take writes"
  echo "root-ro=$(grep -c " / / ro," /proc/self/mountinfo)"'
tap_unlike "$tap_stdout" "took" "none takes a file, a directory, an unlink, a rename or a link"
tap_like "$tap_stdout" "/proc/1/root/etc/x refused" "not through /proc/1/root either"
tap_like "$tap_stdout" "scratch places take writes" "/tmp, /dev/shm and a read-write bind take writes"
tap_like "$tap_stdout" "root-ro=1" "the root mount is read-only in the mount table"
tap_is "$(cat "$tmp/rw/a" 2>/dev/null)" "a" "the bind's write reached the host directory"
tap_fails "--read-only: remounting the root read-write" hx --read-only -- mount -o remount,rw /
tap_like "$tap_stderr" "(denied|not permitted)" "is refused ($(printf '%s' "$tap_stderr" | head -1))"
tap_ok "without --read-only the root takes writes" hx -- sh -c 'echo a >/x && cat /x'

echo canary >"$tmp/canary"
tap_fails "the host's files are not reachable by path" hx -- cat "$tmp/canary"
tap_fails "nor through /proc/1/root" hx -- cat "/proc/1/root$tmp/canary"
tap_ok "the old root is gone from the mount table" hx -- cat /proc/self/mountinfo
tap_unlike "$tap_stdout" " $tmp" "no host path is mounted"
# Every mount point is one of the sandbox's own: a host mount left over
# (the old root is dropped while the sandbox is set up) would show as /sys,
# /sys/fs/cgroup, /run or the like.
others=$(printf '%s\n' "$tap_stdout" | awk '{print $5}' | grep -Ev '^/(tmp|proc(/.*)?|dev(/.*)?)?$' | tr '\n' ' ')
tap_is "$others" "" "the mount table holds only the sandbox's own mounts"
tap_is "$(printf '%s\n' "$tap_stdout" | awk '$5 == "/"' | wc -l)" "1" "one mount at /: nothing stacked on the root"
tap_ok "/ and /.. inside" hx -- sh -c 'stat -c "%d %i" / /..; ls -a /'
tap_is "$(printf '%s\n' "$tap_stdout" | sed -n 1p)" "$(printf '%s\n' "$tap_stdout" | sed -n 2p)" "/.. is / itself"
tap_unlike "$tap_stdout" "hutch-old-root" "the old root's directory is gone"
# /dev and the masks of /proc's directories are directories of the
# sandbox's tmpfs, bound in place: nothing runs from /dev, and the masks
# take no writes.
tap_ok "a program copied to /dev" hx -- sh -c 'cp /bin/busybox /dev/true && if /dev/true 2>/dev/null; then echo ran; else echo refused; fi'
tap_is "$tap_stdout" "refused" "does not run from there"
# The device nodes are the host's, bound in: their attributes are the
# host's too, and the sandbox's uid 0 may own them (hutch run as root).
# They still read and write; nothing changes them.  The attempts set the
# mode and owner each node already has: were one to succeed, it would show
# here without having broken the host's node.
devs_before=$(stat -c '%n %a %u %g' /dev/null /dev/zero /dev/full /dev/random /dev/urandom /dev/tty)
tap_ok "the host's device nodes, from inside" hx -- sh -c '
  echo x >/dev/null && head -c 8 /dev/zero | wc -c && head -c 8 /dev/urandom | wc -c && echo "devices work"
  for d in null zero full random urandom tty; do
    chmod "$(stat -c %a /dev/$d)" /dev/$d 2>/dev/null && echo "chmod of $d took"
    chown "$(stat -c %u:%g /dev/$d)" /dev/$d 2>/dev/null && echo "chown of $d took"
    touch /dev/$d 2>/dev/null && echo "touch of $d took"
  done; echo tried'
tap_like "$tap_stdout" "devices work" "read and write"
tap_unlike "$tap_stdout" "took" "but take no chmod, chown or new times"
tap_is "$(stat -c '%n %a %u %g' /dev/null /dev/zero /dev/full /dev/random /dev/urandom /dev/tty)" "$devs_before" \
  "the host's nodes are unchanged"
tap_ok "writes into /proc's masked directories" hx -- sh -c '
  n=0
  for d in /proc/acpi /proc/asound /proc/scsi /proc/driver; do
    [ -d "$d" ] || continue
    n=$((n + 1))
    if touch "$d/x" 2>/dev/null || mkdir "$d/d" 2>/dev/null; then echo "$d took a write"; fi
  done
  echo "$n tried"'
tap_unlike "$tap_stdout" "took a write" "none takes a file or a directory"
tap_unlike "$tap_stdout" "^0 tried" "and at least one was there to try"

# Hostile images: the setup writes /etc/hosts and /etc/resolv.conf and
# makes mount points while it builds the sandbox, following the image's
# symlinks.  None may lead out of the new root: not ".." of "/" (the old
# root is still mounted then), not /proc/2/cwd (the network helper's
# working directory).
mkdir -p "$tmp/esc" "$tmp/cwd" "$tmp/evil"
cp -a "$rootfs/." "$tmp/evil/"
evil_image() { # NAME TARGET: the busybox image with etc -> TARGET
  rm -rf "$tmp/evil/etc" && ln -s "$2" "$tmp/evil/etc" && tar -C "$tmp/evil" -cf "$tmp/$1.tar" . &&
    "$HUTCH_BIN" rootfs import "$tmp/$1.tar" --name "$1" >/dev/null 2>&1
}
tap_ok "an image with etc -> ..$tmp/esc" evil_image escape-etc-dotdot "..$tmp/esc"
# Inside, the link leads to a path that is not there: the setup stops at
# /etc.
tap_status 125 "its start fails" sh -c 'cd "$1" && exec "$2" exec --rootfs escape-etc-dotdot -- true' - "$tmp/cwd" "$HUTCH_BIN"
tap_like "$tap_stderr" "create /etc: No such file or directory" "at /etc, followed inside the new root"
tap_is "$(ls -A "$tmp/esc")" "" "its setup wrote nothing on the host through .. of /"
tap_ok "an image with etc -> /proc/2/cwd" evil_image escape-etc-cwd /proc/2/cwd
# A magic link of /proc leads to what a process holds, not to a path of the
# image: the setup never follows one (or, pid 2 being gone, finds nothing)
# and stops at /etc.
tap_status 125 "its start fails" sh -c 'cd "$1" && exec "$2" exec --rootfs escape-etc-cwd -- true' - "$tmp/cwd" "$HUTCH_BIN"
tap_like "$tap_stderr" "create /etc: (Too many levels of symbolic links|No such file or directory)" "at /etc"
tap_is "$(ls -A "$tmp/cwd")" "" "its setup wrote nothing in the caller's working directory"
# On one CPU the helper runs only when the setup waits: it must not matter
# when it gets to run.
if command -v taskset >/dev/null; then
  for _ in 1 2 3 4 5 6 7 8 9 10; do
    (cd "$tmp/cwd" && taskset -c 0 "$HUTCH_BIN" exec --rootfs escape-etc-cwd -- true >/dev/null 2>&1)
  done
  tap_is "$(ls -A "$tmp/cwd")" "" "nor on one CPU, ten times"
fi
# A directory as the command's stdin would give the sandbox the host's
# tree (/proc/self/fd/0/.. walks the host's mounts), and the setup, which
# holds the same fd, a host directory to write in: refused before anything
# starts, for a one-shot and for exec --in.
mkdir -p "$tmp/stdin-dir" "$tmp/bind-src"
tap_status 125 "a directory as stdin is refused" \
  sh -c 'exec "$1" exec --rootfs "$2" -- sh -c "ls /proc/self/fd/0/../..; echo x >/proc/self/fd/0/../w" <"$3"' - \
  "$HUTCH_BIN" "$img" "$tmp/stdin-dir"
tap_like "$tap_stderr" "stdin [(]fd 0[)] is a directory" "saying why"
tap_ok "the command never ran: nothing written beside the directory" test ! -e "$tmp/w"
tap_ok "an image with etc -> /proc/self/fd/0" evil_image escape-etc-fd0 /proc/self/fd/0
tap_status 125 "its start with a directory as stdin fails" \
  sh -c 'exec "$1" exec --rootfs escape-etc-fd0 -- true <"$2"' - "$HUTCH_BIN" "$tmp/stdin-dir"
tap_is "$(ls -A "$tmp/stdin-dir")" "" "its setup wrote nothing in the directory on stdin"
if id=$("$HUTCH_BIN" create --rootfs "$img" 2>/dev/null); then
  tap_status 125 "exec --in with a directory as stdout is refused" \
    sh -c 'exec "$1" exec --in "$2" -- ls /proc/self/fd/1/.. 1<"$3"' - "$HUTCH_BIN" "$id" "$tmp/stdin-dir"
  tap_like "$tap_stderr" "stdout [(]fd 1[)] is a directory" "saying why"
  "$HUTCH_BIN" rm "$id" >/dev/null 2>&1
else
  tap_check 1 "hutch create for exec --in"
fi
# The setup never follows a magic link of /proc (which leads to what it
# holds: the caller's stdio, the detached binds), even to the new root.
tap_ok "an image with etc -> /proc/self/cwd" evil_image escape-etc-self-cwd /proc/self/cwd
tap_status 125 "its start fails" "$HUTCH_BIN" exec --rootfs escape-etc-self-cwd -- true
tap_like "$tap_stderr" "create /etc: Too many levels of symbolic links" "at /etc"
tap_like "$tap_stderr" "symlink through /proc [(]a magic link[)]" "and the hint says why"
rm -f "$tmp/evil/etc" && cp -a "$rootfs/etc" "$tmp/evil/etc" && rm -rf "$tmp/evil/mnt" && ln -s /proc/self/cwd "$tmp/evil/mnt"
tar -C "$tmp/evil" -cf "$tmp/escape-mnt-cwd.tar" . && "$HUTCH_BIN" rootfs import "$tmp/escape-mnt-cwd.tar" --name escape-mnt-cwd >/dev/null 2>&1
tap_status 125 "an image with mnt -> /proc/self/cwd: a bind on /mnt/a/b fails" \
  "$HUTCH_BIN" exec --rootfs escape-mnt-cwd --bind "$tmp/bind-src:/mnt/a/b:ro" -- true
tap_like "$tap_stderr" "mount point /mnt/a/b: Too many levels of symbolic links" "at the mount point"
tap_like "$tap_stderr" "magic link" "and the hint says why"
# /proc and /dev only on directories of the image: the masks of /proc and
# init's memory watch name /proc by path after it is placed, and an image
# could move it under them (proc -> /dev/shm/../p, dev/shm -> /a/b: the
# masks would look for a /dev/p that is not there).
rm -rf "$tmp/evil/mnt" "$tmp/evil/proc" "$tmp/evil/dev" && mkdir -p "$tmp/evil/mnt" "$tmp/evil/a/b" "$tmp/evil/a/p" &&
  ln -s /dev/shm/../p "$tmp/evil/proc" && mkdir "$tmp/evil/dev" && ln -s /a/b "$tmp/evil/dev/shm"
tar -C "$tmp/evil" -cf "$tmp/escape-proc.tar" . && "$HUTCH_BIN" rootfs import "$tmp/escape-proc.tar" --name escape-proc >/dev/null 2>&1
tap_status 125 "an image with proc -> /dev/shm/../p fails" "$HUTCH_BIN" exec --rootfs escape-proc -- cat /a/p/timer_list
tap_like "$tap_stderr" "mount point /proc: Too many levels of symbolic links" "at /proc"
tap_like "$tap_stderr" "the image's /proc is a symlink" "and the hint says why"
rm -rf "$tmp/evil/proc" "$tmp/evil/dev" && mkdir "$tmp/evil/proc" && ln -s /a/b "$tmp/evil/dev"
tar -C "$tmp/evil" -cf "$tmp/escape-dev.tar" . && "$HUTCH_BIN" rootfs import "$tmp/escape-dev.tar" --name escape-dev >/dev/null 2>&1
tap_status 125 "an image with dev -> /a/b fails" "$HUTCH_BIN" exec --rootfs escape-dev -- true
tap_like "$tap_stderr" "mount point /dev: Too many levels of symbolic links" "at /dev"
rm -rf "$tmp/evil/dev" "$tmp/evil/a" && cp -a "$rootfs/dev" "$tmp/evil/dev"
# Nor may a mount point of /tmp or of a bind lead into them by a symlink:
# a tmpfs over /proc would blind init's memory watch, a bind on /proc/self
# would choose what init reads there, a tmpfs over /dev would take away the
# /dev/null the masks are made of.
evil_link() { # NAME LINK TARGET: the busybox image with LINK -> TARGET
  rm -rf "${tmp:?}/evil/$2" && ln -s "$3" "$tmp/evil/$2" && tar -C "$tmp/evil" -cf "$tmp/$1.tar" . &&
    "$HUTCH_BIN" rootfs import "$tmp/$1.tar" --name "$1" >/dev/null 2>&1
}
for t in proc dev; do
  tap_ok "an image with tmp -> /$t" evil_link "escape-tmp-$t" tmp "/$t"
  tap_status 125 "its start fails" "$HUTCH_BIN" exec --rootfs "escape-tmp-$t" -- true
  tap_like "$tap_stderr" "mount point /tmp leads into /$t" "at /tmp, saying where it leads"
  "$HUTCH_BIN" rootfs rm "escape-tmp-$t" >/dev/null 2>&1
done
rm -f "$tmp/evil/tmp" && mkdir "$tmp/evil/tmp"
mkdir -p "$tmp/fake-proc"
tap_ok "an image with mnt -> /proc/self" evil_link escape-mnt-self mnt /proc/self
tap_status 125 "a bind on /mnt fails" "$HUTCH_BIN" exec --rootfs escape-mnt-self --bind "$tmp/fake-proc:/mnt" -- true
tap_like "$tap_stderr" "mount point /mnt leads into /proc [(]/proc/[0-9]+[)]" "at /mnt, saying where it leads"
"$HUTCH_BIN" rootfs rm escape-mnt-self >/dev/null 2>&1
tap_ok "a bind the caller names under /dev itself" hx --bind "$tmp/fake-proc:/dev/fake" -- test -d /dev/fake
# A symlink inside the image is still followed, as the sandbox's own
# processes follow it.
rm -rf "$tmp/evil/mnt" && mkdir -p "$tmp/evil/srv" && ln -s /srv "$tmp/evil/mnt"
tar -C "$tmp/evil" -cf "$tmp/escape-mnt-srv.tar" . && "$HUTCH_BIN" rootfs import "$tmp/escape-mnt-srv.tar" --name escape-mnt-srv >/dev/null 2>&1
echo bound >"$tmp/bind-src/f"
tap_ok "an image with mnt -> /srv: a bind on /mnt/a/b" \
  "$HUTCH_BIN" exec --rootfs escape-mnt-srv --bind "$tmp/bind-src:/mnt/a/b:ro" -- cat /srv/a/b/f
tap_is "$tap_stdout" "bound" "lands on /srv/a/b, in the image's root"
# /etc is written before the binds are placed: a bind on /etc/hosts shows
# over hutch's file.
printf '10.9.9.9\tmine\n' >"$tmp/my-hosts"
tap_ok "a bind on /etc/hosts" hx --bind "$tmp/my-hosts:/etc/hosts:ro" -- cat /etc/hosts
tap_is "$tap_stdout" "$(printf '10.9.9.9\tmine')" "shows the bound file, not hutch's"
"$HUTCH_BIN" rootfs rm escape-etc-dotdot escape-etc-cwd escape-etc-fd0 escape-etc-self-cwd escape-mnt-cwd escape-proc \
  escape-dev escape-mnt-srv >/dev/null 2>&1
rm -rf "$tmp/evil" "$tmp"/escape-*.tar

# Processes: the host's are invisible and unreachable.
sleep 300 &
host_pid=$!
tap_fails "a host pid cannot be signalled" hx -- kill -0 "$host_pid"
tap_ok "kill -9 -1 inside" hx -- sh -c 'kill -9 -1; true'
tap_ok "does not touch host processes" kill -0 "$host_pid"
tap_ok "ps inside" hx -- ps -o pid
tap_unlike "$tap_stdout" "(^|[^0-9])$host_pid([^0-9]|$)" "does not list host pids"
kill "$host_pid" 2>/dev/null

# Privileged operations.
tap_fails "mount is refused" hx -- mount -t tmpfs none /mnt
tap_fails "a nested user namespace is refused" hx -- unshare -U true
tap_fails "a nested mount namespace is refused" hx -- unshare -m true
tap_ok "try-syscall ptrace" try ptrace
tap_like "$tap_stdout" "^E" "ptrace fails ($tap_stdout)"
tap_ok "try-syscall init_module" try init_module
tap_like "$tap_stdout" "^E(PERM|NOSYS)" "loading a module fails ($tap_stdout)"
tap_ok "try-syscall socket-packet" try socket-packet
tap_like "$tap_stdout" "^E" "an AF_PACKET socket fails ($tap_stdout)"
tap_ok "try-syscall socket-raw" try socket-raw
tap_like "$tap_stdout" "^E" "a raw socket fails ($tap_stdout)"
tap_ok "try-syscall tiocsti" try tiocsti
tap_like "$tap_stdout" "^E" "TIOCSTI fails ($tap_stdout)"

# /proc: revealing files masked, /proc/sys read-only.
tap_ok "reading /proc/kcore" hx -- sh -c 'wc -c < /proc/kcore 2>/dev/null || echo 0'
tap_is "$(echo "$tap_stdout" | tr -d ' ')" "0" "/proc/kcore gives nothing"
tap_ok "reading /proc/kallsyms" hx -- sh -c 'wc -c < /proc/kallsyms'
tap_is "$(echo "$tap_stdout" | tr -d ' ')" "0" "/proc/kallsyms gives nothing"
tap_fails "writing /proc/sys fails" hx -- sh -c 'echo 1 > /proc/sys/kernel/ns_last_pid'
tap_fails "writing /proc/sysrq-trigger fails" hx -- sh -c 'echo h > /proc/sysrq-trigger'
tap_ok "/sys listing" hx -- sh -c 'ls -A /sys 2>/dev/null | wc -l'
tap_is "$(echo "$tap_stdout" | tr -d ' ')" "0" "no sysfs is mounted: /sys is empty or absent"
tap_ok "/dev listing" hx -- ls /dev
tap_unlike "$tap_stdout" "(vda|sda|nvme|kmsg|mem|port)" "no host device node is present"

# Network: nothing of the host is reachable, not even its loopback.
port_file="$tmp/port"
python3 - "$port_file" <<'PY' &
import socket, sys, time
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(8)
open(sys.argv[1], "w").write(str(s.getsockname()[1]))
s.settimeout(20)
try:
    while True:
        c, _ = s.accept(); c.sendall(b"HOST\n"); c.close()
except Exception:
    pass
PY
listener=$!
for _ in $(seq 50); do [ -s "$port_file" ] && break; sleep 0.1; done
port=$(cat "$port_file")
tap_ok "the host listener answers on the host" sh -c "python3 -c 'import socket; s=socket.create_connection((\"127.0.0.1\", $port)); print(s.recv(5))' | grep -q HOST"
tap_fails "the host's loopback is not reachable from inside" hx -- sh -c "nc -w 2 127.0.0.1 $port </dev/null | grep -q HOST"
host_ip=$(ip -4 -o addr show scope global 2>/dev/null | awk '{print $4}' | cut -d/ -f1 | head -1)
if [ -n "$host_ip" ]; then
  tap_fails "the host's own address is unreachable" hx -- sh -c "nc -w 2 $host_ip $port </dev/null"
  tap_like "$tap_stderr" "(unreachable|refused|timed out)" "with a network error"
else
  tap_skip "the host's own address is unreachable" "the host has no global IPv4 address"
fi
kill "$listener" 2>/dev/null

# Nothing survives hutch being SIGKILLed.
naptime=$((100000 + RANDOM))
marker="sleep $naptime"
"$HUTCH_BIN" exec --rootfs "$img" -- sleep "$naptime" &
hpid=$!
# The payload itself (its command line is exactly the marker), not hutch,
# whose command line holds it too: killed before the sandbox exists, hutch
# leaves nothing to list.
tap_ok "the sandboxed process runs" hutch_wait_until 60 pgrep -fx "$marker"
kill -9 "$hpid"
wait "$hpid" 2>/dev/null
gone=1
for _ in $(seq 200); do
  if ! pgrep -f "$marker" >/dev/null; then gone=0; break; fi
  sleep 0.1
done
tap_check $gone "after SIGKILL of hutch no sandbox process is left"
# What it left on the host (its record, cgroup, subnet) goes at the next
# listing, as `hutch rm` would take it: its owner and its init are gone.
tap_ok "hutch ps" "$HUTCH_BIN" ps --json
tap_is "$tap_stdout" "[]" "removes the sandbox left behind instead of listing it as dead"
tap_ok "hutch rm --all has nothing left to clean" "$HUTCH_BIN" rm --all
# The seccomp cache's key stays: it is the user's, not a sandbox's.
tap_ok "the state directory is empty" test -z "$(hutch_state_entries "$HUTCH_STATE_DIR")"

rm -rf "$tmp"
tap_done
