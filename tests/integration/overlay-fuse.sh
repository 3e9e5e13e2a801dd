#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# --overlay fuse, the degraded mode for hosts that refuse overlayfs in a user
# namespace: a real fuse-overlayfs serves the sandbox's root.  Writes land in
# the upper directory and never in the image; the daemon is in the sandbox's
# user namespace but neither in its pid nor its mount namespace, so the
# sandbox cannot see or signal it; it is gone after the sandbox; the mode is
# announced on stderr and recorded in --json and state.json; without the
# program the start fails closed, naming it and `hutch doctor`.
. "$(dirname "$0")/../lib/tap.sh"

[ -c /dev/fuse ] || tap_skip_all "/dev/fuse is absent on this host (the fuse module is not loaded)"
fuse_prog=$(command -v fuse-overlayfs) || tap_skip_all "fuse-overlayfs is not installed (Debian: apt-get install fuse-overlayfs)"
img=$(hutch_test_rootfs busybox) || tap_skip_all "the busybox test rootfs is not available"

json_get() { # JSON EXPR (python, with d the parsed object)
  printf '%s' "$1" | python3 -c 'import json, sys; d = json.load(sys.stdin); v = eval(sys.argv[1]); print(v if not isinstance(v, (list, dict)) else json.dumps(v))' "$2"
}

# ---- a one-shot sandbox, kept, so its upper directory can be read after ----
tap_ok "exec --overlay fuse runs a command" "$HUTCH_BIN" exec --rootfs "$img" --keep --json --overlay fuse -- \
  sh -c 'echo written > /newfile && cat /newfile && echo more >> /etc/passwd && rm /linuxrc && mkdir /newdir'
out=$tap_stdout
tap_like "$out" '^written' "the write is read back through the FUSE root"
tap_like "$tap_stderr" "warning: degraded mode --overlay fuse, as asked" "the degraded mode is announced on stderr"
json=$(printf '%s\n' "$out" | tail -n 1)
tap_is "$(json_get "$json" 'd["degraded_modes"]')" '["overlay fuse", "disk unbounded"]' "--json lists the degraded mode"
id=$(json_get "$json" 'd["id"]')
sb="$HUTCH_STATE_DIR/$id"
state=$(cat "$sb/state.json")
tap_is "$(json_get "$state" '"overlay fuse" in d["degraded"]')" True "state.json's degraded list names overlay fuse"
rootfs=$(json_get "$state" 'd["rootfs"]')
tap_is "$(cat "$sb/upper/newfile")" written "the new file landed in the upper directory"
tap_ok "a new directory landed in the upper directory" test -d "$sb/upper/newdir"
tap_like "$(cat "$sb/upper/etc/passwd")" $'\n''more$' "the changed image file was copied up with the change"
tap_ok "the image has no new file" test ! -e "$rootfs/newfile"
tap_unlike "$(cat "$rootfs/etc/passwd")" $'\n''more$' "the image's file is unchanged"
tap_ok "the image keeps the file deleted in the sandbox" test -e "$rootfs/linuxrc"
tap_ok "the deletion is a whiteout in the upper directory" test -c "$sb/upper/linuxrc"
tap_is "$(pgrep -f -- "upperdir=$sb/upper" || true)" "" "no fuse-overlayfs is left after the one-shot sandbox"
"$HUTCH_BIN" rm "$id" >/dev/null 2>&1

# ---- a long-lived sandbox: where the daemon lives ----
tap_ok "create --overlay fuse" "$HUTCH_BIN" create --rootfs "$img" --overlay fuse --json
cid=$(json_get "$tap_stdout" 'd["id"]')
tap_is "$(json_get "$tap_stdout" 'd["degraded_modes"]')" '["overlay fuse", "disk unbounded"]' "create --json lists the degraded mode"
tap_ok "hutch ps --json" "$HUTCH_BIN" ps --json
tap_is "$(json_get "$tap_stdout" "[s for s in d if s['id'] == '$cid'][0]['degraded_modes']")" '["overlay fuse", "disk unbounded"]' \
  "hutch ps --json lists the degraded mode"
tap_ok "hutch ps" "$HUTCH_BIN" ps
tap_like "$(grep "^$cid " <<<"$tap_stdout")" " none +overlay-fuse,disk-unbounded " "hutch ps: a DEGRADED column"
cstate=$(cat "$HUTCH_STATE_DIR/$cid/state.json")
dpid=$(json_get "$cstate" 'd["fuse_overlayfs"]["pid"]')
tap_like "$(tr '\0' ' ' <"/proc/$dpid/cmdline")" "fuse-overlayfs .*upperdir=$HUTCH_STATE_DIR/$cid/upper" \
  "state.json records the daemon's pid"
