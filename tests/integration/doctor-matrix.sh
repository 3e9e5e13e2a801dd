#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# The nesting matrix: in each environment this machine can build, the
# verdict of `hutch doctor --json` (ready, and the check that decides it)
# AND what a sandbox start then does: it runs, or it is refused with the
# step, the errno and a pointer to `hutch doctor`.
#
#   cell                         doctor                              sandbox
#   this user (root, or the      ready; subids ok                    runs; its uid map
#     subuid user hutchtest)
#   a user without a range       ready; subids WARN + usermod fix    runs with the single-id map
#     (hutchnosub, root run)
#   unshare -Urm (outer userns)  ready; nested namespace named       runs, map "0 0 1"
#   namespaces denied (seccomp)  userns FAIL, EPERM, seccomp fix     exec 125: clone, EPERM, doctor
#                                                                    run 125: the same
#   AppArmor sysctl (faked)      its verdict on a faked value        runs (the kernel is not faked)
#   state dir on FUSE            overlay FAIL naming --overlay fuse  create 125 -> doctor; --overlay fuse runs
#   rootless podman, defaults    procfs FAIL (unmask=/proc/*, --proc exec 125: procfs, EPERM, doctor
#                                host-ro), uts FAIL (seccomp)
#   rootless podman, seccomp     procfs FAIL                         exec --proc host-ro runs, recorded
#     unconfined, /proc masked
#   rootless podman, relaxed     ready                               runs
#
# AppArmor is not on this kernel: its cell reads a faked sysctl through
# HUTCH_PROBE_SYSCTL_ROOT (only the sysctl reads are redirected, never the
# namespace attempts), so it tests how the doctor judges the value, not
# AppArmor itself.  The podman cells run in the rootless half, as the test
# user, with runc: crun 1.8 refuses this host's hybrid cgroup layout
# ("cgroups in hybrid mode not supported").
. "$(dirname "$0")/../lib/tap.sh"

deny="$HUTCH_BUILDDIR/tests/helpers/deny-userns"
img=$(hutch_test_rootfs busybox) || tap_skip_all "the busybox test rootfs is not available"
bb_tar=$(hutch_rootfs_ensure busybox) || tap_skip_all "the busybox test rootfs is not available"
# Outside the run's private tree: other users and containers read from here.
work=$(mktemp -d /tmp/hutch-matrix.XXXXXX)
chmod 0755 "$work"
cleanup() {
  [ -z "${fuse_mnt:-}" ] || { fusermount3 -u "$fuse_mnt" 2>/dev/null || umount "$fuse_mnt" 2>/dev/null; }
  if [ -n "${pm:-}" ]; then
    # Files of the image belong to subordinate ids: removed from inside.
    podman --root "$pm/root" --runroot "$pm/runroot" unshare rm -rf "$pm/root" </dev/null >/dev/null 2>&1
    pause_pid=$(cat "$pm/xdg/libpod/tmp/pause.pid" 2>/dev/null)
    [ -z "$pause_pid" ] || kill "$pause_pid" 2>/dev/null
  fi
  rm -rf "$work" 2>/dev/null
}
trap cleanup EXIT

jget() { # JSON EXPR: print a Python expression over d, the parsed JSON
  printf '%s' "$1" | python3 -c '
import json, sys
d = json.load(sys.stdin)
c = {k["id"]: k for k in d.get("checks", [])}
v = eval(sys.argv[1])
print(json.dumps(v) if isinstance(v, (list, dict)) else v)' "$2" 2>/dev/null
}

# ---- this user ----
me="this user: $HUTCH_TEST_MODE"
tap_ok "[$me] doctor passes" "$HUTCH_BIN" doctor --json
j=$tap_stdout
tap_is "$(jget "$j" 'd["ready"]')" True "[$me] ready"
tap_is "$(jget "$j" 'c["subids"]["status"]')" ok "[$me] subordinate ids ok"
if [ "$(id -u)" -eq 0 ]; then
  tap_like "$(jget "$j" 'c["subids"]["detail"]')" "running as root" "[$me] the detail says root maps directly"
  want_map="0 0 65536"
