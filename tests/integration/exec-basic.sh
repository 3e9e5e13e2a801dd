#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# hutch exec: what an ordinary command sees, and how its end is reported.
. "$(dirname "$0")/../lib/tap.sh"

img=$(hutch_test_rootfs busybox) || tap_skip_all "busybox test rootfs unavailable"
tmp=$(hutch_test_tmpdir)
hx() { "$HUTCH_BIN" exec --rootfs "$img" "$@"; }

tap_ok "echo runs" hx -- echo hello
tap_is "$tap_stdout" "hello" "its stdout reaches the caller"
tap_status 7 "exit status is passed through" hx -- sh -c 'exit 7'
tap_status 143 "death by SIGTERM is 128+15" hx -- sh -c 'kill -TERM $$'
tap_status 127 "a missing command is 127" hx -- /no/such/command
tap_like "$tap_stderr" "execute /no/such/command: No such file or directory" "and says why"
tap_status 126 "a file that is not executable is 126" hx -- /etc/passwd
tap_status 125 "a missing working directory is a setup failure (125)" hx --workdir /nowhere -- true
tap_like "$tap_stderr" "working directory /nowhere" "naming the directory"

tap_ok "stdin reaches the command" sh -c "echo piped | '$HUTCH_BIN' exec --rootfs '$img' -- cat > '$tmp/out'"
tap_is "$(cat "$tmp/out")" "piped" "and comes back out"

tap_ok "uid 0 inside" hx -- id -u
tap_is "$tap_stdout" "0" "the payload is root of its user namespace"
tap_ok "uid map" hx -- cat /proc/self/uid_map
first=$(echo "$tap_stdout" | awk 'NR==1 {print $1, $2}')
tap_is "$first" "0 $(id -u)" "uid 0 inside is the invoking user"

# An image with files of other owners needs the subordinate range mapped;
# one owned by root alone runs with uid 0 mapped and nothing else.
python3 - "$tmp/owned.tar" <<'PY'
import io, sys, tarfile
with tarfile.open(sys.argv[1], "w") as t:
    for name, uid in (("bin", 0), ("home", 0), ("home/user", 1000)):
        i = tarfile.TarInfo(name); i.type = tarfile.DIRTYPE; i.mode = 0o755; i.uid = i.gid = uid
        t.addfile(i)
    i = tarfile.TarInfo("bin/busybox"); data = open("/bin/busybox", "rb").read()
    i.size = len(data); i.mode = 0o755
    t.addfile(i, io.BytesIO(data))
    for app in ("sh", "cat", "stat", "wc"):
        i = tarfile.TarInfo("bin/" + app); i.type = tarfile.SYMTYPE; i.linkname = "busybox"
        t.addfile(i)
PY
tap_ok "import an image with a directory owned by uid 1000" "$HUTCH_BIN" rootfs import "$tmp/owned.tar" --name hutch-test-owned
if [ "$HUTCH_TEST_MODE" = rootless ] && ! grep -q "^$(id -un):" /etc/subuid; then
  tap_skip "the owner inside is 1000" "this user has no subordinate range"
else
  tap_ok "its owner inside" "$HUTCH_BIN" exec --rootfs hutch-test-owned --env PATH=/bin -- stat -c %u /home/user
  tap_is "$tap_stdout" "1000" "the owner inside is 1000"
  tap_ok "its uid map" "$HUTCH_BIN" exec --rootfs hutch-test-owned --env PATH=/bin -- cat /proc/self/uid_map
  tap_is "$(echo "$tap_stdout" | wc -l)" "$([ "$HUTCH_TEST_MODE" = root ] && echo 1 || echo 2)" "maps the range it needs"
fi
tap_ok "the root-owned image's uid map" hx -- cat /proc/self/uid_map
tap_is "$(echo "$tap_stdout" | wc -l)" "1" "maps uid 0 (or root's identity) alone"
"$HUTCH_BIN" rootfs rm hutch-test-owned >/dev/null

tap_ok "capabilities" hx -- grep -E '^(Cap|NoNewPrivs|Seccomp:)' /proc/self/status
for set in CapInh CapPrm CapEff CapBnd CapAmb; do
  tap_like "$tap_stdout" "$set:[[:space:]]+0000000000000000" "$set is empty"
done
tap_like "$tap_stdout" "NoNewPrivs:[[:space:]]+1" "no_new_privs is set"
tap_like "$tap_stdout" "Seccomp:[[:space:]]+2" "a seccomp filter is installed"

