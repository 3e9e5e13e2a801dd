#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# hutch benchmark's agent spawner (the process that forks each task's
# agent): killed in the middle of a run, it takes the run with it (no task
# is recorded as finished with an error it did not make, --resume runs the
# rest); a worker killed has its agent stopped; and no agent's memory holds
# what another task's request held.
. "$(dirname "$0")/../lib/tap.sh"
. "$HUTCH_SRCDIR/tests/lib/agent.sh"

[ -x /usr/bin/python3 ] || tap_skip_all "python3 is needed for the mock model server"
IMAGE=$(hutch_test_rootfs debian) || tap_skip_all "debian test rootfs unavailable (tests/setup-host.sh)"
tmp=$(hutch_test_tmpdir)
export HUTCH_STATE_DIR=$tmp/state
mkdir -p "$HUTCH_STATE_DIR" "$tmp/set/s"

printf 'dataset: "json"\ndata_files: "s/data.jsonl"\nsystem_prompt: "s"\ninstance_prompt: "{problem_statement}"\n' \
  >"$tmp/set/s/config.yaml"
printf 'def compute_score(a, g, **k):\n    return 1.0 if a == g else 0.0\n' >"$tmp/set/s/reward.py"
# Three tasks, one worker: the first answers, the second waits on the
# model (HANG), the third answers.
w() { printf '{"calls": [["execute_bash", {"command": "echo %s > /testbed/answer.txt"}]]}' "$1"; }
script() {
  printf '{"tasks": [{"match": "S-ONE", "steps": [%s]}, {"match": "S-TWO", "steps": [%s]}, {"match": "S-THREE", "steps": [%s]}]}' \
    "$(w 1)" "$1" "$(w 3)"
}
cat >"$tmp/set/s/data.jsonl" <<'JSONL'
{"id": "one", "problem_statement": "S-ONE", "ground_truth": "1"}
{"id": "two", "problem_statement": "S-TWO", "ground_truth": "2"}
{"id": "three", "problem_statement": "S-THREE", "ground_truth": "3"}
JSONL
hbench() {
  "$HUTCH_BIN" benchmark "$tmp/set" --task s --base-url "$MOCK_URL" --model mock --rootfs "$IMAGE" \
    --output-dir "$tmp/out" --retry-delay 0.05 --num-workers 1 "$@"
}
. "$HUTCH_SRCDIR/tests/lib/bench.sh"
# hanging_run NAME: a run of the set whose second task's model never
# answers, in the background ($runner), its output in $tmp/NAME.out and
# .err; returns once the second task has asked the model.
hanging_run() {
  mock_start "$(script '{"hang": 120}')"
  (exec "$HUTCH_BIN" benchmark "$tmp/set" --task s --base-url "$MOCK_URL" --model mock --rootfs "$IMAGE" \
    --output-dir "$tmp/out" --retry-delay 0.05 --num-workers 1 >"$tmp/$1.out" 2>"$tmp/$1.err") &
  runner=$!
  for _ in $(seq 600); do
    grep -q S-TWO "$MOCK_REQUESTS" && break
    sleep 0.05
  done
}
child_named() { # PARENT COMM: the pid of PARENT's child named COMM
  local p
  for p in $(pgrep -P "$1"); do
    [ "$(cat /proc/"$p"/comm 2>/dev/null)" = "$2" ] && echo "$p" && return 0
  done
  return 1
}

# ---- the spawner killed (kill -9, or SIGTERM) while the second task's agent runs ----
spawner_killed() { # SIGNAL
  hanging_run killed
  spawner=$(child_named "$runner" hutch-spawner)
  tap_ok "[$1] the runner's child hutch-spawner is there while the second task runs" test -n "$spawner"
  kill -"$1" "${spawner:-0}"
  timeout 120 tail --pid="$runner" -f /dev/null
  wait "$runner"
  rc=$?
  OUT=$(tail -n 1 "$tmp/killed.out")
  tap_check $((rc == 0)) "[$1] the run stops with an error (status $rc)"
  tap_like "$(cat "$tmp/killed.err")" "agent spawner ended.*--resume" \
    "[$1] and says the agent spawner ended, and to go on with --resume"
  tap_is "$(lines 'sorted(l["id"] for l in ls)')" "['one']" \
    "[$1] only the task that finished is recorded (the others are not failures of theirs)"
  tap_ok "[$1] nothing is left after it" leftovers
  mock_start "$(script "$(w 2)")"
  tap_status 0 "[$1] --resume runs the other two" "$HUTCH_BIN" benchmark --resume "$OUT" --base-url "$MOCK_URL" \
    --model mock --rootfs "$IMAGE" --retry-delay 0.05
  tap_is "$(lines 'sorted((l["id"], l["score"], l["error"]) for l in ls)')" \
    "[('one', 1, None), ('three', 1, None), ('two', 1, None)]" "[$1] and every task is scored"
}
spawner_killed KILL
spawner_killed TERM

