#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# hutch doctor: its verdicts on this host, its --json, its exit status; then
# the environments the test builds itself (namespaces refused by a seccomp
# filter as in Docker, a zero user namespace limit, a masked /proc as in any
# container, a user without a subordinate id range).  In each refusing
# environment the doctor names the cause and fix, and `hutch exec` fails
# closed naming the step, the errno and `hutch doctor`.
. "$(dirname "$0")/../lib/tap.sh"

tmp=$(hutch_test_tmpdir)
deny="$HUTCH_BUILDDIR/tests/helpers/deny-userns"

# Status of a check in --json output: doctor_status JSON ID
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
tap_ok "hutch doctor exits 0 on this host" "$HUTCH_BIN" doctor
table=$tap_stdout
tap_like "$table" $'\n''OK +user namespace ' "user namespaces: OK"
tap_like "$table" $'\n''OK +overlayfs in a user namespace ' "overlayfs in a user namespace: OK"
tap_like "$table" $'\n''OK +fresh procfs in a pid namespace ' "fresh procfs: OK"
tap_like "$table" $'\n''OK +seccomp filter +a filter was installed and enforced' "seccomp: OK"
tap_like "$table" $'\n''OK +no_new_privs ' "no_new_privs: OK"
tap_like "$table" $'\n''OK +network namespace \(loopback\) ' "network namespace: OK"
tap_like "$table" "A full-isolation sandbox can start on this host" "the verdict is stated"
tap_unlike "$table" $'\e\\[' "no colour when stdout is not a terminal"

# The cgroup layout, judged independently of the doctor.
if [ "$(stat -fc %T /sys/fs/cgroup)" = cgroup2fs ]; then
  layout=unified
elif [ -d /sys/fs/cgroup/unified ] && [ "$(stat -fc %T /sys/fs/cgroup/unified)" = cgroup2fs ]; then
  layout=hybrid
else
  layout=v1
fi
tap_like "$table" "cgroup v2 and delegation +$layout" "the cgroup layout is named: $layout"
if [ "$layout" != unified ]; then
  tap_like "$table" "WARN +cgroup v2 and delegation" "a $layout host is a warning, not a failure"
  tap_like "$table" "systemd.unified_cgroup_hierarchy=1" "its fix names the kernel command line option"
fi

tap_ok "hutch doctor --json exits 0" "$HUTCH_BIN" doctor --json
json=$tap_stdout
tap_ok "--json is valid JSON with ready=true" python3 -c '
import json, sys
d = json.loads(sys.argv[1])
assert d["ready"] is True, d["ready"]
assert isinstance(d["checks"], list) and len(d["checks"]) >= 10
assert d["degraded"] == []' "$json"
tap_ok "--json and the table agree on every check" python3 -c '
import json, re, sys
d = json.loads(sys.argv[1])
table = sys.argv[2].splitlines()
for c in d["checks"]:
    line = [l for l in table if re.match(r"[A-Z]+ +" + re.escape(c["title"]) + " ", l)]
    assert len(line) == 1, (c["title"], line)
    assert line[0].split()[0] == c["status"].upper(), (c, line[0])
    if c["status"] == "fail" and c["required"]:
        sys.exit("a required check failed but ready is true")' "$json" "$table"
tap_is "$(json_field "$json" cgroup detail | cut -d' ' -f1)" "$layout" "--json names the cgroup layout"
tap_is "$(json_field "$json" userns status)" ok "--json: userns ok"
tap_is "$(json_field "$json" procfs status)" ok "--json: procfs ok"
tap_is "$(json_field "$json" overlay status)" ok "--json: overlay ok"
tap_is "$(json_field "$json" seccomp status)" ok "--json: seccomp ok"
tap_status 2 "an unknown option is a usage error" "$HUTCH_BIN" doctor --bogus

# A state directory on a filesystem mounted with (synchronous) discard is
# named; one on a tmpfs is not.
dtmp=$(mktemp -d /dev/shm/hutch-doctor.XXXXXX)
chmod 0700 "$dtmp"
tap_ok "doctor with the state directory on a tmpfs" "$HUTCH_BIN" doctor --json --state-dir "$dtmp"
tap_is "$(json_field "$tap_stdout" state_discard status)" ok "--json: a tmpfs state directory: state_discard ok"
rm -rf "$dtmp"
dtmp=$(hutch_test_tmpdir)
mnt=$(findmnt -no TARGET -T "$dtmp")
if findmnt -no FS-OPTIONS,VFS-OPTIONS -T "$dtmp" | tr ',' '\n' | grep -qx discard; then
  "$HUTCH_BIN" doctor --json --state-dir "$dtmp" >"$dtmp.json" 2>/dev/null
  tap_is "$(json_field "$(cat "$dtmp.json")" state_discard status)" warn "a state directory on $mnt (discard): a warning"
  tap_like "$(json_field "$(cat "$dtmp.json")" state_discard fix)" "tmpfs" "whose fix names a tmpfs"
