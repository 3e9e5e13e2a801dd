#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# hutch doctor names every limit on the number of live sandboxes: its value,
# how many more sandboxes it allows and the command that raises it; and a
# start raises the soft RLIMIT_NPROC itself (it clones at the hard limit).
. "$(dirname "$0")/../lib/tap.sh"

tmp=$(hutch_test_tmpdir)

json_field() { # JSON ID FIELD
  printf '%s' "$1" | python3 -c '
import json, sys
d = json.load(sys.stdin)
for c in d["checks"]:
    if c["id"] == sys.argv[1]:
        v = c.get(sys.argv[2])
        print("" if v is None else v)' "$2" "$3"
}

# ---- this host ----
tap_ok "hutch doctor --json" "$HUTCH_BIN" doctor --json
json=$tap_stdout
for id in pid_max threads_max nproc namespaces file_max pids_cgroup memory; do
  tap_like "$(json_field "$json" "capacity.$id" status)" "^(info|warn|skip)$" "capacity.$id is reported"
done
tap_like "$(json_field "$json" capacity.state_inodes detail)" "free in .*: about [0-9]+ more sandboxes" \
  "the state directory's free inodes, in sandboxes"
tap_like "$(json_field "$json" capacity.pid_max detail)" "^[0-9]+ \([0-9]+ in use\): about [0-9]+ more sandboxes" \
  "kernel.pid_max: its value, what is in use, the sandboxes it allows"
tap_like "$(json_field "$json" capacity.pid_max fix)" "sysctl -w kernel.pid_max=" "and the command that raises it"
tap_like "$(json_field "$json" capacity detail)" "^about [0-9]+ more idle sandboxes from .hutch create.; .+ is reached first" \
  "the summary names the tightest limit"
if [ "$(id -u)" -eq 0 ]; then
  tap_is "$(json_field "$json" capacity.nproc status)" skip "RLIMIT_NPROC does not bind root"
fi

# ---- limits this host does not have (the sysctl reads are faked) ----
fake=$tmp/sys
mkdir -p "$fake/kernel" "$fake/user" "$fake/fs"
echo 1 >"$fake/kernel/pid_max"
echo 4194304 >"$fake/kernel/threads-max"
echo 9223372036854775807 >"$fake/fs/file-max"
for k in user mnt pid ipc uts cgroup; do echo 100000 >"$fake/user/max_${k}_namespaces"; done
echo 500 >"$fake/user/max_net_namespaces"
tap_ok "doctor with kernel.pid_max=1 and user.max_net_namespaces=500" \
  env HUTCH_PROBE_SYSCTL_ROOT="$fake" "$HUTCH_BIN" doctor --json
fjson=$tap_stdout
tap_is "$(json_field "$fjson" capacity.pid_max status)" warn "pid_max: a warning"
tap_like "$(json_field "$fjson" capacity.pid_max detail)" "^1 \([0-9]+ in use\): about 0 more sandboxes" \
  "pid_max: its value and no room left"
tap_is "$(json_field "$fjson" capacity.namespaces status)" warn "max_net_namespaces=500: a warning"
tap_like "$(json_field "$fjson" capacity.namespaces detail)" "user.max_net_namespaces = 500: at most 500 sandboxes" \
  "the lowest namespace limit is named, with what it allows"
tap_like "$(json_field "$fjson" capacity.namespaces fix)" "sysctl -w user.max_net_namespaces=[0-9]+" \
  "its fix raises that sysctl"
tap_unlike "$(json_field "$fjson" capacity.namespaces fix)" "max_mnt_namespaces" "and not those that are high enough"
tap_is "$(json_field "$fjson" capacity status)" warn "the summary is a warning"
tap_like "$(json_field "$fjson" capacity detail)" "about 0 more .*kernel.pid_max is reached first" \
  "and names pid_max as the first limit reached"
tap_like "$(json_field "$fjson" capacity fix)" "sysctl -w kernel.pid_max=" "with its fix"
tap_ok "the table" env HUTCH_PROBE_SYSCTL_ROOT="$fake" "$HUTCH_BIN" doctor
tap_like "$tap_stdout" $'\n''WARN +live sandboxes: kernel.pid_max ' "the table shows the warning"
tap_like "$tap_stdout" "fix: +As root: .sysctl -w kernel.pid_max=4194304" "and the fix under it"

# ---- RLIMIT_NPROC ----
if [ "$(id -u)" -ne 0 ]; then
  hard=$(ulimit -Hu)
  if [ "$hard" = unlimited ]; then
    tap_skip "a low hard RLIMIT_NPROC is named" "the hard limit is unlimited and cannot be lowered back"
  else
    # Lowering the hard limit is for good, so only in a child: prlimit.
    low=$((hard < 5000 ? hard : 5000))
    tap_ok "doctor under a hard RLIMIT_NPROC of $low" prlimit --nproc="$low:$low" "$HUTCH_BIN" doctor --json
    njson=$tap_stdout
    tap_is "$(json_field "$njson" capacity.nproc status)" warn "RLIMIT_NPROC $low: a warning"
    tap_like "$(json_field "$njson" capacity.nproc detail)" "^$low \([0-9]+ processes of uid $(id -u)\): about [0-9]+ more" \
      "its value, this user's processes, the sandboxes it allows"
    tap_like "$(json_field "$njson" capacity.nproc fix)" "hard nproc.*/etc/security/limits.conf" "the fix raises the hard limit"
    # LeakSanitizer's check at exit needs a thread of its own, which a soft
    # limit of 1 refuses (the sanitizer pass; no effect otherwise).
    tap_ok "doctor under a soft RLIMIT_NPROC of 1" env ASAN_OPTIONS=detect_leaks=0 prlimit --nproc="1:$hard" \
      "$HUTCH_BIN" doctor --json
    tap_like "$(json_field "$tap_stdout" capacity.nproc detail)" "^soft 1, hard $hard .*hutch raises the soft limit" \
      "a soft limit below the hard one is not a cap: hutch raises it"
  fi
  img=$(hutch_test_rootfs busybox) || img=
  if [ -n "$img" ] && [ "$hard" != unlimited ]; then
    # This user has processes running already: with a soft limit of 1 the
    # clone of a sandbox's init fails unless hutch raises it.
    tap_ok "hutch create under a soft RLIMIT_NPROC of 1" env ASAN_OPTIONS=detect_leaks=0 prlimit --nproc="1:$hard" \
      "$HUTCH_BIN" create --rootfs "$img"
    id=$tap_stdout
    tap_ok "the sandbox answers" "$HUTCH_BIN" exec --in "$id" -- sh -c 'echo up'
    tap_is "$tap_stdout" up "and runs commands"
    tap_ok "and is removed" "$HUTCH_BIN" rm "$id"
  else
    tap_skip "hutch create under a soft RLIMIT_NPROC of 1" "busybox test rootfs unavailable or no hard limit"
  fi
fi

rm -rf "$tmp"
tap_done
