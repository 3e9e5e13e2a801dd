#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# A build SIGKILLed in the middle of a step (its caller died) leaves
# nothing running: the sandbox its steps run in is the build's own
# (die_with_creator), so its init, the step and its proxy go with it, and
# with them its mount namespace.  Its stage (store tmp/, with the
# sandbox's private state directory) is removed by the next build, which
# first removes the sandbox recorded there (as `hutch rm` does), also one
# still running (a stage made before builds owned their sandboxes).  A
# live build's stage is never taken for a leftover, and an import leaves a
# stage with a sandbox's state to a build, which can stop that sandbox.
. "${HUTCH_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}/tests/lib/tap.sh"

work=$(hutch_test_tmpdir) || exit 1
chmod 0755 "$work"
export HUTCH_STORE=$work/store
bg=

# shellcheck disable=SC2317 # run by the EXIT trap
cleanup() {
  [ -n "$bg" ] && kill -9 "$bg" 2>/dev/null
  local s
  # A sandbox a failed point left behind: removed, whatever its state.
  for s in "$HUTCH_STORE"/tmp/*/state; do
    [ -d "$s" ] || continue
    for id in $(HUTCH_STATE_DIR=$s "$HUTCH_BIN" ps -q 2>/dev/null); do
      HUTCH_STATE_DIR=$s "$HUTCH_BIN" rm "$id" >/dev/null 2>&1
    done
  done
  rm -rf "$work"
}
trap cleanup EXIT

base=$(hutch_test_rootfs busybox) || tap_skip_all "the busybox test rootfs is not available"

# A duration no other process on this machine sleeps for.
nap=$((200000 + RANDOM))

# The one stage directory under tmp/ that holds a sandbox's state.json.
stage_state() {
  local f
  for f in "$HUTCH_STORE"/tmp/*/state/*/state.json; do
    [ -f "$f" ] && printf '%s\n' "$f"
  done
}

# FILE KEY...: the value at that path of the JSON file, or nothing.
json_get() {
  python3 -c '
import json, sys
v = json.load(open(sys.argv[1]))
for k in sys.argv[2:]:
    v = v.get(k) if isinstance(v, dict) else None
print("" if v is None else v)' "$@" 2>/dev/null
}

# PID START: the process that was recorded still runs (same start time).
alive() {
  [ -n "$1" ] && [ -r "/proc/$1/stat" ] &&
    [ "$(awk '{sub(/^.*\) /, ""); print $20}' "/proc/$1/stat" 2>/dev/null)" = "$2" ]
}

# INODE: a process (of those this user may look at) is in that mount
# namespace, or holds it open.
in_mnt_ns() {
  [ -n "$1" ] || return 1
  find /proc/[0-9]*/ns/mnt /proc/[0-9]*/fd -maxdepth 1 -lname "mnt:\\[$1\\]" 2>/dev/null | grep -q .
}