else
  tap_like "$(jget "$j" 'c["subids"]["detail"]')" "applied through newuidmap" "[$me] the range was applied"
  want_map="0 $(id -u) 1" # an image without other owners gets the single mapping
fi
tap_ok "[$me] a sandbox runs" "$HUTCH_BIN" exec --rootfs "$img" -- cat /proc/self/uid_map
tap_is "$(echo $tap_stdout)" "$want_map" "[$me] with the expected id map"

# ---- a user without a subordinate id range ----
if hutch_nosub_user "a user without a subordinate range"; then
  n=$work/nosub
  hutch_nosub_prepare "$n" "$nosub" "$bb_tar"
  as_nosub() { hutch_as_nosub "$n" "$nosub" "$@"; }
  tap_ok "[$nosub] doctor passes" as_nosub "$n/hutch" doctor --json
  j=$tap_stdout
  tap_is "$(jget "$j" 'd["ready"]')" True "[$nosub] ready (a range is not required)"
  tap_is "$(jget "$j" 'c["subids"]["status"]')" warn "[$nosub] subordinate ids: WARN"
  tap_like "$(jget "$j" 'c["subids"]["fix"]')" "usermod --add-subuids [0-9-]+ --add-subgids [0-9-]+ $nosub" \
    "[$nosub] the fix is the usermod command for this user"
  tap_ok "[$nosub] imports the image" as_nosub "$n/hutch" rootfs import "$n/busybox.tar" --name bb
  tap_ok "[$nosub] a sandbox runs" as_nosub "$n/hutch" exec --rootfs bb -- sh -c 'id -u; cat /proc/self/uid_map'
  tap_is "$(echo $tap_stdout)" "0 0 $(id -u "$nosub") 1" "[$nosub] as uid 0, mapped to the user alone"
fi

# ---- an outer user namespace (unshare -Urm, as in a rootless container) ----
tap_ok "[unshare -Urm] doctor passes" unshare -Urm "$HUTCH_BIN" doctor --json
j=$tap_stdout
tap_is "$(jget "$j" 'd["ready"]')" True "[unshare -Urm] ready"
tap_like "$(jget "$j" 'c["container"]["detail"]')" "inside a nested user namespace" "[unshare -Urm] the nesting is named"
tap_like "$(jget "$j" 'c["subids"]["detail"]')" "nested user namespace mapping 1 id in 1 extent" \
  "[unshare -Urm] the one id it can map is named"
tap_ok "[unshare -Urm] a sandbox runs" unshare -Urm "$HUTCH_BIN" exec --rootfs "$img" -- cat /proc/self/uid_map
tap_is "$(echo $tap_stdout)" "0 0 1" "[unshare -Urm] mapping the outer namespace's only id"

# ---- user namespaces denied by a seccomp filter ----
tap_status 1 "[denied] doctor exits 1" "$deny" "$HUTCH_BIN" doctor --json
j=$tap_stdout
tap_is "$(jget "$j" 'd["ready"]')" False "[denied] not ready"
tap_is "$(jget "$j" 'c["userns"]["status"] + " " + c["userns"]["error"]')" "fail EPERM" "[denied] userns: FAIL, EPERM"
tap_like "$(jget "$j" 'c["userns"]["fix"]')" "seccomp=unconfined" "[denied] the fix lifts the seccomp filter"
tap_status 125 "[denied] hutch exec exits 125" "$deny" "$HUTCH_BIN" exec --rootfs "$img" -- true
tap_like "$tap_stderr" "namespaces \(clone\).*Operation not permitted" \
  "[denied] naming the step and errno"
tap_like "$tap_stderr" "hutch doctor" "[denied] and pointing to hutch doctor"
# hutch run makes its sandbox before it talks to any model: nothing
# listens on the URL it is given.
tap_status 125 "[denied] hutch run exits 125" env HUTCH_PROMPT_CONFIG="$HUTCH_SRCDIR/prompts/default.yaml" \
  "$deny" "$HUTCH_BIN" run --query x --model m --base-url http://127.0.0.1:9/v1 --rootfs "$img" \
  --output-dir "$work/run-out" --quiet
tap_like "$tap_stderr" "hutch run: create the sandbox's namespaces \(clone\).*Operation not permitted" \
  "[denied] hutch run names the step and errno"
