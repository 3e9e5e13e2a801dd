#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# --user USER[:GROUP]: a sandbox's processes run as another user of its user
# namespace, with no capability, no supplementary group and no_new_privs, so
# none can become root again; files it writes, and files hutch writes for it,
# are that user's; a user without a subordinate id range is refused with the
# fix.  One-shot (exec) and long-lived (create, exec --in, cp, reset, fork).
. "$(dirname "$0")/../lib/tap.sh"

hutch_need_helper try-syscall
img=$(hutch_test_rootfs busybox) || tap_skip_all "busybox test rootfs unavailable"
tmp=$(hutch_test_tmpdir)
H=$HUTCH_BIN
hx() { "$H" exec --rootfs "$img" --bind "$helper:/usr/bin/try-syscall:ro" "$@"; }

# Where id N inside lands on the host: root maps every id to itself; a user
# maps 1..65535 to its subordinate range.
if [ "$(id -u)" -eq 0 ]; then
  host_of() { echo "$1"; }
else
  start=$(awk -F: -v u="$(id -un)" -v n="$(id -u)" '$1 == u || $1 == n { print $2; exit }' /etc/subuid)
  [ -n "$start" ] || tap_skip_all "$(id -un) has no subordinate id range: --user needs one (tests/setup-host.sh)"
  host_of() { echo $((start + $1 - 1)); }
fi

# ---- one-shot ----
tap_ok "exec --user 1000:1000 runs" hx --user 1000:1000 -- sh -c 'id -u; id -g; id -G'
tap_is "$(echo $tap_stdout)" "1000 1000 1000" "id -u, id -g and the groups inside: 1000, no other group"
tap_ok "the short -u too" hx -u 2000:3000 -- sh -c 'id -u; id -g'
tap_is "$(echo $tap_stdout)" "2000 3000" "-u 2000:3000"
tap_ok "a name of the image's /etc/passwd" hx --user nobody -- sh -c 'id -un; id -u; id -g'
tap_is "$(echo $tap_stdout)" "nobody 65534 65534" "nobody: its uid and its passwd group"
tap_ok "a uid the image does not list" hx --user 4242 -- sh -c 'id -u; id -g; echo "$HOME"'
tap_is "$(echo $tap_stdout)" "4242 0 /" "takes gid 0 and HOME / (as Docker)"
tap_ok "HOME given by the caller stays" hx --user 1000 --env HOME=/tmp -- sh -c 'echo "$HOME"'
tap_is "$tap_stdout" "/tmp" "HOME=/tmp"

# No way back to root: no capability in any set, no_new_privs, and every
# call that would make it root again refused.
tap_ok "its credentials" hx --user 1000:1000 -- sh -c 'grep -E "^(Cap(Inh|Prm|Eff|Bnd|Amb)|NoNewPrivs|Groups):" /proc/self/status'
st=$tap_stdout
for c in CapInh CapPrm CapEff CapBnd CapAmb; do
  tap_like "$st" "$c:[[:space:]]+0000000000000000" "$c is empty"
done
tap_like "$st" "NoNewPrivs:[[:space:]]+1" "no_new_privs is set"
tap_is "$(printf '%s\n' "$st" | sed -n 's/^Groups:[[:space:]]*//p')" "" "no supplementary group"
tap_ok "setuid back to root" hx --user 1000:1000 -- sh -c 'for c in setuid-root setresuid-root setresgid-root setgroups-root; do echo "$c=$(try-syscall $c)"; done; id -u'
tap_is "$(echo $tap_stdout)" "setuid-root=EPERM setresuid-root=EPERM setresgid-root=EPERM setgroups-root=EPERM 1000" \
  "setuid(0), setresuid(0,0,0), setresgid(0,0,0), setgroups([0]): EPERM; still 1000"
tap_ok "as root of the sandbox, the same calls" hx -- sh -c 'echo "$(try-syscall setresuid-root)"; id -u'
tap_is "$(echo $tap_stdout)" "OK 0" "succeed (it is root already): the EPERM above is the switch's"