# Namespace links read from inside (init is not dumpable: a rootless host
# user may not read its /proc entries).
tap_ok "read the sandbox's namespaces from inside" "$HUTCH_BIN" exec --in "$cid" -- \
  sh -c 'for n in user pid mnt; do readlink /proc/self/ns/$n; done'
read -r -d '' in_user in_pid in_mnt <<<"$tap_stdout"
tap_is "$(readlink "/proc/$dpid/ns/user")" "$in_user" "the daemon is in the sandbox's user namespace"
tap_is "$(readlink "/proc/$dpid/ns/pid")" "$(readlink /proc/self/ns/pid)" \
  "the daemon is in hutch's pid namespace"
[ -n "$in_pid" ] && [ "$(readlink "/proc/$dpid/ns/pid")" != "$in_pid" ]
tap_check $? "the daemon is not in the sandbox's pid namespace"
[ -n "$in_mnt" ] && [ "$(readlink "/proc/$dpid/ns/mnt")" != "$in_mnt" ]
tap_check $? "the daemon is not in the sandbox's mount namespace"
tap_ok "exec --in the fuse-backed sandbox" "$HUTCH_BIN" exec --in "$cid" -- \
  sh -c 'for p in /proc/[0-9]*; do printf "%s " "$(tr "\0" " " < $p/cmdline)"; done; echo; echo x > /from-exec'
tap_unlike "$tap_stdout" "fuse-overlayfs" "no process in the sandbox is the daemon"
tap_like "$tap_stdout" "sh -c" "the listing inside did see the sandbox's own processes"
tap_ok "a write through exec --in lands in the upper directory" test -f "$HUTCH_STATE_DIR/$cid/upper/from-exec"
tap_ok "hutch rm the fuse-backed sandbox" "$HUTCH_BIN" rm "$cid"
gone=yes
if [ -r "/proc/$dpid/cmdline" ] && [ -n "$(tr -d '\0' <"/proc/$dpid/cmdline")" ]; then gone=no; fi
tap_is "$gone" yes "the daemon is gone after hutch rm"

# ---- fails closed ----
before=$(ls "$HUTCH_STATE_DIR" | sort)
HUTCH_FUSE_OVERLAYFS=/nonexistent/fuse-overlayfs tap_status 125 "without fuse-overlayfs the start fails (125)" \
  "$HUTCH_BIN" exec --rootfs "$img" --overlay fuse -- true
tap_like "$tap_stderr" "fuse-overlayfs" "the refusal names fuse-overlayfs"
tap_like "$tap_stderr" "hutch doctor" "the refusal points to hutch doctor"
tap_is "$(ls "$HUTCH_STATE_DIR" | sort)" "$before" "the refused start leaves no sandbox directory"
tap_status 2 "--overlay wants kernel or fuse" "$HUTCH_BIN" exec --rootfs "$img" --overlay bogus -- true
tap_ok "--overlay kernel is the default mode, not degraded" "$HUTCH_BIN" exec --rootfs "$img" --json --overlay kernel -- true
tap_unlike "$tap_stdout" "degraded_modes" "--overlay kernel lists no degraded mode"
tap_unlike "$tap_stderr" "degraded mode --overlay" "--overlay kernel announces nothing"

# ---- hutch run passes the option to its sandbox ----
if [ -x /usr/bin/python3 ]; then
  . "$HUTCH_SRCDIR/tests/lib/agent.sh"
  AGENT_IMAGE=$img
  mock_start '[{"calls": [["execute_bash", {"command": "echo fused > /testbed/output/f.txt"}]]},
    {"calls": [["submit", {}]]}]'
  tap_ok "hutch run --overlay fuse submits" hrun --query "write f.txt" --overlay fuse
  run_dir
  tap_is "$(cat "$RUN_DIR/files/f.txt" 2>&1)" fused "its sandbox wrote through the FUSE root"
  tap_like "$(cat "$RUN_DIR/run.log")" "warning: degraded mode --overlay fuse, as asked" "run.log records the degraded mode"
  mock_stop
  tap_status 2 "hutch run --overlay wants kernel or fuse" "$HUTCH_BIN" run --query x --model m --overlay bogus
else
  tap_skip "hutch run --overlay fuse" "python3 is needed for the mock model server"
fi

tap_done