else
  tap_skip "a state directory on a discard mount" "$mnt is not mounted with discard"
fi
rm -rf "$dtmp" "$dtmp.json"

img=$(hutch_test_rootfs busybox) || img=

# ---- namespaces refused by a seccomp filter (Docker's default profile) ----
tap_status 1 "under a namespace-refusing filter, doctor exits 1" "$deny" "$HUTCH_BIN" doctor --json
djson=$tap_stdout
tap_is "$(json_field "$djson" userns status)" fail "userns: fail"
tap_is "$(json_field "$djson" userns error)" EPERM "userns: EPERM"
tap_like "$(json_field "$djson" userns detail)" "unshare\(CLONE_NEWUSER" "the failed step is the unshare"
tap_like "$(json_field "$djson" userns fix)" "seccomp" "the fix names the outer seccomp filter"
tap_like "$(json_field "$djson" userns fix)" "seccomp=unconfined" "and the container option that lifts it"
tap_ok "ready is false" python3 -c 'import json,sys; assert json.loads(sys.argv[1])["ready"] is False' "$djson"
if [ -n "$img" ]; then
  tap_status 125 "hutch exec fails closed under that filter" "$deny" "$HUTCH_BIN" exec --rootfs "$img" -- true
  tap_like "$tap_stderr" "clone.*Operation not permitted" "naming the step and errno"
  tap_like "$tap_stderr" "hutch doctor" "and pointing to hutch doctor"
else
  tap_skip "hutch exec fails closed under that filter" "busybox test rootfs unavailable"
fi

# ---- an outer user namespace, as in a rootless container ----
# outer_ns CMD...: CMD runs as root of a new user+mount namespace that maps
# 65536 ids (directly as root, through newuidmap for a user), so that hutch
# inside it maps 0-65535 exactly as in a container with an id range.
outer_ns() {
  local d pid me rc u g
  d=$(mktemp -d "$tmp/outer.XXXXXX")
  mkfifo "$d/go"
  unshare -U -m --propagation private -- bash -c 'read -r _ <"$0"; exec "$@"' "$d/go" "$@" &
  pid=$!
  me=$(readlink /proc/self/ns/user)
  while [ "$(readlink "/proc/$pid/ns/user" 2>/dev/null)" = "$me" ]; do sleep 0.01; done
  if [ "$(id -u)" -eq 0 ]; then
    echo "0 0 65536" >"/proc/$pid/uid_map" && echo "0 0 65536" >"/proc/$pid/gid_map"
  else
    u=$(awk -F: -v n="$(id -un)" '$1 == n { print $2; exit }' /etc/subuid)
    g=$(awk -F: -v n="$(id -un)" '$1 == n { print $2; exit }' /etc/subgid)
    newuidmap "$pid" 0 "$(id -u)" 1 1 "$u" 65535 && newgidmap "$pid" 0 "$(id -g)" 1 1 "$g" 65535
  fi
  echo go >"$d/go"
  wait "$pid"
  rc=$?
  rm -rf "$d"
  return $rc
}
can_outer=yes
if [ "$(id -u)" -ne 0 ] && ! grep -q "^$(id -un):" /etc/subuid 2>/dev/null; then
  can_outer=
fi

