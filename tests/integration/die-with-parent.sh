#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# A one-shot sandbox dies with its caller: when the program that started
# `hutch exec` or `hutch run` is SIGKILLed, hutch, the sandbox's processes,
# its state entry and its mounts go too; --no-die-with-parent opts out.
. "$(dirname "$0")/../lib/tap.sh"
. "$HUTCH_SRCDIR/tests/lib/agent.sh"

img=$(hutch_test_rootfs busybox) || tap_skip_all "busybox test rootfs unavailable"
AGENT_IMAGE=$img
tmp=$(hutch_test_tmpdir)
state=$HUTCH_STATE_DIR
# A duration no other process on this machine sleeps for.
nap=$((100000 + RANDOM))

# Starts "$@" in the background from a parent shell that stays (the command
# is not its last, so it is not exec'd) and writes the command's pid; sets
# parent to that shell's pid and child to the command's.
start_under_parent() {
  rm -f "$tmp/child"
  bash -c '"$@" >/dev/null 2>&1 & echo $! >"'"$tmp"'/child"; wait; true' bash "$@" &
  parent=$!
  for _ in $(seq 600); do [ -s "$tmp/child" ] && break; sleep 0.05; done
  child=$(cat "$tmp/child")
}

# The sandbox runs once `sleep $nap` (the payload) shows up (within 30 s,
# for a slow build).
wait_for_payload() {
  for _ in $(seq 600); do
    pgrep -x -f "sleep $nap" >/dev/null && return 0
    sleep 0.05
  done
  return 1
}

# Nothing left, within 20 s: 0, else what is left on stdout.
leftovers() {
  local left
  for _ in $(seq 200); do
    left=
    kill -0 "$child" 2>/dev/null && left+="hutch (pid $child) "
    pgrep -x -f "sleep $nap" >/dev/null && left+="the payload "
    [ -n "$(HUTCH_STATE_DIR=$state "$HUTCH_BIN" ps 2>/dev/null | awk 'NR > 1')" ] && left+="an entry of hutch ps "
    # The subnet table of --net proxy (hutch run's default) stays, empty.
    [ -n "$(ls "$state" 2>/dev/null | grep -vx net-subnets)" ] && left+="state: $(ls "$state" | tr '\n' ' ') "
    [ -s "$state/net-subnets" ] && left+="a subnet still allocated: $(cat "$state/net-subnets") "
    grep -qF "$state" /proc/self/mountinfo && left+="a mount under the state directory "
    [ -z "$left" ] && return 0
    sleep 0.1
  done
  echo "$left"
  return 1
}

# ---- hutch exec ----
start_under_parent "$HUTCH_BIN" exec --rootfs "$img" -- sleep "$nap"
tap_ok "hutch exec runs its payload" wait_for_payload
ls "$state" >"$tmp/state-entries"
tap_ok "while it runs, its state directory holds an entry" test -s "$tmp/state-entries"
kill -9 "$parent"
wait "$parent" 2>/dev/null
tap_ok "kill -9 of exec's caller leaves no process, entry of hutch ps, state or mount" leftovers

# A payload that ignores SIGTERM goes too.
start_under_parent "$HUTCH_BIN" exec --rootfs "$img" -- sh -c "trap '' TERM; exec sleep $nap"
tap_ok "a payload that ignores SIGTERM runs" wait_for_payload
kill -9 "$parent"
wait "$parent" 2>/dev/null
tap_ok "a payload that ignores SIGTERM goes as well" leftovers

# ---- --no-die-with-parent ----
start_under_parent "$HUTCH_BIN" exec --no-die-with-parent --rootfs "$img" -- sleep "$nap"
tap_ok "hutch exec --no-die-with-parent runs its payload" wait_for_payload
kill -9 "$parent"
wait "$parent" 2>/dev/null
sleep 1
tap_ok "with --no-die-with-parent hutch outlives its caller" kill -0 "$child"
tap_ok "and so does the payload" pgrep -x -f "sleep $nap"
pkill -x -f "sleep $nap"
for _ in $(seq 100); do kill -0 "$child" 2>/dev/null || break; sleep 0.05; done
tap_ok "which then ends as ever, leaving nothing" leftovers

tap_status 2 "hutch create refuses --no-die-with-parent (a created sandbox outlives hutch)" \
  "$HUTCH_BIN" create --no-die-with-parent --rootfs "$img"

# ---- hutch run ----
[ -x /usr/bin/python3 ] || {
  tap_skip "hutch run: python3 is needed for the mock model server"
  tap_done
  exit
}
mock_start '[{"calls": [["execute_bash", {"command": "sleep '"$nap"'"}]]}, {"hang": 60}]'
start_under_parent "$HUTCH_BIN" run --base-url "$MOCK_URL" --model test-model --rootfs "$img" \
  --output-dir "$tmp/out" --retry-delay 0.05 --quiet --query q
tap_ok "hutch run runs the model's command" wait_for_payload
kill -9 "$parent"
wait "$parent" 2>/dev/null
tap_ok "kill -9 of run's caller leaves no process, entry of hutch ps, state or mount" leftovers

# hutch run SIGKILLed itself cannot clean up, but its sandbox, created to
# outlive no one, dies with it (die_with_creator): no process is left.
mock_start '[{"calls": [["execute_bash", {"command": "sleep '"$nap"'"}]]}, {"hang": 60}]'
start_under_parent "$HUTCH_BIN" run --base-url "$MOCK_URL" --model test-model --rootfs "$img" \
  --output-dir "$tmp/out" --retry-delay 0.05 --quiet --query q
tap_ok "hutch run runs the model's command again" wait_for_payload
kill -9 "$child"
gone() {
  for _ in $(seq 200); do
    pgrep -x -f "sleep $nap" >/dev/null || return 0
    sleep 0.1
  done
  return 1
}
tap_ok "kill -9 of hutch run itself takes its sandbox's processes along" gone
for id in $(HUTCH_STATE_DIR=$state "$HUTCH_BIN" ps 2>/dev/null | awk 'NR > 1 {print $1}'); do
  HUTCH_STATE_DIR=$state "$HUTCH_BIN" rm "$id" >/dev/null 2>&1
done
kill -9 "$parent" 2>/dev/null
wait "$parent" 2>/dev/null

mock_stop
tap_done
