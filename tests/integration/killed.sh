#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# A hutch process SIGKILLed in the middle of its work, alone or with its
# whole process group, leaves nothing that nobody will remove: of a
# one-shot (hutch exec, with or without a pty) or a sandbox made to die
# with its maker (hutch run's, hutch mcp's, hutch serve's), no process (init, payload,
# proxy), no mount, no allocated subnet, and its record goes at the next
# listing or one-shot (the orphan sweep); an exec --in takes its command
# along and leaves the sandbox running; a created sandbox's port relays go
# with `hutch rm`; a snapshot killed during its copy lets the sandbox go
# on, and so does a fork, which leaves no child; hutch mcp (its reaper
# killed too), hutch serve and hutch benchmark leave no sandbox behind.
# (A build killed: build-killed.sh; the caller of hutch killed:
# die-with-parent.sh.)
. "$(dirname "$0")/../lib/tap.sh"
. "$HUTCH_SRCDIR/tests/lib/agent.sh"

img=$(hutch_test_rootfs busybox) || tap_skip_all "busybox test rootfs unavailable"
AGENT_IMAGE=$img
tmp=$(hutch_test_tmpdir)
state=$HUTCH_STATE_DIR
bg=
# shellcheck disable=SC2317 # run by the EXIT trap
cleanup() {
  [ -n "$bg" ] && kill -9 "$bg" 2>/dev/null
  mock_stop
  for id in $(HUTCH_STATE_DIR=$state "$HUTCH_BIN" ps -q 2>/dev/null); do
    HUTCH_STATE_DIR=$state "$HUTCH_BIN" rm "$id" >/dev/null 2>&1
  done
  rm -rf "$tmp"
}
trap cleanup EXIT

# A duration no other process on this machine sleeps for; one per case.
nap=$((300000 + RANDOM))
next_nap() { nap=$((nap + 1)); }

payload_runs() { pgrep -x -f "sleep $nap" >/dev/null; }

# The sandbox directories of the state directory (not its own files).
sandbox_dirs() { find "$state" -mindepth 1 -maxdepth 1 -type d ! -name '.*' -printf '%f\n' 2>/dev/null; }

# Sets init, proxy and mntns from the one sandbox recorded, once its
# payload runs (within 30 s).
read_sandbox() {
  local f
  init= proxy= mntns=
  hutch_wait_until 30 payload_runs || return 1
  f=$(ls "$state"/*/state.json 2>/dev/null | head -1)
  [ -n "$f" ] || return 1
  init=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["pid"])' "$f")
  proxy=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["network"].get("proxy_pid", ""))' "$f")
  mntns=$(readlink "/proc/$(pgrep -x -f "sleep $nap" | head -1)/ns/mnt" | tr -dc 0-9)
}

# No process or mount of the sandbox left, within 20 s: 0, else what is
# left on stdout.
nothing_runs() {
  local left
  for _ in $(seq 200); do
    left=
    [ -n "$init" ] && kill -0 "$init" 2>/dev/null && left+="its init (pid $init) "
    [ "${proxy:--1}" -gt 0 ] && kill -0 "$proxy" 2>/dev/null && left+="its proxy (pid $proxy) "
    payload_runs && left+="the payload "
    in_ns=$([ -n "$mntns" ] && find /proc/[0-9]*/ns/mnt -maxdepth 0 -lname "mnt:\\[$mntns\\]" 2>/dev/null |
      cut -d/ -f3 | while read -r p; do printf '%s(%s) ' "$p" "$(tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null)"; done)
    [ -n "$in_ns" ] && left+="in its mount namespace: $in_ns"
    grep -qF "$state" /proc/self/mountinfo && left+="a mount under the state directory "
    [ -z "$left" ] && return 0
    sleep 0.1
  done
  echo "$left"
  return 1
}