if [ -n "$can_outer" ]; then
  # ---- user.max_user_namespaces = 0 (set in the outer namespace) ----
  tap_status 1 "with user.max_user_namespaces=0, doctor exits 1" outer_ns sh -c \
    'echo 0 >/proc/sys/user/max_user_namespaces && exec "$0" doctor --json' "$HUTCH_BIN"
  zjson=$tap_stdout
  tap_is "$(json_field "$zjson" max_user_namespaces status)" fail "the sysctl is named as failing"
  tap_is "$(json_field "$zjson" userns error)" ENOSPC "userns: ENOSPC"
  tap_like "$(json_field "$zjson" userns fix)" "sysctl -w user.max_user_namespaces=" "the fix is the sysctl"
  if [ -n "$img" ]; then
    tap_status 125 "hutch exec fails closed with the limit at 0" outer_ns sh -c \
      'echo 0 >/proc/sys/user/max_user_namespaces && exec "$0" exec --rootfs "$1" -- true' "$HUTCH_BIN" "$img"
    tap_like "$tap_stderr" "clone.*No space left on device" "naming the step and errno"
    tap_like "$tap_stderr" "max_user_namespaces" "and the sysctl"
  fi

  # ---- a masked /proc, as Docker, podman and Kubernetes leave it ----
  # A user's outer namespace maps its own uid and its range as two extents,
  # and hutch (uid 0 there) must map 0-65535 as the same two lines, or the
  # kernel refuses the map.
  if [ "$(id -u)" -ne 0 ]; then
    tap_status 0 "as root of a two-extent user namespace, doctor passes" outer_ns "$HUTCH_BIN" doctor --json
    xjson=$tap_stdout
    tap_is "$(json_field "$xjson" userns status)" ok "the user namespace check passes there"
    if [ -n "$img" ]; then
      tap_status 0 "hutch exec works there" outer_ns "$HUTCH_BIN" exec --rootfs "$img" -- cat /proc/self/uid_map
      tap_is "$(echo "$tap_stdout" | wc -l)" "2" "its map follows the outer map's two lines"
    fi
    tap_done
  fi
  mask='mount --bind /dev/null /proc/timer_list && mount -t tmpfs -o ro,size=0 tmpfs /proc/scsi 2>/dev/null; '
  tap_status 1 "with /proc masked by an outer namespace, doctor exits 1" outer_ns sh -c \
    "$mask"'exec "$0" doctor' "$HUTCH_BIN"
  tap_like "$tap_stdout" "FAIL +fresh procfs in a pid namespace +mount too revealing" "the table says mount too revealing"
  tap_status 1 "the same in --json" outer_ns sh -c "$mask"'exec "$0" doctor --json' "$HUTCH_BIN"
  mjson=$tap_stdout
  tap_is "$(json_field "$mjson" procfs error)" EPERM "procfs: EPERM"
  tap_like "$(json_field "$mjson" procfs detail)" "/proc/timer_list" "the masked path is named"
  fix=$(json_field "$mjson" procfs fix)
  tap_like "$fix" "systempaths=unconfined" "the fix names Docker's option"
  tap_like "$fix" "unmask=/proc/\*" "podman's"
  tap_like "$fix" "procMount: Unmasked" "and Kubernetes'"
  tap_like "$fix" "hostUsers: false" "with the pod's user namespace Kubernetes needs for it"
  tap_like "$fix" "GitHub Actions: in a container job, .options: --security-opt seccomp=unconfined --security-opt systempaths=unconfined" \
    "what a GitHub Actions workflow puts in its container options"
  tap_like "$fix" "GitLab runner .*security_opt = \[\"seccomp=unconfined\", \"systempaths=unconfined\"\]" \
    "what a GitLab runner puts in config.toml"
  tap_like "$fix" "--proc host-ro, a degraded mode" "and the named, weaker --proc host-ro"
  tap_is "$(json_field "$mjson" userns status)" ok "user namespaces still work there"
  if [ -n "$img" ]; then
    tap_status 125 "hutch exec fails closed without a fresh procfs" outer_ns sh -c \
      "$mask"'exec "$0" exec --rootfs "$1" -- true' "$HUTCH_BIN" "$img"
    tap_like "$tap_stderr" "mount a fresh procfs: Operation not permitted" "naming the step and errno"
    tap_like "$tap_stderr" "mount too revealing" "and the cause"
    tap_like "$tap_stderr" "systempaths=unconfined" "and the fix"
    # The named degraded mode runs there, and says what it gave up.
    tap_status 0 "hutch exec --proc host-ro runs there" outer_ns sh -c \
      "$mask"'exec "$0" exec --json --proc host-ro --rootfs "$1" -- cat /proc/timer_list' "$HUTCH_BIN" "$img"
    tap_like "$tap_stderr" "degraded mode --proc host-ro" "announcing the degraded mode"
    tap_like "$tap_stdout" '"degraded_modes":\["proc host-ro"\]' "and recording it in --json"
  fi
else
  tap_skip "outer user namespace cells" "this user has no subordinate id range to build one"
fi

# ---- a user without a subordinate id range ----
if [ "$(id -u)" -eq 0 ] && id -u nobody >/dev/null 2>&1 && ! grep -q '^nobody:' /etc/subuid 2>/dev/null; then
  nb=$tmp/nobody
  mkdir -p "$nb/state" "$nb/store"
  hutch_copy_bin "$nb/hutch"
  chown -R nobody "$nb/state" "$nb/store"
  chmod 0755 "$nb" "$nb/hutch"
  chmod 0711 "$tmp"
  tap_ok "doctor as a user without a range (nobody) exits 0" setpriv --reuid=nobody --regid=nogroup --clear-groups \
    env -i PATH=/usr/bin:/bin HOME=/nonexistent HUTCH_STATE_DIR="$nb/state" HUTCH_STORE="$nb/store" \
    "$nb/hutch" doctor --json
  njson=$tap_stdout
  tap_is "$(json_field "$njson" subids status)" warn "no range: a warning (single-id mapping)"
  tap_like "$(json_field "$njson" subids fix)" "usermod --add-subuids .* nobody" "the fix is the usermod command"
  tap_is "$(json_field "$njson" userns status)" ok "and user namespaces work with the single mapping"
  rm -rf "$nb"
else
  tap_skip "a user without a subordinate id range" "needs root and a nobody user without a range"
fi

tap_done