tap_like "$tap_stderr" "hutch doctor" "[denied] hutch run points to hutch doctor"

# ---- the AppArmor sysctl, faked ----
fake=$work/sysctl
mkdir -p "$fake/kernel"
echo 1 >"$fake/kernel/apparmor_restrict_unprivileged_userns"
tap_ok "[apparmor=1, userns works] doctor passes" env HUTCH_PROBE_SYSCTL_ROOT="$fake" "$HUTCH_BIN" doctor --json
j=$tap_stdout
tap_is "$(jget "$j" 'c["apparmor_userns"]["status"]')" ok "[apparmor=1, userns works] the restriction is no failure"
tap_like "$(jget "$j" 'c["apparmor_userns"]["detail"]')" "^1, but the uid map write and a mount" \
  "[apparmor=1, userns works] says why"
tap_status 1 "[apparmor=1, denied by seccomp] doctor exits 1" \
  env HUTCH_PROBE_SYSCTL_ROOT="$fake" "$deny" "$HUTCH_BIN" doctor --json
j=$tap_stdout
tap_is "$(jget "$j" 'c["apparmor_userns"]["status"]')" info \
  "[apparmor=1, denied by seccomp] AppArmor is not blamed for a refused unshare"
tap_unlike "$(jget "$j" 'c["userns"]["fix"]')" "AppArmor restricts" "[apparmor=1, denied by seccomp] the fix is seccomp's"
echo 0 >"$fake/kernel/apparmor_restrict_unprivileged_userns"
tap_ok "[apparmor=0] doctor passes" env HUTCH_PROBE_SYSCTL_ROOT="$fake" "$HUTCH_BIN" doctor --json
tap_is "$(jget "$tap_stdout" 'c["apparmor_userns"]["detail"]')" "0: unrestricted" "[apparmor=0] unrestricted"
rm "$fake/kernel/apparmor_restrict_unprivileged_userns"
tap_ok "[apparmor absent] doctor passes" env HUTCH_PROBE_SYSCTL_ROOT="$fake" "$HUTCH_BIN" doctor --json
tap_is "$(jget "$tap_stdout" 'c["apparmor_userns"]["status"]')" skip "[apparmor absent] skipped"
tap_ok "[apparmor faked] a sandbox runs (the kernel is not faked)" \
  env HUTCH_PROBE_SYSCTL_ROOT="$fake" "$HUTCH_BIN" exec --rootfs "$img" -- true