# HOW PID: SIGKILL to the process, or to its process group.
kill_it() {
  if [ "$1" = group ]; then kill -9 -- "-$2"; else kill -9 "$2"; fi
  wait "$2" 2>/dev/null
  bg=
}

# ---- hutch exec, one-shot ----
for how in process group; do
  next_nap
  # setsid: hutch leads a process group of its own, as from a shell's job.
  setsid "$HUTCH_BIN" exec --rootfs "$img" --net proxy -- sleep "$nap" >/dev/null 2>&1 &
  bg=$!
  tap_ok "exec ($how): its payload runs" read_sandbox
  # Rootless, the proxy runs in the sandbox's namespaces (-1: no host process).
  tap_like "$init $proxy" '^[0-9]+ (-1|[0-9]+)$' "exec ($how): its init and proxy are recorded"
  kill_it "$how" "$bg"
  tap_ok "exec ($how): SIGKILLed, no process or mount of its sandbox is left" nothing_runs
  tap_is "$(HUTCH_STATE_DIR=$state "$HUTCH_BIN" ps -q | wc -l)" 0 "exec ($how): hutch ps lists nothing"
  tap_is "$(sandbox_dirs | wc -l)" 0 "exec ($how): and removed its record"
  tap_is "$(cat "$state/net-subnets" 2>/dev/null)" "" "exec ($how): and freed its subnet"
  tap_ok "exec ($how): whose audit log is archived" test -s "$state/.audit/$(ls "$state/.audit" | grep -v head | tail -1)"
done

# The next one-shot removes what a killed one left, without a listing.
next_nap
"$HUTCH_BIN" exec --rootfs "$img" -- sleep "$nap" >/dev/null 2>&1 &
bg=$!
tap_ok "exec: its payload runs again" read_sandbox
left=$(sandbox_dirs)
kill_it process "$bg"
tap_ok "SIGKILLed, nothing of it runs" nothing_runs
tap_ok "its record is there until something looks" test -d "$state/$left"
tap_ok "the next one-shot" "$HUTCH_BIN" exec --rootfs "$img" -- true
tap_ok "removed it" test ! -e "$state/$left"

# ---- hutch exec -t (at a pseudo-terminal) ----
next_nap
# forkpty: hutch at a terminal of the driver's, which writes hutch's pid.
PIDFILE=$tmp/tty.pid python3 -c '
import os, sys
pid, fd = os.forkpty()
if pid == 0:
    os.execv(sys.argv[1], sys.argv[1:])
open(os.environ["PIDFILE"], "w").write(str(pid))
try:
    while os.read(fd, 4096):
        pass
except OSError:
    pass
' "$HUTCH_BIN" exec -t --rootfs "$img" -- sleep "$nap" >/dev/null 2>&1 &
driver=$!
tap_ok "exec -t: its payload runs at a pty" read_sandbox
tap_ok "exec -t: hutch's pid is known" hutch_wait_until 10 test -s "$tmp/tty.pid"
kill_it process "$(cat "$tmp/tty.pid")"
tap_ok "exec -t: SIGKILLed, no process or mount of its sandbox is left" nothing_runs
tap_is "$(HUTCH_STATE_DIR=$state "$HUTCH_BIN" ps -q | wc -l)" 0 "exec -t: hutch ps lists nothing"
tap_is "$(sandbox_dirs | wc -l)" 0 "exec -t: and removed its record"
kill "$driver" 2>/dev/null
wait "$driver" 2>/dev/null

# ---- hutch exec --in ----
id=$("$HUTCH_BIN" create --rootfs "$img" -p 127.0.0.1:0:80)
tap_check $? "a live sandbox with a published port"
for how in process group; do
  next_nap
  setsid "$HUTCH_BIN" exec --in "$id" -- sleep "$nap" >/dev/null 2>&1 &
  bg=$!
  tap_ok "exec --in ($how): its command runs" hutch_wait_until 30 payload_runs
  kill_it "$how" "$bg"
  gone() { ! payload_runs; }
  tap_ok "exec --in ($how): SIGKILLed, its command goes with it" hutch_wait_until 20 gone
  tap_is "$("$HUTCH_BIN" ps --json | python3 -c 'import json,sys; print([s["status"] for s in json.load(sys.stdin)])')" \
    "['running']" "exec --in ($how): the sandbox still runs"
