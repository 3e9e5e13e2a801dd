#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# hutch's own directories are out of every sandbox's reach (issue 13,
# finding 2): a --bind, read-only or not, that is, contains or lies inside
# the image store, the state directory or the cache is refused, however the
# path is spelled (a link, "..", a second mount of the same directory); a
# read-write bind may not cover the policy's files.  And a long-lived
# sandbox's control socket obeys only hutch, not another client of the same
# user that reached it: the attacks of the issue, replayed.
. "$(dirname "$0")/../lib/tap.sh"

img=$(hutch_test_rootfs busybox) || tap_skip_all "busybox test rootfs unavailable"
tmp=$(hutch_test_tmpdir)

# A home as an agent's user has it: hutch's cache and state inside.
home=$tmp/home
mkdir -p "$home/work" "$home/.cache"
export HUTCH_CACHE_DIR=$home/.cache/hutch HUTCH_STATE_DIR=$home/.local/state/hutch/run
hx() { "$HUTCH_BIN" exec --rootfs "$img" "$@"; }
tap_ok "a sandbox with a bind of an ordinary directory runs" hx --bind "$home/work:/work" -- touch /work/ok
tap_ok "and wrote through it" test -f "$home/work/ok"
cache_file=$("$HUTCH_BIN" policy show --effective --json | jq -r .seccomp.cache_file)
tap_ok "the seccomp cache file exists ($cache_file)" test -f "$cache_file"
before=$(sha256sum <"$cache_file")

refused() { # DESC SOURCE WANT-REGEX [ro]
  local desc=$1 src=$2 re=$3 mode=${4:-}
  rm -f "$home/work/ran"
  tap_status 125 "$desc: refused" hx --bind "$src:/h${mode:+:$mode}" --bind "$home/work:/work" -- touch /work/ran
  tap_like "$tap_stderr" "^hutch: --bind $src: $re" "$desc: says what it would expose"
  tap_like "$tap_stderr" "hint: .*(HUTCH_STORE|read-only)" "$desc: with a hint"
  tap_ok "$desc: nothing ran" test ! -e "$home/work/ran"
}

# The issue's attack: a read-write bind of $HOME, a common agent setup, to
# overwrite the seccomp cache of every later sandbox.
rm -f "$home/work/ran"
tap_status 125 "--bind \$HOME (read-write): refused" \
  hx --bind "$home:/h" -- sh -c 'for f in /h/.cache/hutch/seccomp/*.bpf; do printf "\006\0\0\0\0\0\377\177" >"$f"; done'
tap_like "$tap_stderr" "^hutch: --bind $home: contains hutch's (cache|state directory)" "and says what it would expose"
tap_is "$(sha256sum <"$cache_file")" "$before" "the cache was not touched"
refused "--bind \$HOME read-only" "$home" "contains hutch's (cache|state directory)" ro
refused "a bind of the cache's parent" "$home/.cache" "contains hutch's cache $HUTCH_CACHE_DIR"
refused "a bind of the cache itself, read-only" "$HUTCH_CACHE_DIR" "is hutch's cache" ro
refused "a bind of a directory inside the cache" "$HUTCH_CACHE_DIR/seccomp" "lies inside hutch's cache"
refused "a bind of one file in the cache" "$cache_file" "lies inside hutch's cache"
# The state directory holds the other sandboxes' upper layers and control
# sockets: a read-only mount does not stop connect() on a socket.
refused "a bind of the state directory, read-only" "$HUTCH_STATE_DIR" "is hutch's state directory" ro
refused "a bind above the state directory" "$home/.local" "contains hutch's state directory"
store_parent=$(dirname "$HUTCH_STORE")
refused "a bind that contains the image store" "$store_parent" "contains hutch's image store" ro
refused "a bind of an image in the store" "$HUTCH_STORE/images" "lies inside hutch's image store"