# ---- the state directory on a FUSE filesystem ----
# Overlayfs takes no FUSE upper layer.  A sandbox's layer lives on its own
# tmpfs from Linux 6.6 on, so only a layer kept on disk (create --keep, or
# every layer before 6.6) meets that refusal, which names the step.
if [ -c /dev/fuse ] && command -v fuse-overlayfs >/dev/null; then
  f=$work/fuse
  mkdir -p "$f/l" "$f/u" "$f/w" "$f/m"
  if fuse-overlayfs -o "lowerdir=$f/l,upperdir=$f/u,workdir=$f/w" "$f/m" 2>"$work/fuse.err"; then
    fuse_mnt=$f/m
    mkdir -m 0700 "$f/m/state"
    new_kernel=$(uname -r | awk -F. '{ print ($1 > 6 || ($1 == 6 && $2 >= 6)) }')
    if [ "$new_kernel" = 1 ]; then
      tap_ok "[state on FUSE] doctor passes (Linux 6.6+: the layer is on the sandbox's tmpfs)" \
        "$HUTCH_BIN" doctor --json --state-dir "$f/m/state"
      tap_is "$(jget "$tap_stdout" 'c["overlay"]["status"]')" ok "[state on FUSE] overlay: ok"
      tap_like "$(jget "$tap_stdout" 'c["overlay"]["detail"]')" "upper on the sandbox's tmpfs" \
        "[state on FUSE] as a sandbox has it"
      tap_ok "[state on FUSE] hutch create works there" "$HUTCH_BIN" create --rootfs "$img" --state-dir "$f/m/state"
      "$HUTCH_BIN" rm --state-dir "$f/m/state" "$tap_stdout" >/dev/null 2>&1
      keep=(--keep)
    else
      tap_status 1 "[state on FUSE] doctor exits 1" "$HUTCH_BIN" doctor --json --state-dir "$f/m/state"
      j=$tap_stdout
      tap_is "$(jget "$j" 'c["overlay"]["status"]')" fail "[state on FUSE] overlay: FAIL"
      tap_like "$(jget "$j" 'c["overlay"]["fix"]')" "the state directory is on fuse" "[state on FUSE] the cause is named"
      tap_like "$(jget "$j" 'c["overlay"]["fix"]')" "--overlay fuse, a degraded mode" \
        "[state on FUSE] the fix names --overlay fuse"
      keep=()
    fi
    tap_status 125 "[state on FUSE] hutch create ${keep[*]} (a layer on disk) exits 125" \
      "$HUTCH_BIN" create --rootfs "$img" --state-dir "$f/m/state" "${keep[@]}"
    # Root's kernel refuses the overlay mount itself; a user's mounts it
    # read-only (no usable upper) and the first write fails.
    tap_like "$tap_stderr" "sandbox setup: (mounts: overlayfs over .*: Invalid argument|.*: Read-only file system)" \
      "[state on FUSE] naming the step and errno"
    tap_like "$tap_stderr" "hutch doctor" "[state on FUSE] and pointing to hutch doctor"
    tap_ok "[state on FUSE] hutch create --overlay fuse works there" \
      "$HUTCH_BIN" create --rootfs "$img" --state-dir "$f/m/state" --overlay fuse
    fid=$tap_stdout
    tap_ok "[state on FUSE] and its sandbox writes" \
      "$HUTCH_BIN" exec --state-dir "$f/m/state" --in "$fid" -- sh -c 'echo x >/f && cat /f'
    "$HUTCH_BIN" rm --state-dir "$f/m/state" "$fid" >/dev/null 2>&1
  else
    tap_skip "[state on FUSE]" "fuse-overlayfs could not mount here: $(head -c 200 "$work/fuse.err")"
  fi
else
  tap_skip "[state on FUSE]" "/dev/fuse or fuse-overlayfs is missing"
fi

# ---- rootless podman ----
podman_image() { # DIR: a tree with this hutch, its libraries, busybox and a store
  local r=$1 lib
  mkdir -p "$r/bin" "$r/etc/hutch" "$r/tmp" "$r/proc" "$r/dev" "$r/sys" "$r/run" "$r/root" || return 1
  hutch_copy_bin "$r/bin/hutch" && cp "$(command -v busybox)" "$r/bin/busybox" || return 1
  for lib in $(for b in "$r"/bin/hutch*; do ldd "$b" 2>/dev/null; done | grep -o '/[^ ]*' | sort -u); do
    mkdir -p "$r$(dirname "$lib")" && cp -L "$lib" "$r$lib" || return 1
  done
  for a in sh cat id echo true; do ln -s busybox "$r/bin/$a"; done
  echo 'root:x:0:0:root:/root:/bin/sh' >"$r/etc/passwd"
  echo 'root:x:0:' >"$r/etc/group"
  chmod 1777 "$r/tmp"
  cp "$HUTCH_POLICY" "$(dirname "$HUTCH_POLICY")/seccomp.json" "$r/etc/hutch/"
  HUTCH_STORE="$r/var/lib/hutch" "$HUTCH_BIN" rootfs import "$bb_tar" --name default >/dev/null 2>&1
}
if [ "$(id -u)" -eq 0 ]; then
  tap_skip "[podman] rootless podman cells" "they run in the rootless half, as the test user"
elif ! command -v podman >/dev/null || ! command -v runc >/dev/null; then
  tap_skip "[podman] rootless podman cells" "podman or runc is not installed (apt-get install podman runc)"
elif ! ldd "$(command -v busybox 2>/dev/null || echo /nonexistent)" 2>&1 | grep -q "not a dynamic"; then
  tap_skip "[podman] rootless podman cells" "no static busybox for the container image (busybox-static)"