tap_ok "process list" hx -- ps -o pid,args
tap_like "$tap_stdout" $'\n *1 ' "pid 1 exists inside"
tap_is "$(echo "$tap_stdout" | awk 'NR>1' | wc -l)" "2" "only init and ps itself are visible, nothing of the host"

# Signals the caller ignores (hutch-agent ignores SIGPIPE, nohup SIGHUP):
# exec keeps them ignored, and init is a fork of the caller, but a command
# starts as in a fresh container, with none ignored and none blocked, so
# that `yes | head -1` ends yes by SIGPIPE.
tap_ok "signal state" sh -c "trap '' PIPE HUP INT; exec '$HUTCH_BIN' exec --rootfs '$img' -- grep -E '^Sig(Blk|Ign)' /proc/self/status"
# glibc keeps signals 32 and 33 for itself (sigaction refuses them): only
# the standard ones are looked at.
ign=$(sed -n 's/^SigIgn:\t//p' <<<"$tap_stdout")
tap_is "$(sed -n 's/^SigBlk:\t//p' <<<"$tap_stdout") $(printf '%x' $((0x${ign:-1} & 0x7fffffff)))" "0000000000000000 0" \
  "a command ignores and blocks no signal, whatever the caller ignores"
tap_ok "a pipeline whose reader ends first" sh -c "trap '' PIPE; exec '$HUTCH_BIN' exec --rootfs '$img' -- sh -c '(yes; echo \"yes: \$?\" >&2) | head -n 1'"
tap_like "$tap_stderr" "yes: 141" "ends its writer by SIGPIPE"
SECRET_FROM_HOST=leak tap_ok "environment" hx --env FOO=bar -- env
tap_like "$tap_stdout" "FOO=bar" "--env is set"
tap_unlike "$tap_stdout" "SECRET_FROM_HOST" "the host's environment does not leak in"
tap_like "$tap_stdout" "PATH=/usr/local/sbin" "a default PATH is set"

tap_ok "workdir" hx --workdir /etc -- pwd
tap_is "$tap_stdout" "/etc" "--workdir sets the working directory"
tap_ok "hostname" hx --hostname box1 -- hostname
tap_is "$tap_stdout" "box1" "--hostname sets it"
tap_ok "default hostname and hosts file" hx -- cat /etc/hosts
tap_like "$tap_stdout" "127.0.0.1[[:space:]]+localhost" "/etc/hosts is written"
tap_ok "resolv.conf" hx -- cat /etc/resolv.conf
tap_unlike "$tap_stdout" "nameserver" "no name server is configured"

# /etc/hosts and /etc/resolv.conf go into the upper layer before the overlay
# is mounted when the image's /etc is root's plain directory (its mode
# kept); an /etc that is a symlink, or none at all, still gets them.
for kind in symlink mode750 none; do
  python3 - "$tmp/etc-$kind.tar" "$kind" <<'PY'
import io, sys, tarfile
kind = sys.argv[2]
with tarfile.open(sys.argv[1], "w") as t:
    def add(name, typ, mode=0o755, data=None, link=None):
        i = tarfile.TarInfo(name); i.type = typ; i.mode = mode
        if link: i.linkname = link
        if data is not None: i.size = len(data)
        t.addfile(i, io.BytesIO(data) if data is not None else None)
    add("bin", tarfile.DIRTYPE)
    add("bin/busybox", tarfile.REGTYPE, data=open("/bin/busybox", "rb").read())
    for app in ("sh", "cat", "stat", "readlink"):
        add("bin/" + app, tarfile.SYMTYPE, link="busybox")
    if kind == "symlink":
        add("etc.real", tarfile.DIRTYPE)
        add("etc.real/hosts", tarfile.REGTYPE, mode=0o644, data=b"image's own\n")
        add("etc", tarfile.SYMTYPE, link="etc.real")
    elif kind == "mode750":
        add("etc", tarfile.DIRTYPE, mode=0o750)
        add("etc/hosts", tarfile.REGTYPE, mode=0o644, data=b"image's own\n")
        add("etc/motd", tarfile.REGTYPE, mode=0o644, data=b"motd\n")