# What it writes is its own, inside and on the host.
tap_ok "a file written as 1000:1000" hx --user 1000:1000 -- sh -c 'echo x >/tmp/t; stat -c %u:%g /tmp/t; mkdir /mine 2>/dev/null || echo no-root; touch /etc/mine 2>/dev/null || echo no-etc'
tap_is "$(echo $tap_stdout)" "1000:1000 no-root no-etc" "owned by 1000:1000; the image's / and /etc are root's, not writable"
# The image is root's: the user writes where it is given a place, a bind.
mkdir -p "$tmp/share"
chmod 0777 "$tmp/share"
tap_ok "writes into a read-write bind" hx --user 1000:1000 --bind "$tmp/share:/share" -- sh -c 'echo hi >/share/f'
tap_is "$(stat -c %u:%g "$tmp/share/f")" "$(host_of 1000):$(host_of 1000)" \
  "on the host the file is id 1000 of the sandbox's map ($(host_of 1000))"

# ---- refusals ----
tap_status 2 "--user with --in: a usage error" "$H" exec --in 000000000000 --user 1000 -- true
tap_like "$tap_stderr" "not to --in" "names --in"
tap_status 2 "a user that is no spelling" "$H" exec --rootfs "$img" --user 'a b' -- true
tap_like "$tap_stderr" "USER\[:GROUP\]" "says the spelling"
tap_status 125 "a name the image does not have" "$H" exec --rootfs "$img" --user ghost -- true
tap_like "$tap_stderr" "no such user in the sandbox's /etc/passwd" "says so"
tap_status 125 "an id past the 65536 a sandbox maps" "$H" exec --rootfs "$img" --user 70000 -- true
tap_like "$tap_stderr" "uid 70000 is not mapped" "says it is not mapped"
tap_ok "the last id it maps" hx --user 65535:65535 -- sh -c 'id -u; id -g'
tap_is "$(echo $tap_stdout)" "65535 65535" "65535:65535"
tap_ok "--user root is root" hx --user root -- sh -c 'id -u; echo "$(try-syscall setresuid-root)"'
tap_is "$(echo $tap_stdout)" "0 OK" "no switch"

# What the image's /etc/passwd says is the image's matter: the fix given
# is --user's, not this host's.
tap_status 125 "a name the image does not have" hx --user nosuchuser -- true
tap_like "$tap_stderr" "no such user in the sandbox's /etc/passwd" "says so"
tap_unlike "$tap_stderr" "hutch doctor" "and does not send the user to hutch doctor"

# ---- long-lived ----
tap_ok "create --user 1000:1000" "$H" create --rootfs "$img" --user 1000:1000
sb=$tap_stdout
n=
trap '"$H" rm -f "$sb" >/dev/null 2>&1; [ -z "$n" ] || rm -rf "$n"' EXIT
tap_ok "exec --in runs as the sandbox's user" "$H" exec --in "$sb" -- sh -c 'id -u; id -g'
tap_is "$(echo $tap_stdout)" "1000 1000" "1000 1000"
if [ "$(id -u)" -ne 0 ]; then
  tap_ok "its uid map is the subordinate range" "$H" exec --in "$sb" -- cat /proc/self/uid_map
  tap_is "$(echo $tap_stdout)" "0 $(id -u) 1 1 $start 65535" "0 -> the user, 1.. -> the range"
fi
echo data >"$tmp/in.txt"
mkdir -p "$tmp/dir/sub"
echo a >"$tmp/dir/sub/a"
tap_ok "hutch cp a file in" "$H" cp "$tmp/in.txt" "$sb:/tmp/in.txt"
tap_ok "hutch cp a tree in" "$H" cp "$tmp/dir" "$sb:/tmp/dir"
tap_ok "what hutch wrote is the user's" "$H" exec --in "$sb" -- sh -c 'stat -c %u:%g /tmp/in.txt /tmp/dir /tmp/dir/sub/a; echo more >>/tmp/in.txt && echo appended'
tap_is "$(echo $tap_stdout)" "1000:1000 1000:1000 1000:1000 appended" "a file, a directory, a file in it: 1000:1000, and writable"
tap_ok "the user's private file" "$H" exec --in "$sb" -- sh -c 'echo secret >/tmp/p; chmod 600 /tmp/p'
tap_ok "hutch cp reads it out" "$H" cp "$sb:/tmp/p" "$tmp/p"
tap_is "$(cat "$tmp/p")" "secret" "its content"
tap_ok "reset" "$H" reset "$sb"
tap_ok "the reset sandbox is the user's still" "$H" exec --in "$sb" -- id -u
tap_is "$tap_stdout" "1000" "1000"
tap_ok "fork" "$H" fork "$sb"
kid=$tap_stdout
tap_ok "the child runs as the user" "$H" exec --in "$kid" -- id -u
tap_is "$tap_stdout" "1000" "1000"
"$H" rm "$kid" >/dev/null 2>&1