# Other spellings of the same directories.
ln -s "$home/.cache" "$tmp/alias"
refused "a symlink to the cache's parent" "$tmp/alias" "contains hutch's cache"
refused "a path through a symlink into the cache" "$tmp/alias/hutch/seccomp" "lies inside hutch's cache"
mkdir -p "$tmp/other"
refused "a path with .. to \$HOME" "$tmp/other/../home" "contains hutch's (cache|state directory)"
if [ "$HUTCH_TEST_MODE" = root ]; then
  # A second mount of the cache's parent, in a mount namespace of the
  # test's own: the same inodes under another name.
  mkdir -p "$tmp/mnt"
  tap_status 125 "a bind mount of \$HOME elsewhere: refused" \
    unshare -m sh -c 'mount --bind "$1" "$2" && exec "$3" exec --rootfs "$4" --bind "$2:/h:ro" -- true' sh \
    "$home" "$tmp/mnt" "$HUTCH_BIN" "$img"
  tap_like "$tap_stderr" "^hutch: --bind $tmp/mnt: contains hutch's" "and names what it contains"
else
  tap_skip "a bind mount of \$HOME elsewhere" "needs root to mount"
fi

# The policy: readable, not writable.
mkdir -p "$tmp/pol"
cp "$HUTCH_POLICY" "$tmp/pol/"
seccomp=$(sed -n 's/^seccomp *= *//p' "$HUTCH_POLICY")
cp "$(dirname "$HUTCH_POLICY")/$seccomp" "$tmp/pol/"
pol=$tmp/pol/$(basename "$HUTCH_POLICY")
rm -f "$home/work/ran"
tap_status 125 "a read-write bind of the policy's directory: refused" \
  hx --policy "$pol" --bind "$tmp/pol:/p" -- sh -c 'echo "{\"defaultAction\":\"SCMP_ACT_ALLOW\"}" >/p/seccomp.json'
tap_like "$tap_stderr" "contains the policy file $pol" "and names the policy"
tap_like "$tap_stderr" "hint: bind it read-only" "with the way out"
tap_ok "a read-only bind of it works" hx --policy "$pol" --bind "$tmp/pol:/p:ro" -- cat "/p/$seccomp"
tap_status 125 "a read-write bind of the seccomp profile: refused" \
  hx --policy "$pol" --bind "$tmp/pol/$seccomp:/s.json" -- true
tap_like "$tap_stderr" "is the policy's seccomp profile" "and names it"