# Sets init, init_start, proxy, proxy_start, mntns and stage from the
# running build's sandbox, once its step runs (within 60 s).
read_sandbox() {
  local f step
  init= proxy= mntns= stage=
  for _ in $(seq 1200); do
    step=$(pgrep -x -f "sleep $nap" | head -1)
    f=$(stage_state | head -1)
    [ -n "$step" ] && [ -n "$f" ] && break
    sleep 0.05
  done
  [ -n "$step" ] && [ -n "$f" ] || return 1
  init=$(json_get "$f" pid)
  init_start=$(json_get "$f" start_time)
  proxy=$(json_get "$f" network proxy_pid)
  proxy_start=$(json_get "$f" network proxy_start_time)
  mntns=$(readlink "/proc/$step/ns/mnt" | tr -dc 0-9)
  stage=${f%/state/*}
}

# Nothing of the sandbox left, within 10 s: 0, else what is left on stdout.
nothing_runs() {
  local left
  for _ in $(seq 100); do
    left=
    alive "$init" "$init_start" && left+="its init (pid $init) "
    alive "$proxy" "$proxy_start" && left+="its proxy (pid $proxy) "
    pgrep -x -f "sleep $nap" >/dev/null && left+="the step "
    in_mnt_ns "$mntns" && left+="a process in its mount namespace "
    grep -qF "$HUTCH_STORE/tmp" /proc/self/mountinfo && left+="a mount under the store's tmp/ "
    [ -z "$left" ] && return 0
    sleep 0.1
  done
  echo "$left"
  return 1
}

# The next build: a quick one.  A stage is a leftover only once it is 2 s
# old (store.c: one that was just made may not be locked yet).
printf 'run true\n' >"$work/quick.recipe"
next_build() {
  sleep 2.1
  "$HUTCH_BIN" rootfs build --from "$base" --recipe "$work/quick.recipe" --name quick --net none >/dev/null 2>&1
}
tmp_left() { find "$HUTCH_STORE/tmp" -mindepth 1 -maxdepth 1 | wc -l; }

# KIND CMD...: the build CMD (whose step sleeps) SIGKILLed.
killed_build() {
  local kind=$1
  shift
  "$@" >"$work/$kind.out" 2>&1 &
  bg=$!
  tap_ok "$kind: the build's step runs" read_sandbox
  tap_like "$init $proxy" '^[0-9]+ [0-9]+$' "$kind: its sandbox's init and proxy are recorded in its stage"
  tap_like "$mntns" '^[0-9]+$' "$kind: the step's mount namespace is known"
  kill -9 "$bg"
  wait "$bg" 2>/dev/null
  bg=
  tap_ok "$kind: after a SIGKILL of the build, its init, step, proxy and mounts are gone" nothing_runs
  tap_ok "$kind: its stage is still there" test -d "$stage"
  tap_ok "$kind: the next build" next_build
  tap_ok "$kind: removed the stage" test ! -e "$stage"
  tap_is "$(tmp_left)" 0 "$kind: nothing is left under the store's tmp/"
}

printf 'run echo first\nrun sleep %s\n' "$nap" >"$work/sleep.recipe"
killed_build recipe "$HUTCH_BIN" rootfs build --from "$base" --recipe "$work/sleep.recipe" --name killed --net proxy

mkdir -p "$work/ctx"
printf 'FROM %s\nRUN echo first >/first\nRUN sleep %s\n' "$base" "$nap" >"$work/ctx/Dockerfile"
killed_build dockerfile "$HUTCH_BIN" rootfs build -f "$work/ctx/Dockerfile" --name killed-df --net proxy "$work/ctx"

# ---- the copy of the layer stops with the build ----
# Stopped first (SIGSTOP), so that only the kernel's parent-death signal
# can end it: a copier that would go on for nobody stays, stopped.
printf 'run mkdir /many && cd /many && seq 40000 | xargs touch && dd if=/dev/zero of=/big bs=1M count=100 2>/dev/null && echo layer-made\n' \
  >"$work/big.recipe"
"$HUTCH_BIN" rootfs build --from "$base" --recipe "$work/big.recipe" --name big --net none >"$work/big.out" 2>&1 &
bg=$!
copier=
# The build's child that is not its sandbox's init, once the step is done.
find_copier() {
  local c
  grep -q layer-made "$work/big.out" || return 1
  for c in $(pgrep -P "$bg"); do
    [ "$(cat "/proc/$c/comm" 2>/dev/null)" = hutch-init ] && continue
    kill -STOP "$c" 2>/dev/null && copier=$c && return 0
  done
  return 1
}
tap_ok "a build copies its layer out of its sandbox" hutch_wait_until 120 find_copier
kill -9 "$bg"
wait "$bg" 2>/dev/null
bg=
# Gone, or a zombie its new parent has not reaped yet.
copier_gone() {
  [ -n "$copier" ] || return 1
  case $(awk '{sub(/^.*\) /, ""); print $1}' "/proc/$copier/stat" 2>/dev/null) in
  "" | Z | X) return 0 ;;
  *) return 1 ;;
  esac
}
tap_ok "SIGKILLed then, its copier, stopped, dies with it" hutch_wait_until 10 copier_gone
[ -n "$copier" ] && kill -9 "$copier" 2>/dev/null
tap_ok "the next build" next_build
tap_is "$(tmp_left)" 0 "which removed its stage"

# ---- a live build's stage is not a leftover ----
"$HUTCH_BIN" rootfs build --from "$base" --recipe "$work/sleep.recipe" --name live --net proxy >/dev/null 2>&1 &
bg=$!
tap_ok "a build runs its step" read_sandbox
tap_ok "another build runs beside it, 2 s later" next_build
tap_ok "the running build's sandbox is left alone" alive "$init" "$init_start"
tap_ok "and so is its proxy" alive "$proxy" "$proxy_start"
tap_ok "and its stage" test -d "$stage"
kill -9 "$bg"
wait "$bg" 2>/dev/null
bg=
tap_ok "killed in turn, it leaves nothing running" nothing_runs

# ---- a stage whose sandbox still runs (made before builds owned theirs) ----
# A long-lived sandbox with its state in a stage nobody holds: what a
# SIGKILLed build of an earlier hutch left.
stage=$HUTCH_STORE/tmp/0123456789abcdef
mkdir -p "$stage"
tap_ok "a sandbox recorded in an unheld stage" \
  env HUTCH_STATE_DIR="$stage/state" "$HUTCH_BIN" create --rootfs "$base" --net proxy
f=$(stage_state | head -1)
init=$(json_get "$f" pid) init_start=$(json_get "$f" start_time)
proxy=$(json_get "$f" network proxy_pid) proxy_start=$(json_get "$f" network proxy_start_time)
mntns=
tap_ok "runs" alive "$init" "$init_start"
tap_ok "with its proxy" alive "$proxy" "$proxy_start"
sleep 2.1
tap_ok "an import into the store" "$HUTCH_BIN" rootfs import "$(hutch_rootfs_tar busybox)" --name again
tap_ok "leaves that stage to a build, which can stop its sandbox" test -d "$stage/state"
tap_ok "which still runs" alive "$init" "$init_start"
tap_ok "the next build" next_build
tap_ok "stopped that sandbox and its proxy" nothing_runs
tap_ok "and removed the stage" test ! -e "$stage"
tap_is "$(tmp_left)" 0 "nothing is left under the store's tmp/"

tap_done