PY
  "$HUTCH_BIN" rootfs import "$tmp/etc-$kind.tar" --name "hutch-test-etc-$kind" >/dev/null 2>&1
  tap_ok "/etc $kind: a sandbox starts" "$HUTCH_BIN" exec --rootfs "hutch-test-etc-$kind" --env PATH=/bin -- \
    sh -c 'cat /etc/hosts /etc/resolv.conf; stat -c "mode=%a" /etc/; readlink /etc; cat /etc/motd 2>/dev/null; true'
  tap_like "$tap_stdout" "127.0.0.1[[:space:]]+localhost" "/etc $kind: /etc/hosts is hutch's"
  tap_unlike "$tap_stdout" "image's own" "/etc $kind: not the image's"
  tap_like "$tap_stdout" "Written by hutch" "/etc $kind: /etc/resolv.conf is hutch's"
  case $kind in
  symlink) tap_like "$tap_stdout" "etc[.]real" "/etc symlink: /etc is still the image's symlink" ;;
  mode750)
    tap_like "$tap_stdout" "mode=750" "/etc mode750: /etc keeps the image's mode"
    tap_like "$tap_stdout" "motd" "/etc mode750: and the image's other files"
    ;;
  none) tap_like "$tap_stdout" "mode=755" "/etc none: /etc is made" ;;
  esac
done

tap_ok "loopback is up" hx -- sh -c 'ip link show lo'
tap_like "$tap_stdout" "UP" "lo is up"
tap_ok "interfaces" hx -- sh -c 'ip -o link | wc -l'
tap_is "$tap_stdout" "1" "loopback is the only interface"

# fds: an fd the caller leaves open must not reach the sandbox
tap_ok "inherited fds are closed" bash -c "exec 7>'$tmp/fd7'; '$HUTCH_BIN' exec --rootfs '$img' -- ls /proc/self/fd"
tap_is "$(echo "$tap_stdout" | sort -n | tr '\n' ' ')" "0 1 2 3 " "only stdio (and ls's own dir fd) are open"

mkdir -p "$tmp/share"
echo from-host >"$tmp/share/in"
tap_ok "bind read-write" hx --bind "$tmp/share:/mnt/share" -- sh -c 'cat /mnt/share/in && echo out > /mnt/share/out'
tap_is "$tap_stdout" "from-host" "a bound host file is readable"
tap_is "$(cat "$tmp/share/out" 2>/dev/null)" "out" "and writes reach the host"
tap_fails "bind read-only refuses writes" hx --bind "$tmp/share:/ro:ro" -- sh -c 'echo x > /ro/new'
tap_ok "the read-only bind's file is absent on the host" test ! -e "$tmp/share/new"
tap_status 2 "a relative bind source is a usage error" hx --bind "share:/x" -- true

# The degraded --proc host-ro, only when asked for: announced, recorded,
# read-only, still masked.
tap_ok "--proc host-ro" hx --json --proc host-ro -- sh -c 'wc -c < /proc/kallsyms; ! echo 1 2>/dev/null > /proc/sys/kernel/ns_last_pid; grep " /proc " /proc/self/mounts'
tap_like "$tap_stderr" "warning: degraded mode --proc host-ro" "is announced on stderr"
tap_like "$tap_stdout" '"degraded_modes":\["proc host-ro"\]' "is recorded in --json"
tap_like "$tap_stdout" "proc /proc proc ro," "mounts the outer /proc read-only"
tap_like "$tap_stdout" "^0" "with kallsyms still masked"
tap_status 2 "an unknown --proc mode is a usage error" hx --proc loose -- true

tap_status 3 "json" hx --json -- sh -c 'exit 3'
tap_like "$tap_stdout" '"exit_code":3' "--json reports the exit code"
tap_like "$tap_stdout" '"timed_out":false' "and timed_out"
tap_like "$tap_stdout" '"id":"[0-9a-f]{12}"' "and the sandbox id"

start=$(date +%s.%N)
tap_status 124 "--timeout kills and exits 124" hx --json --timeout 0.5 -- sleep 30
end=$(date +%s.%N)
tap_like "$tap_stdout" '"timed_out":true' "--json says timed_out"
tap_check "$(awk -v a="$start" -v b="$end" 'BEGIN { exit !(b - a < 10) }'; echo $?)" "the timeout acted well before the command's end"

# A one-shot sandbox keeps its layers on a tmpfs of its own (Linux 6.6+:
# tmpfs holds overlayfs's user xattrs): on disk there is its state alone.
"$HUTCH_BIN" exec --rootfs "$img" -- sh -c 'echo scratch > /written; echo ready; exec sleep 120' >"$tmp/oneshot.out" &
oneshot=$!
tap_ok "a one-shot sandbox runs, its file written" hutch_wait_until 30 grep -qx ready "$tmp/oneshot.out"
if [ "$(printf '%s\n' "$(uname -r | cut -d. -f1-2)" 6.6 | sort -V | head -1)" = 6.6 ]; then
  tap_is "$(cd "$HUTCH_STATE_DIR" && ls -A -- */ 2>/dev/null | tr '\n' ' ')" "audit.jsonl audit.jsonl.head state.json " \
    "a running one-shot sandbox's directory holds its state alone, no layer"