else
  pm=$work/podman
  mkdir -p "$pm/xdg" && chmod 0700 "$pm/xdg"
  export XDG_RUNTIME_DIR=$pm/xdg
  p() { podman --root "$pm/root" --runroot "$pm/runroot" --storage-driver vfs "$@" </dev/null; }
  if podman_image "$pm/tree" && tar -C "$pm/tree" -cf "$pm/img.tar" . &&
    p import "$pm/img.tar" localhost/hutch-matrix:test >"$pm/import.log" 2>&1; then
    run=(run --rm --runtime runc --network none -e HUTCH_POLICY=/etc/hutch/default.policy)
    tap_status 1 "[podman, defaults] doctor exits 1" p "${run[@]}" localhost/hutch-matrix:test hutch doctor --json
    j=$tap_stdout
    tap_is "$(jget "$j" 'd["environment"]')" podman "[podman, defaults] the container is recognised"
    tap_is "$(jget "$j" 'c["procfs"]["status"] + " " + c["procfs"]["error"]')" "fail EPERM" \
      "[podman, defaults] procfs: FAIL, EPERM (mount too revealing)"
    tap_like "$(jget "$j" 'c["procfs"]["fix"]')" "podman: --security-opt unmask=/proc/\*" \
      "[podman, defaults] the fix names podman's unmask option"
    tap_like "$(jget "$j" 'c["procfs"]["fix"]')" "--proc host-ro, a degraded mode" \
      "[podman, defaults] and the named degraded mode"
    tap_is "$(jget "$j" 'c["uts"]["status"]')" fail "[podman, defaults] uts: FAIL (sethostname filtered)"
    tap_like "$(jget "$j" 'c["uts"]["fix"]')" "podman: --security-opt seccomp=unconfined" \
      "[podman, defaults] its fix is podman's seccomp option"
    tap_status 125 "[podman, defaults] hutch exec exits 125" \
      p "${run[@]}" localhost/hutch-matrix:test hutch exec --no-cgroups -- true
    tap_like "$tap_stderr" "mount a fresh procfs: Operation not permitted" "[podman, defaults] naming the step and errno"
    tap_like "$tap_stderr" "hutch doctor" "[podman, defaults] and pointing to hutch doctor"
    # Only the seccomp profile relaxed: /proc stays masked, and the named
    # degraded mode is what runs there.
    half=(--security-opt seccomp=unconfined)
    tap_status 1 "[podman, /proc masked] doctor exits 1" p "${run[@]}" "${half[@]}" localhost/hutch-matrix:test \
      hutch doctor --json
    tap_is "$(jget "$tap_stdout" 'c["procfs"]["status"] + " " + c["uts"]["status"]')" "fail ok" \
      "[podman, /proc masked] procfs FAIL, hostname ok"
    tap_ok "[podman, /proc masked] hutch exec --proc host-ro runs" p "${run[@]}" "${half[@]}" \
      localhost/hutch-matrix:test hutch exec --no-cgroups --json --proc host-ro -- echo degraded-ok
    tap_like "$tap_stdout" "^degraded-ok" "[podman, /proc masked] the command ran"
    tap_like "$tap_stdout" '"degraded_modes":\["proc host-ro"\]' "[podman, /proc masked] recorded in --json"
    tap_like "$tap_stderr" "degraded mode --proc host-ro, as asked" "[podman, /proc masked] announced on stderr"
    relaxed=(--security-opt seccomp=unconfined --security-opt "unmask=/proc/*")
    tap_ok "[podman, relaxed] doctor passes" p "${run[@]}" "${relaxed[@]}" localhost/hutch-matrix:test hutch doctor --json
    tap_is "$(jget "$tap_stdout" 'd["ready"]')" True "[podman, relaxed] ready"
    tap_ok "[podman, relaxed] a sandbox runs" p "${run[@]}" "${relaxed[@]}" localhost/hutch-matrix:test \
      hutch exec --no-cgroups -- sh -c 'echo inner; cat /proc/self/uid_map'
    tap_like "$tap_stdout" "^inner" "[podman, relaxed] the command ran in the sandbox"
  else
    tap_skip "[podman] rootless podman cells" "the container image could not be made: $(tail -c 300 "$pm/import.log" 2>/dev/null)"
  fi
fi

tap_done