# A name is looked up once, at the creation: a fork's child runs as the ids
# the parent's init runs as, not as the name looked up again in its copy of
# the parent's layer, which the user may have written (here an image whose
# /etc/passwd anyone may write).
tap_ok "a sandbox to make that image of" "$H" create --rootfs "$img"
mk=$tap_stdout
tap_ok "its /etc/passwd names app, and anyone may write it" "$H" exec --in "$mk" -- \
  sh -c 'echo "app:x:1000:1000::/home/app:/bin/sh" >>/etc/passwd && chmod 0666 /etc/passwd'
tap_ok "snapshot it" "$H" snapshot --name "user-wpass-$$" "$mk"
"$H" rm -f "$mk" >/dev/null 2>&1
tap_ok "create --user app" "$H" create --rootfs "user-wpass-$$" --user app
wsb=$tap_stdout
tap_ok "app makes its name uid 0 in /etc/passwd" "$H" exec --in "$wsb" -- sh -c 'echo "app:x:0:0::/:/bin/sh" >/etc/passwd; id -u'
tap_is "$tap_stdout" "1000" "while it still runs as 1000"
tap_ok "fork it" "$H" fork "$wsb"
wkid=$tap_stdout
tap_ok "the child's processes" "$H" exec --in "$wkid" -- sh -c 'id -u; id -g'
tap_is "$(echo $tap_stdout)" "1000 1000" "run as the parent's ids, not as the name's new uid 0"
tap_ok "the parent's audit log" "$H" audit "$wsb"
tap_like "$tap_stdout" '"type":"start",.*"user":"app"' "records the user it was made with"
tap_ok "the child's" "$H" audit "$wkid"
tap_like "$tap_stdout" '"type":"start",.*"user":"1000:1000"' "records the ids it runs as"
"$H" rm -f "$wsb" "$wkid" >/dev/null 2>&1
"$H" rootfs rm "user-wpass-$$" >/dev/null 2>&1

# ---- a user without a subordinate id range: refused with the fix ----
if hutch_nosub_user "--user without a subordinate range"; then
  # Outside the run's private tree, which that user cannot enter.
  n=$(mktemp -d /tmp/hutch-user-nosub.XXXXXX)
  chmod 0755 "$n"
  hutch_nosub_prepare "$n" "$nosub" "$(hutch_rootfs_ensure busybox)"
  as_nosub() { hutch_as_nosub "$n" "$nosub" "$@"; }
  tap_ok "[$nosub] imports the image" as_nosub "$n/hutch" rootfs import "$n/busybox.tar" --name bb
  tap_ok "[$nosub] a sandbox as its root runs" as_nosub "$n/hutch" exec --rootfs bb -- id -u
  tap_status 125 "[$nosub] --user 1000 is refused" as_nosub "$n/hutch" exec --rootfs bb --user 1000 -- id -u
  tap_like "$tap_stderr" "maps one id" "[$nosub] says why"
  tap_like "$tap_stderr" "/etc/subuid" "[$nosub] the hint names /etc/subuid"
  tap_like "$tap_stderr" "usermod --add-subuids" "[$nosub] and the command"
  tap_status 125 "[$nosub] create --user too" as_nosub "$n/hutch" create --rootfs bb --user nobody
  tap_is "$(ls "$n/state" | grep -c '^[0-9a-f]\{12\}$')" 0 "[$nosub] nothing was left running"
  tap_ok "[$nosub] --user root is no switch" as_nosub "$n/hutch" exec --rootfs bb --user root -- id -u
fi
tap_done