else
  tap_skip "a running one-shot sandbox's directory holds its state alone" "tmpfs has no user xattrs before Linux 6.6"
fi
kill -TERM "$oneshot"
wait "$oneshot"
# The seccomp cache's key stays: it is the user's, not a sandbox's.
tap_ok "state directory is empty after one-shot runs" test -z "$(hutch_state_entries "$HUTCH_STATE_DIR" 2>/dev/null)"
tap_ok "--keep" hx --keep --json -- sh -c 'echo kept > /kept'
id=$(echo "$tap_stdout" | sed -n 's/.*"id":"\([0-9a-f]*\)".*/\1/p')
tap_ok "--keep leaves the upper layer with the sandbox's writes" test -f "$HUTCH_STATE_DIR/$id/upper/kept"
tap_ok "hutch rm removes a kept sandbox" "$HUTCH_BIN" rm "$id"
tap_ok "and its directory is gone" test ! -e "$HUTCH_STATE_DIR/$id"

tap_status 125 "a missing image is a runtime failure" "$HUTCH_BIN" exec --rootfs no-such-image -- true
tap_like "$tap_stderr" "hutch rootfs import" "with the fix"

# Signals sent to hutch reach the command (once its trap is set).
"$HUTCH_BIN" exec --rootfs "$img" -- sh -c 'trap "exit 42" TERM; echo trapped; while :; do sleep 0.1; done' \
  >"$tmp/trap.out" &
pid=$!
tap_ok "a command that traps SIGTERM runs" hutch_wait_until 30 grep -qx trapped "$tmp/trap.out"
kill -TERM $pid
wait $pid
tap_is "$?" "42" "SIGTERM to hutch is forwarded to the command"
# A command that a process of the sandbox stopped (here: itself) holds the
# forwarded SIGTERM pending: init continues it, so it ends, and hutch too.
"$HUTCH_BIN" exec --rootfs "$img" -- sh -c 'echo stopping; kill -STOP $$; echo resumed' >"$tmp/stop.out" &
pid=$!
tap_ok "a command that stops itself" hutch_wait_until 30 grep -qx stopping "$tmp/stop.out"
sleep 0.2
kill -TERM $pid
tap_ok "ends on SIGTERM to hutch all the same" hutch_wait_until 10 sh -c "! kill -0 $pid 2>/dev/null"
wait $pid
tap_is "$?" "143" "by that SIGTERM (128+15)"
kill -KILL $pid 2>/dev/null

# The network helper's failure is reported as itself, not as the broken
# socket it leaves: in a user namespace that may make no network namespace.
if unshare -Ur true 2>/dev/null; then
  tap_status 125 "exec where no network namespace may be made" unshare -Ur sh -c \
    'echo 0 > /proc/sys/user/max_net_namespaces && exec "$0" exec --rootfs "$1" -- true' "$HUTCH_BIN" "$img"
  tap_like "$tap_stderr" "create the sandbox's network namespace" "the helper's own error is the one reported"
fi

# HUTCH_DEBUG times each named step of a start, in order.
tap_ok "HUTCH_DEBUG: a start" env HUTCH_DEBUG=1 "$HUTCH_BIN" exec --rootfs "$img" -- true
tap_is "$(printf '%s\n' "$tap_stderr" | sed -n 's/^hutch: debug: start: \(step_[a-z_]*\) [0-9.]* ms$/\1/p' | tr '\n' ' ')" \
  "step_check_stdio step_prepare step_choose_layer step_reserve step_spawn step_handshake step_record " \
  "HUTCH_DEBUG: each step of the start is timed, in order"
steps=$(printf '%s\n' "$tap_stderr" | sed -n 's/^hutch: debug: start: child: \([a-z_]*\) [0-9.]* ms$/\1/p' | tr '\n' ' ')
tap_like "$steps" "^step_die_with_parent net_sandbox_start step_wait_for_id_maps .* step_root_layers .* mounts_pivot_root net_sandbox_go .* net_sandbox_finish .* step_lock_down_init step_seccomp_init \$" \
  "HUTCH_DEBUG: the child's steps are timed too, in order"
tap_ok "without HUTCH_DEBUG no step is reported" hx -- true
tap_unlike "$tap_stderr" "debug: start:" "no debug line"

rm -rf "$tmp"
tap_done