# ---- a worker killed (kill -9) while its agent runs: the spawner stops that agent ----
hanging_run worker
worker=$(child_named "$runner" hutch-benchmark)
agent=$(child_named "$(child_named "$runner" hutch-spawner)" hutch-agent)
tap_ok "the second task's worker and agent are there" test -n "$worker" -a -n "$agent"
kill -9 "${worker:-0}"
timeout 120 tail --pid="$runner" -f /dev/null
wait "$runner"
OUT=$(tail -n 1 "$tmp/worker.out")
tap_fails "its agent has ended" kill -0 "${agent:-0}"
tap_is "$(lines 'sorted((l["id"], l["error"] is None) for l in ls)')" "[('one', True), ('three', True), ('two', False)]" \
  "the run went on: that task failed, the next one ran"
tap_ok "nothing is left after the worker's kill -9" leftovers

# ---- an environment too large for the agents' requests stops the run before any task ----
# (each variable well under exec's 128 KiB a string: 20 of 8 KiB)
mock_start "$(script "$(w 2)")"
big=()
for i in $(seq 20); do big+=("BIG_$i=$(head -c 8192 /dev/zero | tr '\0' x)"); done
tap_status 125 "a 160 KiB environment stops the run" env "${big[@]}" "$HUTCH_BIN" benchmark "$tmp/set" --task s \
  --base-url "$MOCK_URL" --model mock --rootfs "$IMAGE" --output-dir "$tmp/out" --retry-delay 0.05 --num-workers 1
tap_like "$tap_stderr" "environment \\([0-9]+ bytes\\) is too large.*hint: unset" "and says why, and what to do"
tap_is "$(mock_count)" "0" "no task ran"

# ---- no agent holds another task's request ----
# The first task's --verify command (its row's verifier, which may hold
# what the answer must be) ends in a secret; the second task's agent, forked
# by the same spawner after it, is searched for it while it waits on the
# model.  A small environment, so that the requests' argv is what differs.
# The limit is 10 s so that the probe finds and reads that agent before it
# is killed, even in a sanitizer build; an agent gone before or during the
# scan is reported as such (memory unreadable: no verdict), not as a Python
# traceback.
mkdir -p "$tmp/set/v"
printf 'dataset: "json"\ndata_files: "v/data.jsonl"\nsystem_prompt: "s"\ninstance_prompt: "{problem_statement}"\n' \
  >"$tmp/set/v/config.yaml"
printf 'def compute_score(a, g, **k):\n    return 1.0 if a == g else 0.0\n' >"$tmp/set/v/reward.py"
"$AGENT_PY" -c '
import json
print(json.dumps({"id": "first", "problem_statement": "V-FIRST", "ground_truth": None,
                  "hutch": {"verifier": "true " + "x" * 4000 + " VERIFIER-SECRET-OF-FIRST"}}))
print(json.dumps({"id": "second", "problem_statement": "V-SECOND", "ground_truth": "2"}))' >"$tmp/set/v/data.jsonl"
mock_start "{\"tasks\": [{\"match\": \"V-FIRST\", \"steps\": [$(w 1)]}, {\"match\": \"V-SECOND\", \"steps\": [{\"hang\": 120}]}]}"
"$AGENT_PY" - "$MOCK_REQUESTS" "$tmp/agent-mem" "$HUTCH_SRCDIR/tests/lib" <<'PY' &
import sys, time
requests, report = sys.argv[1:3]
sys.path.insert(0, sys.argv[3])
from benchprocs import find_agent, scan
def find():
    return find_agent("/logs/second.txt")
def memory(p):
    try:
        out = scan(p, [b"VERIFIER-SECRET-OF-FIRST"])
    except (OSError, ValueError) as e:
        return "memory: unreadable (agent %d gone during the scan: %s)" % (p, e)
    return "memory: holds the first task's verifier" if out.startswith("memory: holds") else out
agent, end = None, time.time() + 60
while agent is None and time.time() < end:
    if "V-SECOND" in open(requests).read():
        agent = find()
    time.sleep(0.05)
open(report, "w").write((memory(agent) if agent else "no agent found") + "\n")
PY
probe=$!
small_env=()
while IFS= read -r -d '' kv; do
  case ${kv%%=*} in PATH | HOME | USER | LOGNAME | XDG_* | HUTCH_* | *SAN_OPTIONS) small_env+=("$kv") ;; esac
done < <(env -0)
tap_status 0 "two tasks, the second one's model never answering" env -i "${small_env[@]}" "$HUTCH_BIN" benchmark "$tmp/set" --task v --base-url "$MOCK_URL" --model mock \
  --rootfs "$IMAGE" --output-dir "$tmp/out" --retry-delay 0.05 --num-workers 1 --task-timeout 10
wait "$probe"
OUT=$(printf '%s\n' "$tap_stdout" | tail -n 1)
tap_is "$(lines 'sorted((l["id"], l["score"], l["error"]) for l in ls)')" "[('first', 1, None), ('second', 0, 'Timeout')]" \
  "the first task was verified, the second timed out"
mem=$(cat "$tmp/agent-mem")
if [[ $mem == "memory: unreadable"* ]]; then
  tap_skip "the second task's agent holds nothing of the first task's request" "$mem"
else
  tap_like "$mem" "^memory: clean" "the second task's agent holds nothing of the first task's request"
fi
tap_ok "nothing is left after the timeout" leftovers

tap_done