done

# ---- hutch create -p: the relays go with hutch rm ----
relays() {
  local p c
  for p in $(pgrep -x hutch); do
    c=$(tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null)
    case $c in *"create --rootfs $img -p"*) echo "$p" ;; esac
  done
}
tap_ok "create -p: its relay runs beside the sandbox" test -n "$(relays)"
tap_ok "hutch rm" "$HUTCH_BIN" rm "$id"
no_relays() { [ -z "$(relays)" ]; }
tap_ok "create -p: its relays are gone" hutch_wait_until 10 no_relays

# ---- hutch snapshot: killed during its copy, with the sandbox held still ----
status_of() {
  "$HUTCH_BIN" ps --json | python3 -c 'import json,sys
print(" ".join(s["status"] for s in json.load(sys.stdin) if s["id"] == sys.argv[1]))' "$1"
}
tmp_entries() { ls "$HUTCH_STORE/tmp" 2>/dev/null | sort; }
id=$("$HUTCH_BIN" create --rootfs "$img")
tap_check $? "a live sandbox to snapshot"
next_nap
"$HUTCH_BIN" exec --in "$id" -- sh -c "mkdir /many && cd /many && seq 30000 | xargs touch &&
  dd if=/dev/zero of=/big bs=1M count=300 2>/dev/null; sleep $nap >/dev/null 2>&1 &"
paused() { case $(status_of "$id") in paused*) return 0 ;; esac; return 1; }
running() { [ "$(status_of "$id")" = running ]; }
# held_then_killed HOW WHAT CMD...: CMD, a copy of $id's files, SIGKILLed
# (alone or with its process group) while it holds $id still; $id goes on.
held_then_killed() {
  local how=$1 what=$2
  shift 2
  setsid "$@" >/dev/null 2>&1 &
  bg=$!
  tap_ok "$what ($how): the sandbox is held still for the copy" hutch_wait_until 30 paused
  kill_it "$how" "$bg"
  # A pauser lets go by itself; a cgroup's freeze is thawed by the listing
  # (status_of) once its holder is gone (tests/vm/cgroup-suite.sh too).
  tap_ok "$what ($how): SIGKILLed, its sandbox goes on" hutch_wait_until 10 running
  tap_ok "$what ($how): and runs commands" "$HUTCH_BIN" exec --in "$id" -- true
}
tmp_entries >"$tmp/tmp-before"
for how in process group; do
  held_then_killed "$how" snapshot "$HUTCH_BIN" snapshot "$id" --name "killed-snap-$$"
done

# ---- hutch fork: killed during its copy, with the parent held still ----
# What a killed fork leaves: no child listed or half made in the state
# directory (a child is made whole, after the copy, or not at all), no
# process of a child, and its parent goes on as after a killed snapshot.
children() { "$HUTCH_BIN" ps -q --filter "label=killed-fork=$$" 2>/dev/null; }
no_children() { [ -z "$(children)" ]; }
for how in process group; do
  sandbox_dirs | sort >"$tmp/dirs-before"
  held_then_killed "$how" fork "$HUTCH_BIN" fork "$id" -n 2 --label "killed-fork=$$"
  tap_ok "fork ($how): no child is listed" hutch_wait_until 10 no_children
  left=$(comm -13 "$tmp/dirs-before" <(sandbox_dirs | sort))
  tap_is "$left" "" "fork ($how): no child's directory is left in the state directory"
  for c in $(children); do "$HUTCH_BIN" rm -f "$c" >/dev/null 2>&1; done