# hutch run copies the sandbox's files into its output directory, and its
# input directory into the sandbox: the same check, before any model call.
run_args=(--prompt-config "$HUTCH_SRCDIR/prompts/default.yaml" --model m --base-url http://127.0.0.1:9 --query q)
tap_status 2 "hutch run with its output directory in the cache: refused" \
  "$HUTCH_BIN" run "${run_args[@]}" --output-dir "$HUTCH_CACHE_DIR/out"
tap_like "$tap_stderr" "output directory $HUTCH_CACHE_DIR/out/[0-9_]+: lies inside hutch's cache" "and says why"
tap_status 2 "hutch run with \$HOME as its input directory: refused" \
  "$HUTCH_BIN" run "${run_args[@]}" --input-dir "$home" --output-dir "$tmp/out"
tap_like "$tap_stderr" "input directory $home: contains hutch's" "and says why"

# hutch-agent's settings name the model's URL, which gets the API key.
export XDG_CONFIG_HOME=$home/.config
mkdir -p "$XDG_CONFIG_HOME/hutch"
tap_status 125 "a read-write bind of hutch's user configuration: refused" hx --bind "$XDG_CONFIG_HOME:/c" -- true
tap_like "$tap_stderr" "contains hutch's user configuration" "and names it"
tap_ok "a read-only bind of it works" hx --bind "$XDG_CONFIG_HOME:/c:ro" -- true

# ---- the control socket: hutch's callers only ----
id=$(timeout 20 "$HUTCH_BIN" create --rootfs "$img" 2>/dev/null)
tap_like "$id" "^[0-9a-f]{12}$" "a long-lived sandbox"
sock=$HUTCH_STATE_DIR/$id/ctl.sock
init_pid=$(jq -r .pid "$HUTCH_STATE_DIR/$id/state.json")
tap_like "$init_pid" "^[0-9]+$" "its init's host pid is recorded"
# A client of the same user that reached the socket (as a sandbox would
# through a bind of the state directory, were it allowed) asks init to run a
# command, with the exec request of hutch's wire format (runtime/common/sync.c,
# request.c).  PROOF: none, a pidfd of the client itself, or init's.
cat >"$tmp/ctl-client.py" <<'EOF'
import os, socket, struct, sys
sock, proof, init_pid = sys.argv[1], sys.argv[2], int(sys.argv[3])
argv = ["sh", "-c", "echo pwned > /root/pwned-" + proof]
payload = b"".join(b"A" + struct.pack("=I", len(a)) + a.encode() for a in argv)
header = struct.pack("=IiII", 5, 0, len(payload), 0)  # SYNC_EXEC
null = os.open("/dev/null", os.O_RDWR)
fds = [null, null, null]
if proof == "self":
    fds.append(os.pidfd_open(os.getpid()))
elif proof == "init":
    fds.append(os.pidfd_open(init_pid))
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
s.connect(sock)
socket.send_fds(s, [header + payload], fds)
s.settimeout(10)
kinds = {2: "refused", 6: "started", 4: "exited"}
replies = []
try:
    while True:
        m = s.recv(70000)
        if not m:
            break
        replies.append(kinds.get(struct.unpack("=I", m[:4])[0], "other"))
        if replies[-1] != "started":
            break
except socket.timeout:
    replies.append("timeout")
print(" ".join(replies) or "closed")
EOF
tap_ok "a client without a proof connects" python3 "$tmp/ctl-client.py" "$sock" none "$init_pid"
tap_is "$tap_stdout" refused "and is refused"
tap_ok "a client with a pidfd of another process" python3 "$tmp/ctl-client.py" "$sock" self "$init_pid"
tap_is "$tap_stdout" refused "is refused"
tap_ok "exec --in still works" "$HUTCH_BIN" exec --in "$id" -- ls /root
tap_is "$tap_stdout" "" "and nothing the refused clients asked for ran"
# The same client with init's pidfd, which only the host side can open, is
# obeyed: the refusals above were the proof's, not a malformed request's.
tap_ok "a client with init's pidfd" python3 "$tmp/ctl-client.py" "$sock" init "$init_pid"
tap_like "$tap_stdout" "^started" "is obeyed"
tap_ok "exec --in" "$HUTCH_BIN" exec --in "$id" -- ls /root
tap_is "$tap_stdout" "pwned-init" "sees what that client ran"
# The sandbox's root, user namespace, tmpfs and network namespace
# (SYNC_ROOT_FD, which hutch uses to read and write a sandbox's files and
# to take its writable layer) go to a proven caller alone.
cat >"$tmp/root-client.py" <<'EOF'
import os, socket, struct, sys
sock, proof, init_pid = sys.argv[1], sys.argv[2], int(sys.argv[3])
fds = []
if proof == "self":
    fds.append(os.pidfd_open(os.getpid()))
elif proof == "init":
    fds.append(os.pidfd_open(init_pid))
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
s.connect(sock)
socket.send_fds(s, [struct.pack("=IiII", 11, 0, 0, 0)], fds)  # SYNC_ROOT_FD
s.settimeout(10)
msg, got, _, _ = socket.recv_fds(s, 70000, 4)
kind = struct.unpack("=I", msg[:4])[0] if msg else 0
print({2: "refused", 11: "root"}.get(kind, "other"), len(got))
EOF
for proof in none self; do
  tap_ok "a root request with proof '$proof'" python3 "$tmp/root-client.py" "$sock" "$proof" "$init_pid"
  tap_is "$tap_stdout" "refused 0" "is refused, and no fd comes back"
done
tap_ok "a root request with init's pidfd" python3 "$tmp/root-client.py" "$sock" init "$init_pid"
tap_is "$tap_stdout" "root 4" "is answered with the root, the user namespace, the tmpfs and the network namespace"
tap_ok "hutch rm" "$HUTCH_BIN" rm "$id"

rm -rf "$tmp"
tap_done