done
tap_ok "fork: the next one makes its child" test -n "$("$HUTCH_BIN" fork "$id" --label "killed-fork=$$")"
for c in $(children); do "$HUTCH_BIN" rm -f "$c" >/dev/null 2>&1; done

sleep 2.1 # a stage is a leftover once 2 s old (store.c)
tap_ok "snapshot: the next one" "$HUTCH_BIN" snapshot "$id" --name "killed-snap-$$"
# Leftovers are the new entries nobody holds: the rootless half's store is
# shared with the scripts that run beside this one, whose stages in use
# are flock()ed by their makers.
leftovers() {
  local e
  comm -13 "$tmp/tmp-before" <(tmp_entries) | while read -r e; do
    flock -n "$HUTCH_STORE/tmp/$e" true 2>/dev/null && echo "$e"
  done
}
tap_is "$(leftovers)" "" "snapshot: removed the stages of the killed ones"
"$HUTCH_BIN" rootfs rm "killed-snap-$$" >/dev/null 2>&1
pkill -x -f "sleep $nap"
"$HUTCH_BIN" rm "$id" >/dev/null

# ---- hutch mcp (stdio): the server and its reaper both SIGKILLed ----
cat >"$tmp/mcp.py" <<'PY'
import json, subprocess, sys, time
p = subprocess.Popen(sys.argv[2:], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                     start_new_session=True)
def rpc(i, method, params=None):
    m = {"jsonrpc": "2.0", "id": i, "method": method}
    if params is not None: m["params"] = params
    p.stdin.write(json.dumps(m) + "\n"); p.stdin.flush()
    return json.loads(p.stdout.readline())
rpc(1, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                      "clientInfo": {"name": "killed", "version": "0"}})
rpc(2, "tools/call", {"name": "sandbox_create", "arguments": {}})
open(sys.argv[1], "w").write(str(p.pid))
time.sleep(600)
PY
python3 "$tmp/mcp.py" "$tmp/mcp.pid" "$HUTCH_BIN" mcp --image "$img" --audit-log /dev/null 2>/dev/null &
driver=$!
tap_ok "mcp: a session's sandbox is created" hutch_wait_until 60 test -s "$tmp/mcp.pid"
srv=$(cat "$tmp/mcp.pid")
f=$(ls "$state"/*/state.json 2>/dev/null | head -1)
init=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["pid"])' "$f" 2>/dev/null)
proxy='' mntns=''
tap_like "$init" '^[0-9]+$' "mcp: its init is recorded"
# The reaper: the server's child that is not the sandbox's init.
reaper=$(pgrep -P "$srv" | grep -vx "$init" | head -1)
tap_like "$reaper" '^[0-9]+$' "mcp: its reaper runs"
[ -n "$reaper" ] && kill -9 "$reaper"
[ -n "$srv" ] && kill -9 -- "-$srv"
tap_ok "mcp: server and reaper SIGKILLed, nothing of its sandbox runs" nothing_runs
tap_is "$(HUTCH_STATE_DIR=$state "$HUTCH_BIN" ps -q | wc -l)" 0 "mcp: hutch ps lists nothing"
tap_is "$(sandbox_dirs | wc -l)" 0 "mcp: and removed its record"
kill "$driver" 2>/dev/null
wait "$driver" 2>/dev/null

# ---- hutch serve: its warm sandboxes, made to die with it ----
warm_made() { [ "$(sandbox_dirs | wc -l)" -ge 2 ] && [ "$(ls "$state"/*/state.json 2>/dev/null | wc -l)" -ge 2 ]; }
for how in process group; do
  setsid "$HUTCH_BIN" serve --listen 127.0.0.1:0 --image "$img" --warm 2 --audit-log /dev/null >/dev/null 2>&1 &
  bg=$!
  tap_ok "serve ($how): its warm sandboxes are made" hutch_wait_until 60 warm_made
  inits=$(for f in "$state"/*/state.json; do
    python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["pid"])' "$f"
  done)
  kill_it "$how" "$bg"
  no_inits() {
    local p
    for p in $inits; do kill -0 "$p" 2>/dev/null && return 1; done
    return 0
  }
  tap_ok "serve ($how): SIGKILLed, the inits of its warm sandboxes are gone" hutch_wait_until 20 no_inits
  tap_is "$(HUTCH_STATE_DIR=$state "$HUTCH_BIN" ps -q | wc -l)" 0 "serve ($how): hutch ps lists nothing"
  tap_is "$(sandbox_dirs | wc -l)" 0 "serve ($how): and removed their records"
done

# ---- hutch run (the agent, its sandbox made to die with it) ----
if [ ! -x /usr/bin/python3 ]; then
  tap_skip "hutch run: python3 is needed for the mock model server"
else
  for how in process group; do
    next_nap
    mock_start '[{"calls": [["execute_bash", {"command": "sleep '"$nap"'"}]]}, {"hang": 60}]'
    setsid "$HUTCH_BIN" run --base-url "$MOCK_URL" --model test-model --rootfs "$img" \
      --output-dir "$tmp/out" --retry-delay 0.05 --quiet --query q >/dev/null 2>&1 &
    bg=$!
    tap_ok "run ($how): the model's command runs" read_sandbox
    kill_it "$how" "$bg"
    tap_ok "run ($how): SIGKILLed, no process or mount of its sandbox is left" nothing_runs
    tap_is "$(HUTCH_STATE_DIR=$state "$HUTCH_BIN" ps -q | wc -l)" 0 "run ($how): hutch ps lists nothing"
    tap_is "$(sandbox_dirs | wc -l)" 0 "run ($how): and removed its record"
    tap_is "$(cat "$state/net-subnets" 2>/dev/null)" "" "run ($how): and freed its subnet"
    mock_stop
  done
fi

# ---- hutch benchmark: a task's agent mid-run ----
deb=$(hutch_test_rootfs debian 2>/dev/null)
if [ -z "$deb" ] || [ ! -x /usr/bin/python3 ]; then
  tap_skip "benchmark: the debian test rootfs and python3 are needed"
else
  mkdir -p "$tmp/set/r"
  printf 'dataset: "json"\ndata_files: "r/data.jsonl"\nsystem_prompt: "s"\ninstance_prompt: "{problem_statement}"\n' \
    >"$tmp/set/r/config.yaml"
  printf '{"id": "one", "problem_statement": "TASK-one", "ground_truth": "x"}\n' >"$tmp/set/r/data.jsonl"
  printf 'def compute_score(answer, truth, **row):\n    return 0.0\n' >"$tmp/set/r/reward.py"
  for how in process group; do
    next_nap
    mock_start '[{"calls": [["execute_bash", {"command": "sleep '"$nap"'"}]]}, {"hang": 60}]'
    setsid "$HUTCH_BIN" benchmark "$tmp/set" --task r --model mock --base-url "$MOCK_URL" --api-key k \
      --rootfs "$deb" --max-steps 3 --task-timeout 300 --max-tries 1 --retry-delay 0.05 \
      --output-dir "$tmp/bench-$how" >/dev/null 2>&1 &
    bg=$!
    tap_ok "benchmark ($how): a task's command runs" read_sandbox
    kill_it "$how" "$bg"
    tap_ok "benchmark ($how): SIGKILLed, no process or mount of the task's sandbox is left" nothing_runs
    no_agent() { ! pgrep -f "$tmp/bench-$how" >/dev/null; }
    tap_ok "benchmark ($how): nor any process of the run" hutch_wait_until 20 no_agent
    tap_is "$(HUTCH_STATE_DIR=$state "$HUTCH_BIN" ps -q | wc -l)" 0 "benchmark ($how): hutch ps lists nothing"
    tap_is "$(sandbox_dirs | wc -l)" 0 "benchmark ($how): and removed its record"
    mock_stop
  done
fi

tap_done
